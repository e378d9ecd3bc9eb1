"""(9) Retention: claim+complete with 10M history rows vs an empty database, and purging a month of history.

Two databases, both migrated. The full one gets three whole calendar months of
finished history — the three before this one — in their monthly partitions
(0032), by ``history_fill.sql``: runs of a 10-task workflow with their
directory rows, task runs and events (32 events a run), until task_run_event
holds ``--rows`` rows (FF_BENCH_RETENTION_ROWS; default 10,000,000, quick:
300,000); then VACUUM ANALYZE and CHECKPOINT. The bench_claim loop (4
connections, claim 1 + complete) runs on each in alternating timed rounds:
the first figure is full / empty.

Then two purges of one month each on the full database, timed, their WAL
measured as the pg_current_wal_lsn() difference around them (a CHECKPOINT
before each, so both pay their full-page images alike):

* ``purge(older_than => <up to the start of the second month>, dry_run => false)``,
  called until its report says nothing is left: the oldest month's runs go row
  by row (directory rows, runs, task runs), its 1/3 of the events as a whole
  partition (TRUNCATE), as the operator's purge does;
* the second month the same way, but row by row throughout — an owner's purge,
  which never takes a month whole (``_purge`` with whole months off, as
  flowforge_system) — the baseline.

The figures: seconds and WAL megabytes of each, and their ratio (month whole /
row by row). Run the 10M version once: it takes a while (the fill, the
row-by-row purge).
"""

from __future__ import annotations

import argparse
import os
import time

import common as c
from bench_claim import subjects

TARGET = 0.9
EVENTS_PER_RUN = 32
CHUNK_RUNS = 10_000
HIST10 = {"name": "hist10", "tasks": [{"key": f"t{i}"} for i in range(10)]}


def months(conn) -> list:
    """The first instants of the three UTC months before this one, and of this one."""
    return [r[0] for r in conn.execute(
        "SELECT (date_trunc('month', now() AT TIME ZONE 'UTC') - k * interval '1 month') AT TIME ZONE 'UTC' "
        "FROM generate_series(3, 0, -1) k").fetchall()]


