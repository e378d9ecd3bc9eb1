"""Fan-out (issue 15) with real workers: a DAG task maps over its run input and its children — work
items — are drained by several workers at once.

* A 10,000-element map drained by four worker threads over the SQL protocol (claim_work in
  batches, complete_work per child, each thread on its own connection): every element executed
  exactly once (counted in the handler, and one completed work item per element, first attempt),
  never more children live than max_concurrency (an observer counts the rows), the output in
  element order — inline in get_run, page by page from fan_out_output, and in the dependent
  task's input.
* kill -9 of worker processes mid-map: four ``flowforge worker`` processes (the SDK) log every
  execution they start (index, attempt) to a file of their own; two are killed with SIGKILL, two
  replacements started, the other two killed later. The leases of what the dead held run out and
  tick() reaps them; the map completes. No succeeded child ran again: every element has one
  completed child; each execution logged is a distinct attempt of that child, none after its
  successful one; every child completed before a kill is unchanged at the end (id, attempts,
  output, completion time).
* retry_run after an injected failure: a worker (the SDK, in process) fails one element for good;
  the node fails (on_item_failure fail) and the run with it. After retry_run the map completes, and
  every child that had succeeded is untouched (its row — attempts, output, completion time — and
  not executed again); only the others ran.
* Cancel mid-map: forced (the SQL protocol by hand) — the dispatched children's holders are
  refused FF004 whatever they write, nothing is claimable, no child is created, the checkpoint
  keeps what succeeded; then raced, with four worker threads draining while the run is cancelled —
  no claim begun after cancel_run returned takes a child, every write a holder makes after it is
  refused FF004, and every child dispatched at the cancel ends cancelled with its token moved on.

Nothing here is timed: waits poll a condition against a deadline.
"""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import textwrap
import threading
import time
from pathlib import Path

import psycopg
import pytest
from psycopg.types.json import Jsonb

from helpers_engines import (
    ILLEGAL_TRANSITION,
    STALE_TOKEN,
    claim_work,
    complete_work,
    connect,
    define,
    fail_work,
    heartbeat_work,
    run_threads,
    sqlstate_of,
    start_run,
    wait_until,
)
from helpers_runtime import FLOWFORGE, fast_worker, running  # noqa: F401 - running is a fixture
from helpers_sdk_engines import wait_run
from flowforge import PermanentError

QUEUE = "fq"


def mapping(name: str, *, max_concurrency: int = 100, max_attempts: int = 1, **fan) -> dict:
    """resize maps over $.run.xs (children on queue fq); album depends on it."""
    return {"name": name, "tasks": [
        {"key": "resize", "queue": QUEUE, "max_attempts": max_attempts, "backoff": "0 seconds",
         "map": {"over": "$.run.xs", "mode": "map", "max_concurrency": max_concurrency, **fan}},
        {"key": "album", "queue": "albums", "depends_on": ["resize"]},
    ]}


def graph_mapping(name: str, *, max_concurrency: int = 100, max_attempts: int = 1, **fan) -> dict:
    """The same as a graph: resize maps over $.state.xs, then album, then done."""
    return {"name": name, "kind": "graph", "start": "resize", "nodes": [
        {"key": "resize", "queue": QUEUE, "max_attempts": max_attempts, "backoff": "0 seconds",
         "map": {"over": "$.state.xs", "mode": "map", "max_concurrency": max_concurrency, **fan}},
        {"key": "album", "queue": "albums"}, {"key": "done", "final": True}],
        "edges": [{"from": "resize", "to": "album"}, {"from": "album", "to": "done"}]}


SPECS = {"dag": mapping, "graph": graph_mapping}
UNIT_STATES = {"dispatched": "running", "completed": "succeeded"}  # a graph unit's item status, said as a task's


