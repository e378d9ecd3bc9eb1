"""The outbox daemon against real PostgreSQL and a real RabbitMQ (127.0.0.1:5672).

The daemon runs as a subprocess (``python -m flowforge.cli daemon``) against a
fresh migrated database per test.  Each test declares its own exchange (a
unique name) and an exclusive queue bound to it with ``#``, configures a push
queue to that exchange, and consumes in the test process.

Every wait polls against a deadline; nothing sleeps for a fixed time hoping
something happened.
"""

from __future__ import annotations

import collections
import json
import signal

import pika
import pika.exceptions
import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from helpers_runtime import (  # noqa: F401 - fixtures
    PUSH_QUEUE, Received, amqp_url, broker, daemons, free_port, outbox, proxies, setup_push, start_runs, unpublished,
    wait_until,
)

DAEMON_APP_PREFIX = "flowforge-daemon"


# --- the database side ------------------------------------------------------------------

def db(dsn: str) -> psycopg.Connection:
    return psycopg.connect(dsn, autocommit=True)


def run_states(dsn: str) -> collections.Counter:
    with db(dsn) as conn:
        return collections.Counter(r[0] for r in conn.execute("SELECT state FROM flowforge.workflow_run"))



class Consumer:
    """What a push consumer does: heartbeat with the message's token (taking ownership), then complete.

    A refused token (FF004 stale, FF005 not running) means a redelivered or
    superseded message: it is just acked.
    """

    def __init__(self, dsn: str):
        self.conn = psycopg.connect(dsn, autocommit=True)
        self.completed = 0
        self.refused = 0

    def __call__(self, message: Received) -> None:
        p = message.payload
        try:
            with self.conn.transaction():
                self.conn.execute("SELECT flowforge.heartbeat(%s::uuid, %s::bigint, '30 seconds')",
                                  (p["task_run_id"], p["fencing_token"]))
            with self.conn.transaction():
                self.conn.execute("SELECT flowforge.complete(%s::uuid, %s::bigint, %s::jsonb)",
                                  (p["task_run_id"], p["fencing_token"], json.dumps({"done": p["task_key"]})))
            self.completed += 1
        except psycopg.Error as exc:
            if exc.sqlstate not in ("FF004", "FF005"):
                raise
            self.refused += 1

    def close(self) -> None:
        self.conn.close()


def daemon_backends(dsn: str) -> int:
    """Terminate the daemon's sessions on this test's database; return how many."""
    dbname = conninfo_to_dict(dsn)["dbname"]
    with db(dsn) as conn:
        return len(conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = %s AND application_name LIKE %s AND pid <> pg_backend_pid()",
            (dbname, DAEMON_APP_PREFIX + "%")).fetchall())


def count_daemon_backends(dsn: str) -> int:
    dbname = conninfo_to_dict(dsn)["dbname"]
    with db(dsn) as conn:
        return conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND application_name LIKE %s",
            (dbname, DAEMON_APP_PREFIX + "%")).fetchone()[0]


# --- scenarios --------------------------------------------------------------------

def test_push_runs_are_delivered_and_completed_by_a_consumer(migrated_dsn, broker, amqp_url, daemons):
    setup_push(migrated_dsn, broker.exchange, diamond=True)
    daemon = daemons(migrated_dsn, amqp_url)
    daemon.wait_for_event("amqp_connected")
    runs = 12
    start_runs(migrated_dsn, runs)
    consumer = Consumer(migrated_dsn)
    try:
        broker.consume(consumer, until=lambda: consumer.completed == runs * 4, timeout=30)
    finally:
        consumer.close()
    wait_until(lambda: run_states(migrated_dsn) == {"succeeded": runs}, 10, "every run succeeded")

    assert consumer.refused == 0
    ids = broker.ids()
    assert len(ids) == len(set(ids)) == runs * 4, "each task delivered exactly once"
    all_ids, published = outbox(migrated_dsn)
    assert set(ids) == all_ids == published
    first = broker.received[0]
    assert first.content_type == "application/json"
    assert first.delivery_mode == 2
    # Routed per database and organization, so two databases on one broker never swap messages.
    assert first.routing_key == f"{first.payload['database']}.default.{PUSH_QUEUE}"
    assert first.message_id == f"{first.payload['task_run_id']}:{first.payload['fencing_token']}"
    assert set(first.payload) == {"task_run_id", "fencing_token", "attempt", "workflow_run_id", "task_key",
                                  "organization_id", "database", "input"}
    # Dependents of b and c saw their upstream outputs in their input.
    d_inputs = [m.payload["input"] for m in broker.received if m.payload["task_key"] == "d"]
    assert all(set(i["deps"]) == {"b", "c"} for i in d_inputs)
    assert daemon.events("published")
    assert daemon.stop() == 0


