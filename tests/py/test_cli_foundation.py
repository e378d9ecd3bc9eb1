"""The CLI as a user runs it: a subprocess, exit codes, stdout/stderr."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from flowforge import embedded

import subprocess

FLOWFORGE = Path(sys.executable).with_name("flowforge")


def run(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
        timeout: float = 120) -> subprocess.CompletedProcess:
    if not FLOWFORGE.exists():
        pytest.fail(f"console script not installed at {FLOWFORGE} (pip install -e .)", pytrace=False)
    base = {k: v for k, v in os.environ.items() if k not in ("FLOWFORGE_DSN", "FLOWFORGE_AMQP_URL")}
    base.update(env or {})
    return subprocess.run([str(FLOWFORGE), *args], capture_output=True, text=True,
                          env=base, cwd=cwd, timeout=timeout)


def assert_one_line_error(proc: subprocess.CompletedProcess) -> None:
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("flowforge: error:"), proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout


def test_migrate_and_doctor_with_dsn(fresh_dsn):
    migrated = run("--dsn", fresh_dsn, "migrate")
    assert migrated.returncode == 0, migrated.stderr
    assert "applied" in migrated.stdout

    doctor = run("--dsn", fresh_dsn, "doctor")
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    names = [line.split("  ")[0] for line in doctor.stdout.splitlines()]
    assert names[:4] == ["database", "server version", "schema version", "pending migrations"]


def test_doctor_json_and_env_dsn(fresh_dsn):
    run("--dsn", fresh_dsn, "migrate").check_returncode()
    proc = run("--json", "doctor", env={"FLOWFORGE_DSN": fresh_dsn})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert report["ok"] is True
    by_name = {c["name"]: c for c in report["checks"]}
    assert by_name["database"]["detail"].endswith("(from env)")
    assert by_name["broker"]["status"] == "skip"


def test_doctor_reports_pending_migrations(fresh_dsn):
    proc = run("--dsn", fresh_dsn, "doctor")
    assert proc.returncode == 1
    assert "pending migrations  problem" in proc.stdout


def test_doctor_masks_password(fresh_dsn):
    proc = run("--dsn", fresh_dsn + " password=sekrit", "doctor")
    assert "sekrit" not in proc.stdout + proc.stderr


def test_doctor_checks_broker_when_configured(fresh_dsn):
    run("--dsn", fresh_dsn, "migrate").check_returncode()
    bad = run("--dsn", fresh_dsn, "doctor", env={"FLOWFORGE_AMQP_URL": "amqp://guest:guest@127.0.0.1:1/"})
    assert bad.returncode == 1
    assert "broker" in bad.stdout and "problem" in bad.stdout
    url = os.environ.get("FLOWFORGE_TEST_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/")
    good = run("--dsn", fresh_dsn, "--json", "doctor", env={"FLOWFORGE_AMQP_URL": url})
    broker = {c["name"]: c for c in json.loads(good.stdout)["checks"]}["broker"]
    assert broker["status"] == "ok", broker


def test_unreachable_database_is_one_line():
    assert_one_line_error(run("--dsn", "postgresql://postgres@127.0.0.1:1/postgres", "doctor"))


def test_invalid_dsn_is_one_line():
    assert_one_line_error(run("--dsn", "host=127.0.0.1 this-is-not-a-dsn", "doctor"))
    assert_one_line_error(run("--dsn", "host=127.0.0.1 bogus_option=1", "migrate"))


def test_usage_error_exits_2():
    proc = run("no-such-command")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_embedded_default_migrate_and_doctor(tmp_path):
    """`make demo` without a database server: pgserver under ./.flowforge/pgdata."""
    try:
        migrated = run("migrate", cwd=tmp_path, timeout=300)
        assert migrated.returncode == 0, migrated.stdout + migrated.stderr
        assert (tmp_path / ".flowforge" / "pgdata" / "PG_VERSION").exists()

        doctor = run("doctor", cwd=tmp_path, timeout=120)
        assert doctor.returncode == 0, doctor.stdout + doctor.stderr
        assert "embedded PostgreSQL in" in doctor.stdout
        assert doctor.stderr == ""

        # The server outlives each command and is reused by the next one.
        assert embedded.is_running(tmp_path)
        again = run("migrate", cwd=tmp_path)
        assert again.returncode == 0 and "no pending migrations" in again.stdout
    finally:
        embedded.stop(tmp_path)
    assert not embedded.is_running(tmp_path)
