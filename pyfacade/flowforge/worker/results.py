"""Writing what a handler produced: ``complete`` or ``fail``, once, and only while the unit is ours.

A DAG task's result is written with ``complete`` / ``fail``, a work item's
with ``complete_work`` / ``fail_work`` (``Job.unit`` decides); the rules
below are the same for both.  Results of pull tasks go to the batch
``Completer`` when there is one (``complete_many`` takes task runs only);
work items, pushed tasks and every failure are written at once on the shared
connection — a pushed task's message is acked only after its write committed.
While the database is away a write is retried until the lease is surely gone;
after that, or when the API says the task is no longer ours, the result is
dropped and counted.

An output over the installation's limits (FF009 from ``complete`` or
``complete_work``, outcome ``too_large`` from ``complete_many``) is a deterministic refusal: the same
output would be refused on every attempt.  The task is failed for good at
once with the refusal's own words — never left for its lease to expire.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable

from psycopg.types.json import Jsonb

from .. import errors
from ..client import Client
from .completer import Completer
from .connection import SharedConnection
from .jobs import NOT_OURS, Job, Stats

log = logging.getLogger("flowforge.worker")


class Results:
    """``batch_interval`` > 0: pull results are batched through a ``Completer`` on its own connection to ``dsn``."""

    def __init__(self, ops: SharedConnection, stats: Stats, lease: float, abandon: threading.Event, *,
                 dsn: str | None = None, batch_interval: float = 0.0):
        self._ops = ops
        self._stats = stats
        self._lease = lease
        self._abandon = abandon
        self._completer = (Completer(dsn, batch_interval, lease, stats, too_large=self.complete_alone)
                           if dsn is not None and batch_interval > 0 else None)

    def close(self) -> None:
        """Write every batched result already handed over, then stop the completer."""
        if self._completer is not None:
            self._completer.close()

    def complete(self, job: Job, output: Any, text: str) -> None:
        """``text`` is ``output`` as JSON, serialised once by the caller (which validated it that way)."""
        if self._completer is not None and job.is_task and not job.push:
            self._completer.put(job, output, text)
            return
        self.complete_alone(job, None if output is None else Jsonb(output, dumps=lambda _obj: text))

    def complete_alone(self, job: Job, output: Jsonb | None) -> None:
        """``complete`` (``complete_work``) for this one unit now; FF009 (over the limits) fails it for good with that reason.

        Also how the completer settles a task ``complete_many`` found too large:
        ``complete`` says exactly what is wrong with the output.
        """
        try:
            written = self._write(job, lambda api: job.unit.complete(api, job, output), "complete",
                                  refusals=errors.PayloadTooLarge)
        except errors.PayloadTooLarge as exc:
            self.fail(job, exc.message, retryable=False)
            return
        if written:
            self._stats.add("completed", job)

    def fail(self, job: Job, error: str, *, retryable: bool) -> None:
        if self._write(job, lambda api: job.unit.fail(api, job, error, retryable), "fail"):
            self._stats.add("failed", job)
            log.info("%s attempt %d failed%s: %s", job.describe(), job.attempt, "" if retryable else " for good",
                     error)

    def _give_up(self) -> Callable[[], bool]:
        """While the database is away, keep retrying a write until the lease is surely gone."""
        deadline = time.monotonic() + self._lease
        return lambda: self._abandon.is_set() or time.monotonic() > deadline

    def _write(self, job: Job, api_call: Callable[[Client], Any], what: str,
               refusals: type[errors.FlowForgeError] | tuple = ()) -> bool:
        """Make the write; True when it committed.  ``refusals`` are raised for the caller to handle."""
        try:
            self._ops.call(api_call, give_up=self._give_up())
            return True
        except refusals:
            raise
        except NOT_OURS as exc:
            job.lease_lost.set()
            self._stats.add("dropped", job)
            log.warning("%s of %s refused, result dropped: %s", what, job.describe(), exc)
        except errors.DatabaseUnavailable as exc:
            self._stats.add("dropped", job)
            log.error("%s of %s not written, database unreachable: %s; its lease will expire",
                      what, job.describe(), exc)
        except errors.FlowForgeError as exc:
            self._stats.add("dropped", job)
            log.error("%s of %s failed: %s", what, job.describe(), exc)
        return False
