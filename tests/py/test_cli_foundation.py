"""The CLI as a user runs it: a subprocess, exit codes, stdout/stderr."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from flowforge.db import embedded

FLOWFORGE = Path(sys.executable).with_name("flowforge")


def run(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
        timeout: float = 120, input: str | None = None) -> subprocess.CompletedProcess:
    """The installed ``flowforge`` with ``args``; stdin is ``input`` (a pipe), else /dev/null — never a terminal."""
    if not FLOWFORGE.exists():
        pytest.fail(f"console script not installed at {FLOWFORGE} (pip install -e .)", pytrace=False)
    base = {k: v for k, v in os.environ.items() if k not in ("FLOWFORGE_DSN", "FLOWFORGE_AMQP_URL")}
    base.update(env or {})
    stdin = {"input": input} if input is not None else {"stdin": subprocess.DEVNULL}
    return subprocess.run([str(FLOWFORGE), *args], capture_output=True, text=True,
                          env=base, cwd=cwd, timeout=timeout, **stdin)


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


# --- the layers under the CLI ---------------------------------------------------

def test_dsn_resolution_order():
    from flowforge import config

    env = {"FLOWFORGE_DSN": "dbname=from_env", "FLOWFORGE_AMQP_URL": "amqp://x/"}
    assert config.resolve("dbname=flag", environ=env).dsn_source == "flag"
    assert config.resolve(None, environ=env).dsn == "dbname=from_env"
    assert config.resolve(None, environ=env).amqp_url == "amqp://x/"
    embedded_settings = config.resolve(None, environ={"FLOWFORGE_DSN": "  "})
    assert embedded_settings.embedded and embedded_settings.dsn is None


@pytest.mark.parametrize("sqlstate, cls_name", [
    ("FF001", "NotFound"), ("FF002", "InvalidDefinition"), ("FF003", "InvalidArgument"),
    ("FF004", "LeaseLost"), ("FF005", "IllegalTransition"), ("FF006", "IdempotencyConflict"),
    ("FF007", "PermissionDenied"), ("FF008", "NotAuthenticated"), ("FF009", "PayloadTooLarge"),
    ("FF010", "SchemaVersionMismatch"), ("22012", "DatabaseError"),
])
def test_errors_are_mapped_by_sqlstate_only(fresh_dsn, sqlstate, cls_name):
    import psycopg

    from flowforge import db, errors

    # The message deliberately names another error: only the SQLSTATE may count.
    raise_it = ("DO $$ BEGIN RAISE EXCEPTION 'not found: lease lost' "
                f"USING ERRCODE = '{sqlstate}', HINT = 'do the thing'; END $$")
    with db.connect(fresh_dsn) as conn:
        with pytest.raises(errors.FlowForgeError) as caught, db.mapped_errors():
            conn.execute(raise_it)
    assert type(caught.value).__name__ == cls_name
    assert caught.value.sqlstate == sqlstate
    assert caught.value.hint == "do the thing"
    assert isinstance(caught.value.__cause__, psycopg.Error)


def test_connection_failure_is_database_unavailable():
    from flowforge import db, errors

    with pytest.raises(errors.DatabaseUnavailable):
        db.connect("host=127.0.0.1 port=1 user=postgres dbname=postgres")
    with pytest.raises(errors.InvalidArgument):
        db.connect("host=127.0.0.1 nonsense")


def test_mask_dsn_hides_password():
    from flowforge import db

    masked = db.mask_dsn("postgresql://u:s3cret@h:5432/d")
    assert "s3cret" not in masked and "***" in masked
