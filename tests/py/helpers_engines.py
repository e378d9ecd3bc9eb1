"""What the substrate's pytest files share (issue 13): the work-item queue, agents and
affinity called by name over real connections, a steerable clock, and forced interleavings.

* API calls: thin wrappers over the SQL functions with named arguments and casts
  (the Python facade has no work-item methods yet); errors stay psycopg errors, so a
  test asserts their SQLSTATE.
* The clock: ``install_clock`` replaces ``flowforge.now()`` in the test's own database
  with the steerable one of ``tests/fixtures/clock.sql``; ``set_clock`` then sets a
  connection's time for the rest of its session (a transaction-local setting would not
  survive autocommit). A connection that never sets it keeps real time.
* Interleavings: ``Blocked`` runs one call in a thread on its own connection and
  ``wait_blocked`` waits until ``pg_stat_activity`` shows that backend waiting on a lock
  (``wait_event_type = 'Lock'``) held by the named backend — never a sleep.
"""

from __future__ import annotations

import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any, Callable

import psycopg
from psycopg.types.json import Jsonb

HERE = Path(__file__).resolve().parent
CLOCK_FIXTURE = HERE.parent / "fixtures" / "clock.sql"
DEFAULT_ORG = "00000000-0000-0000-0000-000000000001"

NOT_FOUND = "FF001"
STALE_TOKEN = "FF004"
ILLEGAL_TRANSITION = "FF005"
FORBIDDEN = "FF007"
UNAUTHENTICATED = "FF008"
DEADLOCK = "40P01"


def connect(dsn: str, *, autocommit: bool = True) -> psycopg.Connection:
    return psycopg.connect(dsn, autocommit=autocommit)


# --- the clock ------------------------------------------------------------------------

def install_clock(dsn: str) -> None:
    """Make flowforge.now() steerable in this (throwaway) database, for good: the fixture's
    freeze_clock() replaces the function; its transaction-local setting ends with the call."""
    with connect(dsn) as conn:
        conn.execute(CLOCK_FIXTURE.read_text())
        conn.execute("SELECT flowforge_test.freeze_clock()")


def set_clock(conn: psycopg.Connection, at: datetime | str | None) -> None:
    """This connection's flowforge.now() from now on (None: real time again)."""
    conn.execute("SELECT set_config('flowforge_test.now', %s, false)", ("" if at is None else str(at),))


def db_now(conn: psycopg.Connection) -> datetime:
    return conn.execute("SELECT pg_catalog.now()").fetchone()[0]


# --- definitions and runs -------------------------------------------------------------

def define(conn: psycopg.Connection, spec: dict) -> Any:
    return conn.execute("SELECT flowforge.define_workflow(spec => %s::jsonb)", (Jsonb(spec),)).fetchone()[0]


def single_graph(name: str, **node: Any) -> dict:
    """work -> done: one working node (node's fields merged in), then a final node."""
    return {"name": name, "kind": "graph", "start": "work",
            "nodes": [{"key": "work", **node}, {"key": "done", "final": True}],
            "edges": [{"from": "work", "to": "done"}]}


def start_run(conn: psycopg.Connection, workflow: str, input: dict | None = None) -> Any:
    return conn.execute("SELECT flowforge.start_run(workflow => %s::text, input => %s::jsonb)",
                        (workflow, Jsonb(input or {}))).fetchone()[0]


def start_runs(conn: psycopg.Connection, workflow: str, n: int) -> list:
    return [r[0] for r in conn.execute(
        "SELECT flowforge.start_run(workflow => %s::text, input => jsonb_build_object('i', i)) "
        "FROM generate_series(1, %s) i", (workflow, n)).fetchall()]


# --- the work-item protocol -------------------------------------------------------------

CLAIM_WORK = """
SELECT work_item_id, run_id, engine_kind, task_name, attempt, fencing_token, payload, lease_expires_at
FROM flowforge.claim_work(queues => %s::text[], agent => %s::text, lease => %s::interval, batch => %s::integer,
                          engine_kinds => %s::text[], task_names => %s::text[])
"""


def claim_work(conn: psycopg.Connection, queues: list[str], agent: str, lease: str = "30 seconds", batch: int = 1,
               engine_kinds: list[str] | None = None, task_names: list[str] | None = None) -> list[dict]:
    cur = conn.execute(CLAIM_WORK, (queues, agent, lease, batch, engine_kinds, task_names))
    cols = [d.name for d in cur.description]
    return [dict(zip(cols, row)) for row in cur.fetchall()]


def complete_work(conn: psycopg.Connection, item, token: int, output: Any = None) -> None:
    conn.execute("SELECT flowforge.complete_work(work_item_id => %s::uuid, fencing_token => %s::bigint, "
                 "output => %s::jsonb)", (item, token, None if output is None else Jsonb(output)))


def fail_work(conn: psycopg.Connection, item, token: int, error: str, retryable: bool = True) -> None:
    conn.execute("SELECT flowforge.fail_work(work_item_id => %s::uuid, fencing_token => %s::bigint, "
                 "error => %s::text, retryable => %s::boolean)", (item, token, error, retryable))


def heartbeat_work(conn: psycopg.Connection, item, token: int, lease: str = "30 seconds"):
    return conn.execute("SELECT flowforge.heartbeat_work(work_item_id => %s::uuid, fencing_token => %s::bigint, "
                        "lease => %s::interval)", (item, token, lease)).fetchone()[0]


