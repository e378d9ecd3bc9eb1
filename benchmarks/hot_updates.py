"""How many updates of the queue tables are HOT (heap-only), and why the rest are not.

    .venv/bin/python benchmarks/hot_updates.py [N]

Runs N single-task runs (default 2,000) through claim + complete on one
connection in a fresh database and prints, per table, n_tup_upd and
n_tup_hot_upd from pg_stat_user_tables. An update can be HOT only when no
indexed column changes and the page has room: task_run's claim changes
`state` (in the predicates of its partial claim indexes) and
`lease_expires_at` (indexed for the reaper), so its claim and complete are
non-HOT by design. workflow_run's counter update is HOT-eligible only while
the run goes on: a single-task run's one update also ends it (state and
finished_at are indexed). engine_run's end stamp is not indexed: its
updates miss HOT only for want of room on pages filled to 100%. Not a
timing: the counts are the same on a busy machine.
"""

from __future__ import annotations

import sys
import time

import common


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else common.scale(2000, 500)
    dsn = common.flowforge_database("hot")
    common.define(dsn, common.SINGLE_SPEC)
    common.start_runs(dsn, "single", n)
    step = common.ff_single_step("hot")
    with common.connect(dsn) as conn:
        conn.execute("SELECT pg_stat_reset()")
        done = 0
        while step(conn, 0):
            done += 1
        time.sleep(1.0)  # the statistics collector reports at most every 500 ms
        conn.execute("SELECT pg_stat_clear_snapshot()")
        rows = conn.execute(
            "SELECT relname, n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables"
            " WHERE schemaname = 'flowforge' AND relname IN ('task_run', 'workflow_run', 'engine_run')"
            " ORDER BY relname").fetchall()
    for relname, upd, hot in rows:
        share = hot / upd if upd else 0.0
        common.figure(f"HOT updates of {relname}", hot, "updates", baseline="all updates", baseline_value=upd,
                      ratio=share, note=f"{done} runs through claim + complete")


if __name__ == "__main__":
    main()
