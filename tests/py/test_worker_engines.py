"""One @worker.task registry serves both queues: DAG tasks and work items (issues 13, 14, 15 — the SDK).

A graph node's visit, a machine's action and a fan-out child are work items
(``claim_work`` / ``heartbeat_work`` / ``complete_work`` / ``fail_work``); a
DAG task is a task run (``claim`` ...).  The handler is the same function
either way; these tests check that work items get every guarantee tasks get:
the handler filter, heartbeats that extend the lease, a lost lease dropping
the result, an output over the limits failing for good at once, retries
decided by ``fail_work(retryable)``, and one concurrency limit for both
queues.  No assertion depends on timing: waits poll a condition against a
deadline, and bounds are upper bounds.
"""

from __future__ import annotations

import threading
import time

from flowforge import errors
from helpers_runtime import amqp_url, fast_worker, running, sql, wait_until  # noqa: F401 - fixtures
from helpers_sdk_engines import call, get_run, order, photos, review_loop, wait_run


class Peak:
    """How many handlers ran at once, at most (an upper bound the test can assert)."""

    def __init__(self):
        self.now = 0
        self.peak = 0
        self._lock = threading.Lock()

    def __enter__(self):
        with self._lock:
            self.now += 1
            self.peak = max(self.peak, self.now)

    def __exit__(self, *exc):
        with self._lock:
            self.now -= 1


def test_a_worker_serves_a_graph_run_that_cycles(migrated_dsn, running):
    call(migrated_dsn, lambda api: api.define_workflow(review_loop()))
    run_id = call(migrated_dsn, lambda api: api.start_run("review_loop", {"title": "t"}))
    seen = []
    worker = fast_worker(migrated_dsn, name="graph-worker")

    @worker.task("draft")
    def draft(ctx, input):
        seen.append((ctx.task_key, ctx.engine, ctx.task_run_id, ctx.work_item_id == ctx.id, ctx.run_id, input))
        return {"text": f"v{input['visit']}"}

    @worker.task("review")
    def review(ctx, input):
        seen.append((ctx.task_key, ctx.engine, ctx.task_run_id, ctx.work_item_id == ctx.id, ctx.run_id, input))
        return {"approved": input["visit"] == 3}

    @worker.task("publish")
    def publish(ctx, input):
        return {"url": "u"}

    running(worker)
    run = wait_run(migrated_dsn, run_id)
    assert run["state"] == "succeeded" and run["reason"] == 'reached final node "done"'
    assert run["path"] == ["draft", "review", "draft", "review", "draft", "review", "publish", "done"]
    assert run["run_counts"] == {"draft": 3, "review": 3, "publish": 1, "done": 1}
    assert run["data"] == {"title": "t", "text": "v3", "approved": True, "url": "u"}
    # The handler got the node's payload as its input, and a context like a task's.
    first = seen[0]
    assert first[:5] == ("draft", "graph", None, True, run_id)
    assert first[5] == {"state": {"title": "t"}, "node": "draft", "visit": 1}
    second_review = [s for s in seen if s[0] == "review"][1]
    assert second_review[5]["visit"] == 2 and second_review[5]["state"]["text"] == "v2"
    assert worker.stats == {"completed": 7, "failed": 0, "dropped": 0}
    assert worker._stats.by_unit["work_item"]["completed"] == 7 and worker._stats.by_unit["task"]["completed"] == 0
    # Every item was claimed under the worker's name.
    agents = {r[0] for r in sql(migrated_dsn, "SELECT DISTINCT agent_id FROM flowforge.work_item WHERE run_id = %s",
                                run_id)}
    assert agents == {"graph-worker"}


