"""The JSON API: ``GET /api/v1/...``, the UI's reads as JSON (docs/ui.md has the reference).

Every endpoint needs an API key (``Authorization: Bearer <key>``, or the UI's
login cookie) and runs in its own transaction authenticated with it: the SQL
decides what the key may see.  Listings answer ``{"items": [...], "next":
<cursor or null>}``; pass ``cursor=<next>`` for the following page.  Errors
answer ``{"error": {"code": "FFnnn", "message", "hint"}}`` with the status of
the code's class (FF001 404, FF003 400, FF007 403, FF008 401, ...).
"""

from __future__ import annotations

from typing import Awaitable, Callable

from starlette.requests import Request
from starlette.routing import Route

from .. import errors
from . import reads
from .common import FFJSONResponse, api_key, json_error, not_authenticated
from .gateway import Gateway, Session

Handler = Callable[[Session, Request], Awaitable[object]]

KNOWN_PARAMS = {
    "runs": {"kind", "workflow", "state", "trigger", "creator", "cursor", "limit"},
    "firings": {"trigger", "outcome", "cursor", "limit"},
    "paged": {"cursor", "limit"},
    "none": set(),
    "definition": {"version"},
}


def _params(request: Request, allowed: str) -> dict[str, str | None]:
    """The query parameters, an unknown one refused (a typo must not silently list everything)."""
    known = KNOWN_PARAMS[allowed]
    unknown = sorted(set(request.query_params) - known)
    if unknown:
        raise errors.InvalidArgument(f"unknown query parameter {unknown[0]!r}",
                                     hint=f"This endpoint takes: {', '.join(sorted(known)) or 'none'}.")
    return {k: (request.query_params.get(k) or None) for k in known}


def endpoint(handler: Handler) -> Callable[[Request], Awaitable[FFJSONResponse]]:
    async def respond(request: Request) -> FFJSONResponse:
        key = api_key(request)
        try:
            if key is None:
                raise not_authenticated()
            gateway: Gateway = request.app.state.gateway
            async with gateway.session(key) as session:
                body = await handler(session, request)
        except errors.FlowForgeError as exc:
            return json_error(exc)
        return FFJSONResponse(body)
    respond.__name__ = handler.__name__
    return respond


@endpoint
async def list_runs(s: Session, request: Request) -> object:
    p = _params(request, "runs")
    page = await reads.runs(s, kind=p["kind"], workflow=p["workflow"], state=p["state"], trigger=p["trigger"],
                            creator=p["creator"], cursor=p["cursor"], limit=reads.page_size(p["limit"]))
    return page.as_json()


@endpoint
async def get_run(s: Session, request: Request) -> object:
    _params(request, "none")
    return await reads.run(s, reads.parse_run_id(request.path_params["run_id"]))


@endpoint
async def run_events(s: Session, request: Request) -> object:
    p = _params(request, "paged")
    rows = await reads.run_events(s, reads.parse_run_id(request.path_params["run_id"]))
    return events_page(rows, p["cursor"], reads.page_size(p["limit"])).as_json()


def events_page(rows: list[dict], cursor: str | None, limit: int) -> reads.Page:
    """A run's history oldest first, by seq (the SQL answers it whole; a page is a slice after the cursor)."""
    after = reads.decode_cursor(cursor, "events", {})
    start = 0
    if after is not None:
        try:
            last = int(after.key[0])
        except ValueError:
            raise reads.BadCursor("this cursor's position does not parse", hint="Start again without it.") from None
        start = next((i + 1 for i, r in enumerate(rows) if r["seq"] == last), None)
        if start is None:
            raise reads.BadCursor("this cursor names an event this run does not have",
                                  hint="Start again without a cursor.")
    shown = rows[start:start + limit]
    more = start + limit < len(rows)
    nxt = reads.encode_cursor("events", (str(shown[-1]["seq"]),), {}) if more and shown else None
    return reads.Page(shown, nxt)


@endpoint
async def list_definitions(s: Session, request: Request) -> object:
    p = _params(request, "paged")
    return (await reads.definitions(s, cursor=p["cursor"], limit=reads.page_size(p["limit"]))).as_json()


@endpoint
async def get_definition(s: Session, request: Request) -> object:
    p = _params(request, "definition")
    version = None
    if p["version"] is not None:
        try:
            version = int(p["version"])
        except ValueError:
            raise errors.InvalidArgument(f"version must be a whole number, got {p['version'][:20]!r}",
                                         hint="Leave it out for the latest.") from None
    return await reads.definition(s, request.path_params["name"], version)


@endpoint
async def list_queues(s: Session, request: Request) -> object:
    p = _params(request, "paged")
    return (await reads.queues(s, cursor=p["cursor"], limit=reads.page_size(p["limit"] or "200"))).as_json()


@endpoint
async def list_agents(s: Session, request: Request) -> object:
    p = _params(request, "paged")
    return (await reads.agents(s, cursor=p["cursor"], limit=reads.page_size(p["limit"]))).as_json()


@endpoint
async def list_triggers(s: Session, request: Request) -> object:
    p = _params(request, "paged")
    return (await reads.triggers(s, cursor=p["cursor"], limit=reads.page_size(p["limit"]))).as_json()


@endpoint
async def list_firings(s: Session, request: Request) -> object:
    p = _params(request, "firings")
    if p["outcome"] is not None and p["outcome"] not in reads.FIRING_OUTCOMES:
        raise errors.InvalidArgument(f"outcome must be one of {', '.join(reads.FIRING_OUTCOMES)}",
                                     hint="Leave it out for every outcome.")
    page = await reads.firings(s, trigger=p["trigger"], outcome=p["outcome"], cursor=p["cursor"],
                               limit=reads.page_size(p["limit"]))
    return page.as_json()


async def not_found(request: Request) -> FFJSONResponse:
    return json_error(errors.NotFound(f"no endpoint {request.url.path}",
                                      hint="See docs/ui.md for the JSON API reference."))


def routes() -> list[Route]:
    return [
        Route("/api/v1/runs", list_runs, methods=["GET"]),
        Route("/api/v1/runs/{run_id}", get_run, methods=["GET"]),
        Route("/api/v1/runs/{run_id}/events", run_events, methods=["GET"]),
        Route("/api/v1/definitions", list_definitions, methods=["GET"]),
        Route("/api/v1/definitions/{name}", get_definition, methods=["GET"]),
        Route("/api/v1/queues", list_queues, methods=["GET"]),
        Route("/api/v1/agents", list_agents, methods=["GET"]),
        Route("/api/v1/triggers", list_triggers, methods=["GET"]),
        Route("/api/v1/firings", list_firings, methods=["GET"]),
        Route("/api/v1/{rest:path}", not_found, methods=["GET"]),
    ]
