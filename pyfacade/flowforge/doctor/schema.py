"""The checks about the server and the schema: versions, pending migrations, functions, test tooling."""

from __future__ import annotations

from .. import db, migrate, shipped
from ..catalog import Catalog
from ..client import Client
from ..config import Settings
from ..db import embedded
from .check import OK, PROBLEM, SKIP, WARN, Check

MIN_SERVER_VERSION_NUM = 150000
RETIRED_FILE = "sql/functions/00_core/90_retired.sql"  # where DROP FUNCTION IF EXISTS of retired signatures go


def database(settings: Settings, dsn: str) -> Check:
    if settings.embedded:
        return Check("database", OK, f"embedded PostgreSQL in {embedded.data_dir()}")
    return Check("database", OK, f"{db.mask_dsn(dsn)} (from {settings.dsn_source})")


def server_version(catalog: Catalog) -> Check:
    num, text = catalog.server_version()
    if num >= MIN_SERVER_VERSION_NUM:
        return Check("server version", OK, f"PostgreSQL {text}")
    return Check("server version", PROBLEM, f"PostgreSQL {text}; FlowForge needs 15 or newer")


def schema_version(catalog: Catalog, client: Client) -> Check:
    known = migrate.known_schema_version()
    if not catalog.has_schema_version():
        return Check("schema version", PROBLEM, f"not installed (this code expects {known}); run `flowforge migrate`")
    applied = client.schema_version()
    if applied == known:
        return Check("schema version", OK, f"{applied}")
    if applied is not None and known is not None and applied > known:
        return Check("schema version", PROBLEM,
                     f"database is at {applied}, newer than this code ({known}); upgrade flowforge")
    return Check("schema version", PROBLEM, f"database is at {applied}, this code expects {known}; run `flowforge migrate`")


def pending(dsn: str) -> Check:
    pending = migrate.pending_migrations(dsn)
    if not pending:
        return Check("pending migrations", OK, "none")
    return Check("pending migrations", PROBLEM, f"{', '.join(pending)}; run `flowforge migrate`")


def functions(catalog: Catalog) -> Check:
    """Functions in schema flowforge that no shipped file defines (and shipped ones that are absent)."""
    if not catalog.schema_installed():
        return Check("functions", SKIP, "schema flowforge not installed")
    found = shipped.compare(catalog, migrate.function_files(), migrate.migration_files())
    if found.unknown:
        signatures = ", ".join(found.unknown)
        return Check("functions", PROBLEM,
                     f"{len(found.unknown)} not defined by any shipped file: {signatures}; if a signature was "
                     f"retired, add `DROP FUNCTION IF EXISTS <signature>;` for it to {RETIRED_FILE} and migrate")
    if found.missing:
        headers = ", ".join(str(h) for h in found.missing)
        return Check("functions", PROBLEM,
                     f"{len(found.missing)} shipped but not in the database: {headers}; run `flowforge migrate`")
    return Check("functions", OK, f"{found.defined} in schema flowforge, each defined by a shipped file")


def extension(catalog: Catalog, name: str, label: str) -> Check:
    row = catalog.extension(name)
    if row is None:
        return Check(label, WARN, "not available on this server (needed only to run the SQL test suite)")
    default_version, installed = row["default_version"], row["installed_version"]
    detail = f"available ({default_version})" + (f", installed {installed}" if installed else "")
    return Check(label, OK, detail)
