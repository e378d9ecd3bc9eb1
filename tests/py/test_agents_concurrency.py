"""Agents (issue 13) under real concurrency: selectors and draining, each agent on its own connection.

* Selectors: five claimers (four registered agents with different labels, one
  unregistered worker) race over one queue of work items and DAG tasks asking for
  labels; every unit goes to an agent whose labels contain its worker_params, each
  exactly once, none is left behind.
* Draining while a claim is in progress, both orders forced with pg_stat_activity:
  a drain issued while the agent's claim transaction is open waits for it and the
  claim stands (the agent finishes it: heartbeat and complete still work, it is then
  reported drained) but nothing new is given after; a claim issued while the drain's
  transaction is open waits for it and is given nothing — by claim_work and by the
  DAG's claim alike. A drain that rolls back gives nothing away.
"""

from __future__ import annotations

import collections
import threading
import time

import pytest
from psycopg.types.json import Jsonb

from helpers_engines import (
    Blocked,
    agent_heartbeat,
    claim_work,
    complete_work,
    connect,
    define,
    heartbeat_work,
    item_row,
    list_agents,
    register_agent,
    run_threads,
    set_agent_status,
    single_graph,
    start_run,
    wait_blocked,
)

LABELS = {
    "gpu-eu": {"gpu": True, "region": "eu"},
    "gpu-us": {"gpu": True, "region": "us", "mem": 80},
    "cpu-eu": {"region": "eu"},
    "plain": {},
}
ANON = "anon"  # claims without registering: no labels
SELECTORS = {"any": None, "gpu": {"gpu": True}, "eu": {"region": "eu"}, "gpu_us": {"gpu": True, "region": "us"},
             "big": {"mem": 80}}
PER_SELECTOR = 40


def _contains(labels: dict, params: dict | None) -> bool:
    return params is None or all(k in labels and labels[k] == v for k, v in params.items())