def test_kill_9_mid_drain_then_restart_delivers_every_generation(migrated_dsn, broker, amqp_url, daemons):
    setup_push(migrated_dsn, broker.exchange)
    total, batch, crashes = 800, 25, 2
    start_runs(migrated_dsn, total)
    all_ids, _ = outbox(migrated_dsn)
    assert len(all_ids) == total

    # A killed daemon's batch comes back when its take lease runs out: keep that short here.
    lease = {"FLOWFORGE_OUTBOX_LEASE": "5"}
    for crash in range(crashes):
        daemon = daemons(migrated_dsn, amqp_url, "--batch-size", str(batch), env=lease)
        seen = len(broker.received)
        broker.consume(until=lambda: len(broker.received) > seen, timeout=20)  # it is publishing now
        daemon.kill()  # SIGKILL: no chance to finish the batch or mark anything
        broker.settle()
        _, published = outbox(migrated_dsn)
        assert published <= set(broker.ids()), "a row was marked published that never reached the broker"
        assert unpublished(migrated_dsn) > 0, f"crash {crash}: the daemon finished before the kill (test too easy)"

    daemon = daemons(migrated_dsn, amqp_url, "--batch-size", str(batch), env=lease)
    broker.consume(until=lambda: all_ids <= set(broker.ids()), timeout=30)
    wait_until(lambda: unpublished(migrated_dsn) == 0, 10, "every row marked published")
    assert daemon.stop() == 0
    broker.settle(quiet=0.3)

    ids = broker.ids()
    assert set(ids) == all_ids, "every generation delivered, nothing else"
    duplicates = len(ids) - len(set(ids))
    assert duplicates <= crashes * batch, f"{duplicates} duplicates for {crashes} crashes of batch {batch}"


def test_terminated_database_connections_are_reconnected(migrated_dsn, broker, amqp_url, daemons):
    setup_push(migrated_dsn, broker.exchange)
    daemon = daemons(migrated_dsn, amqp_url)
    daemon.wait_for_event("amqp_connected")
    start_runs(migrated_dsn, 3)
    broker.consume(until=lambda: len(set(broker.ids())) == 3, timeout=15)
    wait_until(lambda: count_daemon_backends(migrated_dsn) == 2, 10, "listen + work sessions")

    assert daemon_backends(migrated_dsn) == 2  # pg_terminate_backend on both of its sessions
    daemon.wait_for_event("pg_disconnected")
    start_runs(migrated_dsn, 5)
    broker.consume(until=lambda: len(set(broker.ids())) == 8, timeout=20)
    wait_until(lambda: unpublished(migrated_dsn) == 0, 10, "every row marked published")
    wait_until(lambda: count_daemon_backends(migrated_dsn) == 2, 10, "both sessions back")
    assert {e["role"] for e in daemon.events("pg_disconnected")} <= {"listen", "work"}
    assert daemon.stop() == 0