def fanning_unit(conn, run_id, key: str = "resize") -> dict:
    """The fanning unit as a task's state (running, succeeded, failed...), output and error: a DAG's
    task run, or a graph's latest visit item of the node."""
    kind = conn.execute("SELECT engine_kind FROM flowforge.engine_run WHERE run_id = %s", (run_id,)).fetchone()[0]
    if kind == "dag":
        return task_row(conn, run_id, key)
    state, output, error = conn.execute(
        "SELECT status::text, output, error FROM flowforge.work_item WHERE run_id = %s AND task_name = %s "
        "AND checkpoint_id IS NULL ORDER BY created_at DESC, id DESC LIMIT 1", (run_id, key)).fetchone()
    return {"state": UNIT_STATES.get(state, state), "output": output, "error": error}


def square(item: int, index: int) -> dict:
    return {"i": index, "sq": item * item}


def children(conn, run_id) -> dict[int, dict]:
    """The run's fan-out children by element index (the superuser reads every row)."""
    cur = conn.execute("SELECT item_index, id, status::text AS status, retry_count + 1 AS attempt, fencing_token, output, "
                       "completed_at FROM flowforge.work_item WHERE run_id = %s AND checkpoint_id IS NOT NULL "
                       "ORDER BY item_index, created_at", (run_id,))
    cols = [d.name for d in cur.description]
    out: dict[int, dict] = {}
    for row in cur.fetchall():
        child = dict(zip(cols, row))
        assert child["item_index"] not in out or out[child["item_index"]]["status"] != "completed", \
            f"element {child['item_index']} has a second child after one completed"
        out[child["item_index"]] = child
    return out


def completed_per_index(conn, run_id) -> collections.Counter:
    return collections.Counter(dict(conn.execute(
        "SELECT item_index, count(*) FROM flowforge.work_item WHERE run_id = %s AND checkpoint_id IS NOT NULL "
        "AND status = 'completed' GROUP BY 1", (run_id,)).fetchall()))


def task_row(conn, run_id, key: str) -> dict:
    cur = conn.execute("SELECT state::text AS state, output, error FROM flowforge.task_run "
                       "WHERE workflow_run_id = %s AND task_key = %s", (run_id, key))
    cols = [d.name for d in cur.description]
    return dict(zip(cols, cur.fetchone()))


def fan_out_of(conn, run_id, key: str = "resize") -> dict:
    """get_run's progress of the fanning task (a DAG's task's fan_out, a graph's fan_outs by node)."""
    run = conn.execute("SELECT flowforge.get_run(%s)", (run_id,)).fetchone()[0]
    if run["kind"] == "graph":
        return run["fan_outs"][key]
    (task,) = [t for t in run["tasks"] if t["key"] == key]
    return task["fan_out"]


def fan_out_pages(conn, run_id, node: str = "resize", page: int = 1000) -> list[tuple]:
    rows, after = [], -1
    while True:
        got = conn.execute("SELECT index, status, output FROM flowforge.fan_out_output(%s, %s, %s, %s)",
                           (run_id, node, after, page)).fetchall()
        if not got:
            return rows
        assert len(got) <= page
        rows += got
        after = got[-1][0]


def claim_album(conn) -> dict:
    """The dependent DAG task, claimed and completed by hand: its input (deps.resize is the map's output)."""
    rows = conn.execute("SELECT task_run_id, fencing_token, input FROM flowforge.claim(ARRAY['albums'], 'album-w', "
                        "'1 minute', 1)").fetchall()
    assert len(rows) == 1, rows
    task_run_id, token, task_input = rows[0]
    conn.execute("SELECT flowforge.complete(%s, %s, %s)", (task_run_id, token, Jsonb({"ok": True})))
    return task_input


def album_gets(conn, kind: str) -> list:
    """The map's output as the next unit sees it: a DAG dependent's deps.resize, the graph's next node's
    state.resize (an array output is stored under the node's key). The unit is completed."""
    if kind == "dag":
        return claim_album(conn)["deps"]["resize"]
    (row,) = claim_work(conn, ["albums"], "album-w", "1 minute", 1)
    assert row["task_name"] == "album"
    complete_work(conn, row["work_item_id"], row["fencing_token"], {"ok": True})
    return row["payload"]["state"]["resize"]


