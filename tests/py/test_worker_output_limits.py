"""An output over the installation's limits fails its task for good, at once, with the real cause (issue 11, item 5).

The SDK used to log "complete ... not written: task output is 2000012 bytes,
over the limit", leave the lease to expire, and the recorded error became
"lease expired" — and the next attempt did the same.  ``complete`` refuses
such an output with FF009 and ``complete_many`` reports it ``too_large``;
either way the worker now calls ``fail(retryable => false)`` with the
reason.  The lease here is a minute and no reaper runs, so a task that
finishes within the wait below was failed by the worker, not by its lease.
"""

from __future__ import annotations

import pytest

from helpers_runtime import define, events, fast_worker, running, start, tasks, wait_finished  # noqa: F401


def nested(depth: int):
    value: object = "bottom"
    for _ in range(depth):
        value = {"down": value}
    return value


OUTPUTS = {
    "too_large": (lambda: {"blob": "x" * 2_000_000},
                  "task output is 2000012 bytes, over the limit of 1048576 bytes"),
    "too_deep": (lambda: nested(100), "task output is nested more than 64 levels deep"),
}


@pytest.mark.parametrize("batch_interval", [0.002, 0], ids=["complete_many", "complete"])
@pytest.mark.parametrize("kind", sorted(OUTPUTS))
def test_output_over_the_limit_fails_the_task_for_good_at_once(migrated_dsn, running, batch_interval, kind):
    make_output, reason = OUTPUTS[kind]
    define(migrated_dsn, {"name": "big", "tasks": [{"key": "big", "max_attempts": 3, "backoff": "0 seconds"},
                                                   {"key": "after", "depends_on": ["big"]}]})
    run_id = start(migrated_dsn, "big")
    worker = fast_worker(migrated_dsn, lease=60, complete_batch_interval=batch_interval)
    worker.register("big", lambda ctx, input: make_output())
    worker.register("after", lambda ctx, input: None)
    running(worker)

    assert wait_finished(migrated_dsn, run_id, timeout=20) == "failed"
    result = tasks(migrated_dsn, run_id)
    assert result["big"] == {"state": "failed", "attempt": 1, "output": None, "error": reason}
    assert result["after"]["state"] == "skipped"
    kinds = [e[1] for e in events(migrated_dsn, run_id) if e[0] == "big"]
    assert "lease_expired" not in kinds and "retry_scheduled" not in kinds, kinds
    assert worker.stats == {"completed": 0, "failed": 1, "dropped": 0}
