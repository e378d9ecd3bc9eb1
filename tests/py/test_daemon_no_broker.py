"""A pull-only deployment runs ``flowforge daemon`` with no broker: periodic duties only.

Issue 11, item 1: the daemon refused to start without ``--amqp-url``, so a
deployment without RabbitMQ had no lease reaper — a task whose worker died
stayed running with an expired lease until someone ran ``SELECT
flowforge.tick()`` by hand.  Now the daemon runs ``tick()`` without a broker,
and says that push work waits for one instead of pretending to publish it.
"""

from __future__ import annotations

from helpers_runtime import daemons, define, events, sql, start, tasks, wait_until  # noqa: F401 - fixtures


def _claim_and_die(dsn: str) -> None:
    """A worker claims with a one-second lease and is never heard of again."""
    sql(dsn, "SELECT * FROM flowforge.claim(queues => ARRAY['default'], worker => 'killed-worker', "
             "lease => '1 second')")


def test_daemon_without_a_broker_reaps_expired_leases(migrated_dsn, daemons):
    define(migrated_dsn, {"name": "lonely", "tasks": [{"key": "only", "backoff": "0 seconds"}]})
    run_id = start(migrated_dsn, "lonely")
    _claim_and_die(migrated_dsn)
    assert tasks(migrated_dsn, run_id)["only"]["state"] == "running"

    daemon = daemons(migrated_dsn, None)  # no --amqp-url, no FLOWFORGE_AMQP_URL
    wait_until(lambda: any(e[1] == "lease_expired" for e in events(migrated_dsn, run_id)) or
               daemon.proc.poll() is not None, 20, "the daemon's tick() to reap the lease")
    assert daemon.proc.poll() is None, f"the daemon exited without a broker:\n{daemon.log}"
    task = tasks(migrated_dsn, run_id)["only"]
    assert task["state"] == "ready" and task["attempt"] == 2, task
    started = daemon.events("started")
    assert len(started) == 1 and started[0]["amqp"] == "none"
    wait_until(lambda: daemon.events("tick"), 10, "a tick line counting the reaped lease")
    assert daemon.events("tick")[0]["reaped"] == "1"
    assert daemon.stop() == 0
    assert "Traceback" not in daemon.log


def test_daemon_without_a_broker_says_that_push_work_waits_and_takes_nothing(migrated_dsn, daemons):
    sql(migrated_dsn, "SELECT flowforge.configure_queue('emails', 'flowforge.tasks')")
    define(migrated_dsn, {"name": "mail", "tasks": [{"key": "send", "queue": "emails"}]})
    start(migrated_dsn, "mail")
    start(migrated_dsn, "mail")

    daemon = daemons(migrated_dsn, None)
    daemon.wait_for_event("push_waiting")
    waiting = daemon.events("push_waiting")[0]
    assert waiting["unpublished"] == "2"
    assert "FLOWFORGE_AMQP_URL" in daemon.log  # it says what to do
    # Nothing was taken: the rows stay available to a daemon that has a broker.
    taken = sql(migrated_dsn, "SELECT count(*) FROM flowforge.outbox_message "
                              "WHERE published_at IS NULL AND next_attempt_at <= now()")[0][0]
    assert taken == 2
    assert daemon.stop() == 0
    assert not daemon.events("published") and not daemon.events("amqp_error")
