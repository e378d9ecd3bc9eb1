"""Behind a transaction pooler (PgBouncer ``pool_mode = transaction``): configured, or found out.

Such a pooler gives each transaction of a client whichever server
connection is free, so two things a session normally keeps do not survive
from one transaction to the next:

* server-side prepared statements — psycopg prepares a statement it ran
  five times; the next run lands on another server connection and fails
  with 26000 (does not exist), 42P05 (already exists) or 08P01 (another
  client's statement of the same name takes other parameters).  Behind a
  pooler every connection is opened with ``prepare_threshold=None``;
* LISTEN — it registers on a server connection the client no longer holds,
  and notifications silently stop.  Workers and the daemon then poll.

``FLOWFORGE_POOLER=transaction`` says so up front.  Without it, the first
prepared-statement error, or a LISTEN that does not deliver the
notification a process sent itself, marks the process as behind a pooler
(``detected``) and the connections it opens from then on follow.
"""

from __future__ import annotations

import os

from .. import errors

POOLER_ENV = "FLOWFORGE_POOLER"
TRANSACTION = "transaction"
_NO_POOLER = ("", "none", "session")  # a session pooler keeps the server connection: nothing to change

# SQLSTATEs of a prepared statement missing, already there, or someone else's, on the server connection
# we got.  08P01 (protocol violation) is what psycopg never causes on a connection of its own.
PREPARED_STATEMENT_ERRORS = frozenset({"26000", "42P05", "08P01"})

_detected: str | None = None  # why this process believes it is behind a transaction pooler


def configured() -> bool:
    """``FLOWFORGE_POOLER=transaction``; FF003 for a value that is not a known mode."""
    value = os.environ.get(POOLER_ENV, "").strip().lower()
    if value == TRANSACTION:
        return True
    if value in _NO_POOLER:
        return False
    raise errors.InvalidArgument(f"{POOLER_ENV}={value!r}: use 'transaction' (PgBouncer pool_mode = transaction) "
                                 "or leave it unset")


def transaction_pooler() -> bool:
    """Configured, or detected by this process."""
    return configured() or _detected is not None


# What a process logs (once) when it finds out; the worker and the daemon each log it their way.
DETECTED = ("behind a transaction pooler ({reason}): server-side prepared statements off for new connections; "
            f"set {POOLER_ENV}={TRANSACTION} to say so up front")


def detected(reason: str) -> bool:
    """Record that the database is behind a transaction pooler; True the first time (the caller logs it)."""
    global _detected
    if _detected is not None:
        return False
    _detected = reason
    return True


def is_prepared_statement_error(exc: BaseException) -> bool:
    return getattr(exc, "sqlstate", None) in PREPARED_STATEMENT_ERRORS
