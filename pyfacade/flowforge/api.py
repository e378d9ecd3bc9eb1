"""The SQL API as plain Python functions, for the CLI and the demo.

Each function sends one named statement from ``queries`` on a connection the
caller owns and returns plain dicts.  Nothing here decides anything: refusals
come back from PostgreSQL as ``flowforge.errors`` classes (by SQLSTATE).

Reads use the read API (``list_workflows``, ``get_workflow``, ``list_runs``,
``get_run``); only ``resolve_run_id`` still reads a table (see the TABLE
READS section of ``queries``).
"""

from __future__ import annotations

import re
import uuid
from datetime import datetime, timedelta
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from . import db, errors, queries

_HEX_PREFIX = re.compile(r"^[0-9a-fA-F-]{4,36}$")


def _rows(conn: psycopg.Connection, query: str, params: dict | None = None) -> list[dict]:
    with db.mapped_errors(), conn.cursor(row_factory=dict_row) as cur:
        cur.execute(query, params or {})
        return cur.fetchall() if cur.description else []


def _one(conn: psycopg.Connection, query: str, params: dict | None = None) -> dict | None:
    rows = _rows(conn, query, params)
    return rows[0] if rows else None


def _value(conn: psycopg.Connection, query: str, params: dict | None = None) -> Any:
    with db.mapped_errors():
        row = conn.execute(query, params or {}).fetchone()
    return row[0] if row else None


# --- definitions ---------------------------------------------------------------

def define_workflow(conn: psycopg.Connection, spec: Any) -> dict:
    """define_workflow(spec) and what it did: {id, name, version, created}. Commits."""
    with conn.transaction():
        version_id = _value(conn, queries.DEFINE_WORKFLOW, {"spec": Jsonb(spec)})
        # define_workflow validated the spec, so it is an object with a name.
        info = _one(conn, queries.WORKFLOW_DEFINED, {"name": spec["name"]}) or {}
    return {"id": version_id, **info}


def list_workflows(conn: psycopg.Connection) -> list[dict]:
    return _rows(conn, queries.WORKFLOW_LIST)


def get_workflow(conn: psycopg.Connection, name: str) -> dict:
    """The latest version: {id, name, version, kind, created_at, spec, versions}."""
    return _parse_times(_value(conn, queries.GET_WORKFLOW, {"name": name}))


# --- runs ------------------------------------------------------------------------

def start_run(conn: psycopg.Connection, workflow: str, run_input: Any = None,
              idempotency_key: str | None = None) -> uuid.UUID:
    with conn.transaction():
        return _value(conn, queries.START_RUN, {
            "workflow": workflow, "input": Jsonb({} if run_input is None else run_input),
            "idempotency_key": idempotency_key,
        })


def cancel_run(conn: psycopg.Connection, run_id: uuid.UUID, reason: str | None = None) -> None:
    with conn.transaction():
        _value(conn, queries.CANCEL_RUN, {"run_id": run_id, "reason": reason})


def retry_run(conn: psycopg.Connection, run_id: uuid.UUID) -> None:
    with conn.transaction():
        _value(conn, queries.RETRY_RUN, {"run_id": run_id})


def run_events(conn: psycopg.Connection, run_id: uuid.UUID) -> list[dict]:
    return _rows(conn, queries.RUN_EVENTS, {"run_id": run_id})


def tick(conn: psycopg.Connection) -> dict:
    with conn.transaction():
        return _value(conn, queries.TICK)


def configure_queue(conn: psycopg.Connection, name: str, exchange: str | None, routing_key: str | None,
                    dispatch_lease: timedelta) -> None:
    with conn.transaction():
        _value(conn, queries.CONFIGURE_QUEUE, {"name": name, "exchange": exchange, "routing_key": routing_key,
                                               "dispatch_lease": dispatch_lease})


# --- reads ----------------------------------------------------------------------------

def resolve_run_id(conn: psycopg.Connection, text: str) -> uuid.UUID:
    """A run id from its full text or a unique prefix of at least 4 hex digits."""
    text = text.strip()
    try:
        return uuid.UUID(text)
    except ValueError:
        pass
    if not _HEX_PREFIX.match(text):
        raise errors.InvalidArgument(f"{text!r} is not a run id (a UUID or a prefix of at least 4 hex digits)")
    return _rows(conn, queries.RESOLVE_RUN_ID, {"prefix": text})[0]["id"]


def list_runs(conn: psycopg.Connection, *, workflow: str | None = None, state: str | None = None,
              limit: int = 20) -> list[dict]:
    return _rows(conn, queries.RUN_LIST, {"workflow": workflow, "state": state, "limit": limit})


def get_run(conn: psycopg.Connection, run_id: uuid.UUID) -> dict:
    """get_run(run_id) with timestamps as datetimes and tasks in DAG order (for display)."""
    run = _parse_times(_value(conn, queries.GET_RUN, {"run_id": run_id}))
    run["id"] = uuid.UUID(run["id"])
    run["tasks_done"] = run["tasks_total"] - run["tasks_remaining"]
    tasks = {t["key"]: _parse_times(t) for t in run["tasks"]}
    from .render import levels  # ordering for display only

    run["tasks"] = [tasks[key] for layer in levels(run["tasks"]) for key in layer]
    return run


def _parse_times(obj: dict) -> dict:
    """jsonb from the read API carries timestamps as ISO text; make them datetimes."""
    for key, value in obj.items():
        if isinstance(value, str) and (key.endswith("_at")):
            obj[key] = datetime.fromisoformat(value)
    return obj
