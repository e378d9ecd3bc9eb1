"""The work-item queue (issue 13) under real concurrency: several connections, one thread each.

* Eight connections race claim_work on shared queues: every item is dispatched
  exactly once per generation (fencing token), none is lost, none is taken twice,
  and the claimed events are exactly the claims the workers got.
* The work-item reaper races the holder completing (or failing, or heartbeating) an
  item whose lease expired: exactly one outcome, the holder's late write refused with
  FF004 when the reaper won. The interleavings are forced — one transaction held open,
  the other seen waiting on its lock in pg_stat_activity — and then left to chance for
  a number of rounds.

The reaper's session runs an hour ahead (the steerable flowforge.now() of
tests/fixtures/clock.sql, installed in the test's database): the leases the
holders took in real time have expired for it and for nobody else, so no test waits
for a lease to run out.
"""

from __future__ import annotations

import collections
import threading
import time
from datetime import timedelta

import pytest

from helpers_engines import (
    ILLEGAL_TRANSITION,
    STALE_TOKEN,
    Blocked,
    claim_work,
    complete_work,
    connect,
    db_now,
    define,
    fail_work,
    graph_status,
    heartbeat_work,
    install_clock,
    item_events,
    item_row,
    run_threads,
    set_clock,
    single_graph,
    sqlstate_of,
    start_run,
    start_runs,
    wait_blocked,
)

N_RUNS = 500
N_WORKERS = 8


# --- eight connections racing claim_work ----------------------------------------------------

def _race(dsn: str, queues_of: list[list[str]], kinds_of: list[list[str] | None], fails_first) -> list[tuple]:
    """Workers claim until no item of the race is pending or dispatched; each completes what it
    took, except the first attempt of the items fails_first(payload) picks (failed, retryable).
    Returns every claim as (work_item_id, fencing_token, attempt, agent)."""
    barrier = threading.Barrier(len(queues_of))

    def worker(i: int) -> list[tuple]:
        batch = 1 + i % 4
        agent = f"w{i}"
        taken: list[tuple] = []
        with connect(dsn) as conn:
            barrier.wait()
            while True:
                rows = claim_work(conn, queues_of[i], agent, "5 minutes", batch, kinds_of[i])
                assert len(rows) <= batch, f"claim_work returned {len(rows)} items for batch {batch}"
                if not rows:
                    left = conn.execute("SELECT count(*) FROM flowforge.work_item "
                                        "WHERE status IN ('pending', 'dispatched')").fetchone()[0]
                    if left == 0:
                        return taken
                    time.sleep(0.002)  # skipped (locked by a racing claim) or held by another worker
                    continue
                for r in rows:
                    assert r["engine_kind"] == "graph" and r["task_name"] == "work", r
                    assert r["payload"]["node"] == "work" and r["payload"]["visit"] == 1, r
                    taken.append((r["work_item_id"], r["fencing_token"], r["attempt"], agent))
                    if r["attempt"] == 1 and fails_first(r["payload"]):
                        fail_work(conn, r["work_item_id"], r["fencing_token"], "first attempt fails", True)
                    else:
                        complete_work(conn, r["work_item_id"], r["fencing_token"], {"by": agent})

    results = run_threads([lambda i=i: worker(i) for i in range(len(queues_of))], timeout=180)
    return [c for taken, _ in results for c in taken]


