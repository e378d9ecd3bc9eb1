"""``flowforge purge --older-than DURATION``: a dry run by default, ``--apply`` batch after batch.

The retention rules themselves are flowforge.purge's (tests/sql/70_maintenance); this holds what
the command adds: the dry run removes nothing, --apply loops until nothing more is left (or one
batch with --once), live runs stay, bad input is one line and a non-zero exit with nothing removed.
"""

from __future__ import annotations

import json

from helpers_core import claim, complete, connect, define, single_spec, start_run
from test_cli_foundation import assert_one_line_error, run


def _ended_and_live(dsn: str, ended: int) -> str:
    """``ended`` single-task runs that succeeded and one still queued; returns the live run's id."""
    with connect(dsn) as conn:
        define(conn, single_spec("purged"))
        for _ in range(ended):
            start_run(conn, "purged")
        for task_run_id, _run, _key, _attempt, token, _input, _lease in claim(conn, ["default"], "w", batch=ended):
            complete(conn, task_run_id, token)
        return str(start_run(conn, "purged"))


def _runs(dsn: str) -> int:
    with connect(dsn) as conn:
        return conn.execute("SELECT count(*) FROM flowforge.workflow_run").fetchone()[0]


def _purge(dsn: str, *args: str) -> dict:
    proc = run("--dsn", dsn, "--json", "purge", "--older-than", "0 seconds", *args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_dry_run_reports_and_removes_nothing(migrated_dsn):
    _ended_and_live(migrated_dsn, 3)
    report = _purge(migrated_dsn)
    assert report["dry_run"] is True and report["batches"] == 1
    assert report["runs"] == {"dag": 3}
    assert report["removed"]["workflow_run"] == 3 and report["removed"]["engine_run"] == 3
    assert _runs(migrated_dsn) == 4

    text = run("--dsn", migrated_dsn, "purge", "--older-than", "0 seconds")
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith("dry run, nothing removed: runs that ended before ")
    assert "runs: dag 3" in text.stdout and "workflow_run 3" in text.stdout
    assert _runs(migrated_dsn) == 4


def test_apply_takes_every_batch_and_keeps_live_runs(migrated_dsn):
    live = _ended_and_live(migrated_dsn, 5)
    report = _purge(migrated_dsn, "--apply", "--batch-size", "2")
    assert report["dry_run"] is False
    assert report["batches"] == 3, report  # 2 + 2 + 1
    assert report["runs"] == {"dag": 5} and report["removed"]["workflow_run"] == 5
    assert report["more"] is False
    with connect(migrated_dsn) as conn:
        left = [str(r[0]) for r in conn.execute("SELECT id FROM flowforge.workflow_run").fetchall()]
    assert left == [live]


def test_once_takes_one_batch_and_says_more_remain(migrated_dsn):
    _ended_and_live(migrated_dsn, 2)
    proc = run("--dsn", migrated_dsn, "purge", "--older-than", "0 seconds", "--apply", "--once", "--batch-size", "1")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("purged in 1 batch(es): ")
    assert "more remain" in proc.stdout
    assert _runs(migrated_dsn) == 2


def test_bad_input_is_one_line_and_removes_nothing(migrated_dsn):
    _ended_and_live(migrated_dsn, 2)
    for args in (("--older-than", "banana", "--apply"), ("--older-than", "-1 day", "--apply"),
                 ("--older-than", "1 day", "--apply", "--batch-size", "0")):
        proc = run("--dsn", migrated_dsn, "purge", *args)
        assert_one_line_error(proc)
    assert "between 0 and 100 years" in run("--dsn", migrated_dsn, "purge", "--older-than", "-1 day").stderr
    assert _runs(migrated_dsn) == 3
    missing = run("--dsn", migrated_dsn, "purge")
    assert missing.returncode != 0 and "--older-than" in missing.stderr