def test_a_machine_action_with_a_failed_attempt_is_retried(migrated_dsn, running):
    call(migrated_dsn, lambda api: api.define_workflow(order()))
    run_id = call(migrated_dsn, lambda api: api.start_run("order", {"customer": "c1"}))
    attempts = []
    worker = fast_worker(migrated_dsn)

    @worker.task("ship")
    def ship(ctx, input):
        attempts.append((ctx.attempt, ctx.engine, input))
        if ctx.attempt == 1:
            raise ConnectionError("carrier down")
        return {"tracking": "T-1"}

    running(worker)
    outcome = call(migrated_dsn, lambda api: api.send_event(run_id, "paid", {"amount": 120}, "pay-1"))
    assert outcome["outcome"] == "applied" and outcome["state"] == "shipping" and outcome["suspended"] is True
    run = wait_run(migrated_dsn, run_id)
    assert run["state"] == "succeeded" and run["machine_state"] == "delivered"
    assert run["context"] == {"total": 100, "customer": "c1", "paid_amount": 120, "tracking": "T-1"}
    assert [a[0] for a in attempts] == [1, 2]
    assert attempts[0][1] == "statemachine"
    assert attempts[0][2] == {"state": "shipping", "context": {"total": 100, "customer": "c1", "paid_amount": 120}}
    # fail_work(retryable) decided the retry; the second attempt completed the same item.
    (item,) = run["items"]
    assert item["status"] == "completed" and item["attempt"] == 2
    kinds = [e["kind"] for e in call(migrated_dsn, lambda api: api.run_events(run_id)) if e["task_key"] == "ship"]
    assert kinds.count("retry_scheduled") == 1 and kinds.count("completed") == 1, kinds
    failed = [e for e in call(migrated_dsn, lambda api: api.run_events(run_id)) if e["kind"] == "retry_scheduled"]
    assert failed[0]["detail"]["error"] == "ConnectionError('carrier down')"
    assert worker.stats == {"completed": 1, "failed": 1, "dropped": 0}


def test_a_permanent_error_fails_a_work_item_without_retry(migrated_dsn, running):
    from flowforge import PermanentError

    call(migrated_dsn, lambda api: api.define_workflow(order()))
    run_id = call(migrated_dsn, lambda api: api.start_run("order"))
    worker = fast_worker(migrated_dsn)

    @worker.task("ship")
    def ship(ctx, input):
        raise PermanentError("address does not exist")

    running(worker)
    call(migrated_dsn, lambda api: api.send_event(run_id, "paid", {"amount": 100}))
    # on_error: the machine rests in needs_attention (live) once the action failed for good.
    wait_until(lambda: get_run(migrated_dsn, run_id)["machine_state"] == "needs_attention", 20, "on_error")
    (item,) = get_run(migrated_dsn, run_id)["items"]
    assert item["status"] == "failed" and item["attempt"] == 1 and "address does not exist" in item["error"]


def test_a_1000_element_map_through_the_sdk_within_both_concurrency_limits(migrated_dsn, running):
    """1,000 children, two workers of concurrency 4, the map's max_concurrency 5: every element runs once,
    the output is in order, and no more than 5 handlers ever ran at once (the map's bound) — nor more than
    4 in one worker (the worker's)."""
    call(migrated_dsn, lambda api: api.define_workflow(photos(max_concurrency=5)))
    elements = list(range(1000))
    run_id = call(migrated_dsn, lambda api: api.start_run("photos", {"photos": elements, "size": 64}))
    executions: dict[int, int] = {}
    lock = threading.Lock()
    overall = Peak()
    per_worker = {}

    def make(name):
        peak = per_worker[name] = Peak()
        worker = fast_worker(migrated_dsn, name=name, concurrency=4)

        @worker.task("resize")
        def resize(ctx, input):
            with overall, peak:
                with lock:
                    executions[input["index"]] = executions.get(input["index"], 0) + 1
                assert input["input"] == {"run": {"size": 64}, "deps": {}}  # the array is left out
                return {"i": input["index"], "doubled": input["item"] * 2}

        @worker.task("album")
        def album(ctx, input):
            return {"count": len(input["deps"]["resize"]), "first": input["deps"]["resize"][0]}
        return running(worker)

    workers = [make("map-a"), make("map-b")]
    run = wait_run(migrated_dsn, run_id, timeout=120, tick=False)
    assert run["state"] == "succeeded", run
    assert executions == {i: 1 for i in elements}
    by_key = {t["key"]: t for t in run["tasks"]}
    assert by_key["resize"]["output"] == [{"i": i, "doubled": 2 * i} for i in elements]
    assert by_key["album"]["output"] == {"count": 1000, "first": {"i": 0, "doubled": 0}}
    fan = by_key["resize"]["fan_out"]
    assert (fan["idx"], fan["total"], fan["succeeded"], fan["failed"], fan["live"]) == (1000, 1000, 1000, 0, 0)
    assert overall.peak <= 5, overall.peak
    assert all(p.peak <= 4 for p in per_worker.values()), {n: p.peak for n, p in per_worker.items()}
    assert sum(w._stats.by_unit["work_item"]["completed"] for w in workers) == 1000
    assert sum(w._stats.by_unit["task"]["completed"] for w in workers) == 1


