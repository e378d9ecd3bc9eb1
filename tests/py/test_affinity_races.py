"""Affinity bindings (issue 13) under real concurrency: agents on their own connections.

The unique key of affinity_binding is the mechanism. The interleavings are forced:
one claim's transaction is held open after it wrote the binding, the other claim is
started and seen waiting for it in pg_stat_activity (wait_event_type 'Lock'), then
the first commits (or rolls back):

* two agents racing for one unpinned key: one binding, the loser skips the item and
  takes it never (nobody holds two items of one key because of the race);
* soft rebinding is a compare-and-set on the binding's generation: of two claimers
  rebinding from a draining agent one wins, and the original holder coming back while
  the rebind is in flight waits for it and then skips;
* left to chance, many rounds of two rebinding claimers: always exactly one winner;
* an agent dies (its heartbeats stop, its connection closes): soft work moves on to
  the next claimer, hard work waits for its agent — taken by it when it heartbeats
  again, or by another once the sweep has released the dead agent's bindings.

Heartbeat age is the database's call (flowforge.now() against the last heartbeat), so
the sessions share a steered timeline (tests/fixtures/clock.sql installed in the test
database) instead of waiting 30 real seconds.
"""

from __future__ import annotations

import collections
import threading
from datetime import timedelta

import pytest

from helpers_engines import (
    Blocked,
    bindings,
    claim_work,
    complete_work,
    connect,
    db_now,
    define,
    graph_status,
    install_clock,
    item_row,
    list_agents,
    agent_heartbeat,
    register_agent,
    run_threads,
    set_agent_status,
    set_clock,
    single_graph,
    start_run,
    wait_blocked,
)

HB = {"heartbeat_interval": "10 seconds"}  # inactive after 30 s without a heartbeat


@pytest.fixture
def world(migrated_dsn):
    """The steerable clock installed; every connection opened through ``conn(at)`` lives at a
    shared synthetic time (a day ahead), which ``at`` moves on for that connection."""
    install_clock(migrated_dsn)
    opened = []
    with connect(migrated_dsn) as c:
        t0 = db_now(c) + timedelta(days=1)

    def conn(at: timedelta = timedelta(0), *, autocommit: bool = True):
        c = connect(migrated_dsn, autocommit=autocommit)
        set_clock(c, t0 + at)
        if not autocommit:
            c.commit()
        opened.append(c)
        return c

    conn.t0 = t0
    conn.dsn = migrated_dsn
    try:
        yield conn
    finally:
        for c in opened:
            c.close()


def _pending_items(conn, workflow_queue: str) -> list:
    return [r[0] for r in conn.execute(
        "SELECT id FROM flowforge.work_item WHERE queue = %s AND status = 'pending' ORDER BY next_attempt_at, id",
        (workflow_queue,)).fetchall()]


def _keyed_items(world, setup, name: str, queue: str, n: int, **node) -> tuple[list, list]:
    """n runs of a one-node graph whose items share the affinity key key:acme; (runs, items), oldest
    first (created a little before the shared time, 10 ms apart: the claim order is fixed)."""
    define(setup, single_graph(name, queue=queue, affinity="$.state.customer", **node))
    runs = []
    for i in range(n):
        set_clock(setup, world.t0 - timedelta(seconds=1) + i * timedelta(milliseconds=10))
        runs.append(start_run(setup, name, {"customer": "acme", "i": i}))
    set_clock(setup, world.t0)
    items = _pending_items(setup, queue)
    assert len(items) == n
    return runs, items


def _claimed_by(observer, items) -> list[tuple]:
    """(item, agent, fencing token) of every claimed event of these items."""
    return observer.execute(
        "SELECT work_item_id, detail->>'agent', fencing_token FROM flowforge.task_run_event "
        "WHERE kind = 'claimed' AND work_item_id = ANY (%s) ORDER BY seq", (items,)).fetchall()


