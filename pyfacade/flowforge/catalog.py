"""Read-only facts about the server and its catalog, for doctor, migrate and the daemon's checks.

The companion of ``Client``, in the same style: one method per question, one
named statement of ``flowforge.queries`` each, errors mapped by SQLSTATE.
None of these is an API function, and none of them writes: ``doctor`` must be
able to run against any database without changing it.
"""

from __future__ import annotations

from typing import Sequence

import psycopg

from . import errors, queries
from .db.statements import fetch_all, fetch_one, fetch_value


class Catalog:
    """Catalog reads on one psycopg connection (which the caller owns)."""

    def __init__(self, conn: psycopg.Connection):
        self.conn = conn

    def server_version(self) -> tuple[int, str]:
        """(``server_version_num``, ``server_version``), e.g. (150020, '15.20 (Debian ...)')."""
        row = fetch_one(self.conn, queries.SERVER_VERSION)
        return row["version_num"], row["version"]

    def extension(self, name: str) -> dict | None:
        """{default_version, installed_version} of an extension the server offers, or None."""
        return fetch_one(self.conn, queries.EXTENSION_AVAILABLE, {"name": name})

    def schema_installed(self) -> bool:
        return fetch_value(self.conn, queries.SCHEMA_EXISTS)

    def has_schema_version(self) -> bool:
        """Whether ``flowforge.schema_version()`` exists (it does once the schema is migrated)."""
        return fetch_value(self.conn, queries.SCHEMA_VERSION_FUNCTION_EXISTS)

    def applied_migrations(self) -> list[str]:
        """Ids recorded in yoyo's table (empty when the database was never migrated)."""
        if not fetch_value(self.conn, queries.YOYO_TABLE_EXISTS):
            return []
        return [row["migration_id"] for row in fetch_all(self.conn, queries.APPLIED_MIGRATION_IDS)]

    def flowforge_functions(self) -> dict[int, str]:
        """Every function in schema flowforge: oid → normalised signature."""
        return {row["oid"]: row["signature"] for row in fetch_all(self.conn, queries.FLOWFORGE_FUNCTIONS)}

    def function_arguments(self) -> list[dict]:
        """Every named argument of every flowforge function: {function, name, mode, type}."""
        return fetch_all(self.conn, queries.FUNCTION_ARGUMENTS)

    def connection_slots(self) -> dict:
        """{max_connections, superuser_reserved, in_use} for the whole cluster."""
        return fetch_one(self.conn, queries.CONNECTION_SLOTS)

    def flowforge_logins(self) -> list[dict]:
        """Login roles in a FlowForge runtime role: {login, connection_limit (-1: none), connections, runtime_roles}."""
        return fetch_all(self.conn, queries.FLOWFORGE_LOGINS)

    def logins_missing_timeouts(self) -> list[dict]:
        """Every mapped login of this database: {login, organization, missing (timeout setting names)}."""
        return fetch_all(self.conn, queries.LOGIN_TIMEOUTS_MISSING)

    def old_transactions(self, seconds: float) -> list[dict]:
        """Sessions of this database with a transaction open longer than ``seconds``, oldest first."""
        return fetch_all(self.conn, queries.OLD_TRANSACTIONS, {"seconds": seconds})

    def lock_blockers(self, application_name: str) -> list[dict]:
        """Sessions blocking a waiting backend named ``application_name`` (``lock_waits.Blocker``'s fields)."""
        return fetch_all(self.conn, queries.LOCK_BLOCKERS, {"application_name": application_name})

    def drop_invalid_index_statements(self) -> list[str]:
        """``DROP INDEX CONCURRENTLY`` statements for the INVALID indexes in schema flowforge."""
        return [row["statement"] for row in fetch_all(self.conn, queries.DROP_INVALID_INDEXES)]

    def regtype(self, text: str) -> str | None:
        """``text`` as PostgreSQL spells the type it names, or None when it names no type.

        Asked inside a savepoint: PostgreSQL 15 raises a syntax error for text
        that cannot be a type name, and that must not abort the caller's
        transaction.
        """
        try:
            with self.conn.transaction():
                return fetch_value(self.conn, queries.REGTYPE, {"name": text})
        except errors.DatabaseUnavailable:
            raise
        except errors.FlowForgeError:
            return None

    def regprocedures(self, signatures: Sequence[str]) -> dict[str, int | None]:
        """Each signature (types as ``regtype`` spells them) → the oid of that function, or None."""
        rows = fetch_all(self.conn, queries.REGPROCEDURES, {"signatures": list(signatures)})
        return {row["signature"]: row["oid"] for row in rows}

    def current_database(self) -> str:
        return fetch_value(self.conn, queries.CURRENT_DATABASE)

    def outbox_waiting(self) -> int:
        """Unpublished outbox messages of every organization (the ``outbox_backlog`` inspection view)."""
        return fetch_value(self.conn, queries.OUTBOX_WAITING)

    # --- the inspection views (migration 0026), for doctor --deep -----------------

    def inspection_installed(self) -> bool:
        """Whether the inspection views exist (the schema is at 0026 or later)."""
        return fetch_value(self.conn, queries.INSPECTION_INSTALLED)

    def without_jit(self) -> None:
        """Turn JIT compilation off for this session: it would cost the views seconds and save nothing."""
        fetch_value(self.conn, queries.NO_JIT)

    def why_not_ready_reasons(self) -> list[dict]:
        """{reason, units}: how many waiting units each reason of ``why_not_ready`` holds, most first."""
        return fetch_all(self.conn, queries.WHY_NOT_READY_REASONS)

    def why_not_ready(self, limit: int) -> list[dict]:
        """The ``why_not_ready`` rows waiting longest, at most ``limit`` (each with the view's ``total``)."""
        return fetch_all(self.conn, queries.WHY_NOT_READY, {"limit": limit})

    def queue_depth(self, limit: int) -> list[dict]:
        """The ``queue_depth`` rows, the deepest queues first."""
        return fetch_all(self.conn, queries.QUEUE_DEPTH, {"limit": limit})

    def stuck_runs(self, limit: int) -> list[dict]:
        """The ``stuck_runs`` rows, stuck longest first."""
        return fetch_all(self.conn, queries.STUCK_RUNS, {"limit": limit})

    def worker_load(self, limit: int) -> list[dict]:
        """The ``worker_load`` rows, the busiest first."""
        return fetch_all(self.conn, queries.WORKER_LOAD, {"limit": limit})

    def tenant_usage(self, limit: int) -> list[dict]:
        """The ``tenant_usage`` rows, the largest history first."""
        return fetch_all(self.conn, queries.TENANT_USAGE, {"limit": limit})

    def index_usage(self, limit: int) -> list[dict]:
        """The ``index_usage`` rows, unused first, then the least scanned (with totals over every index)."""
        return fetch_all(self.conn, queries.INDEX_USAGE, {"limit": limit})
