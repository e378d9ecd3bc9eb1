"""What the pages and the JSON API read, once, for both: listings with ``next`` cursors, a run, a definition.

Every read is a named statement of ``flowforge.queries`` on an authenticated
``gateway.Session``; nothing here reads a table or decides who may see what.

Cursors.  A listing answers one page and a ``next`` cursor: an opaque,
URL-safe token naming the last row shown by its sort key (for runs
``(created_at, id)``, newest first) and the listing and filters it belongs to.
The next page is the rows after that row in the listing's order, so runs
started meanwhile (they sort first) neither shift nor repeat a page.  A cursor that does not
decode, or belongs to another listing or other filters, is ``BadCursor``
(FF003, a 400 with its reason).

Until ``list_runs`` / ``list_firings`` take an ``after =>`` cursor of their own
(issue 19), the rows after the cursor are found in what they return: a window
of the newest rows (``max_rows``) in their own order, grown until it holds the
cursor's row and a page after it — bounded by their 10,000-row maximum, which
a page past that depth reports as ``truncated`` (narrow the filters).
``_window`` is the one place to switch.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import hashlib
import json
import uuid
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Sequence

from .. import errors, queries
from .gateway import Session

DEFAULT_PAGE = 50
MAX_PAGE = 200
MAX_WINDOW = 10_000  # list_runs / list_firings: max_rows 1..10000
RUN_KINDS = ("dag", "graph", "statemachine")
FIRING_OUTCOMES = ("started", "signalled", "refused", "failed")


class BadCursor(errors.InvalidArgument):
    """FF003: a ``cursor`` this server did not make, or made for another listing or other filters."""


@dataclass
class Page:
    items: list[dict]
    next: str | None
    truncated: bool = False  # the listing's window (10,000 rows) ended before the page filled
    extra: dict = field(default_factory=dict)

    def as_json(self) -> dict:
        out = {"items": self.items, "next": self.next}
        if self.truncated:
            out["truncated"] = True
        return out


# --- cursors -----------------------------------------------------------------------------

_KEY_TYPES: dict[str, tuple[type, ...]] = {
    "runs": (dt.datetime, uuid.UUID),
    "firings": (dt.datetime, uuid.UUID),
    "definitions": (str,),
    "agents": (str,),
    "triggers": (str,),
    "queues": (str, str),
    "events": (str,),  # a run's history: the last seq shown, as text
}


def _filters_tag(filters: dict) -> str:
    canonical = json.dumps({k: v for k, v in sorted(filters.items()) if v is not None}, sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]


def encode_cursor(listing: str, key: tuple, filters: dict, seen: int = 0) -> str:
    body = {"l": listing, "k": [v.isoformat() if isinstance(v, dt.datetime) else str(v) for v in key],
            "f": _filters_tag(filters), "n": seen}
    raw = json.dumps(body, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@dataclass(frozen=True)
class Cursor:
    key: tuple
    seen: int


def decode_cursor(text: str | None, listing: str, filters: dict) -> Cursor | None:
    """The position a ``cursor`` names, or None for the first page; ``BadCursor`` when it is not one of ours."""
    if text is None or text == "":
        return None
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        body = json.loads(raw)
        if not isinstance(body, dict) or not isinstance(body.get("k"), list):
            raise ValueError("not a cursor object")
    except (ValueError, binascii.Error, UnicodeDecodeError) as exc:
        raise BadCursor(f"cursor {text[:40]!r} is not a cursor of this server ({exc.__class__.__name__})",
                        hint="Pass back the `next` value of a previous page unchanged, or leave cursor out "
                             "for the first page.") from None
    if body.get("l") != listing:
        raise BadCursor(f"this cursor is for the {body.get('l')!r} listing, not {listing!r}",
                        hint="Each listing takes only its own `next` cursors.")
    if body.get("f") != _filters_tag(filters):
        raise BadCursor("this cursor was made with other filters",
                        hint="Keep the filters of the page that gave the cursor, or start again without it.")
    types = _KEY_TYPES[listing]
    if len(body["k"]) != len(types):
        raise BadCursor("this cursor's position has the wrong shape", hint="Start again without a cursor.")
    try:
        key = tuple(_parse(t, v) for t, v in zip(types, body["k"]))
    except (TypeError, ValueError):
        raise BadCursor("this cursor's position does not parse", hint="Start again without a cursor.") from None
    seen = body.get("n", 0)
    return Cursor(key, min(max(seen, 0), MAX_WINDOW) if isinstance(seen, int) else 0)


def _parse(kind: type, value: Any) -> Any:
    if not isinstance(value, str):
        raise TypeError(value)
    if kind is dt.datetime:
        parsed = dt.datetime.fromisoformat(value)
        if parsed.tzinfo is None:
            raise ValueError("naive timestamp")
        return parsed
    if kind is uuid.UUID:
        return uuid.UUID(value)
    return value


def page_size(text: str | None) -> int:
    if text is None or text == "":
        return DEFAULT_PAGE
    try:
        n = int(text)
    except ValueError:
        raise errors.InvalidArgument(f"limit must be a whole number, got {text[:20]!r}",
                                     hint=f"1..{MAX_PAGE}; the default is {DEFAULT_PAGE}.") from None
    if not 1 <= n <= MAX_PAGE:
        raise errors.InvalidArgument(f"limit must be between 1 and {MAX_PAGE}, got {n}",
                                     hint=f"The default is {DEFAULT_PAGE}.")
    return n


# --- paging a newest-first listing through a window of its newest rows ---------------------

async def _window(fetch: Callable[[int], Awaitable[list[dict]]], key: Callable[[dict], tuple], after: Cursor | None,
                  limit: int, keep: Callable[[list[dict]], Awaitable[list[dict]]]) -> tuple[list[dict], int, bool]:
    """(page rows, rows of the window up to the last one shown, truncated) — in the order the SQL answers.

    ``fetch(n)`` answers the n newest rows in the listing's own order (newest
    first, ties in its own order).  The page after a cursor starts right
    after the cursor's row (found by its id, ``key(row)[1]``): rows added since
    sort before it and change nothing.  When that row is gone (purged), the
    page starts at the first row older than it.  The window grows (doubling,
    at most ``MAX_WINDOW``) until it holds the cursor's row and a page after it.
    """
    want = limit + 1
    window = min(MAX_WINDOW, (after.seen if after else 0) + want)
    while True:
        rows = await fetch(window)
        full = len(rows) >= window
        start = 0
        if after is not None:
            found = next((i for i, r in enumerate(rows) if key(r)[1] == after.key[1]), None)
            if found is None and full and window < MAX_WINDOW:
                window = min(MAX_WINDOW, window * 2)
                continue
            start = found + 1 if found is not None else \
                next((i for i, r in enumerate(rows) if key(r)[0] < after.key[0]), len(rows))
        matched = await keep(rows[start:])
        if len(matched) >= want or not full or window >= MAX_WINDOW:
            page = matched[:want]
            shown = page[:limit]
            seen = (rows.index(shown[-1]) + 1) if shown else (after.seen if after else 0)
            return page, seen, (full and window >= MAX_WINDOW and len(matched) < want)
        window = min(MAX_WINDOW, window * 2)


async def _all(rows: list[dict]) -> list[dict]:
    return rows


async def runs(s: Session, *, kind: str | None = None, workflow: str | None = None, state: str | None = None,
               trigger: str | None = None, creator: str | None = None, cursor: str | None = None,
               limit: int = DEFAULT_PAGE) -> Page:
    """Runs of every engine, newest first, with their cause (parent, trigger, creator)."""
    if kind is not None and kind not in RUN_KINDS:
        raise errors.InvalidArgument(f"kind must be one of {', '.join(RUN_KINDS)}, got {kind[:40]!r}",
                                     hint="Leave it out for every engine's runs.")
    filters = {"kind": kind, "workflow": workflow, "state": state, "trigger": trigger, "creator": creator}
    after = decode_cursor(cursor, "runs", filters)

    async def fetch(n: int) -> list[dict]:
        return await s.rows(queries.SERVE_LIST_RUNS, {"workflow": workflow, "state": state, "limit": n})

    async def keep(rows: list[dict]) -> list[dict]:
        rows = [r for r in rows if kind is None or r["kind"] == kind]
        if trigger is None and creator is None:
            return rows
        causes = await _causes(s, [r["id"] for r in rows])
        return [r for r in rows
                if (trigger is None or causes.get(r["id"], {}).get("triggered_by") == trigger)
                and (creator is None or causes.get(r["id"], {}).get("created_by") == creator)]

    def key(r: dict) -> tuple:
        return (r["created_at"], r["id"])

    page, seen, truncated = await _window(fetch, key, after, limit, keep)
    shown = page[:limit]
    causes = await _causes(s, [r["id"] for r in shown])
    for r in shown:
        r.update({k: v for k, v in causes.get(r["id"], {}).items() if k not in ("run_id", "kind")})
        r["tasks_done"] = None if r["tasks_total"] is None else r["tasks_total"] - r["tasks_remaining"]
    nxt = encode_cursor("runs", key(shown[-1]), filters, seen) if len(page) > limit else None
    return Page(shown, nxt, truncated)


async def _causes(s: Session, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, dict]:
    out: dict[uuid.UUID, dict] = {}
    for i in range(0, len(ids), 1000):
        for row in await s.rows(queries.RUN_CAUSES, {"run_ids": list(ids[i:i + 1000])}):
            out[row["run_id"]] = row
    return out


async def firings(s: Session, *, trigger: str | None = None, outcome: str | None = None,
                  cursor: str | None = None, limit: int = DEFAULT_PAGE) -> Page:
    """Trigger firings newest first (refused and failed ones included); payloads only for admins (the SQL's rule)."""
    filters = {"trigger": trigger, "outcome": outcome}
    after = decode_cursor(cursor, "firings", filters)

    async def fetch(n: int) -> list[dict]:
        return await s.rows(queries.SERVE_LIST_FIRINGS, {"trigger": trigger, "outcome": outcome, "limit": n})

    def key(r: dict) -> tuple:
        return (r["fired_on"], r["id"])

    page, seen, truncated = await _window(fetch, key, after, limit, _all)
    shown = page[:limit]
    nxt = encode_cursor("firings", key(shown[-1]), filters, seen) if len(page) > limit else None
    return Page(shown, nxt, truncated)


def _sorted_page(rows: list[dict], listing: str, key: Callable[[dict], tuple], cursor: str | None, limit: int,
                 filters: dict | None = None) -> Page:
    """A page of a short listing the SQL returns whole, by name (agents, definitions, triggers, queues)."""
    filters = filters or {}
    after = decode_cursor(cursor, listing, filters)
    rows = sorted(rows, key=key)
    if after is not None:
        rows = [r for r in rows if key(r) > after.key]
    shown = rows[:limit]
    nxt = encode_cursor(listing, key(shown[-1]), filters) if len(rows) > limit else None
    return Page(shown, nxt)


async def _keyset_rows(s: Session, sql: str, page: int = 1000) -> list[dict]:
    """The rows of a keyset listing (list_workflows, list_agents, list_triggers), page after page, at most MAX_WINDOW."""
    rows: list[dict] = []
    after = None
    while len(rows) < MAX_WINDOW:
        got = await s.rows(sql, {"max_rows": page, "after": after})
        rows.extend({k: v for k, v in row.items() if k != "cursor"} for row in got)
        if len(got) < page:
            break
        after = got[-1]["cursor"]
    return rows[:MAX_WINDOW]


async def definitions(s: Session, *, cursor: str | None = None, limit: int = DEFAULT_PAGE) -> Page:
    rows = await _keyset_rows(s, queries.WORKFLOW_LIST)
    return _sorted_page(rows, "definitions", lambda r: (r["name"],), cursor, limit)


MAX_VERSIONS_LISTED = 50


async def spec_of(s: Session, name: str, version: int | None) -> dict:
    """One version's normalized spec (what a run's drawing is drawn from)."""
    return (await s.value(queries.GET_WORKFLOW, {"name": name, "version": version}))["spec"]


async def definition(s: Session, name: str, version: int | None = None) -> dict:
    """A definition's version (default: the latest) with its spec, and the newest 50 versions' numbers and dates."""
    found = await s.value(queries.GET_WORKFLOW, {"name": name, "version": version})
    versions = []
    for v in range(found["versions"], max(found["versions"] - MAX_VERSIONS_LISTED, 0), -1):
        if v == found["version"]:
            versions.append({"version": v, "id": found["id"], "created_at": found["created_at"]})
            continue
        other = await s.value(queries.GET_WORKFLOW, {"name": name, "version": v})
        versions.append({"version": v, "id": other["id"], "created_at": other["created_at"]})
    found["all_versions"] = versions
    return found


async def queues(s: Session, *, cursor: str | None = None, limit: int = MAX_PAGE) -> Page:
    rows = await s.rows(queries.QUEUE_STATS)
    return _sorted_page(rows, "queues", lambda r: (r["queue"], r["unit_kind"]), cursor, limit)


MAX_HOLDINGS = 2000


async def agents(s: Session, *, cursor: str | None = None, limit: int = DEFAULT_PAGE) -> Page:
    """Agents by name, each with what it holds now (``holds``: task runs, work items, affinity keys)."""
    page = _sorted_page(await _keyset_rows(s, queries.LIST_AGENTS), "agents", lambda r: (r["name"],), cursor, limit)
    held: dict[str, list[dict]] = {}
    for row in await s.rows(queries.AGENT_HOLDINGS, {"limit": MAX_HOLDINGS}):
        held.setdefault(row.pop("agent"), []).append(row)
    for agent in page.items:
        agent["holds"] = held.get(agent["name"], [])
    return page


async def triggers(s: Session, *, cursor: str | None = None, limit: int = DEFAULT_PAGE) -> Page:
    rows = await _keyset_rows(s, queries.LIST_TRIGGERS)
    return _sorted_page(rows, "triggers", lambda r: (r["name"],), cursor, limit)


def parse_run_id(text: str) -> uuid.UUID:
    try:
        return uuid.UUID(text)
    except ValueError:
        raise errors.InvalidArgument(f"not a run id: {text[:40]!r}", hint="A run id is a UUID.") from None


async def run(s: Session, run_id: uuid.UUID) -> dict:
    """get_run's object (FF001 for an unknown or foreign run: the same answer)."""
    return await s.value(queries.GET_RUN, {"run_id": run_id})


async def run_events(s: Session, run_id: uuid.UUID) -> list[dict]:
    return await s.rows(queries.SERVE_RUN_EVENTS, {"run_id": run_id})
