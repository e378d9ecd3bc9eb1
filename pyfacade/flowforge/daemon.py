"""``flowforge daemon``: drains the outbox to RabbitMQ and calls ``tick()``.

The daemon is deliberately thin.  Every rule — which task is dispatched, when
a lease is reaped, what a retry costs — is SQL; the daemon only moves bytes
and keeps time:

* a dedicated LISTEN connection (autocommit) on ``flowforge_outbox``.  On
  every (re)connect it LISTENs first and then drains everything pending, so a
  notification lost while disconnected loses nothing; a poll every
  ``poll_interval`` covers anything else;
* a work connection whose session bounds every statement, lock wait and open
  transaction, so a hung broker cannot hold outbox row locks for long;
* a drain loop, one transaction per batch: ``take_outbox(batch)`` (oldest
  first, ``FOR UPDATE SKIP LOCKED``), publish each row with publisher
  confirms, ``mark_published(<the confirmed ids>)``, commit; again while a
  full batch came back and all of it was confirmed;
* ``SELECT flowforge.tick()`` every ``tick_interval`` (reaper, due retries),
  even while the broker is down;
* bounded exponential backoff (at most ``MAX_BACKOFF`` seconds) for every
  reconnect, logged.

It keeps no state a restart could lose: a row is published at least once
and marked only after the broker confirmed it, so a crash between confirm
and mark re-sends that batch (consumers are protected by the fencing token)
and nothing else.  Any number of daemons may run against one database.

Logs go to stderr, one logfmt line per event (``event=published count=12
...``); docs/operations.md lists them.
"""

from __future__ import annotations

import datetime as _dt
import os
import random
import signal
import sys
import time
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Mapping, TextIO

import psycopg
from psycopg.conninfo import make_conninfo

from . import db, errors, migrate, publisher as amqp
from .catalog import Catalog
from .client import Client

# Environment variables (flags override them; FLOWFORGE_DSN and FLOWFORGE_AMQP_URL live in config).
TICK_INTERVAL_ENV = "FLOWFORGE_TICK_INTERVAL"
BATCH_SIZE_ENV = "FLOWFORGE_BATCH_SIZE"
POLL_INTERVAL_ENV = "FLOWFORGE_POLL_INTERVAL"

DEFAULT_TICK_INTERVAL = 1.0
DEFAULT_BATCH_SIZE = 100
DEFAULT_POLL_INTERVAL = 5.0

MAX_BACKOFF = 5.0    # seconds between reconnect attempts, at most
BASE_BACKOFF = 0.2   # first retry delay; doubles per failed attempt
WAIT_SLICE = 0.25    # longest uninterrupted wait, so a signal is acted on promptly

# The work session's bounds.  The publish deadline is well inside the idle
# transaction timeout: a batch that cannot finish in time stops publishing,
# marks what was confirmed, and commits.
STATEMENT_TIMEOUT = "30s"
LOCK_TIMEOUT = "10s"
IDLE_IN_TRANSACTION_TIMEOUT = "30s"
PUBLISH_DEADLINE = 10.0  # seconds of publishing per batch, at most

APPLICATION_NAME = "flowforge-daemon"

EXIT_OK = 0
EXIT_SCHEMA = 2


@dataclass(frozen=True)
class DaemonConfig:
    dsn: str
    amqp_url: str
    tick_interval: float = DEFAULT_TICK_INTERVAL
    batch_size: int = DEFAULT_BATCH_SIZE
    poll_interval: float = DEFAULT_POLL_INTERVAL


def resolve_config(dsn: str, amqp_url: str | None, *, tick_interval: float | None = None,
                   batch_size: int | None = None, poll_interval: float | None = None,
                   environ: Mapping[str, str] | None = None) -> DaemonConfig:
    """Flags (non-None arguments) over environment over defaults; FF003 when a value is out of range."""
    env = os.environ if environ is None else environ
    if not amqp_url:
        raise errors.InvalidArgument("the daemon needs a broker: pass --amqp-url or set FLOWFORGE_AMQP_URL")
    tick = _setting(tick_interval, env, TICK_INTERVAL_ENV, float, DEFAULT_TICK_INTERVAL)
    batch = _setting(batch_size, env, BATCH_SIZE_ENV, int, DEFAULT_BATCH_SIZE)
    poll = _setting(poll_interval, env, POLL_INTERVAL_ENV, float, DEFAULT_POLL_INTERVAL)
    if not 0.05 <= tick <= 3600:
        raise errors.InvalidArgument(f"tick interval must be between 0.05 and 3600 seconds, got {tick}")
    if not 1 <= batch <= 10000:
        raise errors.InvalidArgument(f"batch size must be between 1 and 10000, got {batch}")
    if not 0.1 <= poll <= 3600:
        raise errors.InvalidArgument(f"poll interval must be between 0.1 and 3600 seconds, got {poll}")
    db.parse_dsn(dsn)
    return DaemonConfig(dsn=dsn, amqp_url=amqp_url, tick_interval=tick, batch_size=batch, poll_interval=poll)


