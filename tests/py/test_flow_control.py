"""Flow control (issue 18) under real concurrency: limits that hold for any number of claimers,
fairness across keys, rate limits on a steered clock, and the wake-up when a slot frees.

Nothing here asserts on timing: the limits are checked on snapshots sampled while 16
connections claim (each sample one statement, so one consistent snapshot), fairness on the
order of claims, the rate limit on counts at steered instants. A deadlock (40P01) or any
unexpected SQLSTATE in a worker fails the test: it would be a lock-order bug in the claim.
"""

from __future__ import annotations

import random
import threading
import time
from datetime import datetime, timedelta, timezone

import psycopg
from psycopg.types.json import Jsonb

from flowforge.client import Client
from helpers_core import STALE_TOKEN, connect, define, run_threads, start_run
from helpers_engines import install_clock, set_clock

QUEUE = "flow"
LEASE = "1 second"  # the shortest a claim may ask for: abandoned units come back quickly


def _start_many(conn: psycopg.Connection, workflow: str, inputs: list[dict]) -> None:
    """Start one run per input, set-based (one statement)."""
    conn.execute("SELECT count(flowforge.start_run(%s, i)) FROM unnest(%s::jsonb[]) AS i",
                 (workflow, [Jsonb(i) for i in inputs]))


SAMPLE = """
SELECT (SELECT count(*) FROM flowforge.task_run WHERE queue = %(q)s AND state = 'running')
       + (SELECT count(*) FROM flowforge.work_item WHERE queue = %(q)s AND status = 'dispatched') AS running,
       (SELECT coalesce(max(n), 0) FROM (
            SELECT count(*) AS n FROM flowforge.task_run tr JOIN flowforge.workflow_run r ON r.id = tr.workflow_run_id
            WHERE tr.queue = %(q)s AND tr.state = 'running' GROUP BY r.input ->> 'k') x) AS task_key,
       (SELECT coalesce(max(n), 0) FROM (
            SELECT count(*) AS n FROM flowforge.work_item w
            WHERE w.queue = %(q)s AND w.status = 'dispatched' GROUP BY w.payload #>> '{state,k}') x) AS item_key,
       (SELECT count(*) FROM flowforge.task_run WHERE queue = %(q)s AND state IN ('ready', 'running'))
       + (SELECT count(*) FROM flowforge.work_item WHERE queue = %(q)s AND status IN ('pending', 'dispatched')) AS live
"""


