"""``Worker(agent=...)``: registration, heartbeats with psutil metrics, draining, deregistration (issue 13).

The database decides an agent's status (list_agents applies the claims'
own rule); the worker registers, reports, obeys.  Waits poll a condition
against a deadline; nothing asserts how long anything took.
"""

from __future__ import annotations

import threading

import pytest

from helpers_runtime import fast_worker, running, sql, wait_until  # noqa: F401 - fixture
from helpers_sdk_engines import agents, call, get_run, review_loop, wait_run


def test_registration_carries_labels_addresses_version_and_type(migrated_dsn, running):
    worker = fast_worker(migrated_dsn, agent="gpu-1", labels={"gpu": True, "region": "eu"}, heartbeat_interval=1,
                         agent_info={"http_address": "http://10.0.0.5:8080", "version": "thumbs 2.1",
                                     "type": "local"})
    worker.register("draft", lambda ctx, input: {})
    running(worker)
    wait_until(lambda: "gpu-1" in agents(migrated_dsn), 15, "the registration")
    agent = agents(migrated_dsn)["gpu-1"]
    assert agent["status"] == "active" and agent["declared_status"] == "active"
    assert agent["labels"] == {"gpu": True, "region": "eu"}
    assert (agent["http_address"], agent["version"], agent["agent_type"]) == ("http://10.0.0.5:8080", "thumbs 2.1",
                                                                              "local")
    assert agent["heartbeat_interval"].total_seconds() == 1
    assert worker.name == "gpu-1" and worker.agent_status == "active"


def test_heartbeats_report_psutil_metrics_and_what_the_worker_holds(migrated_dsn, running):
    call(migrated_dsn, lambda api: api.define_workflow(review_loop()))
    run_id = call(migrated_dsn, lambda api: api.start_run("review_loop"))
    release = threading.Event()
    worker = fast_worker(migrated_dsn, agent="busy-1", heartbeat_interval=1, concurrency=3)

    @worker.task("draft")
    def draft(ctx, input):
        release.wait(30)
        return {}

    running(worker)

    def holding_one():
        agent = agents(migrated_dsn).get("busy-1")
        return agent if agent and agent["holding"] == 1 and (agent["metrics"] or {}).get("running") == 1 else None

    agent = wait_until(holding_one, 20, "a heartbeat reporting the held item")
    metrics = agent["metrics"]
    for key in ("cpu_percent", "cpu_count", "memory_percent", "memory_total_bytes", "load_1m",
                "process_rss_bytes", "pid"):
        assert key in metrics, (key, metrics)
    assert 0 <= metrics["memory_percent"] <= 100 and metrics["memory_total_bytes"] > 0
    assert metrics["running_work_items"] == 1 and metrics["running_tasks"] == 0 and metrics["concurrency"] == 3
    release.set()
    wait_until(lambda: get_run(migrated_dsn, run_id)["position"] == "review", 20, "draft to complete")
    wait_until(lambda: (agents(migrated_dsn)["busy-1"]["metrics"] or {}).get("completed") == 1, 20,
               "a heartbeat counting the completed item")


def test_a_draining_worker_finishes_what_it_holds_takes_nothing_new_and_resumes_when_active(migrated_dsn, running):
    call(migrated_dsn, lambda api: api.define_workflow({"name": "one", "tasks": [{"key": "one"}]}))
    first = call(migrated_dsn, lambda api: api.start_run("one"))
    release, entered = threading.Event(), threading.Event()
    worker = fast_worker(migrated_dsn, agent="drainee", heartbeat_interval=1)

    @worker.task("one")
    def one(ctx, input):
        entered.set()
        release.wait(30)
        return {"by": ctx.worker_name}

    running(worker)
    assert entered.wait(20)
    call(migrated_dsn, lambda api: api.set_agent_status("drainee", "draining"))
    wait_until(lambda: worker.agent_status == "draining", 15, "the worker to learn it drains")
    assert agents(migrated_dsn)["drainee"]["status"] == "draining"  # it still holds the first task
    second = call(migrated_dsn, lambda api: api.start_run("one"))
    release.set()
    assert wait_run(migrated_dsn, first, tick=False)["state"] == "succeeded"  # what it held, it finished
    wait_until(lambda: agents(migrated_dsn)["drainee"]["status"] == "drained", 15, "drained")
    for _ in range(10):  # ten looks across two seconds: a drained worker takes nothing
        assert get_run(migrated_dsn, second)["tasks"][0]["state"] == "ready"
        worker.join(0.2)
    last_claim = agents(migrated_dsn)["drainee"]["last_claim_at"]
    worker.join(1.0)
    assert agents(migrated_dsn)["drainee"]["last_claim_at"] == last_claim  # it does not even ask
    # Active again: it claims at once.
    call(migrated_dsn, lambda api: api.set_agent_status("drainee", "active"))
    run = wait_run(migrated_dsn, second, tick=False)
    assert run["state"] == "succeeded" and run["tasks"][0]["output"] == {"by": "drainee"}
    assert worker.agent_status == "active"