def test_broker_unreachable_marks_nothing_and_the_backlog_drains_later(migrated_dsn, broker, amqp_url, daemons):
    setup_push(migrated_dsn, broker.exchange)
    start_runs(migrated_dsn, 10)
    bad_url = f"amqp://guest:guest@127.0.0.1:{free_port()}/%2F"
    down = daemons(migrated_dsn, bad_url)
    wait_until(lambda: len(down.events("amqp_error")) >= 3, 15, "repeated amqp_error (backoff)")
    start_runs(migrated_dsn, 5)  # more work while the broker is away
    wait_until(lambda: len(down.events("amqp_error")) >= 4, 10, "still retrying")
    assert unpublished(migrated_dsn) == 15
    assert all("retry_in" in e for e in down.events("amqp_error"))
    delays = [float(e["retry_in"]) for e in down.events("amqp_error")]
    assert max(delays) <= 5.0 and delays[1] > delays[0] * 1.2, delays
    assert down.stop() == 0
    assert not down.events("published")

    up = daemons(migrated_dsn, amqp_url)
    all_ids, _ = outbox(migrated_dsn)
    broker.consume(until=lambda: all_ids <= set(broker.ids()), timeout=20)
    wait_until(lambda: unpublished(migrated_dsn) == 0, 10, "backlog marked published")
    assert len(broker.ids()) == 15
    assert up.stop() == 0


def test_two_daemons_never_deliver_a_message_twice(migrated_dsn, broker, amqp_url, daemons):
    setup_push(migrated_dsn, broker.exchange)
    start_runs(migrated_dsn, 600)
    first = daemons(migrated_dsn, amqp_url, "--batch-size", "20")
    second = daemons(migrated_dsn, amqp_url, "--batch-size", "20")
    for _ in range(4):  # and more work while both drain
        start_runs(migrated_dsn, 50)
    all_ids, _ = outbox(migrated_dsn)
    assert len(all_ids) == 800
    broker.consume(until=lambda: all_ids <= set(broker.ids()), timeout=40)
    wait_until(lambda: unpublished(migrated_dsn) == 0, 10, "every row marked published")
    assert first.stop() == 0 and second.stop() == 0
    broker.settle(quiet=0.3)
    ids = broker.ids()
    dupes = [i for i, n in collections.Counter(ids).items() if n > 1]
    assert not dupes, f"{len(dupes)} message(s) delivered twice"
    assert len(ids) == 800


def test_missing_exchange_is_declared_and_unroutable_rows_wait_for_a_binding(migrated_dsn, broker, amqp_url, daemons):
    broker.drop_exchange()
    setup_push(migrated_dsn, broker.exchange)
    start_runs(migrated_dsn, 4)
    daemon = daemons(migrated_dsn, amqp_url)
    wait_until(lambda: daemon.events("publish_failed"), 15, "publish_failed")
    assert {e["reason"] for e in daemon.events("publish_failed")} == {"unroutable"}
    assert broker.exchange_exists(), "the daemon declared the exchange"
    assert unpublished(migrated_dsn) == 4, "returned (unroutable) messages are not marked published"
    assert not daemon.events("published")

    broker.bind("#")  # a queue appears: the next poll delivers them
    broker.consume(until=lambda: len(set(broker.ids())) == 4, timeout=15)
    wait_until(lambda: unpublished(migrated_dsn) == 0, 10, "every row marked published")
    assert daemon.stop() == 0


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_stops_cleanly_with_exit_0(migrated_dsn, amqp_url, daemons, sig):
    daemon = daemons(migrated_dsn, amqp_url)
    daemon.wait_for_event("amqp_connected")
    assert daemon.stop(sig) == 0
    stopped = daemon.events("stopped")
    assert len(stopped) == 1 and stopped[0]["signal"] == signal.Signals(sig).name
    assert "Traceback" not in daemon.log


