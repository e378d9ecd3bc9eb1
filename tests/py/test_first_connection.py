"""Workers and the daemon wait for the database from their first connection on (issue 12, item 4).

A worker whose first connection failed exited; with every slot of a login
taken (SQLSTATE 53300) it never came back, and its leases outlived their
expiry.  Now the first connection is retried like any other, with bounded
backoff and a line per attempt.  The server itself is never restarted: a
port that nothing listens on until a forwarder starts there, and a
dedicated login whose ``CONNECTION LIMIT`` is 0 and then lifted.
"""

from __future__ import annotations

import logging
import uuid

import psycopg
import pytest
from psycopg import sql as pgsql
from psycopg.conninfo import make_conninfo

from helpers_runtime import (  # noqa: F401 - fixtures
    daemons, define, fast_worker, free_port, proxies, running, sql, start, wait_finished, wait_until,
)


def retries_logged(caplog, text: str) -> int:
    return sum(1 for r in caplog.records
               if r.name.startswith("flowforge.worker") and "retrying" in r.getMessage() and text in r.getMessage())


def serve_three_runs(dsn_for_setup: str) -> list:
    define(dsn_for_setup, {"name": "early", "tasks": [{"key": "a"}, {"key": "b", "depends_on": ["a"]}]})
    return [start(dsn_for_setup, "early", {"n": n}) for n in range(3)]


def register(worker) -> None:
    worker.register("a", lambda ctx, input: {"n": input["run"]["n"]})
    worker.register("b", lambda ctx, input: {"n": input["deps"]["a"]["n"] + 1})


def test_worker_started_before_the_database_is_reachable_comes_up_and_drains(migrated_dsn, running, proxies, caplog):
    caplog.set_level(logging.WARNING)
    runs = serve_three_runs(migrated_dsn)
    port = free_port()  # nothing listens here yet: every connection is refused
    worker = fast_worker(make_conninfo(migrated_dsn, host="127.0.0.1", port=str(port)), name="early-bird")
    register(worker)
    running(worker)
    wait_until(lambda: retries_logged(caplog, "cannot connect") >= 3, 30, "the worker to retry its first connection")
    assert not worker.join(0), "the worker gave up"

    proxies(5432, port=port)  # the database "comes up" on that port
    for run_id in runs:
        assert wait_finished(migrated_dsn, run_id, timeout=30) == "succeeded"
    worker.stop()
    assert worker.join(15)


@pytest.fixture
def full_login(admin_dsn, migrated_dsn):
    """A login of the default organization (worker and daemon rights) that may open no connection at all."""
    role = f"ff_full_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_dsn, autocommit=True) as admin:
        admin.execute(pgsql.SQL("CREATE ROLE {} LOGIN CONNECTION LIMIT 0").format(pgsql.Identifier(role)))
    sql(migrated_dsn, "SELECT flowforge.add_member('default', %s, 'member')", role)
    with psycopg.connect(admin_dsn, autocommit=True) as admin:
        admin.execute(pgsql.SQL("GRANT flowforge_daemon TO {}").format(pgsql.Identifier(role)))

    def open_up() -> None:
        with psycopg.connect(admin_dsn, autocommit=True) as admin:
            admin.execute(pgsql.SQL("ALTER ROLE {} CONNECTION LIMIT -1").format(pgsql.Identifier(role)))

    try:
        yield make_conninfo(migrated_dsn, user=role), open_up
    finally:
        with psycopg.connect(migrated_dsn, autocommit=True) as conn:
            conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", (role,))
            conn.execute(pgsql.SQL("DROP OWNED BY {}").format(pgsql.Identifier(role)))
        with psycopg.connect(admin_dsn, autocommit=True) as admin:
            admin.execute(pgsql.SQL("DROP ROLE IF EXISTS {}").format(pgsql.Identifier(role)))


def test_a_full_login_is_retried_by_workers_and_the_daemon(migrated_dsn, full_login, running, daemons, caplog):
    caplog.set_level(logging.WARNING)
    dsn, open_up = full_login
    runs = serve_three_runs(migrated_dsn)
    worker = fast_worker(dsn, name="squeezed")
    register(worker)
    running(worker)
    daemon = daemons(dsn, None)
    wait_until(lambda: retries_logged(caplog, "too many connections") >= 3, 30, "the worker to retry 53300")
    wait_until(lambda: len(daemon.events("pg_reconnect")) >= 3, 30, "the daemon to retry 53300")
    assert all("too many connections" in line for line in daemon.log.splitlines() if "event=pg_reconnect" in line)
    assert not worker.join(0) and daemon.proc.poll() is None

    open_up()  # an operator raises the limit (or other sessions end)
    for run_id in runs:
        assert wait_finished(migrated_dsn, run_id, timeout=30) == "succeeded"
    daemon.wait_for_event("started", timeout=20)
    worker.stop()
    assert worker.join(15)
    assert daemon.stop() == 0