# --- 10,000 elements, four workers -------------------------------------------------------------

N_BIG = 10_000
BIG_CONCURRENCY = 100


def test_a_10000_element_map_drained_by_four_workers(migrated_dsn):
    with connect(migrated_dsn) as conn:
        define(conn, mapping("big", max_concurrency=BIG_CONCURRENCY))
        elements = [(i * 7919) % 10007 for i in range(N_BIG)]  # not the indexes: the output must follow the input
        run_id = start_run(conn, "big", {"xs": elements, "label": "big"})
    executions: collections.Counter = collections.Counter()
    lock = threading.Lock()
    done = threading.Event()
    peak = {"live": 0}

    def worker(name: str) -> int:
        taken = 0
        with connect(migrated_dsn) as conn:
            while True:
                rows = claim_work(conn, [QUEUE], name, "5 minutes", 25)
                if not rows:
                    if task_row(conn, run_id, "resize")["state"] != "running":
                        return taken
                    time.sleep(0.005)  # every live child is held by another worker
                    continue
                for r in rows:
                    p = r["payload"]
                    assert r["task_name"] == "resize" and r["attempt"] == 1, r
                    assert p["input"] == {"run": {"label": "big"}, "deps": {}}, "a child carries its siblings"
                    with lock:
                        executions[p["index"]] += 1
                    complete_work(conn, r["work_item_id"], r["fencing_token"], square(p["item"], p["index"]))
                    taken += 1

    def observer() -> None:
        """Counts the live children rows (not the checkpoint's counter) now and then."""
        with connect(migrated_dsn) as conn:
            checkpoint = conn.execute("SELECT id FROM flowforge.checkpoint WHERE run_id = %s", (run_id,)).fetchone()[0]
            while not done.is_set():
                live = conn.execute("SELECT count(*) FROM flowforge.work_item WHERE checkpoint_id = %s AND "
                                    "status IN ('pending', 'dispatched')", (checkpoint,)).fetchone()[0]
                peak["live"] = max(peak["live"], live)
                time.sleep(0.2)

    watcher = threading.Thread(target=observer, daemon=True)
    watcher.start()
    try:
        results = run_threads([lambda n=n: worker(f"w{n}") for n in range(4)], timeout=600)
    finally:
        done.set()
        watcher.join(10)
    per_worker = [r for r, _ in results]
    assert sum(per_worker) == N_BIG and all(per_worker), per_worker  # all four took part
    assert executions == collections.Counter({i: 1 for i in range(N_BIG)}), "an element ran twice or never"
    assert 0 < peak["live"] <= BIG_CONCURRENCY, peak

    want = [square(x, i) for i, x in enumerate(elements)]
    with connect(migrated_dsn) as conn:
        kids = children(conn, run_id)
        assert len(kids) == N_BIG and all(k["status"] == "completed" and k["attempt"] == 1 and k["fencing_token"] == 1
                                          for k in kids.values())
        resize = task_row(conn, run_id, "resize")
        assert resize["state"] == "succeeded" and resize["output"] == want
        pages = fan_out_pages(conn, run_id)
        assert [r[0] for r in pages] == list(range(N_BIG)) and {r[1] for r in pages} == {"completed"}
        assert [r[2] for r in pages] == want
        fan = fan_out_of(conn, run_id)
        assert (fan["idx"], fan["total"], fan["succeeded"], fan["failed"], fan["live"], fan["done"]) == \
            (N_BIG, N_BIG, N_BIG, 0, 0, True)
        album_input = claim_album(conn)
        assert album_input["deps"]["resize"] == want
        assert conn.execute("SELECT state FROM flowforge.workflow_run WHERE id = %s", (run_id,)).fetchone()[0] \
            == "succeeded"
    print(f"children per worker: {per_worker}, peak live children: {peak['live']}")


# --- kill -9 of worker processes --------------------------------------------------------------------

