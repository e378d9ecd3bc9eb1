"""Tenant isolation of the substrate and the graph engine (issue 13), with real login roles.

The roles, the operator and the helpers are test_tenancy.py's (its ``World``; the
new tables and functions are already under its direct-access and internal-function
sweeps, which walk every table and function of the schema). The world here adds, on
top of the same logins:

  org-a: alice defined graph "g" (node work on queue "default", affinity
         "definition": key definition:g) and registered agents "shared-name" (labels
         {"team": "a"}) and "a-only"; she started graph runs ga1 — its item ia1
         claimed by shared-name under token ta1, which pinned definition:g to
         shared-name — and ga2, whose item ia2 is pending, pinned to her agent.
  org-b: bob defined a graph "g" of his own (the same key definition:g) and
         registered an agent also named "shared-name"; his run gb1 is pending.

An agent of org B dying (the sweep, across every organization) releases org B's
pins only.

Every attack must fail with the documented SQLSTATE — FF001 for another tenant's
work item, run or agent, word for word what a random id or name gets (no existence
oracle); FF007 for a role below the call's; FF008 for a gateway that has not
authenticated — and change nothing (``snapshot()``: every row of every table).
"""

from __future__ import annotations

import json
import uuid

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from helpers_engines import install_clock, set_clock
from test_tenancy import (  # noqa: F401 - role_registry is a fixture this module's world needs
    FORBIDDEN,
    GUARD_OPTIONS,
    NOT_FOUND,
    UNAUTHENTICATED,
    World,
    _compare_with_random,
    api_key,
    code_of,
    define,
    role_registry,
)

GRAPH = {"name": "g", "kind": "graph", "start": "work",
         "nodes": [{"key": "work", "queue": "default", "affinity": "definition"}, {"key": "done", "final": True}],
         "edges": [{"from": "work", "to": "done"}]}
INSUFFICIENT_PRIVILEGE = "42501"


def _start(conn, workflow: str, payload: dict | None = None):
    return conn.execute("SELECT flowforge.start_run(%s, %s::jsonb)",
                        (workflow, json.dumps(payload or {}))).fetchone()[0]


def _claim(conn, agent: str, queue: str = "default", batch: int = 10) -> list[tuple]:
    return conn.execute("SELECT work_item_id, fencing_token, run_id FROM flowforge.claim_work(ARRAY[%s], %s, "
                        "'1 hour', %s)", (queue, agent, batch)).fetchall()


@pytest.fixture
def world(role_registry: list[str], migrated_dsn: str):
    op = psycopg.connect(make_conninfo(migrated_dsn, options=GUARD_OPTIONS), autocommit=True)
    w = World(dsn=migrated_dsn, suffix=uuid.uuid4().hex[:8], registry=role_registry, op=op)
    try:
        w.ids["org_a"] = w.one("SELECT flowforge.create_organization('org-a', 'Org A')")
        w.ids["org_b"] = w.one("SELECT flowforge.create_organization('org-b', 'Org B')")
        for short in ("alice", "bob", "viewer", "admin", "badmin"):
            w.create_login(short)
        w.create_login("gw", "flowforge_gateway")
        for short, org, role in (("alice", "org-a", "member"), ("viewer", "org-a", "viewer"),
                                 ("admin", "org-a", "admin"), ("bob", "org-b", "member"),
                                 ("badmin", "org-b", "admin")):
            op.execute("SELECT flowforge.add_member(%s, %s, %s)", (org, w.roles[short], role))
        alice, bob = w.conn("alice"), w.conn("bob")
        define(alice, GRAPH)
        alice.execute("SELECT flowforge.register_agent('shared-name', '{\"labels\": {\"team\": \"a\"}}')")
        alice.execute("SELECT flowforge.register_agent('a-only')")
        w.ids["ga1"] = _start(alice, "g", {"who": "alice"})
        [(w.ids["ia1"], w.ids["ta1"], _)] = _claim(alice, "shared-name")
        w.ids["ga2"] = _start(alice, "g", {"who": "alice, later"})
        w.ids["ia2"] = w.one("SELECT id FROM flowforge.work_item WHERE run_id = %s", (w.ids["ga2"],))
        define(bob, GRAPH)
        bob.execute("SELECT flowforge.register_agent('shared-name', '{\"labels\": {\"team\": \"b\"}}')")
        w.ids["gb1"] = _start(bob, "g", {"who": "bob"})
        w.ids["ib1"] = w.one("SELECT id FROM flowforge.work_item WHERE run_id = %s", (w.ids["gb1"],))
        yield w
    finally:
        w.close()


