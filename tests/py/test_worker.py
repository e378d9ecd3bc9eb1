"""The worker SDK against a real PostgreSQL (and RabbitMQ for push queues).

In-process workers run in a background thread (``Worker.start``); the
shutdown tests run ``flowforge worker MODULE:ATTR`` as a subprocess and send
it SIGTERM, as an operator (or Kubernetes) would.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import textwrap
import threading
import time
import uuid
from pathlib import Path

import pytest

import flowforge
from flowforge import errors
from helpers_runtime import (  # noqa: F401 - running is a fixture
    FLOWFORGE, define, events, fast_worker, running, sql, start, tasks, wait_finished, wait_until,
)

AMQP_URL = os.environ.get("FLOWFORGE_TEST_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/")


# --- pull: the happy path and failures -------------------------------------------

def test_dag_with_flaky_task_succeeds(migrated_dsn, running):
    define(migrated_dsn, {"name": "etl", "tasks": [
        {"key": "extract"},
        {"key": "left", "depends_on": ["extract"]},
        {"key": "flaky", "depends_on": ["extract"], "backoff": "100 milliseconds"},
        {"key": "join", "depends_on": ["left", "flaky"]},
    ]})
    worker = fast_worker(migrated_dsn, concurrency=3)
    seen: list[tuple[str, int]] = []

    @worker.task("extract")
    def extract(ctx, input):
        seen.append((ctx.task_key, ctx.attempt))
        return {"rows": input["run"]["rows"]}

    @worker.task("left")
    def left(ctx, input):
        return {"left": input["deps"]["extract"]["rows"] * 2}

    @worker.task("flaky")
    async def flaky(ctx, input):  # async handlers run on the worker's event loop
        seen.append((ctx.task_key, ctx.attempt))
        if ctx.attempt == 1:
            raise ConnectionError("upstream timed out")
        return {"flaky": "ok"}

    @worker.task("join")
    def join(ctx, input):
        assert isinstance(ctx.task_run_id, uuid.UUID) and ctx.fencing_token >= 1
        return {**input["deps"]["left"], **input["deps"]["flaky"]}

    run_id = start(migrated_dsn, "etl", {"rows": 21})
    running(worker)
    assert wait_finished(migrated_dsn, run_id) == "succeeded"
    result = tasks(migrated_dsn, run_id)
    assert result["join"]["output"] == {"left": 42, "flaky": "ok"}
    assert result["flaky"]["attempt"] == 2
    assert ("flaky", 1) in seen and ("flaky", 2) in seen
    retry = [e for e in events(migrated_dsn, run_id) if e[1] == "retry_scheduled"]
    assert len(retry) == 1 and retry[0][4]["error"] == "ConnectionError('upstream timed out')"
    assert retry[0][4]["retryable"] is True


def test_always_failing_task_fails_run_after_max_attempts(migrated_dsn, running):
    define(migrated_dsn, {"name": "doomed", "tasks": [
        {"key": "boom", "max_attempts": 3, "backoff": "0 seconds"},
        {"key": "after", "depends_on": ["boom"]},
    ]})
    worker = fast_worker(migrated_dsn)
    calls = []

    @worker.task("boom")
    def boom(ctx, input):
        calls.append(ctx.attempt)
        raise ValueError("bad\ninput")

    @worker.task("after")
    def after(ctx, input):
        raise AssertionError("must never run")

    run_id = start(migrated_dsn, "doomed")
    running(worker)
    assert wait_finished(migrated_dsn, run_id) == "failed"
    result = tasks(migrated_dsn, run_id)
    assert sorted(calls) == [1, 2, 3]
    assert result["boom"] == {"state": "failed", "attempt": 3, "output": None,
                              "error": "ValueError('bad\\ninput')"}
    assert "\n" not in result["boom"]["error"]
    assert result["after"]["state"] == "skipped"


def test_permanent_error_and_bad_output_fail_without_retry_and_an_unhandled_task_waits(migrated_dsn, running):
    define(migrated_dsn, {"name": "strict", "tasks": [
        {"key": "permanent", "max_attempts": 5},
        {"key": "unhandled", "max_attempts": 5},
        {"key": "not_json", "max_attempts": 5},
        {"key": "nan", "max_attempts": 5},
    ]})
    worker = fast_worker(migrated_dsn)

    @worker.task("permanent")
    def permanent(ctx, input):
        raise flowforge.PermanentError("invoice 42 does not exist")

    @worker.task("not_json")
    def not_json(ctx, input):
        return {"when": object()}

    @worker.task("nan")
    def nan(ctx, input):
        return {"ratio": float("nan")}

    run_id = start(migrated_dsn, "strict")
    running(worker)
    handled = ("permanent", "not_json", "nan")
    wait_until(lambda: all(tasks(migrated_dsn, run_id)[k]["state"] == "failed" for k in handled), 20,
               "the handled tasks to fail")
    result = tasks(migrated_dsn, run_id)
    assert all(result[k]["attempt"] == 1 for k in handled), result
    assert result["permanent"]["error"] == "PermanentError('invoice 42 does not exist')"
    # A pull worker claims only what it has handlers for: the unhandled task waits for one (issue 11).
    assert result["unhandled"] == {"state": "ready", "attempt": 1, "output": None, "error": None}
    assert "not JSON-serialisable" in result["not_json"]["error"]
    assert "not JSON-serialisable" in result["nan"]["error"]


def test_claims_in_batches_up_to_capacity(migrated_dsn, running):
    define(migrated_dsn, {"name": "wide", "tasks": [{"key": f"t{i}"} for i in range(6)]})
    worker = fast_worker(migrated_dsn, concurrency=3)
    active = []
    peak = []
    lock = threading.Lock()

    def work(ctx, input):
        with lock:
            active.append(ctx.task_key)
            peak.append(len(active))
        time.sleep(0.3)
        with lock:
            active.remove(ctx.task_key)
        return None

    for i in range(6):
        worker.register(f"t{i}", work)
    run_id = start(migrated_dsn, "wide")
    running(worker)
    assert wait_finished(migrated_dsn, run_id) == "succeeded"
    assert max(peak) == 3  # never more than concurrency at once, and it used all of it
    claims = [e for e in events(migrated_dsn, run_id) if e[1] == "claimed"]
    assert len(claims) == 6 and all(e[4]["worker"] == worker.name for e in claims)


def test_handler_outliving_its_lease_sees_lease_lost_and_is_not_written(migrated_dsn, running):
    """Heartbeats stall (a GC pause, a frozen VM); the reaper gives the task to attempt 2."""
    define(migrated_dsn, {"name": "slowpoke", "tasks": [{"key": "slow", "backoff": "0 seconds"}]})

    class StalledHeartbeats(flowforge.Worker):
        def _heartbeat_thread(self):  # the heartbeater wakes up only after the lease is gone
            if not self._abandon.wait(self.lease + 2.0):
                super()._heartbeat_thread()

    worker = StalledHeartbeats(dsn=migrated_dsn, lease=3, poll_interval=0.2, grace_period=5, concurrency=2)
    observed = {}

    @worker.task("slow")
    def slow(ctx, input):
        if ctx.attempt == 1:
            observed["lost"] = ctx.lease_lost_event.wait(15)
            observed["flag"] = ctx.lease_lost
            with pytest.raises(errors.LeaseLost):
                ctx.heartbeat()
            return {"attempt": 1}
        return {"attempt": ctx.attempt}

    run_id = start(migrated_dsn, "slowpoke")
    running(worker)
    # The lease (3 s) runs out without heartbeats; the daemon's tick reaps it.
    assert wait_finished(migrated_dsn, run_id, timeout=30, tick=True) == "succeeded"
    wait_until(lambda: "flag" in observed, 15, what="attempt 1 to return")
    assert observed == {"lost": True, "flag": True}
    assert tasks(migrated_dsn, run_id)["slow"]["output"] == {"attempt": 2}
    kinds = [(e[1], e[2]) for e in events(migrated_dsn, run_id) if e[0] == "slow"]
    assert ("lease_expired", 2) in kinds and kinds.count(("completed", 2)) == 1
    assert ("completed", 1) not in kinds
    wait_until(lambda: worker.stats["dropped"] >= 1, 5, what="the stale result to be dropped")


def test_cancelled_run_drops_the_result(migrated_dsn, running):
    define(migrated_dsn, {"name": "cancelme", "tasks": [{"key": "wait"}]})
    worker = fast_worker(migrated_dsn, lease=3)
    started = threading.Event()
    observed = {}

    @worker.task("wait")
    def wait(ctx, input):
        started.set()
        observed["lost"] = ctx.lease_lost_event.wait(10)  # the next heartbeat (<= 1 s) is refused
        return {"late": True}

    run_id = start(migrated_dsn, "cancelme")
    running(worker)
    assert started.wait(10)
    sql(migrated_dsn, "SELECT flowforge.cancel_run(%s, 'test')", run_id)
    wait_until(lambda: "lost" in observed, 10, what="the handler to learn of the cancel")
    assert observed["lost"] is True
    wait_until(lambda: worker.stats["dropped"] == 1, 5, what="the result to be dropped")
    assert tasks(migrated_dsn, run_id)["wait"]["state"] == "cancelled"
    assert tasks(migrated_dsn, run_id)["wait"]["output"] is None


def test_stop_waits_for_in_flight_work(migrated_dsn):
    define(migrated_dsn, {"name": "graceful", "tasks": [{"key": "a"}, {"key": "b", "depends_on": ["a"]}]})
    worker = fast_worker(migrated_dsn)
    started = threading.Event()

    @worker.task("a")
    def a(ctx, input):
        started.set()
        time.sleep(1.0)
        return {"a": 1}

    worker.register("b", lambda ctx, input: {"b": 1})
    run_id = start(migrated_dsn, "graceful")
    worker.start()
    assert started.wait(10)
    worker.stop()
    assert worker.join(10)
    result = tasks(migrated_dsn, run_id)
    assert result["a"]["state"] == "succeeded"  # finished within the grace period
    assert result["b"]["state"] == "ready"      # nothing new was claimed after stop()


def test_worker_arguments_are_checked():
    with pytest.raises(ValueError):
        flowforge.Worker(queues=[], concurrency=1)
    with pytest.raises(TypeError):
        flowforge.Worker(queues="default")
    with pytest.raises(ValueError):
        flowforge.Worker(concurrency=0)
    w = flowforge.Worker()
    w.register("x", lambda ctx, input: None)
    with pytest.raises(ValueError):
        w.register("x", lambda ctx, input: None)


def test_worker_survives_losing_its_connections(migrated_dsn, running):
    define(migrated_dsn, {"name": "resilient", "tasks": [{"key": "a"}, {"key": "b", "depends_on": ["a"]}]})
    worker = fast_worker(migrated_dsn, name="resilient-worker")
    worker.register("a", lambda ctx, input: {"a": 1})
    worker.register("b", lambda ctx, input: {"b": input["deps"]["a"]["a"] + 1})
    first = start(migrated_dsn, "resilient")
    running(worker)
    assert wait_finished(migrated_dsn, first) == "succeeded"
    # Every backend of the worker (listen, claim, heartbeat/complete) is killed, as in a failover.
    killed = sql(migrated_dsn, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                               "WHERE datname = current_database() "
                               "AND application_name = 'flowforge-worker resilient-worker' "
                               "AND pid <> pg_backend_pid()")[0][0]
    assert killed >= 2
    second = start(migrated_dsn, "resilient")
    assert wait_finished(migrated_dsn, second, timeout=30) == "succeeded"
    assert tasks(migrated_dsn, second)["b"]["output"] == {"b": 2}


# --- SIGTERM to a worker process ------------------------------------------------------

WORKER_APP = """
import os, time
from pathlib import Path
import flowforge

