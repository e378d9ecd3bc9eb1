"""Shared plumbing for the FlowForge benchmarks.

Every script:
* creates its own databases (``ffbench_<what>_<pid>``) and drops them at exit;
* measures a subject and its baseline in the same run, in alternating rounds,
  and reports medians and their ratio;
* prints one line per figure (``figure()``), and when ``FF_BENCH_OUT`` names a
  file, appends the same figure there as one JSON line for ``run_all.py``;
* exits non-zero only when it could not run at all (``could_not_run()``).

Progress goes to stderr (``progress()``), figures to stdout.
"""

from __future__ import annotations

import atexit
import json
import os
import platform
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Callable

import psycopg
from psycopg import sql

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

PG_HOST = os.environ.get("FF_BENCH_PGHOST", "127.0.0.1")
PG_PORT = os.environ.get("FF_BENCH_PGPORT", "5432")
PG_USER = os.environ.get("FF_BENCH_PGUSER", "postgres")
ADMIN_DSN = f"host={PG_HOST} port={PG_PORT} user={PG_USER} dbname=postgres"
AMQP_URL = os.environ.get("FF_BENCH_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/%2F")

# Scale: run_all passes FF_BENCH_QUICK=1 for smoke runs (smaller, fewer rounds).
QUICK = os.environ.get("FF_BENCH_QUICK", "") not in ("", "0")

SCRIPT = Path(sys.argv[0]).stem.replace("bench_", "")


def dsn_for(dbname: str) -> str:
    return f"host={PG_HOST} port={PG_PORT} user={PG_USER} dbname={dbname}"


# --- output -------------------------------------------------------------------

def progress(message: str) -> None:
    """A progress line on stderr (run_all shows it as the current step)."""
    sys.stderr.write(f"  · {SCRIPT}: {message}\n")
    sys.stderr.flush()


def figure(name: str, value: float | None, unit: str, *, baseline: str | None = None,
           baseline_value: float | None = None, ratio: float | None = None,
           target: str | None = None, met: bool | None = None, note: str = "",
           chart: dict | None = None) -> None:
    """Print one line for one figure and record it for run_all.

    ``ratio`` is subject / baseline unless the caller computed another one
    (then ``note`` says what it is).  ``target`` is text such as ">= 0.8".
    """
    def fmt(v):
        if v is None:
            return "n/a"
        if abs(v) >= 100:
            return f"{v:,.0f}"
        if abs(v) >= 10:
            return f"{v:.1f}"
        return f"{v:.3g}" if abs(v) < 1 else f"{v:.2f}"

    parts = [f"{SCRIPT}: {name}: {fmt(value)} {unit}"]
    if baseline is not None:
        parts.append(f"vs {baseline} {fmt(baseline_value)} {unit}")
    if ratio is not None:
        parts.append(f"ratio {ratio:.2f}")
    if target is not None:
        parts.append(f"target {target}: {'MET' if met else 'MISSED'}" if met is not None else f"target {target}")
    line = ", ".join(parts)
    if note:
        line += f" ({note})"
    print(line, flush=True)
    out = os.environ.get("FF_BENCH_OUT")
    if out:
        record = {"script": SCRIPT, "name": name, "value": value, "unit": unit, "baseline": baseline,
                  "baseline_value": baseline_value, "ratio": ratio, "target": target, "met": met,
                  "note": note, "line": line, "chart": chart}
        with open(out, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record) + "\n")


def could_not_run(reason: str) -> None:
    print(f"{SCRIPT}: could not run: {reason}", flush=True)
    sys.exit(2)


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def rounds(default: int) -> int:
    return max(1, int(os.environ.get("FF_BENCH_ROUNDS", "2" if QUICK else str(default))))


def scale(full: int, quick: int) -> int:
    return quick if QUICK else full


# --- databases ------------------------------------------------------------------

_created: list[str] = []


