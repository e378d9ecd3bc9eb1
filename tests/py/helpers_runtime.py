"""What the worker and daemon tests share: the database and broker at hand, real processes, waiting.

* database: ``sql``, ``define``, ``start``, ``run_state``, ``tasks``, ``events``;
* waiting: ``wait_until`` polls a predicate against a deadline (never a fixed sleep
  hoping something happened), ``wait_finished`` for a run;
* workers: ``fast_worker`` and the ``running`` fixture (in-process, background threads);
* the daemon as a subprocess: ``DaemonProcess`` and the ``daemons`` fixture;
* faults: ``TcpProxy`` (a forwarder process to start late, SIGSTOP or kill; the ``proxies``
  fixture stops them all) and
  ``PgBouncer`` (a real pgbouncer on a free loopback port);
* the broker: the ``amqp_url`` fixture; ``Broker`` (the ``broker`` fixture), a test's own
  exchange with a queue bound to it by ``#``; ``setup_push``, ``start_runs``, ``outbox``,
  ``unpublished`` for the outbox seen from psql.

Fixtures are imported by the test modules that use them (``from helpers_runtime import running``).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Callable

import pika
import pika.exceptions
import psycopg
import pytest
from psycopg.types.json import Jsonb

import flowforge

AMQP_URL_ENV = "FLOWFORGE_TEST_AMQP_URL"
DEFAULT_AMQP_URL = "amqp://guest:guest@127.0.0.1:5672/%2F"
FLOWFORGE = Path(sys.executable).with_name("flowforge")
HERE = Path(__file__).resolve().parent


# --- the database ---------------------------------------------------------------------

def sql(dsn: str, query: str, *params):
    with psycopg.connect(dsn, autocommit=True) as conn:
        cur = conn.execute(query, params)
        return cur.fetchall() if cur.description else None


def define(dsn: str, spec: dict) -> None:
    sql(dsn, "SELECT flowforge.define_workflow(%s)", Jsonb(spec))


def start(dsn: str, workflow: str, run_input: dict | None = None) -> uuid.UUID:
    return sql(dsn, "SELECT flowforge.start_run(%s, %s)", workflow, Jsonb(run_input or {}))[0][0]


def run_state(dsn: str, run_id) -> str:
    return sql(dsn, "SELECT state FROM flowforge.workflow_run WHERE id = %s", run_id)[0][0]


def tasks(dsn: str, run_id) -> dict[str, dict]:
    rows = sql(dsn, "SELECT task_key, state, attempt, output, error FROM flowforge.task_run "
                    "WHERE workflow_run_id = %s", run_id)
    return {k: {"state": s, "attempt": a, "output": o, "error": e} for k, s, a, o, e in rows}


def events(dsn: str, run_id) -> list[tuple]:
    return sql(dsn, "SELECT task_key, kind, attempt, fencing_token, detail FROM flowforge.run_events(%s)", run_id)


# --- waiting ------------------------------------------------------------------------------

def wait_until(predicate: Callable[[], object], timeout: float = 20.0, what: str = "condition",
               interval: float = 0.05):
    """Poll ``predicate`` until it returns something true (returned), or fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def wait_finished(dsn: str, run_id, timeout: float = 20.0, tick: bool = False) -> str:
    def finished():
        if tick:
            sql(dsn, "SELECT flowforge.tick()")
        state = run_state(dsn, run_id)
        return state if state in ("succeeded", "failed", "cancelled") else None
    return wait_until(finished, timeout, f"run {run_id} to finish", interval=0.1)