@pytest.mark.parametrize("first_ends", ["commit", "rollback"])
def test_two_agents_race_for_one_unpinned_key(world, first_ends):
    setup, observer = world(), world()
    a, b = world(autocommit=False), world()
    register_agent(setup, "agent-a", HB)
    register_agent(setup, "agent-b", HB)
    _, (x, y) = _keyed_items(world, setup, "race_key", "kq", 2)

    got_a = claim_work(a, ["kq"], "agent-a")
    assert [r["work_item_id"] for r in got_a] == [x]
    # agent-b: x is locked (skipped); y has the same, not yet committed, key: its insert waits.
    late = Blocked(world(), lambda c: claim_work(c, ["kq"], "agent-b", batch=2))
    wait_blocked(observer, late.pid, by=a.info.backend_pid, what="agent-b's binding insert behind agent-a's")
    assert bindings(observer) == {}  # nothing committed yet
    getattr(a, first_ends)()
    status, got_b = late.result()
    assert status == "ok"

    if first_ends == "commit":
        assert got_b == [], "the loser of the key must skip the item, not claim it"
        assert bindings(observer) == {"key:acme": ("agent-a", 1)}
        assert item_row(observer, y)["status"] == "pending"
        assert claim_work(b, ["kq"], "agent-b") == []  # pinned to active agent-a: never agent-b's
        (again,) = claim_work(a, ["kq"], "agent-a")
        a.commit()
        assert again["work_item_id"] == y
        winner = "agent-a"
    else:
        assert [r["work_item_id"] for r in got_b] == [y], "the first claim rolled back: agent-b's insert wins"
        assert bindings(observer) == {"key:acme": ("agent-b", 1)}
        assert item_row(observer, x)["status"] == "pending"  # agent-a's claim of it never happened
        assert claim_work(a, ["kq"], "agent-a") == []
        a.commit()
        (again,) = claim_work(b, ["kq"], "agent-b")
        assert again["work_item_id"] == x
        winner = "agent-b"
    # Every claim of the key's items went to the winner; each item once.
    claims = _claimed_by(observer, [x, y])
    assert sorted(c[:2] for c in claims) == sorted([(x, winner), (y, winner)])
    assert observer.execute("SELECT count(*) FROM flowforge.affinity_binding").fetchone()[0] == 1


def test_two_claimers_rebinding_from_a_draining_agent_one_wins(world):
    setup, observer = world(), world()
    register_agent(setup, "agent-a", HB)
    register_agent(setup, "agent-b", HB)
    register_agent(setup, "agent-c", HB)
    _, (x, y, z) = _keyed_items(world, setup, "rebind", "rq", 3)
    (first,) = claim_work(setup, ["rq"], "agent-a")
    assert first["work_item_id"] == x
    complete_work(setup, x, first["fencing_token"])
    assert bindings(observer) == {"key:acme": ("agent-a", 1)}
    set_agent_status(setup, "agent-a", "draining")

    b = world(autocommit=False)
    (got_b,) = claim_work(b, ["rq"], "agent-b")  # soft, agent-a draining: the key moves (generation 2)
    assert got_b["work_item_id"] == y
    late = Blocked(world(), lambda c: claim_work(c, ["rq"], "agent-c"))
    wait_blocked(observer, late.pid, by=b.info.backend_pid, what="agent-c's rebind behind agent-b's")
    b.commit()
    assert late.result() == ("ok", []), "agent-c must find the key moved to agent-b and skip"
    assert bindings(observer) == {"key:acme": ("agent-b", 2)}
    assert item_row(observer, z)["status"] == "pending"
    assert claim_work(setup, ["rq"], "agent-c") == []
    (got_z,) = claim_work(setup, ["rq"], "agent-b")
    assert got_z["work_item_id"] == z
    assert [c[1] for c in _claimed_by(observer, [x, y, z])] == ["agent-a", "agent-b", "agent-b"]


def test_the_original_holder_coming_back_waits_for_the_rebind_in_flight_and_skips(world):
    """agent-a went silent; agent-b (30 s later) rebinds the key in an open transaction. agent-a
    heartbeats again and claims: its pin is being moved, so its binding insert waits for agent-b's
    transaction, then reads agent-b's binding and skips — never both of them holding the key's work
    because of the rebind."""
    setup, observer = world(), world(timedelta(seconds=31))
    a_conn = world(timedelta(seconds=1))
    register_agent(setup, "agent-a", HB)
    register_agent(setup, "agent-b", HB)
    _, (x, y, z) = _keyed_items(world, setup, "holder", "hq", 3)
    (first,) = claim_work(setup, ["hq"], "agent-a")
    complete_work(setup, first["work_item_id"], first["fencing_token"])
    assert bindings(observer) == {"key:acme": ("agent-a", 1)}

    b = world(timedelta(seconds=31), autocommit=False)
    assert agent_heartbeat(b, "agent-b") == "active"
    b.commit()
    assert list_agents(observer)["agent-a"]["status"] == "inactive"  # silent for 31 s: the database says so
    (got_b,) = claim_work(b, ["hq"], "agent-b")
    assert got_b["work_item_id"] == y

    # agent-a was only slow: it heartbeats (its own time) and claims while the rebind is uncommitted.
    assert agent_heartbeat(a_conn, "agent-a") == "active"
    late = Blocked(a_conn, lambda c: claim_work(c, ["hq"], "agent-a"))
    wait_blocked(observer, late.pid, by=b.info.backend_pid, what="agent-a's pin check behind agent-b's rebind")
    b.commit()
    assert late.result() == ("ok", []), "agent-a must see the key moved and skip z"
    assert bindings(observer) == {"key:acme": ("agent-b", 2)}
    assert item_row(observer, z)["status"] == "pending"
    # agent-b is active in agent-a's time too: the key stays agent-b's.
    assert claim_work(a_conn, ["hq"], "agent-a") == []
    (got_z,) = claim_work(b, ["hq"], "agent-b")
    b.commit()
    assert got_z["work_item_id"] == z


