"""``flowforge daemon``: calls ``tick()`` and, with a broker, drains the outbox to RabbitMQ.

The daemon is deliberately thin.  Every rule — which task is dispatched, when
a lease is reaped, what a retry costs — is SQL; the daemon only moves bytes
and keeps time:

* a dedicated LISTEN connection (autocommit) on ``flowforge_outbox``.  On
  every (re)connect it LISTENs first and then drains everything pending, so a
  notification lost while disconnected loses nothing; a poll every
  ``poll_interval`` covers anything else.  After each LISTEN it notifies
  itself from the work session (``db.listen``): if that never arrives — a
  transaction pooler — it logs ``listen_not_delivering`` and polls instead,
  every tick; with ``FLOWFORGE_POOLER=transaction`` it never LISTENs at all
  (``db.pooler``);
* a work connection whose session bounds every statement, lock wait and open
  transaction;
* a drain loop, two short transactions per batch and none across broker
  I/O: ``take_outbox(batch, lease)`` and commit (the rows are held by a
  committed lease, not a lock), publish each row with publisher confirms,
  then ``mark_published(<the confirmed ids>)`` + ``defer_outbox(<the refused
  ids>)`` and commit; again while a full batch came back and all of it was
  confirmed;
* ``SELECT flowforge.tick(engine_id => '<host>:<pid>')`` every
  ``tick_interval`` (reapers, due retries, the agent sweep, machine timers),
  even while the broker is down — and with no broker configured at all: a
  pull-only deployment runs the daemon for its periodic duties alone, and
  push work then waits in the outbox (``no_broker`` says so).  The engine id
  makes the daemon an engine instance: the organizations' duties are shared
  among live daemons by per-organization leases in the database, so N
  daemons split M organizations with no leader; the ``serving`` log line
  says which it holds whenever that changes (``timer``);
* the feeders every ``feed_interval``, right after a tick: the filesystem
  and gitpoll triggers of the organizations this daemon serves, each new
  file or commit fired once through ``feeder_fire``, their progress kept in
  SQL (``feeders``);
* bounded exponential backoff (at most ``MAX_BACKOFF`` seconds) for every
  reconnect, logged.

It keeps no state a restart could lose: a row is published at least once
and marked only after the broker confirmed it, so a crash between confirm
and mark re-sends that batch once its lease runs out (consumers are
protected by the fencing token) and nothing else.  Any number of daemons may
run against one database.

Logs go to stderr, one logfmt line per event (``event=published count=12
...``); docs/operations.md lists them.

This package's ``Daemon`` is the loop and its connection state; the rest is
one module each: ``config`` (flags, environment, defaults), ``schema`` (the
schema check), ``session`` (the bounded work session), ``outbox`` (one drain
batch), ``timer`` (tick cadence and counts), ``feeders`` (filesystem and gitpoll triggers), ``publisher`` (AMQP with
confirms), ``no_broker`` (push work waiting for a broker) and ``log``
(logfmt lines, backoff).
"""

from __future__ import annotations

import os
import signal
import time
from collections import Counter

import psycopg
from psycopg.conninfo import make_conninfo

from .. import db, errors, migrate
from ..amqp import mask_url
from ..client import Client
from ..db import listen, pooler
from .config import (
    BATCH_SIZE_ENV,
    DEFAULT_BATCH_SIZE,
    DEFAULT_OUTBOX_LEASE,
    DEFAULT_POLL_INTERVAL,
    DEFAULT_FEED_INTERVAL,
    DEFAULT_TICK_INTERVAL,
    ENGINE_ID_ENV,
    FEED_INTERVAL_ENV,
    OUTBOX_LEASE_ENV,
    POLL_INTERVAL_ENV,
    TICK_INTERVAL_ENV,
    DaemonConfig,
    resolve_config,
)
from .feeders import Feeders
from .log import BASE_BACKOFF, MAX_BACKOFF, Backoff, EventLog
from .no_broker import PushWaiting
from .outbox import PUBLISH_DEADLINE, OutboxDrain
from .publisher import Publisher
from .schema import schema_problem
from .session import IDLE_IN_TRANSACTION_TIMEOUT, LOCK_TIMEOUT, STATEMENT_TIMEOUT, WorkSession
from .timer import Timer

