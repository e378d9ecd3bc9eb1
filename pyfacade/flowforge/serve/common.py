"""What the UI, the JSON API and /metrics share: the caller's key, JSON, errors as HTTP, security headers."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import logging
import uuid
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .. import errors

log = logging.getLogger("flowforge.serve")

COOKIE = "ff_key"  # the UI's login: the API key itself, HttpOnly, SameSite=Strict

# A FlowForge error, by class, as an HTTP status: the code travels in the body.
STATUS_BY_ERROR: dict[type[errors.FlowForgeError], int] = {
    errors.NotFound: 404,
    errors.InvalidDefinition: 400,
    errors.InvalidArgument: 400,
    errors.PermissionDenied: 403,
    errors.NotAuthenticated: 401,
    errors.PayloadTooLarge: 413,
    errors.IllegalTransition: 409,
    errors.EventRefused: 409,
    errors.SchemaVersionMismatch: 503,
    errors.DatabaseUnavailable: 503,
}

# No inline script or style anywhere: every byte of JS and CSS is a file under /static.
CONTENT_SECURITY_POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                           "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
SECURITY_HEADERS = [
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"permissions-policy", b"camera=(), microphone=(), geolocation=()"),
]


class SecurityHeaders:
    """Pure ASGI middleware: the headers above on every response (streaming ones included); no-store unless static."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        static = scope.get("path", "").startswith("/static/")

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {k.lower() for k, _ in message.get("headers", [])}
                headers = list(message.get("headers", []))
                headers += [(k, v) for k, v in SECURITY_HEADERS if k not in present]
                if not static and b"cache-control" not in present:
                    headers.append((b"cache-control", b"no-store"))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, with_headers)


def api_key(request: Request) -> str | None:
    """The caller's API key: ``Authorization: Bearer <key>``, else the UI's login cookie."""
    header = request.headers.get("authorization")
    if header:
        scheme, _, value = header.partition(" ")
        if scheme.lower() == "bearer" and value.strip():
            return value.strip()
        return None
    value = request.cookies.get(COOKIE)
    return value or None


def jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, decimal.Decimal):
        return float(value)
    return value


class FFJSONResponse(JSONResponse):
    def render(self, content: Any) -> bytes:
        return json.dumps(jsonable(content), ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def error_body(exc: errors.FlowForgeError) -> dict:
    return {"error": {"code": exc.sqlstate, "message": exc.message, "hint": exc.hint}}


def status_of(exc: errors.FlowForgeError) -> int:
    for cls in type(exc).__mro__:
        if cls in STATUS_BY_ERROR:
            return STATUS_BY_ERROR[cls]
    return 500


def json_error(exc: errors.FlowForgeError) -> FFJSONResponse:
    status = status_of(exc)
    if status >= 500:
        log.warning("serve: %s (%s)", exc.message, exc.sqlstate)
    headers = {"WWW-Authenticate": 'Bearer realm="flowforge"'} if status == 401 else None
    return FFJSONResponse(error_body(exc), status_code=status, headers=headers)


def not_authenticated() -> errors.NotAuthenticated:
    return errors.NotAuthenticated("not authenticated: send Authorization: Bearer <api key>",
                                   hint="An organization admin makes keys with flowforge.create_api_key.")