REBIND_ROUNDS = 20


def test_rebinding_claimers_left_to_chance_always_one_winner(world):
    """Per round: a fresh key pinned to an agent that is then drained; two claimers, started
    together, each want one of the key's two items. Exactly one gets an item, the binding moved
    once (generation 2) to that one, and the other item is still pending."""
    setup, observer = world(), world()
    for name in ("owner", "agent-b", "agent-c"):
        register_agent(setup, name, HB)
    define(setup, single_graph("chance", queue="cq", affinity="$.state.customer"))
    b, c = world(), world()
    winners: collections.Counter = collections.Counter()
    for round_no in range(REBIND_ROUNDS):
        customer = f"c{round_no}"
        set_agent_status(setup, "owner", "active")
        run0 = start_run(setup, "chance", {"customer": customer})
        (pin,) = claim_work(setup, ["cq"], "owner")
        complete_work(setup, pin["work_item_id"], pin["fencing_token"])
        assert graph_status(observer, run0)[0] == "succeeded"
        for _ in range(2):
            start_run(setup, "chance", {"customer": customer})
        set_agent_status(setup, "owner", "draining")
        barrier = threading.Barrier(2)

        def take(conn, agent):
            barrier.wait()
            return claim_work(conn, ["cq"], agent)

        (got_b, _), (got_c, _) = run_threads([lambda: take(b, "agent-b"), lambda: take(c, "agent-c")], timeout=30)
        key = f"key:{customer}"
        agent, generation = bindings(observer)[key]
        taken = {"agent-b": got_b, "agent-c": got_c}
        assert generation == 2 and agent in taken, (round_no, agent, generation)
        assert len(taken[agent]) == 1, (round_no, taken)
        loser = "agent-c" if agent == "agent-b" else "agent-b"
        assert taken[loser] == [], f"round {round_no}: {loser} claimed work of a key bound to {agent}"
        left = observer.execute("SELECT count(*) FROM flowforge.work_item WHERE status = 'pending' "
                                "AND affinity_key = %s", (key,)).fetchone()[0]
        assert left == 1
        # Clean up the round: the winner runs what is left of the key.
        for row in taken[agent] + claim_work(setup, ["cq"], agent, batch=5):
            complete_work(setup, row["work_item_id"], row["fencing_token"])
        winners[agent] += 1
    assert sum(winners.values()) == REBIND_ROUNDS
    print(f"rebind winners over {REBIND_ROUNDS} rounds: {dict(winners)}")


