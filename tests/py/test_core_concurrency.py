"""Execution core under real concurrency: several connections, one thread each.

Nothing here retries on an error: a deadlock (40P01) or any SQLSTATE other
than the documented loser codes is a bug in sql/functions, so the test fails.
"""

from __future__ import annotations

import collections
import random
import threading
import time

import psycopg
import pytest

from helpers_core import (
    DEADLOCK,
    ILLEGAL_TRANSITION,
    STALE_TOKEN,
    cancel_run,
    claim,
    complete,
    connect,
    define,
    diamond_spec,
    fail,
    heartbeat,
    reap,
    run_threads,
    single_spec,
    start_run,
    task_events,
)


def _raise_first(results):
    for _, exc in results:
        if exc is not None:
            raise exc


def _assert_no_deadlock(exc: BaseException | None) -> None:
    if isinstance(exc, psycopg.Error) and exc.sqlstate == DEADLOCK:
        raise AssertionError(f"deadlock detected (40P01) — a lock-order bug in sql/functions: {exc}")


# --- many workers racing claim -------------------------------------------------

N_SINGLE_RUNS = 500
N_CLAIM_WORKERS = 8


def _race_claims(dsn: str, worker_queues: list[list[str]], fail_first_attempt_of) -> list[tuple]:
    """Workers claim until nothing is ready or running; each completes what it claimed,
    except that it fails (retryable) the first attempt of the tasks fail_first_attempt_of(input) picks.
    Returns every claim as (task_run_id, fencing_token, attempt, worker)."""
    barrier = threading.Barrier(len(worker_queues))

    def worker(i: int):
        batch = 1 + i % 4  # workers with batch 1..4
        taken: list[tuple] = []
        with connect(dsn) as conn:
            barrier.wait()
            while True:
                rows = claim(conn, worker_queues[i], f"w{i}", "30 seconds", batch)
                assert len(rows) <= batch, f"claim returned {len(rows)} rows for batch {batch}"
                if not rows:
                    left = conn.execute(
                        "SELECT count(*) FROM flowforge.task_run WHERE state IN ('ready', 'running')"
                    ).fetchone()[0]
                    if left == 0:
                        break
                    time.sleep(0.002)  # locked by a concurrent claim, or still held by another worker
                    continue
                for task_run_id, run_id, key, attempt, token, task_input, _lease in rows:
                    taken.append((task_run_id, token, attempt, f"w{i}"))
                    if attempt == 1 and fail_first_attempt_of(task_input["run"]):
                        fail(conn, task_run_id, token, "first attempt fails", True)
                    else:
                        complete(conn, task_run_id, token, {"by": i})
        return taken

    results = run_threads([lambda i=i: worker(i) for i in range(len(worker_queues))])
    for _, exc in results:
        _assert_no_deadlock(exc)
    _raise_first(results)
    return [c for taken, _ in results for c in taken]


def _check_claims(dsn: str, claims: list[tuple], n_tasks: int, n_retried: int) -> None:
    pairs = [(task_run_id, token) for task_run_id, token, _, _ in claims]
    dupes = [p for p, n in collections.Counter(pairs).items() if n > 1]
    assert dupes == [], f"(task_run_id, fencing_token) claimed twice: {dupes[:5]}"
    # Every generation claimed once: token g for attempt g, nothing skipped or repeated.
    per_task = collections.defaultdict(list)
    for task_run_id, token, attempt, _ in claims:
        per_task[task_run_id].append((token, attempt))
    assert len(per_task) == n_tasks
    retried = [t for t, gens in per_task.items() if len(gens) > 1]
    assert len(retried) == n_retried
    for task_run_id, gens in per_task.items():
        assert sorted(gens) == [(g, g) for g in range(1, len(gens) + 1)], (task_run_id, gens)
    assert len(claims) == n_tasks + n_retried

    with connect(dsn) as conn:
        states = dict(conn.execute(
            "SELECT state::text, count(*) FROM flowforge.workflow_run GROUP BY state").fetchall())
        assert states == {"succeeded": n_tasks}
        task_states = dict(conn.execute(
            "SELECT state::text, count(*) FROM flowforge.task_run GROUP BY state").fetchall())
        assert task_states == {"succeeded": n_tasks}
        kinds = dict(conn.execute(
            "SELECT kind::text, count(*) FROM flowforge.task_run_event GROUP BY kind").fetchall())
        expected = {
            "run_started": n_tasks, "created": n_tasks, "claimed": n_tasks + n_retried,
            "completed": n_tasks, "run_succeeded": n_tasks,
        }
        if n_retried:
            expected["retry_scheduled"] = n_retried
        assert kinds == expected
        # The claimed events are exactly the claims the workers got, naming the worker.
        recorded = collections.Counter(
            (r[0], r[1], r[2]) for r in conn.execute(
                "SELECT task_run_id, fencing_token, detail->>'worker' FROM flowforge.task_run_event "
                "WHERE kind = 'claimed'").fetchall()
        )
        assert recorded == collections.Counter((c[0], c[1], c[3]) for c in claims)


