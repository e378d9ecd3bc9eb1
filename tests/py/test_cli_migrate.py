"""``flowforge migrate --rollback``: one step by default, --to VERSION, --all only when confirmed.

Issue 11: ``migrate --rollback`` dropped every table and all data, asked
nothing and exited 0.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess

from flowforge import migrate
from test_cli_foundation import FLOWFORGE, assert_one_line_error, run
from test_migrations import schema_exists


def test_rollback_undoes_one_migration(migrated_dsn):
    known = migrate.known_migration_ids()
    proc = run("--dsn", migrated_dsn, "migrate", "--rollback")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [f"rolled back 1 migration(s): {known[-1]}", f"schema version now {known[-2]}"]
    assert migrate.pending_migrations(migrated_dsn) == [known[-1]]

    again = json.loads(run("--dsn", migrated_dsn, "--json", "migrate", "--rollback").stdout)
    assert again == {"rolled_back": [known[-2]], "schema_version": known[-3]}


def test_rollback_to_keeps_that_version(migrated_dsn):
    known = migrate.known_migration_ids()
    proc = run("--dsn", migrated_dsn, "migrate", "--rollback", "--to", "0008")
    assert proc.returncode == 0, proc.stderr
    assert migrate.applied_migrations(migrated_dsn)[-1].startswith("0008_")
    assert f"schema version now {known[7]}" in proc.stdout
    assert_one_line_error(run("--dsn", migrated_dsn, "migrate", "--rollback", "--to", "9999"))


def test_rollback_that_would_remove_everything_needs_all(migrated_dsn):
    first = migrate.known_migration_ids()[0]
    assert run("--dsn", migrated_dsn, "migrate", "--rollback", "--to", first).returncode == 0
    proc = run("--dsn", migrated_dsn, "migrate", "--rollback")
    assert_one_line_error(proc)
    assert "--all" in proc.stderr
    assert schema_exists(migrated_dsn)


def test_rollback_all_refuses_without_a_terminal_or_yes(migrated_dsn):
    proc = run("--dsn", migrated_dsn, "migrate", "--rollback", "--all", input="y\n")
    assert_one_line_error(proc)
    assert "--yes" in proc.stderr
    assert schema_exists(migrated_dsn)

    done = run("--dsn", migrated_dsn, "migrate", "--rollback", "--all", "--yes")
    assert done.returncode == 0, done.stderr
    assert "schema flowforge removed" in done.stdout
    assert not schema_exists(migrated_dsn)


def _on_a_terminal(dsn: str, answer: bytes) -> subprocess.CompletedProcess:
    """``migrate --rollback --all`` with stdin a pseudo-terminal, answering the prompt with ``answer``."""
    primary, secondary = pty.openpty()
    try:
        env = {k: v for k, v in os.environ.items() if k != "FLOWFORGE_DSN"}
        proc = subprocess.Popen([str(FLOWFORGE), "--dsn", dsn, "migrate", "--rollback", "--all"], stdin=secondary,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        os.write(primary, answer)
        out, err = proc.communicate(timeout=120)
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    finally:
        os.close(primary)
        os.close(secondary)


def test_rollback_all_asks_on_a_terminal(migrated_dsn):
    declined = _on_a_terminal(migrated_dsn, b"n\n")
    assert declined.returncode != 0
    assert "Roll back every migration" in declined.stderr and "nothing was rolled back" in declined.stderr
    assert schema_exists(migrated_dsn)

    accepted = _on_a_terminal(migrated_dsn, b"y\n")
    assert accepted.returncode == 0, accepted.stderr
    assert not schema_exists(migrated_dsn)


def test_rollback_options_need_rollback(migrated_dsn):
    for args in (("--to", "0008"), ("--all",), ("--rollback", "--yes"), ("--rollback", "--all", "--to", "0008")):
        proc = run("--dsn", migrated_dsn, "migrate", *args)
        assert proc.returncode == 2, (args, proc.stderr)
    assert migrate.pending_migrations(migrated_dsn) == []
