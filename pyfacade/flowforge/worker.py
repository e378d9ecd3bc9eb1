"""The worker SDK: run Python functions as FlowForge tasks.

```python
import flowforge

worker = flowforge.Worker(queues=["default"], concurrency=4)

@worker.task("resize")
def resize(ctx, input):
    return {"ok": True}

worker.run()          # until SIGTERM / SIGINT or worker.stop()
```

A worker only moves data between PostgreSQL and your functions; every rule
(who may take a task, retries, backoff, what becomes ready next) is in the
SQL API it calls: ``claim``, ``heartbeat``, ``complete``, ``fail``.

Pull queues
    A dedicated connection LISTENs on ``flowforge_ready`` and wakes the claim
    loop (a fallback poll every ``poll_interval`` seconds covers retries whose
    backoff just ended and notifications lost while reconnecting).  The loop
    claims up to its free capacity in one ``claim`` call.
Push queues
    With an AMQP URL, a queue configured with an exchange
    (``flowforge queue configure NAME --exchange X``) is consumed from
    RabbitMQ instead: the worker declares a durable queue ``flowforge.<name>``
    bound to the exchange, takes each delivered task with ``heartbeat`` (its
    fencing token came in the message), runs it, completes or fails it, and
    acks only after that committed.  A stale or redelivered message (FF004 /
    FF005 / FF001 on the first heartbeat) is acked and dropped.
Leases
    Every in-flight task is heartbeaten every ``lease / 3`` seconds.  When a
    heartbeat is refused the task is no longer ours: ``ctx.lease_lost``
    becomes True and whatever the handler returns is dropped, not written.
Results
    A return value must be JSON-serialisable (else the task fails for good
    with a message saying so).  An exception fails the task with
    ``retryable=True`` and the exception's one-line repr; raise
    ``flowforge.PermanentError`` to fail it without retry.  A task key with no
    registered handler fails with ``retryable=False``.
Shutdown
    ``stop()`` (or SIGTERM / SIGINT in ``run()``) stops claiming and waits up
    to ``grace_period`` seconds for in-flight handlers.  Work still running
    then is abandoned: no more heartbeats, no writes; its lease expires and
    the reaper (``tick``) hands it to another worker.  A second signal skips
    the rest of the grace period.

Threads: handlers run on ``concurrency`` pool threads (daemon threads, so an
abandoned handler cannot keep the process alive); ``async def`` handlers run
on one asyncio loop thread.  Connections: one for LISTEN, one for claims, one
shared (under a lock) for heartbeats, completions and failures — psycopg
connections must not be used by two threads at once.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import os
import queue as _queue
import random
import signal
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Callable

import psycopg
from psycopg.types.json import Jsonb

from . import config, db, errors
from .amqp import EXCHANGE_TYPE, describe, mask_url
from .client import Client
from .rows import ClaimedTask

log = logging.getLogger("flowforge.worker")

# Answers to heartbeat/complete/fail that mean "this task is not ours any more".
_NOT_OURS = (errors.LeaseLost, errors.IllegalTransition, errors.NotFound)

MAX_ERROR_LENGTH = 2000
BACKOFF_START = 0.1
BACKOFF_MAX = 5.0


class PermanentError(Exception):
    """Raise from a handler to fail the task for good: ``fail(retryable=False)``."""


Handler = Callable[["Context", Any], Any]


def one_line(exc: BaseException) -> str:
    """The exception's repr on one line, capped in length (what ``fail`` records)."""
    text = " ".join(repr(exc).split())
    return text if len(text) <= MAX_ERROR_LENGTH else text[: MAX_ERROR_LENGTH - 3] + "..."


def _backoff(attempt: int) -> float:
    """Bounded exponential backoff with jitter: 0.1 s, 0.2 s ... at most 5 s."""
    return min(BACKOFF_MAX, BACKOFF_START * 2 ** attempt) * (0.5 + random.random() / 2)


# --- the task context -----------------------------------------------------------------

