"""Connections to PostgreSQL and the one translation of its errors.

Everything that talks to the database goes through ``connect`` so that:

* connection failures become ``DatabaseUnavailable`` with one readable line
  (the CLI prints it; nobody sees a psycopg traceback);
* errors raised by the SQL API become the ``flowforge.errors`` class for
  their SQLSTATE.  Only the SQLSTATE is used — message text is for humans
  and is never parsed.  ``map_error``/``mapped_errors`` are that mapping,
  and the only one: every statement runs under it (``db.statements``);
* connections start in a transaction (autocommit off), because every API
  call that changes state must commit or roll back as one unit.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

import psycopg
from psycopg import conninfo as _conninfo

from .. import errors
from . import pooler

APPLICATION_NAME = "flowforge"
DEFAULT_CONNECT_TIMEOUT = 5  # seconds; an unreachable host must fail fast in the CLI

# SQLSTATEs that mean "the server went away (or has no room now)", not "your request was refused":
# admin_shutdown, crash_shutdown, cannot_connect_now, too_many_connections.  Callers retry these.
_UNAVAILABLE_STATES = {"57P01", "57P02", "57P03", "53300"}


def parse_dsn(dsn: str) -> dict[str, str]:
    """Validate a DSN (URI or key=value) with libpq's own parser and return its parts."""
    try:
        return _conninfo.conninfo_to_dict(dsn)
    except psycopg.Error as exc:
        raise errors.InvalidArgument(f"invalid DSN: {first_line(exc)}") from None


def mask_dsn(dsn: str) -> str:
    """The DSN with any password replaced by ``***``, safe to print or log."""
    parts = parse_dsn(dsn)
    if parts.get("password"):
        parts["password"] = "***"
    return _conninfo.make_conninfo(**parts)


def connect(dsn: str, *, autocommit: bool = False) -> psycopg.Connection:
    """Open a psycopg 3 connection, failing fast and in FlowForge terms.

    The connect timeout defaults to a few seconds unless the DSN names one.
    Behind a transaction pooler (``pooler``) no statement is ever prepared
    on the server.
    """
    parts = parse_dsn(dsn)
    extra: dict[str, object] = {}
    if "connect_timeout" not in parts:
        extra["connect_timeout"] = DEFAULT_CONNECT_TIMEOUT
    if "application_name" not in parts:
        extra["application_name"] = APPLICATION_NAME
    try:
        if pooler.transaction_pooler():
            extra["prepare_threshold"] = None
        return psycopg.connect(dsn, autocommit=autocommit, **extra)
    except psycopg.OperationalError as exc:
        raise errors.DatabaseUnavailable(
            f"cannot connect to PostgreSQL ({mask_dsn(dsn)}): {first_line(exc)}", sqlstate=exc.sqlstate
        ) from None
    except psycopg.Error as exc:
        raise map_error(exc) from None


def map_error(exc: psycopg.Error) -> errors.FlowForgeError:
    """The FlowForge exception for a psycopg error, chosen by SQLSTATE only."""
    state = exc.sqlstate
    diag = getattr(exc, "diag", None)
    message = (diag.message_primary if diag is not None else None) or first_line(exc)
    hint = diag.message_hint if diag is not None else None
    cls = errors.BY_SQLSTATE.get(state or "")
    if cls is not None:
        return cls(message, sqlstate=state, hint=hint)
    if state is None or state.startswith("08") or state in _UNAVAILABLE_STATES:
        # No SQLSTATE at all means the client lost the connection.
        return errors.DatabaseUnavailable(f"database connection lost: {message}", sqlstate=state)
    return errors.DatabaseError(f"{message} [SQLSTATE {state}]", sqlstate=state, hint=hint)


@contextlib.contextmanager
def mapped_errors() -> Iterator[None]:
    """Re-raise any psycopg error inside the block as its FlowForge exception."""
    try:
        yield
    except psycopg.Error as exc:
        raise map_error(exc) from exc


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
