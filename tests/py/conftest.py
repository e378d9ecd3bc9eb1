"""Shared fixtures: a fresh PostgreSQL database per test, optionally migrated.

Each test gets its own database on the local server (``admin_dsn``) so tests
never see each other's rows and can run in any order; it is dropped
afterwards, after terminating any backend a test left connected.
"""

from __future__ import annotations

import itertools
import os
import uuid

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

from flowforge import migrate

ADMIN_DSN_ENV = "FLOWFORGE_TEST_ADMIN_DSN"
DEFAULT_ADMIN_DSN = "postgresql://postgres@127.0.0.1:5432/postgres"

_counter = itertools.count()

TERMINATE_BACKENDS = """
SELECT pg_terminate_backend(pid) FROM pg_stat_activity
 WHERE datname = %s AND pid <> pg_backend_pid()
"""


@pytest.fixture(scope="session")
def admin_dsn() -> str:
    """A superuser DSN to the maintenance database of the test server."""
    dsn = os.environ.get(ADMIN_DSN_ENV) or DEFAULT_ADMIN_DSN
    try:
        psycopg.connect(dsn, connect_timeout=5).close()
    except psycopg.OperationalError as exc:
        pytest.fail(f"test PostgreSQL not reachable at {dsn} ({ADMIN_DSN_ENV}): {exc}", pytrace=False)
    return dsn


def create_database(admin_dsn: str) -> tuple[str, str]:
    """Create a uniquely named database; return (name, dsn)."""
    name = f"ff_test_{os.getpid()}_{next(_counter)}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return name, make_conninfo(admin_dsn, dbname=name)


def drop_database(admin_dsn: str, name: str) -> None:
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(TERMINATE_BACKENDS, (name,))
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture
def fresh_dsn(admin_dsn: str):
    """DSN of an empty database that exists for this test only."""
    name, dsn = create_database(admin_dsn)
    try:
        yield dsn
    finally:
        drop_database(admin_dsn, name)


@pytest.fixture
def make_database(admin_dsn: str):
    """Factory for extra fresh databases in one test (e.g. to compare two installs)."""
    created: list[str] = []

    def make() -> str:
        name, dsn = create_database(admin_dsn)
        created.append(name)
        return dsn

    try:
        yield make
    finally:
        for name in created:
            drop_database(admin_dsn, name)


@pytest.fixture(scope="session")
def migrated_template(admin_dsn: str):
    """Name of a database migrated once for the whole session, to copy from.

    ``flowforge migrate`` takes seconds (every migration, then every function
    file); ``CREATE DATABASE ... TEMPLATE`` copies the result in a fraction
    of one. The template itself is never connected to by a test.
    """
    name, dsn = create_database(admin_dsn)
    try:
        migrate.migrate(dsn)
        yield name
    finally:
        drop_database(admin_dsn, name)


def copy_database(admin_dsn: str, template: str) -> tuple[str, str]:
    """A uniquely named copy of database ``template`` (whose sessions are ended first); return (name, dsn)."""
    name = f"ff_test_{os.getpid()}_{next(_counter)}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(TERMINATE_BACKENDS, (template,))
        conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(name), sql.Identifier(template)))
    return name, make_conninfo(admin_dsn, dbname=name)


def create_migrated_database(admin_dsn: str, template: str) -> tuple[str, str]:
    """A uniquely named copy of the migrated template; return (name, dsn).

    The copy is what a migration of its own would have made, down to the
    one value a migration draws at random: the gateway's server secret
    (0012), drawn again here the same way, so no two test databases share it.
    """
    name, dsn = copy_database(admin_dsn, template)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("UPDATE flowforge.server_secret "
                     "SET gateway_key = sha256(convert_to(gen_random_uuid()::text || gen_random_uuid()::text, 'UTF8'))")
    return name, dsn


@pytest.fixture
def migrated_dsn(admin_dsn: str, migrated_template: str):
    """DSN of a fresh database with every migration and function applied (a copy of the session's template)."""
    name, dsn = create_migrated_database(admin_dsn, migrated_template)
    try:
        yield dsn
    finally:
        drop_database(admin_dsn, name)