def test_one_concurrency_limit_for_tasks_and_work_items(migrated_dsn, running):
    """A worker of concurrency 2 with DAG tasks and map children waiting: never more than 2 handlers at once."""
    call(migrated_dsn, lambda api: api.define_workflow(photos(max_concurrency=20)))
    call(migrated_dsn, lambda api: api.define_workflow({"name": "plain", "tasks": [{"key": "plain"}]}))
    fan_run = call(migrated_dsn, lambda api: api.start_run("photos", {"photos": list(range(12))}))
    dag_runs = [call(migrated_dsn, lambda api: api.start_run("plain")) for _ in range(6)]
    peak = Peak()
    kinds = set()
    worker = fast_worker(migrated_dsn, concurrency=2)

    def slow(ctx, input):
        with peak:
            kinds.add(ctx.engine if ctx.work_item_id else "task")
            time.sleep(0.05)
            return {}

    worker.register("resize", slow)
    worker.register("plain", slow)
    worker.register("album", lambda ctx, input: {})
    running(worker)
    for run_id in [fan_run, *dag_runs]:
        assert wait_run(migrated_dsn, run_id, tick=False)["state"] == "succeeded"
    assert peak.peak <= 2 and kinds == {"dag", "task"}, (peak.peak, kinds)


def test_a_worker_claims_only_the_work_items_it_has_handlers_for(migrated_dsn, running):
    call(migrated_dsn, lambda api: api.define_workflow(review_loop()))
    run_id = call(migrated_dsn, lambda api: api.start_run("review_loop"))
    drafts = running(fast_worker(migrated_dsn, name="drafts-only"))
    drafts.register("draft", lambda ctx, input: {"text": "x"})
    # draft done → review is pending, and nobody here handles it.
    wait_until(lambda: get_run(migrated_dsn, run_id)["position"] == "review", 20, "the review node")
    for _ in range(10):  # ten looks across two seconds of the worker polling every 0.2 s
        review = [i for i in get_run(migrated_dsn, run_id)["items"] if i["node"] == "review"]
        assert [i["status"] for i in review] == ["pending"]
        drafts.join(0.2)
    assert drafts.stats == {"completed": 1, "failed": 0, "dropped": 0}


def test_heartbeats_extend_a_work_items_lease(migrated_dsn, running):
    """Lease 3 s, the handler takes 4.5 s while tick() reaps every 0.2 s: the heartbeats keep the item."""
    call(migrated_dsn, lambda api: api.define_workflow(review_loop()))
    run_id = call(migrated_dsn, lambda api: api.start_run("review_loop"))
    release = threading.Event()
    worker = fast_worker(migrated_dsn, lease=3)

    @worker.task("draft")
    def draft(ctx, input):
        release.wait(4.5)
        return {"text": "slow"}

    running(worker)
    wait_until(lambda: get_run(migrated_dsn, run_id)["items"][0]["status"] == "dispatched", 10, "the claim")
    deadline = time.monotonic() + 4.5
    while time.monotonic() < deadline:
        counts = call(migrated_dsn, lambda api: api.tick())
        assert counts["reaped_items"] == 0
        time.sleep(0.2)
    wait_until(lambda: get_run(migrated_dsn, run_id)["position"] == "review", 10, "draft to complete")
    draft_item = [i for i in get_run(migrated_dsn, run_id)["items"] if i["node"] == "draft"][0]
    assert draft_item["status"] == "completed" and draft_item["attempt"] == 1
    kinds = [e["kind"] for e in call(migrated_dsn, lambda api: api.run_events(run_id))]
    assert "lease_expired" not in kinds


