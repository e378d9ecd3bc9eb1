"""(5) History growth: claim+complete throughput with 1M finished task runs in the tables.

Two databases, both migrated: one empty, one filled with finished history by
``history_fill.sql`` (set-based INSERT ... SELECT generate_series as the
superuser, every constraint respected): runs of a 10-task workflow, all
succeeded, with their events (3 per task run, 2 per run), then VACUUM ANALYZE
and CHECKPOINT.  The bench_claim step (claim 1 + complete) then runs on both,
in turn job by job on each of 4 connections (``common.interleave``), each with
its own backlog of single-task runs queued beforehand; the figure is the median
per-round cost empty / full.

The fill is done in chunks of 100,000 task runs and stops early when the next
chunk would not fit in the time budget (FF_BENCH_HISTORY_BUDGET seconds,
default 210), so ``make bench`` fits its 15 minutes on a slow or busy
machine; the output says what size was reached.  ``--rows N`` (or
FF_BENCH_HISTORY_ROWS) sets the target size (default 1,000,000).
"""

from __future__ import annotations

import argparse
import os
import time

import common as c

TARGET = 0.9
CHUNK = 100_000
HIST10 = {"name": "hist10", "tasks": [{"key": f"t{i}"} for i in range(10)]}


def fill(dsn: str, rows: int, budget: float) -> int:
    script = (c.HERE / "history_fill.sql").read_text()
    c.define(dsn, HIST10)
    done = 0
    t0 = time.monotonic()
    with c.connect(dsn) as conn:
        conn.execute("SET maintenance_work_mem = '256MB'")
        # The months' partitions, as tick() would have made them ahead (0032).
        c.history_partitions(conn, "now() - interval '30 days'", "now()")
        while done < rows:
            chunk = min(CHUNK, rows - done)
            t = time.monotonic()
            with conn.transaction():
                conn.execute(script.replace(":runs", str(chunk // 10)).replace(":from", "(now() - interval '30 days')")
                             .replace(":until", "now()"))
                conn.execute("DROP TABLE hist_run, hist_task")
            done += chunk
            spent, last = time.monotonic() - t0, time.monotonic() - t
            c.progress(f"history: {done:,} task runs in {spent:.0f}s")
            if done < rows and spent + last * 1.3 > budget:
                c.progress(f"history: stopping at {done:,} task runs: the next chunk would pass the {budget:.0f}s budget")
                break
        conn.execute("VACUUM ANALYZE")
        conn.execute("CHECKPOINT")
    return done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=int(os.environ.get("FF_BENCH_HISTORY_ROWS",
                                                                        "200000" if c.QUICK else "1000000")))
    parser.add_argument("--budget", type=float, default=float(os.environ.get("FF_BENCH_HISTORY_BUDGET", "210")))
    args = parser.parse_args()
    n_rounds, jobs = c.rounds(5), c.scale(400, 120)
    empty_dsn = c.flowforge_database("hist_empty")
    full_dsn = c.flowforge_database("hist_full")
    t0 = time.monotonic()
    rows = fill(full_dsn, args.rows, args.budget)
    fill_secs = time.monotonic() - t0
    with c.connect(full_dsn) as conn:
        events = conn.execute("SELECT count(*) FROM flowforge.task_run_event").fetchone()[0]
        size = conn.execute("SELECT pg_size_pretty(pg_database_size(current_database()))").fetchone()[0]
    # Both in turn job by job on each of 4 connections (common.interleave): rounds of seconds each
    # saw a different machine. The backlog is queued before the first round, in both databases.
    threads, warmup = 4, 20
    for dsn in (empty_dsn, full_dsn):
        c.define(dsn, c.SINGLE_SPEC)
        c.start_runs(dsn, "single", n_rounds * threads * (jobs + warmup) + 100)
        with c.connect(dsn) as conn:
            conn.execute("VACUUM ANALYZE")
    step = c.ff_single_step()
    us: dict[str, list[float]] = {empty_dsn: [], full_dsn: []}
    for r in range(n_rounds):
        pair = (empty_dsn, full_dsn) if r % 2 == 0 else (full_dsn, empty_dsn)
        for dsn, cost in zip(pair, c.interleave(pair, (step, step), threads=threads, jobs=jobs, warmup=warmup)):
            us[dsn].append(cost)
        c.progress(f"round {r + 1}/{n_rounds}: empty {us[empty_dsn][-1]:,.0f} us/job, "
                   f"full {us[full_dsn][-1]:,.0f} us/job")
    ratio = c.median([e / f for e, f in zip(us[empty_dsn], us[full_dsn])])  # cost empty / cost full
    empty_rate, full_rate = (threads * 1e6 / c.median(us[d]) for d in (empty_dsn, full_dsn))
    size_note = f"{rows:,} finished task runs + {events:,} events ({size}, filled in {fill_secs:.0f}s)"
    if rows < args.rows:
        size_note += f"; NOT the {args.rows:,} asked for: the fill budget of {args.budget:.0f}s ran out"
    c.figure(f"claim+complete with {rows / 1e6:g}M history rows", full_rate, "jobs/s", baseline="empty database",
             baseline_value=empty_rate, ratio=ratio, target=f">= {TARGET}", met=ratio >= TARGET,
             note=f"{size_note}; median of {n_rounds} rounds of {jobs} jobs a side on each of {threads} conns, "
                  "the two in turn job by job",
             chart={"kind": "bars", "labels": ["empty database", f"{rows / 1e6:g}M task runs of history"],
                    "values": [empty_rate, full_rate],
                    "rounds": [[threads * 1e6 / u for u in us[empty_dsn]], [threads * 1e6 / u for u in us[full_dsn]]],
                    "unit": "jobs/s"})

if __name__ == "__main__":
    main()
