"""What `run show` / `run events` / `run watch` / `run list` / `run start` say about runs that did not simply succeed.

Issue 11 (minor items): WORKER empty for finished tasks; "3/3 tasks done" for
a run with a failed and a skipped task; TOOK of a timed-out task counted to
the reap; a 1,000-task chain crashed the renderer (RecursionError);
``reason=None`` and ``upstream_task_id=<uuid>`` in events; ``run watch
--timeout --json`` printed nothing; ``run list --workflow nope`` said "no
runs"; no way to pass a large input; hints named SQL functions.
"""

from __future__ import annotations

import json
from pathlib import Path

import psycopg

from helpers_core import claim, complete, connect
from test_cli import applied, ff, ok  # noqa: F401 - fixtures
from test_cli_foundation import assert_one_line_error

CLOCK_FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "clock.sql"

MIXED = {"name": "mixed", "tasks": [
    {"key": "first"},
    {"key": "slow", "depends_on": ["first"], "timeout": "1 second", "max_attempts": 1},
    {"key": "last", "depends_on": ["slow"]},
]}


def reap_an_hour_later(dsn: str) -> None:
    """tick() with flowforge.now() an hour ahead: the reaper comes long after the timeout passed."""
    with psycopg.connect(dsn) as conn:
        conn.execute(CLOCK_FIXTURE.read_text())
        conn.execute("SELECT flowforge_test.freeze_clock(pg_catalog.now() + interval '1 hour')")
        conn.execute("SELECT flowforge.tick()")


def mixed_run(ff, tmp_path, dsn: str) -> str:
    """A run whose first task succeeded (worker w-first), second timed out (w-slow), third was skipped."""
    spec = tmp_path / "mixed.json"
    spec.write_text(json.dumps(MIXED))
    ok(ff("workflow", "apply", str(spec)))
    run_id = ok(ff("run", "start", "mixed")).strip()
    with connect(dsn) as conn:
        (first,) = claim(conn, ["default"], "w-first")
        complete(conn, first[0], first[4], {"ok": True})
        (slow,) = claim(conn, ["default"], "w-slow")
        assert slow[2] == "slow"
    reap_an_hour_later(dsn)
    return run_id


def test_run_show_of_a_failed_run(ff, tmp_path, migrated_dsn):
    run_id = mixed_run(ff, tmp_path, migrated_dsn)
    shown = ok(ff("run", "show", run_id))
    head, _, header, *rows = shown.splitlines()
    assert f"run {run_id}  mixed v1  failed  3/3 tasks done: 1 succeeded, 1 failed, 1 skipped" in head
    assert header.split() == ["TASK", "STATE", "ATTEMPT", "TOOK", "WORKER", "ERROR"]
    by_key = {row.split()[0]: row.split() for row in rows}
    assert by_key["first"][4] == "w-first"  # a finished task still names who ran it
    assert by_key["slow"][1] == "failed" and by_key["slow"][4] == "w-slow"
    assert by_key["slow"][3] == "1.0s"  # until its timeout, not the hour until the reap
    assert by_key["last"][1] == "skipped"


def test_run_watch_summary_of_a_failed_run(ff, tmp_path, migrated_dsn):
    run_id = mixed_run(ff, tmp_path, migrated_dsn)
    watched = ff("run", "watch", run_id)
    assert watched.returncode == 1
    assert "run failed: 3/3 tasks (1 succeeded, 1 failed, 1 skipped), 0 retries" in watched.stdout


def test_run_events_leave_out_nulls_and_name_the_upstream_task(ff, tmp_path, migrated_dsn):
    run_id = mixed_run(ff, tmp_path, migrated_dsn)
    events = ok(ff("run", "events", run_id))
    skipped = [line for line in events.splitlines() if " skipped " in f" {line} " and line.split()[3] == "last"]
    assert skipped and "upstream_task=slow" in skipped[0], events
    assert "upstream_task_id" not in events and "=None" not in events
    rows = json.loads(ok(ff("--json", "run", "events", run_id)))
    assert any(r["detail"] and "upstream_task_id" in r["detail"] for r in rows)  # --json keeps every field

    cancelled = ok(ff("run", "start", "mixed")).strip()
    ok(ff("run", "cancel", cancelled))  # no --reason: the event's reason is null
    assert "None" not in ok(ff("run", "events", cancelled))