@dataclass
class _Job:
    """One task this worker is responsible for, from claim (or delivery) to its write."""

    task_run_id: uuid.UUID
    workflow_run_id: uuid.UUID
    task_key: str
    attempt: int
    fencing_token: int
    input: Any
    push: bool = False
    owned: bool = True                 # pushed tasks become ours at their first heartbeat
    lease_expires_at: datetime | None = None
    last_beat: float = field(default_factory=time.monotonic)
    lease_lost: threading.Event = field(default_factory=threading.Event)
    deliveries: list = field(default_factory=list)  # (connection, channel, delivery_tag) to ack

    @property
    def key(self) -> tuple[uuid.UUID, int]:
        return (self.task_run_id, self.fencing_token)

    @classmethod
    def claimed(cls, row: ClaimedTask) -> "_Job":
        return cls(row.task_run_id, row.workflow_run_id, row.task_key, row.attempt, row.fencing_token, row.input,
                   lease_expires_at=row.lease_expires_at)


class Context:
    """What a handler knows about the task it runs.

    Attributes: ``task_run_id``, ``workflow_run_id``, ``task_key``, ``attempt``
    (1 on the first try), ``fencing_token``, ``input`` (the same object the
    handler receives: ``{"run": <run input>, "deps": {<key>: <output>}}``),
    ``logger``, ``worker_name``.
    """

    def __init__(self, worker: "Worker", job: _Job):
        self._worker = worker
        self._job = job
        self.task_run_id = job.task_run_id
        self.workflow_run_id = job.workflow_run_id
        self.task_key = job.task_key
        self.attempt = job.attempt
        self.fencing_token = job.fencing_token
        self.input = job.input
        self.worker_name = worker.name
        self.logger = log.getChild(job.task_key)

    @property
    def run_id(self) -> uuid.UUID:
        return self.workflow_run_id

    @property
    def lease_lost(self) -> bool:
        """True once a heartbeat was refused: stop working, the result will be dropped."""
        return self._job.lease_lost.is_set()

    @property
    def lease_lost_event(self) -> threading.Event:
        """The ``threading.Event`` behind ``lease_lost``, to wait on."""
        return self._job.lease_lost

    def heartbeat(self) -> datetime:
        """Extend the lease now (the worker also does it every lease/3) and return the new expiry.

        Raises ``flowforge.errors.LeaseLost`` when the task is no longer ours.
        """
        return self._worker._heartbeat(self._job, raise_if_lost=True)

    def __repr__(self) -> str:
        return f"<Context {self.task_key} run={self.workflow_run_id} attempt={self.attempt}>"


# --- a connection shared by threads in turn ----------------------------------------------

class _SharedConnection:
    """One autocommit connection, one caller at a time, reconnecting with bounded backoff.

    Every statement sent through it is a single API call, so autocommit makes
    each one its own transaction.
    """

    def __init__(self, dsn: str, label: str):
        self._dsn = dsn
        self._label = label
        self._conn: psycopg.Connection | None = None
        self._client: Client | None = None
        self._lock = threading.Lock()

    def call(self, api_call: Callable[[Client], Any], *, give_up: Callable[[], bool]) -> Any:
        """Make one API call; on a lost connection reconnect and retry until ``give_up()``.

        A statement whose connection broke may or may not have committed; the
        API's answers to a repeat (FF004/FF005) are how the caller learns it.
        """
        attempt = 0
        while True:
            with self._lock:
                try:
                    if self._conn is None or self._conn.closed:
                        self._conn = db.connect(self._dsn, autocommit=True)
                        self._client = Client(self._conn)
                    return api_call(self._client)
                except errors.DatabaseUnavailable as exc:
                    self._discard()
                    if give_up():
                        raise
                    log.warning("%s connection: %s; retrying", self._label, exc)
            time.sleep(_backoff(attempt))
            attempt += 1

    def _discard(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - it is already broken
                pass

    def close(self) -> None:
        with self._lock:
            self._discard()


class _Completer:
    """Batches the results of pull tasks into ``flowforge.complete_many`` calls.

    A pool thread hands a finished task over and goes on with the next one; a
    single thread writes what accumulated every ``interval`` seconds (or as
    soon as ``max_batch`` are waiting) in one transaction. A crash loses at
    most the results not yet written, and those tasks come back through their
    leases.
    """

    def __init__(self, worker: "Worker", interval: float, max_batch: int = 500):
        self._worker = worker
        self._interval = interval
        self._max_batch = max_batch
        self._items: _queue.Queue = _queue.Queue(maxsize=max_batch * 4)
        self._conn = _SharedConnection(worker._dsn, "complete")
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="flowforge-complete", daemon=True)
        self._thread.start()

    def put(self, job: "_Job", output: Any, text: str) -> None:
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
        worker = self._worker
        jobs = [job for job, _ in batch]
        ids, tokens = [job.task_run_id for job in jobs], [job.fencing_token for job in jobs]
        outputs = [output for _, output in batch]
        deadline = time.monotonic() + worker.lease
        try:
            rows = self._conn.call(lambda api: api.complete_many(ids, tokens, outputs),
                                   give_up=lambda: time.monotonic() > deadline)
        except errors.FlowForgeError as exc:
            for _ in jobs:
                worker._count("dropped")
            log.error("complete of %d task(s) not written: %s; their leases will expire", len(jobs), exc)
            return
        outcomes = {row.task_run_id: row.outcome for row in rows}
        for job in jobs:
            outcome = outcomes.get(job.task_run_id)
            if outcome == "completed":
                worker._count("completed")
            else:
                job.lease_lost.set()
                worker._count("dropped")
                log.warning("complete of task %s (%s) refused (%s), result dropped", job.task_key, job.task_run_id,
                            outcome)


