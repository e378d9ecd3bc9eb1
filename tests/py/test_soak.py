"""Soak (issue 21): daemons and workers of several organizations killed, paused and restarted while runs flow.

Real processes on the test's own database and RabbitMQ exchange:

* ``DAEMONS`` daemons (``flowforge daemon``, the operator's login: tick() and the
  outbox drain, duties shared by engine id, a 5 s duty lease);
* ``WORKERS`` worker processes (``soak_worker.py``), each logged in as one of
  ``ORGS`` organizations' logins, serving a pull queue and a push queue (3 s
  leases, a 5 s dispatch lease for pushed tasks), every handler execution
  recorded with its unit and fencing token in a file (unbuffered, so it
  survives SIGKILL); the last one is raw — no SDK, and a quarter of its
  executions outlast their lease and write anyway, which the database must
  refuse;
* a load thread starting runs of every engine kind in every organization: a
  DAG diamond (some told to fail in one branch), a graph that loops 1-3 rounds,
  a state machine paid (or under-paid, then cancelled) whose action ships, a
  DAG task mapping over 2-6 elements then one after it, and a one-task DAG on
  the push queue;
* a chaos thread that, every 0.4-1.2 s, SIGKILLs a process (started again
  0.3-2 s later), SIGSTOPs one for 0.5-6 s (longer than a lease, at times), or
  restarts one with SIGTERM — a worker twice as often as a daemon.

After ``FF_SOAK_SECONDS`` (default 40: the whole test takes about a minute
and a half; ``make soak`` runs it for minutes) the chaos and the load stop,
every process is running again, and every run must end. Then the checks,
each from the database's own records and the workers' execution records:

1. every run ended exactly as its input says it should (state, outputs, steps);
2. no unit of work was applied twice: at most one ``completed`` event per task
   run or work item, and for pushed tasks at most one per outbox generation;
3. no unit ran twice under a live lease: every unit's events form one chain of
   states (each transition starts in the state the previous one ended in) with
   a new fencing token at every claim or dispatch, no two executions of a pulled
   unit had the same fencing token, two executions of a pushed one with the
   same token never overlapped (a redelivery after its consumer died), and every
   completion was written by an execution that held its token;
4. nothing is stuck: no live run, ready or running task, pending or dispatched
   work item, unpublished outbox message; why_not_ready and stuck_runs are empty.

The figures (runs, executions, kills, pauses, restarts, lease expiries,
re-dispatches) are printed at the end (``pytest -s`` shows them).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter, defaultdict
from pathlib import Path

import pika
import psycopg
import pytest
from psycopg import sql as pgsql
from psycopg.conninfo import make_conninfo
from psycopg.types.json import Jsonb

from flowforge import migrate
from helpers_runtime import amqp_url, wait_until  # noqa: F401 - amqp_url is a fixture

pytestmark = pytest.mark.soak

SECONDS = float(os.environ.get("FF_SOAK_SECONDS", "40"))
DAEMONS = int(os.environ.get("FF_SOAK_DAEMONS", "2"))
WORKERS = int(os.environ.get("FF_SOAK_WORKERS", "4"))
ORGS = int(os.environ.get("FF_SOAK_ORGS", "3"))
RUNS_PER_SECOND = float(os.environ.get("FF_SOAK_RATE", "3"))
DRAIN_TIMEOUT = 180.0
HERE = Path(__file__).resolve().parent
QUEUE, PUSH_QUEUE = "soak", "soak-push"
RETRIES = {"max_attempts": 50, "backoff": "100 milliseconds"}
FINISHED = ("succeeded", "failed", "cancelled")

SPECS = [
    {"name": "soak_dag", "tasks": [
        {"key": "da", "queue": QUEUE, **RETRIES},
        {"key": "db", "queue": QUEUE, "depends_on": ["da"], **RETRIES},
        {"key": "dc", "queue": QUEUE, "depends_on": ["da"], **RETRIES},
        {"key": "dd", "queue": QUEUE, "depends_on": ["db", "dc"], **RETRIES}]},
    {"name": "soak_graph", "kind": "graph", "start": "draft", "max_steps": 40,
     "nodes": [{"key": "draft", "queue": QUEUE, **RETRIES},
               {"key": "review", "queue": QUEUE, "max_visits": 10, **RETRIES},
               {"key": "publish", "queue": QUEUE, **RETRIES},
               {"key": "done", "final": True}],
     "edges": [{"from": "draft", "to": "review"},
               {"from": "review", "to": "draft", "when": "$.output.approved == false"},
               {"from": "review", "to": "publish"}, {"from": "publish", "to": "done"}]},
    {"name": "soak_machine", "kind": "statemachine", "initial": "awaiting_payment", "context": {"total": 100},
     "states": {
         "awaiting_payment": {"on": {"paid": [{"target": "shipping", "guard": "$.event.amount >= $.context.total",
                                               "assign": {"paid_amount": "$.event.amount"}}],
                                     "cancel": "cancelled"}},
         "shipping": {"action": {"task": "ship", "queue": QUEUE, **RETRIES}, "on_done": "delivered",
                      "on_error": "cancelled"},
         "delivered": {"final": True}, "cancelled": {"final": True}}},
    {"name": "soak_fanout", "tasks": [
        {"key": "resize", "queue": QUEUE, "map": {"over": "$.run.photos", "mode": "map", "max_concurrency": 3},
         **RETRIES},
        {"key": "album", "queue": QUEUE, "depends_on": ["resize"], **RETRIES}]},
    {"name": "soak_push", "tasks": [{"key": "pushed", "queue": PUSH_QUEUE, **RETRIES}]},
]
KINDS = ("dag", "graph", "machine", "fanout", "push")


# --- the processes -------------------------------------------------------------------------------

class Proc:
    """A restartable child process: a daemon or a worker."""

    def __init__(self, label: str, cmd: list[str], log: Path):
        self.label, self.cmd, self.log = label, cmd, log
        self.popen: subprocess.Popen | None = None
        self.paused = False
        self.pids: list[int] = []
        self.lock = threading.Lock()

    def start(self) -> None:
        with self.log.open("a") as out:
            self.popen = subprocess.Popen(self.cmd, stdout=subprocess.DEVNULL, stderr=out, env=dict(os.environ))
        self.pids.append(self.popen.pid)
        self.paused = False

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def signal(self, sig: int) -> None:
        if self.alive():
            self.popen.send_signal(sig)

    def kill(self) -> None:
        if self.alive():
            if self.paused:
                self.popen.send_signal(signal.SIGCONT)
            self.popen.kill()
            self.popen.wait(timeout=30)
        self.paused = False

    def stop(self, timeout: float = 30) -> None:
        if self.alive():
            if self.paused:
                self.popen.send_signal(signal.SIGCONT)
                self.paused = False
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()


class Chaos(threading.Thread):
    """Every 0.4-1.2 s one of: SIGKILL (restart 0.3-2 s later), SIGSTOP for 0.5-6 s, a SIGTERM restart."""

    def __init__(self, procs: list[Proc], seed: int):
        super().__init__(daemon=True)
        self.procs, self.rng = procs, random.Random(seed)
        self.halt = threading.Event()
        self.actions: Counter = Counter()
        self.kill_times: dict[int, float] = {}
        self.timers: list[threading.Timer] = []

    def _later(self, delay: float, fn) -> None:
        t = threading.Timer(delay, fn)
        t.daemon = True
        self.timers.append(t)
        t.start()

    def _restart(self, p: Proc) -> None:
        with p.lock:
            if not p.alive() and not self.halt.is_set():
                p.start()
                self.actions["started again"] += 1

    def _resume(self, p: Proc) -> None:
        with p.lock:
            if p.alive() and p.paused:
                p.signal(signal.SIGCONT)
                p.paused = False

    def run(self) -> None:
        while not self.halt.wait(self.rng.uniform(0.4, 1.2)):
            # Workers twice as often as daemons; pauses as often as kills, some longer than a lease (3 s),
            # so a paused holder wakes up to a task that was reaped and claimed again meanwhile.
            p = self.rng.choices(self.procs, weights=[1 if q.label.startswith("daemon") else 2 for q in self.procs])[0]
            action = self.rng.choices(["kill", "pause", "restart"], weights=[4, 4, 2])[0]
            with p.lock:
                if not p.alive() or p.paused:
                    continue
                if action == "kill":
                    pid = p.popen.pid
                    p.kill()
                    self.kill_times[pid] = time.time()
                    self.actions[f"SIGKILL {p.label.split('-')[0]}"] += 1
                    self._later(self.rng.uniform(0.3, 2.0), lambda p=p: self._restart(p))
                elif action == "pause":
                    p.signal(signal.SIGSTOP)
                    p.paused = True
                    self.actions[f"SIGSTOP {p.label.split('-')[0]}"] += 1
                    self._later(self.rng.uniform(0.5, 6.0), lambda p=p: self._resume(p))
                else:
                    p.stop()
                    p.start()
                    self.actions[f"SIGTERM restart {p.label.split('-')[0]}"] += 1

    def finish(self) -> None:
        """Stop, and leave every process running and not paused."""
        self.halt.set()
        self.join(30)
        for t in self.timers:
            t.cancel()
        for p in self.procs:
            with p.lock:
                if p.alive() and p.paused:
                    p.signal(signal.SIGCONT)
                    p.paused = False
                if not p.alive():
                    p.start()


class Load(threading.Thread):
    """Runs of every kind, in every organization, at ``RUNS_PER_SECOND``; remembers each run's input."""

    def __init__(self, dsns: list[str], seed: int):
        super().__init__(daemon=True)
        self.dsns, self.rng = dsns, random.Random(seed)
        self.halt = threading.Event()
        self.runs: list[dict] = []
        self.errors: list[str] = []

    def one(self, conn: psycopg.Connection, org: int, kind: str) -> None:
        rng = self.rng
        if kind == "dag":
            inp = {"fail": rng.random() < 0.2}
            run = conn.execute("SELECT flowforge.start_run('soak_dag', %s)", (Jsonb(inp),)).fetchone()[0]
        elif kind == "graph":
            inp = {"rounds": rng.randint(1, 3)}
            run = conn.execute("SELECT flowforge.start_run('soak_graph', %s)", (Jsonb(inp),)).fetchone()[0]
        elif kind == "machine":
            inp = {"amount": rng.choice([100, 150, 50])}
            run = conn.execute("SELECT flowforge.start_run('soak_machine', '{}')").fetchone()[0]
            if inp["amount"] >= 100:
                conn.execute("SELECT flowforge.send_event(%s, 'paid', %s, %s)",
                             (run, Jsonb({"amount": inp["amount"]}), f"paid-{run}"))
            else:
                # Under-paid: the guard refuses the event (FF012, nothing written); the order is cancelled.
                try:
                    conn.execute("SELECT flowforge.send_event(%s, 'paid', %s, %s)",
                                 (run, Jsonb({"amount": inp["amount"]}), f"paid-{run}"))
                    self.errors.append(f"machine {run}: an under-paid event was applied")
                except psycopg.Error as exc:
                    if exc.sqlstate != "FF012":
                        raise
                conn.execute("SELECT flowforge.send_event(%s, 'cancel', '{}', %s)", (run, f"cancel-{run}"))
        elif kind == "fanout":
            inp = {"photos": list(range(1, rng.randint(2, 6) + 1))}
            run = conn.execute("SELECT flowforge.start_run('soak_fanout', %s)", (Jsonb(inp),)).fetchone()[0]
        else:
            inp = {}
            run = conn.execute("SELECT flowforge.start_run('soak_push', '{}')").fetchone()[0]
        self.runs.append({"run": run, "kind": kind, "org": org, "input": inp})

    def run(self) -> None:
        conns = [psycopg.connect(d, autocommit=True) for d in self.dsns]
        try:
            i = 0
            while not self.halt.wait(1 / RUNS_PER_SECOND):
                org, kind = i % len(conns), KINDS[(i // len(conns)) % len(KINDS)]
                i += 1
                try:
                    self.one(conns[org], org, kind)
                except psycopg.Error as exc:  # the database itself is never killed: any error is a finding
                    self.errors.append(f"{kind} in org {org}: {exc!r}")
        finally:
            for c in conns:
                c.close()


# --- the world -------------------------------------------------------------------------------------

@pytest.fixture
def soak_world(admin_dsn: str, fresh_dsn: str, amqp_url: str, tmp_path: Path):  # noqa: F811
    migrate.migrate(fresh_dsn)
    tag = f"{os.getpid()}_{uuid.uuid4().hex[:6]}"
    roles = [f"soak_{tag}_{i}" for i in range(ORGS)]
    exchange = f"fftest.soak.{tag}"
    with psycopg.connect(fresh_dsn, autocommit=True) as op:
        op.execute("UPDATE flowforge.setting SET duty_lease = '5 seconds'")
        for i, role in enumerate(roles):
            op.execute(pgsql.SQL("CREATE ROLE {} LOGIN").format(pgsql.Identifier(role)))
            op.execute("SELECT flowforge.create_organization(%s, %s)", (f"soak-{i}", f"Soak {i}"))
            op.execute("SELECT flowforge.add_member(%s, %s, 'owner')", (f"soak-{i}", role))
    dsns = [make_conninfo(fresh_dsn, user=r) for r in roles]
    amqp_queues = []
    for d in dsns:
        with psycopg.connect(d, autocommit=True) as conn:
            for spec in SPECS:
                conn.execute("SELECT flowforge.define_workflow(%s)", (Jsonb(spec),))
            conn.execute("SELECT flowforge.configure_queue(%s, %s, NULL, '5 seconds')", (PUSH_QUEUE, exchange))
            amqp_queues.append(conn.execute("SELECT amqp_queue FROM flowforge.queue_settings(%s)",
                                            ([PUSH_QUEUE],)).fetchone()[0])
    records = tmp_path / "executions"
    records.mkdir()
    procs = []
    for i in range(DAEMONS):
        procs.append(Proc(f"daemon-{i}", [sys.executable, "-m", "flowforge.cli", "daemon", "--dsn", fresh_dsn,
                                          "--amqp-url", amqp_url, "--tick-interval", "0.2", "--poll-interval", "1",
                                          "--engine-id", f"soak-daemon-{i}"], tmp_path / f"daemon-{i}.log"))
    for i in range(WORKERS):
        # The last worker is raw (soak_worker.py): no SDK, and at times it writes after its lease lapsed.
        raw = ["raw"] if i == WORKERS - 1 else []
        procs.append(Proc(f"worker-{i}", [sys.executable, str(HERE / "soak_worker.py"), dsns[i % ORGS], amqp_url,
                                          str(records / f"worker-{i}.jsonl"), f"soak-worker-{i}", *raw],
                          tmp_path / f"worker-{i}.log"))
    world = {"dsn": fresh_dsn, "dsns": dsns, "procs": procs, "records": records, "tmp": tmp_path}
    try:
        yield world
    finally:
        for p in procs:
            p.kill()
        try:
            conn = pika.BlockingConnection(pika.URLParameters(amqp_url))
            ch = conn.channel()
            for q in amqp_queues:
                ch.queue_delete(q)
            ch.exchange_delete(exchange)
            conn.close()
        except Exception:  # noqa: BLE001 - best effort: the broker is shared
            pass
        with psycopg.connect(admin_dsn, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = ANY (%s)", (roles,))
        # The test database (which names the roles in membership rows) is dropped by fresh_dsn after us; the
        # roles own nothing, so they can go first.
        with psycopg.connect(admin_dsn, autocommit=True) as admin:
            for role in roles:
                admin.execute(pgsql.SQL("DROP ROLE IF EXISTS {}").format(pgsql.Identifier(role)))


# --- the model ---------------------------------------------------------------------------------------

def expected_problems(conn: psycopg.Connection, runs: list[dict]) -> list[str]:
    """What differs between each run's end and what its input says it must be."""
    problems = []
    for r in runs:
        run, kind, inp = r["run"], r["kind"], r["input"]
        if kind in ("dag", "fanout", "push"):
            state = conn.execute("SELECT state FROM flowforge.workflow_run WHERE id = %s", (run,)).fetchone()[0]
            tasks = {k: (s, o) for k, s, o in conn.execute(
                "SELECT task_key, state, output FROM flowforge.task_run WHERE workflow_run_id = %s", (run,))}
            if kind == "dag":
                want = ({"da": "succeeded", "db": "succeeded", "dc": "failed", "dd": "skipped"} if inp["fail"]
                        else dict.fromkeys(("da", "db", "dc", "dd"), "succeeded"))
                want_state = "failed" if inp["fail"] else "succeeded"
                got = {k: s for k, (s, _) in tasks.items()}
                if state != want_state or got != want:
                    problems.append(f"dag {run} {inp}: {state} {got}")
                elif not inp["fail"] and tasks["dd"][1] != {"key": "dd", "deps": ["db", "dc"]}:
                    problems.append(f"dag {run}: dd output {tasks['dd'][1]}")
            elif kind == "fanout":
                photos = inp["photos"]
                want_album = {"n": len(photos), "sum": sum(photos)}
                if state != "succeeded" or tasks.get("album", (None, None))[1] != want_album \
                        or tasks["resize"][1] != [{"size": p} for p in photos]:
                    problems.append(f"fanout {run} {inp}: {state} {tasks}")
            elif state != "succeeded" or tasks["pushed"] != ("succeeded", {"pushed": True}):
                problems.append(f"push {run}: {state} {tasks}")
        elif kind == "graph":
            status, steps, data = conn.execute(
                "SELECT status, steps, state FROM flowforge.graph_run WHERE run_id = %s", (run,)).fetchone()
            if status != "succeeded" or steps != 2 * inp["rounds"] + 2 or data.get("published") is not True:
                problems.append(f"graph {run} {inp}: {status} after {steps} steps")
        else:
            status, state, context = conn.execute(
                "SELECT status, state, context FROM flowforge.machine_run WHERE run_id = %s", (run,)).fetchone()
            if inp["amount"] >= 100:
                ok = (status, state) == ("succeeded", "delivered") and context.get("paid_amount") == inp["amount"] \
                    and context.get("shipped") is True
            else:
                ok = (status, state) == ("succeeded", "cancelled") and "paid_amount" not in context
            if not ok:
                problems.append(f"machine {run} {inp}: {status} in {state}, context {context}")
    return problems


def read_executions(folder: Path) -> list[dict]:
    out = []
    for f in folder.glob("*.jsonl"):
        for line in f.read_text().splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                pass  # a line cut by SIGKILL mid-write (one write per line makes it rare)
    return out


CLAIMS = ("claimed", "dispatched", "fanned_out")    # events that hand a unit to a holder, with a new token
HOLDER_WRITES = ("completed", "failed", "retry_scheduled")  # events a holder's own write makes, under its token


def unit_problems(events: dict) -> tuple[dict[str, list[str]], dict[str, int]]:
    """Each unit's events (kind, from_state, to_state, fencing_token), in order: what breaks the rules, and the
    token each unit was completed under."""
    found: dict[str, list[str]] = {"broken chain": [], "token not moved": [], "stale write": [],
                                   "completed twice": []}
    completions: dict[str, int] = {}
    for unit, evs in events.items():
        claims = [t for k, _, _, t in evs if k in CLAIMS]
        if any(b <= a for a, b in zip(claims, claims[1:])):
            found["token not moved"].append(str(unit))
        for (k1, _, to1, _), (k2, from2, _, _) in zip(evs, evs[1:]):
            if to1 != from2:
                found["broken chain"].append(f"{unit}: {k1} ended in {to1}, then {k2} started from {from2}")
        holder = None  # the token of the live lease: the last claim's
        for k, _, _, t in evs:
            if k in CLAIMS:
                holder = t
            elif k in HOLDER_WRITES and t != holder:
                found["stale write"].append(f"{unit}: {k} under token {t}, the lease was token {holder}'s")
        done = [t for k, _, _, t in evs if k == "completed"]
        if len(done) > 1:
            found["completed twice"].append(str(unit))
        if done:
            completions[str(unit)] = done[0]
    return found, completions


def execution_problems(by_generation: dict, pushed: set[str]) -> tuple[list, list]:
    """Executions per (unit, token) as (start, end, pid, key): a pulled unit run twice under one claim, and a
    pushed generation run twice at once (a redelivery is fine once its first consumer is dead)."""
    twice_pulled, overlapping_push = [], []
    for (unit, token), runs_of in by_generation.items():
        if len(runs_of) < 2:
            continue
        if unit not in pushed:
            twice_pulled.append((unit, token, len(runs_of)))
            continue
        runs_of = sorted(runs_of)
        if any(b[0] < a[1] for a, b in zip(runs_of, runs_of[1:])):
            overlapping_push.append((unit, token))
    return twice_pulled, overlapping_push


def test_soak_checks_catch_what_they_look_for():
    """The checks themselves, on made-up histories: each rule breaks once, and a good history passes."""
    good = [("created", None, "ready", 0), ("claimed", "ready", "running", 1),
            ("lease_expired", "running", "ready", 2), ("claimed", "ready", "running", 3),
            ("completed", "running", "succeeded", 3)]
    found, done = unit_problems({"good": good})
    assert not any(found.values()) and done == {"good": 3}
    zombie = good[:4] + [("completed", "running", "succeeded", 1)]          # the first holder wrote after the reap
    twice = good + [("completed", "running", "succeeded", 3)]               # one generation applied twice
    unchained = good[:2] + [("claimed", "ready", "running", 2)]             # claimed while someone held it
    same_token = good[:3] + [("claimed", "ready", "running", 1), ("completed", "running", "succeeded", 1)]
    found, _ = unit_problems({"zombie": zombie, "twice": twice, "unchained": unchained, "same": same_token})
    assert [u.split(":")[0] for u in found["stale write"]] == ["zombie"]
    assert found["completed twice"] == ["twice"]
    assert [u.split(":")[0] for u in found["broken chain"]] == ["twice", "unchained"]
    assert found["token not moved"] == ["same"]
    pulled, push = execution_problems({("p", 1): [(0, 1, 10, "k"), (2, 3, 11, "k")],
                                       ("q", 1): [(0, 5, 10, "k"), (2, 3, 11, "k")],
                                       ("r", 1): [(0, 1, 10, "k"), (2, 3, 11, "k")]}, pushed={"q", "r"})
    assert pulled == [("p", 1, 2)] and push == [("q", 1)]


UNIT_EVENTS = """
SELECT coalesce(task_run_id, work_item_id) AS unit, seq, kind, from_state, to_state, fencing_token
FROM flowforge.task_run_event
WHERE coalesce(task_run_id, work_item_id) IS NOT NULL
ORDER BY unit, seq
"""


def test_soak_kills_pauses_and_restarts_lose_nothing_and_apply_nothing_twice(soak_world):
    w = soak_world
    procs: list[Proc] = w["procs"]
    for p in procs:
        p.start()
    seed = int(os.environ.get("FF_SOAK_SEED", random.randrange(1 << 30)))
    chaos, load = Chaos(procs, seed), Load(w["dsns"], seed + 1)
    began = time.monotonic()
    load.start()
    time.sleep(min(2.0, SECONDS / 4))  # the first runs under way before the first blow
    chaos.start()
    load.halt.wait(SECONDS)
    load.halt.set()
    load.join(30)
    chaos.finish()
    assert not load.errors, f"the API refused the load (seed {seed}): {load.errors[:5]}"
    runs = load.runs
    assert runs, "no run was started"

    op = psycopg.connect(w["dsn"], autocommit=True)
    ids = [r["run"] for r in runs]

    def open_runs() -> int:
        return op.execute("SELECT count(*) FROM flowforge.engine_run WHERE run_id = ANY (%s) AND ended_at IS NULL",
                          (ids,)).fetchone()[0]

    try:
        wait_until(lambda: open_runs() == 0, DRAIN_TIMEOUT, "every run to end after the chaos", interval=0.5)
    except AssertionError:
        stuck = op.execute("SELECT unit_kind, unit_id, reason, explanation FROM flowforge.why_not_ready LIMIT 10")
        pytest.fail(f"{open_runs()} of {len(runs)} runs never ended (seed {seed}); why_not_ready: {stuck.fetchall()}; "
                    f"chaos {dict(chaos.actions)}")
    # The outbox of the last runs is published by now or very soon (mark_published follows the confirm).
    wait_until(lambda: op.execute("SELECT count(*) FROM flowforge.outbox_message WHERE published_at IS NULL")
               .fetchone()[0] == 0, 60, "the outbox to empty", interval=0.5)
    elapsed = time.monotonic() - began
    for p in procs:
        p.stop()

    # 1. Every run ended as its input says.
    problems = expected_problems(op, runs)
    assert not problems, f"{len(problems)} runs ended otherwise than the model says (seed {seed}): {problems[:5]}"

    # 2 and 3, from the event log: one chain of states per unit, a new token at every claim, one completion.
    events = defaultdict(list)
    for unit, _seq, kind, from_state, to_state, token in op.execute(UNIT_EVENTS):
        events[unit].append((kind, from_state, to_state, token))
    found, completions = unit_problems(events)
    for rule, meaning in (("broken chain", "a unit's events do not chain (two holders at once?)"),
                          ("token not moved", "a claim or dispatch did not move the fencing token on"),
                          ("stale write", "a holder's write was accepted under a lease it no longer held"),
                          ("completed twice", "a unit completed twice (a generation applied twice)")):
        assert not found[rule], f"{meaning} (seed {seed}): {found[rule][:5]}"
    pushed_twice = op.execute(
        "SELECT m.task_run_id, m.fencing_token_snapshot, count(e.*) FROM flowforge.outbox_message m "
        "JOIN flowforge.task_run_event e ON e.task_run_id = m.task_run_id "
        "AND e.fencing_token = m.fencing_token_snapshot AND e.kind = 'completed' "
        "GROUP BY 1, 2 HAVING count(e.*) > 1").fetchall()
    assert not pushed_twice, f"outbox generations applied twice: {pushed_twice[:5]}"

    # 3, from the workers' own records: fencing tokens of the executions.
    executions = read_executions(w["records"])
    starts = [e for e in executions if e["e"] == "start"]
    ends = {(e["unit"], e["token"], e["pid"]): e["t"] for e in executions if e["e"] == "end"}
    by_generation = defaultdict(list)
    for e in starts:
        end = ends.get((e["unit"], e["token"], e["pid"]), chaos.kill_times.get(e["pid"], float("inf")))
        by_generation[(e["unit"], e["token"])].append((e["t"], end, e["pid"], e["key"]))
    pushed = {str(r[0]) for r in op.execute(
        "SELECT tr.id FROM flowforge.task_run tr WHERE tr.queue = %s", (PUSH_QUEUE,))}
    twice_pulled, overlapping_push = execution_problems(by_generation, pushed)
    assert not twice_pulled, f"a pulled unit ran twice under one fencing token (one claim): {twice_pulled[:5]}"
    assert not overlapping_push, f"a pushed generation ran twice at once: {overlapping_push[:5]}"
    # A fanning task is completed by its children, not by a handler of its own.
    held = {str(r[0]) for r in op.execute("SELECT id FROM flowforge.task_run WHERE fans_out")}
    unexplained = [u for u, t in completions.items() if u not in held and (u, t) not in by_generation]
    assert not unexplained, f"completions no execution holding their token made: {unexplained[:5]}"

    # 4. Nothing is stuck.
    left = op.execute("""
        SELECT (SELECT count(*) FROM flowforge.task_run WHERE state IN ('pending', 'ready', 'running')),
               (SELECT count(*) FROM flowforge.work_item WHERE status IN ('pending', 'dispatched')),
               (SELECT count(*) FROM flowforge.outbox_message WHERE published_at IS NULL),
               (SELECT count(*) FROM flowforge.engine_run WHERE ended_at IS NULL),
               (SELECT count(*) FROM flowforge.why_not_ready),
               (SELECT count(*) FROM flowforge.stuck_runs)""").fetchone()
    assert left == (0, 0, 0, 0, 0, 0), f"left behind (tasks, items, outbox, runs, why_not_ready, stuck): {left}"

    figures = op.execute("""
        SELECT count(*) FILTER (WHERE kind = 'lease_expired'), count(*) FILTER (WHERE kind = 'timed_out'),
               count(*) FILTER (WHERE kind = 'dispatched'), count(*) FILTER (WHERE kind = 'claimed'),
               count(*) FILTER (WHERE kind = 'completed')
        FROM flowforge.task_run_event""").fetchone()
    redelivered = sum(1 for k, v in by_generation.items() if len(v) > 1)
    report = {
        "seconds of chaos": SECONDS, "wall seconds": round(elapsed, 1), "seed": seed,
        "daemons": DAEMONS, "workers": WORKERS, "organizations": ORGS,
        "runs": len(runs), "runs by kind": dict(Counter(r["kind"] for r in runs)),
        "handler executions": len(starts), "executions cut short": len(starts) - len(ends),
        "late writes refused (raw worker)": sum(1 for e in executions if e["e"] == "end" and e.get("written") is False),
        "raw worker executions": sum(1 for e in executions if e["e"] == "start"
                                     and e["worker"] == f"soak-worker-{WORKERS - 1}"),
        "chaos": dict(chaos.actions), "lease expiries reaped": figures[0], "timeouts": figures[1],
        "push dispatches": figures[2], "claims": figures[3], "completions": figures[4],
        "pushed generations run again after their consumer died": redelivered,
    }
    print("\nsoak: " + json.dumps(report))
    (w["tmp"] / "soak-report.json").write_text(json.dumps(report, indent=2))
    if os.environ.get("FF_SOAK_REPORT"):
        Path(os.environ["FF_SOAK_REPORT"]).write_text(json.dumps(report, indent=2))
    op.close()
