"""Small helpers shared by the execution-core tests (test_core_*.py).

Every call goes through the public SQL API with explicit casts, so argument
types never depend on how psycopg adapts a Python value.
"""

from __future__ import annotations

import json
import threading
from typing import Any, Callable

import psycopg

DEFAULT_ORG = "00000000-0000-0000-0000-000000000001"

# SQLSTATEs of the execution core (docs/errors.md).
NOT_FOUND = "FF001"
STALE_TOKEN = "FF004"
ILLEGAL_TRANSITION = "FF005"
DEADLOCK = "40P01"


def connect(dsn: str, *, autocommit: bool = True) -> psycopg.Connection:
    return psycopg.connect(dsn, autocommit=autocommit)


def define(conn: psycopg.Connection, spec: dict) -> str:
    return conn.execute("SELECT flowforge.define_workflow(%s::jsonb)", (json.dumps(spec),)).fetchone()[0]


def single_spec(name: str, **task: Any) -> dict:
    return {"name": name, "tasks": [{"key": "only", **task}]}


def diamond_spec(name: str, **task: Any) -> dict:
    return {"name": name, "tasks": [
        {"key": "a", **task},
        {"key": "b", "depends_on": ["a"], **task},
        {"key": "c", "depends_on": ["a"], **task},
        {"key": "d", "depends_on": ["b", "c"], **task},
    ]}


def start_run(conn: psycopg.Connection, workflow: str, input: dict | None = None, key: str | None = None) -> str:
    return conn.execute(
        "SELECT flowforge.start_run(%s::text, %s::jsonb, %s::text)",
        (workflow, json.dumps(input or {}), key),
    ).fetchone()[0]


CLAIM_SQL = (
    "SELECT task_run_id, workflow_run_id, task_key, attempt, fencing_token, input, lease_expires_at "
    "FROM flowforge.claim(%s::text[], %s::text, %s::interval, %s::int)"
)


def claim(conn: psycopg.Connection, queues: list[str], worker: str, lease: str = "30 seconds", batch: int = 1):
    return conn.execute(CLAIM_SQL, (queues, worker, lease, batch)).fetchall()


def complete(conn: psycopg.Connection, task_run_id, token: int, output: Any = None) -> None:
    conn.execute(
        "SELECT flowforge.complete(%s::uuid, %s::bigint, %s::jsonb)",
        (task_run_id, token, None if output is None else json.dumps(output)),
    )


def fail(conn: psycopg.Connection, task_run_id, token: int, error: str, retryable: bool = True) -> None:
    conn.execute(
        "SELECT flowforge.fail(%s::uuid, %s::bigint, %s::text, %s::boolean)",
        (task_run_id, token, error, retryable),
    )


def heartbeat(conn: psycopg.Connection, task_run_id, token: int, lease: str = "30 seconds"):
    return conn.execute(
        "SELECT flowforge.heartbeat(%s::uuid, %s::bigint, %s::interval)", (task_run_id, token, lease)
    ).fetchone()[0]


def cancel_run(conn: psycopg.Connection, run_id, reason: str | None = None) -> None:
    conn.execute("SELECT flowforge.cancel_run(%s::uuid, %s::text)", (run_id, reason))


def retry_run(conn: psycopg.Connection, run_id) -> None:
    conn.execute("SELECT flowforge.retry_run(%s::uuid)", (run_id,))


def reap(conn: psycopg.Connection, max_rows: int = 1000) -> int:
    return conn.execute("SELECT flowforge.reap_expired_leases(%s::int)", (max_rows,)).fetchone()[0]


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