def free_port() -> int:
    """A local TCP port nothing listens on (bound, then released)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# --- workers ---------------------------------------------------------------------------------

@pytest.fixture
def running():
    """Start workers in background threads; stop them all after the test."""
    started: list[flowforge.Worker] = []

    def go(worker: flowforge.Worker) -> flowforge.Worker:
        worker.start()
        started.append(worker)
        return worker

    yield go
    for w in started:
        w.stop()
    for w in started:
        assert w.join(15), "worker did not stop"


def fast_worker(dsn: str, **kw) -> flowforge.Worker:
    kw.setdefault("poll_interval", 0.2)
    kw.setdefault("grace_period", 5)
    return flowforge.Worker(dsn=dsn, **kw)


# --- the broker -------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def amqp_url() -> str:
    url = os.environ.get(AMQP_URL_ENV) or DEFAULT_AMQP_URL
    params = pika.URLParameters(url)
    params.socket_timeout = params.stack_timeout = 5
    params.connection_attempts = 1
    try:
        pika.BlockingConnection(params).close()
    except (pika.exceptions.AMQPError, OSError) as exc:
        pytest.fail(f"test RabbitMQ not reachable at {url} ({AMQP_URL_ENV}): {exc!r}", pytrace=False)
    return url


# --- push: a test's own exchange and queue, the outbox seen from psql ---------------------------------

PUSH_QUEUE = "pushq"


class Received:
    """One delivered message."""

    def __init__(self, method, props, body: bytes):
        self.message_id = props.message_id
        self.content_type = props.content_type
        self.delivery_mode = props.delivery_mode
        self.routing_key = method.routing_key
        self.payload = json.loads(body)


class Broker:
    """A unique durable topic exchange and an exclusive queue bound to it with '#'."""

    def __init__(self, url: str):
        self.exchange = f"fftest.{uuid.uuid4().hex[:12]}"
        self._conn = pika.BlockingConnection(pika.URLParameters(url))
        self._ch = self._conn.channel()
        self._ch.exchange_declare(self.exchange, exchange_type="topic", durable=True)
        self.queue = self._ch.queue_declare("", exclusive=True).method.queue
        self._ch.queue_bind(self.queue, self.exchange, routing_key="#")
        self._ch.basic_qos(prefetch_count=200)
        self._consumer = None
        self.received: list[Received] = []

    def consume(self, handler: Callable[[Received], None] | None = None, *, until: Callable[[], bool],
                timeout: float, idle: float = 0.1) -> None:
        """Take messages (handler each, then ack) until ``until()`` holds; fail after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        if self._consumer is None:
            self._consumer = self._ch.consume(self.queue, inactivity_timeout=idle)
        while True:
            if until():
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout}s; received {len(self.received)} message(s)")
            method, props, body = next(self._consumer)
            if method is None:
                continue
            message = Received(method, props, body)
            self.received.append(message)
            if handler is not None:
                handler(message)
            self._ch.basic_ack(method.delivery_tag)

    def settle(self, quiet: float = 0.5, timeout: float = 15) -> None:
        """Consume until no message arrived for ``quiet`` seconds (the broker has handed over everything)."""
        last = {"n": len(self.received), "at": time.monotonic()}

        def quiet_enough() -> bool:
            if len(self.received) != last["n"]:
                last["n"], last["at"] = len(self.received), time.monotonic()
            return time.monotonic() - last["at"] >= quiet

        self.consume(until=quiet_enough, timeout=timeout)

    def drop_exchange(self) -> None:
        """Delete the exchange (and with it the queue's binding), as if nobody had declared it."""
        self._ch.exchange_delete(self.exchange)

    def exchange_exists(self) -> bool:
        probe = self._conn.channel()
        try:
            probe.exchange_declare(self.exchange, passive=True)
        except pika.exceptions.ChannelClosedByBroker as exc:
            assert exc.reply_code == 404, exc
            return False
        probe.close()
        return True

    def bind(self, routing_key: str = "#") -> None:
        self._ch.queue_bind(self.queue, self.exchange, routing_key=routing_key)

    def ids(self) -> list[str]:
        return [m.message_id for m in self.received]

    def close(self) -> None:
        try:
            if self._consumer is not None:
                self._ch.cancel()
            self._ch.exchange_delete(self.exchange)
        finally:
            self._conn.close()


@pytest.fixture
def broker(amqp_url):
    b = Broker(amqp_url)
    try:
        yield b
    finally:
        b.close()


def setup_push(dsn: str, exchange: str, *, diamond: bool = False) -> None:
    tasks = ([{"key": "a", "queue": PUSH_QUEUE},
              {"key": "b", "queue": PUSH_QUEUE, "depends_on": ["a"]},
              {"key": "c", "queue": PUSH_QUEUE, "depends_on": ["a"]},
              {"key": "d", "queue": PUSH_QUEUE, "depends_on": ["b", "c"]}]
             if diamond else [{"key": "only", "queue": PUSH_QUEUE}])
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT flowforge.define_workflow(%s::jsonb)",
                     (json.dumps({"name": "push", "tasks": tasks}),))
        conn.execute("SELECT flowforge.configure_queue(%s::text, %s::text)", (PUSH_QUEUE, exchange))


def start_runs(dsn: str, n: int) -> list[str]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return [r[0] for r in conn.execute(
            "SELECT flowforge.start_run('push', jsonb_build_object('i', i)) FROM generate_series(1, %s) i", (n,))]