def test_selectors_across_connections_each_unit_to_a_matching_agent_once(migrated_dsn):
    with connect(migrated_dsn) as setup:
        for name, params in SELECTORS.items():
            node = {"queue": "sel"} | ({"worker_params": params} if params else {})
            define(setup, single_graph(f"g_{name}", **node))
            define(setup, {"name": f"d_{name}", "tasks": [{"key": "t", **node}]})
            for wf in (f"g_{name}", f"d_{name}"):
                setup.execute("SELECT flowforge.start_run(%s, jsonb_build_object('i', i)) "
                              "FROM generate_series(1, %s) i", (wf, PER_SELECTOR))
        for name, labels in LABELS.items():
            register_agent(setup, name, {"labels": labels})
    claimers = [*LABELS, ANON]
    labels_of = {**LABELS, ANON: {}}
    barrier = threading.Barrier(len(claimers))

    def claimer(agent: str) -> list[tuple]:
        taken = []
        with connect(migrated_dsn) as conn:
            barrier.wait()
            while True:
                items = claim_work(conn, ["sel"], agent, batch=3)
                tasks = conn.execute("SELECT task_run_id, fencing_token FROM flowforge.claim(ARRAY['sel'], %s, "
                                     "'1 minute', 3)", (agent,)).fetchall()
                for r in items:
                    taken.append(("item", r["work_item_id"], agent))
                    complete_work(conn, r["work_item_id"], r["fencing_token"])
                for task_run_id, token in tasks:
                    taken.append(("task", task_run_id, agent))
                    conn.execute("SELECT flowforge.complete(%s, %s)", (task_run_id, token))
                if items or tasks:
                    continue
                # Nothing given: done once nothing this agent's labels satisfy is left (pending or held).
                left = conn.execute(
                    "SELECT (SELECT count(*) FROM flowforge.work_item WHERE status IN ('pending', 'dispatched') "
                    "        AND (worker_params IS NULL OR %(l)s @> worker_params)) "
                    "     + (SELECT count(*) FROM flowforge.task_run WHERE state IN ('ready', 'running') "
                    "        AND (worker_params IS NULL OR %(l)s @> worker_params))",
                    {"l": Jsonb(labels_of[agent])}).fetchone()[0]
                if left == 0:
                    return taken
                time.sleep(0.002)

    results = run_threads([lambda a=a: claimer(a) for a in claimers], timeout=120)
    taken = [t for got, _ in results for t in got]
    with connect(migrated_dsn) as conn:
        params = dict(conn.execute("SELECT id, worker_params FROM flowforge.work_item").fetchall())
        params |= dict(conn.execute("SELECT id, worker_params FROM flowforge.task_run").fetchall())
        wrong = [(kind, params[i], agent) for kind, i, agent in taken if not _contains(labels_of[agent], params[i])]
        assert wrong == [], f"units given to agents whose labels do not contain their selectors: {wrong[:5]}"
        counts = collections.Counter((kind, i) for kind, i, _ in taken)
        assert [k for k, n in counts.items() if n > 1] == [], "a unit was claimed twice"
        assert len(counts) == 2 * len(SELECTORS) * PER_SELECTOR, "a unit was never claimed"
        assert dict(conn.execute("SELECT status::text, count(*) FROM flowforge.graph_run GROUP BY 1").fetchall()) \
            == {"succeeded": len(SELECTORS) * PER_SELECTOR}
        assert dict(conn.execute("SELECT state::text, count(*) FROM flowforge.workflow_run GROUP BY 1").fetchall()) \
            == {"succeeded": len(SELECTORS) * PER_SELECTOR}
        # The events name the claimer: the selector-only work went where it could only go.
        by_agent = collections.defaultdict(set)
        for kind, i, agent in taken:
            by_agent[agent].add(tuple(sorted((params[i] or {}).items())))
        assert by_agent[ANON] <= {()}
        assert by_agent["plain"] <= {()}
        assert by_agent["cpu-eu"] <= {(), (("region", "eu"),)}
        only_gpu_us = {(("gpu", True), ("region", "us")), (("mem", 80),)}
        assert all(not (only_gpu_us & got) for agent, got in by_agent.items() if agent != "gpu-us")
        assert only_gpu_us <= by_agent["gpu-us"]
    print({a: len([t for t in taken if t[2] == a]) for a in claimers})


# --- draining while a claim is in progress ------------------------------------------------------

@pytest.fixture
def drain_world(migrated_dsn):
    setup, observer = connect(migrated_dsn), connect(migrated_dsn)
    register_agent(setup, "agent-a", {"labels": {"pool": "a"}})
    register_agent(setup, "agent-b")
    define(setup, single_graph("dw", queue="dq"))
    define(setup, {"name": "dd", "tasks": [{"key": "t", "queue": "dq"}]})
    runs = [start_run(setup, "dw", {"n": n}) for n in range(3)]
    dag_run = start_run(setup, "dd")
    try:
        yield migrated_dsn, setup, observer, runs, dag_run
    finally:
        setup.close()
        observer.close()


def _claims_of(observer, agent: str) -> int:
    return observer.execute("SELECT count(*) FROM flowforge.task_run_event WHERE kind = 'claimed' "
                            "AND coalesce(detail->>'agent', detail->>'worker') = %s", (agent,)).fetchone()[0]


