"""``make demo``'s path to the browser (issue 20): ``flowforge demo``, then ``flowforge serve`` with no DSN.

The demo's runs live in the folder's embedded PostgreSQL, in the default
organization.  ``flowforge serve`` with no DSN serves that database on logins
of its own — a gateway login, never the superuser — and a viewer key of the
default organization written to ``.flowforge/serve.key`` (mode 0600), reused
on the next start.  The demo says where to point the browser.
"""

from __future__ import annotations

import os
import shutil
import socket
import stat
import subprocess
import tempfile
import time
from pathlib import Path

import httpx
import psycopg
import pytest

from flowforge.db import embedded
from test_cli_foundation import FLOWFORGE, run


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_serve(project, port: int) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k not in ("FLOWFORGE_DSN", "FLOWFORGE_AMQP_URL")}
    return subprocess.Popen([str(FLOWFORGE), "serve", "--port", str(port), "--log-level", "warning"], cwd=project,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_ready(url: str, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"flowforge serve exited {proc.returncode}: {proc.stderr.read()}")
        try:
            if httpx.get(url + "/readyz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise AssertionError("flowforge serve was not ready within 120 s")


def stop(proc: subprocess.Popen) -> str:
    proc.terminate()
    try:
        _, err = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return err


@pytest.mark.slow
def test_demo_runs_are_served_from_the_embedded_default():
    # Not tmp_path: as root, pgserver runs PostgreSQL as its own user, who cannot enter pytest's 0700 folders.
    project = Path(tempfile.mkdtemp(prefix="ffserve-embedded-"))
    project.chmod(0o755)
    try:
        demo = run("demo", "--runs", "1", cwd=project, timeout=600)
        assert demo.returncode == 0, demo.stdout + demo.stderr
        assert "open http://127.0.0.1:8080" in demo.stdout and "flowforge serve --port 8080" in demo.stdout

        port = free_port()
        url = f"http://127.0.0.1:{port}"
        proc = start_serve(project, port)
        try:
            wait_ready(url, proc)
            key_file = project / ".flowforge" / "serve.key"
            assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
            key = key_file.read_text().strip()
            runs = httpx.get(url + "/api/v1/runs", headers={"Authorization": f"Bearer {key}"}).json()["items"]
            assert {r["workflow"] for r in runs} == {"nightly-report", "article-review", "order-delivery",
                                                    "photo-thumbnails"}
            assert all(r["state"] == "succeeded" for r in runs)
            login = httpx.get(url + "/login").text
            assert str(key_file) in login, "the login page says where the embedded default's key is"
            with psycopg.connect(embedded.status(project).dsn) as conn:
                users = {u for (u,) in conn.execute(
                    "SELECT usename FROM pg_stat_activity WHERE application_name LIKE 'flowforge-serve%'")}
                supers = {u for (u,) in conn.execute("SELECT rolname FROM pg_roles WHERE rolsuper")}
            assert users and not users & supers, f"serve reads as {users}, never as a superuser"
        finally:
            err = stop(proc)
        assert f"sign in with the API key in {key_file}" in err

        # A second start reuses the key (it still authenticates).
        proc = start_serve(project, port)
        try:
            wait_ready(url, proc)
            assert key_file.read_text().strip() == key
            assert httpx.get(url + "/api/v1/definitions", headers={"Authorization": f"Bearer {key}"}).status_code == 200
        finally:
            stop(proc)
    finally:
        embedded.stop(project)
        shutil.rmtree(project, ignore_errors=True)