def test_a_stopped_daemon_gives_its_duties_back_at_once(migrated_dsn, daemons):
    # Two daemons split the organizations; a clean stop frees the leaver's at once (no duty lease to wait out):
    # the survivor serves every organization at its next tick, and the leaver no longer counts as live.
    with psycopg.connect(migrated_dsn, autocommit=True) as conn:
        conn.execute("SELECT flowforge.create_organization('gone-' || g, 'Gone ' || g) FROM generate_series(1, 3) g")
        conn.execute("UPDATE flowforge.setting SET duty_lease = '10 minutes'")
    stay = daemons(migrated_dsn, None, "--engine-id", "stay")
    stay.wait_for_event("serving")
    leaver = daemons(migrated_dsn, None, "--engine-id", "leaver")

    def served(engine: str) -> int:
        with psycopg.connect(migrated_dsn) as conn:
            return conn.execute("SELECT count(*) FROM flowforge.engine WHERE engine_id = %s AND status = 'serving' "
                                "AND lease_expires_at > now()", (engine,)).fetchone()[0]

    wait_until(lambda: served("leaver") == 2 and served("stay") == 2, 15, "the two daemons split four organizations")
    assert leaver.stop() == 0
    left = leaver.events("left_duties")
    assert len(left) == 1 and left[0]["organizations"] == "2", leaver.log
    # With a ten-minute lease, only the give-back can hand the two over within seconds.
    wait_until(lambda: served("stay") == 4, 15, "the survivor serves all four organizations")
    assert served("leaver") == 0
    with psycopg.connect(migrated_dsn) as conn:
        live = dict(conn.execute("SELECT engine_id, live FROM flowforge.list_engines()").fetchall())
    assert live == {"stay": True, "leaver": False}
    assert stay.stop() == 0


def test_unmigrated_database_is_refused_with_one_line(fresh_dsn, amqp_url, daemons):
    daemon = daemons(fresh_dsn, amqp_url)
    assert daemon.proc.wait(timeout=20) == 2
    lines = daemon.log.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("flowforge: error:") and "flowforge migrate" in lines[0]
    with db(fresh_dsn) as conn:  # it never migrates by itself
        assert conn.execute("SELECT to_regnamespace('flowforge')").fetchone()[0] is None


def test_newer_schema_version_is_refused_with_one_line(migrated_dsn, amqp_url, daemons):
    with db(migrated_dsn) as conn:
        conn.execute("INSERT INTO _yoyo_migration (migration_hash, migration_id, applied_at_utc) "
                     "VALUES (md5('future'), '9999_from_the_future', now())")
    daemon = daemons(migrated_dsn, amqp_url)
    assert daemon.proc.wait(timeout=20) == 2
    lines = daemon.log.splitlines()
    assert len(lines) == 1, lines
    assert "9999_from_the_future" in lines[0] and "newer" in lines[0]


def test_refused_messages_do_not_block_newer_ones(migrated_dsn, broker, amqp_url, daemons):
    # 12 messages for an exchange nobody bound a queue to, taken first (oldest),
    # then 4 for the bound exchange; batches of 5 would take only the refused
    # ones forever if refused messages were offered again at once.
    blocked_exchange = f"{broker.exchange}.nobody"
    with db(migrated_dsn) as conn:
        conn.execute("SELECT flowforge.define_workflow(%s::jsonb)",
                     (json.dumps({"name": "blocked", "tasks": [{"key": "only", "queue": "blocked"}]}),))
        conn.execute("SELECT flowforge.configure_queue('blocked', %s::text)", (blocked_exchange,))
        conn.execute("SELECT flowforge.start_run('blocked') FROM generate_series(1, 12)")
    setup_push(migrated_dsn, broker.exchange)
    start_runs(migrated_dsn, 4)
    daemon = daemons(migrated_dsn, amqp_url, "--batch-size", "5")
    try:
        broker.consume(until=lambda: len(set(broker.ids())) == 4, timeout=20)
        with db(migrated_dsn) as conn:
            deferred = conn.execute(
                "SELECT count(*) FILTER (WHERE publish_attempts >= 1 AND last_error LIKE '%%unroutable%%'), "
                "       count(*) FILTER (WHERE published_at IS NOT NULL) "
                "FROM flowforge.outbox_message WHERE exchange = %s", (blocked_exchange,)).fetchone()
            bound_published = conn.execute(
                "SELECT count(*) FROM flowforge.outbox_message WHERE exchange = %s AND published_at IS NOT NULL",
                (broker.exchange,)).fetchone()[0]
        assert deferred == (12, 0), "every refused message was deferred, none marked published"
        wait_until(lambda: bound_published == 4 or unpublished(migrated_dsn) == 12, 10, "the bound messages marked")
        assert {e["reason"] for e in daemon.events("publish_failed")} == {"unroutable"}
    finally:
        assert daemon.stop() == 0
        cleanup = pika.BlockingConnection(pika.URLParameters(amqp_url))
        cleanup.channel().exchange_delete(blocked_exchange)
        cleanup.close()


