"""The application factory of ``flowforge serve``.

``build_app(settings)`` returns a Starlette app with ``/healthz``,
``/readyz``, the routes of ``hooks`` (the webhook receiver), ``ui`` (the web
UI), ``api`` (``/api/v1/``) and ``metrics`` (``/metrics``), every response
with the security headers of ``common.SecurityHeaders``.  It owns the async
connection pools, opened in the app's lifespan: the receiver's
(``settings.hooks_dsn``, ``app.state.hooks_pool``), the gateway login's for
every read (``settings.dsn``, ``app.state.gateway``) and, when an operator DSN
is set, the operator's for the scrape token (``app.state.operator``).
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

from .. import migrate as migrations, queries
from ..db import connection, pooler
from . import api, hooks, metrics, ui
from .common import SecurityHeaders
from .gateway import Gateway

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8080
DEFAULT_MAX_BODY_BYTES = 1_048_576  # 1 MiB; the database refuses more than its max_payload_bytes anyway
APPLICATION_NAME = "flowforge-serve"              # the webhook receiver's connections
READS_APPLICATION_NAME = "flowforge-serve-reads"  # the UI's, the JSON API's and /metrics' (gateway login)
OPERATOR_APPLICATION_NAME = "flowforge-serve-operator"  # the scrape token's (flowforge_readonly login)

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
    # The operator surface (issue 20). dsn is the gateway login every read authenticates on;
    # metrics_token a bearer token that makes /metrics every organization's, read on
    # operator_dsn (a flowforge_readonly login); key_file where the embedded default's
    # key was written (shown on the login page); secure_cookies for a server behind HTTPS.
    operator_dsn: str | None = None
    metrics_token: str | None = None
    key_file: str | None = None
    secure_cookies: bool = False

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


def open_pool(dsn: str, *, max_size: int = 4, name: str = "flowforge-hooks", min_size: int = 1,
              application_name: str = APPLICATION_NAME) -> AsyncConnectionPool:
    """An async pool of autocommit connections (each statement its own transaction); not opened yet."""
    kwargs = _connection_kwargs(dsn)
    if "application_name" not in connection.parse_dsn(dsn):
        kwargs["application_name"] = application_name
    return AsyncConnectionPool(dsn, min_size=min_size, max_size=max_size, open=False,
                               kwargs=kwargs, name=name,
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


async def readyz(request: Request) -> JSONResponse:
    """200 when the gateway login reaches the database and its schema version is this code's; 503 with why."""
    gateway: Gateway = request.app.state.gateway
    expected = migrations.known_schema_version()
    try:
        async with gateway.plain() as s:
            version = await s.value(queries.SCHEMA_VERSION)
    except Exception as exc:  # noqa: BLE001 - any failure is "not ready", said in one line
        return JSONResponse({"status": "unavailable", "database": connection.first_line(exc)}, status_code=503)
    body = {"status": "ok" if version == expected else "schema mismatch", "database": "ok",
            "schema_version": version, "expected_schema_version": expected}
    return JSONResponse(body, status_code=200 if version == expected else 503)


def build_app(settings: ServeSettings) -> Starlette:
    """The ``flowforge serve`` application: ``GET /healthz`` and ``POST /hooks/{organization}/{trigger}``."""
    pool = open_pool(settings.receiver_dsn, max_size=settings.pool_max_size)
    # The reads' pools connect on first use (min_size 0): a serve run for webhooks only, whose --dsn is
    # not a gateway login, never opens one. Their own application_name tells them apart in pg_stat_activity.
    reads_pool = open_pool(settings.dsn, max_size=settings.pool_max_size, name="flowforge-serve", min_size=0,
                           application_name=READS_APPLICATION_NAME)
    operator_pool = (open_pool(settings.operator_dsn, max_size=2, name="flowforge-operator", min_size=0,
                               application_name=OPERATOR_APPLICATION_NAME)
                     if settings.operator_dsn else None)
    pools = [p for p in (pool, reads_pool, operator_pool) if p is not None]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        for p in pools:
            await p.open(wait=False)  # an unreachable database answers 503 per request, it does not stop us
        try:
            yield
        finally:
            for p in pools:
                await p.close()

    app = Starlette(routes=[Route("/healthz", healthz, methods=["GET"]), Route("/readyz", readyz, methods=["GET"]),
                            *hooks.routes(), *metrics.routes(), *api.routes(), *ui.routes()],
                    lifespan=lifespan)
    app.add_middleware(SecurityHeaders)
    app.state.settings = settings
    app.state.hooks_pool = pool
    app.state.gateway = Gateway(reads_pool)
    app.state.operator = Gateway(operator_pool) if operator_pool is not None else None
    app.state.metrics_state = metrics.State()
    return app