def test_racing_workers_claim_every_task_exactly_once(migrated_dsn):
    with connect(migrated_dsn) as conn:
        define(conn, single_spec("single"))
        conn.execute(
            "SELECT flowforge.start_run('single', jsonb_build_object('i', i)) FROM generate_series(1, %s) i",
            (N_SINGLE_RUNS,),
        )
    claims = _race_claims(migrated_dsn, [["default"]] * N_CLAIM_WORKERS, lambda run_input: False)
    _check_claims(migrated_dsn, claims, N_SINGLE_RUNS, 0)
    workers = collections.Counter(c[3] for c in claims)
    print(f"claims per worker: {dict(sorted(workers.items()))}")


def test_racing_workers_two_queues_with_retries_claim_each_generation_once(migrated_dsn):
    """Tasks on two queues, workers claiming one or both; every fifth task fails its first
    attempt (retryable, no backoff), so it has a second generation to be claimed once too."""
    with connect(migrated_dsn) as conn:
        for queue in ("default", "other"):
            define(conn, single_spec(f"single_{queue}", queue=queue, backoff="0 seconds", max_attempts=2))
        conn.execute(
            "SELECT flowforge.start_run(CASE WHEN i %% 2 = 0 THEN 'single_default' ELSE 'single_other' END, "
            "jsonb_build_object('i', i)) FROM generate_series(1, %s) i",
            (N_SINGLE_RUNS,),
        )
    queues = [["default", "other"], ["other", "default"], ["default"], ["other"]] * (N_CLAIM_WORKERS // 4)
    claims = _race_claims(migrated_dsn, queues, lambda run_input: run_input["i"] % 5 == 0)
    _check_claims(migrated_dsn, claims, N_SINGLE_RUNS, N_SINGLE_RUNS // 5)


def test_claim_with_a_queue_named_twice_still_fills_the_batch(migrated_dsn):
    with connect(migrated_dsn) as conn:
        define(conn, single_spec("single"))
        for _ in range(3):
            start_run(conn, "single")
        rows = claim(conn, ["default", "default"], "w", "30 seconds", 2)
        assert len(rows) == 2, f"3 tasks ready, batch 2, claimed {len(rows)}"
        assert len({r[0] for r in rows}) == 2


# --- a diamond DAG run by concurrent workers ---------------------------------

N_DIAMOND_RUNS = 50
N_DIAMOND_WORKERS = 4


def test_diamond_runs_to_success_with_concurrent_workers(migrated_dsn):
    with connect(migrated_dsn) as conn:
        define(conn, diamond_spec("diamond"))
        runs = [start_run(conn, "diamond", {"n": n}) for n in range(N_DIAMOND_RUNS)]

    barrier = threading.Barrier(N_DIAMOND_WORKERS)
    deadline = time.monotonic() + 40

    def worker(i: int):
        inputs = []
        with connect(migrated_dsn) as conn:
            barrier.wait()
            while time.monotonic() < deadline:
                rows = claim(conn, ["default"], f"w{i}", "30 seconds", 2)
                if not rows:
                    if conn.execute(
                        "SELECT count(*) FROM flowforge.workflow_run WHERE state <> 'succeeded'"
                    ).fetchone()[0] == 0:
                        return inputs
                    time.sleep(0.002)
                    continue
                for task_run_id, run_id, key, _attempt, token, task_input, _lease in rows:
                    inputs.append((run_id, key, task_input))
                    complete(conn, task_run_id, token, {"key": key, "run": str(run_id)})
        raise AssertionError("diamond runs did not finish within 40s")

    results = run_threads([lambda i=i: worker(i) for i in range(N_DIAMOND_WORKERS)])
    _raise_first(results)

    inputs = [x for (got, _) in results for x in got]
    assert len(inputs) == 4 * N_DIAMOND_RUNS
    by_run_key = {(str(run_id), key): task_input for run_id, key, task_input in inputs}
    assert len(by_run_key) == 4 * N_DIAMOND_RUNS, "a task was claimed twice"

    with connect(migrated_dsn) as conn:
        assert conn.execute(
            "SELECT count(*) FROM flowforge.workflow_run WHERE state = 'succeeded' AND id = ANY(%s::uuid[])",
            (runs,),
        ).fetchone()[0] == N_DIAMOND_RUNS
        for n, run_id in enumerate(runs):
            run = str(run_id)
            # d is handed both upstream outputs and the run input.
            assert by_run_key[(run, "d")] == {
                "run": {"n": n},
                "deps": {"b": {"key": "b", "run": run}, "c": {"key": "c", "run": run}},
            }
            assert by_run_key[(run, "a")] == {"run": {"n": n}, "deps": {}}

            seqs: dict[tuple[str, str], list[int]] = collections.defaultdict(list)
            for seq, key, kind in conn.execute(
                "SELECT e.seq, tr.task_key::text, e.kind::text FROM flowforge.task_run_event e "
                "JOIN flowforge.task_run tr ON tr.id = e.task_run_id WHERE tr.workflow_run_id = %s",
                (run_id,),
            ).fetchall():
                seqs[(key, kind)].append(seq)
            for key in "abcd":
                assert len(seqs[(key, "claimed")]) == 1, (run, key, dict(seqs))
                assert len(seqs[(key, "completed")]) == 1, (run, key, dict(seqs))
            assert len(seqs[("d", "released")]) == 1, (run, dict(seqs))
            assert len(seqs[("b", "released")]) == len(seqs[("c", "released")]) == 1
            d_released, d_claimed = seqs[("d", "released")][0], seqs[("d", "claimed")][0]
            for up in "bc":
                assert seqs[(up, "completed")][0] < d_released < d_claimed, (run, dict(seqs))
                assert seqs[("a", "completed")][0] < seqs[(up, "claimed")][0], (run, dict(seqs))
            run_level = [r[0] for r in conn.execute(
                "SELECT kind::text FROM flowforge.task_run_event WHERE workflow_run_id = %s AND task_run_id IS NULL "
                "ORDER BY seq", (run_id,)).fetchall()]
            assert run_level == ["run_started", "run_succeeded"]


# --- complete vs cancel_run vs reaper on one running task ------------------------

def _claim_expired(dsn: str, workflow: str, n: int) -> tuple[list, dict]:
    """Start n runs of a one-task workflow, claim them all with a 1-second lease and
    wait (real time) until every lease has expired. Returns (run ids, run -> (task_run_id, token))."""
    with connect(dsn) as conn:
        runs = [start_run(conn, workflow) for _ in range(n)]
        claimed = claim(conn, ["default"], "holder", "1 second", n)
        assert len(claimed) == n
        time.sleep(1.1)
        expired = conn.execute(
            "SELECT count(*) FROM flowforge.task_run WHERE state = 'running' AND lease_expires_at < now()"
        ).fetchone()[0]
        assert expired == n
    return runs, {str(r[1]): (r[0], r[4]) for r in claimed}


RACE_ROUNDS = 30


def test_complete_cancel_and_reaper_race_one_terminal_transition(migrated_dsn):
    """Three sessions hit the same running task with an expired lease at once.

    All tasks are claimed with a 1-second lease up front and we wait once for
    the leases to expire (real time: the steerable clock is transaction-local).
    The reaper reaps every expired lease, so in each round a guard session
    holds FOR SHARE on the runs of the *other* tasks: the reaper skips a task
    whose run is locked (documented behaviour), and only the round's task is
    in play.
    """
    with connect(migrated_dsn) as conn:
        define(conn, single_spec("race", max_attempts=1))
    runs, task_of = _claim_expired(migrated_dsn, "race", RACE_ROUNDS)

    guard = connect(migrated_dsn, autocommit=False)
    racers = [connect(migrated_dsn) for _ in range(3)]
    checker = connect(migrated_dsn)
    rng = random.Random(20240611)
    winners: collections.Counter = collections.Counter()
    try:
        for run_id in runs:
            run = str(run_id)
            task_run_id, token = task_of[run]
            others = [r for r in runs if str(r) != run]
            guard.execute("SELECT 1 FROM flowforge.workflow_run WHERE id = ANY(%s::uuid[]) FOR SHARE", (others,))

            barrier = threading.Barrier(3)
            jitter = [rng.uniform(0, 0.003) for _ in range(3)]

            def outcome(conn, i, call):
                barrier.wait()
                time.sleep(jitter[i])
                try:
                    return ("ok", call(conn))
                except psycopg.Error as exc:
                    _assert_no_deadlock(exc)
                    return ("error", exc.sqlstate, str(exc).splitlines()[0])

            results = run_threads([
                lambda: outcome(racers[0], 0, lambda c: complete(c, task_run_id, token, {"done": True})),
                lambda: outcome(racers[1], 1, lambda c: cancel_run(c, run_id, "race")),
                lambda: outcome(racers[2], 2, lambda c: reap(c)),
            ], timeout=30)
            guard.rollback()
            _raise_first(results)
            done, cancelled, reaped = (r for r, _ in results)

            events = task_events(checker, task_run_id)
            claimed_at = [i for i, e in enumerate(events) if e[1] == "claimed"]
            assert len(claimed_at) == 1, events
            after = events[claimed_at[0] + 1:]
            assert len(after) == 1, f"round {run}: expected exactly one transition after claimed, got {after}"
            kind, from_state, to_state, event_token = after[0][1:]
            assert from_state == "running"
            state, final_token = checker.execute(
                "SELECT state::text, fencing_token FROM flowforge.task_run WHERE id = %s", (task_run_id,)
            ).fetchone()
            run_state = checker.execute(
                "SELECT state::text FROM flowforge.workflow_run WHERE id = %s", (run_id,)).fetchone()[0]
            run_level = [r[0] for r in checker.execute(
                "SELECT kind::text FROM flowforge.task_run_event WHERE workflow_run_id = %s AND task_run_id IS NULL "
                "ORDER BY seq", (run_id,)).fetchall()]
            detail = {"complete": done, "cancel": cancelled, "reaper": reaped, "event": after[0]}

            if kind == "completed":
                assert done == ("ok", None), detail
                assert cancelled[:2] == ("error", ILLEGAL_TRANSITION), detail
                assert reaped == ("ok", 0), detail
                assert (to_state, state, run_state, final_token) == ("succeeded", "succeeded", "succeeded", token)
                assert run_level == ["run_started", "run_succeeded"]
            elif kind == "cancelled":
                assert cancelled == ("ok", None), detail
                assert done[:2] == ("error", STALE_TOKEN), detail
                assert reaped == ("ok", 0), detail
                assert (to_state, state, run_state, final_token) == ("cancelled", "cancelled", "cancelled", token + 1)
                assert run_level == ["run_started", "run_cancelled"]
            elif kind == "lease_expired":
                assert reaped == ("ok", 1), detail
                assert done[:2] == ("error", STALE_TOKEN), detail
                assert cancelled[:2] == ("error", ILLEGAL_TRANSITION), detail
                assert (to_state, state, run_state, final_token) == ("failed", "failed", "failed", token + 1)
                assert run_level == ["run_started", "run_failed"]
            else:
                raise AssertionError(f"unexpected transition after claimed: {detail}")
            assert event_token == final_token
            winners[kind] += 1
    finally:
        guard.close()
        checker.close()
        for c in racers:
            c.close()
    assert sum(winners.values()) == RACE_ROUNDS
    print(f"race winners over {RACE_ROUNDS} rounds: {dict(winners)}")


HEARTBEAT_ROUNDS = 20


def test_heartbeat_and_reaper_race_one_outcome(migrated_dsn):
    """Heartbeat vs reaper on an expired lease: either the lease is extended and the
    reaper leaves the task alone, or the task is reaped and the heartbeat gets FF004."""
    with connect(migrated_dsn) as conn:
        define(conn, single_spec("hb", max_attempts=2, backoff="5 minutes"))
    runs, task_of = _claim_expired(migrated_dsn, "hb", HEARTBEAT_ROUNDS)

    guard = connect(migrated_dsn, autocommit=False)
    racers = [connect(migrated_dsn) for _ in range(2)]
    checker = connect(migrated_dsn)
    winners: collections.Counter = collections.Counter()
    try:
        for round_no, run_id in enumerate(runs):
            task_run_id, token = task_of[str(run_id)]
            others = [r for r in runs if r != run_id]
            guard.execute("SELECT 1 FROM flowforge.workflow_run WHERE id = ANY(%s::uuid[]) FOR SHARE", (others,))
            barrier = threading.Barrier(2)

            def outcome(conn, call, delay):
                barrier.wait()
                time.sleep(delay)
                try:
                    return ("ok", call(conn))
                except psycopg.Error as exc:
                    _assert_no_deadlock(exc)
                    return ("error", exc.sqlstate)

            delays = (0.001 * (round_no % 3), 0.001 * ((round_no + 1) % 3))
            results = run_threads([
                lambda: outcome(racers[0], lambda c: heartbeat(c, task_run_id, token, "30 seconds"), delays[0]),
                lambda: outcome(racers[1], lambda c: reap(c), delays[1]),
            ], timeout=30)
            guard.rollback()
            _raise_first(results)
            beat, reaped = (r for r, _ in results)

            events = task_events(checker, task_run_id)
            after = events[[e[1] for e in events].index("claimed") + 1:]
            state, attempt, final_token, lease = checker.execute(
                "SELECT state::text, attempt, fencing_token, lease_expires_at FROM flowforge.task_run WHERE id = %s",
                (task_run_id,)).fetchone()
            detail = {"heartbeat": beat, "reaper": reaped, "after_claimed": after}
            if beat[0] == "ok":
                assert reaped == ("ok", 0), detail
                assert after == [], detail
                assert (state, attempt, final_token, lease) == ("running", 1, token, beat[1]), detail
                winners["heartbeat"] += 1
            else:
                assert beat == ("error", STALE_TOKEN), detail
                assert reaped == ("ok", 1), detail
                assert [e[1:] for e in after] == [("lease_expired", "running", "ready", token + 1)], detail
                assert (state, attempt, final_token, lease) == ("ready", 2, token + 1, None), detail
                winners["reaper"] += 1
    finally:
        guard.close()
        checker.close()
        for c in racers:
            c.close()
    print(f"heartbeat vs reaper over {HEARTBEAT_ROUNDS} rounds: {dict(winners)}")


REAPED_TASKS = 40
N_REAPERS = 4


def test_racing_reapers_reap_each_expired_lease_once(migrated_dsn):
    """Several daemons' reapers at once: every expired lease is reaped exactly once."""
    with connect(migrated_dsn) as conn:
        define(conn, single_spec("reap", max_attempts=2, backoff="5 minutes"))
    _runs, task_of = _claim_expired(migrated_dsn, "reap", REAPED_TASKS)

    conns = [connect(migrated_dsn) for _ in range(N_REAPERS)]
    try:
        barrier = threading.Barrier(N_REAPERS)

        def reaper(c):
            barrier.wait()
            return reap(c)

        results = run_threads([lambda c=c: reaper(c) for c in conns])
        for _, exc in results:
            _assert_no_deadlock(exc)
        _raise_first(results)
    finally:
        for c in conns:
            c.close()
    counts = [n for n, _ in results]
    assert sum(counts) == REAPED_TASKS, counts
    with connect(migrated_dsn) as conn:
        for task_run_id, token in task_of.values():
            after = task_events(conn, task_run_id)[2:]  # created, claimed
            assert [e[1:] for e in after] == [("lease_expired", "running", "ready", token + 1)], after
        assert conn.execute(
            "SELECT count(*) FROM flowforge.task_run WHERE state = 'ready' AND attempt = 2 AND fencing_token = 2"
        ).fetchone()[0] == REAPED_TASKS
    print(f"reaped per reaper: {counts}")


# --- a join task whose dependencies complete at the same time ---------------------


def _fan_in_spec(name: str, width: int) -> dict:
    roots = [{"key": f"r{i}"} for i in range(width)]
    return {"name": name, "tasks": roots + [{"key": "join", "depends_on": [r["key"] for r in roots]}]}


def _race_join(dsn: str, workflow: str, width: int, first: str | None, rounds: int) -> None:
    """Per round: run up to the join's dependencies, complete them all at once, check the join."""
    conns = [connect(dsn) for _ in range(width)]
    try:
        with connect(dsn) as conn:
            for _ in range(rounds):
                run_id = start_run(conn, workflow)
                if first is not None:
                    (task_run_id, _, key, _, token, _, _), = claim(conn, ["default"], "main", batch=10)
                    assert key == first
                    complete(conn, task_run_id, token)
                deps = claim(conn, ["default"], "main", batch=100)
                assert len(deps) == width
                barrier = threading.Barrier(width)

                def finish(c, row):
                    barrier.wait()
                    complete(c, row[0], row[4], {"key": row[2]})

                results = run_threads([lambda c=c, row=row: finish(c, row) for c, row in zip(conns, deps)])
                for _, exc in results:
                    _assert_no_deadlock(exc)
                _raise_first(results)

                join_key = "d" if first is not None else "join"
                join_id, state, remaining = conn.execute(
                    "SELECT id, state::text, remaining_deps FROM flowforge.task_run "
                    "WHERE workflow_run_id = %s AND task_key = %s", (run_id, join_key)).fetchone()
                kinds = [e[1] for e in task_events(conn, join_id)]
                assert (state, remaining) == ("ready", 0)
                assert kinds == ["created", "released"], kinds
                (jid, _, key, _, token, task_input, _), = claim(conn, ["default"], "main", batch=10)
                assert (jid, key) == (join_id, join_key)
                assert set(task_input["deps"]) == {row[2] for row in deps}
                complete(conn, jid, token)
                assert conn.execute(
                    "SELECT state::text FROM flowforge.workflow_run WHERE id = %s", (run_id,)
                ).fetchone()[0] == "succeeded"
    finally:
        for c in conns:
            c.close()


def test_diamond_join_released_once_when_both_deps_complete_together(migrated_dsn):
    with connect(migrated_dsn) as conn:
        define(conn, diamond_spec("diamond"))
    _race_join(migrated_dsn, "diamond", width=2, first="a", rounds=20)


def test_wide_join_released_once_when_eight_deps_complete_together(migrated_dsn):
    with connect(migrated_dsn) as conn:
        define(conn, _fan_in_spec("fanin", 8))
    _race_join(migrated_dsn, "fanin", width=8, first=None, rounds=8)


# --- idempotent start ----------------------------------------------------------------

N_STARTERS = 8


def test_racing_starts_with_one_idempotency_key_make_one_run(migrated_dsn):
    with connect(migrated_dsn) as conn:
        define(conn, single_spec("single"))
    conns = [connect(migrated_dsn) for _ in range(N_STARTERS)]
    try:
        for round_no in range(5):
            key = f"req-{round_no}"
            barrier = threading.Barrier(N_STARTERS)

            def start(c):
                barrier.wait()
                return start_run(c, "single", {"order": 42}, key)

            results = run_threads([lambda c=c: start(c) for c in conns])
            for _, exc in results:
                _assert_no_deadlock(exc)
            _raise_first(results)
            ids = {r for r, _ in results}
            assert len(ids) == 1, f"{len(ids)} different runs for one idempotency key: {ids}"
            (run_id,) = ids
            with connect(migrated_dsn) as conn:
                assert conn.execute(
                    "SELECT count(*) FROM flowforge.workflow_run WHERE idempotency_key = %s", (key,)
                ).fetchone()[0] == 1
                kinds = collections.Counter(r[0] for r in conn.execute(
                    "SELECT kind::text FROM flowforge.task_run_event WHERE workflow_run_id = %s", (run_id,)))
                assert kinds == {"run_started": 1, "created": 1}
        with connect(migrated_dsn) as conn:
            assert conn.execute("SELECT count(*) FROM flowforge.workflow_run").fetchone()[0] == 5
    finally:
        for c in conns:
            c.close()


def test_racing_starts_with_one_key_and_different_inputs(migrated_dsn):
    """The key goes to exactly one request; the others get FF006 or the same run for the same input."""
    with connect(migrated_dsn) as conn:
        define(conn, single_spec("single"))
    conns = [connect(migrated_dsn) for _ in range(N_STARTERS)]
    try:
        barrier = threading.Barrier(N_STARTERS)

        def start(c, i):
            barrier.wait()
            try:
                return ("ok", start_run(c, "single", {"variant": i % 2}, "shared-key"), i % 2)
            except psycopg.Error as exc:
                return ("error", exc.sqlstate, i % 2)

        results = run_threads([lambda c=c, i=i: start(c, i) for i, c in enumerate(conns)])
        _raise_first(results)
        outcomes = [r for r, _ in results]
        ok = [o for o in outcomes if o[0] == "ok"]
        assert ok, outcomes
        assert len({o[1] for o in ok}) == 1, outcomes
        winner_variant = {o[2] for o in ok}
        assert len(winner_variant) == 1, outcomes
        for o in outcomes:
            if o[0] == "error":
                assert o[1] == "FF006" and o[2] not in winner_variant, outcomes
        assert len(ok) == N_STARTERS // 2
        with connect(migrated_dsn) as conn:
            assert conn.execute("SELECT count(*) FROM flowforge.workflow_run").fetchone()[0] == 1
    finally:
        for c in conns:
            c.close()