__all__ = [
    "BASE_BACKOFF", "BATCH_SIZE_ENV", "DEFAULT_BATCH_SIZE", "ENGINE_ID_ENV", "DEFAULT_OUTBOX_LEASE", "DEFAULT_POLL_INTERVAL",
    "DEFAULT_FEED_INTERVAL", "DEFAULT_TICK_INTERVAL", "EXIT_OK", "FEED_INTERVAL_ENV", "EXIT_SCHEMA", "IDLE_IN_TRANSACTION_TIMEOUT", "LOCK_TIMEOUT", "MAX_BACKOFF",
    "OUTBOX_LEASE_ENV", "POLL_INTERVAL_ENV",
    "PUBLISH_DEADLINE", "STATEMENT_TIMEOUT", "TICK_INTERVAL_ENV", "Backoff", "Daemon", "DaemonConfig", "EventLog",
    "resolve_config", "schema_problem",
]

WAIT_SLICE = 0.25    # longest uninterrupted wait, so a signal is acted on promptly
APPLICATION_NAME = "flowforge-daemon"

EXIT_OK = 0
EXIT_SCHEMA = 2


class Daemon:
    def __init__(self, config: DaemonConfig, *, log: EventLog | None = None):
        self.config = config
        self.log = log or EventLog()
        # No broker: periodic duties only; push work is reported as waiting, never taken.
        self.publisher = Publisher(config.amqp_url) if config.amqp_url else None
        self._push_waiting = PushWaiting(self.log)
        self._listen: psycopg.Connection | None = None
        self._listening = not pooler.configured()  # False: poll only (a transaction pooler)
        self._probe_pending = False                 # a new LISTEN has yet to prove that it delivers
        self._work: WorkSession | None = None
        self._listen_backoff = Backoff()
        self._work_backoff = Backoff()
        self._amqp_backoff = Backoff()
        self._stopping = False
        self._stop_signal: str | None = None
        self._need_drain = True
        self._next_poll = 0.0
        self.totals = Counter()
        self._outbox = (OutboxDrain(self.publisher, config.batch_size, config.outbox_lease, self.log, self.totals,
                                    self._amqp_backoff)
                        if self.publisher is not None else None)
        self._timer = Timer(config.tick_interval, self.log, self.totals, engine_id=config.engine_id)
        self._feeders = Feeders(config.feed_interval, self.log, self.totals, engine_id=config.engine_id)

    # --- lifecycle ------------------------------------------------------------

    def request_stop(self, signum: int | None = None, _frame=None) -> None:
        """Signal handler: finish the batch in flight, then leave the loop."""
        if not self._stopping:
            self._stopping = True
            self._stop_signal = signal.Signals(signum).name if signum else "request"

    def install_signal_handlers(self) -> None:
        signal.signal(signal.SIGTERM, self.request_stop)
        signal.signal(signal.SIGINT, self.request_stop)

    def run(self) -> int:
        """Run until SIGTERM/SIGINT. Raises SchemaVersionMismatch before doing anything else."""
        self._connect_work_first()  # refuses to start against an unknown schema
        if self._stopping:
            self._shutdown()
            return EXIT_OK
        self.log("started", pid=os.getpid(), engine_id=self.config.engine_id, dsn=db.mask_dsn(self.config.dsn),
                 amqp=mask_url(self.config.amqp_url) if self.config.amqp_url else "none",
                 schema=migrate.known_schema_version(), batch=self.config.batch_size,
                 tick_interval=self.config.tick_interval, poll_interval=self.config.poll_interval,
                 feed_interval=self.config.feed_interval,
                 pooler=pooler.TRANSACTION if pooler.configured() else None)
        while not self._stopping:
            code = self._step()
            if code is not None:
                self._shutdown()
                return code
        self._shutdown()
        return EXIT_OK

    def _shutdown(self) -> None:
        if self._work is not None:
            self._leave_duties()
            self._work.close()
        self._close_listen()
        self._work = None
        if self.publisher is not None:
            self.publisher.close()
        self.log("stopped", signal=self._stop_signal, published=self.totals["published"],
                 ticks=self.totals["ticks"], reaped=self.totals["reaped"], dispatched=self.totals["dispatched"],
                 feeder_fired=self.totals["feeder_fired"])

    def _leave_duties(self) -> None:
        """Give the organizations' duties back now, so the live daemons take them at their next tick."""
        if self._work.conn.closed or self._work.conn.broken:
            return  # the leases lapse on their own, one duty lease from now
        try:
            self._work.conn.rollback()  # nothing is in flight at a stop; a failed statement's transaction is gone
            given_back = self._work.api.leave_duties(self.config.engine_id)
            self._work.commit()
        except (errors.FlowForgeError, psycopg.Error) as exc:  # the leases lapse on their own: stopping goes on
            self.log("leave_duties_failed", error=str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        else:
            self.log("left_duties", engine_id=self.config.engine_id, organizations=given_back)

    def _step(self) -> int | None:
        now = time.monotonic()
        if self._listening and self._listen is None and self._listen_backoff.ready(now):
            self._connect_listen()
        if self._work is None and self._work_backoff.ready(now):
            code = self._connect_work()
            if code is not None:
                return code
        if self._probe_pending and self._listen is not None and self._work is not None and not self._stopping:
            self._probe_listen()
        if self.publisher is not None:
            if self.publisher.is_open:
                self._amqp_keepalive()
            if not self.publisher.is_open and self._amqp_backoff.ready(now):
                self._connect_amqp()
        now = time.monotonic()
        if now >= self._next_poll:
            self._need_drain = True
            self._next_poll = now + self._poll_interval
        if self._need_drain and self._work is not None and not self._stopping:
            if self._broker_open:
                self._drain()
            elif self.publisher is None:
                self._need_drain = False
                self._push_waiting.check(self._work, time.monotonic())
        if self._timer.due(time.monotonic()) and self._work is not None and not self._stopping:
            if self._timer.tick(self._work):
                self._outbox_written()  # its NOTIFY will come too; no need to wait for it
        # After the tick: feeder_triggers(engine_id) lists the organizations the tick's leases gave us.
        if self._feeders.due(time.monotonic()) and self._work is not None and not self._stopping:
            if self._feeders.poll(self._work, stopping=lambda: self._stopping):
                self._outbox_written()
        if not self._stopping and not self._need_drain_now():
            self._wait()
        return None

    @property
    def _poll_interval(self) -> float:
        """Without LISTEN nothing wakes the drain early: poll at least every tick."""
        if self._listening:
            return self.config.poll_interval
        return min(self.config.poll_interval, self.config.tick_interval)

    def _need_drain_now(self) -> bool:
        return self._need_drain and self._work is not None and self._broker_open

    @property
    def _broker_open(self) -> bool:
        return self.publisher is not None and self.publisher.is_open

    def _outbox_written(self) -> None:
        """Outbox rows were written: drain them, or (no broker) note that push work waits."""
        self._need_drain = True
        self._push_waiting.seen()

    # --- connections ------------------------------------------------------------

    def _dsn(self, role: str) -> str:
        extra = {"application_name": f"{APPLICATION_NAME}-{role}"}
        parts = db.parse_dsn(self.config.dsn)
        # A dead server or network must be noticed on an idle connection too.
        for key, value in (("keepalives", "1"), ("keepalives_idle", "10"),
                           ("keepalives_interval", "5"), ("keepalives_count", "3")):
            if key not in parts:
                extra[key] = value
        return make_conninfo(self.config.dsn, **extra)

    def _connect_work_first(self) -> None:
        """Connect the work session, retrying with backoff; check the schema once connected."""
        while not self._stopping:
            now = time.monotonic()
            if self._work_backoff.ready(now):
                self._connect_work(first=True)
                if self._work is not None:
                    return
            self._sleep_until(self._work_backoff.next_at)

    def _connect_work(self, *, first: bool = False) -> int | None:
        try:
            conn = db.connect(self._dsn("work"))
        except errors.FlowForgeError as exc:
            self._pg_failed("work", self._work_backoff, exc)
            return None
        work = WorkSession(conn, self.log, on_lost=lambda exc: self._pg_lost("work", exc))
        try:
            problem = schema_problem(conn)
            if problem is None and not pooler.transaction_pooler():
                work.bound()  # session settings would leak onto a pooler's shared server connections
            work.commit()
        except errors.FlowForgeError as exc:
            work.close()
            self._pg_failed("work", self._work_backoff, exc)
            return None
        if problem is not None:
            work.close()
            if first:
                raise errors.SchemaVersionMismatch(problem)
            self.log("schema_mismatch", error=problem)
            self._stop_signal = "schema_mismatch"
            return EXIT_SCHEMA
        self._work = work
        self._need_drain = True
        retries = self._work_backoff.succeeded()
        if retries:
            self.log("pg_connected", role="work", after_attempts=retries)
        return None

    def _connect_listen(self) -> None:
        try:
            conn = db.connect(self._dsn("listen"), autocommit=True)
            api = Client(conn)
            api.listen_outbox()  # LISTEN first, then drain: nothing falls in between
            api.listen_probe()
        except errors.FlowForgeError as exc:
            self._pg_failed("listen", self._listen_backoff, exc)
            return
        self._listen = conn
        self._probe_pending = True
        self._need_drain = True
        retries = self._listen_backoff.succeeded()
        if retries:
            self.log("pg_connected", role="listen", after_attempts=retries)

    def _probe_listen(self) -> None:
        """Notify ourselves from the work session; if the listen session never hears it, poll from now on."""
        self._probe_pending = False
        token = listen.probe_token()
        try:
            self._work.api.notify_probe(token)
            self._work.commit()
        except errors.FlowForgeError as exc:
            self._work.failed("notify_probe", exc)
            self._probe_pending = True  # again on a later step
            return
        try:
            delivered = listen.await_probe(self._listen, token, on_other=lambda _note: self._outbox_written(),
                                           stop=lambda: self._stopping)
        except errors.FlowForgeError as exc:
            self._pg_lost("listen", exc)
            return
        if delivered or self._stopping:
            return
        if pooler.detected("LISTEN did not deliver"):
            self.log("pooler_detected", reason="LISTEN did not deliver",
                     hint=f"set {pooler.POOLER_ENV}={pooler.TRANSACTION}")
        self._listening = False
        self._close_listen()
        self.log("listen_not_delivering", waited=listen.PROBE_TIMEOUT, poll_interval=self._poll_interval,
                 hint=f"behind a transaction pooler? set {pooler.POOLER_ENV}={pooler.TRANSACTION}")

    def _close_listen(self) -> None:
        if self._listen is not None:
            try:
                self._listen.close()
            except Exception:  # noqa: BLE001
                pass
        self._listen = None

    def _pg_failed(self, role: str, backoff: Backoff, exc: BaseException) -> None:
        delay = backoff.failed(time.monotonic())
        self.log("pg_reconnect", role=role, attempt=backoff.failures, retry_in=delay, error=str(exc))

    def _pg_lost(self, role: str, exc: BaseException) -> None:
        """A connection broke (server gone, backend terminated, session timeout): drop it, reconnect later."""
        if role == "work":
            if self._work is not None:
                self._work.close()
            self._work = None
        else:
            self._close_listen()
        self.log("pg_disconnected", role=role, error=db.first_line(exc))

    def _connect_amqp(self) -> None:
        try:
            self.publisher.connect()
        except errors.FlowForgeError as exc:
            delay = self._amqp_backoff.failed(time.monotonic())
            self.log("amqp_error", op="connect", attempt=self._amqp_backoff.failures, retry_in=delay, error=str(exc))
            return
        retries = self._amqp_backoff.succeeded()
        self.log("amqp_connected", url=mask_url(self.config.amqp_url), after_attempts=retries or None)
        self._need_drain = True

    def _amqp_keepalive(self) -> None:
        """Let pika answer heartbeats while idle, and notice a connection the broker dropped."""
        error = self.publisher.keepalive()
        if error is not None:
            delay = self._amqp_backoff.failed(time.monotonic())
            self.log("amqp_error", op="idle", attempt=self._amqp_backoff.failures, retry_in=delay, error=error)

    # --- work -------------------------------------------------------------------

    def _drain(self) -> None:
        """Publish batches until the outbox is empty, a batch is short, or something failed.

        Whatever stops it, the next drain waits for a notification, a
        reconnect or the poll: a failing statement or an unroutable head of
        the outbox is retried at that pace, never in a tight loop.
        """
        self._need_drain = False
        while self._work is not None and self._broker_open:
            more = self._outbox.batch(self._work)
            if not more or self._stopping:
                return

    # --- waiting ------------------------------------------------------------------

    def _wait(self) -> None:
        """Sleep until the next tick or poll, a retry is due, a notification arrives, or a signal."""
        deadline = min(self._timer.next_at, self._feeders.next_at, self._next_poll)
        for backoff, down in ((self._listen_backoff, self._listening and self._listen is None),
                              (self._work_backoff, self._work is None),
                              (self._amqp_backoff, self.publisher is not None and not self.publisher.is_open)):
            if down:
                deadline = min(deadline, backoff.next_at)
        if self._listen is None:
            self._sleep_until(deadline)
            return
        while not self._stopping:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            if self._broker_open:
                self._amqp_keepalive()
            try:
                with db.mapped_errors():
                    for _ in self._listen.notifies(timeout=min(WAIT_SLICE, remaining), stop_after=1):
                        self._outbox_written()
            except errors.FlowForgeError as exc:
                self._pg_lost("listen", exc)
                return
            if self._need_drain:
                return

    def _sleep_until(self, deadline: float) -> None:
        while not self._stopping:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            time.sleep(min(WAIT_SLICE, remaining))