def _bindings(w: World) -> dict:
    return {(str(o), k): (a, g) for o, k, a, g in w.op.execute(
        "SELECT organization_id, affinity_key, agent_id::text, generation FROM flowforge.affinity_binding").fetchall()}


def test_the_world_is_what_it_claims_to_be(world: World) -> None:
    w = world
    assert w.op.execute("SELECT status::text, fencing_token FROM flowforge.work_item WHERE id = %s",
                        (w.ids["ia1"],)).fetchone() == ("dispatched", w.ids["ta1"])
    assert _bindings(w) == {(str(w.ids["org_a"]), "definition:g"): ("shared-name", 1)}
    assert w.one("SELECT count(*) FROM flowforge.agent WHERE name = 'shared-name'") == 2


def test_ids_and_names_of_another_tenant_answer_like_random_ones(world: World) -> None:
    w = world
    ga1, ia1, ta1 = str(w.ids["ga1"]), str(w.ids["ia1"]), w.ids["ta1"]
    rnd_run, rnd_item = str(uuid.uuid4()), str(uuid.uuid4())
    cases = [
        ("heartbeat_work", "SELECT flowforge.heartbeat_work(%s, %s, '1 minute')", (ia1, ta1), (rnd_item, ta1),
         [ia1], [rnd_item]),
        ("complete_work", "SELECT flowforge.complete_work(%s, %s, '{}')", (ia1, ta1), (rnd_item, ta1),
         [ia1], [rnd_item]),
        ("fail_work", "SELECT flowforge.fail_work(%s, %s, 'boom', false)", (ia1, ta1), (rnd_item, ta1),
         [ia1], [rnd_item]),
        ("get_run (graph)", "SELECT flowforge.get_run(%s)", (ga1,), (rnd_run,), [ga1], [rnd_run]),
        ("run_events (graph)", "SELECT * FROM flowforge.run_events(%s)", (ga1,), (rnd_run,), [ga1], [rnd_run]),
        ("resolve_run (graph)", "SELECT flowforge.resolve_run(%s)", (ga1,), (rnd_run,), [ga1], [rnd_run]),
        ("resolve_run_id (graph)", "SELECT flowforge.resolve_run_id(%s)", (ga1,), (rnd_run,), [ga1], [rnd_run]),
        ("cancel_run (graph)", "SELECT flowforge.cancel_run(%s, 'x')", (ga1,), (rnd_run,), [ga1], [rnd_run]),
        ("retry_run (graph)", "SELECT flowforge.retry_run(%s)", (ga1,), (rnd_run,), [ga1], [rnd_run]),
        ("fan_out_output (graph)", "SELECT * FROM flowforge.fan_out_output(%s, 'work')", (ga1,), (rnd_run,),
         [ga1], [rnd_run]),
        ("agent_heartbeat", "SELECT flowforge.agent_heartbeat(%s)", ("a-only",), ("no-such-agent",),
         ["a-only"], ["no-such-agent"]),
        ("set_agent_status (drain)", "SELECT flowforge.set_agent_status(%s, 'draining')", ("a-only",),
         ("no-such-agent",), ["a-only"], ["no-such-agent"]),
        ("set_agent_status (inactive: release)", "SELECT flowforge.set_agent_status(%s, 'inactive')", ("a-only",),
         ("no-such-agent",), ["a-only"], ["no-such-agent"]),
    ]
    before = w.snapshot()
    mismatches = []
    for attacker in ("bob", "badmin"):
        mismatches += [f"{attacker} {m}" for m in _compare_with_random(w.conn(attacker), cases)]
    assert w.snapshot() == before
    # The gateway, authenticated for org B, gets the same answers.
    key_b = api_key(w, org="org-b", admin="badmin")
    before = w.snapshot()
    gw = w.conn("gw")
    for label, query, victim, random, vs, rs in cases:
        results = []
        for params, strs in ((victim, vs), (random, rs)):
            with gw.transaction():
                gw.execute("SELECT flowforge.authenticate(%s)", (key_b,))
                try:
                    with gw.transaction():
                        gw.execute(query, params)
                    results.append(None)
                except psycopg.Error as exc:
                    text = exc.diag.message_primary or ""
                    for s in strs:
                        text = text.replace(s, "<X>")
                    results.append((exc.sqlstate, text))
        if results[0] is None or results[0] != results[1]:
            mismatches.append(f"gateway(org-b) {label}: victim -> {results[0]}; random -> {results[1]}")
    assert mismatches == [], "\n".join(mismatches)
    # The codes are the documented ones.
    bob = w.conn("bob")
    for label, query, victim, *_ in cases:
        assert code_of(bob, query, victim) == NOT_FOUND, label
    after = w.snapshot()
    after.pop("api_key_usage"), before.pop("api_key_usage")
    assert after == before
    assert w.op.execute("SELECT status::text, fencing_token FROM flowforge.work_item WHERE id = %s",
                        (w.ids["ia1"],)).fetchone() == ("dispatched", w.ids["ta1"])


