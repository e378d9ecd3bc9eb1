"""Typical workflows of every engine kind, driven to their end through the SQL API on one connection.

Shared by ``capacity.py`` (transactions, WAL and CPU per run) and
``router_audit.py`` (which statements of those runs would route to one Citus
node). Each driver starts one run and plays the worker (and, for push, the
daemon and the consumer) until the run has ended, one API call per
transaction, and returns how many API calls it made:

* ``dag``      the diamond a -> (b, c) -> d: 1 start + 4 claims + 4 completes
* ``graph``    the review loop draft -> review -> publish -> done: 1 start + 3 x (claim_work + complete_work)
* ``machine``  the order machine: start, send_event(paid), its action (claim_work + complete_work)
* ``fanout``   a DAG task mapping over 10 elements, then one task after it: the children are work items
* ``push``     a one-task DAG on a push queue: start, take_outbox, mark_published, the consumer's complete
* ``single``   a one-task DAG: start, claim, complete (the unit the other benchmarks measure)

Nothing here sleeps or ticks: every step is made ready by the previous one.
"""

from __future__ import annotations

import json
from typing import Callable

import psycopg

from flowforge.client import Client

QUEUE = "cap"
PUSH_QUEUE = "cap-push"
FAN_ELEMENTS = 10

SPECS = {
    "single": {"name": "cap_single", "tasks": [{"key": "work", "queue": QUEUE}]},
    "dag": {"name": "cap_dag", "tasks": [
        {"key": "a", "queue": QUEUE},
        {"key": "b", "queue": QUEUE, "depends_on": ["a"]},
        {"key": "c", "queue": QUEUE, "depends_on": ["a"]},
        {"key": "d", "queue": QUEUE, "depends_on": ["b", "c"]}]},
    "graph": {"name": "cap_graph", "kind": "graph", "start": "draft", "max_steps": 20,
              "nodes": [{"key": "draft", "queue": QUEUE}, {"key": "review", "queue": QUEUE, "max_visits": 5},
                        {"key": "publish", "queue": QUEUE}, {"key": "done", "final": True}],
              "edges": [{"from": "draft", "to": "review"},
                        {"from": "review", "to": "draft", "when": "$.output.approved == false"},
                        {"from": "review", "to": "publish"}, {"from": "publish", "to": "done"}]},
    "machine": {"name": "cap_machine", "kind": "statemachine", "initial": "awaiting_payment", "context": {"total": 100},
                "states": {
                    "awaiting_payment": {"on": {"paid": [{"target": "shipping",
                                                          "guard": "$.event.amount >= $.context.total",
                                                          "assign": {"paid_amount": "$.event.amount"}}],
                                                "cancel": "cancelled"}},
                    "shipping": {"action": {"task": "ship", "queue": QUEUE}, "on_done": "delivered",
                                 "on_error": "cancelled"},
                    "delivered": {"final": True}, "cancelled": {"final": True}}},
    "fanout": {"name": "cap_fanout", "tasks": [
        {"key": "resize", "queue": QUEUE, "map": {"over": "$.run.photos", "mode": "map", "max_concurrency": 4}},
        {"key": "album", "queue": QUEUE, "depends_on": ["resize"]}]},
    "push": {"name": "cap_push", "tasks": [{"key": "work", "queue": PUSH_QUEUE}]},
}
KINDS = ("single", "dag", "graph", "machine", "fanout", "push")
INPUTS = {"fanout": {"photos": [f"p{i}.jpg" for i in range(FAN_ELEMENTS)]}}
ENDED = ("succeeded", "failed", "cancelled")


def setup(conn: psycopg.Connection) -> None:
    """Every definition, and the push queue (its exchange need not exist: nothing is published here)."""
    api = Client(conn)
    for spec in SPECS.values():
        api.define_workflow(spec)
    api.configure_queue(PUSH_QUEUE, exchange="flowforge.capacity", routing_key="cap")


# What a run of each kind asks of its workers, in order: "task" is a claim + complete of a task run,
# "item" a claim_work + complete_work of a work item.
UNITS = {
    "single": ["task"],
    "dag": ["task"] * 4,
    "graph": ["item"] * 3,
    "machine": ["item"],
    "fanout": ["item"] * FAN_ELEMENTS + ["task"],
}


def _pull_run(kind: str) -> Callable[[Client, str], int]:
    def run(api: Client, worker: str) -> int:
        run_id = api.start_run(SPECS[kind]["name"], INPUTS.get(kind))
        calls = 1
        if kind == "machine":
            api.send_event(run_id, "paid", {"amount": 100})
            calls += 1
        for unit in UNITS[kind]:
            if unit == "task":
                (t,) = api.claim([QUEUE], worker, batch=1)
                api.complete(t.task_run_id, t.fencing_token, {"ok": True})
            else:
                (w,) = api.claim_work([QUEUE], worker, batch=1)
                api.complete_work(w.work_item_id, w.fencing_token,
                                  {"approved": True} if w.task_name == "review" else {"ok": True})
            calls += 2
        return calls
    return run


def check_ended(conn: psycopg.Connection) -> dict[str, int]:
    """Runs by outcome, every engine (read as the superuser): after a measurement all must have succeeded."""
    rows = conn.execute("""
        SELECT state, count(*)::int FROM (
            SELECT state::text FROM flowforge.workflow_run
            UNION ALL SELECT status::text FROM flowforge.graph_run
            UNION ALL SELECT status::text FROM flowforge.machine_run) r
        GROUP BY state""").fetchall()
    return dict(rows)


def _push_run(api: Client, worker: str) -> int:
    """The daemon's take_outbox + mark_published, then the consumer's complete with the token it was given."""
    run_id = api.start_run(SPECS["push"]["name"])
    messages = api.take_outbox(batch=10)
    bodies = [json.loads(m.body) for m in messages]
    mine = [b for b in bodies if b["workflow_run_id"] == str(run_id)]
    if not mine:
        raise RuntimeError(f"push run {run_id}: no outbox message")
    api.mark_published([m.id for m in messages])
    for b in mine:
        api.complete(b["task_run_id"], b["fencing_token"], {"ok": True})
    return 3 + len(mine)


DRIVERS: dict[str, Callable[[Client, str], int]] = {k: _pull_run(k) for k in KINDS if k != "push"}
DRIVERS["push"] = _push_run


def run_one(conn: psycopg.Connection, kind: str, worker: str = "cap-worker") -> int:
    """One run of ``kind`` to its end; the API calls (transactions) it took."""
    return DRIVERS[kind](Client(conn), worker)