@dataclass(frozen=True)
class _PushBinding:
    queue: str
    exchange: str
    routing_key: str

    @property
    def amqp_queue(self) -> str:
        return f"flowforge.{self.queue}"


# --- the worker ---------------------------------------------------------------------------

class Worker:
    """Runs registered handlers for the tasks of some queues.

    ``queues``: pull queues to claim from (a queue configured as push is
    consumed from RabbitMQ instead when an AMQP URL is known).
    ``push_queues``: queues to consume from RabbitMQ; they must be configured
    with an exchange.  ``dsn``: None means ``FLOWFORGE_DSN``, else the
    embedded default.  ``amqp_url``: None means ``FLOWFORGE_AMQP_URL``.
    ``lease``, ``poll_interval`` and ``grace_period`` are in seconds.
    ``complete_batch_interval``: results of pull tasks are written together by
    ``flowforge.complete_many`` at most this many seconds after the handler
    returned (default 2 ms); 0 writes each with ``flowforge.complete`` at once.
    """

    def __init__(self, queues: list[str] | tuple[str, ...] = ("default",), concurrency: int = 4, *,
                 dsn: str | None = None, name: str | None = None, lease: float = 30.0,
                 poll_interval: float = 1.0, grace_period: float = 30.0,
                 push_queues: list[str] | tuple[str, ...] = (), amqp_url: str | None = None,
                 complete_batch_interval: float = 0.002):
        if isinstance(queues, str) or isinstance(push_queues, str):
            raise TypeError("queues and push_queues are lists of queue names, not a string")
        if not queues and not push_queues:
            raise ValueError("a worker needs at least one queue")
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if not 3 <= lease <= 86400:
            raise ValueError("lease must be between 3 seconds and 1 day")
        if poll_interval <= 0 or grace_period < 0:
            raise ValueError("poll_interval must be positive and grace_period not negative")
        if not 0 <= complete_batch_interval <= 1:
            raise ValueError("complete_batch_interval must be between 0 and 1 second")
        self.queues = list(queues)
        self.push_queues = list(push_queues)
        self.concurrency = concurrency
        self.dsn = dsn
        self.amqp_url = amqp_url
        self.name = name or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.lease = float(lease)
        self.poll_interval = float(poll_interval)
        self.grace_period = float(grace_period)
        self.complete_batch_interval = float(complete_batch_interval)
        self.handlers: dict[str, Handler] = {}
        self._completer: _Completer | None = None

        self._stop = threading.Event()      # stop claiming / consuming
        self._abandon = threading.Event()   # grace period over: drop what is still running
        self._done = threading.Event()      # run() returned
        self._wake = threading.Event()      # something to claim, or capacity freed
        self._lock = threading.Lock()
        # Keyed by (task_run_id, fencing_token): a reaped task can come back to this
        # worker as a new generation while the old handler still runs.
        self._inflight: dict[tuple[uuid.UUID, int], _Job] = {}
        self._pending = 0                   # jobs submitted and not finished (pull and push)
        self._jobs: _queue.Queue = _queue.Queue()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._dsn: str | None = None
        self._ops: _SharedConnection | None = None
        self._pull: list[str] = []
        self._push: list[_PushBinding] = []
        self._push_connection = None        # pika connection owned by the push thread
        self.stats = {"completed": 0, "failed": 0, "dropped": 0}
        self._stats_lock = threading.Lock()

    # --- registration ---------------------------------------------------------------

    def task(self, key: str) -> Callable[[Handler], Handler]:
        """Decorator: ``@worker.task("resize")`` runs the function for task key ``resize``."""
        def register(fn: Handler) -> Handler:
            self.register(key, fn)
            return fn
        return register

    def register(self, key: str, fn: Handler) -> None:
        if not isinstance(key, str) or not key:
            raise ValueError("a task key is a non-empty string")
        if key in self.handlers:
            raise ValueError(f"a handler for task key {key!r} is already registered")
        if not callable(fn):
            raise TypeError(f"the handler for {key!r} is not callable")
        self.handlers[key] = fn

    # --- lifecycle --------------------------------------------------------------------

    def run(self) -> None:
        """Work until ``stop()`` or SIGTERM/SIGINT, then shut down gracefully."""
        restore = self._install_signal_handlers()
        try:
            self._run()
        finally:
            for sig, previous in restore.items():
                signal.signal(sig, previous)

    def start(self) -> threading.Thread:
        """Run in a background thread (no signal handlers); ``stop()`` then ``join()`` to end."""
        if self._thread is not None:
            raise RuntimeError("this worker was already started")
        self._thread = threading.Thread(target=self._run, name=f"flowforge-worker-{self.name}", daemon=True)
        self._thread.start()
        return self._thread

    def stop(self) -> None:
        """Stop claiming; in-flight work gets ``grace_period`` seconds. Safe from any thread."""
        self._stop.set()
        self._wake.set()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for ``run()`` to return; True if it did."""
        return self._done.wait(timeout)

    @property
    def in_flight(self) -> int:
        with self._lock:
            return self._pending

    def _install_signal_handlers(self) -> dict:
        if threading.current_thread() is not threading.main_thread():
            return {}
        previous = {}

        def on_signal(signum, _frame):
            if self._stop.is_set():
                log.warning("second %s: abandoning in-flight work now", signal.Signals(signum).name)
                self._abandon.set()
            else:
                log.info("%s: finishing in-flight work (up to %ss), claiming nothing new",
                         signal.Signals(signum).name, self.grace_period)
            self.stop()

        for sig in (signal.SIGTERM, signal.SIGINT):
            previous[sig] = signal.signal(sig, on_signal)
        return previous

    def _run(self) -> None:
        try:
            self._dsn = db.resolve_dsn(config.resolve(self.dsn))
            self._ops = _SharedConnection(self._dsn, "worker")
            self._plan_queues()
            if self._pull and self.complete_batch_interval > 0:
                self._completer = _Completer(self, self.complete_batch_interval)
            for i in range(self.concurrency):
                threading.Thread(target=self._pool_thread, name=f"flowforge-task-{i}", daemon=True).start()
            threading.Thread(target=self._heartbeat_thread, name="flowforge-heartbeat", daemon=True).start()
            if self._pull:
                threading.Thread(target=self._listen_thread, name="flowforge-listen", daemon=True).start()
            if self._push:
                threading.Thread(target=self._push_thread, name="flowforge-push", daemon=True).start()
            log.info("worker %s: pull %s, push %s, concurrency %d", self.name, self._pull,
                     [b.queue for b in self._push], self.concurrency)
            if self._pull:
                self._claim_loop()
            else:
                self._stop.wait()
            self._drain()
        finally:
            self._stop.set()
            self._abandon.set()
            if self._completer is not None:
                self._completer.close()  # results already in hand are still written
            if self._ops is not None:
                self._ops.close()
            if self._loop is not None:
                self._loop.call_soon_threadsafe(self._loop.stop)
            self._done.set()

    def _plan_queues(self) -> None:
        """Split the queues into pull and push, from flowforge.queue and the AMQP URL."""
        amqp_url = self.amqp_url or config.resolve(self.dsn).amqp_url
        names = sorted(set(self.queues) | set(self.push_queues))
        rows = self._ops.call(lambda api: api.queue_settings(names), give_up=lambda: True)
        exchanges = {row.name: (row.exchange, row.routing_key) for row in rows if row.exchange}
        push: list[_PushBinding] = []
        for name in self.push_queues:
            if name not in exchanges:
                raise errors.InvalidArgument(
                    f"queue {name!r} is not a push queue; configure it first: "
                    f"flowforge queue configure {name} --exchange EXCHANGE")
        wanted_push = list(self.push_queues) + [q for q in self.queues if q in exchanges and amqp_url]
        for name in dict.fromkeys(wanted_push):
            push.append(_PushBinding(name, *exchanges[name]))
        if push and not amqp_url:
            raise errors.InvalidArgument("push queues need an AMQP URL: pass amqp_url= or set FLOWFORGE_AMQP_URL")
        for name in self.queues:
            if name in exchanges and not amqp_url:
                log.warning("queue %r is configured as push but no AMQP URL is set; its tasks go to RabbitMQ, "
                            "not to claim", name)
        pushed = {b.queue for b in push}
        self._pull = [q for q in self.queues if q not in pushed]
        self._push = push
        self._amqp_url = amqp_url

    # --- pull: listen, claim ---------------------------------------------------------

    def _listen_thread(self) -> None:
        attempt = 0
        while not self._stop.is_set():
            conn = None
            try:
                conn = db.connect(self._dsn, autocommit=True)
                Client(conn).listen_ready()
                attempt = 0
                with db.mapped_errors():
                    self._wake.set()  # anything made ready while we were not listening
                    while not self._stop.is_set():
                        for _ in conn.notifies(timeout=1.0, stop_after=1):
                            self._wake.set()
            except (errors.FlowForgeError, psycopg.Error) as exc:
                if self._stop.is_set():
                    break
                log.warning("listen connection: %s; reconnecting", db.first_line(exc))
                time.sleep(_backoff(attempt))
                attempt += 1
            finally:
                if conn is not None:
                    try:
                        conn.close()
                    except Exception:  # noqa: BLE001
                        pass

    def _claim_loop(self) -> None:
        claims = _SharedConnection(self._dsn, "claim")
        lease = timedelta(seconds=self.lease)
        try:
            while not self._stop.is_set():
                self._wake.clear()
                free = self.concurrency - self.in_flight
                if free > 0:
                    try:
                        rows = claims.call(lambda api: api.claim(self._pull, self.name, lease, free),
                                           give_up=self._stop.is_set)
                    except errors.DatabaseUnavailable:
                        break  # stopping while the database is away
                    except errors.FlowForgeError as exc:
                        log.error("claim refused: %s", exc)
                        self._stop.wait(self.poll_interval)
                        continue
                    for row in rows:
                        self._submit(_Job.claimed(row))
                    if len(rows) == free:
                        continue  # took all we could: there may be more, and capacity to check
                self._wake.wait(self.poll_interval)
        finally:
            claims.close()

    def _submit(self, job: _Job) -> None:
        with self._lock:
            self._pending += 1
            if job.owned:
                self._inflight[job.key] = job
        self._jobs.put(job)

    def _drain(self) -> None:
        """After stop: wait for in-flight work up to the grace period, then abandon the rest."""
        deadline = time.monotonic() + self.grace_period
        while self.in_flight and not self._abandon.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            self._wake.wait(min(remaining, 0.2))
            self._wake.clear()
        left = self.in_flight
        self._abandon.set()
        if left:
            log.warning("grace period over: abandoning %d task(s); their leases will expire and be reaped", left)

    # --- running a task ----------------------------------------------------------------

    def _pool_thread(self) -> None:
        while True:
            job = self._jobs.get()
            try:
                self._execute(job)
            except Exception:  # noqa: BLE001 - a worker bug must not kill the pool thread
                log.exception("internal error running task %s (%s)", job.task_key, job.task_run_id)
            finally:
                with self._lock:
                    self._pending -= 1
                    if self._inflight.get(job.key) is job:
                        del self._inflight[job.key]
                self._wake.set()
                if job.push:
                    self._ack(job)

    def _execute(self, job: _Job) -> None:
        if self._abandon.is_set():
            return
        if job.push and not job.owned:
            if self._stop.is_set():
                job.deliveries, requeue = [], job.deliveries
                self._nack(requeue)  # not started: let another consumer have it
                return
            if not self._take_over(job):
                return
        handler = self.handlers.get(job.task_key)
        if handler is None:
            self._write_fail(job, f"no handler for task key {job.task_key}", retryable=False)
            return
        ctx = Context(self, job)
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
            log.warning("task %s (%s) no longer ours (lease lost or abandoned): result dropped",
                        job.task_key, job.task_run_id)
            self._count("dropped")
            return
        if outcome[0] == "complete":
            self._write_complete(job, outcome[1], outcome[2])
        else:
            self._write_fail(job, outcome[1], retryable=outcome[2])

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

    def _give_up_writing(self, job: _Job) -> Callable[[], bool]:
        """While the database is away, keep retrying a write until the lease is surely gone."""
        deadline = time.monotonic() + self.lease
        return lambda: self._abandon.is_set() or time.monotonic() > deadline

    def _write_complete(self, job: _Job, output: Any, text: str) -> None:
        if self._completer is not None and not job.push:
            self._completer.put(job, output, text)
            return
        output = None if output is None else Jsonb(output, dumps=lambda _obj: text)
        if self._write(job, lambda api: api.complete(job.task_run_id, job.fencing_token, output), "complete"):
            self._count("completed")

    def _write_fail(self, job: _Job, error: str, *, retryable: bool) -> None:
        if self._write(job, lambda api: api.fail(job.task_run_id, job.fencing_token, error, retryable), "fail"):
            self._count("failed")
            log.info("task %s (%s) attempt %d failed%s: %s", job.task_key, job.task_run_id, job.attempt,
                     "" if retryable else " for good", error)

    def _write(self, job: _Job, api_call: Callable[[Client], Any], what: str) -> bool:
        try:
            self._ops.call(api_call, give_up=self._give_up_writing(job))
            return True
        except _NOT_OURS as exc:
            job.lease_lost.set()
            self._count("dropped")
            log.warning("%s of task %s (%s) refused, result dropped: %s", what, job.task_key, job.task_run_id, exc)
        except errors.DatabaseUnavailable as exc:
            self._count("dropped")
            log.error("%s of task %s (%s) not written, database unreachable: %s; its lease will expire",
                      what, job.task_key, job.task_run_id, exc)
        except errors.FlowForgeError as exc:
            self._count("dropped")
            log.error("%s of task %s (%s) failed: %s", what, job.task_key, job.task_run_id, exc)
        return False

    def _count(self, what: str) -> None:
        with self._stats_lock:
            self.stats[what] += 1

    # --- heartbeats -----------------------------------------------------------------------

    def _heartbeat_thread(self) -> None:
        interval = self.lease / 3
        while not self._abandon.is_set():
            self._abandon.wait(min(1.0, interval / 3))
            if self._abandon.is_set():
                return
            with self._lock:
                due = [j for j in self._inflight.values()
                       if j.owned and not j.lease_lost.is_set() and time.monotonic() - j.last_beat >= interval]
            for job in due:
                try:
                    self._heartbeat(job)
                except errors.FlowForgeError as exc:
                    log.warning("heartbeat of task %s (%s) failed: %s", job.task_key, job.task_run_id, exc)

    def _heartbeat(self, job: _Job, *, raise_if_lost: bool = False) -> datetime | None:
        if job.lease_lost.is_set() or self._abandon.is_set():
            if raise_if_lost:
                raise errors.LeaseLost(f"task {job.task_key} ({job.task_run_id}) is no longer held by this worker")
            return None
        beat_started = time.monotonic()
        lease = timedelta(seconds=self.lease)
        try:
            expires = self._ops.call(lambda api: api.heartbeat(job.task_run_id, job.fencing_token, lease),
                                     give_up=lambda: True)
        except _NOT_OURS as exc:
            job.lease_lost.set()
            log.warning("lease on task %s (%s) lost: %s", job.task_key, job.task_run_id, exc)
            if raise_if_lost:
                raise errors.LeaseLost(str(exc), sqlstate=exc.sqlstate) from None
            return None
        job.last_beat = beat_started
        job.lease_expires_at = expires
        return job.lease_expires_at

    # --- push: RabbitMQ ---------------------------------------------------------------------

    def _take_over(self, job: _Job) -> bool:
        """The first heartbeat makes a delivered task ours (or tells us it is stale)."""
        try:
            lease = timedelta(seconds=self.lease)
            self._ops.call(lambda api: api.heartbeat(job.task_run_id, job.fencing_token, lease),
                           give_up=lambda: self._stop.is_set())
        except _NOT_OURS as exc:
            log.info("stale or redelivered message for task %s (%s), dropped: %s",
                     job.task_key, job.task_run_id, exc)
            return False
        except errors.DatabaseUnavailable:
            job.deliveries, requeue = [], job.deliveries
            self._nack(requeue)
            return False
        job.last_beat = time.monotonic()
        with self._lock:
            existing = self._inflight.get(job.key)
            if existing is not None:
                existing.deliveries.extend(job.deliveries)  # redelivered while we run it: ack with it
                job.deliveries = []
                return False
            job.owned = True
            self._inflight[job.key] = job
        return True

    def _push_thread(self) -> None:
        import pika
        import pika.exceptions

        attempt = 0
        while not self._abandon.is_set():
            connection = None
            try:
                params = pika.URLParameters(self._amqp_url)
                params.heartbeat = 30
                params.client_properties = {"connection_name": f"flowforge-worker {self.name}"}
                connection = pika.BlockingConnection(params)
                channel = connection.channel()
                channel.basic_qos(prefetch_count=self.concurrency)
                for binding in self._push:
                    channel = self._declare(connection, channel, binding, pika, EXCHANGE_TYPE)
                tags = [channel.basic_consume(b.amqp_queue, self._on_message_callback(connection))
                        for b in self._push]
                attempt = 0
                log.info("consuming %s from %s", [b.amqp_queue for b in self._push], mask_url(self._amqp_url))
                while not self._stop.is_set():
                    connection.process_data_events(time_limit=0.5)
                for tag in tags:
                    channel.basic_cancel(tag)
                # Keep serving acks of in-flight push work until the drain is over.
                while not self._abandon.is_set():
                    connection.process_data_events(time_limit=0.2)
                connection.process_data_events(time_limit=0)
                connection.close()
                return
            except (pika.exceptions.AMQPError, OSError) as exc:
                if self._abandon.is_set():
                    return
                log.warning("AMQP consumer: %s; reconnecting", describe(exc))
                if connection is not None and connection.is_open:
                    try:
                        connection.close()
                    except Exception:  # noqa: BLE001
                        pass
                time.sleep(_backoff(attempt))
                attempt += 1

    @staticmethod
    def _declare(connection, channel, binding: _PushBinding, pika, exchange_type: str):
        """A durable queue flowforge.<queue> bound to the exchange (created as the daemon would)."""
        try:
            channel.exchange_declare(exchange=binding.exchange, passive=True)
        except pika.exceptions.ChannelClosedByBroker as exc:
            if exc.reply_code != 404:
                raise
            channel = connection.channel()
            channel.exchange_declare(exchange=binding.exchange, exchange_type=exchange_type, durable=True)
        channel.queue_declare(queue=binding.amqp_queue, durable=True)
        channel.queue_bind(queue=binding.amqp_queue, exchange=binding.exchange, routing_key=binding.routing_key)
        return channel

    def _on_message_callback(self, connection):
        def on_message(channel, method, _properties, body):
            try:
                payload = json.loads(body)
                job = _Job(uuid.UUID(payload["task_run_id"]), uuid.UUID(payload["workflow_run_id"]),
                           payload["task_key"], int(payload["attempt"]), int(payload["fencing_token"]),
                           payload.get("input"), push=True, owned=False)
            except (ValueError, KeyError, TypeError) as exc:
                log.error("malformed push message dropped: %s", exc)
                channel.basic_ack(method.delivery_tag)
                return
            job.deliveries.append((connection, channel, method.delivery_tag))
            self._submit(job)
        return on_message

    def _ack(self, job: _Job) -> None:
        for connection, channel, tag in job.deliveries:
            self._threadsafe(connection, channel, "basic_ack", tag)
        job.deliveries = []

    def _nack(self, deliveries: list) -> None:
        for connection, channel, tag in deliveries:
            self._threadsafe(connection, channel, "basic_nack", tag, requeue=True)

    @staticmethod
    def _threadsafe(connection, channel, method: str, tag: int, **kwargs) -> None:
        """Ack/nack from a pool thread: pika runs it on the connection's own thread."""
        def call():
            try:
                if channel.is_open:
                    getattr(channel, method)(tag, **kwargs)
            except Exception as exc:  # noqa: BLE001 - a closed channel redelivers; the token makes that safe
                log.warning("AMQP %s not delivered: %s", method, exc)
        try:
            connection.add_callback_threadsafe(call)
        except Exception as exc:  # noqa: BLE001 - connection already closed: the broker redelivers
            log.warning("AMQP %s not delivered: %s", method, exc)


async def _await(awaitable):
    return await awaitable
