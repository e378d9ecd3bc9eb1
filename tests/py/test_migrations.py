"""Migrations: fresh install, idempotence, full rollback, and upgrade == fresh install."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict
from yoyo.migrations import MigrationList

from conftest import copy_database, drop_database
from flowforge import migrate

FLOWFORGE_SCHEMA_EXISTS = "SELECT count(*) FROM pg_namespace WHERE nspname = 'flowforge'"

# pg_dump noise that differs between two identical schemas.
_DUMP_NOISE = re.compile(r"^(--.*|\\(un)?restrict .*|SET .*|SELECT pg_catalog\.set_config.*)$")


def catalog_dump(dsn: str) -> str:
    """Schema-only dump of schema flowforge, normalised so equal schemas compare equal."""
    pg_dump = shutil.which("pg_dump")
    if pg_dump is None:
        pytest.fail("pg_dump not found on PATH", pytrace=False)
    out = subprocess.run(
        [pg_dump, "--schema-only", "--schema=flowforge", "--no-owner", "--dbname", dsn],
        check=True, capture_output=True, text=True,
    ).stdout
    lines = [line.rstrip() for line in out.splitlines()]
    return "\n".join(line for line in lines if line and not _DUMP_NOISE.match(line))


def schema_exists(dsn: str) -> bool:
    with psycopg.connect(dsn) as conn:
        return conn.execute(FLOWFORGE_SCHEMA_EXISTS).fetchone()[0] == 1


def test_migrate_fresh_database(fresh_dsn):
    known = migrate.known_migration_ids()
    assert known, "no migration files found"
    assert migrate.pending_migrations(fresh_dsn) == known

    result = migrate.migrate(fresh_dsn)

    assert result.applied == known
    assert result.function_files == [p.name for p in migrate.function_files()]
    assert migrate.pending_migrations(fresh_dsn) == []
    assert schema_exists(fresh_dsn)


def test_schema_version_function_reports_newest_migration(migrated_dsn):
    with psycopg.connect(migrated_dsn) as conn:
        exists = conn.execute("SELECT to_regprocedure('flowforge.schema_version()') IS NOT NULL").fetchone()[0]
        if not exists:
            pytest.skip("flowforge.schema_version() not defined yet")
        version = conn.execute("SELECT flowforge.schema_version()").fetchone()[0]
    assert version == migrate.known_schema_version()


def test_migrate_twice_is_a_no_op(migrated_dsn):
    before = catalog_dump(migrated_dsn)

    again = migrate.migrate(migrated_dsn)

    assert again.applied == []
    assert again.function_files, "functions must be re-applied even with nothing pending"
    assert migrate.pending_migrations(migrated_dsn) == []
    assert catalog_dump(migrated_dsn) == before


def test_full_rollback_removes_schema(migrated_dsn):
    result = migrate.rollback(migrated_dsn, everything=True)

    assert result.rolled_back == list(reversed(migrate.known_migration_ids()))
    assert not schema_exists(migrated_dsn)
    assert migrate.pending_migrations(migrated_dsn) == migrate.known_migration_ids()
    # and it can come back
    assert migrate.migrate(migrated_dsn).applied == migrate.known_migration_ids()


def test_rollback_with_nothing_applied_is_harmless(fresh_dsn):
    assert migrate.rollback(fresh_dsn).rolled_back == []
    assert migrate.rollback(fresh_dsn, everything=True).rolled_back == []


def test_rollback_is_one_step_by_default(migrated_dsn):
    """Issue 11: a bare rollback dropped every table; it now undoes the newest migration only."""
    known = migrate.known_migration_ids()

    result = migrate.rollback(migrated_dsn)

    assert result.rolled_back == [known[-1]]
    assert migrate.pending_migrations(migrated_dsn) == [known[-1]]
    assert schema_exists(migrated_dsn)


def test_rollback_to_a_version_keeps_it_and_passes_non_transactional_migrations(make_database):
    """--to rolls back through 0011 and 0009 (CREATE INDEX CONCURRENTLY, outside a transaction)
    and a migrate afterwards ends where a fresh install does."""
    fresh, db = make_database(), make_database()
    migrate.migrate(fresh)
    migrate.migrate(db)
    known = migrate.known_migration_ids()
    non_transactional = [m for m in known if "-- transactional: false" in
                         (migrate.migrations_dir() / f"{m}.sql").read_text()]
    assert non_transactional, "expected a non-transactional migration to roll back through"
    keep = known[known.index(non_transactional[0]) - 1]

    result = migrate.rollback(db, to=keep.split("_")[0])  # the number alone names it

    assert result.rolled_back == list(reversed(known[known.index(keep) + 1:]))
    assert set(non_transactional) <= set(result.rolled_back)
    assert migrate.applied_migrations(db)[-1] == keep
    assert migrate.migrate(db).applied == known[known.index(keep) + 1:]
    assert catalog_dump(db) == catalog_dump(fresh)


def test_rollback_that_reaches_the_first_migration_needs_everything(migrated_dsn):
    first = migrate.known_migration_ids()[0]
    migrate.rollback(migrated_dsn, to=first)  # down to the first: allowed, it is kept
    assert migrate.applied_migrations(migrated_dsn) == [first]
    with pytest.raises(migrate.RemovesEverything):
        migrate.rollback(migrated_dsn)  # one step now would drop the schema
    assert schema_exists(migrated_dsn)


def test_rollback_to_an_unknown_or_unapplied_version_is_refused(migrated_dsn):
    from flowforge import errors

    with pytest.raises(errors.InvalidArgument):
        migrate.rollback(migrated_dsn, to="9999")
    migrate.rollback(migrated_dsn)  # the newest is no longer applied
    with pytest.raises(errors.InvalidArgument):
        migrate.rollback(migrated_dsn, to=migrate.known_migration_ids()[-1])
    assert migrate.pending_migrations(migrated_dsn) == migrate.known_migration_ids()[-1:]


def apply_next(dsn: str, migration_id: str) -> None:
    """Apply one migration through yoyo in its own run and lock; it must be the next one pending."""
    backend = migrate._backend(dsn)
    try:
        pending = backend.to_apply(migrate._read_migrations())
        assert pending and pending[0].id == migration_id, f"{migration_id} is not next: {[m.id for m in pending][:3]}"
        with backend.lock():
            backend.apply_migrations(MigrationList([pending[0]]))
    finally:
        backend.connection.close()


def test_step_by_step_install_matches_fresh_install(admin_dsn, make_database):
    """Upgrading from every intermediate schema version ends where a fresh install does.

    A database gets the migrations one at a time (as successive releases
    would have applied them); after each k, a copy of it (CREATE DATABASE ...
    TEMPLATE: the same bytes as an install stopped at release k) is brought
    to head by ``flowforge migrate``: the remaining migrations, then the
    function files.  Function files are re-applied only at head: they are the
    current release's text and may name tables that only later migrations
    create (an older release shipped its own, older function text, which the
    repository no longer holds).
    """
    fresh = make_database()
    migrate.migrate(fresh)
    expected = catalog_dump(fresh)
    known = migrate.known_migration_ids()
    releases = make_database()
    releases_name = conninfo_to_dict(releases)["dbname"]

    for k, migration_id in enumerate(known, start=1):
        apply_next(releases, migration_id)
        assert migrate.applied_migrations(releases) == known[:k]
        name, stepwise = copy_database(admin_dsn, releases_name)
        try:
            assert migrate.pending_migrations(stepwise) == known[k:]

            result = migrate.migrate(stepwise)

            assert result.applied == known[k:]
            assert catalog_dump(stepwise) == expected, f"upgrade from {known[k - 1]} differs from a fresh install"
        finally:
            drop_database(admin_dsn, name)


def test_concurrent_migrates_serialise_on_yoyo_lock(fresh_dsn):
    """Several `flowforge migrate` at once (e.g. daemons starting together) all succeed, once."""
    exe = str(Path(sys.executable).with_name("flowforge"))
    procs = [subprocess.Popen([exe, "--json", "--dsn", fresh_dsn, "migrate"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(3)]
    outputs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], outputs
    applied = [json.loads(out)["applied"] for out, _ in outputs]
    assert sorted(map(len, applied)) == [0, 0, len(migrate.known_migration_ids())]
    assert migrate.pending_migrations(fresh_dsn) == []
