"""(9) The engines added since round one: a graph step and a machine event, vs one DAG task's claim + complete.

Same database, same 4-thread loop (autocommit psycopg connections, prepared
statements), timed rounds alternating baseline / graph / machine:

* baseline: a single-task DAG run's task, ``claim(1)`` then ``complete`` (two
  statements, two commits) — bench_claim's subject;
* graph step: a two-node graph (``work`` -> ``done``, final), one run per step:
  ``claim_work(1)`` of the ``work`` node's item, then ``complete_work``, which
  takes the edge to ``done`` and ends the run (two statements, two commits);
* machine event: ``send_event`` on a resting statemachine (``idle`` <-> ``busy``
  on ``ping`` / ``pong``, no action), each thread on its own 50 runs in turn
  (one statement, one commit per transition).

Figures: the cost of one unit relative to the baseline (baseline rate /
subject rate), target <= 1.5 each.
"""

from __future__ import annotations

import itertools

import common as c

TARGET = 1.5
GRAPH = {"name": "gstep", "kind": "graph", "start": "work",
         "nodes": [{"key": "work"}, {"key": "done", "final": True}], "edges": [{"from": "work", "to": "done"}]}
MACHINE = {"name": "pingpong", "kind": "statemachine", "initial": "idle",
           "states": {"idle": {"on": {"ping": "busy"}}, "busy": {"on": {"pong": "idle"}}}}
CLAIM_WORK = "SELECT work_item_id, fencing_token FROM flowforge.claim_work(ARRAY['default'], %s, '30 seconds', 1)"
COMPLETE_WORK = "SELECT flowforge.complete_work(%s, %s, NULL)"
SEND = "SELECT flowforge.send_event(%s, %s)"
RUNS_PER_THREAD = 50


def enqueue(dsn: str, workflow: str, n: int, chunk: int = 10_000) -> None:
    """n runs through start_runs (set-based for a DAG; one engine start per run for a graph)."""
    with c.connect(dsn) as conn:
        left = n
        while left > 0:
            k = min(chunk, left)
            conn.execute("SELECT count(*) FROM flowforge.start_runs(%s, array_fill('{}'::jsonb, ARRAY[%s]))",
                         [workflow, k])
            left -= k


def graph_step(conn, i: int) -> int:
    row = conn.execute(CLAIM_WORK, [f"graph-{i}"], prepare=True).fetchone()
    if row is None:
        return 0
    conn.execute(COMPLETE_WORK, [row[0], row[1]], prepare=True)
    return 1


def machine_steps(runs: list[list]):
    """A step per thread that sends the next event to its next run (ping, then pong, ...)."""
    cursors = [itertools.cycle([(r, e) for e in ("ping", "pong") for r in rs]) for rs in runs]

    def step(conn, i: int) -> int:
        run_id, event = next(cursors[i])
        conn.execute(SEND, [run_id, event], prepare=True).fetchone()
        return 1
    return step


def main() -> None:
    n_rounds, seconds = c.rounds(3), c.round_seconds(4.0, 2.0)
    dsn = c.flowforge_database("engines")
    c.define(dsn, c.SINGLE_SPEC)
    c.define(dsn, GRAPH)
    c.define(dsn, MACHINE)
    with c.connect(dsn) as conn:
        ids = [r[0] for r in conn.execute(
            "SELECT id FROM flowforge.start_runs('pingpong', array_fill('{}'::jsonb, ARRAY[%s])) AS id",
            [4 * RUNS_PER_THREAD]).fetchall()]
    runs = [ids[k * RUNS_PER_THREAD:(k + 1) * RUNS_PER_THREAD] for k in range(4)]
    dag = c.Subject("dag task", dsn, c.ff_single_step(), lambda n: enqueue(dsn, "single", n), first_guess=1500)
    graph = c.Subject("graph step", dsn, graph_step, lambda n: enqueue(dsn, "gstep", n), first_guess=1000)
    machine = c.Subject("machine event", dsn, machine_steps(runs), lambda n: None, first_guess=0)
    machine.backlog = 10 ** 9  # events need no backlog: the runs are reused
    c.alternate([dag, graph, machine], n_rounds, seconds)
    chart = {"kind": "bars", "labels": ["DAG task claim+complete", "graph step", "machine event"],
             "values": [dag.median, graph.median, machine.median], "rounds": [dag.rates, graph.rates, machine.rates],
             "unit": "units/s, 4 connections"}
    for subject, what in ((graph, "graph step (claim_work + complete_work + edge)"),
                          (machine, "machine event (send_event)")):
        cost = dag.median / subject.median
        c.figure(f"{what} cost vs one DAG task's claim+complete", cost, "x",
                 target=f"<= {TARGET}", met=cost <= TARGET,
                 note=f"{subject.name} {subject.median:,.0f}/s, DAG task {dag.median:,.0f}/s; median of {n_rounds} "
                      f"alternating {seconds:g}s rounds, 4 connections", chart=chart if subject is graph else None)


if __name__ == "__main__":
    main()
