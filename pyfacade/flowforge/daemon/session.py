"""The daemon's work session: one connection in a transaction, bounded, and what a failed statement means.

Every statement, lock wait and open transaction of this session is bounded,
so a lock queue or a bug cannot hold locks (or an open transaction) for long.
No transaction of this session is open while the broker is talked to: the
drain commits its take at once and settles in a new transaction
(``outbox``).
"""

from __future__ import annotations

from typing import Callable

import psycopg

from .. import db, errors
from ..client import Client
from ..db import pooler
from .log import EventLog

STATEMENT_TIMEOUT = "30s"
LOCK_TIMEOUT = "10s"
IDLE_IN_TRANSACTION_TIMEOUT = "30s"


class WorkSession:
    """The SQL API on the work connection; the daemon commits and this class handles failures."""

    def __init__(self, conn: psycopg.Connection, log: EventLog, on_lost: Callable[[BaseException], None]):
        self.conn = conn
        self.api = Client(conn)
        self._log = log
        self._on_lost = on_lost  # the connection broke: the daemon drops it and reconnects later

    def bound(self) -> None:
        self.api.bound_session(statement_timeout=STATEMENT_TIMEOUT, lock_timeout=LOCK_TIMEOUT,
                               idle_in_transaction_timeout=IDLE_IN_TRANSACTION_TIMEOUT)

    def commit(self) -> None:
        with db.mapped_errors():
            self.conn.commit()

    def commit_quietly(self, op: str) -> bool:
        """Commit; on failure handle it as ``failed(op, ...)`` and return False."""
        try:
            self.commit()
            return True
        except errors.FlowForgeError as exc:
            self.failed(op, exc)
            return False

    def failed(self, op: str, exc: errors.FlowForgeError) -> None:
        """A statement failed: a broken connection is reconnected, anything else is rolled back and logged."""
        if self.conn.closed or self.conn.broken:
            self._on_lost(exc)
            return
        if pooler.is_prepared_statement_error(exc):
            # A transaction pooler: reconnect, and the new session prepares nothing on the server.
            if pooler.detected(f"SQLSTATE {exc.sqlstate} on the work session"):
                self._log("pooler_detected", reason=f"SQLSTATE {exc.sqlstate} on the work session",
                          hint=f"set {pooler.POOLER_ENV}={pooler.TRANSACTION}")
            self._on_lost(exc)
            return
        try:
            with db.mapped_errors():
                self.conn.rollback()
        except errors.FlowForgeError as exc2:
            self._on_lost(exc2)
            return
        self._log("pg_error", op=op, error=str(exc))

    def close(self) -> None:
        try:
            self.conn.close()
        except Exception:  # noqa: BLE001 - closing a broken connection must not fail the caller
            pass