def test_a_tenant_never_claims_another_tenants_work_items(world: World) -> None:
    w = world
    bob = w.conn("bob")
    # As an agent name only org A has: unregistered in org B, so it takes no pinned work, and
    # org A's agent of that name is not touched (last_claim_at stays).
    a_only_before = w.op.execute("SELECT to_jsonb(a)::text FROM flowforge.agent a WHERE name = 'a-only'").fetchone()
    assert _claim(bob, "a-only") == []
    assert w.op.execute("SELECT to_jsonb(a)::text FROM flowforge.agent a WHERE name = 'a-only'").fetchone() \
        == a_only_before
    # Every queue name, any engine, a large batch: nothing of org A's.
    got = bob.execute("SELECT work_item_id FROM flowforge.claim_work(ARRAY['default', 'other', 'bq'], 'w', "
                      "'1 minute', 1000, NULL, NULL)").fetchall()
    assert got == []  # gb1 is pinned by affinity: an unregistered claimer takes none
    # bob's own agent of the same name takes bob's item, and only it.
    got = _claim(bob, "shared-name")
    assert [(r[0], r[2]) for r in got] == [(w.ids["ib1"], w.ids["gb1"])]
    # The gateway for org B: nothing of org A's either.
    key_b = api_key(w, org="org-b", admin="badmin")
    gw = w.conn("gw")
    with gw.transaction():
        gw.execute("SELECT flowforge.authenticate(%s)", (key_b,))
        assert _claim(gw, "shared-name") == []
    # Org A's items are where they were.
    rows = dict(w.op.execute("SELECT id, status::text FROM flowforge.work_item WHERE organization_id = %s",
                             (w.ids["org_a"],)).fetchall())
    assert rows == {w.ids["ia1"]: "dispatched", w.ids["ia2"]: "pending"}
    # And alice still takes hers.
    assert [r[0] for r in _claim(w.conn("alice"), "shared-name")] == [w.ids["ia2"]]


