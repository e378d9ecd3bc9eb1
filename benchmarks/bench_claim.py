"""(1) Claim + complete, one task per claim, 4 connections: FlowForge vs a bare SKIP LOCKED table.

Both run in the same database with the same client loop (threads, psycopg,
prepared statements, autocommit: two commits per job).  FlowForge:
``claim(ARRAY['default'], worker, '30 seconds', 1)`` then ``complete(id, token,
NULL)`` on single-task runs pre-enqueued with ``start_run``.  Bare: the
``UPDATE … WHERE id = (SELECT … FOR UPDATE SKIP LOCKED) RETURNING id`` and a
completing ``UPDATE``.  Timed rounds alternate bare / FlowForge, each on a
backlog topped up beforehand; the figure is the median jobs/s of each and
their ratio.  bench_history.py reuses ``subjects()``.
"""

from __future__ import annotations

import common as c

TARGET = 0.8


def subjects(dsn: str, suffix: str = "") -> tuple[c.Subject, c.Subject]:
    c.define(dsn, c.SINGLE_SPEC)
    c.bare_setup(dsn)
    bare = c.Subject("bare" + suffix, dsn, c.bare_single_step, lambda n: c.bare_enqueue(dsn, n))
    ff = c.Subject("flowforge" + suffix, dsn, c.ff_single_step(), lambda n: c.start_runs(dsn, "single", n),
                   first_guess=1000)
    return bare, ff


def main() -> None:
    n_rounds, seconds = c.rounds(3), c.round_seconds()
    dsn = c.flowforge_database("claim")
    bare, ff = subjects(dsn)
    c.alternate([bare, ff], n_rounds, seconds)
    ratio = ff.median / bare.median
    c.figure("claim+complete 1/claim, 4 conns", ff.median, "jobs/s", baseline="bare SKIP LOCKED",
             baseline_value=bare.median, ratio=ratio, target=f">= {TARGET}", met=ratio >= TARGET,
             note=f"median of {n_rounds} alternating {seconds:g}s rounds",
             chart={"kind": "bars", "labels": ["bare SKIP LOCKED", "FlowForge"], "values": [bare.median, ff.median],
                    "rounds": [bare.rates, ff.rates], "unit": "jobs/s"})


if __name__ == "__main__":
    main()