def test_an_agent_dies_soft_work_moves_on_hard_work_waits_for_it(world):
    """Three agents each on its own connection. agent-a and agent-c stop heartbeating (agent-c's
    connection closes: the process died); 31 s later agent-b takes the soft run's next node but not
    the hard ones. agent-a comes back and takes its hard node itself; agent-c never does, so its
    hard node waits — visibly — until the sweep marks it inactive and releases its bindings, and
    then agent-b takes it. Nothing is stranded: every run succeeds."""
    setup, ops = world(), world()
    a, b, c = world(), world(), world()
    for conn, name in ((a, "agent-a"), (b, "agent-b"), (c, "agent-c")):
        register_agent(conn, name, HB)
    two_steps = {"kind": "graph", "start": "one",
                 "edges": [{"from": "one", "to": "two"}, {"from": "two", "to": "done"}]}
    for name, queue, policy in (("soft_wf", "sq", "soft"), ("hard_wf", "hq", "hard")):
        node = {"queue": queue, "affinity": "run", "affinity_policy": policy}
        define(setup, {"name": name, **two_steps, "nodes": [{"key": "one", **node}, {"key": "two", **node},
                                                           {"key": "done", "final": True}]})
    soft_run = start_run(setup, "soft_wf")
    hard_a = start_run(setup, "hard_wf", {"for": "a"})
    (s1,) = claim_work(a, ["sq"], "agent-a")
    complete_work(a, s1["work_item_id"], s1["fencing_token"])
    (h1,) = claim_work(a, ["hq"], "agent-a")
    complete_work(a, h1["work_item_id"], h1["fencing_token"])
    hard_c = start_run(setup, "hard_wf", {"for": "c"})
    (h2,) = claim_work(c, ["hq"], "agent-c")
    complete_work(c, h2["work_item_id"], h2["fencing_token"])
    assert bindings(ops) == {f"run:{soft_run}": ("agent-a", 1), f"run:{hard_a}": ("agent-a", 1),
                             f"run:{hard_c}": ("agent-c", 1)}
    assert claim_work(b, ["sq", "hq"], "agent-b", batch=5) == []  # everything pinned to live agents
    c.close()  # agent-c's process is gone; agent-a only goes quiet

    later = timedelta(seconds=31)
    for conn in (b, ops):
        set_clock(conn, world.t0 + later)
    assert agent_heartbeat(b, "agent-b") == "active"
    agents = list_agents(ops)
    assert {n: (agents[n]["status"], agents[n]["declared_status"]) for n in agents} == {
        "agent-a": ("inactive", "active"), "agent-b": ("active", "active"), "agent-c": ("inactive", "active")}
    got = claim_work(b, ["sq", "hq"], "agent-b", batch=5)
    assert [(r["run_id"], r["task_name"]) for r in got] == [(soft_run, "two")], "soft moves on, hard waits"
    assert bindings(ops)[f"run:{soft_run}"] == ("agent-b", 2)
    complete_work(b, got[0]["work_item_id"], got[0]["fencing_token"])
    assert graph_status(ops, soft_run)[0] == "succeeded"
    # The hard nodes wait visibly: get_run shows each pending item's key; the binding names its agent.
    for run, agent in ((hard_a, "agent-a"), (hard_c, "agent-c")):
        detail = ops.execute("SELECT flowforge.get_run(%s)", (run,)).fetchone()[0]
        (item,) = [i for i in detail["items"] if i["status"] == "pending"]
        assert (item["node"], item["affinity_key"]) == ("two", f"run:{run}")
        assert bindings(ops)[f"run:{run}"] == (agent, 1)

    # agent-a heartbeats again (a little later still) and takes its own hard node.
    set_clock(a, world.t0 + later + timedelta(seconds=1))
    assert agent_heartbeat(a, "agent-a") == "active"
    got_a = claim_work(a, ["hq"], "agent-a", batch=5)
    assert [(r["run_id"], r["task_name"]) for r in got_a] == [(hard_a, "two")]
    complete_work(a, got_a[0]["work_item_id"], got_a[0]["fencing_token"])
    assert graph_status(ops, hard_a)[0] == "succeeded"
    assert claim_work(b, ["hq"], "agent-b") == []  # agent-c's hard node still waits for agent-c

    # The sweep (as tick runs it, 61 s on) marks agent-c inactive and releases its binding.
    set_clock(ops, world.t0 + timedelta(seconds=61))
    for conn in (a, b):
        set_clock(conn, world.t0 + timedelta(seconds=61))
        agent_heartbeat(conn, "agent-a" if conn is a else "agent-b")
    counts = ops.execute("SELECT flowforge.tick()").fetchone()[0]
    assert counts["agents_inactive"] == 1, counts
    assert list_agents(ops)["agent-c"]["declared_status"] == "inactive"
    assert f"run:{hard_c}" not in bindings(ops)
    (got_c,) = claim_work(b, ["hq"], "agent-b")
    assert (got_c["run_id"], got_c["task_name"]) == (hard_c, "two")
    assert bindings(ops)[f"run:{hard_c}"] == ("agent-b", 1)
    complete_work(b, got_c["work_item_id"], got_c["fencing_token"])
    assert graph_status(ops, hard_c)[0] == "succeeded"
    # Who ran what: the soft run moved once, each hard run's nodes ran where its pin was.
    per_run = collections.defaultdict(list)
    for run_id, task, agent in ops.execute(
            "SELECT w.run_id, w.task_name::text, e.detail->>'agent' FROM flowforge.task_run_event e "
            "JOIN flowforge.work_item w ON w.id = e.work_item_id WHERE e.kind = 'claimed' ORDER BY e.seq").fetchall():
        per_run[run_id].append((task, agent))
    assert dict(per_run) == {soft_run: [("one", "agent-a"), ("two", "agent-b")],
                             hard_a: [("one", "agent-a"), ("two", "agent-a")],
                             hard_c: [("one", "agent-c"), ("two", "agent-b")]}