def _setting(flag, env: Mapping[str, str], name: str, kind: Callable, default):
    if flag is not None:
        return kind(flag)
    raw = (env.get(name) or "").strip()
    if not raw:
        return default
    try:
        return kind(raw)
    except ValueError:
        raise errors.InvalidArgument(f"{name}={raw!r} is not a valid {kind.__name__}") from None


# --- logging ------------------------------------------------------------------

class EventLog:
    """One logfmt line per event: ``event=<name> key=value ... ts=<UTC ISO time>``."""

    def __init__(self, stream: TextIO | None = None):
        self._stream = stream

    def __call__(self, event: str, **fields) -> None:
        parts = [f"event={event}"]
        parts += [f"{key}={_logfmt(value)}" for key, value in fields.items() if value is not None]
        parts.append("ts=" + _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds"))
        stream = self._stream or sys.stderr
        try:
            stream.write(" ".join(parts) + "\n")
            stream.flush()
        except (OSError, ValueError):
            pass  # a closed stderr must not stop the daemon


def _logfmt(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.3f}"
    text = " ".join(str(value).split())  # one line, whatever the value held
    if text == "" or any(c in text for c in ' ="\\'):
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return text


# --- reconnect policy ---------------------------------------------------------------

class Backoff:
    """Bounded exponential backoff with jitter: 0.2 s, 0.4 s, ... at most MAX_BACKOFF."""

    def __init__(self):
        self.failures = 0
        self.next_at = 0.0

    def ready(self, now: float) -> bool:
        return now >= self.next_at

    def failed(self, now: float) -> float:
        delay = min(MAX_BACKOFF, BASE_BACKOFF * (2 ** self.failures)) * random.uniform(0.8, 1.0)
        self.failures += 1
        self.next_at = now + delay
        return delay

    def succeeded(self) -> int:
        failures, self.failures, self.next_at = self.failures, 0, 0.0
        return failures


def schema_problem(conn: psycopg.Connection) -> str | None:
    """Why this code must not run against the connected database, or None when the versions match."""
    known = migrate.known_schema_version()
    if not Catalog(conn).has_schema_version():
        return f"database has no FlowForge schema (this daemon expects {known}); run `flowforge migrate` first"
    applied = Client(conn).schema_version()
    if applied == known:
        return None
    if applied is None:
        return f"database has no recorded migrations (this daemon expects {known}); run `flowforge migrate` first"
    if known is not None and applied > known:
        return f"database schema is {applied}, newer than this daemon knows ({known}); upgrade flowforge"
    return f"database schema is {applied}, this daemon expects {known}; run `flowforge migrate` first"


# --- the daemon -------------------------------------------------------------------

class Daemon:
    def __init__(self, config: DaemonConfig, *, log: EventLog | None = None):
        self.config = config
        self.log = log or EventLog()
        self.publisher = amqp.Publisher(config.amqp_url)
        self._listen: psycopg.Connection | None = None
        self._work: psycopg.Connection | None = None
        self._api: Client | None = None      # the SQL API on the work session
        self._listen_backoff = Backoff()
        self._work_backoff = Backoff()
        self._amqp_backoff = Backoff()
        self._stopping = False
        self._stop_signal: str | None = None
        self._need_drain = True
        self._next_tick = 0.0
        self._next_poll = 0.0
        self.totals = Counter()

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
        self.log("started", pid=os.getpid(), dsn=db.mask_dsn(self.config.dsn),
                 amqp=amqp.mask_url(self.config.amqp_url), schema=migrate.known_schema_version(),
                 batch=self.config.batch_size, tick_interval=self.config.tick_interval,
                 poll_interval=self.config.poll_interval)
        while not self._stopping:
            code = self._step()
            if code is not None:
                self._shutdown()
                return code
        self._shutdown()
        return EXIT_OK

    def _shutdown(self) -> None:
        for conn in (self._work, self._listen):
            if conn is not None:
                try:
                    conn.close()
                except Exception:  # noqa: BLE001
                    pass
        self._work = self._listen = None
        self.publisher.close()
        self.log("stopped", signal=self._stop_signal, published=self.totals["published"],
                 ticks=self.totals["ticks"], reaped=self.totals["reaped"], dispatched=self.totals["dispatched"])

    def _step(self) -> int | None:
        now = time.monotonic()
        if self._listen is None and self._listen_backoff.ready(now):
            self._connect_listen()
        if self._work is None and self._work_backoff.ready(now):
            code = self._connect_work()
            if code is not None:
                return code
        if self.publisher.is_open:
            self._amqp_keepalive()
        if not self.publisher.is_open and self._amqp_backoff.ready(now):
            self._connect_amqp()
        now = time.monotonic()
        if now >= self._next_poll:
            self._need_drain = True
            self._next_poll = now + self.config.poll_interval
        if self._need_drain and self._work is not None and self.publisher.is_open and not self._stopping:
            self._drain()
        if time.monotonic() >= self._next_tick and self._work is not None and not self._stopping:
            self._tick()
            self._next_tick = time.monotonic() + self.config.tick_interval
        if not self._stopping and not self._need_drain_now():
            self._wait()
        return None

    def _need_drain_now(self) -> bool:
        return self._need_drain and self._work is not None and self.publisher.is_open

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
        try:
            problem = schema_problem(conn)
            if problem is None:
                Client(conn).bound_session(statement_timeout=STATEMENT_TIMEOUT, lock_timeout=LOCK_TIMEOUT,
                                           idle_in_transaction_timeout=IDLE_IN_TRANSACTION_TIMEOUT)
            with db.mapped_errors():
                conn.commit()
        except errors.FlowForgeError as exc:
            conn.close()
            self._pg_failed("work", self._work_backoff, exc)
            return None
        if problem is not None:
            conn.close()
            if first:
                raise errors.SchemaVersionMismatch(problem)
            self.log("schema_mismatch", error=problem)
            self._stop_signal = "schema_mismatch"
            return EXIT_SCHEMA
        self._work = conn
        self._api = Client(conn)
        self._need_drain = True
        retries = self._work_backoff.succeeded()
        if retries:
            self.log("pg_connected", role="work", after_attempts=retries)
        return None

    def _connect_listen(self) -> None:
        try:
            conn = db.connect(self._dsn("listen"), autocommit=True)
            Client(conn).listen_outbox()  # LISTEN first, then drain: nothing falls in between
        except errors.FlowForgeError as exc:
            self._pg_failed("listen", self._listen_backoff, exc)
            return
        self._listen = conn
        self._need_drain = True
        retries = self._listen_backoff.succeeded()
        if retries:
            self.log("pg_connected", role="listen", after_attempts=retries)

    def _pg_failed(self, role: str, backoff: Backoff, exc: BaseException) -> None:
        delay = backoff.failed(time.monotonic())
        self.log("pg_reconnect", role=role, attempt=backoff.failures, retry_in=delay, error=str(exc))

    def _pg_lost(self, role: str, exc: BaseException) -> None:
        """A connection broke (server gone, backend terminated, session timeout): drop it, reconnect later."""
        conn = self._work if role == "work" else self._listen
        if conn is not None:
            try:
                conn.close()
            except Exception:  # noqa: BLE001
                pass
        if role == "work":
            self._work = None
        else:
            self._listen = None
        self.log("pg_disconnected", role=role, error=db.first_line(exc))

    def _connect_amqp(self) -> None:
        try:
            self.publisher.connect()
        except errors.FlowForgeError as exc:
            delay = self._amqp_backoff.failed(time.monotonic())
            self.log("amqp_error", op="connect", attempt=self._amqp_backoff.failures, retry_in=delay, error=str(exc))
            return
        retries = self._amqp_backoff.succeeded()
        self.log("amqp_connected", url=amqp.mask_url(self.config.amqp_url), after_attempts=retries or None)
        self._need_drain = True

    def _amqp_keepalive(self) -> None:
        """Let pika answer heartbeats while idle, and notice a connection the broker dropped."""
        error = self.publisher.keepalive()
        if error is not None:
            delay = self._amqp_backoff.failed(time.monotonic())
            self.log("amqp_error", op="idle", attempt=self._amqp_backoff.failures, retry_in=delay, error=error)

    # --- work -------------------------------------------------------------------

    def _work_error(self, op: str, exc: errors.FlowForgeError) -> None:
        """A statement failed: a broken connection is reconnected, anything else is rolled back and logged."""
        conn = self._work
        if conn is None or conn.closed or conn.broken:
            self._pg_lost("work", exc)
            return
        try:
            with db.mapped_errors():
                conn.rollback()
        except errors.FlowForgeError as exc2:
            self._pg_lost("work", exc2)
            return
        self.log("pg_error", op=op, error=str(exc))

    def _drain(self) -> None:
        """Publish batches until the outbox is empty, a batch is short, or something failed.

        Whatever stops it, the next drain waits for a notification, a
        reconnect or the poll: a failing statement or an unroutable head of
        the outbox is retried at that pace, never in a tight loop.
        """
        self._need_drain = False
        while self._work is not None and self.publisher.is_open:
            more = self._drain_batch()
            if not more or self._stopping:
                return

    def _drain_batch(self) -> bool:
        """One transaction: take, publish, mark the confirmed, commit. True when another batch may be waiting."""
        conn = self._work
        batch = self.config.batch_size
        started = time.monotonic()
        try:
            rows = self._api.take_outbox(batch)
        except errors.FlowForgeError as exc:
            self._work_error("take_outbox", exc)
            return False
        if not rows:
            self._commit_quietly("take_outbox")
            return False

        confirmed: list = []
        refused: list = []
        failed: Counter = Counter()
        reasons: dict[str, str] = {}
        for index, message in enumerate(rows):
            if time.monotonic() - started > PUBLISH_DEADLINE:
                failed["timeout"] += len(rows) - index
                reasons["timeout"] = f"batch ran past its {PUBLISH_DEADLINE:.0f}s publish deadline"
                break
            outcome, reason = self.publisher.publish(message)
            if outcome is amqp.Outcome.CONFIRMED:
                confirmed.append(message.id)
                continue
            failed[outcome.value] += 1
            reasons.setdefault(outcome.value, reason or "")
            if outcome is amqp.Outcome.CONNECTION:
                failed[outcome.value] += len(rows) - index - 1
                break
            # The broker answered and refused this one: it waits before the next try,
            # so it cannot keep newer messages from being taken.
            refused.append(message.id)

        marked = 0
        if confirmed or refused:
            try:
                if confirmed:
                    marked = self._api.mark_published(confirmed)
                if refused:
                    error = "; ".join(f"{kind}: {reasons[kind]}" for kind in sorted(reasons)
                                      if kind != amqp.Outcome.CONNECTION.value)
                    self._api.defer_outbox(refused, error)
                with db.mapped_errors():
                    conn.commit()
            except errors.FlowForgeError as exc:
                if confirmed:
                    # Confirmed by the broker but not recorded: these will be sent again.
                    self.log("mark_failed", unmarked=len(confirmed), error=db.first_line(exc))
                self._work_error("mark_published", exc)
                return False
        elif not self._commit_quietly("take_outbox"):
            return False

        elapsed_ms = int((time.monotonic() - started) * 1000)
        self.totals["published"] += marked
        if confirmed:
            self.log("published", count=marked, taken=len(rows), failed=sum(failed.values()) or None,
                     ms=elapsed_ms)
        for kind, count in sorted(failed.items()):
            if kind == amqp.Outcome.CONNECTION.value:
                delay = self._amqp_backoff.failed(time.monotonic())
                self.log("amqp_error", op="publish", unpublished=count, attempt=self._amqp_backoff.failures,
                         retry_in=delay, error=reasons.get(kind))
            else:
                self.log("publish_failed", reason=kind, count=count, error=reasons.get(kind),
                         deferred=len(refused) or None)
        # Rows that failed stay unpublished: refused ones come back after their
        # deferral, the rest on the next notification or poll.
        return len(rows) == batch and not failed

    def _commit_quietly(self, op: str) -> bool:
        try:
            with db.mapped_errors():
                self._work.commit()
            return True
        except errors.FlowForgeError as exc:
            self._work_error(op, exc)
            return False

    def _tick(self) -> None:
        conn = self._work
        try:
            result = self._api.tick() or {}
            with db.mapped_errors():
                conn.commit()
        except errors.FlowForgeError as exc:
            self._work_error("tick", exc)
            return
        self.totals["ticks"] += 1
        counts = {k: v for k, v in result.items() if isinstance(v, int) and not isinstance(v, bool)}
        for key, value in counts.items():
            self.totals[key] += value
        if any(counts.values()):
            self.log("tick", **counts)
        if counts.get("dispatched"):
            self._need_drain = True  # its NOTIFY will come too; no need to wait for it

    # --- waiting ------------------------------------------------------------------

    def _wait(self) -> None:
        """Sleep until the next tick or poll, a retry is due, a notification arrives, or a signal."""
        deadline = min(self._next_tick, self._next_poll)
        for backoff, down in ((self._listen_backoff, self._listen is None),
                              (self._work_backoff, self._work is None),
                              (self._amqp_backoff, not self.publisher.is_open)):
            if down:
                deadline = min(deadline, backoff.next_at)
        if self._listen is None:
            self._sleep_until(deadline)
            return
        while not self._stopping:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            if self.publisher.is_open:
                self._amqp_keepalive()
            try:
                with db.mapped_errors():
                    for _ in self._listen.notifies(timeout=min(WAIT_SLICE, remaining), stop_after=1):
                        self._need_drain = True
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
