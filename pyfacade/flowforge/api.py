"""The SQL API as plain Python functions, for the CLI and the demo.

Each function sends one named statement from ``queries`` on a connection the
caller owns and returns plain dicts.  Nothing here decides anything: refusals
come back from PostgreSQL as ``flowforge.errors`` classes (by SQLSTATE).

The ``*_table`` readers below use the TABLE READS section of ``queries``
(no API function serves them yet).
"""

from __future__ import annotations

import re
import uuid
from datetime import timedelta
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
        info = _one(conn, queries.WORKFLOW_VERSION, {"id": version_id}) or {}
    return {"id": version_id, **info}


def list_workflows(conn: psycopg.Connection) -> list[dict]:
    return _rows(conn, queries.WORKFLOW_LIST)


def get_workflow(conn: psycopg.Connection, name: str) -> dict:
    row = _one(conn, queries.WORKFLOW_LATEST, {"name": name})
    if row is None:
        raise errors.NotFound(f"workflow {name!r} not found", hint="flowforge workflow list shows the defined ones.")
    return row


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


# --- reads of the tables (see queries: TABLE READS) -----------------------------

def resolve_run_id(conn: psycopg.Connection, text: str) -> uuid.UUID:
    """A run id from its full text or a unique prefix of at least 4 hex digits."""
    text = text.strip()
    try:
        return uuid.UUID(text)
    except ValueError:
        pass
    if not _HEX_PREFIX.match(text):
        raise errors.InvalidArgument(f"{text!r} is not a run id (a UUID or a prefix of at least 4 hex digits)")
    rows = _rows(conn, queries.RUN_IDS_BY_PREFIX, {"prefix": text.lower() + "%"})
    if not rows:
        raise errors.NotFound(f"run {text} not found")
    if len(rows) > 1:
        raise errors.InvalidArgument(f"run id prefix {text} is ambiguous; type more of it")
    return rows[0]["id"]


def list_runs(conn: psycopg.Connection, *, workflow: str | None = None, state: str | None = None,
              limit: int = 20) -> list[dict]:
    return _rows(conn, queries.RUN_LIST, {"workflow": workflow, "state": state, "limit": limit})


def get_run(conn: psycopg.Connection, run_id: uuid.UUID) -> dict:
    """The run, its spec, and its task runs in topological order of the spec."""
    run = _one(conn, queries.RUN_GET, {"run_id": run_id})
    if run is None:
        raise errors.NotFound(f"run {run_id} not found")
    tasks = {t["task_key"]: t for t in _rows(conn, queries.RUN_TASKS, {"run_id": run_id})}
    from .render import levels  # ordering for display only

    order = [key for layer in levels(run["spec"]["tasks"]) for key in layer]
    run["tasks"] = [tasks[k] for k in order if k in tasks] + [t for k, t in tasks.items() if k not in order]
    return run


def runs_progress(conn: psycopg.Connection, run_ids: list[uuid.UUID]) -> list[dict]:
    return _rows(conn, queries.RUNS_PROGRESS, {"run_ids": run_ids})
