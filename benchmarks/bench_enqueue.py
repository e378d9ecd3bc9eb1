"""(10) Bulk enqueue: 100,000 single-task runs with one start_runs call vs Graphile Worker's add_jobs, same run.

* FlowForge: ``flowforge.start_runs('single', inputs)`` with the 100,000 inputs
  sent by the client as one ``jsonb[]`` parameter: each run complete (its
  workflow_run, task run, directory row, events ``run_started`` and
  ``created``, audit row), one statement, one transaction.
* Graphile Worker (npm, ``benchmarks/.node``, installed by bench_peers'
  ``ensure_graphile``): ``graphile_worker.add_jobs`` with the 100,000 job specs
  sent as one JSON parameter (``peers/graphile_add_jobs.js``), one statement.
* Also, for scale: FlowForge's start_run called once per run by
  ``generate_series`` inside one statement (the old bulk path), on a tenth
  as many runs (its rate is what is compared).

Each side has its own database; rounds alternate (FlowForge, Graphile, start_run
loop), each after a VACUUM + CHECKPOINT; tables keep what earlier rounds
enqueued, on both sides. Figure: runs/s, ratio FlowForge / Graphile, target >= 1.
"""

from __future__ import annotations

import json
import os
import subprocess
import time

import common as c
from bench_peers import NODE_DIR, PEERS, ensure_graphile, url_of

N = int(os.environ.get("FF_BENCH_ENQUEUE_RUNS", c.scale(100_000, 20_000)))
N_LOOP = max(1000, N // 10)  # the start_run-per-run baseline is slow: a tenth of the runs, its rate compared
TARGET = 1.0


def flowforge_round(dsn: str) -> float:
    from psycopg.types.json import Jsonb

    c.checkpoint(dsn)
    inputs = [Jsonb({}) for _ in range(N)]
    with c.connect(dsn) as conn:
        conn.execute("SELECT 1")
        t0 = time.perf_counter()
        n = conn.execute("SELECT count(*) FROM flowforge.start_runs('single', %s::jsonb[])", [inputs]).fetchone()[0]
        secs = time.perf_counter() - t0
    assert n == N, n
    return N / secs


def loop_round(dsn: str) -> float:
    c.checkpoint(dsn)
    with c.connect(dsn) as conn:
        t0 = time.perf_counter()
        conn.execute("SELECT count(flowforge.start_run('single', '{}'::jsonb)) FROM generate_series(1, %s)", [N_LOOP])
        return N_LOOP / (time.perf_counter() - t0)


def graphile_round(dsn: str) -> float | None:
    with c.connect(dsn) as conn:
        if conn.execute("SELECT to_regclass('graphile_worker._private_jobs')").fetchone()[0]:
            conn.execute("VACUUM graphile_worker._private_jobs")
        conn.execute("CHECKPOINT")
    env = {**os.environ, "NODE_PATH": str(NODE_DIR / "node_modules")}
    r = subprocess.run(["node", str(PEERS / "graphile_add_jobs.js"), url_of(dsn), str(N)], capture_output=True,
                       text=True, timeout=600, env=env, cwd=str(c.HERE))
    if r.returncode != 0:
        c.progress("graphile add_jobs failed: " + " ".join(r.stderr.strip().splitlines()[-2:])[:300])
        return None
    result = json.loads(r.stdout.strip().splitlines()[-1])
    return result["jobs"] / result["seconds"]


def main() -> None:
    n_rounds = c.rounds(3)
    problem = ensure_graphile()
    ff_dsn = c.flowforge_database("enqueue")
    c.define(ff_dsn, c.SINGLE_SPEC)
    loop_dsn = c.flowforge_database("enqueue_loop")
    c.define(loop_dsn, c.SINGLE_SPEC)
    g_dsn = c.create_database("enqueue_graphile") if not problem else None
    ff, loop, graphile = [], [], []
    for r in range(n_rounds):
        ff.append(flowforge_round(ff_dsn))
        if g_dsn:
            rate = graphile_round(g_dsn)
            if rate is not None:
                graphile.append(rate)
        loop.append(loop_round(loop_dsn))
        c.progress(f"round {r + 1}/{n_rounds}: start_runs {ff[-1]:,.0f}/s"
                   + (f", add_jobs {graphile[-1]:,.0f}/s" if graphile else "") + f", start_run loop {loop[-1]:,.0f}/s")
    f, lp = c.median(ff), c.median(loop)
    chart = {"kind": "bars", "labels": ["FlowForge start_runs", "Graphile add_jobs", "FlowForge start_run loop"],
             "values": [f, c.median(graphile) if graphile else 0, lp], "unit": f"runs/s enqueuing {N:,}"}
    how = f"{N:,} single-task runs in one call, median of {n_rounds} alternating rounds"
    if graphile:
        g = c.median(graphile)
        c.figure(f"bulk enqueue of {N // 1000}k single-task runs", f, "runs/s", baseline="Graphile add_jobs",
                 baseline_value=g, ratio=f / g, target=f">= {TARGET:g}", met=f / g >= TARGET, note=how, chart=chart)
    else:
        c.figure(f"bulk enqueue of {N // 1000}k single-task runs", f, "runs/s",
                 note=how + f"; Graphile Worker skipped: {problem or 'add_jobs failed'}", chart=chart)
    c.figure("bulk enqueue, start_runs vs a start_run per run", f, "runs/s", baseline="start_run loop",
             baseline_value=lp, ratio=f / lp,
             note=f"one start_runs call of {N:,} vs generate_series calling start_run {N_LOOP:,} times")


if __name__ == "__main__":
    main()