def admin() -> psycopg.Connection:
    try:
        return psycopg.connect(ADMIN_DSN, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        could_not_run(f"PostgreSQL at {PG_HOST}:{PG_PORT} unreachable: {str(exc).strip().splitlines()[0]}")
        raise  # unreachable


def create_database(label: str) -> str:
    """A new empty database (dropped at exit); returns its DSN."""
    name = f"ffbench_{label}_{os.getpid()}"
    with admin() as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    _created.append(name)
    return dsn_for(name)


def flowforge_database(label: str) -> str:
    """A new database with the FlowForge schema migrated in (as the superuser, default organization)."""
    dsn = create_database(label)
    from flowforge import migrate

    migrate.migrate(dsn)
    return dsn


def drop_database(dsn: str) -> None:
    name = psycopg.conninfo.conninfo_to_dict(dsn)["dbname"]
    try:
        with psycopg.connect(ADMIN_DSN, autocommit=True, connect_timeout=5) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
    except Exception as exc:  # noqa: BLE001 - best effort at exit
        sys.stderr.write(f"could not drop {name}: {exc}\n")
    if name in _created:
        _created.remove(name)


@atexit.register
def _drop_all() -> None:
    for name in list(_created):
        drop_database(dsn_for(name))


def connect(dsn: str, *, autocommit: bool = True) -> psycopg.Connection:
    return psycopg.connect(dsn, autocommit=autocommit, application_name=f"ffbench-{SCRIPT}")


# What checkpoint() vacuums: the tables a round updates, the engines' included (a DAG run's
# directory row too). to_regclass skips those an older tree has not got.
ROUND_TABLES = ("flowforge.task_run", "flowforge.workflow_run", "flowforge.outbox_message", "bench_jobs",
                "flowforge.flow_slot", "flowforge.flow_fair", "flowforge.flow_bucket",
                "flowforge.engine_run", "flowforge.work_item", "flowforge.graph_run", "flowforge.graph_visit",
                "flowforge.machine_run", "flowforge.machine_event_queue", "flowforge.machine_timer",
                "flowforge.agent", "flowforge.affinity_binding")


def checkpoint(dsn: str, *, vacuum: bool = True) -> None:
    """Start each round from the same place: the queue tables vacuumed, no dirty buffers left.

    VACUUM stands in for autovacuum, which may be off on the server (it is on
    the shared development machine): without it dead rows of earlier rounds
    pile up in the claim indexes and later rounds pay for earlier ones
    (``vacuum=False`` shows that cost: round_decay.py).
    """
    with connect(dsn) as conn:
        for table in ROUND_TABLES if vacuum else ():
            if conn.execute("SELECT to_regclass(%s)", [table]).fetchone()[0] is not None:
                conn.execute(f"VACUUM {table}")
        conn.execute("CHECKPOINT")


# --- the workloads shared by several scripts -----------------------------------------

def history_partitions(conn: psycopg.Connection, since_sql: str, until_sql: str) -> None:
    """The history's month partitions (0032) of every UTC month in [since, until]: what tick() makes ahead on a live
    installation, made here for history written into the past."""
    conn.execute(f"""
        SELECT flowforge._history_partition_create(t, m)
        FROM unnest(ARRAY['task_run_event', 'audit_log', 'trigger_firing']) t,
             generate_series(date_trunc('month', ({since_sql}) AT TIME ZONE 'UTC'),
                             date_trunc('month', ({until_sql}) AT TIME ZONE 'UTC'), interval '1 month') g,
             LATERAL (SELECT g AT TIME ZONE 'UTC' AS m) x""")


SINGLE_SPEC = {"name": "single", "tasks": [{"key": "work"}]}


def define(dsn: str, spec: dict) -> None:
    from psycopg.types.json import Jsonb

    with connect(dsn) as conn:
        conn.execute("SELECT flowforge.define_workflow(%s)", [Jsonb(spec)])


def start_runs(dsn: str, workflow: str, n: int, chunk: int = 5000) -> None:
    """n runs of a workflow, set-based (one start_run per row of generate_series), in chunks."""
    with connect(dsn) as conn:
        left = n
        while left > 0:
            k = min(chunk, left)
            conn.execute("SELECT count(flowforge.start_run(%s, '{}'::jsonb)) FROM generate_series(1, %s)", [workflow, k])
            left -= k


BARE_DDL = """
CREATE TABLE IF NOT EXISTS bench_jobs (
    id          bigserial PRIMARY KEY,
    state       text NOT NULL DEFAULT 'ready',
    payload     jsonb NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX IF NOT EXISTS bench_jobs_ready ON bench_jobs (created_at) WHERE state = 'ready';
"""


def bare_setup(dsn: str) -> None:
    with connect(dsn) as conn:
        conn.execute(BARE_DDL)


def bare_enqueue(dsn: str, n: int) -> None:
    with connect(dsn) as conn:
        conn.execute("INSERT INTO bench_jobs (state) SELECT 'ready' FROM generate_series(1, %s)", [n])


# The statements of the issue, verbatim in shape.
BARE_CLAIM = ("UPDATE bench_jobs SET state = 'running' WHERE id = (SELECT id FROM bench_jobs WHERE state = 'ready' "
              "ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id")
BARE_DONE = "UPDATE bench_jobs SET state = 'done' WHERE id = %s"
BARE_CLAIM_N = ("UPDATE bench_jobs SET state = 'running' WHERE id = ANY (ARRAY(SELECT id FROM bench_jobs "
                "WHERE state = 'ready' ORDER BY created_at LIMIT %s FOR UPDATE SKIP LOCKED)) RETURNING id")
BARE_DONE_N = "UPDATE bench_jobs SET state = 'done' WHERE id = ANY (%s)"

FF_CLAIM = "SELECT * FROM flowforge.claim(ARRAY['default'], %s, '30 seconds', 1)"
FF_CLAIM_N = "SELECT * FROM flowforge.claim(ARRAY['default'], %s, '30 seconds', %s)"
FF_COMPLETE = "SELECT flowforge.complete(%s, %s, NULL)"
FF_COMPLETE_MANY = "SELECT count(*) FROM flowforge.complete_many(%s::uuid[], %s::bigint[], NULL) WHERE outcome = 'completed'"


def drain(dsn: str, step: Callable[[psycopg.Connection, int], int], *, threads: int = 4,
          seconds: float = 5.0, stop_on_empty: bool = True, limit: int | None = None) -> tuple[int, float]:
    """Run ``step(conn, thread_no)`` on ``threads`` autocommit connections for ``seconds``.

    ``step`` does one claim (and its completions) and returns how many jobs it
    finished, 0 when it found nothing.  With ``stop_on_empty`` a thread stops
    at its first empty claim; otherwise it sleeps 1 ms and tries again (DAG
    dependents become ready later).  ``limit`` stops every thread once that
    many jobs are done in all: without it, threads that poll past the last
    queued job would time their idling, and the rate would be the backlog's
    size over the round, not what the database can do.  Returns (jobs done,
    seconds), timed from when every connection was open to when the last
    thread stopped.
    """
    conns = [connect(dsn) for _ in range(threads)]
    done = [0] * threads
    start = threading.Barrier(threads + 1)
    deadline = [0.0]
    errors: list[BaseException] = []

    def loop(i: int) -> None:
        conn = conns[i]
        start.wait()
        try:
            while time.perf_counter() < deadline[0] and (limit is None or sum(done) < limit):
                n = step(conn, i)
                if n:
                    done[i] += n
                elif stop_on_empty:
                    return
                else:
                    time.sleep(0.001)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    workers = [threading.Thread(target=loop, args=(i,), daemon=True) for i in range(threads)]
    for w in workers:
        w.start()
    t0 = time.perf_counter()
    deadline[0] = t0 + seconds
    start.wait()
    for w in workers:
        w.join()
    elapsed = time.perf_counter() - t0
    for c in conns:
        c.close()
    if errors:
        raise errors[0]
    return sum(done), elapsed


def interleave(dsns: tuple[str, str], steps: tuple[Callable[[psycopg.Connection, int], int], ...], *,
               threads: int = 4, jobs: int = 500, warmup: int = 20) -> tuple[float, float]:
    """Two subjects in turn, job by job, on each of ``threads`` threads: each thread holds a
    connection to both databases and runs ``jobs`` of each, alternating (the side that goes first
    alternates too). Drift on a shared machine then cancels at the scale of one job, where rounds
    of seconds each see a different machine. The first ``warmup`` jobs of each side on each new
    connection (plans, caches) are not timed. Returns each side's mean µs per job (wall time of
    its timed steps, summed over the threads, divided by its jobs). A step that finds nothing is
    tried again (1 ms later, on its side's time); 200 in a row stop the script: the caller queues
    the backlog (``(jobs + warmup) * threads`` a side)."""
    conns = [[connect(d) for d in dsns] for _ in range(threads)]
    spent = [[0.0, 0.0] for _ in range(threads)]
    start = threading.Barrier(threads)
    errors: list[BaseException] = []

    def loop(t: int) -> None:
        try:
            for k in range(warmup):
                for side in (0, 1):
                    if not steps[side](conns[t][side], t):
                        raise SystemExit(f"interleave: side {side} ran out of backlog; queue more before")
            start.wait()
            for k in range(jobs):
                for side in ((0, 1) if (k + t) % 2 == 0 else (1, 0)):
                    t0 = time.perf_counter()
                    empty = 0
                    # A claim may find every candidate locked by the other threads (a flow-control
                    # key's gate is taken SKIP LOCKED): it tries again, and its side pays for it.
                    while not steps[side](conns[t][side], t):
                        empty += 1
                        if empty > 200:
                            raise SystemExit(f"interleave: side {side} ran out of backlog; queue more before")
                        time.sleep(0.001)
                    spent[t][side] += time.perf_counter() - t0
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
            start.abort()  # the others must not wait at the barrier for this thread

    workers = [threading.Thread(target=loop, args=(t,), daemon=True) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    for pair in conns:
        for conn in pair:
            conn.close()
    if errors:
        raise errors[0]
    return tuple(sum(s[side] for s in spent) / (threads * jobs) * 1e6 for side in (0, 1))


class Subject:
    """One side of a comparison: a step to drain with and a way to keep a backlog of work queued.

    ``enqueue(n)`` adds n units (jobs, or runs for a DAG); ``per_unit`` is how
    many completions one unit makes.  Before each timed round the backlog is
    topped up to what the last round's rate (the warm-up's, for the first)
    needs for the round and half again, so a round measures the steady state
    with a backlog.  A round that still finishes its backlog early stops there
    (``drain``'s limit) and is counted in ``dry``: its rate stays a rate, with
    the tail of the last runs in it.
    """

    def __init__(self, name: str, dsn: str, step, enqueue: Callable[[int], None], *, per_unit: int = 1,
                 first_guess: int = 2000, stop_on_empty: bool = True, threads: int = 4):
        self.name, self.dsn, self.step, self.enqueue = name, dsn, step, enqueue
        self.per_unit, self.guess, self.stop_on_empty, self.threads = per_unit, first_guess, stop_on_empty, threads
        self.backlog = 0          # completions queued and not yet done
        self.rates: list[float] = []
        self.sizing_rate: float | None = None   # the last round's rate, warm-up included
        self.dry = 0              # rounds that finished their backlog before the deadline

    def round(self, seconds: float) -> float:
        want = int(self.guess if self.sizing_rate is None else self.sizing_rate * seconds * 1.5) + self.per_unit
        if self.backlog < want:
            units = -(-(want - self.backlog) // self.per_unit)
            self.enqueue(units)
            self.backlog += units * self.per_unit
        checkpoint(self.dsn)
        n, secs = drain(self.dsn, self.step, seconds=seconds, stop_on_empty=self.stop_on_empty,
                        threads=self.threads, limit=self.backlog)
        if n >= self.backlog:
            self.dry += 1
        self.backlog -= n
        self.sizing_rate = n / secs
        self.rates.append(self.sizing_rate)
        return self.rates[-1]

    @property
    def median(self) -> float:
        return median(self.rates)


def alternate(subjects: list[Subject], n_rounds: int, seconds: float, *, warmup: float = 1.0) -> None:
    """Warm each subject up, then ``n_rounds`` rounds of each in turn (a, b, c, a, b, c, ...)."""
    for s in subjects:
        s.round(warmup)
        s.rates.clear()
        s.dry = 0
    for r in range(n_rounds):
        for s in subjects:
            s.round(seconds)
        progress(f"round {r + 1}/{n_rounds}: " + ", ".join(f"{s.name} {s.rates[-1]:,.0f}/s" for s in subjects))


def round_seconds(full: float = 5.0, quick: float = 2.0) -> float:
    return float(os.environ.get("FF_BENCH_SECONDS", quick if QUICK else full))


def ff_single_step(worker_prefix: str = "bench", queue: str = "default") -> Callable[[psycopg.Connection, int], int]:
    """FlowForge claim of one, then complete: two statements, two commits. Subjects that share a
    database drain a queue each: on a shared queue one subject completes another's backlog, and
    the other, topped up by its own count, runs dry and measures less than it can do."""
    claim = FF_CLAIM.replace("ARRAY['default']", "ARRAY[%s]")

    def step(conn: psycopg.Connection, i: int) -> int:
        row = conn.execute(claim, [queue, f"{worker_prefix}-{i}"], prepare=True).fetchone()
        if row is None:
            return 0
        conn.execute(FF_COMPLETE, [row[0], row[4]], prepare=True)
        return 1
    return step


def bare_single_step(conn: psycopg.Connection, i: int) -> int:
    row = conn.execute(BARE_CLAIM, prepare=True).fetchone()
    if row is None:
        return 0
    conn.execute(BARE_DONE, [row[0]], prepare=True)
    return 1


# --- the machine ----------------------------------------------------------------------

PG_SETTINGS = ("shared_buffers", "work_mem", "synchronous_commit", "fsync", "wal_level", "max_wal_size",
               "checkpoint_timeout", "max_connections", "effective_cache_size", "random_page_cost", "jit",
               "autovacuum", "shared_preload_libraries")


def machine_info() -> dict:
    info = {"host": platform.node(), "python": platform.python_version(), "kernel": platform.release(),
            "cores": os.cpu_count()}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                info["memory_gib"] = round(int(line.split()[1]) / 1024 / 1024, 1)
                break
        info["loadavg"] = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        pass
    try:
        with admin() as conn:
            info["postgresql"] = conn.execute("SELECT version()").fetchone()[0]
            info["pg_settings"] = {name: conn.execute(
                "SELECT current_setting(%s)", [name]).fetchone()[0] for name in PG_SETTINGS}
    except Exception as exc:  # noqa: BLE001
        info["postgresql"] = f"unknown ({exc})"
    return info