def fill(dsn: str, events: int) -> tuple[int, list]:
    script = (c.HERE / "history_fill.sql").read_text()
    c.define(dsn, HIST10)
    runs_total = max(3, events // EVENTS_PER_RUN)
    with c.connect(dsn) as conn:
        conn.execute("SET maintenance_work_mem = '256MB'")
        bounds = months(conn)
        c.history_partitions(conn, f"'{bounds[0].isoformat()}'::timestamptz", f"'{bounds[2].isoformat()}'::timestamptz")
        t0 = time.monotonic()
        for m in range(3):
            lo, hi = bounds[m], bounds[m + 1]
            per_month = runs_total // 3
            done = 0
            while done < per_month:
                k = min(CHUNK_RUNS, per_month - done)
                # Each chunk its own slice of the month, in time order.
                c_lo = f"('{lo.isoformat()}'::timestamptz + ('{hi.isoformat()}'::timestamptz - '{lo.isoformat()}'::timestamptz) * {done} / {per_month})"
                c_hi = f"('{lo.isoformat()}'::timestamptz + ('{hi.isoformat()}'::timestamptz - '{lo.isoformat()}'::timestamptz) * {done + k} / {per_month})"
                with conn.transaction():
                    conn.execute(script.replace(":runs", str(k)).replace(":from", c_lo).replace(":until", c_hi))
                    conn.execute("DROP TABLE hist_run, hist_task")
                done += k
                c.progress(f"history: month {m + 1}/3, {done:,}/{per_month:,} runs ({time.monotonic() - t0:.0f}s)")
        c.progress("history: VACUUM ANALYZE")
        conn.execute("VACUUM ANALYZE")
        conn.execute("CHECKPOINT")
    return runs_total, bounds


def wal_and_time(dsn: str, what: str, call) -> tuple[float, float, dict]:
    """Seconds and WAL megabytes of call(conn), which returns a summary."""
    with c.connect(dsn) as conn:
        conn.execute("CHECKPOINT")
        lsn0 = conn.execute("SELECT pg_current_wal_lsn()").fetchone()[0]
        t0 = time.perf_counter()
        summary = call(conn)
        secs = time.perf_counter() - t0
        wal = conn.execute("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), %s)", [lsn0]).fetchone()[0]
    c.progress(f"{what}: {secs:.1f}s, {float(wal) / 2**20:.1f} MB of WAL, {summary}")
    return secs, float(wal) / 2**20, summary


def purge_whole_months(conn, cutoff) -> dict:
    older_than = conn.execute("SELECT now() - %s::timestamptz", [cutoff]).fetchone()[0]
    calls, removed, months_emptied = 0, 0, []
    while True:
        report = conn.execute("SELECT flowforge.purge(%s, false, 5000)", [older_than]).fetchone()[0]
        calls += 1
        removed += sum(report["removed"].values())
        months_emptied += [p["partition"] for p in report["partitions"] if p.get("emptied") and p["rows"]]
        if not report["more"]:
            return {"calls": calls, "rows": removed, "months emptied": months_emptied}


def purge_row_by_row(conn, cutoff) -> dict:
    calls, removed = 0, 0
    conn.execute("SET ROLE flowforge_system")  # purge's role: the owner's path, every row through the triggers
    try:
        while True:
            report = conn.execute(
                "SELECT flowforge._purge(ARRAY['00000000-0000-0000-0000-000000000001']::uuid[], %s, NULL, NULL, 5000, "
                "false, false)", [cutoff]).fetchone()[0]
            calls += 1
            removed += sum(report["removed"].values())
            if not report["more"]:
                return {"calls": calls, "rows": removed}
    finally:
        conn.execute("RESET ROLE")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=int(os.environ.get("FF_BENCH_RETENTION_ROWS",
                                                                        "300000" if c.QUICK else "10000000")))
    args = parser.parse_args()
    n_rounds, seconds = c.rounds(3), c.round_seconds()
    empty_dsn = c.flowforge_database("ret_empty")
    full_dsn = c.flowforge_database("ret_full")
    t0 = time.monotonic()
    runs, bounds = fill(full_dsn, args.rows)
    fill_secs = time.monotonic() - t0
    with c.connect(full_dsn) as conn:
        events = conn.execute("SELECT count(*) FROM flowforge.task_run_event").fetchone()[0]
        size = conn.execute("SELECT pg_size_pretty(pg_database_size(current_database()))").fetchone()[0]
    _, empty = subjects(empty_dsn, " empty")
    _, full = subjects(full_dsn, " full")
    c.alternate([empty, full], n_rounds, seconds)
    ratio = full.median / empty.median
    label = f"{events / 1e6:.3g}M"
    c.figure(f"claim+complete with {label} history rows (partitioned by month)", full.median, "jobs/s",
             baseline="empty database", baseline_value=empty.median, ratio=ratio, target=f">= {TARGET}",
             met=ratio >= TARGET,
             note=f"{runs:,} finished runs, {events:,} events in 3 monthly partitions ({size}, filled in {fill_secs:.0f}s); "
                  f"median of {n_rounds} alternating {seconds:g}s rounds",
             chart={"kind": "bars", "labels": ["empty database", f"{label} history rows"],
                    "values": [empty.median, full.median], "rounds": [empty.rates, full.rates], "unit": "jobs/s"})

    whole_s, whole_mb, whole = wal_and_time(full_dsn, "purge of the oldest month (whole partition)",
                                            lambda conn: purge_whole_months(conn, bounds[1]))
    rows_s, rows_mb, by_rows = wal_and_time(full_dsn, "purge of the next month (row by row)",
                                            lambda conn: purge_row_by_row(conn, bounds[2]))
    note = (f"one month = {runs // 3:,} runs, {runs // 3 * 10:,} task runs, {runs // 3 * EVENTS_PER_RUN:,} events; "
            f"whole: {whole['calls']} calls of 5000 runs, months emptied {whole['months emptied']}; "
            f"row by row: {by_rows['calls']} calls")
    c.figure("purge one month of history: time", whole_s, "s", baseline="row by row", baseline_value=rows_s,
             ratio=whole_s / rows_s if rows_s else None, note=note,
             chart={"kind": "bars", "labels": ["month as a partition", "row by row"], "values": [whole_s, rows_s],
                    "unit": "s"})
    c.figure("purge one month of history: WAL", whole_mb, "MB", baseline="row by row", baseline_value=rows_mb,
             ratio=whole_mb / rows_mb if rows_mb else None, note=note,
             chart={"kind": "bars", "labels": ["month as a partition", "row by row"], "values": [whole_mb, rows_mb],
                    "unit": "MB"})


if __name__ == "__main__":
    main()