def outbox(dsn: str) -> tuple[set[str], set[str]]:
    """(message ids of every outbox row, message ids of the rows marked published)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT task_run_id::text || ':' || fencing_token_snapshot, published_at IS NOT NULL "
            "FROM flowforge.outbox_message").fetchall()
    return {r[0] for r in rows}, {r[0] for r in rows if r[1]}


def unpublished(dsn: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute("SELECT count(*) FROM flowforge.outbox_message WHERE published_at IS NULL").fetchone()[0]


# --- the daemon subprocess ----------------------------------------------------------------------

class DaemonProcess:
    """``python -m flowforge.cli daemon`` with its stderr (logfmt events) in a file; no broker without ``amqp_url``."""

    def __init__(self, dsn: str, amqp_url: str | None, *args: str, env: dict | None = None):
        self._log = tempfile.NamedTemporaryFile("w+", prefix="ffdaemon-", suffix=".log", delete=False)
        self.log_path = Path(self._log.name)
        broker = ["--amqp-url", amqp_url] if amqp_url else []
        cmd = [sys.executable, "-m", "flowforge.cli", "daemon", "--dsn", dsn, *broker,
               "--tick-interval", "0.2", "--poll-interval", "1", *args]
        full_env = {k: v for k, v in os.environ.items() if k not in ("FLOWFORGE_AMQP_URL", "FLOWFORGE_POOLER")}
        full_env.update(env or {})
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self._log, env=full_env)

    @property
    def log(self) -> str:
        return self.log_path.read_text()

    def events(self, name: str) -> list[dict[str, str]]:
        out = []
        for line in self.log.splitlines():
            fields = dict(part.split("=", 1) for part in line.split() if "=" in part)
            if fields.get("event") == name:
                out.append(fields)
        return out

    def wait_for_event(self, name: str, timeout: float = 15) -> None:
        wait_until(lambda: self.events(name) or self.proc.poll() is not None, timeout, f"daemon event {name}")
        assert self.events(name), f"daemon exited ({self.proc.returncode}) before {name}:\n{self.log}"

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(timeout=timeout)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def cleanup(self) -> None:
        self.kill()
        self._log.close()
        self.log_path.unlink(missing_ok=True)


@pytest.fixture
def daemons():
    started: list[DaemonProcess] = []

    def launch(dsn: str, amqp_url: str | None, *args: str, env: dict | None = None) -> DaemonProcess:
        d = DaemonProcess(dsn, amqp_url, *args, env=env)
        started.append(d)
        return d

    try:
        yield launch
    finally:
        for d in started:
            d.cleanup()


# --- faults: processes between a client and its server --------------------------------------------

class TcpProxy:
    """``tcp_proxy.py`` as a process: 127.0.0.1:``port`` forwards to ``target``; freeze it, thaw it, stop it."""

    def __init__(self, target_port: int, port: int = 0, target_host: str = "127.0.0.1"):
        self.proc = subprocess.Popen([sys.executable, str(HERE / "tcp_proxy.py"), str(port), target_host,
                                      str(target_port)], stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().split()
        assert line and line[0] == "ready", f"tcp_proxy did not start: {line}"
        self.port = int(line[1])

    def freeze(self) -> None:
        self.proc.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        self.proc.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)  # a stopped process must run to die of SIGKILL promptly
            self.proc.kill()
            self.proc.wait(timeout=10)


@pytest.fixture
def proxies():
    """Start ``TcpProxy`` processes (``proxies(target_port, port=0)``); every one is stopped after the test."""
    started: list[TcpProxy] = []

    def launch(target_port: int, port: int = 0) -> TcpProxy:
        proxy = TcpProxy(target_port, port=port)
        started.append(proxy)
        return proxy

    try:
        yield launch
    finally:
        for proxy in started:
            proxy.stop()


class PgBouncer:
    """A real pgbouncer in front of the test server (127.0.0.1:5432), in its own folder, on a free port.

    ``pool_mode`` transaction and a pool of two server connections per
    database: consecutive transactions of one client land on different
    server connections, as they do in production under load.  pgbouncer
    refuses to run as root, so as root it drops to the ``postgres`` user.
    """

    def __init__(self, pool_mode: str = "transaction", pool_size: int = 2):
        self.dir = Path(tempfile.mkdtemp(prefix="ffpgbouncer-"))
        self.dir.chmod(0o755)
        self.port = free_port()
        (self.dir / "users.txt").write_text('"postgres" ""\n')
        run_as = "user = postgres\n" if os.geteuid() == 0 else ""
        (self.dir / "pgbouncer.ini").write_text(
            "[databases]\n* = host=127.0.0.1 port=5432\n"
            "[pgbouncer]\n"
            f"listen_addr = 127.0.0.1\nlisten_port = {self.port}\nunix_socket_dir =\n"
            f"auth_type = trust\nauth_file = {self.dir / 'users.txt'}\n"
            f"pool_mode = {pool_mode}\ndefault_pool_size = {pool_size}\nmax_client_conn = 200\n"
            f"logfile = {self.dir / 'pgbouncer.log'}\npidfile = {self.dir / 'pgbouncer.pid'}\n"
            "ignore_startup_parameters = extra_float_digits,options\n" + run_as)
        if os.geteuid() == 0:
            for path in (self.dir, *self.dir.iterdir()):
                os.chown(path, _uid("postgres"), -1)
        binary = shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"  # /usr/sbin may not be on PATH
        self.proc = subprocess.Popen([binary, str(self.dir / "pgbouncer.ini")],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wait_until(self._accepts, 15, "pgbouncer to accept connections")

    def _accepts(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"pgbouncer exited: {self.proc.stderr.read()}")
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
            return True
        except OSError:
            return False

    def dsn(self, dbname: str) -> str:
        return f"host=127.0.0.1 port={self.port} user=postgres dbname={dbname}"

    @property
    def log(self) -> str:
        path = self.dir / "pgbouncer.log"
        return path.read_text() if path.exists() else ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def _uid(user: str) -> int:
    import pwd
    return pwd.getpwnam(user).pw_uid
