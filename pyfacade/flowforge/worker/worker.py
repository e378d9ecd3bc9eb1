"""``Worker``: the SDK's one class — configuration, lifecycle and signals; the parts do the work.

``run()`` (or ``start()``) resolves the database, splits the queues into pull
and push (``queues.plan``), and composes the parts: a ``HandlerPool`` of
``concurrency`` threads, ``Heartbeats``, ``Results`` (with the batch
``Completer`` for pull tasks), ``PullQueues`` (LISTEN + claim loop, on this
thread) and ``PushConsumer``.  ``stop()`` ends claiming and consuming; the
drain then waits up to ``grace_period`` for in-flight handlers and abandons
the rest.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
import uuid
from typing import Callable

from psycopg.conninfo import make_conninfo

from .. import config, db, errors
from ..catalog import Catalog
from .connection import SharedConnection
from .context import Handler
from .heartbeats import Heartbeats
from .jobs import InFlight, Stats
from .pool import HandlerPool
from .pull import MAX_TASK_NAMES, PullQueues
from .push import PushConsumer
from .queues import PushBinding, plan
from .registry import Registry
from .results import Results

log = logging.getLogger("flowforge.worker")


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

    ``stats`` counts how tasks ended (``completed``, ``failed``, ``dropped``);
    ``in_flight`` is the number of tasks taken and not yet finished.
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
        self._registry = Registry()
        self.handlers: dict[str, Handler] = self._registry.handlers
        self._in_flight = InFlight()
        self._stats = Stats()
        self.stats = self._stats.counts

        self._stop = threading.Event()      # stop claiming / consuming
        self._abandon = threading.Event()   # grace period over: drop what is still running
        self._done = threading.Event()      # run() returned
        self._wake = threading.Event()      # something to claim, or capacity freed
        self._thread: threading.Thread | None = None
        self._heartbeats: Heartbeats | None = None  # built by run(), with the lease then in force

    # --- registration ---------------------------------------------------------------

    def task(self, key: str) -> Callable[[Handler], Handler]:
        """Decorator: ``@worker.task("resize")`` runs the function for task key ``resize``."""
        return self._registry.task(key)

    def register(self, key: str, fn: Handler) -> None:
        self._registry.register(key, fn)

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
        return self._in_flight.count

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
        ops = results = pool = None
        try:
            # Every session is named after the worker, as the daemon names its own.
            dsn = make_conninfo(db.resolve_dsn(config.resolve(self.dsn)),
                                application_name=f"flowforge-worker {self.name}")
            ops = SharedConnection(dsn, "worker")
            amqp_url = self.amqp_url or config.resolve(self.dsn).amqp_url
            names = sorted(set(self.queues) | set(self.push_queues))
            # The first connection waits for the database like every later one (until stop).
            settings = ops.call(lambda api: api.queue_settings(names), give_up=self._stop.is_set)
            pull, push = plan(self.queues, self.push_queues, settings, amqp_url)
            if pull and len(self.handlers) > MAX_TASK_NAMES:
                raise errors.InvalidArgument(f"a pull worker can claim for at most {MAX_TASK_NAMES} task keys, "
                                             f"this one has {len(self.handlers)} handlers")
            self._heartbeats = Heartbeats(ops, self._in_flight, self.lease, self._abandon)
            results = Results(ops, self._stats, self.lease, self._abandon, dsn=dsn if pull else None,
                              batch_interval=self.complete_batch_interval)
            pool = HandlerPool(self._registry, results, self._heartbeats, self._in_flight, self._stats, self.name,
                               wake=self._wake, abandon=self._abandon)
            pool.start(self.concurrency)
            threading.Thread(target=self._heartbeat_thread, name="flowforge-heartbeat", daemon=True).start()
            pulling = self._pull_queues(dsn, pull, pool.submit) if pull else None
            if pulling is not None:
                threading.Thread(target=pulling.listen, name="flowforge-listen", daemon=True).start()
            if push:
                database = ops.call(lambda api: Catalog(api.conn).current_database(), give_up=self._stop.is_set)
                consumer = self._push_consumer(amqp_url, push, database, ops, pool.submit)
                threading.Thread(target=consumer.run, name="flowforge-push", daemon=True).start()
            log.info("worker %s: pull %s, push %s, concurrency %d", self.name, pull, [b.queue for b in push],
                     self.concurrency)
            if pulling is not None:
                pulling.claim_loop()
            else:
                self._stop.wait()
            self._drain()
        except errors.DatabaseUnavailable:
            if not self._stop.is_set():
                raise
            log.info("worker %s stopped before the database could be reached", self.name)
        finally:
            self._stop.set()
            self._abandon.set()
            if results is not None:
                results.close()  # batched results already in hand are still written
            if ops is not None:
                ops.close()
            if pool is not None:
                pool.close()
            self._done.set()

    def _pull_queues(self, dsn: str, queues: list[str], submit) -> PullQueues:
        return PullQueues(dsn, queues, self.name, lease=self.lease, concurrency=self.concurrency,
                          poll_interval=self.poll_interval, in_flight=self._in_flight, submit=submit,
                          stop=self._stop, wake=self._wake, task_names=lambda: list(self.handlers))

    def _push_consumer(self, amqp_url: str, bindings: list[PushBinding], database: str, ops: SharedConnection,
                       submit) -> PushConsumer:
        return PushConsumer(amqp_url, bindings, self.name, database=database, concurrency=self.concurrency,
                            lease=self.lease, ops=ops, in_flight=self._in_flight, submit=submit, stop=self._stop,
                            abandon=self._abandon)

    def _heartbeat_thread(self) -> None:
        """The heartbeat thread's body (a method, so a test can hold heartbeats back)."""
        self._heartbeats.loop()

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