def work_backend(dsn: str, exclude: set[int] = frozenset()) -> dict | None:
    """The daemon's work session (pid, state, whether it holds a transaction id), if exactly one is connected."""
    with db(dsn) as conn:
        rows = conn.execute(
            "SELECT pid, state, backend_xid IS NOT NULL FROM pg_stat_activity "
            "WHERE datname = current_database() AND application_name = 'flowforge-daemon-work'").fetchall()
    rows = [r for r in rows if r[0] not in exclude]
    return {"pid": rows[0][0], "state": rows[0][1], "has_xid": rows[0][2]} if len(rows) == 1 else None


def outbox_locks(dsn: str, pid: int) -> int:
    with db(dsn) as conn:
        return conn.execute("SELECT count(*) FROM pg_locks WHERE pid = %s AND relation = "
                            "'flowforge.outbox_message'::regclass", (pid,)).fetchone()[0]


def leased(dsn: str) -> set[str]:
    """Message ids of unpublished rows a daemon has taken (their next attempt pushed past now)."""
    with db(dsn) as conn:
        return {r[0] for r in conn.execute(
            "SELECT task_run_id::text || ':' || fencing_token_snapshot FROM flowforge.outbox_message "
            "WHERE published_at IS NULL AND next_attempt_at > now()")}


def test_a_hung_broker_holds_no_transaction_or_row_lock(migrated_dsn, broker, amqp_url, daemons, proxies):
    """Issue 12, item 7: the drain kept its transaction (and the rows' locks) open across broker I/O.

    The daemon's broker connection goes through a forwarder that is then
    frozen (SIGSTOP): connected, silent.  While the daemon waits for confirms
    of the batch it took, its session holds no transaction and no outbox row
    lock, and a second daemon publishes every other row.
    """
    setup_push(migrated_dsn, broker.exchange)
    proxy = proxies(5672)
    lease = {"FLOWFORGE_OUTBOX_LEASE": "20"}
    try:
        hung_url = f"amqp://guest:guest@127.0.0.1:{proxy.port}/%2F"
        hung = daemons(migrated_dsn, hung_url, "--batch-size", "5", env=lease)
        hung.wait_for_event("amqp_connected")
        first = wait_until(lambda: work_backend(migrated_dsn), 10, "the daemon's work session")
        proxy.freeze()
        start_runs(migrated_dsn, 20)

        def taken_and_waiting():
            session = work_backend(migrated_dsn)
            return session is not None and (session["state"] == "idle in transaction"
                                            or len(leased(migrated_dsn)) == 5)
        wait_until(taken_and_waiting, 15, "the hung daemon to take a batch")
        session = work_backend(migrated_dsn)
        assert session["pid"] == first["pid"]
        assert session["state"] == "idle" and not session["has_xid"], session
        assert outbox_locks(migrated_dsn, session["pid"]) == 0
        held = leased(migrated_dsn)
        assert len(held) == 5

        other = daemons(migrated_dsn, amqp_url, "--batch-size", "5", env=lease)
        broker.consume(until=lambda: len(set(broker.ids())) >= 15, timeout=20)
        assert not held & set(broker.ids()), "the other daemon published rows the hung one holds"
        assert not hung.events("published"), "the frozen broker confirmed something"
        assert outbox_locks(migrated_dsn, first["pid"]) == 0  # still hung, still holding nothing
    finally:
        proxy.thaw()

    all_ids, _ = outbox(migrated_dsn)
    broker.consume(until=lambda: all_ids <= set(broker.ids()), timeout=60)
    wait_until(lambda: unpublished(migrated_dsn) == 0, 30, "every row marked published")
    assert hung.stop() == 0 and other.stop() == 0
    broker.settle(quiet=0.3)
    ids = broker.ids()
    assert set(ids) == all_ids
    assert len(ids) - len(all_ids) <= 5, "more than the hung batch was published twice"
