"""Batched completion: the results of pull tasks written together by ``flowforge.complete_many``.

Task runs only: ``complete_many`` takes task run ids, so a work item's result
is written by ``complete_work`` at once (``results``).

A pool thread hands a finished task over and goes on with the next one; a
single thread writes what accumulated every ``interval`` seconds (or as soon
as ``max_batch`` are waiting) in one transaction.  A crash loses at most the
results not yet written, and those tasks come back through their leases.

A task whose output ``complete_many`` reports ``too_large`` is still
running; it goes to ``too_large`` (``Results.complete_alone``), which fails
it for good with the reason ``complete`` gives.
"""

from __future__ import annotations

import logging
import queue as _queue
import threading
import time
from typing import Any, Callable

from psycopg.types.json import Jsonb

from .. import errors
from .connection import SharedConnection
from .jobs import Job, Stats

log = logging.getLogger("flowforge.worker")


class Completer:
    def __init__(self, dsn: str, interval: float, lease: float, stats: Stats, *,
                 too_large: Callable[[Job, Jsonb | None], None], max_batch: int = 500):
        self._interval = interval
        self._too_large = too_large
        self._lease = lease
        self._stats = stats
        self._max_batch = max_batch
        self._items: _queue.Queue = _queue.Queue(maxsize=max_batch * 4)
        self._conn = SharedConnection(dsn, "complete")
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="flowforge-complete", daemon=True)
        self._thread.start()

    def put(self, job: Job, output: Any, text: str) -> None:
        """Hand over a result; ``text`` is its JSON, already serialised (and so validated) by the caller."""
        self._items.put((job, None if output is None else Jsonb(output, dumps=lambda _obj, t=text: t)))

    def close(self, timeout: float = 30.0) -> None:
        """Write everything handed over so far, then stop."""
        self._closed.set()
        self._thread.join(timeout)
        self._conn.close()

    def _loop(self) -> None:
        while True:
            try:
                first = self._items.get(timeout=0.1)
            except _queue.Empty:
                if self._closed.is_set():
                    return
                continue
            batch = [first]
            deadline = time.monotonic() + self._interval
            while len(batch) < self._max_batch:
                remaining = deadline - time.monotonic()
                try:
                    batch.append(self._items.get(timeout=remaining) if remaining > 0 else self._items.get_nowait())
                except _queue.Empty:
                    break
            self._write(batch)

    def _write(self, batch: list) -> None:
        jobs = [job for job, _ in batch]
        ids, tokens = [job.id for job in jobs], [job.fencing_token for job in jobs]
        outputs = [output for _, output in batch]
        deadline = time.monotonic() + self._lease
        try:
            rows = self._conn.call(lambda api: api.complete_many(ids, tokens, outputs),
                                   give_up=lambda: time.monotonic() > deadline)
        except Exception as exc:  # noqa: BLE001 - the completer thread must outlive anything
            for job in jobs:
                self._stats.add("dropped", job)
            log.error("complete of %d task(s) not written: %s; their leases will expire", len(jobs),
                      exc if isinstance(exc, errors.FlowForgeError) else repr(exc))
            return
        outcomes = {row.task_run_id: row.outcome for row in rows}
        for job, output in batch:
            outcome = outcomes.get(job.id)
            if outcome == "completed":
                self._stats.add("completed", job)
            elif outcome == "too_large":
                self._too_large(job, output)  # still running and ours: fail it for good, saying why
            else:
                job.lease_lost.set()
                self._stats.add("dropped", job)
                log.warning("complete of %s refused (%s), result dropped", job.describe(), outcome)
