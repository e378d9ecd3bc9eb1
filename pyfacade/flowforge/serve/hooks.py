"""The webhook receiver: ``POST /hooks/{organization}/{trigger}``.

What it does, and all it does:

1. streams the request body, answering 413 as soon as it is over
   ``max_body_bytes`` (or at once when Content-Length says it will be),
   without reading the rest;
2. hands the raw body, ``X-FlowForge-Signature`` and ``X-FlowForge-Delivery``
   to ``flowforge.receive_webhook`` — one statement, its own transaction, on a
   login that may call that function only (``flowforge_webhook``);
3. answers the status the function returns: 202 with the firing as JSON,
   400 / 401 / 413 with ``{"error": ...}``.

The HMAC check, the trigger lookup (an unknown trigger and a bad signature
get the same 401), delivery-id idempotency and the firing itself are the SQL
function's.  A FlowForge error the function raises becomes an HTTP status
chosen by its class (``STATUS_BY_ERROR``), never by its text.
"""

from __future__ import annotations

import json
import logging

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import PoolTimeout
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .. import errors, queries
from ..db import connection

SIGNATURE_HEADER = "X-FlowForge-Signature"
DELIVERY_HEADER = "X-FlowForge-Delivery"

log = logging.getLogger("flowforge.serve.hooks")

# A FlowForge error from receive_webhook, by class, to what the sender is told.
# FF007/FF008 and an unexpected database error are the receiver's own
# configuration (its login), not the sender's fault: 500, logged here.
STATUS_BY_ERROR: dict[type[errors.FlowForgeError], int] = {
    errors.PayloadTooLarge: 413,
    errors.InvalidArgument: 400,
    errors.InvalidDefinition: 400,
    errors.NotFound: 401,  # never tell an unknown name from a bad signature
    errors.DatabaseUnavailable: 503,
}


class BodyTooLarge(Exception):
    pass


def error(status: int, message: str, *, close: bool = False) -> JSONResponse:
    headers = {"Connection": "close"} if close else None
    return JSONResponse({"error": message}, status_code=status, headers=headers)


def too_large(limit: int) -> JSONResponse:
    # Connection: close — the rest of the body is never read, so the connection cannot be reused.
    return error(413, f"the body is over the limit of {limit} bytes", close=True)


async def read_body(request: Request, limit: int) -> bytes:
    """The body, streamed; ``BodyTooLarge`` as soon as it is over ``limit`` (the rest stays unread)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.strip().isdigit() and int(declared) > limit:
        raise BodyTooLarge
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge
        chunks.append(chunk)
    return b"".join(chunks)


async def receive(request: Request) -> Response:
    settings = request.app.state.settings
    limit = settings.max_body_bytes
    try:
        body = await read_body(request, limit)
    except BodyTooLarge:
        return too_large(limit)
    except ClientDisconnect:
        return Response(status_code=400)  # nobody is there to read it
    params = {
        "organization": request.path_params["organization"],
        "trigger": request.path_params["trigger"],
        "body": body,
        "signature": request.headers.get(SIGNATURE_HEADER),
        "delivery_id": request.headers.get(DELIVERY_HEADER),
    }
    try:
        answer = await call_receive_webhook(request.app.state.hooks_pool, params)
    except errors.FlowForgeError as exc:
        status = STATUS_BY_ERROR.get(type(exc), 500)
        if status >= 500:
            log.error("receive_webhook failed: %s", " ".join(str(exc).split()))
            message = ("the database is unavailable" if status == 503
                       else "the receiver could not record this delivery")
            return error(status, message)
        return error(status, exc.message)
    status = int(answer["status"])
    if status == 202:
        return JSONResponse(answer["firing"], status_code=202)
    return error(status, answer.get("error") or "refused", close=status == 413)


async def call_receive_webhook(pool, params: dict) -> dict:
    """One ``flowforge.receive_webhook`` call on a pooled autocommit connection; FlowForge errors mapped."""
    try:
        async with pool.connection(timeout=connection.DEFAULT_CONNECT_TIMEOUT) as conn:
            async with conn.cursor(row_factory=dict_row) as cur:
                await cur.execute(queries.RECEIVE_WEBHOOK, params)
                row = await cur.fetchone()
    except psycopg.Error as exc:
        raise connection.map_error(exc) from exc
    except PoolTimeout as exc:  # no connection to be had within the timeout
        raise errors.DatabaseUnavailable(f"no database connection: {connection.first_line(exc)}") from exc
    answer = row["answer"]
    return json.loads(answer) if isinstance(answer, str) else answer


def routes() -> list[Route]:
    return [Route("/hooks/{organization}/{trigger}", receive, methods=["POST"])]
