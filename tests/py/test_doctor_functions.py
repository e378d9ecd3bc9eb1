"""doctor's shipped-function check: the header parser, its resolution, and the check itself.

The parser is tested on text PostgreSQL itself accepts: the tricky headers
below are executed, then read back by the parser, and every header must
resolve to exactly the function PostgreSQL created from it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from flowforge import migrate, shipped
from flowforge.catalog import Catalog

FLOWFORGE = Path(sys.executable).with_name("flowforge")

TRICKY = r"""
CREATE SCHEMA flowforge;
CREATE TYPE flowforge.mood AS ENUM ('ok', 'meh');

-- CREATE OR REPLACE FUNCTION flowforge.in_a_comment(int) is not a header
/* nor is CREATE FUNCTION flowforge.in_a_block_comment(text) /* (nested) */ */
CREATE OR REPLACE FUNCTION flowforge.tricky(
    p_label text DEFAULT 'a, b (c',              -- a comment, with a comma (and a paren
    p_at    timestamp with time zone DEFAULT now(),
    OUT o_count integer,
    p_tags  text[] = ARRAY['x,y', 'it''s)'],
    INOUT p_ratio double precision DEFAULT power(2, 3),
    p_mood flowforge.mood DEFAULT 'ok'
) RETURNS record
LANGUAGE plpgsql AS $body$
BEGIN
    o_count := 1;
    -- CREATE FUNCTION flowforge.in_a_body_comment(int)
    RAISE NOTICE 'CREATE FUNCTION flowforge.in_a_string(int)';
END;
$body$;

create function flowforge.bare_types(int, double precision, character varying,
                                     timestamp without time zone, numeric(10, 2))
returns void language sql as $$ select $$;

CREATE FUNCTION flowforge.variadic_sum(VARIADIC p_values integer[]) RETURNS integer LANGUAGE sql AS 'SELECT 1';

CREATE FUNCTION flowforge.escaped(p text DEFAULT E'it\'s, (odd)') RETURNS text LANGUAGE sql AS 'SELECT p';

CREATE FUNCTION flowforge.no_args() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;

DO $$
BEGIN
    IF to_regprocedure('flowforge.inside_do()') IS NULL THEN
        CREATE FUNCTION flowforge.inside_do() RETURNS uuid LANGUAGE sql STABLE AS 'SELECT NULL::uuid';
    END IF;
END;
$$;

DROP FUNCTION IF EXISTS flowforge.never_created(int);
"""

EXPECTED = {
    "tricky": ("p_label text", "p_at timestamp with time zone", "p_tags text[]", "p_ratio double precision",
               "p_mood flowforge.mood"),
    "bare_types": ("int", "double precision", "character varying", "timestamp without time zone",
                   "numeric(10, 2)"),
    "variadic_sum": ("p_values integer[]",),
    "escaped": ("p text",),
    "no_args": (),
    "inside_do": (),
}

COUNT_FUNCTIONS = "SELECT count(*) FROM pg_proc WHERE pronamespace = 'flowforge'::regnamespace"


def doctor(dsn: str, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLOWFORGE_")}
    return subprocess.run([str(FLOWFORGE), "--dsn", dsn, *args, "doctor"], capture_output=True, text=True,
                          timeout=120, env=env)


# --- the parser, on text alone ----------------------------------------------------

def test_headers_are_read_from_code_only():
    headers = shipped.read_headers(TRICKY)
    assert {h.name: h.arguments for h in headers} == EXPECTED
    assert [h.name for h in headers] == list(EXPECTED), "one header each, in file order"
    assert headers[0].line == 7


def test_code_only_keeps_offsets_and_lines():
    code = shipped.code_only(TRICKY)
    assert len(code) == len(TRICKY) and code.count("\n") == TRICKY.count("\n")
    assert "in_a_comment" not in code and "in_a_string" not in code and "a, b" not in code
    assert "inside_do" in code  # a DO block is code


@pytest.mark.parametrize("argument, expected", [
    ("OUT o integer", None),
    ("  out\n o integer", None),
    ("INOUT x int DEFAULT 1", "x int"),
    ("VARIADIC xs text[]", "xs text[]"),
    ("input jsonb DEFAULT '{}'", "input jsonb"),
    ("outcome text", "outcome text"),
    ("lease interval = '30 seconds'", "lease interval"),
    ("at   timestamp\n  with time zone", "at timestamp with time zone"),
])
def test_signature_argument(argument, expected):
    assert shipped.signature_argument(argument) == expected


# --- resolution against PostgreSQL ------------------------------------------------

def test_every_tricky_header_resolves_to_the_function_postgres_created(fresh_dsn):
    with psycopg.connect(fresh_dsn, autocommit=True) as conn:
        conn.execute(TRICKY)
        catalog = Catalog(conn)
        resolved = shipped.resolve(catalog, shipped.read_headers(TRICKY))
        assert None not in resolved.values(), {str(h): oid for h, oid in resolved.items()}
        assert set(resolved.values()) == set(catalog.flowforge_functions())
        assert len(resolved) == conn.execute(COUNT_FUNCTIONS).fetchone()[0]


def test_parser_resolves_every_shipped_header(migrated_dsn):
    """A parser bug cannot hide: the shipped headers account for every function of a migrated database."""
    headers = shipped.headers_in(migrate.function_files() + migrate.migration_files())
    with psycopg.connect(migrated_dsn) as conn:
        catalog = Catalog(conn)
        resolved = shipped.resolve(catalog, headers)
        in_database = conn.execute(COUNT_FUNCTIONS).fetchone()[0]
        found = shipped.compare(catalog, migrate.function_files(), migrate.migration_files())
    assert [str(h) for h, oid in resolved.items() if oid is None] == []
    assert len(set(resolved.values())) == in_database
    assert found == shipped.Comparison(defined=in_database, unknown=(), missing=())


# --- the doctor check ---------------------------------------------------------------

def test_doctor_is_clean_on_a_migrated_database(migrated_dsn):
    proc = doctor(migrated_dsn, "--json")
    checks = {c["name"]: c for c in json.loads(proc.stdout)["checks"]}
    assert checks["functions"]["status"] == "ok", checks["functions"]
    assert proc.returncode == 0, proc.stdout + proc.stderr


def functions_problem_after(dsn: str, statement: str) -> str:
    """Run ``statement``, then doctor, which must fail; its ``functions`` line."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(statement)
    proc = doctor(dsn)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    line = next(line for line in proc.stdout.splitlines() if line.startswith("functions"))
    assert "problem" in line
    return line


def test_doctor_lists_a_function_no_shipped_file_defines(migrated_dsn):
    line = functions_problem_after(
        migrated_dsn, "CREATE FUNCTION flowforge.orphan_fn(int) RETURNS int LANGUAGE sql AS 'SELECT 1'")
    assert "flowforge.orphan_fn(integer)" in line
    assert "DROP FUNCTION IF EXISTS" in line and "90_retired.sql" in line


def test_doctor_lists_a_shipped_function_missing_from_the_database(migrated_dsn):
    line = functions_problem_after(migrated_dsn, "DROP FUNCTION flowforge.run_events(uuid)")
    assert "flowforge.run_events(run_id uuid)" in line and "flowforge migrate" in line


# --- which files are shipped, in which order -----------------------------------------

def test_function_files_are_found_recursively_with_grants_last(tmp_path, monkeypatch):
    for relative in ("migrations/0001_x.sql", "functions/99_grants.sql", "functions/10_substrate/20_protocol.sql",
                     "functions/00_core/90_retired.sql", "functions/00_core/00_meta.sql", "functions/05_flat.sql",
                     "functions/10_substrate/99_grants.sql", "functions/README.md"):
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text("-- empty\n")
    monkeypatch.setenv("FLOWFORGE_SQL_DIR", str(tmp_path))
    order = [p.relative_to(tmp_path / "functions").as_posix() for p in migrate.function_files()]
    assert order == ["00_core/00_meta.sql", "00_core/90_retired.sql", "05_flat.sql", "10_substrate/20_protocol.sql",
                     "10_substrate/99_grants.sql", "99_grants.sql"]