def test_a_tenant_cannot_read_drain_or_unpin_another_tenants_agents(world: World) -> None:
    w = world
    bob = w.conn("bob")
    # bob's claim pins definition:g in org B; org A's pin of the same key is untouched.
    assert len(_claim(bob, "shared-name")) == 1
    org_a, org_b = str(w.ids["org_a"]), str(w.ids["org_b"])
    assert _bindings(w) == {(org_a, "definition:g"): ("shared-name", 1), (org_b, "definition:g"): ("shared-name", 1)}
    agents = {r[0]: r[1:] for r in bob.execute("SELECT name, labels, holding, bindings FROM flowforge.list_agents()")}
    assert agents == {"shared-name": ({"team": "b"}, 1, 1)}, agents  # not org A's agents, not org A's counts
    # bob drains, then deactivates, his own agent of the shared name: org A's is untouched.
    before_a = w.op.execute("SELECT to_jsonb(a)::text FROM flowforge.agent a WHERE organization_id = %s ORDER BY 1",
                            (w.ids["org_a"],)).fetchall()
    bob.execute("SELECT flowforge.set_agent_status('shared-name', 'draining')")
    assert bob.execute("SELECT flowforge.agent_heartbeat('shared-name')").fetchone()[0] == "draining"
    bob.execute("SELECT flowforge.set_agent_status('shared-name', 'inactive')")
    assert _bindings(w) == {(org_a, "definition:g"): ("shared-name", 1)}, "bob's release took org A's pin"
    assert w.op.execute("SELECT to_jsonb(a)::text FROM flowforge.agent a WHERE organization_id = %s ORDER BY 1",
                        (w.ids["org_a"],)).fetchall() == before_a
    # Re-registering the shared name in org B makes bob's agent, never org A's.
    bob.execute("SELECT flowforge.register_agent('shared-name', '{\"labels\": {\"team\": \"evil\"}}')")
    assert w.op.execute("SELECT metadata FROM flowforge.agent WHERE organization_id = %s AND name = 'shared-name'",
                        (w.ids["org_a"],)).fetchone()[0] == {"team": "a"}
    # Org A still works as before: its agent is active and holds its pin.
    alice = w.conn("alice")
    assert alice.execute("SELECT flowforge.agent_heartbeat('shared-name')").fetchone()[0] == "active"
    assert [r[0] for r in _claim(alice, "shared-name")] == [w.ids["ia2"]]
    seen = {r[0]: r[1] for r in alice.execute("SELECT name, status FROM flowforge.list_agents()")}
    assert seen == {"a-only": "active", "shared-name": "active"}
    # Daemons' views are not a tenant's.
    assert code_of(bob, "SELECT * FROM flowforge.list_engines()") == INSUFFICIENT_PRIVILEGE
    assert code_of(bob, "SELECT flowforge.tick('evil-engine')") == INSUFFICIENT_PRIVILEGE


def test_a_tenants_agent_dying_releases_its_own_pins_only(world: World) -> None:
    """bob's agent of the shared name goes silent; the sweep (tick, as pg_cron would run it, every
    organization) marks it inactive and releases org B's pin of definition:g — never org A's pin of
    the same key, held by org A's agent of the same name."""
    w = world
    bob = w.conn("bob")
    bob.execute("SELECT flowforge.register_agent('shared-name', '{\"heartbeat_interval\": \"1 second\"}')")
    assert len(_claim(bob, "shared-name")) == 1
    org_a, org_b = str(w.ids["org_a"]), str(w.ids["org_b"])
    assert set(_bindings(w)) == {(org_a, "definition:g"), (org_b, "definition:g")}
    install_clock(w.dsn)
    set_clock(w.op, w.one("SELECT now() + interval '10 seconds'"))  # org B's agent: 3 intervals old; org A's: not
    counts = w.one("SELECT flowforge.tick()")
    assert counts["agents_inactive"] == 1, counts
    assert _bindings(w) == {(org_a, "definition:g"): ("shared-name", 1)}
    assert dict(w.op.execute("SELECT organization_id::text, status::text FROM flowforge.agent "
                             "WHERE name = 'shared-name'").fetchall()) == {org_a: "active", org_b: "inactive"}
    set_clock(w.op, None)
    assert [r[0] for r in _claim(w.conn("alice"), "shared-name")] == [w.ids["ia2"]]


def test_a_tenant_does_not_see_another_tenants_graph_runs(world: World) -> None:
    w = world
    a_runs = {str(w.ids["ga1"]), str(w.ids["ga2"])}
    for attacker in ("bob", "badmin"):
        listed = w.conn(attacker).execute("SELECT id, kind FROM flowforge.list_runs(NULL, NULL, 10000)").fetchall()
        assert {str(r[0]) for r in listed} == {str(w.ids["gb1"])}, attacker
        assert [r[1] for r in listed] == ["graph"]
        for state in ("running", "succeeded"):
            assert not a_runs & {str(r[0]) for r in w.conn(attacker).execute(
                "SELECT id FROM flowforge.list_runs(NULL, %s, 10000)", (state,)).fetchall()}
        # Org B's own "g" lists org B's runs only, though org A has a workflow of the same name.
        assert {str(r[0]) for r in w.conn(attacker).execute(
            "SELECT id FROM flowforge.list_runs('g', NULL, 10000)").fetchall()} == {str(w.ids["gb1"])}
        assert code_of(w.conn(attacker), "SELECT flowforge.resolve_run_id(%s)", (str(w.ids["ga1"])[:8],)) \
            == NOT_FOUND
    # The owner sees its own: get_run of a graph run shows its items and where it is.
    detail = w.conn("viewer").execute("SELECT flowforge.get_run(%s)", (w.ids["ga1"],)).fetchone()[0]
    assert (detail["kind"], detail["state"], detail["position"], detail["path"]) == \
        ("graph", "running", "work", ["work"])
    assert {i["id"] for i in detail["items"]} == {str(w.ids["ia1"])}
    assert w.conn("viewer").execute("SELECT flowforge.resolve_run(%s)", (w.ids["ga1"],)).fetchone()[0][
        "engine_kind"] == "graph"


