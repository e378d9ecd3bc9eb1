"""Running handlers: ``concurrency`` pool threads take jobs in turn; ``async def`` handlers run on one loop.

Pool threads are daemon threads, so an abandoned handler cannot keep the
process alive.  A task whose input could not be decoded (``decode``) fails for
good with the reason, its handler never called.  A handler's return value
must be JSON-serialisable (else the task fails for good, saying so); an exception fails it with
``retryable=True`` and the exception's one-line repr, ``PermanentError``
without retry; a task key with no handler fails with ``retryable=False``.
Nothing is written for a task whose lease was lost or that was abandoned.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import queue as _queue
import threading
from typing import Any, Callable

from .context import Context, Handler, PermanentError
from .decode import Undecodable
from .heartbeats import Heartbeats
from .jobs import InFlight, Job, Stats, one_line
from .registry import Registry
from .results import Results

log = logging.getLogger("flowforge.worker")


class HandlerPool:
    def __init__(self, registry: Registry, results: Results, heartbeats: Heartbeats, in_flight: InFlight,
                 stats: Stats, worker_name: str, *, wake: threading.Event, abandon: threading.Event,
                 wants_claim: Callable[[], bool] = lambda: True):
        self._registry = registry
        self._results = results
        self._heartbeats = heartbeats
        self._in_flight = in_flight
        self._stats = stats
        self._worker_name = worker_name
        self._wake = wake                  # set when a job finished: capacity freed
        # Whether the room freed is worth a claim now (else the wake-up would cost
        # the claim loop a thread switch per finished job and claim nothing).
        self._wants_claim = wants_claim
        self._abandon = abandon            # grace period over: run and write nothing more
        self._jobs: _queue.Queue = _queue.Queue()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_lock = threading.Lock()

    def start(self, concurrency: int) -> None:
        for i in range(concurrency):
            threading.Thread(target=self._thread, name=f"flowforge-task-{i}", daemon=True).start()

    def submit(self, job: Job) -> None:
        self._in_flight.add(job)
        self._jobs.put(job)

    def close(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)

    def _thread(self) -> None:
        while True:
            job = self._jobs.get()
            try:
                self._execute(job)
            except Exception:  # noqa: BLE001 - a worker bug must not kill the pool thread
                log.exception("internal error running %s", job.describe())
            finally:
                self._in_flight.remove(job)
                if self._wants_claim():
                    self._wake.set()
                if job.broker is not None:
                    job.broker.ack(job)

    def _execute(self, job: Job) -> None:
        if self._abandon.is_set():
            return
        if job.broker is not None and not job.owned and not job.broker.take(job):
            return
        if isinstance(job.input, Undecodable):
            # The same bytes would fail the same way on every attempt.
            self._results.fail(job, f"task input cannot be decoded: {job.input.reason}", retryable=False)
            return
        handler = self._registry.get(job.task_key)
        if handler is None:
            self._results.fail(job, f"no handler for task key {job.task_key}", retryable=False)
            return
        ctx = Context(job, self._worker_name, self._heartbeats.for_handler)
        try:
            result = self._call(handler, ctx, job.input)
        except PermanentError as exc:
            outcome = ("fail", one_line(exc), False)
        except BaseException as exc:  # noqa: BLE001 - any handler failure is the task's failure
            outcome = ("fail", one_line(exc), True)
        else:
            try:
                text = json.dumps(result, allow_nan=False)
            except (TypeError, ValueError) as exc:
                outcome = ("fail", f"the output of task {job.task_key} is not JSON-serialisable: {exc}", False)
            else:
                outcome = ("complete", result, text)
        if job.lease_lost.is_set() or self._abandon.is_set():
            log.warning("%s no longer ours (lease lost or abandoned): result dropped", job.describe())
            self._stats.add("dropped", job)
            return
        if outcome[0] == "complete":
            self._results.complete(job, outcome[1], outcome[2])
        else:
            self._results.fail(job, outcome[1], retryable=outcome[2])

    def _call(self, handler: Handler, ctx: Context, task_input: Any) -> Any:
        if inspect.iscoroutinefunction(handler):
            return asyncio.run_coroutine_threadsafe(handler(ctx, task_input), self._event_loop()).result()
        result = handler(ctx, task_input)
        if inspect.isawaitable(result):
            return asyncio.run_coroutine_threadsafe(_await(result), self._event_loop()).result()
        return result

    def _event_loop(self) -> asyncio.AbstractEventLoop:
        with self._loop_lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="flowforge-asyncio", daemon=True).start()
                self._loop = loop
            return self._loop


async def _await(awaitable):
    return await awaitable
