"""A/B of claim(1) + complete on one connection: two SQL trees, alternating rounds.

Not part of ``make bench`` (no target): a finer instrument than the 4-connection loop when two
trees differ by a few percent. Each tree's ``sql/`` is migrated into a database of its own with
a backlog of single-task runs; then ``--rounds`` rounds of ``--pairs`` claim + complete pairs
alternate between the two (A B, B A, ...), each on its own connection, two commits per job.
Prints each side's median µs per job and the per-round cost ratio A / B with its median.

    .venv/bin/python benchmarks/ab_claim.py --a sql --b /path/to/other/tree/sql --rounds 20 --pairs 1500

``--interleave`` alternates the two job by job instead of round by round. ``--workflow`` queues
runs of bench_dag's shapes instead of single-task runs (``diamond``, ``fan10``, ``fan50``,
``fan200``): a job is then one task of a DAG run, its dependents' release included; ``gstep`` queues
bench_engines' two-node graph, and a job is its step (claim_work + complete_work, the edge, the end).
``--batch N`` makes a job bench_batch's ``claim(batch => N)`` + ``complete_many`` of what it took.
``--b-ddl SQL`` runs SQL in B's database after its migration: one schema change measured alone
(``--a sql --b sql --b-ddl "DROP INDEX ..."``). ``--threads N`` (with ``--interleave``) runs the
job-by-job alternation on N connections at once, as bench_dag's loop has 4: contention on a run's
row and its sink task is then in the figure, and drift still cancels job by job.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import common as c
from bench_batch import ff_batch_step
from bench_dag import DIAMOND, fan_spec
from bench_engines import GRAPH, graph_step

WORKFLOWS = {"single": (c.SINGLE_SPEC, 1), "diamond": (DIAMOND, 4),
             **{f"fan{w}": (fan_spec(w), w + 2) for w in (10, 50, 200)},
             "gstep": (GRAPH, 1)}


def database(label: str, sql_dir: Path, jobs: int, workflow: str, ddl: str | None = None) -> str:
    saved = os.environ.get("FLOWFORGE_SQL_DIR")
    os.environ["FLOWFORGE_SQL_DIR"] = str(sql_dir)
    try:
        dsn = c.flowforge_database(label)
    finally:
        if saved is None:
            os.environ.pop("FLOWFORGE_SQL_DIR", None)
        else:
            os.environ["FLOWFORGE_SQL_DIR"] = saved
    if ddl:
        with c.connect(dsn) as conn:
            conn.execute(ddl)
    spec, tasks = WORKFLOWS[workflow]
    c.define(dsn, spec)
    c.start_runs(dsn, spec["name"], jobs // tasks + 2)
    with c.connect(dsn) as conn:
        conn.execute("VACUUM ANALYZE")
    return dsn


def timed(conn, step, pairs: int) -> float:
    t0 = time.perf_counter()
    for _ in range(pairs):
        if not step(conn, 0):
            raise SystemExit("ab_claim: the backlog ran out; use fewer --rounds or --pairs")
    return (time.perf_counter() - t0) / pairs * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--a", type=Path, required=True, help="sql/ folder of side A")
    parser.add_argument("--b", type=Path, required=True, help="sql/ folder of side B")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--pairs", type=int, default=1500)
    parser.add_argument("--interleave", action="store_true",
                        help="alternate A and B job by job inside each round (common.interleave: drift on a "
                             "shared machine cancels at the scale of one job, not of a round)")
    parser.add_argument("--workflow", choices=sorted(WORKFLOWS), default="single",
                        help="the runs queued: single-task runs or one of bench_dag's shapes")
    parser.add_argument("--batch", type=int, default=1,
                        help="claim this many at a time and complete them with one complete_many")
    parser.add_argument("--b-ddl", help="SQL run in B's database after its migration (a schema change alone)")
    parser.add_argument("--threads", type=int, default=1,
                        help="with --interleave: this many connections a side, each alternating job by job")
    args = parser.parse_args()
    if args.threads < 1 or (args.threads > 1 and not args.interleave):
        parser.error("--threads needs --interleave and must be at least 1")
    jobs = (args.rounds * (args.pairs + 20) * args.threads + 1000) * args.batch
    dsns = [database("ab_a", args.a.resolve(), jobs, args.workflow),
            database("ab_b", args.b.resolve(), jobs, args.workflow, args.b_ddl)]
    if args.workflow == "gstep":
        step = graph_step
    else:
        step = c.ff_single_step("ab") if args.batch == 1 else ff_batch_step(args.batch)
    conns = [c.connect(d) for d in dsns]
    try:
        for conn in conns:
            timed(conn, step, 300)  # plans, caches
        a_us, b_us, ratios = [], [], []
        for r in range(args.rounds):
            order = (0, 1) if r % 2 == 0 else (1, 0)
            if args.interleave:
                a, b = c.interleave((dsns[order[0]], dsns[order[1]]), (step, step), threads=args.threads,
                                    jobs=args.pairs)
                got = {order[0]: a, order[1]: b}
            else:
                got = {i: timed(conns[i], step, args.pairs) for i in order}
            a_us.append(got[0])
            b_us.append(got[1])
            ratios.append(got[0] / got[1])
    finally:
        for conn in conns:
            conn.close()
        for d in dsns:
            c.drop_database(d)
    print(f"A {args.a}: median {statistics.median(a_us):,.0f} us per job; "
          f"B {args.b}: median {statistics.median(b_us):,.0f} us per job")
    print("cost A / B per round: " + " ".join(f"{x:.3f}" for x in ratios)
          + f"; median {statistics.median(ratios):.3f}, mean {statistics.mean(ratios):.3f}")


if __name__ == "__main__":
    main()
