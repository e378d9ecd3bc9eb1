"""The read path of ``flowforge serve``: one transaction per request, authenticated with its API key.

``Gateway`` holds the pooled async connections of the gateway login (a member
of ``flowforge_gateway``, never a superuser).  ``async with
gateway.session(api_key) as s`` takes a connection, opens a transaction,
calls ``flowforge.authenticate(api_key)`` in it — so every read after it sees
exactly what that key may, by the SQL's own rules — and commits at the end.
No identity outlives the transaction: the next request on the same connection
authenticates again.  ``s.rows(sql, params)`` / ``s.value(...)`` run the
named statements of ``flowforge.queries``; database errors come out as the
facade's ``errors`` classes (by SQLSTATE).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, AsyncIterator

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from .. import errors, queries
from ..db import connection

POOL_TIMEOUT = 10.0  # seconds a request waits for a free connection before it is a 503


@dataclass
class Session:
    """One authenticated transaction: the statements of a request."""

    conn: psycopg.AsyncConnection
    organization_id: Any = None

    async def rows(self, sql: str, params: dict | None = None) -> list[dict]:
        try:
            async with self.conn.cursor(row_factory=dict_row) as cur:
                await cur.execute(sql, params or {})
                return await cur.fetchall()
        except psycopg.Error as exc:
            raise connection.map_error(exc) from exc

    async def row(self, sql: str, params: dict | None = None) -> dict | None:
        found = await self.rows(sql, params)
        return found[0] if found else None

    async def value(self, sql: str, params: dict | None = None) -> Any:
        found = await self.row(sql, params)
        return None if found is None else next(iter(found.values()))


class Gateway:
    """The gateway login's pool; sessions authenticated per request."""

    def __init__(self, pool: AsyncConnectionPool):
        self.pool = pool

    @contextlib.asynccontextmanager
    async def connection(self) -> AsyncIterator[psycopg.AsyncConnection]:
        try:
            async with self.pool.connection(timeout=POOL_TIMEOUT) as conn:
                if conn.info.parameter_status("is_superuser") == "on":
                    # A superuser's reads would not be the key's: RLS and the API's checks do not bind it.
                    raise errors.DatabaseUnavailable(
                        f"flowforge serve reads as a gateway login, never as a superuser "
                        f"({conn.info.user} is one)",
                        hint="Pass --dsn with a login that is a member of flowforge_gateway (docs/ui.md).")
                yield conn
        except PoolTimeout as exc:
            raise errors.DatabaseUnavailable(f"no database connection within {POOL_TIMEOUT:g}s: {exc}") from exc
        except psycopg.OperationalError as exc:
            raise connection.map_error(exc) from exc

    @contextlib.asynccontextmanager
    async def session(self, api_key: str) -> AsyncIterator[Session]:
        """A transaction in which ``api_key`` is the caller (``flowforge.authenticate``)."""
        async with self.connection() as conn:
            try:
                async with conn.transaction():
                    session = Session(conn)
                    session.organization_id = await session.value(queries.AUTHENTICATE, {"api_key": api_key})
                    yield session
            except psycopg.Error as exc:
                raise connection.map_error(exc) from exc

    @contextlib.asynccontextmanager
    async def plain(self) -> AsyncIterator[Session]:
        """A transaction with no API key (the operator's own login: /metrics for the scrape token, /readyz)."""
        async with self.connection() as conn:
            try:
                async with conn.transaction():
                    yield Session(conn)
            except psycopg.Error as exc:
                raise connection.map_error(exc) from exc
