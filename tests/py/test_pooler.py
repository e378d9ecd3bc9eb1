"""Workers and the daemon behind PgBouncer in transaction pool mode (issue 12, item 8).

Behind a transaction pooler consecutive transactions of one client run on
different server connections, so psycopg's server-side prepared statements
fail (26000 "does not exist" / 42P05 "already exists") and LISTEN registers
on a server connection the client no longer holds: notifications silently
stop.  ``FLOWFORGE_POOLER=transaction`` says so up front (no prepared
statements, no LISTEN: polling); without it the SDK and the daemon find out
themselves — a NOTIFY they send themselves after LISTEN never arrives
(``listen_not_delivering``), or a prepared-statement error — and switch.

A real pgbouncer (the Debian package; ``make test`` installs it) on a free
loopback port, pool_mode transaction, two server connections per database.
"""

from __future__ import annotations

import logging

import pytest
from psycopg.conninfo import conninfo_to_dict

from flowforge.db import pooler
from helpers_runtime import (  # noqa: F401 - fixtures
    PgBouncer, amqp_url, broker, daemons, define, fast_worker, outbox, running, setup_push, start, start_runs, tasks,
    unpublished, wait_finished, wait_until,
)

MODES = ["configured", "detected"]


@pytest.fixture
def pgbouncer():
    bouncer = PgBouncer(pool_mode="transaction")
    try:
        yield bouncer
    finally:
        bouncer.stop()


@pytest.fixture
def pooler_mode(request, monkeypatch):
    """FLOWFORGE_POOLER=transaction, or nothing set and the process's detection reset afterwards."""
    monkeypatch.setattr(pooler, "_detected", None)  # whatever this test detects stays in this test
    if request.param == "configured":
        monkeypatch.setenv(pooler.POOLER_ENV, "transaction")
    else:
        monkeypatch.delenv(pooler.POOLER_ENV, raising=False)
    return request.param


def via(bouncer: PgBouncer, dsn: str) -> str:
    return bouncer.dsn(conninfo_to_dict(dsn)["dbname"])


@pytest.mark.parametrize("pooler_mode", MODES, indirect=True)
def test_a_worker_behind_a_transaction_pooler_drains_every_run(migrated_dsn, pgbouncer, pooler_mode, running,
                                                               caplog):
    caplog.set_level(logging.INFO)
    define(migrated_dsn, {"name": "chain", "tasks": [
        {"key": "a"}, {"key": "b", "depends_on": ["a"]}, {"key": "c", "depends_on": ["b"]}]})
    runs = [start(migrated_dsn, "chain", {"n": n}) for n in range(15)]  # 45 claims, completions, heartbeats
    worker = fast_worker(via(pgbouncer, migrated_dsn), name="pooled", concurrency=3)
    for key in "abc":
        worker.register(key, lambda ctx, input, key=key: {"key": key})
    running(worker)
    for run_id in runs:
        assert wait_finished(migrated_dsn, run_id, timeout=60) == "succeeded", tasks(migrated_dsn, run_id)
    assert worker.stats == {"completed": 45, "failed": 0, "dropped": 0}

    messages = [r.getMessage() for r in caplog.records if r.name.startswith("flowforge")]
    assert not [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    # Nothing was refused and retried over a prepared statement (a detection, at most, switched them off).
    assert not [m for m in messages if "retrying" in m or "refused" in m], messages
    if pooler_mode == "detected":
        wait_until(lambda: any("listen_not_delivering" in r.getMessage() for r in caplog.records), 15,
                   "the worker to find that LISTEN does not deliver")
    else:
        assert any("transaction pooler" in m and "polling" in m for m in messages), messages
        assert not any("listen_not_delivering" in m or "SQLSTATE" in m for m in messages), messages


@pytest.mark.parametrize("pooler_mode", MODES, indirect=True)
def test_the_daemon_behind_a_transaction_pooler_publishes_every_row(migrated_dsn, pgbouncer, pooler_mode, broker,
                                                                    amqp_url, daemons):
    setup_push(migrated_dsn, broker.exchange)
    env = {pooler.POOLER_ENV: "transaction"} if pooler_mode == "configured" else {}
    daemon = daemons(via(pgbouncer, migrated_dsn), amqp_url, "--batch-size", "3", env=env)
    daemon.wait_for_event("started")
    for _ in range(10):  # ten transactions that write outbox rows, 40 rows, over many polls and ticks
        start_runs(migrated_dsn, 4)
    all_ids, _ = outbox(migrated_dsn)
    broker.consume(until=lambda: all_ids <= set(broker.ids()), timeout=60)
    wait_until(lambda: unpublished(migrated_dsn) == 0, 30, "every row marked published")
    assert daemon.stop() == 0
    assert "Traceback" not in daemon.log
    if pooler_mode == "configured":
        assert daemon.events("started")[0]["pooler"] == "transaction"
        assert not daemon.events("pg_error") and not daemon.events("listen_not_delivering"), daemon.log
    else:
        assert daemon.events("listen_not_delivering"), daemon.log
