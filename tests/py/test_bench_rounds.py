"""The benchmark harness's rounds measure the database, not the backlog (benchmarks/common.py).

Until stop 29 bench_dag's rounds, whose threads poll again after an empty claim,
timed their own idling once the queued runs were done, and sized round 1 from
``first_guess`` instead of the warm-up: every tree read 250, 375 and 563
completions/s. These tests pin the two rules that make a round a measurement.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import common as c  # noqa: E402  (benchmarks/ is not a package)

SPEC = {"name": "rounds", "tasks": [{"key": "only", "queue": "rounds"}]}


def test_a_polling_round_stops_when_its_backlog_is_done(migrated_dsn):
    c.define(migrated_dsn, SPEC)
    c.start_runs(migrated_dsn, "rounds", 40)
    n, secs = c.drain(migrated_dsn, c.ff_single_step("rounds", queue="rounds"), seconds=60,
                      stop_on_empty=False, limit=40)
    assert n == 40
    # Without the limit the threads would poll the empty queue until the 60 s deadline.
    assert secs < 30


def test_round_one_is_sized_from_the_warm_up(migrated_dsn):
    c.define(migrated_dsn, SPEC)
    queued: list[int] = []

    def enqueue(n: int) -> None:
        queued.append(n)
        c.start_runs(migrated_dsn, "rounds", n)

    subject = c.Subject("rounds", migrated_dsn, c.ff_single_step("rounds", queue="rounds"), enqueue,
                        first_guess=10, stop_on_empty=False)
    c.alternate([subject], 1, 0.5, warmup=0.5)
    assert len(queued) == 2, queued
    # The warm-up drained its 11 runs in well under its half second, so it measured a rate of
    # hundreds a second; round 1 queues what that rate needs, not first_guess again.
    assert subject.rates[0] > 40
    assert queued[1] > 3 * queued[0], queued