def test_max_running_and_key_limit_hold_under_16_claimers(migrated_dsn):
    """16 connections (8 claim task runs, 8 claim work items) on one queue of max_running 3 whose
    units have a concurrency key of max 2; they complete, fail or abandon what they take (a reaper
    takes abandoned leases back). Sampled every few ms: never more than 3 running, never more
    than 2 of a key — and the samples did see 3 running and 2 of one key."""
    dsn = migrated_dsn
    with connect(dsn) as conn:
        Client(conn).configure_queue(QUEUE, max_running=3)
        define(conn, {"name": "fc_dag", "tasks": [{"key": "t", "queue": QUEUE, "max_attempts": 5, "backoff": "0 seconds",
                                                    "concurrency": {"key": "$.run.k", "max": 2}}]})
        define(conn, {"name": "fc_graph", "kind": "graph", "start": "work",
                      "nodes": [{"key": "work", "queue": QUEUE, "max_attempts": 5, "backoff": "0 seconds",
                                 "concurrency": {"key": "$.state.k", "max": 2}},
                                {"key": "done", "final": True}],
                      "edges": [{"from": "work", "to": "done"}]})
        keys = ["hot"] * 70 + ["warm"] * 20 + ["cold"] * 10
        _start_many(conn, "fc_dag", [{"k": k} for k in keys])
        _start_many(conn, "fc_graph", [{"k": k} for k in keys])

    stop = threading.Event()
    samples: list[tuple[int, int, int, int]] = []
    counts = {"claimed": 0, "abandoned": 0, "lost": 0}
    lock = threading.Lock()

    def sampler():
        with connect(dsn) as conn:
            while not stop.is_set():
                samples.append(conn.execute(SAMPLE, {"q": QUEUE}).fetchone())
                time.sleep(0.002)

    def reaper():
        with connect(dsn) as conn:
            while not stop.is_set():
                conn.execute("SELECT flowforge.tick()")
                time.sleep(0.05)

    def worker(i: int, items: bool):
        rng = random.Random(i)
        with connect(dsn) as conn:
            deadline = time.monotonic() + 90
            while not stop.is_set() and time.monotonic() < deadline:
                batch = rng.randint(1, 3)
                if items:
                    rows = conn.execute("SELECT work_item_id, fencing_token FROM flowforge.claim_work("
                                        "queues => ARRAY[%s], agent => %s, lease => %s::interval, batch => %s)",
                                        (QUEUE, f"agent-{i}", LEASE, batch)).fetchall()
                else:
                    rows = conn.execute("SELECT task_run_id, fencing_token FROM flowforge.claim("
                                        "queues => ARRAY[%s], worker => %s, lease => %s::interval, batch => %s)",
                                        (QUEUE, f"worker-{i}", LEASE, batch)).fetchall()
                if not rows:
                    time.sleep(0.002)
                    continue
                with lock:
                    counts["claimed"] += len(rows)
                time.sleep(rng.random() * 0.004)
                for unit, token in rows:
                    roll = rng.random()
                    try:
                        if roll < 0.04:
                            with lock:
                                counts["abandoned"] += 1  # the lease runs out; the reaper takes it back
                        elif roll < 0.10:
                            conn.execute(f"SELECT flowforge.{'fail_work' if items else 'fail'}(%s, %s, 'flaky', true)",
                                         (unit, token))
                        else:
                            conn.execute(f"SELECT flowforge.{'complete_work' if items else 'complete'}(%s, %s, NULL)",
                                         (unit, token))
                    except psycopg.Error as exc:
                        # The one loser code: a 1-second lease can run out on a loaded machine, and
                        # the reaper took the unit back first (it gave the slots back then).
                        if exc.sqlstate != STALE_TOKEN:
                            raise
                        with lock:
                            counts["lost"] += 1

    def watcher():
        with connect(dsn) as conn:
            while not stop.is_set():
                if conn.execute(SAMPLE, {"q": QUEUE}).fetchone()[3] == 0:
                    stop.set()
                time.sleep(0.05)

    threads = [threading.Thread(target=sampler, daemon=True), threading.Thread(target=reaper, daemon=True),
               threading.Thread(target=watcher, daemon=True)]
    for t in threads:
        t.start()
    results = run_threads([lambda i=i: worker(i, i % 2 == 1) for i in range(16)], timeout=120)
    stop.set()
    for t in threads:
        t.join(10)
    for _, exc in results:
        if exc is not None:
            raise exc

    assert samples, "the sampler took no sample"
    over = [s for s in samples if s[0] > 3 or s[1] > 2 or s[2] > 2]
    assert not over, f"{len(over)} of {len(samples)} samples over the limits, e.g. {over[:5]} (running, task key, item key)"
    assert max(s[0] for s in samples) == 3, "the samples never saw the queue at max_running: the test proves nothing"
    assert max(max(s[1], s[2]) for s in samples) == 2, "the samples never saw a key at its max"
    with connect(dsn) as conn:
        assert conn.execute(SAMPLE, {"q": QUEUE}).fetchone()[3] == 0, "work left over: the claimers gave up"
        assert conn.execute("SELECT count(*) FROM flowforge.workflow_run WHERE state <> 'succeeded'").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM flowforge.graph_run WHERE status <> 'succeeded'").fetchone()[0] == 0
        # Every slot came back, exactly: the counters are all 0 again (none went below: a CHECK).
        leftover = conn.execute("SELECT scope, name, value, running FROM flowforge.flow_slot WHERE running <> 0").fetchall()
        assert leftover == [], f"slots not given back: {leftover}"
    assert counts["abandoned"] > 0, "no lease was abandoned: the reaper's release was not exercised"


def test_fairness_a_burst_of_10000_does_not_starve_10(migrated_dsn):
    """Key a has 10,000 ready tasks, key b 10 enqueued after them: b's all start within the
    first few dozen claims (the rule alternates, so within the first 20)."""
    with connect(migrated_dsn) as conn:
        define(conn, {"name": "fair", "tasks": [{"key": "t", "queue": "fair", "fairness": {"key": "$.run.customer"}}]})
        _start_many(conn, "fair", [{"customer": "a"}] * 10_000)
        _start_many(conn, "fair", [{"customer": "b"}] * 10)
        order = []
        for _ in range(40):
            row = conn.execute("SELECT r.input ->> 'customer' FROM flowforge.claim(queues => ARRAY['fair'], worker => 'w', "
                               "lease => '1 hour', batch => 1) c JOIN flowforge.workflow_run r ON r.id = c.workflow_run_id"
                               ).fetchone()
            order.append(row[0])
    b_positions = [n for n, c in enumerate(order, 1) if c == "b"]
    assert len(b_positions) == 10, order
    assert max(b_positions) <= 24, f"b's tasks started at claims {b_positions}: starved behind a's burst"
    assert "".join(order[:20]) == "ab" * 10, "".join(order)


