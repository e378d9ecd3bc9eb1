"""Does a subject's rate hold from round to round on one growing database?

    .venv/bin/python benchmarks/round_decay.py [--rounds 6] [--steps 3000] [--no-vacuum]

bench_engines' graph step (claim_work + complete_work on a two-node graph), 4 connections,
``--steps`` runs queued and drained per round. Each round starts from common.checkpoint
(the tables vacuumed, a CHECKPOINT) unless ``--no-vacuum`` (CHECKPOINT only): the
difference between the two is what earlier rounds' dead rows cost a later one — a
benchmark whose rounds do not vacuum a table they update measures that, not the engine.
"""

from __future__ import annotations

import argparse

import bench_engines as be
import common as c


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--no-vacuum", action="store_true")
    args = parser.parse_args()
    dsn = c.flowforge_database("decay")
    c.define(dsn, be.GRAPH)
    for r in range(args.rounds):
        be.enqueue(dsn, "gstep", args.steps)
        c.checkpoint(dsn, vacuum=not args.no_vacuum)
        n, secs = c.drain(dsn, be.graph_step, seconds=120)
        with c.connect(dsn) as conn:
            dead = conn.execute("SELECT n_dead_tup FROM pg_stat_user_tables "
                                "WHERE schemaname = 'flowforge' AND relname = 'work_item'").fetchone()[0]
        print(f"round {r + 1}: {n / secs:,.0f} steps/s, work_item dead rows {dead:,}", flush=True)


if __name__ == "__main__":
    main()
