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
