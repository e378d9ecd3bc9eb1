"""(8) Fan-out: the cost of one map child against one lone work item.

Subjects, each drained by one connection with claim_work(batch 1) +
complete_work until nothing is left (one connection: a fan-out's children
all settle under their run's lock, so this measures the per-child cost, not
contention):
* ``lone``   — N one-node graph runs started beforehand: each is one work
  item whose completion takes the graph's edge and ends its run (the
  baseline: a unit of work with an engine step behind it);
* ``map1k``  — one DAG run whose task maps over 1,000 elements
  (max_concurrency 100): each child's completion counts it in the
  checkpoint, reads one page and creates the next child;
* ``map10k`` — the same over 10,000 elements.
Rounds alternate lone / map1k / map10k; the timed part of a map round starts
with the run (its first 100 children created) and ends when the run is done.

Figures: per-child cost of a 1k map / per-item cost of lone items (target
<= 1.3); per-child cost of a 10k map / of a 1k map (target <= 1.3: flat).
"""

from __future__ import annotations

import time

import common as c
from psycopg.types.json import Jsonb

LONE = {"name": "lone", "kind": "graph", "start": "work",
        "nodes": [{"key": "work"}, {"key": "done", "final": True}], "edges": [{"from": "work", "to": "done"}]}
MAP = {"name": "mapper", "tasks": [{"key": "each", "map": {"over": "$.run.items", "max_concurrency": 100}}]}


def drain(conn, expect: int) -> int:
    """claim_work + complete_work until `expect` items are done; returns how many."""
    done = 0
    while done < expect:
        row = conn.execute("SELECT work_item_id, fencing_token FROM flowforge.claim_work("
                           "queues => ARRAY['default'], agent => 'bench')").fetchone()
        if row is None:
            break
        conn.execute("SELECT flowforge.complete_work(work_item_id => %s, fencing_token => %s, output => %s)",
                     (row[0], row[1], Jsonb({"ok": True})))
        done += 1
    return done


def lone_round(dsn: str, n: int) -> float:
    c.start_runs(dsn, "lone", n)
    c.checkpoint(dsn)
    with c.connect(dsn) as conn:
        t0 = time.perf_counter()
        done = drain(conn, n)
        elapsed = time.perf_counter() - t0
    assert done == n, f"lone: {done} of {n}"
    return elapsed / n


def map_round(dsn: str, n: int) -> float:
    c.checkpoint(dsn)
    with c.connect(dsn) as conn:
        t0 = time.perf_counter()
        run_id = conn.execute("SELECT flowforge.start_run('mapper', %s)", [Jsonb({"items": list(range(n))})]).fetchone()[0]
        done = drain(conn, n)
        elapsed = time.perf_counter() - t0
        state = conn.execute("SELECT flowforge.get_run(%s) ->> 'state'", [run_id]).fetchone()[0]
    assert done == n and state == "succeeded", f"map {n}: {done} children, run {state}"
    return elapsed / n


def main() -> None:
    n_rounds = c.rounds(3)
    small, large = c.scale(1000, 300), c.scale(10000, 3000)
    dsn = c.flowforge_database("fanout")
    c.define(dsn, LONE)
    c.define(dsn, MAP)
    # Warm-up: plans and caches on every path.
    lone_round(dsn, 200)
    map_round(dsn, 200)
    lone, map_small, map_large = [], [], []
    for r in range(n_rounds):
        c.progress(f"round {r + 1}/{n_rounds}")
        lone.append(lone_round(dsn, small))
        map_small.append(map_round(dsn, small))
        map_large.append(map_round(dsn, large))
        with c.connect(dsn) as conn:
            conn.execute("VACUUM flowforge.work_item, flowforge.checkpoint, flowforge.task_run")
    lone_us, small_us, large_us = (c.median(v) * 1e6 for v in (lone, map_small, map_large))
    ratio = small_us / lone_us
    c.figure(f"per-child cost, {small:,}-element map", small_us, "us", baseline="lone work item",
             baseline_value=lone_us, ratio=ratio, target="<= 1.3", met=ratio <= 1.3,
             note=f"claim_work + complete_work on one connection; median of {n_rounds} alternating rounds",
             chart={"kind": "bars", "labels": ["lone item", f"map {small:,}", f"map {large:,}"],
                    "values": [lone_us, small_us, large_us], "unit": "us per unit of work"})
    growth = large_us / small_us
    c.figure(f"per-child cost, {large:,} vs {small:,} elements", large_us, "us", baseline=f"{small:,}-element map",
             baseline_value=small_us, ratio=growth, target="<= 1.3 (flat)", met=growth <= 1.3,
             note="O(1) per child: no re-count of siblings, no array rewritten")


if __name__ == "__main__":
    main()
