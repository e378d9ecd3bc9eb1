"""Batched completions: pull results are written together by flowforge.complete_many."""

from __future__ import annotations

import time

import psycopg
import pytest
from psycopg.types.json import Jsonb

import flowforge

N_RUNS = 60


def _sql(dsn: str, query: str, *params):
    with psycopg.connect(dsn, autocommit=True) as conn:
        cur = conn.execute(query, params)
        return cur.fetchall() if cur.description else None


def _drain_with(dsn: str, interval: float) -> tuple[int, int, list]:
    """Run N_RUNS single-task runs through a worker; (succeeded runs, completion transactions, outputs)."""
    _sql(dsn, "SELECT flowforge.define_workflow(%s)", Jsonb({"name": "nop", "tasks": [{"key": "nop"}]}))
    _sql(dsn, "SELECT flowforge.start_run('nop', jsonb_build_object('i', i)) FROM generate_series(1, %s) i", N_RUNS)
    worker = flowforge.Worker(queues=["default"], concurrency=8, dsn=dsn, poll_interval=0.1,
                              complete_batch_interval=interval)

    @worker.task("nop")
    def nop(ctx, task_input):
        return {"i": task_input["run"]["i"]}

    worker.start()
    try:
        for _ in range(300):
            if _sql(dsn, "SELECT count(*) FROM flowforge.workflow_run WHERE state = 'succeeded'")[0][0] == N_RUNS:
                break
            time.sleep(0.1)
    finally:
        worker.stop()
        assert worker.join(30)
    succeeded = _sql(dsn, "SELECT count(*) FROM flowforge.workflow_run WHERE state = 'succeeded'")[0][0]
    # Each call is one transaction, and every event of a transaction carries its now().
    transactions = _sql(dsn, "SELECT count(DISTINCT created_at) FROM flowforge.task_run_event WHERE kind = 'completed'")[0][0]
    outputs = _sql(dsn, "SELECT (r.input ->> 'i')::int = (t.output ->> 'i')::int FROM flowforge.task_run t "
                        "JOIN flowforge.workflow_run r ON r.id = t.workflow_run_id")
    return succeeded, transactions, [ok for (ok,) in outputs]


def test_results_are_written_in_batches(migrated_dsn):
    succeeded, transactions, outputs = _drain_with(migrated_dsn, 0.05)
    assert succeeded == N_RUNS
    assert all(outputs) and len(outputs) == N_RUNS, "every task kept its own output"
    assert transactions < N_RUNS / 2, f"{transactions} completion transactions for {N_RUNS} tasks: not batched"


def test_interval_zero_writes_each_result_at_once(migrated_dsn):
    succeeded, transactions, outputs = _drain_with(migrated_dsn, 0)
    assert succeeded == N_RUNS and all(outputs)
    assert transactions == N_RUNS, "one complete() transaction per task"


def test_interval_is_validated():
    with pytest.raises(ValueError):
        flowforge.Worker(queues=["default"], complete_batch_interval=2)