def register_agent(conn: psycopg.Connection, name: str, info: dict | None = None):
    return conn.execute("SELECT flowforge.register_agent(name => %s::text, info => %s::jsonb)",
                        (name, Jsonb(info or {}))).fetchone()[0]


def agent_heartbeat(conn: psycopg.Connection, name: str, metrics: dict | None = None) -> str:
    return conn.execute("SELECT flowforge.agent_heartbeat(name => %s::text, metrics => %s::jsonb)",
                        (name, None if metrics is None else Jsonb(metrics))).fetchone()[0]


def set_agent_status(conn: psycopg.Connection, name: str, status: str) -> None:
    conn.execute("SELECT flowforge.set_agent_status(name => %s::text, status => %s::text)", (name, status))


def list_agents(conn: psycopg.Connection) -> dict[str, dict]:
    cur = conn.execute("SELECT * FROM flowforge.list_agents()")
    cols = [d.name for d in cur.description]
    return {row[0]: dict(zip(cols, row)) for row in cur.fetchall()}


def sqlstate_of(fn: Callable[[], Any]) -> str | None:
    """Run fn; None when it succeeded, else the SQLSTATE it raised."""
    try:
        fn()
    except psycopg.Error as exc:
        return exc.sqlstate
    return None


# --- reading what happened (as the superuser, who reads every row) ------------------------

def item_row(conn: psycopg.Connection, item) -> dict:
    cur = conn.execute("SELECT * FROM flowforge.work_item WHERE id = %s", (item,))
    cols = [d.name for d in cur.description]
    return dict(zip(cols, cur.fetchone()))


def item_events(conn: psycopg.Connection, item) -> list[tuple]:
    """(kind, from_state, to_state, fencing_token, detail) of one work item, in append order."""
    return conn.execute(
        "SELECT kind::text, from_state::text, to_state::text, fencing_token, detail FROM flowforge.task_run_event "
        "WHERE work_item_id = %s ORDER BY seq", (item,)).fetchall()


def graph_status(conn: psycopg.Connection, run) -> tuple:
    return conn.execute("SELECT status::text, reason FROM flowforge.graph_run WHERE run_id = %s", (run,)).fetchone()


def bindings(conn: psycopg.Connection) -> dict[str, tuple[str, int]]:
    return {k: (a, g) for k, a, g in conn.execute(
        "SELECT affinity_key, agent_id::text, generation FROM flowforge.affinity_binding").fetchall()}


# --- forced interleavings -----------------------------------------------------------------

def wait_until(predicate: Callable[[], Any], timeout: float = 30.0, what: str = "condition",
               interval: float = 0.01):
    """Poll predicate until it returns something true (returned); fail after timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def lock_waiters(observer: psycopg.Connection, blocker_pid: int) -> list[int]:
    """Backends waiting on a lock that backend blocker_pid holds (pg_stat_activity + pg_blocking_pids)."""
    return [r[0] for r in observer.execute(
        "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND %s = ANY (pg_blocking_pids(pid))",
        (blocker_pid,)).fetchall()]


def wait_blocked(observer: psycopg.Connection, pid: int, by: int, what: str = "a lock wait") -> None:
    """Wait until backend pid waits on a lock (wait_event_type 'Lock') that backend `by` holds."""
    def blocked():
        row = observer.execute(
            "SELECT wait_event_type, %s = ANY (pg_blocking_pids(pid)) FROM pg_stat_activity WHERE pid = %s",
            (by, pid)).fetchone()
        return row is not None and row[0] == "Lock" and row[1]
    wait_until(blocked, what=f"backend {pid} to wait for backend {by} ({what})")


class Blocked:
    """One call on its own connection in a thread, expected to wait on a lock: ``result()``
    joins it and returns ``("ok", value)`` or ``("error", sqlstate, message)``."""

    def __init__(self, conn: psycopg.Connection, call: Callable[[psycopg.Connection], Any]):
        self.conn = conn
        self.pid = conn.info.backend_pid
        self._out: tuple | None = None
        self._thread = threading.Thread(target=self._run, args=(call,), daemon=True)
        self._thread.start()

    def _run(self, call) -> None:
        try:
            self._out = ("ok", call(self.conn))
        except psycopg.Error as exc:
            self._out = ("error", exc.sqlstate, str(exc).splitlines()[0])
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            self._out = ("exception", exc)

    def result(self, timeout: float = 30.0) -> tuple:
        self._thread.join(timeout)
        assert not self._thread.is_alive(), f"backend {self.pid} still running after {timeout}s"
        if self._out[0] == "exception":
            raise self._out[1]
        return self._out

    def done(self) -> bool:
        return not self._thread.is_alive()


def run_threads(targets: list[Callable[[], Any]], timeout: float = 120.0) -> list[tuple[Any, BaseException | None]]:
    """Each target in its own thread, started together; (result, exception) per target."""
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
            raise AssertionError(f"a thread did not finish within {timeout}s (hang or lock wait?)")
    for _, exc in results:
        if isinstance(exc, psycopg.Error) and exc.sqlstate == DEADLOCK:
            raise AssertionError(f"deadlock detected (40P01) — a lock-order bug in sql/functions: {exc}")
    for _, exc in results:
        if exc is not None:
            raise exc
    return results
