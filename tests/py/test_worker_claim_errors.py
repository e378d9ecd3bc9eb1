"""No exception from a claim or a payload ends a worker (issue 12, item 6).

A 10,000-deep JSON input raised RecursionError inside the claim loop and
killed the worker; the task then killed the next worker until its attempts
ran out.  SQL now refuses inputs nested deeper than 64 levels, but
PostgreSQL still accepts JSON Python refuses: a number of 5001 digits
(``int`` conversion stops at 4300).  Such a task is failed for good with the
reason — at once (the lease is a minute, no reaper runs) — and the worker
goes on.  Any other exception from a claim is logged and backed off from.
"""

from __future__ import annotations

import logging
import uuid

from flowforge.client import Client
from helpers_runtime import (  # noqa: F401 - fixtures
    amqp_url, daemons, define, events, fast_worker, running, sql, start, tasks, wait_finished, wait_until,
)

# jsonb keeps this as a 5001-digit integer; Python's json.loads refuses to convert it.
HUGE_NUMBER_INPUT = '{"n": 1e5000}'


def start_raw(dsn: str, workflow: str, input_text: str):
    return sql(dsn, "SELECT flowforge.start_run(%s, %s::jsonb)", workflow, input_text)[0][0]


def assert_failed_for_good_as_undecodable(dsn: str, run_id) -> None:
    assert wait_finished(dsn, run_id, timeout=20) == "failed"
    task = tasks(dsn, run_id)["add"]
    assert task["attempt"] == 1 and task["state"] == "failed", task
    assert task["error"].startswith("task input cannot be decoded: ValueError('Exceeds the limit (4300 digits)"), task
    kinds = [e[1] for e in events(dsn, run_id)]
    assert "lease_expired" not in kinds and "retry_scheduled" not in kinds, kinds


def add_one(ctx, input):
    return {"n": input["run"]["n"] + 1}


def test_an_input_python_cannot_decode_fails_its_task_and_the_worker_goes_on(migrated_dsn, running):
    define(migrated_dsn, {"name": "numbers", "tasks": [{"key": "add", "max_attempts": 3}]})
    bad = start_raw(migrated_dsn, "numbers", HUGE_NUMBER_INPUT)
    good = start(migrated_dsn, "numbers", {"n": 1})  # claimed in the same batch as the bad one
    worker = fast_worker(migrated_dsn, concurrency=2, lease=60)
    worker.register("add", add_one)
    running(worker)

    assert wait_finished(migrated_dsn, good) == "succeeded"
    assert_failed_for_good_as_undecodable(migrated_dsn, bad)
    later = start(migrated_dsn, "numbers", {"n": 41})
    assert wait_finished(migrated_dsn, later) == "succeeded"
    assert tasks(migrated_dsn, later)["add"]["output"] == {"n": 42}
    assert not worker.join(0), "the worker ended"


def test_any_exception_from_a_claim_is_logged_and_backed_off(migrated_dsn, running, monkeypatch, caplog):
    caplog.set_level(logging.ERROR)
    real_claim = Client.claim
    failures = []

    def flaky_claim(self, *args, **kwargs):
        if len(failures) < 3:
            failures.append(1)
            raise RuntimeError("the claim blew up in Python")
        return real_claim(self, *args, **kwargs)

    monkeypatch.setattr(Client, "claim", flaky_claim)
    define(migrated_dsn, {"name": "numbers", "tasks": [{"key": "add"}]})
    run_id = start(migrated_dsn, "numbers", {"n": 1})
    worker = fast_worker(migrated_dsn)
    worker.register("add", add_one)
    running(worker)
    assert wait_finished(migrated_dsn, run_id) == "succeeded"
    assert len(failures) == 3
    logged = [r for r in caplog.records if "the claim blew up in Python" in (r.exc_text or r.getMessage())]
    assert len(logged) == 3
    assert not worker.join(0)


def test_a_pushed_task_whose_input_cannot_be_decoded_fails_for_good(migrated_dsn, amqp_url, daemons, running):
    queue, exchange = f"numbers{uuid.uuid4().hex[:6]}", f"fftest.{uuid.uuid4().hex[:8]}"
    sql(migrated_dsn, "SELECT flowforge.configure_queue(%s, %s)", queue, exchange)
    define(migrated_dsn, {"name": "numbers", "tasks": [{"key": "add", "queue": queue, "max_attempts": 3}]})
    worker = fast_worker(migrated_dsn, queues=[], push_queues=[queue], amqp_url=amqp_url, lease=60)
    worker.register("add", add_one)
    running(worker)
    amqp_queue = sql(migrated_dsn, "SELECT amqp_queue FROM flowforge.queue_settings(ARRAY[%s])", queue)[0][0]
    try:
        bad = start_raw(migrated_dsn, "numbers", HUGE_NUMBER_INPUT)
        good = start(migrated_dsn, "numbers", {"n": 1})
        daemons(migrated_dsn, amqp_url)
        assert wait_finished(migrated_dsn, good, timeout=30) == "succeeded"
        assert_failed_for_good_as_undecodable(migrated_dsn, bad)
    finally:
        import pika
        connection = pika.BlockingConnection(pika.URLParameters(amqp_url))
        connection.channel().queue_delete(amqp_queue)
        connection.channel().exchange_delete(exchange)
        connection.close()