def test_roles_below_member_and_unauthenticated_gateways_are_refused(world: World) -> None:
    w = world
    ia1, ta1, ga1 = w.ids["ia1"], w.ids["ta1"], w.ids["ga1"]
    writes = [
        ("SELECT * FROM flowforge.claim_work(ARRAY['default'], 'shared-name')", None),
        ("SELECT flowforge.heartbeat_work(%s, %s)", (ia1, ta1)),
        ("SELECT flowforge.complete_work(%s, %s, '{}')", (ia1, ta1)),
        ("SELECT flowforge.fail_work(%s, %s, 'boom')", (ia1, ta1)),
        ("SELECT flowforge.register_agent('viewer-agent')", None),
        ("SELECT flowforge.agent_heartbeat('shared-name')", None),
        ("SELECT flowforge.set_agent_status('shared-name', 'draining')", None),
        ("SELECT flowforge.cancel_run(%s)", (ga1,)),
        ("SELECT flowforge.retry_run(%s)", (ga1,)),
        ("SELECT flowforge.start_run('g', '{}')", None),
    ]
    before = w.snapshot()
    viewer = w.conn("viewer")
    codes = [(q, code_of(viewer, q, p)) for q, p in writes]
    assert [c for c in codes if c[1] != FORBIDDEN] == []
    # ... while it reads: the agents and the run.
    assert {r[0] for r in viewer.execute("SELECT name FROM flowforge.list_agents()")} == {"a-only", "shared-name"}
    assert viewer.execute("SELECT count(*) FROM flowforge.run_events(%s)", (ga1,)).fetchone()[0] > 0
    gw = w.conn("gw")
    reads = [("SELECT * FROM flowforge.list_agents()", None), ("SELECT flowforge.resolve_run(%s)", (ga1,)),
             ("SELECT flowforge.get_run(%s)", (ga1,)), ("SELECT * FROM flowforge.list_runs()", None)]
    codes = [(q, code_of(gw, q, p)) for q, p in writes + reads]
    assert [c for c in codes if c[1] != UNAUTHENTICATED] == []
    assert w.snapshot() == before
    # A viewer key on the gateway is a viewer too.
    key = api_key(w, role="viewer")
    before = w.snapshot()
    for query, params in writes:
        with gw.transaction():
            gw.execute("SELECT flowforge.authenticate(%s)", (key,))
            try:
                with gw.transaction():
                    gw.execute(query, params)
                pytest.fail(f"viewer key: {query} succeeded")
            except psycopg.Error as exc:
                assert exc.sqlstate == FORBIDDEN, query
    after = w.snapshot()
    after.pop("api_key_usage"), before.pop("api_key_usage")
    assert after == before


# ---------------------------------------------------------------------------
# The state-machine engine (issue 14): machine runs, send_event, their actions
# ---------------------------------------------------------------------------
#
# On top of the world above: both organizations define a machine "m" (issue 14's order
# machine, its action "ship" on queue "mq").
#   org-a: ma1 rests in awaiting_payment; ma2 was paid with event id "evt-1" and is suspended
#          in shipping, its action item iam2 claimed by alice under token tam2; ma3 was paid
#          too, its action item pending.
#   org-b: mb1 rests in awaiting_payment; mb2 was paid, its action item pending.

def _machine(name: str = "m") -> dict:
    from helpers_sdk_engines import order
    return order(name, queue="mq")


def _send(conn, run, event: str = "paid", payload: dict | None = None, event_id: str | None = None):
    return conn.execute("SELECT flowforge.send_event(%s, %s, %s::jsonb, %s)",
                        (run, event, json.dumps(payload if payload is not None else {"amount": 150}), event_id)
                        ).fetchone()[0]