def test_rate_limit_20_per_second_over_3_seconds_is_exactly_80(migrated_dsn):
    """A rate limit of 20 per second, 8 connections claiming greedily at every 10 ms of steered
    time for 3 seconds: exactly 20 (the full bucket) + 60 = 80 claims, never one more at any instant."""
    dsn = migrated_dsn
    install_clock(dsn)
    t0 = datetime(2030, 1, 1, tzinfo=timezone.utc)
    with connect(dsn) as conn:
        set_clock(conn, t0)
        define(conn, {"name": "rated", "tasks": [{"key": "t", "queue": "rated",
                                                  "rate_limit": {"key": "the-api", "limit": 20, "per": "1 second"}}]})
        _start_many(conn, "rated", [{}] * 300)

    steps = list(range(0, 3001, 10))
    per_step = {ms: 0 for ms in steps}
    lock = threading.Lock()
    barrier = threading.Barrier(8)

    def worker(i: int):
        rng = random.Random(i)
        with connect(dsn) as conn:
            for ms in steps:
                set_clock(conn, t0 + timedelta(milliseconds=ms))
                barrier.wait()
                while True:  # greedy: until this instant's tokens are gone
                    n = len(conn.execute("SELECT 1 FROM flowforge.claim(queues => ARRAY['rated'], worker => %s, "
                                         "lease => '1 hour', batch => %s)", (f"w{i}", rng.randint(1, 6))).fetchall())
                    if n == 0:
                        break
                    with lock:
                        per_step[ms] += n
                barrier.wait()

    for _, exc in run_threads([lambda i=i: worker(i) for i in range(8)], timeout=300):
        if exc is not None:
            raise exc
    so_far = 0
    for ms in steps:
        so_far += per_step[ms]
        allowed = 20 + (20 * ms) // 1000
        assert so_far <= allowed, f"at {ms} ms {so_far} claims, the bucket allows {allowed}"
        assert so_far == allowed, f"at {ms} ms only {so_far} claims of {allowed} allowed (tokens left unclaimed)"
    assert so_far == 80
    with connect(dsn) as conn:
        assert conn.execute("SELECT count(*) FROM flowforge.task_run WHERE queue = 'rated' AND state = 'running'"
                            ).fetchone()[0] == 80


def test_a_freed_slot_wakes_claimers(migrated_dsn):
    """The release NOTIFYs flowforge_ready: a worker waiting on a held-back task hears it when the
    holder completes (a completion on a queue without flow control that releases nothing is silent)."""
    with connect(migrated_dsn) as conn:
        define(conn, {"name": "wake", "tasks": [{"key": "t", "queue": "wake", "concurrency": {"key": "$.run.k", "max": 1}}]})
        define(conn, {"name": "plain", "tasks": [{"key": "t", "queue": "plain"}]})
        start_run(conn, "wake", {"k": 1})
        start_run(conn, "wake", {"k": 1})
        start_run(conn, "plain")
        held = conn.execute("SELECT task_run_id, fencing_token FROM flowforge.claim(queues => ARRAY['wake'], "
                            "worker => 'w', batch => 10)").fetchall()
        assert len(held) == 1, "the second task of key 1 is held back"
        plain = conn.execute("SELECT task_run_id, fencing_token FROM flowforge.claim(queues => ARRAY['plain'], "
                             "worker => 'w')").fetchone()
    with connect(migrated_dsn) as listener, connect(migrated_dsn) as holder:
        listener.execute("LISTEN flowforge_ready")
        holder.execute("SELECT flowforge.complete(%s, %s, NULL)", plain)
        assert list(listener.notifies(timeout=0.5)) == [], "a completion that frees no slot woke nobody"
        holder.execute("SELECT flowforge.complete(%s, %s, NULL)", held[0])
        woken = list(listener.notifies(timeout=10, stop_after=1))
        assert [n.channel for n in woken] == ["flowforge_ready"], "the freed slot woke the listener"
        assert woken[0].payload == "", "the payload carries no tenant data"
        again = listener.execute("SELECT count(*) FROM flowforge.claim(queues => ARRAY['wake'], worker => 'w2')").fetchone()[0]
        assert again == 1, "and the held-back task is claimed now"