def _check_race(dsn: str, claims: list[tuple], n_items: int, n_retried: int) -> None:
    pairs = collections.Counter((item, token) for item, token, _, _ in claims)
    assert [p for p, n in pairs.items() if n > 1] == [], "an (item, fencing token) was dispatched twice"
    per_item: dict = collections.defaultdict(list)
    for item, token, attempt, _ in claims:
        per_item[item].append((token, attempt))
    assert len(per_item) == n_items, "an item was never claimed (lost) or a foreign one was"
    for item, gens in per_item.items():
        # Generation g is fencing token g and attempt g: nothing skipped, nothing repeated.
        assert sorted(gens) == [(g, g) for g in range(1, len(gens) + 1)], (item, gens)
    assert sum(len(g) > 1 for g in per_item.values()) == n_retried
    assert len(claims) == n_items + n_retried

    with connect(dsn) as conn:
        assert dict(conn.execute("SELECT status::text, count(*) FROM flowforge.work_item GROUP BY 1").fetchall()) \
            == {"completed": n_items}
        assert dict(conn.execute("SELECT status::text, count(*) FROM flowforge.graph_run GROUP BY 1").fetchall()) \
            == {"succeeded": n_items}
        kinds = dict(conn.execute("SELECT kind::text, count(*) FROM flowforge.task_run_event "
                                  "WHERE work_item_id IS NOT NULL GROUP BY 1").fetchall())
        expected = {"created": n_items, "claimed": n_items + n_retried, "completed": n_items}
        if n_retried:
            expected["retry_scheduled"] = n_retried
        assert kinds == expected
        # The claimed events are exactly the claims the workers got, naming the agent.
        recorded = collections.Counter(conn.execute(
            "SELECT work_item_id, fencing_token, detail->>'agent' FROM flowforge.task_run_event "
            "WHERE kind = 'claimed' AND work_item_id IS NOT NULL").fetchall())
        assert recorded == collections.Counter((c[0], c[1], c[3]) for c in claims)
        # Each item's final token is its last generation; each run walked work -> done once.
        tokens = dict(conn.execute("SELECT id, fencing_token FROM flowforge.work_item").fetchall())
        assert tokens == {item: len(gens) for item, gens in per_item.items()}
        assert conn.execute("SELECT count(*) FROM flowforge.graph_run WHERE steps = 2 AND task = 'done'"
                            ).fetchone()[0] == n_items


def test_eight_connections_claim_every_item_once(migrated_dsn):
    with connect(migrated_dsn) as conn:
        define(conn, single_graph("race", queue="race"))
        start_runs(conn, "race", N_RUNS)
    claims = _race(migrated_dsn, [["race"]] * N_WORKERS, [None] * N_WORKERS, lambda payload: False)
    _check_race(migrated_dsn, claims, N_RUNS, 0)
    print(f"claims per agent: {dict(sorted(collections.Counter(c[3] for c in claims).items()))}")