def test_a_cancelled_run_drops_the_result_of_its_work_item(migrated_dsn, running):
    """cancel_run bumps the item's token: the heartbeat is refused (FF004), ctx.lease_lost, nothing written."""
    call(migrated_dsn, lambda api: api.define_workflow(review_loop()))
    run_id = call(migrated_dsn, lambda api: api.start_run("review_loop"))
    started, told = threading.Event(), {}
    worker = fast_worker(migrated_dsn, lease=3)  # heartbeats every second

    @worker.task("draft")
    def draft(ctx, input):
        started.set()
        ctx.lease_lost_event.wait(20)
        try:
            ctx.heartbeat()
        except errors.LeaseLost as exc:
            told["sqlstate"] = exc.sqlstate
        return {"text": "too late"}

    running(worker)
    assert started.wait(20)
    call(migrated_dsn, lambda api: api.cancel_run(run_id, "changed my mind"))
    wait_until(lambda: worker.stats["dropped"] == 1, 30, "the result to be dropped")
    assert told == {"sqlstate": "FF004"}
    run = get_run(migrated_dsn, run_id)
    assert run["state"] == "cancelled" and run["items"][0]["status"] == "cancelled"
    assert run["items"][0]["output"] is None and run["data"] == {}


def test_a_work_item_output_over_the_limits_fails_for_good_at_once(migrated_dsn, running):
    call(migrated_dsn, lambda api: api.define_workflow(review_loop(max_attempts=3, backoff="0 seconds")))
    run_id = call(migrated_dsn, lambda api: api.start_run("review_loop"))
    worker = fast_worker(migrated_dsn, lease=60)
    worker.register("draft", lambda ctx, input: {"blob": "x" * 2_000_000})
    running(worker)
    run = wait_run(migrated_dsn, run_id, tick=False)
    assert run["state"] == "failed"
    (item,) = run["items"]
    assert item["status"] == "failed" and item["attempt"] == 1
    assert item["error"] == "work item output is 2000012 bytes, over the limit of 1048576 bytes"
    kinds = [e["kind"] for e in call(migrated_dsn, lambda api: api.run_events(run_id))]
    assert "retry_scheduled" not in kinds and "lease_expired" not in kinds
    assert worker.stats == {"completed": 0, "failed": 1, "dropped": 0}


def test_a_push_only_worker_claims_the_work_items_of_its_push_queue(migrated_dsn, running, amqp_url):
    """Work items are never pushed: a worker consuming a push queue from RabbitMQ claims that queue's items."""
    import uuid

    exchange = f"fftest.{uuid.uuid4().hex[:12]}"
    call(migrated_dsn, lambda api: api.configure_queue("pushq", exchange))
    call(migrated_dsn, lambda api: api.define_workflow(review_loop(queue="pushq")))
    run_id = call(migrated_dsn, lambda api: api.start_run("review_loop"))
    worker = fast_worker(migrated_dsn, queues=[], push_queues=["pushq"], amqp_url=amqp_url)
    worker.register("draft", lambda ctx, input: {"text": "x"})
    worker.register("review", lambda ctx, input: {"approved": True})
    worker.register("publish", lambda ctx, input: {})
    try:
        running(worker)
        assert wait_run(migrated_dsn, run_id, tick=False)["state"] == "succeeded"
        assert worker._stats.by_unit["work_item"]["completed"] == 3
    finally:
        worker.stop()
        worker.join(15)
        _drop_amqp(amqp_url, exchange, call(migrated_dsn, lambda api: api.queue_settings(["pushq"]))[0].amqp_queue)


def _drop_amqp(url: str, exchange: str, amqp_queue: str) -> None:
    """The exchange and durable queue the worker declared: gone, so the broker keeps nothing of this test."""
    import pika

    conn = pika.BlockingConnection(pika.URLParameters(url))
    try:
        channel = conn.channel()
        channel.queue_delete(amqp_queue)
        channel.exchange_delete(exchange)
    finally:
        conn.close()
