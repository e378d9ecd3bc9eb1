"""The web UI: server-rendered pages (Jinja2, autoescaped), read-only, one small script file.

Pages: runs (filters, keyset pages, auto-refresh), a run (its drawing, tasks or
steps or history, fan-out progress, events, cause), definitions (every version
drawn), queues, agents, triggers and their firings.  A login form takes an API
key and keeps it in an HttpOnly, SameSite=Strict cookie; every page is read in
its own transaction authenticated with that key, exactly like the JSON API.
Templates and static files live beside this module and ship in the wheel.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from .. import errors, render
from . import drawing, reads
from .common import COOKIE, api_key, status_of
from .gateway import Gateway, Session

HERE = Path(__file__).parent
TEMPLATES = HERE / "templates"
STATIC = HERE / "static"
REFRESH_SECONDS = (0, 5, 15, 60)
COOKIE_MAX_AGE = 12 * 3600

env = Environment(loader=FileSystemLoader(str(TEMPLATES)), autoescape=select_autoescape(["html", "svg"]),
                  trim_blocks=True, lstrip_blocks=True)


def _ago(value: Any) -> str:
    if not isinstance(value, dt.datetime):
        return ""
    seconds = (dt.datetime.now(dt.timezone.utc) - value).total_seconds()
    if seconds < 0:
        return "in " + render.duration(-seconds)
    return render.duration(seconds) + " ago"


def _when(value: Any) -> str:
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    return "" if value is None else str(value)


def _took(start: Any, end: Any) -> str:
    if isinstance(start, str):
        start = dt.datetime.fromisoformat(start)
    if isinstance(end, str):
        end = dt.datetime.fromisoformat(end)
    if not isinstance(start, dt.datetime):
        return ""
    stop = end if isinstance(end, dt.datetime) else dt.datetime.now(dt.timezone.utc)
    return render.duration((stop - start).total_seconds())


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, default=str, ensure_ascii=False)


def _ts(value: Any) -> Any:
    return dt.datetime.fromisoformat(value) if isinstance(value, str) else value


env.filters.update(ago=lambda v: _ago(_ts(v)), when=lambda v: _when(_ts(v)), pretty=_pretty,
                   compact=render.compact, short=lambda v: str(v)[:8] if v else "")
env.globals.update(took=_took)


def page(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    context.setdefault("nav", template.split(".")[0])
    context.setdefault("refresh", 0)
    html = env.get_template(template).render(request=request, **context)
    return HTMLResponse(html, status_code=status)


def _login_redirect(request: Request, message: str | None = None) -> Response:
    query = {"next": request.url.path + (f"?{request.url.query}" if request.url.query else "")}
    if message:
        query["error"] = message
    response = RedirectResponse(f"/login?{urlencode(query)}", status_code=303)
    if message:
        response.delete_cookie(COOKIE, path="/")
    return response


def view(handler):
    """A page read in one authenticated transaction; no key (or a bad one) goes to the login form."""
    async def respond(request: Request) -> Response:
        key = api_key(request)
        if key is None:
            return _login_redirect(request)
        gateway: Gateway = request.app.state.gateway
        try:
            async with gateway.session(key) as session:
                return await handler(session, request)
        except errors.NotAuthenticated as exc:
            return _login_redirect(request, exc.message)
        except errors.FlowForgeError as exc:
            return page(request, "error.html", status=status_of(exc), error=exc)
    respond.__name__ = handler.__name__
    return respond


def _refresh(request: Request) -> int:
    try:
        value = int(request.query_params.get("refresh", "0"))
    except ValueError:
        return 0
    return value if value in REFRESH_SECONDS else 0


def _query(request: Request, **changes: Any) -> str:
    params = {k: v for k, v in request.query_params.items() if v}
    for k, v in changes.items():
        if v is None:
            params.pop(k, None)
        else:
            params[k] = v
    return "?" + urlencode(params) if params else ""


env.globals.update(query=_query)


# --- pages --------------------------------------------------------------------------------

@view
async def runs_page(s: Session, request: Request) -> Response:
    q = request.query_params
    filters = {name: (q.get(name) or None) for name in ("kind", "workflow", "state", "trigger", "creator")}
    listing = await reads.runs(s, **filters, cursor=q.get("cursor") or None, limit=reads.page_size(q.get("limit")))
    definitions = await reads.definitions(s, limit=reads.MAX_PAGE)
    return page(request, "runs.html", runs=listing, filters=filters, kinds=reads.RUN_KINDS,
                workflows=[d["name"] for d in definitions.items], refresh=_refresh(request),
                refresh_choices=REFRESH_SECONDS)


def _fan_bars(run: dict) -> list[dict]:
    bars = []
    if run.get("kind") == "dag":
        for t in run.get("tasks") or []:
            fan = t.get("fan_out")
            if fan:
                bars.append({"node": t["key"], **fan, **drawing.progress(fan.get("idx"), fan.get("total"),
                                                                           fan.get("failed"))})
    for node, fan in (run.get("fan_outs") or {}).items():
        bars.append({"node": node, **fan, **drawing.progress(fan.get("idx"), fan.get("total"), fan.get("failed"))})
    return bars


@view
async def run_page(s: Session, request: Request) -> Response:
    run_id = reads.parse_run_id(request.path_params["run_id"])
    run = await reads.run(s, run_id)
    events = await reads.run_events(s, run_id)
    kind = run.get("kind")
    picture = None
    spec: dict = {}
    if run.get("workflow") is not None:
        spec = await reads.spec_of(s, run["workflow"], run.get("version"))
    if kind == "dag":
        tasks = render.dag_order(run.get("tasks") or [])
        picture = drawing.dag(spec.get("tasks") or tasks, {t["key"]: t for t in tasks})
        run["tasks"] = tasks
    elif kind == "graph":
        picture = drawing.graph(spec, run)
    elif kind == "statemachine":
        picture = drawing.machine(spec, run)
    shown_events = events[-500:]
    return page(request, "run.html", nav="runs", run=run, picture=picture, events=shown_events,
                events_total=len(events), bars=_fan_bars(run), refresh=_refresh(request),
                refresh_choices=REFRESH_SECONDS, live=run.get("state") not in render.FINISHED_RUN_STATES)


@view
async def definitions_page(s: Session, request: Request) -> Response:
    listing = await reads.definitions(s, cursor=request.query_params.get("cursor") or None,
                                      limit=reads.page_size(request.query_params.get("limit")))
    return page(request, "definitions.html", definitions=listing)


def definition_picture(found: dict) -> Markup:
    spec = found["spec"]
    if found["kind"] == "graph":
        return drawing.graph(spec)
    if found["kind"] == "statemachine":
        return drawing.machine(spec)
    return drawing.dag(spec.get("tasks") or [])


@view
async def definition_page(s: Session, request: Request) -> Response:
    version = request.query_params.get("version")
    try:
        number = int(version) if version else None
    except ValueError:
        raise errors.InvalidArgument(f"version must be a whole number, got {version[:20]!r}") from None
    found = await reads.definition(s, request.path_params["name"], number)
    recent = await reads.runs(s, workflow=found["name"], limit=10)
    return page(request, "definition.html", nav="definitions", d=found, picture=definition_picture(found),
                recent=recent.items)


@view
async def queues_page(s: Session, request: Request) -> Response:
    listing = await reads.queues(s)
    return page(request, "queues.html", queues=listing, refresh=_refresh(request), refresh_choices=REFRESH_SECONDS)


@view
async def agents_page(s: Session, request: Request) -> Response:
    listing = await reads.agents(s, cursor=request.query_params.get("cursor") or None)
    return page(request, "agents.html", agents=listing, refresh=_refresh(request), refresh_choices=REFRESH_SECONDS)


@view
async def firings_page(s: Session, request: Request) -> Response:
    q = request.query_params
    outcome = q.get("outcome") or None
    if outcome is not None and outcome not in reads.FIRING_OUTCOMES:
        raise errors.InvalidArgument(f"outcome must be one of {', '.join(reads.FIRING_OUTCOMES)}")
    listing = await reads.firings(s, trigger=q.get("trigger") or None, outcome=outcome,
                                  cursor=q.get("cursor") or None, limit=reads.page_size(q.get("limit")))
    trigger_list = await reads.triggers(s, limit=reads.MAX_PAGE)
    return page(request, "firings.html", firings=listing, triggers=trigger_list.items, outcomes=reads.FIRING_OUTCOMES,
                filters={"trigger": q.get("trigger") or None, "outcome": outcome})


# --- login --------------------------------------------------------------------------------

def _safe_next(target: str | None) -> str:
    """Only a path of this site (no scheme, no host, no //): never an open redirect."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/runs"
    parts = urlsplit(target)
    return "/runs" if parts.scheme or parts.netloc else target


async def login_form(request: Request) -> Response:
    settings = request.app.state.settings
    return page(request, "login.html", nav="login", error=request.query_params.get("error"),
                next=_safe_next(request.query_params.get("next")), key_file=getattr(settings, "key_file", None))


def _same_origin(request: Request) -> bool:
    """A form post from this site's own pages (Sec-Fetch-Site, else Origin), or from no browser at all."""
    site = request.headers.get("sec-fetch-site")
    if site is not None:
        return site in ("same-origin", "none")
    origin = request.headers.get("origin")
    if origin is None:
        return True
    return origin != "null" and urlsplit(origin).netloc == request.headers.get("host", "")


MAX_FORM_BYTES = 8192


async def _form(request: Request) -> dict[str, str]:
    """The login form (application/x-www-form-urlencoded, at most 8 KiB): no multipart parser needed."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            return {}
    parsed = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True, max_num_fields=10)
    return {k: v[0] for k, v in parsed.items()}


async def login(request: Request) -> Response:
    if not _same_origin(request):
        return HTMLResponse("cross-site login refused", status_code=403)
    form = await _form(request)
    key = form.get("api_key", "").strip()
    target = _safe_next(form.get("next", ""))
    settings = request.app.state.settings
    if not key:
        return page(request, "login.html", status=400, nav="login", error="enter an API key", next=target,
                    key_file=getattr(settings, "key_file", None))
    gateway: Gateway = request.app.state.gateway
    try:
        async with gateway.session(key):
            pass
    except errors.FlowForgeError as exc:
        return page(request, "login.html", status=status_of(exc), nav="login", error=exc.message, next=target,
                    key_file=getattr(settings, "key_file", None))
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(COOKIE, key, max_age=COOKIE_MAX_AGE, path="/", httponly=True, samesite="strict",
                        secure=bool(getattr(settings, "secure_cookies", False)))
    return response


async def logout(request: Request) -> Response:
    if not _same_origin(request):
        return HTMLResponse("cross-site logout refused", status_code=403)
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(COOKIE, path="/")
    return response


async def home(request: Request) -> Response:
    return RedirectResponse("/runs", status_code=303)


def routes() -> list:
    return [
        Route("/", home, methods=["GET"]),
        Route("/login", login_form, methods=["GET"]),
        Route("/login", login, methods=["POST"]),
        Route("/logout", logout, methods=["POST"]),
        Route("/runs", runs_page, methods=["GET"]),
        Route("/runs/{run_id}", run_page, methods=["GET"]),
        Route("/definitions", definitions_page, methods=["GET"]),
        Route("/definitions/{name}", definition_page, methods=["GET"]),
        Route("/queues", queues_page, methods=["GET"]),
        Route("/agents", agents_page, methods=["GET"]),
        Route("/firings", firings_page, methods=["GET"]),
        Mount("/static", app=StaticFiles(directory=str(STATIC)), name="static"),
    ]
