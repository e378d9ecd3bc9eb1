"""Retired signatures are dropped on every migrate (sql/functions/00_core/90_retired.sql).

A database migrated while an old signature shipped keeps it — CREATE OR REPLACE
with a new argument list adds an overload — unless migrate drops it. These
recreate each retired signature the way an old release left it and check that
the next migrate removes it.
"""

from __future__ import annotations

import re

import psycopg

from flowforge import migrate


def _retired_signatures() -> list[str]:
    text = (migrate.sql_dir() / "functions" / "00_core" / "90_retired.sql").read_text()
    return re.findall(r"^DROP FUNCTION IF EXISTS (flowforge\.\w+\([^)]*\));", text, re.M)


def test_the_retired_file_names_the_first_retired_signature():
    assert "flowforge._task_input(jsonb, uuid, uuid)" in _retired_signatures()


def test_migrate_drops_every_retired_signature(migrated_dsn):
    signatures = _retired_signatures()
    with psycopg.connect(migrated_dsn, autocommit=True) as conn:
        for signature in signatures:
            # A stand-in body: what matters is the signature an old release left behind.
            conn.execute(f"CREATE FUNCTION {signature} RETURNS void LANGUAGE sql AS 'SELECT NULL'")
            assert conn.execute("SELECT to_regprocedure(%s) IS NOT NULL", (signature,)).fetchone()[0]
    migrate.migrate(migrated_dsn)
    with psycopg.connect(migrated_dsn) as conn:
        left = [s for s in signatures if conn.execute("SELECT to_regprocedure(%s)", (s,)).fetchone()[0] is not None]
    assert left == [], f"migrate left retired signatures behind: {left}"
