"""What the trigger pytest files share (issue 16): ``flowforge serve`` as a real process, a
receiver login that is a member of ``flowforge_webhook`` only, signing, the firing log.

* ``ServeProcess`` runs ``python -m flowforge.cli serve`` on a free port (stderr in a
  file) and waits until ``/healthz`` answers 200 — never a sleep;
* ``webhook_login`` creates a LOGIN role whose one membership is ``flowforge_webhook``
  (roles are cluster-wide: ``drop_login`` removes it after the test's database);
* ``sign`` is what a sender computes: ``sha256=<hex HMAC-SHA256 of the body>``.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import httpx
import psycopg
from psycopg import sql as pgsql
from psycopg.conninfo import make_conninfo

from helpers_runtime import free_port, wait_until


def sign(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def webhook_login(admin_dsn: str, db_dsn: str) -> tuple[str, str]:
    """(role, dsn): a fresh LOGIN role in flowforge_webhook only, and a DSN to ``db_dsn``'s database as it."""
    role = f"ff_hooks_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(pgsql.SQL("CREATE ROLE {} LOGIN IN ROLE flowforge_webhook").format(pgsql.Identifier(role)))
    return role, make_conninfo(db_dsn, user=role)


def drop_login(admin_dsn: str, role: str) -> None:
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(pgsql.SQL("DROP ROLE IF EXISTS {}").format(pgsql.Identifier(role)))


class ServeProcess:
    """``flowforge serve`` in a subprocess on a free port of 127.0.0.1."""

    def __init__(self, dsn: str, *args: str, hooks_dsn: str | None = None, env: dict | None = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._log = tempfile.NamedTemporaryFile("w+", prefix="ffserve-", suffix=".log", delete=False)
        self.log_path = Path(self._log.name)
        hooks = ["--hooks-dsn", hooks_dsn] if hooks_dsn else []
        cmd = [sys.executable, "-m", "flowforge.cli", "--dsn", dsn, "serve", "--port", str(self.port), *hooks, *args]
        full_env = {k: v for k, v in os.environ.items() if k not in ("FLOWFORGE_HOOKS_DSN", "FLOWFORGE_POOLER")}
        full_env.update(env or {})
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, env=full_env,
                                     stdin=subprocess.DEVNULL)
        wait_until(self._healthy, 60, f"flowforge serve on port {self.port} to answer /healthz", interval=0.1)

    def _healthy(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"flowforge serve exited ({self.proc.returncode}):\n{self.log}")
        try:
            return httpx.get(self.url + "/healthz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    @property
    def log(self) -> str:
        return self.log_path.read_text()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self._log.close()
        self.log_path.unlink(missing_ok=True)


def firings(dsn: str, trigger_name: str) -> list[dict]:
    """Every firing recorded under ``trigger_name`` (any organization), oldest first, read as the superuser."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        cur = conn.execute("SELECT id, outcome, run_id, error, delivery_id, payload, fired_on, recorded_at "
                           "FROM flowforge.trigger_firing WHERE trigger_name = %s ORDER BY recorded_at, id",
                           (trigger_name,))
        names = [c.name for c in cur.description]
        return [dict(zip(names, row)) for row in cur.fetchall()]


def runs_triggered_by(dsn: str, trigger_name: str) -> list[dict]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        cur = conn.execute("SELECT run_id, engine_kind, triggered_by, trigger_firing_id FROM flowforge.engine_run "
                           "WHERE triggered_by = %s ORDER BY created_at", (trigger_name,))
        names = [c.name for c in cur.description]
        return [dict(zip(names, row)) for row in cur.fetchall()]
