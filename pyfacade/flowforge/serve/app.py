"""The application factory of ``flowforge serve``.

``build_app(settings)`` returns a Starlette app with ``/healthz`` and the
routes of ``hooks``.  It owns one async connection pool for the webhook
receiver (opened in the app's lifespan, on ``settings.hooks_dsn``), kept on
``app.state.hooks_pool``; the factory is the one place later surfaces (UI,
JSON API, /metrics) add their routes and pools.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass
from typing import AsyncIterator

from psycopg_pool import AsyncConnectionPool
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from ..db import connection, pooler
from . import hooks

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8080
DEFAULT_MAX_BODY_BYTES = 1_048_576  # 1 MiB; the database refuses more than its max_payload_bytes anyway
APPLICATION_NAME = "flowforge-serve"

log = logging.getLogger("flowforge.serve")


@dataclass(frozen=True)
class ServeSettings:
    """What ``build_app`` needs.

    ``dsn`` is the process's database; ``hooks_dsn`` the receiver's login
    (a member of ``flowforge_webhook`` only), ``dsn`` when not given.
    ``max_body_bytes`` is the receiver's limit: a longer body is answered 413
    as soon as it is exceeded, without being read whole.
    """

    dsn: str
    hooks_dsn: str | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    pool_max_size: int = 4

    @property
    def receiver_dsn(self) -> str:
        return self.hooks_dsn or self.dsn


def _connection_kwargs(dsn: str) -> dict:
    """The connect options every FlowForge connection gets (``db.connect``'s), for the pool."""
    parts = connection.parse_dsn(dsn)
    kwargs: dict = {"autocommit": True}
    if "connect_timeout" not in parts:
        kwargs["connect_timeout"] = connection.DEFAULT_CONNECT_TIMEOUT
    if "application_name" not in parts:
        kwargs["application_name"] = APPLICATION_NAME
    if pooler.transaction_pooler():
        kwargs["prepare_threshold"] = None
    return kwargs


def open_pool(dsn: str, *, max_size: int = 4) -> AsyncConnectionPool:
    """An async pool of autocommit connections (each statement its own transaction); not opened yet."""
    return AsyncConnectionPool(dsn, min_size=1, max_size=max_size, open=False,
                               kwargs=_connection_kwargs(dsn), name="flowforge-hooks",
                               check=AsyncConnectionPool.check_connection)


async def healthz(request: Request) -> JSONResponse:
    """200 when the process answers and its database does; 503 (with why) when the database does not."""
    pool: AsyncConnectionPool = request.app.state.hooks_pool
    try:
        async with pool.connection(timeout=connection.DEFAULT_CONNECT_TIMEOUT) as conn:
            await conn.execute("SELECT 1")
    except Exception as exc:  # noqa: BLE001 - any failure is "not healthy", said in one line
        return JSONResponse({"status": "unavailable", "database": connection.first_line(exc)}, status_code=503)
    return JSONResponse({"status": "ok", "database": "ok"})


def build_app(settings: ServeSettings) -> Starlette:
    """The ``flowforge serve`` application: ``GET /healthz`` and ``POST /hooks/{organization}/{trigger}``."""
    pool = open_pool(settings.receiver_dsn, max_size=settings.pool_max_size)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await pool.open(wait=False)  # an unreachable database answers 503 per request, it does not stop us
        try:
            yield
        finally:
            await pool.close()

    app = Starlette(routes=[Route("/healthz", healthz, methods=["GET"]), *hooks.routes()], lifespan=lifespan)
    app.state.settings = settings
    app.state.hooks_pool = pool
    return app
