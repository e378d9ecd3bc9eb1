"""Which commands may start the embedded PostgreSQL, and `flowforge status` / `flowforge stop`.

Issue 11: a command run from another folder silently started a second,
empty embedded server in ./.flowforge/ and then failed with
``schema "flowforge" does not exist [SQLSTATE 3F000]``.  Only ``migrate``
and ``demo`` create one now; everything else says what to do.
"""

from __future__ import annotations

import json

import pytest

from flowforge import migrate
from flowforge.db import embedded
from test_cli_foundation import assert_one_line_error, run

# Commands that must never create an embedded server (each needs the database).
NEEDS_A_DATABASE = [
    ("run", "list"), ("workflow", "list"), ("doctor",), ("queue", "list"), ("migrate", "--rollback"),
    ("daemon", "--amqp-url", "amqp://guest:guest@127.0.0.1:1/"),
]


@pytest.mark.parametrize("args", NEEDS_A_DATABASE, ids=" ".join)
def test_no_database_here_is_one_line_and_starts_nothing(tmp_path, args):
    proc = run(*args, cwd=tmp_path, timeout=60)
    assert_one_line_error(proc)
    assert "no embedded FlowForge database in" in proc.stderr
    assert "FLOWFORGE_DSN" in proc.stderr and "flowforge migrate" in proc.stderr
    assert not (tmp_path / ".flowforge").exists()


def test_status_without_a_server_starts_nothing(tmp_path):
    proc = run("status", cwd=tmp_path)
    assert proc.returncode == 3, proc.stderr
    assert "none in this folder" in proc.stdout
    report = json.loads(run("--json", "status", cwd=tmp_path).stdout)
    assert report["embedded"] is True and report["initialized"] is False and report["running"] is False
    assert not (tmp_path / ".flowforge").exists()
    stopped = run("stop", cwd=tmp_path)
    assert stopped.returncode == 0 and "no embedded PostgreSQL is running" in stopped.stdout


def test_status_with_a_dsn(migrated_dsn, make_database):
    report = json.loads(run("--dsn", migrated_dsn, "--json", "status").stdout)
    assert report["embedded"] is False and report["source"] == "flag"
    assert report["schema_version"] == migrate.known_schema_version() == report["expected_schema_version"]
    unmigrated = run("--dsn", make_database(), "status")
    assert unmigrated.returncode == 0 and "not migrated: run `flowforge migrate`" in unmigrated.stdout


def test_unmigrated_database_says_run_migrate(fresh_dsn):
    for args in (("run", "list"), ("workflow", "list"), ("run", "start", "x")):
        proc = run("--dsn", fresh_dsn, *args)
        assert_one_line_error(proc)
        assert "never migrated" in proc.stderr and "run `flowforge migrate`" in proc.stderr


@pytest.mark.slow
def test_migrate_creates_status_reports_stop_stops(tmp_path):
    project, inside = tmp_path / "project", tmp_path / "project" / "src"
    inside.mkdir(parents=True)
    try:
        created = run("migrate", cwd=project, timeout=300)
        assert created.returncode == 0, created.stdout + created.stderr

        status = run("status", cwd=project)
        assert status.returncode == 0, status.stderr
        assert "running (pid" in status.stdout and str(embedded.data_dir(project)) in status.stdout
        assert f"schema version       {migrate.known_schema_version()}" in status.stdout
        assert json.loads(run("--json", "status", cwd=project).stdout)["pid"] == embedded.status(project).pid

        assert run("run", "list", cwd=project).stdout == "no runs\n"
        below = run("run", "list", cwd=inside)  # a subfolder has no server of its own: point at the project
        assert_one_line_error(below)
        assert f"cd {project}" in below.stderr
        assert not (inside / ".flowforge").exists()

        stopped = run("stop", cwd=project)
        assert stopped.returncode == 0 and "stopped the embedded PostgreSQL" in stopped.stdout
        assert not embedded.is_running(project)
        after = run("status", cwd=project)
        assert after.returncode == 3 and "stopped" in after.stdout
        # The data folder is still there, so a command starts its server again.
        assert run("run", "list", cwd=project).stdout == "no runs\n"
    finally:
        embedded.stop(project)
    assert not embedded.is_running(project)