def test_selectors_send_work_to_the_agent_whose_labels_match(migrated_dsn, running):
    spec = review_loop(worker_params={"gpu": True})
    call(migrated_dsn, lambda api: api.define_workflow(spec))
    run_id = call(migrated_dsn, lambda api: api.start_run("review_loop"))
    handlers = {"draft": lambda ctx, input: {"by": ctx.worker_name}, "review": lambda ctx, input: {"approved": True},
                "publish": lambda ctx, input: {}}
    for name, labels in (("cpu-only", {"gpu": False}), ("gpu-box", {"gpu": True})):
        worker = fast_worker(migrated_dsn, agent=name, labels=labels, heartbeat_interval=1)
        for key, fn in handlers.items():
            worker.register(key, fn)
        running(worker)
    run = wait_run(migrated_dsn, run_id, tick=False)
    assert run["state"] == "succeeded" and run["data"]["by"] == "gpu-box"
    assert {i["agent"] for i in run["items"]} == {"gpu-box"}


def test_shutdown_marks_the_agent_inactive_and_releases_its_bindings(migrated_dsn):
    call(migrated_dsn, lambda api: api.define_workflow(review_loop(affinity="run")))
    run_id = call(migrated_dsn, lambda api: api.start_run("review_loop"))
    worker = fast_worker(migrated_dsn, agent="pinned", heartbeat_interval=1)
    worker.register("draft", lambda ctx, input: {})
    worker.start()
    wait_until(lambda: get_run(migrated_dsn, run_id)["position"] == "review", 20, "draft done under affinity")
    assert agents(migrated_dsn)["pinned"]["bindings"] == 1
    worker.stop()
    assert worker.join(15)
    agent = agents(migrated_dsn)["pinned"]
    assert agent["status"] == "inactive" and agent["declared_status"] == "inactive" and agent["bindings"] == 0
    assert agent["metrics"]["running"] == 0  # the last heartbeat said what it held when it stopped
    assert worker.agent_status == "inactive"


def test_an_agent_marked_inactive_while_alive_registers_again(migrated_dsn, running):
    worker = running(fast_worker(migrated_dsn, agent="phoenix", heartbeat_interval=1))
    worker.register("x", lambda ctx, input: {})
    wait_until(lambda: "phoenix" in agents(migrated_dsn), 15, "the registration")
    call(migrated_dsn, lambda api: api.set_agent_status("phoenix", "inactive"))
    assert agents(migrated_dsn)["phoenix"]["status"] == "inactive"
    wait_until(lambda: agents(migrated_dsn)["phoenix"]["status"] == "active", 15, "the agent to register again")


def test_a_worker_that_may_not_mark_itself_inactive_stops_anyway(migrated_dsn, caplog):
    """set_agent_status is an application's right (flowforge_app), not flowforge_worker's: a login that is a
    worker only is told so when it stops, and the database's liveness rule does the rest."""
    import logging

    from psycopg.conninfo import make_conninfo

    caplog.set_level(logging.INFO, logger="flowforge.worker")
    login = f"ffw_{abs(hash(migrated_dsn)) % 10**8}"
    sql(migrated_dsn, f"CREATE ROLE {login} LOGIN IN ROLE flowforge_worker")
    try:
        sql(migrated_dsn, "SELECT flowforge.add_member(organization => 'default', member => %s::name, "
                          "role => 'member')", login)
        sql(migrated_dsn, f"REVOKE flowforge_app FROM {login}")  # a worker-only login (add_member grants app)
        worker = fast_worker(make_conninfo(migrated_dsn, user=login), agent="limited", heartbeat_interval=1)
        worker.register("x", lambda ctx, input: {})
        worker.start()
        wait_until(lambda: "limited" in agents(migrated_dsn), 15, "the registration")
        worker.stop()
        assert worker.join(15)
        assert agents(migrated_dsn)["limited"]["declared_status"] == "active"
        said = [r.getMessage() for r in caplog.records if "not marked inactive" in r.getMessage()]
        assert said and "three missed heartbeats" in said[0], said
    finally:
        sql(migrated_dsn, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", login)
        sql(migrated_dsn, f"DROP OWNED BY {login}")
        sql(migrated_dsn, f"DROP ROLE {login}")


@pytest.mark.parametrize("kwargs, message", [
    ({"labels": {"gpu": True}}, "agent=NAME"),
    ({"agent": "a", "name": "b"}, "not two different names"),
    ({"agent": "a", "heartbeat_interval": 0.5}, "heartbeat_interval"),
    ({"agent": "a", "agent_info": {"colour": "red"}}, "unknown agent_info"),
])
def test_bad_agent_options_are_refused_at_construction(kwargs, message):
    import flowforge

    with pytest.raises((ValueError, TypeError), match=message):
        flowforge.Worker(**kwargs)
