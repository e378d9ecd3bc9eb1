"""What the SDK / daemon / CLI tests of the other engines share (issues 13, 14, 15, their Python parts).

* definitions: ``review_loop`` (a graph that cycles), ``order`` (the state machine of issue
  14, its action backoff shortened), ``photos`` (a DAG whose task maps over its run input);
* reads through the gateway: ``get_run`` (any kind), ``agents`` (list_agents by name);
* ``drive``: claim and settle work items by hand with ``Client`` (no worker), for
  deterministic CLI output;
* ``wait_run``: until a run of any kind ends, calling ``tick()`` like a daemon would.

Everything goes through ``flowforge.Client`` (named notation, casts), like the SDK.
"""

from __future__ import annotations

import uuid
from typing import Any, Callable

import psycopg

from flowforge.client import Client
from helpers_runtime import wait_until

FINISHED = ("succeeded", "failed", "cancelled")


def review_loop(name: str = "review_loop", queue: str = "default", **node: Any) -> dict:
    """draft → review, back to draft while the review's output says approved == false, then publish → done."""
    return {"name": name, "kind": "graph", "start": "draft", "max_steps": 20,
            "nodes": [{"key": "draft", "queue": queue, **node},
                      {"key": "review", "queue": queue, "max_visits": 5, **node},
                      {"key": "publish", "queue": queue, **node},
                      {"key": "done", "final": True}],
            "edges": [{"from": "draft", "to": "review"},
                      {"from": "review", "to": "draft", "when": "$.output.approved == false"},
                      {"from": "review", "to": "publish"},
                      {"from": "publish", "to": "done"}]}


def order(name: str = "order", queue: str = "default", backoff: str = "100 milliseconds") -> dict:
    """Issue 14's order machine: paid (guarded, assigns paid_amount) → shipping (action ship) → delivered."""
    return {"name": name, "kind": "statemachine", "initial": "awaiting_payment", "context": {"total": 100},
            "states": {
                "awaiting_payment": {
                    "on": {"paid": [{"target": "shipping", "guard": "$.event.amount >= $.context.total",
                                     "assign": {"paid_amount": "$.event.amount"}}],
                           "cancel": "cancelled"},
                    "after": [{"delay": "2 days", "target": "expired"}]},
                "shipping": {"action": {"task": "ship", "queue": queue, "max_attempts": 3, "backoff": backoff},
                             "on_done": "delivered", "on_error": "needs_attention"},
                "needs_attention": {"on": {"retry": "shipping", "give_up": "cancelled"}},
                "delivered": {"final": True}, "cancelled": {"final": True}, "expired": {"final": True}}}


def photos(name: str = "photos", max_concurrency: int = 10, **fan: Any) -> dict:
    """A DAG: resize maps over $.run.photos, album gets their outputs."""
    return {"name": name, "tasks": [
        {"key": "resize", "backoff": "0 seconds",
         "map": {"over": "$.run.photos", "mode": "map", "max_concurrency": max_concurrency, **fan}},
        {"key": "album", "depends_on": ["resize"]},
    ]}


def client(dsn: str) -> tuple[psycopg.Connection, Client]:
    conn = psycopg.connect(dsn, autocommit=True)
    return conn, Client(conn)


def call(dsn: str, fn: Callable[[Client], Any]) -> Any:
    """One API call on a connection of its own."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        return fn(Client(conn))


def get_run(dsn: str, run_id) -> dict:
    return call(dsn, lambda api: api.get_run(run_id))


def agents(dsn: str) -> dict[str, dict]:
    return {a["name"]: a for a in call(dsn, lambda api: api.list_agents())}


def wait_run(dsn: str, run_id, timeout: float = 30.0, tick: bool = True) -> dict:
    """The run once it ended (tick() between looks, as a daemon would); fails after ``timeout`` s."""
    def ended():
        with psycopg.connect(dsn, autocommit=True) as conn:
            api = Client(conn)
            if tick:
                api.tick()
            run = api.get_run(run_id)
        return run if run["state"] in FINISHED else None
    return wait_until(ended, timeout, f"run {run_id} to end", interval=0.1)


def drive(api: Client, agent: str, outputs: dict[str, Any] | Callable[[Any], Any], *, steps: int | None = None,
          fail: Callable[[Any], str | None] = lambda row: None) -> list:
    """Claim and settle work items until none is pending (or ``steps`` of them): ``outputs[task_name]``
    (or ``outputs(row)``) completes one; ``fail(row)`` returning an error text fails it (retryable).
    Returns the rows claimed."""
    claimed = []
    for _ in range(steps or 100):
        rows = api.claim_work(["default"], agent, batch=1)
        if not rows:
            return claimed
        row = rows[0]
        claimed.append(row)
        error = fail(row)
        if error is not None:
            api.fail_work(row.work_item_id, row.fencing_token, error, True)
            continue
        out = outputs(row) if callable(outputs) else outputs[row.task_name]
        api.complete_work(row.work_item_id, row.fencing_token, out)
    if steps is not None:
        return claimed
    raise AssertionError(f"still claiming after {steps} work items")


def new_id() -> str:
    return uuid.uuid4().hex[:8]
