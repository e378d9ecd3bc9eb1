"""One autocommit connection used by several threads in turn, reconnecting with bounded backoff.

psycopg connections must not be used by two threads at once, so the
heartbeats, completions and failures of every pool thread share one of these
(and the claim loop and the batch completer have their own).
"""

from __future__ import annotations

import logging
import random
import threading
import time
from typing import Any, Callable

import psycopg

from .. import db, errors
from ..client import Client
from ..db import pooler

log = logging.getLogger("flowforge.worker")

BACKOFF_START = 0.1
BACKOFF_MAX = 5.0


def reconnect_delay(attempt: int) -> float:
    """Bounded exponential backoff with jitter: 0.1 s, 0.2 s ... at most 5 s."""
    return min(BACKOFF_MAX, BACKOFF_START * 2 ** attempt) * (0.5 + random.random() / 2)


class SharedConnection:
    """One autocommit connection, one caller at a time, reconnecting with bounded backoff.

    Every call made through it is a single API call, so autocommit makes each
    one its own transaction.  The first connection is no different from a
    reconnect: a server that is down, restarting or full (53300) is waited
    for, one log line per attempt.
    """

    def __init__(self, dsn: str, label: str, configure: Callable[[psycopg.Connection], None] | None = None):
        self._dsn = dsn
        self._label = label
        self._configure = configure  # applied to every new connection (e.g. how jsonb is loaded)
        self._conn: psycopg.Connection | None = None
        self._client: Client | None = None
        self._lock = threading.Lock()

    def call(self, api_call: Callable[[Client], Any], *, give_up: Callable[[], bool]) -> Any:
        """Make one API call; on a lost connection reconnect and retry until ``give_up()``.

        A call whose connection broke may or may not have committed; the
        API's answers to a repeat (FF004/FF005) are how the caller learns it.
        """
        attempt = 0
        reprepared = False
        while True:
            with self._lock:
                try:
                    if self._conn is None or self._conn.closed:
                        self._conn = db.connect(self._dsn, autocommit=True)
                        if self._configure is not None:
                            self._configure(self._conn)
                        self._client = Client(self._conn)
                    return api_call(self._client)
                except errors.FlowForgeError as exc:
                    if pooler.is_prepared_statement_error(exc) and not reprepared:
                        # A transaction pooler: the statement never ran.  Send it again on a new
                        # connection, which prepares nothing on the server.
                        reason = f"SQLSTATE {exc.sqlstate} on the {self._label} connection"
                        if pooler.detected(reason):
                            log.warning(pooler.DETECTED.format(reason=reason))
                        self._discard()
                        reprepared = True
                        continue
                    if not isinstance(exc, errors.DatabaseUnavailable):
                        raise
                    self._discard()
                    if give_up():
                        raise
                    delay = reconnect_delay(attempt)
                    log.warning("%s connection: %s; retrying in %.1f s (attempt %d)", self._label, exc, delay,
                                attempt + 1)
            time.sleep(delay)
            attempt += 1

    def _discard(self) -> None:
        conn, self._conn, self._client = self._conn, None, None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - it is already broken
                pass

    def close(self) -> None:
        with self._lock:
            self._discard()
