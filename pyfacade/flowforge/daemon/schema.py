"""The daemon never migrates: it refuses to work against a schema it does not know."""

from __future__ import annotations

import psycopg

from .. import migrate
from ..catalog import Catalog
from ..client import Client


def schema_problem(conn: psycopg.Connection) -> str | None:
    """Why this code must not run against the connected database, or None when the versions match."""
    known = migrate.known_schema_version()
    if not Catalog(conn).has_schema_version():
        return f"database has no FlowForge schema (this daemon expects {known}); run `flowforge migrate` first"
    applied = Client(conn).schema_version()
    if applied == known:
        return None
    if applied is None:
        return f"database has no recorded migrations (this daemon expects {known}); run `flowforge migrate` first"
    if known is not None and applied > known:
        return f"database schema is {applied}, newer than this daemon knows ({known}); upgrade flowforge"
    return f"database schema is {applied}, this daemon expects {known}; run `flowforge migrate` first"