@pytest.fixture
def machines(world: World) -> World:
    w = world
    alice, bob = w.conn("alice"), w.conn("bob")
    define(alice, _machine())
    w.ids["ma1"] = _start(alice, "m", {"who": "alice"})
    w.ids["ma2"] = _start(alice, "m", {"who": "alice, paid"})
    assert _send(alice, w.ids["ma2"], event_id="evt-1")["outcome"] == "applied"
    [(w.ids["iam2"], w.ids["tam2"], _)] = _claim(alice, "a-ship", queue="mq")
    w.ids["ma3"] = _start(alice, "m")
    _send(alice, w.ids["ma3"])
    w.ids["iam3"] = w.one("SELECT id FROM flowforge.work_item WHERE run_id = %s", (w.ids["ma3"],))
    define(bob, _machine())
    w.ids["mb1"] = _start(bob, "m", {"who": "bob"})
    w.ids["mb2"] = _start(bob, "m", {"who": "bob, paid"})
    _send(bob, w.ids["mb2"])
    w.ids["ibm2"] = w.one("SELECT id FROM flowforge.work_item WHERE run_id = %s", (w.ids["mb2"],))
    return w


def test_the_machine_world_is_what_it_claims_to_be(machines: World) -> None:
    w = machines
    states = dict(w.op.execute("SELECT run_id, state || '/' || suspended FROM flowforge.machine_run").fetchall())
    assert states == {w.ids["ma1"]: "awaiting_payment/false", w.ids["ma2"]: "shipping/true",
                      w.ids["ma3"]: "shipping/true", w.ids["mb1"]: "awaiting_payment/false",
                      w.ids["mb2"]: "shipping/true"}
    assert w.op.execute("SELECT status::text, fencing_token FROM flowforge.work_item WHERE id = %s",
                        (w.ids["iam2"],)).fetchone() == ("dispatched", w.ids["tam2"])
    assert w.one("SELECT organization_id FROM flowforge.machine_event_seen WHERE event_id = 'evt-1'") == w.ids["org_a"]


