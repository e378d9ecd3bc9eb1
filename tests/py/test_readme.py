"""The README's examples run as written, and fit together.

Issue 11: the SQL worker lines used ``$1`` (not runnable in psql), the Python
snippet ran ``worker.run()`` at import, and the SQL workflow's tasks had no
handlers in the Python worker. Here the SQL block runs in psql, then the
Python block — saved as a module — is started with ``flowforge worker`` and
must finish the run the SQL started.
"""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from flowforge import db
from flowforge.client import Client
from test_cli_foundation import FLOWFORGE

README = Path(__file__).resolve().parents[2] / "README.md"


def block(language: str, after: str) -> str:
    """The first ```language block following the heading ``after``."""
    text = README.read_text(encoding="utf-8")
    found = re.search(rf"{re.escape(after)}.*?```{language}\n(.*?)```", text, re.S)
    assert found, f"no {language} block after {after!r} in README.md"
    return found.group(1)


def test_readme_keeps_two_setup_commands():
    commands = block("sh", "## Two commands")
    assert [line.split("#")[0].strip() for line in commands.splitlines()] == ["make demo", "make test"]


def test_readme_sql_then_python_worker_finish_the_run(migrated_dsn, tmp_path):
    psql = shutil.which("psql")
    if psql is None:
        pytest.fail("psql not found on PATH", pytrace=False)
    (tmp_path / "readme.sql").write_text(block("sql", "## Use it from SQL"))
    sql = subprocess.run([psql, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", migrated_dsn, "-f", "readme.sql"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert sql.returncode == 0, sql.stderr

    with db.connect(migrated_dsn, autocommit=True) as conn:
        api = Client(conn)
        (run,) = api.list_runs(workflow="etl")
        states = {t["key"]: t["state"] for t in api.get_run(run["id"])["tasks"]}
        assert states == {"extract": "succeeded", "transform": "ready", "load": "pending"}

        (tmp_path / "etl_worker.py").write_text(block("python", "## Use it from Python"))
        worker = subprocess.Popen([str(FLOWFORGE), "--dsn", migrated_dsn, "worker", "etl_worker:worker"],
                                  cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 60
            while api.get_run(run["id"])["state"] != "succeeded" and time.monotonic() < deadline:
                assert worker.poll() is None, worker.communicate()
                time.sleep(0.2)
        finally:
            worker.send_signal(signal.SIGTERM)
            _, err = worker.communicate(timeout=30)
        finished = api.get_run(run["id"])
    assert worker.returncode == 0, err
    assert finished["state"] == "succeeded", finished
    outputs = {t["key"]: t["output"] for t in finished["tasks"]}
    assert outputs == {"extract": {"rows": 42}, "transform": {"rows": 42}, "load": {"loaded": 42, "day": "2026-11-29"}}


def test_readme_python_does_not_run_at_import(tmp_path):
    (tmp_path / f"m{uuid.uuid4().hex[:6]}.py").write_text(block("python", "## Use it from Python"))
    module = next(tmp_path.glob("m*.py")).stem
    proc = subprocess.run([str(Path(FLOWFORGE).with_name("python")), "-c", f"import {module}"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