@pytest.mark.parametrize("claim_with", ["claim_work", "claim"])
def test_drain_issued_during_a_claim_waits_and_the_claim_stands(drain_world, claim_with):
    dsn, setup, observer, runs, dag_run = drain_world
    a = connect(dsn, autocommit=False)
    ops = connect(dsn)
    try:
        if claim_with == "claim_work":
            (held,) = claim_work(a, ["dq"], "agent-a")
            unit, token = held["work_item_id"], held["fencing_token"]
        else:
            ((unit, token),) = a.execute("SELECT task_run_id, fencing_token FROM flowforge.claim(ARRAY['dq'], "
                                         "'agent-a', '1 minute', 1)").fetchall()
        # The claim recorded last_claim_at on agent-a's row: the drain queues behind it.
        drain = Blocked(ops, lambda c: set_agent_status(c, "agent-a", "draining"))
        wait_blocked(observer, drain.pid, by=a.info.backend_pid, what="set_agent_status behind the open claim")
        a.commit()
        assert drain.result() == ("ok", None)

        agents = list_agents(observer)
        assert (agents["agent-a"]["status"], agents["agent-a"]["holding"]) == ("draining", 1)
        assert agent_heartbeat(a, "agent-a") == "draining"  # the agent learns it is draining
        a.commit()
        # Nothing new, by either claim, however much is ready.
        assert claim_work(a, ["dq"], "agent-a", batch=10) == []
        assert a.execute("SELECT count(*) FROM flowforge.claim(ARRAY['dq'], 'agent-a', '1 minute', 10)"
                         ).fetchone()[0] == 0
        a.commit()
        assert _claims_of(observer, "agent-a") == 1
        # What it holds it finishes: the fencing token is still its own.
        if claim_with == "claim_work":
            assert heartbeat_work(a, unit, token, "1 minute") is not None
            complete_work(a, unit, token, {"finished": "while draining"})
            a.commit()
            assert item_row(observer, unit)["status"] == "completed"
        else:
            a.execute("SELECT flowforge.heartbeat(%s, %s, '1 minute')", (unit, token))
            a.execute("SELECT flowforge.complete(%s, %s)", (unit, token))
            a.commit()
            assert observer.execute("SELECT state::text FROM flowforge.task_run WHERE id = %s", (unit,)
                                    ).fetchone()[0] == "succeeded"
        agents = list_agents(observer)
        assert (agents["agent-a"]["status"], agents["agent-a"]["holding"]) == ("drained", 0)
        # The rest goes to the other agent.
        left = claim_work(setup, ["dq"], "agent-b", batch=10)
        dag_left = setup.execute("SELECT count(*) FROM flowforge.claim(ARRAY['dq'], 'agent-b', '1 minute', 10)"
                                 ).fetchone()[0]
        assert len(left) + dag_left == 3, (left, dag_left)
    finally:
        a.close()
        ops.close()


@pytest.mark.parametrize("claim_with", ["claim_work", "claim"])
@pytest.mark.parametrize("drain_ends", ["commit", "rollback"])
def test_claim_issued_during_a_drain_waits_and_is_given_nothing(drain_world, claim_with, drain_ends):
    dsn, setup, observer, runs, dag_run = drain_world
    ops = connect(dsn, autocommit=False)
    worker = connect(dsn)
    try:
        set_agent_status(ops, "agent-a", "draining")
        if claim_with == "claim_work":
            call = lambda c: len(claim_work(c, ["dq"], "agent-a", batch=10))  # noqa: E731
        else:
            call = lambda c: c.execute("SELECT count(*) FROM flowforge.claim(ARRAY['dq'], 'agent-a', "  # noqa: E731
                                       "'1 minute', 10)").fetchone()[0]
        late = Blocked(worker, call)
        wait_blocked(observer, late.pid, by=ops.info.backend_pid, what=f"{claim_with} behind the open drain")
        getattr(ops, drain_ends)()
        status, n = late.result()
        assert status == "ok"
        if drain_ends == "commit":
            assert n == 0, f"{claim_with} gave a draining agent {n} unit(s)"
            assert _claims_of(observer, "agent-a") == 0
            assert observer.execute("SELECT count(*) FROM flowforge.work_item WHERE status = 'pending'"
                                    ).fetchone()[0] == 3
            assert list_agents(observer)["agent-a"]["status"] == "drained"  # draining, holding nothing
        else:
            assert n == (3 if claim_with == "claim_work" else 1), "the drain rolled back: the claim goes on"
            assert list_agents(observer)["agent-a"]["status"] == "active"
    finally:
        ops.close()
        worker.close()
