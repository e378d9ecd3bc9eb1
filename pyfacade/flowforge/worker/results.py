"""Writing what a handler produced: ``complete`` or ``fail``, once, and only while the task is ours.

Results of pull tasks go to the batch ``Completer`` when there is one; pushed
tasks (and every failure) are written at once on the shared connection,
because a pushed task's message is acked only after its write committed.
While the database is away a write is retried until the lease is surely gone;
after that, or when the API says the task is no longer ours, the result is
dropped and counted.
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
    def __init__(self, ops: SharedConnection, completer: Completer | None, stats: Stats, lease: float,
                 abandon: threading.Event):
        self._ops = ops
        self._completer = completer
        self._stats = stats
        self._lease = lease
        self._abandon = abandon

    def complete(self, job: Job, output: Any, text: str) -> None:
        """``text`` is ``output`` as JSON, serialised once by the caller (which validated it that way)."""
        if self._completer is not None and not job.push:
            self._completer.put(job, output, text)
            return
        output = None if output is None else Jsonb(output, dumps=lambda _obj: text)
        if self._write(job, lambda api: api.complete(job.task_run_id, job.fencing_token, output), "complete"):
            self._stats.add("completed")

    def fail(self, job: Job, error: str, *, retryable: bool) -> None:
        if self._write(job, lambda api: api.fail(job.task_run_id, job.fencing_token, error, retryable), "fail"):
            self._stats.add("failed")
            log.info("task %s (%s) attempt %d failed%s: %s", job.task_key, job.task_run_id, job.attempt,
                     "" if retryable else " for good", error)

    def _give_up(self) -> Callable[[], bool]:
        """While the database is away, keep retrying a write until the lease is surely gone."""
        deadline = time.monotonic() + self._lease
        return lambda: self._abandon.is_set() or time.monotonic() > deadline

    def _write(self, job: Job, api_call: Callable[[Client], Any], what: str) -> bool:
        try:
            self._ops.call(api_call, give_up=self._give_up())
            return True
        except NOT_OURS as exc:
            job.lease_lost.set()
            self._stats.add("dropped")
            log.warning("%s of task %s (%s) refused, result dropped: %s", what, job.task_key, job.task_run_id, exc)
        except errors.DatabaseUnavailable as exc:
            self._stats.add("dropped")
            log.error("%s of task %s (%s) not written, database unreachable: %s; its lease will expire",
                      what, job.task_key, job.task_run_id, exc)
        except errors.FlowForgeError as exc:
            self._stats.add("dropped")
            log.error("%s of task %s (%s) failed: %s", what, job.task_key, job.task_run_id, exc)
        return False
