"""`flowforge migrate` behind an idle transaction: bounded lock waits, retries that say why, no stalled traffic.

Issue 12: migrate waited for ever behind one idle transaction, and every
claim that arrived after it queued behind its lock request.  Real
processes and connections: the blocker is an idle transaction on its own
connection, migrate is the installed CLI, and the live traffic is a claim
on a third connection.  Nothing here asserts a duration: the claim must
complete while migrate is still trying, whatever the machine's speed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import psycopg
import pytest

from flowforge import migrate
from helpers_core import claim, connect, define, single_spec, start_run
from test_cli_foundation import FLOWFORGE

# 0013 adds CHECK constraints NOT VALID: a brief ACCESS EXCLUSIVE lock on
# task_run, the lock that queues claims behind it.  (0014's VALIDATE takes
# SHARE UPDATE EXCLUSIVE, which claims pass, so one step behind would not do.)
BEFORE_LOCKING_MIGRATION = "0012"
# A migration after the newest one that takes the same lock as 0013, in a copy
# of the SQL folder: live claims run the newest functions, which need the
# newest schema, so that test cannot roll the schema back under them.
LOCKING_MIGRATION = "9990_test_locks_task_run"
# 0009 builds indexes CONCURRENTLY outside a transaction: it waits for old snapshots.
BEFORE_CONCURRENT_INDEX = "0008"
GENEROUS = 120  # seconds: only a hang hits this


def behind(dsn: str, version: str) -> None:
    """A migrated database with one ready task, then rolled back to ``version``."""
    migrate.migrate(dsn)
    with connect(dsn) as conn:
        define(conn, single_spec("locks"))
        start_run(conn, "locks")
    migrate.rollback(dsn, to=version)


def hold(dsn: str, *, snapshot: bool = False) -> psycopg.Connection:
    """An idle transaction holding ACCESS SHARE on flowforge.task_run (and, with ``snapshot``, its snapshot)."""
    conn = psycopg.connect(dsn, application_name="idle-holder")
    if snapshot:
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
    conn.execute("SELECT count(*) FROM flowforge.task_run")
    return conn


def sql_with_a_locking_migration(folder: Path) -> Path:
    """The shipped SQL folder plus LOCKING_MIGRATION, whose ALTER TABLE queues claims behind its lock request."""
    sql = folder / "sql"
    shutil.copytree(migrate.sql_dir(), sql)
    newest = migrate.known_migration_ids()[-1]
    (sql / "migrations" / f"{LOCKING_MIGRATION}.sql").write_text(
        f"-- depends: {newest}\n"
        "ALTER TABLE flowforge.task_run ADD CONSTRAINT test_locks_attempt CHECK (attempt >= 1) NOT VALID;\n")
    (sql / "migrations" / f"{LOCKING_MIGRATION}.rollback.sql").write_text(
        "ALTER TABLE flowforge.task_run DROP CONSTRAINT test_locks_attempt;\n")
    return sql


class Migrate:
    """`flowforge migrate` as a subprocess whose stderr is collected line by line as it comes."""

    def __init__(self, dsn: str, *args: str, sql: Path | None = None):
        env = dict(os.environ, FLOWFORGE_SQL_DIR=str(sql)) if sql else None
        self.proc = subprocess.Popen([str(FLOWFORGE), "--dsn", dsn, "migrate", *args], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))

    def wait_for_line(self, text: str) -> str:
        deadline = time.monotonic() + GENEROUS
        while time.monotonic() < deadline and self.proc.poll() is None:
            for line in self.lines:
                if text in line:
                    return line
            time.sleep(0.05)
        pytest.fail(f"migrate never said {text!r}; stderr so far: {self.lines}")

    def finish(self) -> int:
        code = self.proc.wait(timeout=GENEROUS)
        self._reader.join(GENEROUS)
        return code


def wait_until_migrate_waits_for_a_lock(dsn: str) -> None:
    deadline = time.monotonic() + GENEROUS
    with connect(dsn) as conn:  # autocommit: this connection must hold no snapshot
        while time.monotonic() < deadline:
            waiting = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = "
                                   "'flowforge-migrate' AND wait_event_type = 'Lock'").fetchone()[0]
            if waiting:
                return
            time.sleep(0.05)
    pytest.fail("migrate never waited for a lock")


def test_claims_pass_a_blocked_migration_which_says_why_and_succeeds_after(migrated_dsn, tmp_path):
    dsn = migrated_dsn
    with connect(dsn) as conn:
        define(conn, single_spec("locks"))
        start_run(conn, "locks")
    sql = sql_with_a_locking_migration(tmp_path)
    blocker = hold(dsn)
    blocker_pid = blocker.info.backend_pid
    run = Migrate(dsn, "--lock-timeout", "0.5", "--max-wait", str(GENEROUS), sql=sql)
    try:
        wait_until_migrate_waits_for_a_lock(dsn)

        # (a) live traffic: a claim issued while migrate waits completes while migrate is still trying.
        claimed: list = []
        with connect(dsn) as traffic:
            worker = threading.Thread(target=lambda: claimed.extend(claim(traffic, ["default"], "live-worker")))
            worker.start()
            worker.join(GENEROUS)
            assert not worker.is_alive(), "the claim stalled behind the migration"
        assert len(claimed) == 1
        assert run.proc.poll() is None, "migrate should still be trying while the blocker lives"

        # (b) migrate says who is in the way.
        line = run.wait_for_line(f"waiting for pid {blocker_pid}")
        assert line.startswith(f"flowforge: migrate: {LOCKING_MIGRATION}: no lock within 0.5 s")
        assert "application idle-holder" in line and "idle in transaction for" in line
        assert "holding AccessShareLock on flowforge.task_run" in line and "trying again in" in line
    finally:
        blocker.close()  # (c) the blocker ends ...

    assert run.finish() == 0, run.lines  # ... and migrate gets through
    with connect(dsn) as conn:
        applied = conn.execute("SELECT count(*) FROM pg_constraint WHERE conname = 'test_locks_attempt'").fetchone()[0]
    assert applied == 1


def test_migrate_gives_up_after_max_wait_naming_the_blocker(migrated_dsn):
    dsn = migrated_dsn
    behind(dsn, BEFORE_LOCKING_MIGRATION)
    blocker = hold(dsn)
    blocker_pid = blocker.info.backend_pid
    try:
        # --max-wait counts from the start of migrate (process start included): room for a loaded machine.
        run = Migrate(dsn, "--lock-timeout", "1", "--max-wait", "8")
        code = run.finish()
        pending = migrate.pending_migrations(dsn)
    finally:
        blocker.close()
    assert code == 1
    *retries, last = run.lines
    assert retries and all(line.startswith("flowforge: migrate: 0013_payload_bounds:") for line in retries)
    assert last.startswith("flowforge: error: gave up on 0013_payload_bounds after 8 s")
    assert f"waiting for pid {blocker_pid}" in last
    assert f"pg_terminate_backend({blocker_pid})" in last
    assert not any("Traceback" in line for line in run.lines)
    assert pending[:2] == ["0013_payload_bounds", "0014_validate_bounds"]  # nothing half-applied


def test_concurrent_index_build_waits_for_an_old_snapshot_and_is_rebuilt_valid(migrated_dsn):
    """CREATE INDEX CONCURRENTLY that hits the lock timeout leaves an INVALID index; the retry must not keep it."""
    dsn = migrated_dsn
    behind(dsn, BEFORE_CONCURRENT_INDEX)
    blocker = hold(dsn, snapshot=True)
    blocker_pid = blocker.info.backend_pid
    run = Migrate(dsn, "--lock-timeout", "0.5", "--max-wait", str(GENEROUS))
    try:
        line = run.wait_for_line(f"waiting for pid {blocker_pid}")
        assert line.startswith("flowforge: migrate: 0009_lookup_indexes:")
        run.wait_for_line("DROP INDEX CONCURRENTLY IF EXISTS flowforge.idx_taskrun_ready_by_name")
    finally:
        blocker.close()
    assert run.finish() == 0, run.lines
    with connect(dsn) as conn:
        invalid = conn.execute("SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                               "WHERE c.relnamespace = 'flowforge'::regnamespace AND NOT i.indisvalid").fetchone()[0]
        built = conn.execute("SELECT to_regclass('flowforge.idx_taskrun_ready_by_name') IS NOT NULL").fetchone()[0]
    assert invalid == 0 and built
    assert migrate.pending_migrations(dsn) == []
