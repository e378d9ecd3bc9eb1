"""``Worker``: the SDK's one class — configuration, lifecycle and signals; the parts do the work.

``run()`` (or ``start()``) resolves the database, splits the queues into pull
and push (``queues.plan``), registers the agent when asked (``agent``), and
composes the parts: a ``HandlerPool`` of ``concurrency`` threads,
``Heartbeats``, ``Results`` (with the batch ``Completer`` for pull tasks),
``PullQueues`` (LISTEN + the claim loop over DAG tasks and work items, on
this thread), ``PushConsumer`` and the ``Agent`` heartbeat thread.
``stop()`` ends claiming and consuming; the drain then waits up to
``grace_period`` for in-flight handlers and abandons the rest; a registered
agent then sends its last heartbeat and is marked inactive.
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
from .agent import Agent, agent_info as build_agent_info
from .connection import SharedConnection
from .context import Handler
from .heartbeats import Heartbeats
from .jobs import InFlight, Stats
from .pool import HandlerPool
from .pull import MAX_TASK_NAMES, PullQueues, claim_window
from .push import PushConsumer
from .queues import PushBinding, plan
from .registry import Registry
from .results import Results

log = logging.getLogger("flowforge.worker")


class Worker:
    """Runs registered handlers for the units of work of some queues: DAG tasks and work items alike.

    One ``@worker.task(name)`` registry serves both queues: a DAG task of
    that key (``claim``) and a work item of that task name (``claim_work``) —
    a graph node's visit, a machine's action, a fan-out child.  A handler
    receives ``(ctx, input)`` either way (docs/worker.md says what ``input``
    holds for each).

    ``queues``: pull queues to claim from (a queue configured as push is
    consumed from RabbitMQ instead when an AMQP URL is known).
    ``push_queues``: queues to consume from RabbitMQ; they must be configured
    with an exchange.  ``dsn``: None means ``FLOWFORGE_DSN``, else the
    embedded default.  ``amqp_url``: None means ``FLOWFORGE_AMQP_URL``.
    ``lease``, ``poll_interval`` and ``grace_period`` are in seconds.
    ``complete_batch_interval``: results of pull tasks are written together by
    ``flowforge.complete_many`` at most this many seconds after the handler
    returned (default 2 ms); 0 writes each with ``flowforge.complete`` at once.
    ``prefetch``: how many claimed units may wait in the local queue on top of
    the ``concurrency`` running (default: as many as ``concurrency``; 0 claims
    only for idle handlers).  A claim is made once half of that is free, so
    claims come in batches and handlers do not wait for a round trip between
    units.  Prefetched units are held (leased and heartbeaten) like running
    ones; at shutdown they run within the grace period like the rest.

    ``agent``: register the process as the agent of that name (its claim
    name too): it heartbeats metrics every ``heartbeat_interval`` seconds,
    obeys draining and is marked inactive at shutdown; ``register=True`` does
    the same under ``name``.  ``labels`` (a dict) is what nodes'
    ``worker_params`` selectors are matched against; ``agent_info`` may set
    ``http_address``, ``grpc_address``, ``infra_address``, ``version``,
    ``binary_path`` and ``type`` (remote | local).

    ``stats`` counts how units ended (``completed``, ``failed``, ``dropped``);
    ``in_flight`` is the number of units taken and not yet finished;
    ``agent_status`` what the database last said of the agent (None when not
    registered).
    """

    def __init__(self, queues: list[str] | tuple[str, ...] = ("default",), concurrency: int = 4, *,
                 dsn: str | None = None, name: str | None = None, lease: float = 30.0,
                 poll_interval: float = 1.0, grace_period: float = 30.0,
                 push_queues: list[str] | tuple[str, ...] = (), amqp_url: str | None = None,
                 complete_batch_interval: float = 0.002, agent: str | None = None, register: bool = False,
                 labels: dict | None = None, agent_info: dict | None = None, heartbeat_interval: float = 10.0,
                 prefetch: int | None = None):
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
        if prefetch is not None and (isinstance(prefetch, bool) or not isinstance(prefetch, int)
                                     or not 0 <= prefetch <= 1000):
            raise ValueError("prefetch must be a whole number between 0 and 1000")
        if not 0 <= complete_batch_interval <= 1:
            raise ValueError("complete_batch_interval must be between 0 and 1 second")
        if agent is not None and (not isinstance(agent, str) or not 1 <= len(agent) <= 200):
            raise ValueError("agent is a name of 1 to 200 characters")
        if agent is not None and name is not None and name != agent:
            raise ValueError("an agent claims under its own name: pass agent= or name=, not two different names")
        if not 1 <= heartbeat_interval <= 3600:
            raise ValueError("heartbeat_interval must be between 1 second and 1 hour")
        if (labels or agent_info) and agent is None and not register:
            raise ValueError("labels and agent_info are an agent's: pass agent=NAME (or register=True)")
        build_agent_info(labels=labels, info=agent_info, heartbeat_interval=heartbeat_interval)  # errors now, not at run
        self.queues = list(queues)
        self.push_queues = list(push_queues)
        self.concurrency = concurrency
        self.prefetch = concurrency if prefetch is None else prefetch
        self.prefetch = min(self.prefetch, 1000)
        self.dsn = dsn
        self.amqp_url = amqp_url
        self.name = agent or name or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.register_agent = register or agent is not None  # read by run(): `flowforge worker --agent` sets it
        self.labels = labels
        self.agent_info = agent_info
        self.heartbeat_interval = float(heartbeat_interval)
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
        self._agent: Agent | None = None            # built by run() when registering

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

    @property
    def agent_status(self) -> str | None:
        """active, draining or inactive as the database last said; None when the worker is not an agent."""
        return self._agent.status if self._agent is not None else None

    @property
    def agent_metrics(self) -> dict | None:
        """The metrics of the agent's latest heartbeat (None before the first, or when not an agent)."""
        return self._agent.last_metrics if self._agent is not None else None

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
        ops = results = pool = agent = None
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
            # Work items are never pushed: they are claimed from every queue the worker serves.
            item_queues = names
            if len(self.handlers) > MAX_TASK_NAMES:
                if pull:
                    raise errors.InvalidArgument(f"a pull worker can claim for at most {MAX_TASK_NAMES} task keys, "
                                                 f"this one has {len(self.handlers)} handlers")
                log.warning("worker %s has %d handlers, more than one claim names (%d): it claims no work items",
                            self.name, len(self.handlers), MAX_TASK_NAMES)
                item_queues = []
            if self.register_agent:
                info = build_agent_info(labels=self.labels, info=self.agent_info,
                                        heartbeat_interval=self.heartbeat_interval)
                agent = Agent(ops, self.name, info,
                              interval=self.heartbeat_interval, in_flight=self._in_flight, stats=self._stats,
                              concurrency=self.concurrency, wake=self._wake, stop=self._stop)
                agent.register(give_up=self._stop.is_set)  # before the first claim: labels and status count
                self._agent = agent
                threading.Thread(target=agent.loop, name="flowforge-agent", daemon=True).start()
            self._heartbeats = Heartbeats(ops, self._in_flight, self.lease, self._abandon)
            results = Results(ops, self._stats, self.lease, self._abandon, dsn=dsn if pull else None,
                              batch_interval=self.complete_batch_interval)
            capacity, min_claim = claim_window(self.concurrency, self.prefetch if pull or item_queues else 0)
            pool = HandlerPool(self._registry, results, self._heartbeats, self._in_flight, self._stats, self.name,
                               wake=self._wake, abandon=self._abandon,
                               wants_claim=lambda: (self._stop.is_set()
                                                    or capacity - self._in_flight.count >= min_claim))
            pool.start(self.concurrency)
            threading.Thread(target=self._heartbeat_thread, name="flowforge-heartbeat", daemon=True).start()
            pulling = (self._pull_queues(dsn, pull, pool.submit, item_queues, agent)
                       if pull or item_queues else None)
            if pulling is not None:
                threading.Thread(target=pulling.listen, name="flowforge-listen", daemon=True).start()
            if push:
                database = ops.call(lambda api: Catalog(api.conn).current_database(), give_up=self._stop.is_set)
                consumer = self._push_consumer(amqp_url, push, database, ops, pool.submit)
                threading.Thread(target=consumer.run, name="flowforge-push", daemon=True).start()
            log.info("worker %s: pull %s, push %s, work items from %s, concurrency %d%s", self.name, pull,
                     [b.queue for b in push], item_queues, self.concurrency, ", agent" if agent else "")
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
            if self._agent is not None:
                self._agent.finish()  # the last heartbeat says what it holds now; then inactive
            if ops is not None:
                ops.close()
            if pool is not None:
                pool.close()
            self._done.set()

    def _pull_queues(self, dsn: str, queues: list[str], submit, item_queues: list[str],
                     agent: Agent | None) -> PullQueues:
        return PullQueues(dsn, queues, self.name, lease=self.lease, concurrency=self.concurrency,
                          poll_interval=self.poll_interval, in_flight=self._in_flight, submit=submit,
                          stop=self._stop, wake=self._wake, task_names=lambda: list(self.handlers),
                          item_queues=item_queues, may_claim=agent.may_claim if agent is not None else lambda: True,
                          prefetch=self.prefetch)

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