worker = flowforge.Worker(queues=["default"], concurrency=2, lease=3, poll_interval=0.2)
MARKS = Path(os.environ["MARKS"])

@worker.task("slow")
def slow(ctx, input):
    (MARKS / f"started-{ctx.attempt}").write_text(str(os.getpid()))
    seconds = float(os.environ.get("SLOW_SECONDS", "60")) if ctx.attempt == 1 else 0.1
    time.sleep(seconds)
    return {"attempt": ctx.attempt, "pid": os.getpid()}

@worker.task("after")
def after(ctx, input):
    return {"after": input["deps"]["slow"]["attempt"]}
"""


def spawn_worker(dsn: str, app_dir: Path, *args: str, env: dict | None = None) -> subprocess.Popen:
    full_env = {k: v for k, v in os.environ.items() if k not in ("FLOWFORGE_DSN", "FLOWFORGE_AMQP_URL")}
    full_env.update({"MARKS": str(app_dir), "FLOWFORGE_DSN": dsn, **(env or {})})
    return subprocess.Popen([str(FLOWFORGE), "worker", "worker_app:worker", "--log-level", "WARNING", *args],
                            cwd=app_dir, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.fixture
def app_dir(tmp_path):
    (tmp_path / "worker_app.py").write_text(textwrap.dedent(WORKER_APP))
    return tmp_path


def test_sigterm_mid_task_loses_nothing(migrated_dsn, app_dir):
    """SIGTERM with a short grace period abandons the task; its lease brings it back."""
    define(migrated_dsn, {"name": "sigterm", "tasks": [
        {"key": "slow", "backoff": "0 seconds"}, {"key": "after", "depends_on": ["slow"]}]})
    run_id = start(migrated_dsn, "sigterm")
    first = spawn_worker(migrated_dsn, app_dir, "--grace-period", "0.5")
    try:
        wait_until(lambda: (app_dir / "started-1").exists(), 20, what="the first attempt to start")
        first.send_signal(signal.SIGTERM)
        out, err = first.communicate(timeout=15)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 0, err
    assert "Traceback" not in err
    assert tasks(migrated_dsn, run_id)["slow"]["state"] == "running"  # abandoned, lease still held

    second = spawn_worker(migrated_dsn, app_dir)
    try:
        # After the 3 s lease expires, tick() (the daemon's job) reaps it; the second worker finishes it.
        assert wait_finished(migrated_dsn, run_id, timeout=30, tick=True) == "succeeded"
    finally:
        second.send_signal(signal.SIGTERM)
        second.communicate(timeout=15)
    result = tasks(migrated_dsn, run_id)
    assert result["slow"]["output"]["attempt"] == 2 and result["slow"]["output"]["pid"] == second.pid
    assert result["after"]["output"] == {"after": 2}
    assert any(e[1] == "lease_expired" for e in events(migrated_dsn, run_id))
    assert second.returncode == 0


def test_sigterm_finishes_in_flight_task_within_grace(migrated_dsn, app_dir):
    define(migrated_dsn, {"name": "graceful-exit", "tasks": [{"key": "slow"}, {"key": "after", "depends_on": ["slow"]}]})
    run_id = start(migrated_dsn, "graceful-exit")
    proc = spawn_worker(migrated_dsn, app_dir, env={"SLOW_SECONDS": "1.5"})
    try:
        wait_until(lambda: (app_dir / "started-1").exists(), 20, what="the task to start")
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    result = tasks(migrated_dsn, run_id)
    assert result["slow"]["state"] == "succeeded" and result["slow"]["attempt"] == 1
    assert result["after"]["state"] == "ready"  # released, but the stopping worker claimed nothing new


# --- push queues (RabbitMQ, via the daemon) ----------------------------------------------

def _daemon_available() -> bool:
    return importlib.util.find_spec("flowforge.daemon") is not None


def _rabbit_available() -> bool:
    import socket
    try:
        socket.create_connection(("127.0.0.1", 5672), timeout=1).close()
        return True
    except OSError:
        return False


@pytest.mark.skipif(not _daemon_available(), reason="flowforge.daemon (the outbox publisher) has not landed yet")
@pytest.mark.skipif(not _rabbit_available(), reason="RabbitMQ is not listening on 127.0.0.1:5672")
@pytest.mark.parametrize("how", ["push_queues", "queues_configured_as_push"])
def test_push_queue_worker_completes_tasks_delivered_by_the_daemon(migrated_dsn, running, how):
    exchange = f"ff-test-{uuid.uuid4().hex[:8]}"
    queue = f"images{uuid.uuid4().hex[:6]}"
    sql(migrated_dsn, "SELECT flowforge.configure_queue(%s, %s)", queue, exchange)
    define(migrated_dsn, {"name": "pushed", "tasks": [
        {"key": "thumb", "queue": queue, "backoff": "100 milliseconds"},
        {"key": "publish", "queue": queue, "depends_on": ["thumb"]},
    ]})
    if how == "push_queues":
        worker = fast_worker(migrated_dsn, queues=[], push_queues=[queue], amqp_url=AMQP_URL, concurrency=2)
    else:  # a queue named in queues= that flowforge.queue says is push is consumed from RabbitMQ
        worker = fast_worker(migrated_dsn, queues=[queue], amqp_url=AMQP_URL, concurrency=2)
    attempts = []

    @worker.task("thumb")
    def thumb(ctx, input):
        attempts.append(ctx.attempt)
        if ctx.attempt == 1:
            raise RuntimeError("flaky resize")
        return {"size": input["run"]["size"] // 2}

    @worker.task("publish")
    def publish(ctx, input):
        return {"published": input["deps"]["thumb"]["size"]}

    running(worker)
    env = {k: v for k, v in os.environ.items() if k != "FLOWFORGE_DSN"}
    env["FLOWFORGE_AMQP_URL"] = AMQP_URL
    daemon = subprocess.Popen([str(FLOWFORGE), "--dsn", migrated_dsn, "daemon", "--tick-interval", "0.5"],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # The worker declares and binds flowforge.<queue> before it consumes.
        time.sleep(1.0)
        run_ids = [start(migrated_dsn, "pushed", {"size": 100 * (i + 1)}) for i in range(3)]
        for run_id in run_ids:
            assert wait_finished(migrated_dsn, run_id, timeout=40) == "succeeded", tasks(migrated_dsn, run_id)
        for i, run_id in enumerate(run_ids):
            assert tasks(migrated_dsn, run_id)["publish"]["output"] == {"published": 50 * (i + 1)}
        assert sorted(attempts) == [1, 1, 1, 2, 2, 2]
        owners = sql(migrated_dsn, "SELECT DISTINCT e.detail->>'worker' FROM flowforge.task_run_event e "
                                   "WHERE e.kind = 'claimed'")
        assert owners == []  # nothing was claimed by pull: every task came through RabbitMQ
    finally:
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            daemon.kill()
        amqp_queue = sql(migrated_dsn, "SELECT amqp_queue FROM flowforge.queue_settings(ARRAY[%s])", queue)[0][0]
        _delete_broker_objects(amqp_queue, exchange)


def _delete_broker_objects(queue: str, exchange: str) -> None:
    """Durable test queues and exchanges would pile up in the broker across runs."""
    import pika

    try:
        connection = pika.BlockingConnection(pika.URLParameters(AMQP_URL))
        channel = connection.channel()
        channel.queue_delete(queue=queue)
        channel.exchange_delete(exchange=exchange)
        connection.close()
    except Exception:  # noqa: BLE001 - best effort
        pass