def test_machine_ids_of_another_tenant_answer_like_random_ones(machines: World) -> None:
    """send_event (with and without an event id — even one the victim's run has seen, so a
    'duplicate' cannot leak that it exists), get_run, run_events, resolve_run, cancel_run, retry_run
    on another tenant's machine run, and the work-item protocol on its action: every one FF001, word
    for word what a random id gets, nothing changed."""
    w = machines
    ma1, ma2, iam2, tam2 = str(w.ids["ma1"]), str(w.ids["ma2"]), str(w.ids["iam2"]), w.ids["tam2"]
    rnd_run, rnd_item = str(uuid.uuid4()), str(uuid.uuid4())
    send = "SELECT flowforge.send_event(%s, %s, %s::jsonb, %s)"
    cases = [
        ("send_event", send, (ma1, "paid", '{"amount": 150}', None), (rnd_run, "paid", '{"amount": 150}', None),
         [ma1], [rnd_run]),
        ("send_event (an event the state refuses)", send, (ma1, "retry", "{}", None), (rnd_run, "retry", "{}", None),
         [ma1], [rnd_run]),
        ("send_event (suspended: would queue)", send, (ma2, "give_up", "{}", "evt-2"),
         (rnd_run, "give_up", "{}", "evt-2"), [ma2], [rnd_run]),
        ("send_event (an event id the run has seen)", send, (ma2, "paid", '{"amount": 150}', "evt-1"),
         (rnd_run, "paid", '{"amount": 150}', "evt-1"), [ma2], [rnd_run]),
        ("send_event (a graph run: its owner gets FF012)", send, (str(w.ids["ga1"]), "paid", "{}", None),
         (rnd_run, "paid", "{}", None), [str(w.ids["ga1"])], [rnd_run]),
        ("get_run (machine)", "SELECT flowforge.get_run(%s)", (ma1,), (rnd_run,), [ma1], [rnd_run]),
        ("run_events (machine)", "SELECT * FROM flowforge.run_events(%s)", (ma2,), (rnd_run,), [ma2], [rnd_run]),
        ("resolve_run (machine)", "SELECT flowforge.resolve_run(%s)", (ma1,), (rnd_run,), [ma1], [rnd_run]),
        ("cancel_run (machine, resting)", "SELECT flowforge.cancel_run(%s, 'x')", (ma1,), (rnd_run,), [ma1], [rnd_run]),
        ("cancel_run (machine, suspended)", "SELECT flowforge.cancel_run(%s, 'x')", (ma2,), (rnd_run,),
         [ma2], [rnd_run]),
        ("retry_run (machine)", "SELECT flowforge.retry_run(%s)", (ma1,), (rnd_run,), [ma1], [rnd_run]),
        ("complete_work (machine action)", "SELECT flowforge.complete_work(%s, %s, '{}')", (iam2, tam2),
         (rnd_item, tam2), [iam2], [rnd_item]),
        ("fail_work (machine action)", "SELECT flowforge.fail_work(%s, %s, 'boom', false)", (iam2, tam2),
         (rnd_item, tam2), [iam2], [rnd_item]),
        ("heartbeat_work (machine action)", "SELECT flowforge.heartbeat_work(%s, %s, '1 minute')", (iam2, tam2),
         (rnd_item, tam2), [iam2], [rnd_item]),
    ]
    before = w.snapshot()
    mismatches = []
    for attacker in ("bob", "badmin"):
        mismatches += [f"{attacker} {m}" for m in _compare_with_random(w.conn(attacker), cases)]
    assert w.snapshot() == before
    key_b = api_key(w, org="org-b", admin="badmin")
    before = w.snapshot()
    gw = w.conn("gw")
    for label, query, victim, random, vs, rs in cases:
        results = []
        for params, strs in ((victim, vs), (random, rs)):
            with gw.transaction():
                gw.execute("SELECT flowforge.authenticate(%s)", (key_b,))
                try:
                    with gw.transaction():
                        gw.execute(query, params)
                    results.append(None)
                except psycopg.Error as exc:
                    text = exc.diag.message_primary or ""
                    for s in strs:
                        text = text.replace(s, "<X>")
                    results.append((exc.sqlstate, text))
        if results[0] is None or results[0] != results[1]:
            mismatches.append(f"gateway(org-b) {label}: victim -> {results[0]}; random -> {results[1]}")
    assert mismatches == [], "\n".join(mismatches)
    bob = w.conn("bob")
    for label, query, victim, *_ in cases:
        assert code_of(bob, query, victim) == NOT_FOUND, label
    after = w.snapshot()
    after.pop("api_key_usage"), before.pop("api_key_usage")
    assert after == before
    # The victim's machines are where they were, and alice still moves them.
    alice = w.conn("alice")
    assert code_of(alice, send, (str(w.ids["ga1"]), "paid", "{}", None)) == "FF012"
    assert _send(alice, w.ids["ma1"], event_id="evt-1")["outcome"] == "applied"  # event ids are per run
    assert _send(alice, w.ids["ma2"], event_id="evt-1")["outcome"] == "duplicate"
    alice.execute("SELECT flowforge.complete_work(%s, %s, '{\"tracking\": \"T\"}')", (w.ids["iam2"], w.ids["tam2"]))
    assert w.op.execute("SELECT state, status FROM flowforge.machine_run WHERE run_id = %s",
                        (w.ids["ma2"],)).fetchone() == ("delivered", "succeeded")


def test_an_event_id_is_a_runs_own_across_tenants(machines: World) -> None:
    """bob sends his own run the event id alice's run has seen: applied, not duplicate; alice's
    record of it untouched; and the other way round."""
    w = machines
    seen_a = w.op.execute("SELECT to_jsonb(s)::text FROM flowforge.machine_event_seen s "
                          "WHERE organization_id = %s", (w.ids["org_a"],)).fetchall()
    got = _send(w.conn("bob"), w.ids["mb1"], event_id="evt-1")
    assert (got["outcome"], got["state"]) == ("applied", "shipping")
    assert w.op.execute("SELECT to_jsonb(s)::text FROM flowforge.machine_event_seen s "
                        "WHERE organization_id = %s", (w.ids["org_a"],)).fetchall() == seen_a
    assert _send(w.conn("bob"), w.ids["mb1"], event_id="evt-1")["outcome"] == "duplicate"
    assert _send(w.conn("alice"), w.ids["ma1"], event_id="evt-1")["outcome"] == "applied"


