"""A worker takes only the tasks it has handlers for (issue 11, item 2).

Two services shared the ``default`` queue; each worker claimed every task on
it and failed the other service's for good ("no handler for task key ...").
The worker now passes its handler names to ``claim(task_names => ...)``: a
task nobody handles stays ready and visible.
"""

from __future__ import annotations

from helpers_runtime import (  # noqa: F401 - running is a fixture
    define, events, fast_worker, running, sql, start, tasks, wait_until,
)

RUNS = 8


def test_two_workers_with_different_handlers_share_a_queue(migrated_dsn, running):
    define(migrated_dsn, {"name": "two-services", "tasks": [
        {"key": "resize", "max_attempts": 3}, {"key": "index", "max_attempts": 3},
        {"key": "nobody", "max_attempts": 3},
    ]})
    runs = [start(migrated_dsn, "two-services", {"i": i}) for i in range(RUNS)]
    images = fast_worker(migrated_dsn, name="images", concurrency=2)
    search = fast_worker(migrated_dsn, name="search", concurrency=2)
    images.register("resize", lambda ctx, input: {"by": "images"})
    search.register("index", lambda ctx, input: {"by": "search"})
    running(images)
    running(search)

    def both_done():
        rows = sql(migrated_dsn, "SELECT count(*) FROM flowforge.task_run "
                                 "WHERE task_key IN ('resize', 'index') AND state = 'succeeded'")
        return rows[0][0] == 2 * RUNS
    wait_until(both_done, 30, "every resize and index task to succeed")

    for run_id in runs:
        result = tasks(migrated_dsn, run_id)
        assert result["resize"]["output"] == {"by": "images"} and result["resize"]["attempt"] == 1
        assert result["index"]["output"] == {"by": "search"} and result["index"]["attempt"] == 1
        # Nobody handles it: still ready, never claimed, no attempt used.
        assert result["nobody"]["state"] == "ready" and result["nobody"]["attempt"] == 1, result["nobody"]
        claimed_by = {(e[0], e[4]["worker"]) for e in events(migrated_dsn, run_id) if e[1] == "claimed"}
        assert claimed_by == {("resize", "images"), ("index", "search")}
    failed = sql(migrated_dsn, "SELECT count(*) FROM flowforge.task_run_event "
                               "WHERE kind IN ('failed', 'retry_scheduled')")
    assert failed[0][0] == 0
    assert images.stats["failed"] == search.stats["failed"] == 0


def test_a_worker_with_no_handlers_claims_nothing(migrated_dsn, running):
    define(migrated_dsn, {"name": "unserved", "tasks": [{"key": "only"}]})
    run_id = start(migrated_dsn, "unserved")
    idle = running(fast_worker(migrated_dsn, name="no-handlers"))
    # The worker is up (it polls every 0.2 s) and must leave the task alone.
    wait_until(lambda: sql(migrated_dsn, "SELECT count(*) FROM pg_stat_activity "
                                         "WHERE datname = current_database() AND pid <> pg_backend_pid()")[0][0] >= 2,
               10, "the worker's connections")
    ready_polls = 0
    while ready_polls < 10:  # ten observations across two seconds of polling
        assert tasks(migrated_dsn, run_id)["only"]["state"] == "ready"
        ready_polls += 1
        idle.join(0.2)
    assert not [e for e in events(migrated_dsn, run_id) if e[1] == "claimed"]
