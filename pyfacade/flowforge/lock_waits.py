"""Migrations that wait for a lock: who they wait for, and trying again instead of waiting forever.

A migration's ``ALTER TABLE`` queued behind one idle transaction waits for
ever, and every claim that arrives after it queues behind *it*: live traffic
stalls although the migration has not started.  So migrations run with a
``lock_timeout`` (``migrate.Bounds``): the waiting statement gives up after a
few seconds, its transaction rolls back and releases what it held, the queue
behind it drains, and ``retrying`` runs the step again after a backoff — for
at most ``max_wait`` seconds in all, then fails saying who was in the way.

Once the lock timeout has fired, the waiter is gone and so is the answer to
"who blocked it".  ``BlockerWatch`` therefore looks while the step runs: a
thread on its own connection asks every fraction of a second which sessions
block the migration's backend (``pg_blocking_pids``), and keeps the last
answer for the message.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Callable, TypeVar

from . import db, errors
from .catalog import Catalog

T = TypeVar("T")

LOCK_NOT_AVAILABLE = "55P03"  # lock_timeout fired (also NOWAIT)
WATCH_INTERVAL = 0.2  # seconds between looks at pg_locks while a step runs
FIRST_BACKOFF = 1.0
MAX_BACKOFF = 30.0


class LockWaitExceeded(errors.FlowForgeError):
    """A migration step could not take its locks within the overall time allowed."""

    code = LOCK_NOT_AVAILABLE


@dataclass(frozen=True)
class Blocker:
    """A session in a migration's way, as ``pg_stat_activity`` and ``pg_locks`` describe it."""

    pid: int
    usename: str | None
    application_name: str | None
    state: str | None
    state_seconds: float | None
    xact_seconds: float | None
    held: str | None  # e.g. "AccessShareLock on flowforge.task_run"
    wanted: str | None  # what the migration waits for, e.g. "AccessExclusiveLock on flowforge.task_run"

    def describe(self) -> str:
        """``waiting for pid 42 (user app, application psql), idle in transaction for 42 s, holding ...``."""
        text = "waiting for " + session_name(self.pid, self.usename, self.application_name)
        if self.state and self.state.startswith("idle in transaction"):
            text += f", {self.state} for {_seconds(self.state_seconds)}"
        elif self.xact_seconds is not None:
            text += f", {self.state or 'in a transaction'} in a transaction open for {_seconds(self.xact_seconds)}"
        if self.held:
            text += f", holding {self.held}"
        elif self.wanted:
            text += f", which holds what the migration needs ({self.wanted})"
        return text


def session_name(pid: int, usename: str | None, application_name: str | None) -> str:
    """``pid 42 (user app, application psql)``: how every message names a session."""
    who = ", ".join(part for part in (f"user {usename}" if usename else "",
                                      f"application {application_name}" if application_name else "") if part)
    return f"pid {pid}" + (f" ({who})" if who else "")


def _seconds(value: float | None) -> str:
    return "?" if value is None else f"{value:.0f} s"


class BlockerWatch:
    """While the block runs, remember the last session seen blocking a backend named ``application_name``."""

    def __init__(self, dsn: str, application_name: str, interval: float = WATCH_INTERVAL):
        self._dsn, self._application_name, self._interval = dsn, application_name, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="flowforge-migrate-watch", daemon=True)
        self.last: Blocker | None = None

    def __enter__(self) -> "BlockerWatch":
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        self._thread.join()

    def _watch(self) -> None:
        try:
            # Autocommit: the watcher must hold no snapshot, or CREATE INDEX CONCURRENTLY would wait for it too.
            with db.connect(self._dsn, autocommit=True) as conn:
                catalog = Catalog(conn)
                while not self._stop.wait(self._interval):
                    found = catalog.lock_blockers(self._application_name)
                    if found:
                        self.last = Blocker(**found[0])
        except errors.FlowForgeError:
            pass  # only the message gets poorer; the migration itself goes on


class Retrier:
    """Runs steps again after a bounded, growing pause whenever they fail on a lock timeout.

    One ``Retrier`` per migrate: ``max_wait`` bounds the whole run, not each
    step.  ``report`` hears one line per retry (why, and when the next try
    is); past the deadline the last explanation becomes ``LockWaitExceeded``.
    Any other error ends the retries at once.
    """

    def __init__(self, dsn: str, application_name: str, *, lock_timeout: float, max_wait: float,
                 report: Callable[[str], None]):
        self._dsn, self._application_name = dsn, application_name
        self._lock_timeout, self._max_wait, self._report = lock_timeout, max_wait, report
        self._deadline = time.monotonic() + max_wait

    def run(self, step: Callable[[], T], what: str) -> T:
        pause, tries = FIRST_BACKOFF, 0
        while True:
            tries += 1
            with BlockerWatch(self._dsn, self._application_name) as watch:
                try:
                    return step()
                except errors.FlowForgeError as exc:
                    if exc.sqlstate != LOCK_NOT_AVAILABLE:
                        raise
            why = watch.last.describe() if watch.last else "no blocking session was seen"
            left = self._deadline - time.monotonic()
            if left <= 0:
                raise LockWaitExceeded(
                    f"gave up on {what} after {self._max_wait:g} s ({tries} tries; a statement waits at most "
                    f"{self._lock_timeout:g} s for a lock): {why}",
                    hint=(f"end that session (SELECT pg_terminate_backend({watch.last.pid})) or " if watch.last
                          else "") + "migrate again with a longer --max-wait; that step was not applied")
            sleep = min(pause, left)
            self._report(f"{what}: no lock within {self._lock_timeout:g} s, {why}; trying again in "
                         f"{sleep:.0f} s (giving up in {left:.0f} s)")
            time.sleep(sleep)
            pause = min(pause * 2, MAX_BACKOFF)