def test_run_watch_timeout_with_json_prints_the_state(ff, applied):  # noqa: F811
    run_id = ok(ff("run", "start", "thumbnails")).strip()
    proc = ff("run", "watch", run_id, "--timeout", "0.2", "--interval", "0.1", "--json")
    assert proc.returncode == 3
    state = json.loads(proc.stdout)
    assert state["id"] == run_id and state["state"] == "running"


def test_run_list_of_an_unknown_workflow(ff, applied):  # noqa: F811
    proc = ff("run", "list", "--workflow", "nope")
    assert_one_line_error(proc)
    assert "no such workflow 'nope'" in proc.stderr and "flowforge workflow list" in proc.stderr
    assert ok(ff("run", "list", "--workflow", "thumbnails")) == "no runs\n"


def test_hints_name_cli_commands(ff, applied):  # noqa: F811
    unknown = ff("run", "start", "nope")
    assert_one_line_error(unknown)
    assert "flowforge workflow apply FILE" in unknown.stderr and "define_workflow" not in unknown.stderr
    shown = ff("workflow", "show", "nope")
    assert "flowforge workflow list" in shown.stderr and "list_workflows()" not in shown.stderr


def test_input_from_a_file_and_from_stdin(ff, applied, tmp_path):  # noqa: F811
    big = {"rows": list(range(50_000))}
    path = tmp_path / "input.json"
    path.write_text(json.dumps(big))
    from_file = ok(ff("run", "start", "thumbnails", "--input", f"@{path}")).strip()
    assert json.loads(ok(ff("run", "show", from_file, "--json")))["input"] == big
    from_stdin = ok(ff("run", "start", "thumbnails", "--input", "-", input='{"via": "stdin"}')).strip()
    assert json.loads(ok(ff("run", "show", from_stdin, "--json")))["input"] == {"via": "stdin"}
    missing = ff("run", "start", "thumbnails", "--input", f"@{tmp_path / 'absent.json'}")
    assert_one_line_error(missing)
    assert "cannot read --input @" in missing.stderr


def test_workflow_show_a_version(ff, applied, tmp_path):  # noqa: F811
    v2 = tmp_path / "v2.json"
    v2.write_text(json.dumps({"name": "thumbnails", "tasks": [{"key": "only"}]}))
    ok(ff("workflow", "apply", str(v2)))
    old = ok(ff("workflow", "show", "thumbnails", "--version", "1"))
    assert old.startswith("thumbnails  version 1  (4 tasks") and "the latest is version 2" in old
    assert json.loads(ok(ff("workflow", "show", "thumbnails", "--version", "1", "--json")))["version"] == 1
    assert ok(ff("workflow", "show", "thumbnails")).startswith("thumbnails  version 2  (1 tasks")
    missing = ff("workflow", "show", "thumbnails", "--version", "7")
    assert_one_line_error(missing)
    assert "version 7" in missing.stderr


def test_a_chain_of_the_documented_maximum_renders(ff, tmp_path):
    tasks = [{"key": "t0000"}] + [{"key": f"t{i:04d}", "depends_on": [f"t{i - 1:04d}"]} for i in range(1, 1000)]
    spec = tmp_path / "chain.json"
    # Listed last task first: drawing the first one listed then walks the whole chain.
    spec.write_text(json.dumps({"name": "chain", "tasks": tasks[::-1]}))
    ok(ff("workflow", "apply", str(spec)))
    run_id = ok(ff("run", "start", "chain")).strip()
    shown = ok(ff("run", "show", run_id)).splitlines()
    assert [line.split()[0] for line in shown[3:]] == [t["key"] for t in tasks]  # chain order
    drawn = ok(ff("workflow", "show", "chain"))
    assert drawn.count("▼") == 999
