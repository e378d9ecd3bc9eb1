"""Small helpers shared by the execution-core tests (test_core_*.py).

Every API call goes through the facade's gateway, ``flowforge.Client`` (named
notation, explicit casts), so the tests exercise the statements the SDK
sends; these wrappers only keep the shapes the tests were written against:
claims as tuples, errors as the psycopg errors carrying their SQLSTATE.
"""

from __future__ import annotations

import functools
import threading
from typing import Any, Callable

import psycopg

from flowforge import errors
from flowforge.client import Client

DEFAULT_ORG = "00000000-0000-0000-0000-000000000001"

# SQLSTATEs of the execution core (docs/errors.md).
NOT_FOUND = "FF001"
STALE_TOKEN = "FF004"
ILLEGAL_TRANSITION = "FF005"
DEADLOCK = "40P01"


def connect(dsn: str, *, autocommit: bool = True) -> psycopg.Connection:
    return psycopg.connect(dsn, autocommit=autocommit)


def _psycopg_errors(api_call: Callable) -> Callable:
    """The core tests assert SQLSTATEs on psycopg errors (a deadlock must stay a psycopg error):
    hand back the psycopg error the gateway mapped to its FlowForge class."""
    @functools.wraps(api_call)
    def call(*args, **kwargs):
        try:
            return api_call(*args, **kwargs)
        except errors.FlowForgeError as exc:
            if isinstance(exc.__cause__, psycopg.Error):
                raise exc.__cause__ from None
            raise
    return call


@_psycopg_errors
def define(conn: psycopg.Connection, spec: dict) -> str:
    return Client(conn).define_workflow(spec)


def single_spec(name: str, **task: Any) -> dict:
    return {"name": name, "tasks": [{"key": "only", **task}]}


def diamond_spec(name: str, **task: Any) -> dict:
    return {"name": name, "tasks": [
        {"key": "a", **task},
        {"key": "b", "depends_on": ["a"], **task},
        {"key": "c", "depends_on": ["a"], **task},
        {"key": "d", "depends_on": ["b", "c"], **task},
    ]}


@_psycopg_errors
def start_run(conn: psycopg.Connection, workflow: str, input: dict | None = None, key: str | None = None) -> str:
    return Client(conn).start_run(workflow, input or {}, key)


@_psycopg_errors
def claim(conn: psycopg.Connection, queues: list[str], worker: str, lease: str = "30 seconds", batch: int = 1):
    """Claimed tasks as (task_run_id, workflow_run_id, task_key, attempt, fencing_token, input, lease_expires_at),
    the tuples the core tests unpack, built by name from the gateway's rows."""
    rows = Client(conn).claim(queues, worker, lease, batch)
    return [(r.task_run_id, r.workflow_run_id, r.task_key, r.attempt, r.fencing_token, r.input, r.lease_expires_at)
            for r in rows]


@_psycopg_errors
def complete(conn: psycopg.Connection, task_run_id, token: int, output: Any = None) -> None:
    Client(conn).complete(task_run_id, token, output)


@_psycopg_errors
def complete_many(conn: psycopg.Connection, items: list[tuple[Any, int, Any]]) -> list[tuple[Any, str]]:
    """complete_many over (task_run_id, token, output) items; (task_run_id, outcome) per item, in order."""
    rows = Client(conn).complete_many([i[0] for i in items], [i[1] for i in items], [i[2] for i in items])
    return [(r.task_run_id, r.outcome) for r in rows]


@_psycopg_errors
def fail(conn: psycopg.Connection, task_run_id, token: int, error: str, retryable: bool = True) -> None:
    Client(conn).fail(task_run_id, token, error, retryable)


@_psycopg_errors
def heartbeat(conn: psycopg.Connection, task_run_id, token: int, lease: str = "30 seconds"):
    return Client(conn).heartbeat(task_run_id, token, lease)


@_psycopg_errors
def cancel_run(conn: psycopg.Connection, run_id, reason: str | None = None) -> None:
    Client(conn).cancel_run(run_id, reason)


@_psycopg_errors
def retry_run(conn: psycopg.Connection, run_id) -> None:
    Client(conn).retry_run(run_id)


@_psycopg_errors
def reap(conn: psycopg.Connection, max_rows: int = 1000) -> int:
    return Client(conn).reap_expired_leases(max_rows)


def sqlstate_of(fn: Callable[[], Any]) -> str | None:
    """Run fn; return None when it succeeded, else the SQLSTATE it raised."""
    try:
        fn()
    except psycopg.Error as exc:
        return exc.sqlstate
    return None


def run_threads(targets: list[Callable[[], Any]], timeout: float = 120.0) -> list[tuple[Any, BaseException | None]]:
    """Run each target in its own thread, started together; return (result, exception) per target."""
    results: list[tuple[Any, BaseException | None]] = [(None, None)] * len(targets)

    def wrap(i: int, target: Callable[[], Any]) -> None:
        try:
            results[i] = (target(), None)
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            results[i] = (None, exc)

    threads = [threading.Thread(target=wrap, args=(i, t), daemon=True) for i, t in enumerate(targets)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
        if t.is_alive():
            raise AssertionError(f"a worker thread did not finish within {timeout}s (hang or lock wait?)")
    return results


def task_events(conn: psycopg.Connection, task_run_id) -> list[tuple]:
    """(seq, kind, from_state, to_state, fencing_token) of one task run, in append order."""
    return conn.execute(
        "SELECT seq, kind::text, from_state::text, to_state::text, fencing_token "
        "FROM flowforge.task_run_event WHERE task_run_id = %s ORDER BY seq",
        (task_run_id,),
    ).fetchall()