def test_eight_connections_two_queues_with_retries_claim_each_generation_once(migrated_dsn):
    """Items on two queues, workers claiming one or both (some only engine_kinds graph); every
    fifth item fails its first attempt (retryable, no backoff), so its second generation is raced too."""
    with connect(migrated_dsn) as conn:
        for queue in ("qa", "qb"):
            define(conn, single_graph(f"race_{queue}", queue=queue, max_attempts=2, backoff="0 seconds"))
        conn.execute("SELECT flowforge.start_run(CASE WHEN i %% 2 = 0 THEN 'race_qa' ELSE 'race_qb' END, "
                     "jsonb_build_object('i', i)) FROM generate_series(1, %s) i", (N_RUNS,))
    queues = [["qa", "qb"], ["qb", "qa"], ["qa"], ["qb"]] * (N_WORKERS // 4)
    kinds = [None, ["graph"]] * (N_WORKERS // 2)
    claims = _race(migrated_dsn, queues, kinds, lambda payload: payload["state"]["i"] % 5 == 0)
    _check_race(migrated_dsn, claims, N_RUNS, N_RUNS // 5)


# --- the work-item reaper racing the holder ---------------------------------------------------

@pytest.fixture
def reaping(migrated_dsn):
    """A database with the steerable clock; a holder connection, a reaper connection an hour ahead
    (in a transaction it commits itself) and an observer."""
    install_clock(migrated_dsn)
    holder, observer = connect(migrated_dsn), connect(migrated_dsn)
    reaper = connect(migrated_dsn, autocommit=False)
    set_clock(reaper, db_now(observer) + timedelta(hours=1))
    reaper.commit()
    try:
        yield migrated_dsn, holder, reaper, observer
    finally:
        for c in (holder, reaper, observer):
            c.close()


def _claimed_item(conn, workflow: str, queue: str) -> tuple:
    run = start_run(conn, workflow)
    (row,) = claim_work(conn, [queue], "holder", "30 seconds")
    return run, row["work_item_id"], row["fencing_token"]


def _late_write(op: str, item, token):
    return {
        "complete": lambda c: complete_work(c, item, token, {"late": True}),
        "fail": lambda c: fail_work(c, item, token, "late failure", True),
        "heartbeat": lambda c: heartbeat_work(c, item, token, "30 seconds"),
    }[op]


@pytest.mark.parametrize("op", ["complete", "fail", "heartbeat"])
def test_reaper_first_the_holders_late_write_waits_and_is_refused(reaping, op):
    """The reaper's transaction has reaped the item (the run's lock and the item's row held); the
    holder's write waits for it in pg_stat_activity, and after the reaper commits it is refused
    with FF004 — not FF005, not a second outcome."""
    dsn, holder, reaper, observer = reaping
    define(holder, single_graph("reap_once", queue="rq", max_attempts=1))
    run, item, token = _claimed_item(holder, "reap_once", "rq")

    counts = reaper.execute("SELECT flowforge.tick()").fetchone()[0]
    assert counts["reaped_items"] == 1, counts
    late = Blocked(connect(dsn), _late_write(op, item, token))
    try:
        wait_blocked(observer, late.pid, by=reaper.info.backend_pid, what=f"{op}_work behind the reaper")
        reaper.commit()
        outcome = late.result()
    finally:
        late.conn.close()
    assert outcome[:2] == ("error", STALE_TOKEN), outcome
    row = item_row(observer, item)
    assert (row["status"], row["fencing_token"]) == ("failed", token + 1)
    assert row["error"] == "lease expired (held by holder)"
    assert [e[:4] for e in item_events(observer, item)] == [
        ("created", None, "pending", 0), ("claimed", "pending", "dispatched", token),
        ("lease_expired", "dispatched", "failed", token + 1)]
    assert graph_status(observer, run) == ("failed", 'node "work" failed after 1 attempt(s)')


def test_reaper_first_with_retries_left_the_holder_is_refused_and_the_next_claim_is_a_new_generation(reaping):
    dsn, holder, reaper, observer = reaping
    define(holder, single_graph("reap_retry", queue="rr", max_attempts=2, backoff="0 seconds"))
    run, item, token = _claimed_item(holder, "reap_retry", "rr")

    assert reaper.execute("SELECT flowforge.tick()").fetchone()[0]["reaped_items"] == 1
    late = Blocked(connect(dsn), _late_write("complete", item, token))
    try:
        wait_blocked(observer, late.pid, by=reaper.info.backend_pid, what="complete_work behind the reaper")
        reaper.commit()
        assert late.result()[:2] == ("error", STALE_TOKEN)
    finally:
        late.conn.close()
    row = item_row(observer, item)
    assert (row["status"], row["fencing_token"], row["retry_count"]) == ("pending", token + 1, 1)
    # The reaper scheduled the retry at its own (later) time: the holder's clock sees it only then.
    set_clock(holder, row["next_attempt_at"])
    (again,) = claim_work(holder, ["rr"], "second-holder")
    assert (again["work_item_id"], again["fencing_token"], again["attempt"]) == (item, token + 2, 2)
    # The first holder is still refused.
    assert sqlstate_of(lambda: complete_work(holder, item, token, {"late": True})) == STALE_TOKEN
    complete_work(holder, item, again["fencing_token"], {"ok": True})
    assert graph_status(holder, run)[0] == "succeeded"


@pytest.mark.parametrize("then", ["commit", "rollback"])
def test_holder_first_the_reaper_leaves_the_busy_run_for_the_next_tick(reaping, then):
    """The holder's transaction has completed the item (the run's lock held); the reaper skips the
    busy run without waiting. Committed: completed, and later ticks find nothing to reap. Rolled
    back (the worker died after the call): the next tick reaps it, exactly once."""
    dsn, holder_ac, reaper, observer = reaping
    define(holder_ac, single_graph("busy", queue="bq", max_attempts=1))
    run, item, token = _claimed_item(holder_ac, "busy", "bq")
    holder = connect(dsn, autocommit=False)
    try:
        complete_work(holder, item, token, {"done": True})
        counts = reaper.execute("SELECT flowforge.tick()").fetchone()[0]  # returns: SKIP LOCKED, no wait
        reaper.commit()
        assert counts["reaped_items"] == 0, counts
        getattr(holder, then)()
    finally:
        holder.close()
    counts = [reaper.execute("SELECT flowforge.tick()").fetchone()[0]["reaped_items"] for _ in range(2)]
    reaper.commit()
    kinds = [e[0] for e in item_events(observer, item)]
    if then == "commit":
        assert counts == [0, 0]
        assert kinds == ["created", "claimed", "completed"]
        assert graph_status(observer, run) == ("succeeded", 'reached final node "done"')
    else:
        assert counts == [1, 0]
        assert kinds == ["created", "claimed", "lease_expired"]
        assert graph_status(observer, run)[0] == "failed"
        assert sqlstate_of(lambda: complete_work(holder_ac, item, token, {"late": True})) == STALE_TOKEN


RACE_ROUNDS = 25


def test_reaper_and_completing_holder_left_to_chance_one_outcome_per_round(reaping):
    """Complete and tick started together on an expired lease, many times: exactly one transition
    after claimed, and each side's answer agrees with it."""
    dsn, setup, _, observer = reaping
    define(setup, single_graph("chance", queue="cq", max_attempts=1))
    holder, ticker = connect(dsn), connect(dsn)
    set_clock(ticker, db_now(observer) + timedelta(hours=1))
    winners: collections.Counter = collections.Counter()
    try:
        for round_no in range(RACE_ROUNDS):
            run, item, token = _claimed_item(setup, "chance", "cq")
            barrier = threading.Barrier(2)

            def outcome(conn, call, delay):
                barrier.wait()
                time.sleep(delay)
                try:
                    return ("ok", call(conn))
                except Exception as exc:  # noqa: BLE001
                    return ("error", getattr(exc, "sqlstate", repr(exc)))

            delays = (0.0005 * (round_no % 3), 0.0005 * ((round_no + 1) % 3))
            results = run_threads([
                lambda: outcome(holder, lambda c: complete_work(c, item, token, {"r": round_no}), delays[0]),
                lambda: outcome(ticker, lambda c: c.execute("SELECT flowforge.tick()").fetchone()[0]["reaped_items"],
                                delays[1]),
            ], timeout=30)
            done, reaped = (r for r, _ in results)
            after = [e[:4] for e in item_events(observer, item)][2:]
            detail = {"complete": done, "reaper": reaped, "after_claimed": after}
            row = item_row(observer, item)
            if done == ("ok", None):
                assert reaped == ("ok", 0), detail
                assert after == [("completed", "dispatched", "completed", token)], detail
                assert (row["status"], row["fencing_token"]) == ("completed", token)
                assert graph_status(observer, run)[0] == "succeeded"
                winners["holder"] += 1
            else:
                assert done == ("error", STALE_TOKEN), detail
                assert reaped == ("ok", 1), detail
                assert after == [("lease_expired", "dispatched", "failed", token + 1)], detail
                assert (row["status"], row["fencing_token"]) == ("failed", token + 1)
                assert graph_status(observer, run)[0] == "failed"
                winners["reaper"] += 1
    finally:
        holder.close()
        ticker.close()
    assert sum(winners.values()) == RACE_ROUNDS
    print(f"reaper vs holder over {RACE_ROUNDS} rounds: {dict(winners)}")


def test_a_write_after_the_reaper_committed_is_refused_with_ff004_never_ff005(reaping):
    """Not raced: once the item is reaped and claimed again, each of the first holder's writes names
    a stale token (FF004), and a current-token write to an item that is no longer dispatched is FF005."""
    dsn, holder, reaper, observer = reaping
    define(holder, single_graph("after", queue="aq", max_attempts=3, backoff="0 seconds"))
    run, item, token = _claimed_item(holder, "after", "aq")
    assert reaper.execute("SELECT flowforge.tick()").fetchone()[0]["reaped_items"] == 1
    reaper.commit()
    for op in ("complete", "fail", "heartbeat"):
        assert sqlstate_of(lambda: _late_write(op, item, token)(holder)) == STALE_TOKEN, op
    set_clock(holder, item_row(observer, item)["next_attempt_at"])
    (again,) = claim_work(holder, ["aq"], "holder-2")
    complete_work(holder, item, again["fencing_token"])
    for op in ("complete", "fail", "heartbeat"):
        assert sqlstate_of(lambda: _late_write(op, item, again["fencing_token"])(holder)) == ILLEGAL_TRANSITION, op
        assert sqlstate_of(lambda: _late_write(op, item, token)(holder)) == STALE_TOKEN, op
    assert graph_status(observer, run)[0] == "succeeded"