WORKER_APP = """
import os, time
import flowforge

worker = flowforge.Worker(queues=["fq"], concurrency=6, lease=3, poll_interval=0.2, grace_period=1)
LOG = open(os.path.join(os.environ["MARKS"], f"exec-{os.getpid()}.log"), "a", buffering=1)

@worker.task("resize")
def resize(ctx, input):
    LOG.write(f"{input['index']} {ctx.attempt}\\n")  # line-buffered: written before the work, kill or not
    if os.environ.get("FAIL_INDEX") and input["index"] == int(os.environ["FAIL_INDEX"]):
        raise flowforge.PermanentError("injected")
    time.sleep(0.01)
    return {"i": input["index"], "sq": input["item"] * input["item"]}
"""


class WorkerProcs:
    """``flowforge worker fan_app:worker`` subprocesses, each logging its executions to MARKS."""

    def __init__(self, dsn: str, app_dir: Path):
        self.dsn, self.dir = dsn, app_dir
        (app_dir / "fan_app.py").write_text(textwrap.dedent(WORKER_APP))
        self.procs: list[subprocess.Popen] = []

    def spawn(self, n: int = 1) -> list[subprocess.Popen]:
        env = {k: v for k, v in os.environ.items() if k not in ("FLOWFORGE_DSN", "FLOWFORGE_AMQP_URL")}
        env.update({"MARKS": str(self.dir), "FLOWFORGE_DSN": self.dsn})
        new = [subprocess.Popen([str(FLOWFORGE), "worker", "fan_app:worker", "--log-level", "WARNING"], cwd=self.dir,
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
               for _ in range(n)]
        self.procs += new
        return new

    def executions(self) -> list[tuple[int, int, int]]:
        """(index, attempt, pid) of every execution started, by every process so far."""
        out = []
        for path in self.dir.glob("exec-*.log"):
            pid = int(path.stem.split("-")[1])
            for line in path.read_text().splitlines():
                if line.strip():
                    index, attempt = line.split()
                    out.append((int(index), int(attempt), pid))
        return out

    def close(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.kill()
        for p in self.procs:
            p.wait(15)


@pytest.fixture
def procs(migrated_dsn, tmp_path):
    w = WorkerProcs(migrated_dsn, tmp_path)
    try:
        yield w
    finally:
        w.close()


N_KILL = 800


def _completed(dsn: str, run_id) -> int:
    with connect(dsn) as conn:
        return conn.execute("SELECT count(*) FROM flowforge.work_item WHERE run_id = %s AND checkpoint_id IS NOT NULL "
                            "AND status = 'completed'", (run_id,)).fetchone()[0]


def test_kill_9_of_workers_mid_map_repeats_no_succeeded_child(migrated_dsn, procs):
    with connect(migrated_dsn) as conn:
        define(conn, mapping("killed", max_concurrency=40, max_attempts=5))
        run_id = start_run(conn, "killed", {"xs": list(range(N_KILL))})
    first = procs.spawn(4)
    wait_until(lambda: _completed(migrated_dsn, run_id) >= N_KILL // 4, 120, "a quarter of the map")
    for p in first[:2]:
        p.send_signal(signal.SIGKILL)  # mid-map: whatever they held stays dispatched until its lease runs out
    for p in first[:2]:
        p.wait(15)
    with connect(migrated_dsn) as conn:
        before_kill = {i: c for i, c in children(conn, run_id).items() if c["status"] == "completed"}
        # A worker's name is host:pid:suffix; what the two dead ones held stays dispatched to them.
        held_by_dead = conn.execute(
            "SELECT count(*) FROM flowforge.work_item WHERE run_id = %s AND status = 'dispatched' "
            "AND split_part(leased_by, ':', 2) = ANY (%s)", (run_id, [str(p.pid) for p in first[:2]])).fetchone()[0]
    procs.spawn(2)
    wait_until(lambda: _completed(migrated_dsn, run_id) >= N_KILL // 2, 120, "half of the map")
    for p in first[2:]:
        p.send_signal(signal.SIGKILL)
    for p in first[2:]:
        p.wait(15)
    procs.spawn(1)
    wait_until(lambda: _map_done(migrated_dsn, run_id, tick=True), 240, "the map to end (the dead's leases reaped)")
    for p in procs.procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs.procs:
        p.wait(30)

    want = [square(i, i) for i in range(N_KILL)]
    logged = procs.executions()
    with connect(migrated_dsn) as conn:
        resize = task_row(conn, run_id, "resize")
        assert resize["state"] == "succeeded" and resize["output"] == want, resize["error"]
        kids = children(conn, run_id)
        assert completed_per_index(conn, run_id) == collections.Counter({i: 1 for i in range(N_KILL)})
        # Every child completed before the first kill is as it was: never run again, never rewritten.
        assert {i: kids[i] for i in before_kill} == before_kill
        reaped = conn.execute("SELECT count(*) FROM flowforge.task_run_event WHERE workflow_run_id = %s "
                              "AND kind = 'lease_expired'", (run_id,)).fetchone()[0]
        assert claim_album(conn)["deps"]["resize"] == want
    by_index: dict[int, list[int]] = collections.defaultdict(list)
    for index, attempt, _ in logged:
        by_index[index].append(attempt)
    assert set(by_index) == set(range(N_KILL)), "an element was never executed"
    for index, attempts in by_index.items():
        final = kids[index]["attempt"]
        # Each execution is a distinct attempt (a claim) of the element's one child, and none came
        # after the attempt that succeeded: a succeeded child never ran again.
        assert sorted(attempts) == sorted(set(attempts)) and max(attempts) == final, (index, attempts, final)
    rerun = {i for i, a in by_index.items() if len(a) > 1}
    assert not rerun & set(before_kill), "a child that had succeeded before the kill ran again"
    assert held_by_dead > 0 and reaped > 0 and rerun, (held_by_dead, reaped, len(rerun))  # the kill hit work in flight
    print(f"held by the first two when killed: {held_by_dead}; reaped: {reaped}; run again: {len(rerun)}")


def _map_done(dsn: str, run_id, tick: bool = False) -> bool:
    with connect(dsn) as conn:
        if tick:
            conn.execute("SELECT flowforge.tick()")
        return fanning_unit(conn, run_id)["state"] != "running"


# --- retry_run after an injected failure ----------------------------------------------------------------

N_RETRY = 400
BAD = 237


@pytest.mark.parametrize("kind", ["dag", "graph"])
def test_retry_run_after_an_injected_failure_resumes_from_the_checkpoint(migrated_dsn, running, kind):
    with connect(migrated_dsn) as conn:
        define(conn, SPECS[kind]("flaky", max_concurrency=20))
        run_id = start_run(conn, "flaky", {"xs": list(range(N_RETRY))})
    executions: collections.Counter = collections.Counter()
    lock = threading.Lock()
    inject = threading.Event()
    inject.set()
    worker = fast_worker(migrated_dsn, name="flaky-w", queues=[QUEUE], concurrency=4)

    @worker.task("resize")
    def resize(ctx, input):
        with lock:
            executions[input["index"]] += 1
        if inject.is_set() and input["index"] == BAD:
            raise PermanentError("injected failure")
        return square(input["item"], input["index"])

    running(worker)
    run = wait_run(migrated_dsn, run_id, timeout=180)
    assert run["state"] == "failed", run["state"]
    with connect(migrated_dsn) as conn:
        resize_row = fanning_unit(conn, run_id)
        assert resize_row["state"] == "failed" and f"element {BAD} failed after 1 attempt(s)" in resize_row["error"]
        if kind == "dag":
            assert task_row(conn, run_id, "album")["state"] == "skipped"
        kids = children(conn, run_id)
        succeeded = {i: c for i, c in kids.items() if c["status"] == "completed"}
        assert kids[BAD]["status"] == "failed"
        assert {c["status"] for i, c in kids.items() if i not in succeeded and i != BAD} <= {"cancelled"}
        assert conn.execute("SELECT count(*) FROM flowforge.work_item WHERE run_id = %s AND status IN "
                            "('pending', 'dispatched')", (run_id,)).fetchone()[0] == 0
        assert 0 < len(succeeded) < N_RETRY
        fan = fan_out_of(conn, run_id)
        assert (fan["succeeded"], fan["live"], fan["done"], fan["outcome"]) == (len(succeeded), 0, True, "failed"), fan
        ran_before = dict(executions)

        inject.clear()
        conn.execute("SELECT flowforge.retry_run(%s)", (run_id,))
    wait_until(lambda: _map_done(migrated_dsn, run_id), 180, "the resumed map to end")
    with connect(migrated_dsn) as conn:
        resize_row = fanning_unit(conn, run_id)
        assert resize_row["state"] == "succeeded", resize_row
        assert resize_row["output"] == [square(i, i) for i in range(N_RETRY)]
        after = children(conn, run_id)
        # Every child that had succeeded is the same row, untouched: attempts, token, output, completion time.
        assert {i: after[i] for i in succeeded} == succeeded
        assert completed_per_index(conn, run_id) == collections.Counter({i: 1 for i in range(N_RETRY)})
        fan = fan_out_of(conn, run_id)
        assert (fan["idx"], fan["succeeded"], fan["failed"], fan["generation"]) == (N_RETRY, N_RETRY, 0, 1), fan
        assert album_gets(conn, kind) == [square(i, i) for i in range(N_RETRY)]
    assert wait_run(migrated_dsn, run_id)["state"] == "succeeded"
    # ... and none of them ran again; every other element ran once more (or for the first time).
    again = executions - collections.Counter(ran_before)
    assert set(again) == set(range(N_RETRY)) - set(succeeded), sorted(set(again) & set(succeeded))[:10]
    assert all(n == 1 for n in again.values()), again
    assert all(ran_before[i] == 1 for i in succeeded)
    print(f"succeeded before the failure: {len(succeeded)}; run after retry_run: {len(again)}")


# --- cancel mid-map ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["dag", "graph"])
def test_cancel_mid_map_refuses_the_holders_and_creates_nothing(migrated_dsn, kind):
    """By hand: six children claimed, three completed, then cancel_run. The three holders are refused
    FF004 on every write; nothing of the run is claimable; no child is created; the checkpoint keeps
    the three that succeeded (a retry would resume them)."""
    with connect(migrated_dsn) as conn:
        define(conn, SPECS[kind]("cancelled", max_concurrency=10))
        run_id = start_run(conn, "cancelled", {"xs": list(range(200))})
        rows = claim_work(conn, [QUEUE], "holder", "5 minutes", 6)
        assert len(rows) == 6
        for r in rows[:3]:
            complete_work(conn, r["work_item_id"], r["fencing_token"], square(r["payload"]["item"], r["payload"]["index"]))
        before = children(conn, run_id)
        assert len(before) == 13  # ten live at once: three done, three held, seven pending, three more made
        conn.execute("SELECT flowforge.cancel_run(%s, 'mid-map')", (run_id,))

        held = rows[3:]
        for r in held:
            for write in (lambda: complete_work(conn, r["work_item_id"], r["fencing_token"], {"late": True}),
                          lambda: fail_work(conn, r["work_item_id"], r["fencing_token"], "late", True),
                          lambda: heartbeat_work(conn, r["work_item_id"], r["fencing_token"])):
                assert sqlstate_of(write) == STALE_TOKEN
        # With the current (moved-on) token the item is simply not dispatched any more.
        current = conn.execute("SELECT fencing_token FROM flowforge.work_item WHERE id = %s",
                               (held[0]["work_item_id"],)).fetchone()[0]
        assert current == held[0]["fencing_token"] + 1
        assert sqlstate_of(lambda: complete_work(conn, held[0]["work_item_id"], current, {})) == ILLEGAL_TRANSITION
        assert claim_work(conn, [QUEUE], "late-claimer", "5 minutes", 100) == []
        after = children(conn, run_id)
        assert set(after) == set(before), "a child was created after the cancel"
        assert {i: c["status"] for i, c in after.items()} == \
            {i: ("completed" if c["status"] == "completed" else "cancelled") for i, c in before.items()}
        assert {i: after[i] for i, c in before.items() if c["status"] == "completed"} == \
            {i: c for i, c in before.items() if c["status"] == "completed"}
        fan = fan_out_of(conn, run_id)
        assert (fan["succeeded"], fan["live"], fan["done"], fan["outcome"]) == (3, 0, True, "cancelled"), fan
        assert conn.execute("SELECT flowforge.get_run(%s)", (run_id,)).fetchone()[0]["state"] == "cancelled"
        assert fanning_unit(conn, run_id)["state"] == "cancelled"


def test_cancel_while_four_workers_drain_a_map(migrated_dsn):
    """Four worker threads drain a 3,000-element map; the run is cancelled when a fifth of it is
    done. No claim begun after cancel_run returned takes a child of the run; every write a holder
    makes after it is refused FF004; every child dispatched at the cancel ends cancelled, its token
    one past the holder's; and no child is created after it."""
    with connect(migrated_dsn) as conn:
        define(conn, mapping("raced", max_concurrency=40))
        run_id = start_run(conn, "raced", {"xs": list(range(3000))})
    cancelled = threading.Event()
    late_claims, refused, ok_after = [], [], []
    lock = threading.Lock()

    def worker(name: str) -> None:
        with connect(migrated_dsn) as conn:
            while True:
                began_after = cancelled.is_set()
                rows = claim_work(conn, [QUEUE], name, "5 minutes", 5)
                if began_after:
                    with lock:
                        late_claims.extend(rows)
                if not rows:
                    if began_after:
                        return
                    time.sleep(0.002)
                    continue
                for r in rows:
                    after = cancelled.is_set()
                    code = sqlstate_of(lambda: complete_work(conn, r["work_item_id"], r["fencing_token"],
                                                             square(r["payload"]["item"], r["payload"]["index"])))
                    with lock:
                        if code is not None:
                            refused.append((r["work_item_id"], r["fencing_token"], code))
                        elif after:
                            ok_after.append(r["work_item_id"])

    def canceller() -> None:
        wait_until(lambda: _completed(migrated_dsn, run_id) >= 600, 120, "a fifth of the map")
        with connect(migrated_dsn) as conn:
            conn.execute("SELECT flowforge.cancel_run(%s, 'raced')", (run_id,))
        cancelled.set()

    run_threads([lambda n=n: worker(f"w{n}") for n in range(4)] + [canceller], timeout=300)
    assert late_claims == [], "a claim begun after the cancel took a child"
    assert ok_after == [], "a holder's write succeeded after the cancel"
    assert refused and {code for *_, code in refused} == {STALE_TOKEN}, refused
    with connect(migrated_dsn) as conn:
        kids = children(conn, run_id)
        cancel_seq = conn.execute("SELECT min(seq) FROM flowforge.task_run_event WHERE workflow_run_id = %s "
                                  "AND kind = 'run_cancelled'", (run_id,)).fetchone()[0]
        late = conn.execute("SELECT count(*) FROM flowforge.task_run_event WHERE workflow_run_id = %s "
                            "AND work_item_id IS NOT NULL AND kind IN ('created', 'claimed', 'completed') "
                            "AND seq > %s", (run_id, cancel_seq)).fetchone()[0]
        assert late == 0, "a child was created, claimed or completed after the cancel was recorded"
        assert {c["status"] for c in kids.values()} <= {"completed", "cancelled"}
        for item, token, _ in refused:
            child = next(c for c in kids.values() if c["id"] == item)
            assert child["status"] == "cancelled" and child["fencing_token"] == token + 1, child
        fan = fan_out_of(conn, run_id)
        done = sum(c["status"] == "completed" for c in kids.values())
        assert (fan["succeeded"], fan["live"], fan["outcome"]) == (done, 0, "cancelled"), (fan, done)
    print(f"completed before the cancel: {done}; holders refused: {len(refused)}")