def test_a_tenant_never_claims_another_tenants_machine_actions(machines: World) -> None:
    w = machines
    bob = w.conn("bob")
    got = bob.execute("SELECT work_item_id, run_id, engine_kind FROM flowforge.claim_work(ARRAY['mq', 'default'], "
                      "'b-ship', '1 minute', 100, ARRAY['statemachine'])").fetchall()
    assert [(r[0], r[1], r[2]) for r in got] == [(w.ids["ibm2"], w.ids["mb2"], "statemachine")]
    assert w.op.execute("SELECT status::text FROM flowforge.work_item WHERE id = %s", (w.ids["iam3"],)).fetchone() \
        == ("pending",)
    key_b = api_key(w, org="org-b", admin="badmin")
    gw = w.conn("gw")
    with gw.transaction():
        gw.execute("SELECT flowforge.authenticate(%s)", (key_b,))
        assert _claim(gw, "b-ship", queue="mq") == []
    assert [r[0] for r in _claim(w.conn("alice"), "a-ship", queue="mq")] == [w.ids["iam3"]]


def test_a_tenant_does_not_see_another_tenants_machine_runs(machines: World) -> None:
    w = machines
    a_runs = {str(w.ids[k]) for k in ("ma1", "ma2", "ma3")}
    for attacker in ("bob", "badmin"):
        conn = w.conn(attacker)
        listed = conn.execute("SELECT id, kind FROM flowforge.list_runs(NULL, NULL, 10000)").fetchall()
        assert not a_runs & {str(r[0]) for r in listed}, attacker
        assert {str(r[0]) for r in conn.execute("SELECT id FROM flowforge.list_runs('m', NULL, 10000)").fetchall()} \
            == {str(w.ids["mb1"]), str(w.ids["mb2"])}
        assert code_of(conn, "SELECT flowforge.resolve_run_id(%s)", (str(w.ids["ma1"])[:8],)) == NOT_FOUND
    detail = w.conn("viewer").execute("SELECT flowforge.get_run(%s)", (w.ids["ma2"],)).fetchone()[0]
    assert (detail["kind"], detail["machine_state"], detail["suspended"]) == ("statemachine", "shipping", True)
    assert [h.get("event_id") for h in detail["history"]] == [None, "evt-1"]


def test_roles_below_member_and_unauthenticated_gateways_cannot_move_machines(machines: World) -> None:
    w = machines
    ma1, ma2 = w.ids["ma1"], w.ids["ma2"]
    writes = [
        ("SELECT flowforge.send_event(%s, 'paid', '{\"amount\": 150}')", (ma1,)),
        ("SELECT flowforge.send_event(%s, 'give_up', '{}', 'evt-9')", (ma2,)),
        ("SELECT flowforge.cancel_run(%s)", (ma1,)),
        ("SELECT flowforge.retry_run(%s)", (ma1,)),
        ("SELECT flowforge.start_run('m', '{}')", None),
        ("SELECT flowforge.complete_work(%s, %s, '{}')", (w.ids["iam2"], w.ids["tam2"])),
    ]
    before = w.snapshot()
    viewer = w.conn("viewer")
    assert [(q, c) for q, p in writes if (c := code_of(viewer, q, p)) != FORBIDDEN] == []
    assert viewer.execute("SELECT count(*) FROM flowforge.run_events(%s)", (ma2,)).fetchone()[0] > 0
    gw = w.conn("gw")
    reads = [("SELECT flowforge.get_run(%s)", (ma1,)), ("SELECT * FROM flowforge.run_events(%s)", (ma1,))]
    assert [(q, c) for q, p in writes + reads if (c := code_of(gw, q, p)) != UNAUTHENTICATED] == []
    assert w.snapshot() == before
    key = api_key(w, role="viewer")
    for query, params in writes:
        with gw.transaction():
            gw.execute("SELECT flowforge.authenticate(%s)", (key,))
            try:
                with gw.transaction():
                    gw.execute(query, params)
                pytest.fail(f"viewer key: {query} succeeded")
            except psycopg.Error as exc:
                assert exc.sqlstate == FORBIDDEN, query
    # A member key of org A moves org A's machine through the gateway.
    key = api_key(w, role="member")
    with gw.transaction():
        gw.execute("SELECT flowforge.authenticate(%s)", (key,))
        assert _send(gw, ma1)["state"] == "shipping"
