"""Per-statement cost of claim(1) + complete, nested statements included, from pg_stat_statements.

Not part of ``make bench``: it needs ``pg_stat_statements`` in shared_preload_libraries
(a server restart), which the benchmark machine does not have. Where it is loaded:

    ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements';   -- then restart
    ALTER SYSTEM SET pg_stat_statements.track = 'all'; SELECT pg_reload_conf();

and this script, once per tree to compare (each tree's sql/ through FLOWFORGE_SQL_DIR):

    FLOWFORGE_SQL_DIR=<tree>/sql .venv/bin/python benchmarks/profile_statements.py [--pairs 5000]

One connection, autocommit (two commits per job, as the benchmarks), a backlog of
single-task runs; after a warm-up the statistics are reset and N pairs timed. Each
line is a statement's executor time per job (nested statements are inside their
caller's figure too) and how often it ran per job. Unlike profile_claim.py's
auto_explain, nothing here slows the statements down, so two trees can be compared
figure by figure (docs/execution-model.md, "What remains").
"""

from __future__ import annotations

import argparse
import time

import common as c


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=5000)
    args = parser.parse_args()
    dsn = c.flowforge_database("profile_statements")
    c.define(dsn, c.SINGLE_SPEC)
    c.start_runs(dsn, "single", args.pairs + 3000)
    c.checkpoint(dsn)
    step = c.ff_single_step("pgss")
    with c.connect(dsn) as conn:
        loaded = conn.execute("SELECT count(*) FROM pg_settings WHERE name = 'pg_stat_statements.track'").fetchone()[0]
        if not loaded:
            raise SystemExit("profile_statements: pg_stat_statements is not in shared_preload_libraries (see --help)")
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        for i in range(300):
            step(conn, 0)
        conn.execute("SELECT pg_stat_statements_reset()")
        t0 = time.perf_counter()
        for i in range(args.pairs):
            step(conn, 0)
        wall = (time.perf_counter() - t0) / args.pairs * 1e6
        rows = conn.execute(
            "SELECT total_exec_time * 1000 / %s, calls::float8 / %s, regexp_replace(left(query, 110), '\\s+', ' ', 'g') "
            "FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) "
            "AND query NOT LIKE '%%pg_stat_statements%%' ORDER BY total_exec_time DESC LIMIT 25",
            [args.pairs, args.pairs]).fetchall()
    print(f"claim(1) + complete, one connection: {wall:,.0f} us wall per job")
    for us, per, query in rows:
        print(f"{us:8.1f} us {per:5.2f}x  {query}")


if __name__ == "__main__":
    main()
