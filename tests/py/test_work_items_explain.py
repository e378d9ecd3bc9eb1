"""The substrate's hot queries (issue 13) use their indexes with 100k finished work items,
a backlog of another service's work on the same queue, and 10,000 agents.

As in test_core_explain.py, each query below is a copy of the statement inside its
SQL function, with the function's variables as placeholders: rendered once with
literal values or parameters (what EXPLAIN sees) and once with the variable names,
which must still occur in the function's source — a change to the function makes
this test say its copy is out of date instead of quietly checking an old query.
claim_work and tick() run with plan_cache_mode = force_generic_plan, so the generic
plan (PREPARE, then EXPLAIN EXECUTE) is the one that matters; it is explained as the
role the code runs as (flowforge_owner for claim_work, flowforge_system under tick),
so the row-level security policies are in the plan.

One database is loaded once for the module, set-based (INSERT ... SELECT
generate_series, then ANALYZE): 20,000 succeeded graph runs with 5 completed work
items each (100k), 20,000 pending items of another task name ("theirs", older than
the rest) on the shared queue, 10,000 agents (one in twenty alive) with 500 bindings;
then a few live runs through the API (pending and dispatched items).
"""

from __future__ import annotations

import json
import time

import psycopg
import pytest

from conftest import create_migrated_database, drop_database
from helpers_engines import DEFAULT_ORG, claim_work, connect, define, start_run
from test_core_explain import _assert_uses_index, _check_copy, _describe, _plan_nodes

N_RUNS = 20_000
ITEMS_PER_RUN = 5
N_FINISHED = N_RUNS * ITEMS_PER_RUN  # 100k
N_BACKLOG = 20_000
N_AGENTS = 10_000
N_BINDINGS = 500
N_LIVE = 5
N_DISPATCHED = 2
ORG = f"'{DEFAULT_ORG}'::uuid"

CLAIM_WORK = "flowforge.claim_work(text[],text,interval,integer,text[],text[])"
REAP_ITEMS = "flowforge._reap_work_items(uuid[],integer,timestamp with time zone)"
CLAIM = "flowforge.claim(text[],text,interval,integer,text[])"
PINNED_ELSEWHERE = "flowforge._pinned_elsewhere(uuid,text,text,text,timestamp with time zone)"
RELEASE_BINDINGS = "flowforge._release_bindings(uuid,text)"
SWEEP_AGENTS = "flowforge._sweep_agents(uuid[],timestamp with time zone)"
LIST_AGENTS = "flowforge.list_agents(integer,text)"

# --- copies of the statements inside the functions ------------------------------------

# claim_work's pick, without task_names: one ordered index scan per queue, merged.
CLAIM_FILTERS = """
      AND ({engine_kinds} IS NULL OR w.engine_kind = ANY ({engine_kinds}))
      AND (w.worker_params IS NULL OR {labels} @> w.worker_params)
      AND (w.affinity_key IS NULL
           OR ({registered} AND NOT flowforge._pinned_elsewhere({org}, w.affinity_key, w.affinity_policy,
                                                                {agent}, {now})))
    ORDER BY w.priority, w.next_attempt_at
    LIMIT {batch}
    FOR UPDATE SKIP LOCKED) c
ORDER BY c.priority, c.next_attempt_at
LIMIT {batch}
"""
CLAIM_WORK_PICK = """
SELECT c.id, c.affinity_key
FROM (SELECT DISTINCT u.name FROM unnest({queues}) AS u(name)) AS q(name)
CROSS JOIN LATERAL (
    SELECT w.id, w.priority, w.next_attempt_at, w.affinity_key FROM flowforge.work_item w
    WHERE w.organization_id = {org} AND w.status = 'pending' AND w.queue = q.name
      AND w.next_attempt_at <= {now}
""" + CLAIM_FILTERS
# ... and with task_names: one per (queue, name).
CLAIM_WORK_PICK_BY_NAME = """
SELECT c.id, c.affinity_key
FROM (SELECT DISTINCT u.name FROM unnest({queues}) AS u(name)) AS q(name)
CROSS JOIN (SELECT DISTINCT n.name FROM unnest({task_names}) AS n(name)) AS k(name)
CROSS JOIN LATERAL (
    SELECT w.id, w.priority, w.next_attempt_at, w.affinity_key FROM flowforge.work_item w
    WHERE w.organization_id = {org} AND w.status = 'pending' AND w.queue = q.name
      AND w.task_name = k.name AND w.next_attempt_at <= {now}
""" + CLAIM_FILTERS
CLAIM_WORK_PICK_SOURCE = {"queues": "claim_work.queues", "task_names": "claim_work.task_names", "org": "v_org",
                          "now": "v_now", "engine_kinds": "claim_work.engine_kinds", "labels": "v_agent.labels",
                          "registered": "v_agent.registered", "agent": "claim_work.agent", "batch": "claim_work.batch"}
CLAIM_WORK_PICK_PARAMS = {"org": "$1", "queues": "$2", "task_names": "$3", "now": "$4", "engine_kinds": "$5",
                          "labels": "$6", "registered": "$7", "agent": "$8", "batch": "$9"}
CLAIM_WORK_PICK_TYPES = "uuid, text[], text[], timestamptz, text[], jsonb, boolean, text, integer"

# The item reaper's candidates (tick's duty reaped_items): oldest expiry first.
REAP_CANDIDATES = """
SELECT w.id, w.organization_id FROM flowforge.work_item w
WHERE w.status = 'dispatched' AND w.lease_expires_at < {now}
  AND ({orgs} IS NULL OR w.organization_id = ANY ({orgs}))
ORDER BY w.lease_expires_at
LIMIT {max}
"""
REAP_CANDIDATES_SOURCE = {"now": "p_now", "orgs": "p_orgs", "max": "p_max"}

# Every claim of a named worker: its agent row by name (last_claim_at).
CLAIMING_AGENT_ROW = """
UPDATE flowforge.agent a SET last_claim_at = {now}
WHERE a.organization_id = {org} AND a.name = {name}
"""
# The same statement in claim() and claim_work(), their one statement before the pick.
CLAIMING_AGENT_SOURCES = ((CLAIM_WORK, {"now": "v_now", "org": "v_org", "name": "claim_work.agent"}),
                          (CLAIM, {"now": "v_now", "org": "v_org", "name": "claim.worker"}))

# Every claim of pinned work: the key's binding and its agent.
PINNED = """
SELECT EXISTS (
    SELECT 1 FROM flowforge.affinity_binding b
    LEFT JOIN flowforge.agent a ON a.organization_id = b.organization_id AND a.name = b.agent_id
    WHERE b.organization_id = {org} AND b.affinity_key = {key} AND b.agent_id <> {agent}
      AND ({policy} = 'hard'
           OR flowforge._agent_status(a.status, a.last_heartbeat_at, a.heartbeat_interval,
                                      (SELECT s.agent_timeout FROM flowforge.setting s), {now}) = 'active'))
"""
PINNED_SOURCE = {"org": "p_org", "key": "p_key", "agent": "p_agent", "policy": "p_policy", "now": "p_now"}

# The sweep releases an inactive agent's pins.
RELEASE = """
DELETE FROM flowforge.affinity_binding b WHERE b.organization_id = {org} AND b.agent_id = {agent}
"""
RELEASE_SOURCE = {"org": "p_org", "agent": "p_agent"}

# The agent sweep (tick's duty agents_inactive).
SWEEP = """
UPDATE flowforge.agent a SET status = 'inactive', updated_at = {now}, updated_by = 'tick'
WHERE a.status <> 'inactive' AND ({orgs} IS NULL OR a.organization_id = ANY ({orgs}))
  AND flowforge._agent_status(a.status, a.last_heartbeat_at, a.heartbeat_interval,
                              (SELECT s.agent_timeout FROM flowforge.setting s), {now}) = 'inactive'
RETURNING a.organization_id, a.name
"""
SWEEP_SOURCE = {"now": "p_now", "orgs": "p_orgs"}

# list_agents: what each agent holds.
HOLDING = """
SELECT count(*) FROM flowforge.work_item w
WHERE w.organization_id = {org} AND w.status = 'dispatched' AND w.agent_id = {name}
"""
HOLDING_SOURCE = {"org": "v_org", "name": "a.name"}


def _explain(conn: psycopg.Connection, query: str, role: str, prepare: str | None = None) -> list[dict]:
    """EXPLAIN (FORMAT JSON) as `role`, with the caller's organization cached as an API call has it;
    with prepare, the PREPAREd statement's generic plan."""
    with conn.transaction():
        conn.execute(f'SET LOCAL ROLE "{role}"')
        conn.execute("SELECT set_config('flowforge.caller_org', %s, true)", (DEFAULT_ORG,))
        if prepare is not None:
            conn.execute("SET LOCAL plan_cache_mode = force_generic_plan")
            conn.execute(prepare)
        (doc,) = conn.execute("EXPLAIN (FORMAT JSON) " + query).fetchone()
        if prepare is not None:
            conn.execute("DEALLOCATE ALL")
    if isinstance(doc, str):
        doc = json.loads(doc)
    return list(_plan_nodes(doc[0]["Plan"]))


def _tables(nodes: list[dict]) -> set[str]:
    return {n["Relation Name"] for n in nodes if "Relation Name" in n}


@pytest.fixture(scope="module")
def loaded(admin_dsn, migrated_template):
    name, dsn = create_migrated_database(admin_dsn, migrated_template)
    try:
        t0 = time.monotonic()
        with connect(dsn) as conn:
            wf = define(conn, {"name": "bulk", "kind": "graph", "start": "work",
                               "nodes": [{"key": "work"}, {"key": "theirs"}, {"key": "done", "final": True}],
                               "edges": [{"from": "work", "to": "theirs"}, {"from": "theirs", "to": "done"}]})
            p = {"org": DEFAULT_ORG, "wf": wf, "runs": N_RUNS, "per": ITEMS_PER_RUN, "backlog": N_BACKLOG,
                 "agents": N_AGENTS, "bindings": N_BINDINGS}
            with conn.transaction():
                conn.execute("""
                    CREATE TEMP TABLE bulk_run ON COMMIT DROP AS
                    SELECT flowforge.uuid7() AS run_id, now() - interval '30 days' + g * interval '1 minute' AS ts
                    FROM generate_series(1, %(runs)s) g""", p)
                conn.execute("""
                    INSERT INTO flowforge.engine_run (organization_id, run_id, engine_kind, definition_id, created_at,
                                                      created_by, ended_at)
                    SELECT %(org)s, r.run_id, 'graph', %(wf)s, r.ts, 'explain', r.ts + interval '1 minute'
                    FROM bulk_run r""", p)
                conn.execute("""
                    INSERT INTO flowforge.graph_run (organization_id, run_id, definition_id, task, steps, max_steps,
                                                     status, reason, created_at, created_by, started_at, finished_at)
                    SELECT %(org)s, r.run_id, %(wf)s, 'done', 3, 1000, 'succeeded', 'reached final node "done"',
                           r.ts, 'explain', r.ts, r.ts + interval '1 minute'
                    FROM bulk_run r""", p)
                conn.execute("""
                    INSERT INTO flowforge.work_item (organization_id, engine_kind, run_id, task_id, task_name, queue,
                                                     payload, output, status, fencing_token, agent_id, leased_by,
                                                     dispatched_at, completed_at, next_attempt_at, max_retries,
                                                     created_at, created_by)
                    SELECT %(org)s, 'graph', r.run_id, t.id, 'work', 'default', jsonb_build_object('visit', v),
                           '{"ok": true}', 'completed', 1, 'agent-' || (v * 7 %% %(agents)s + 1),
                           'agent-' || (v * 7 %% %(agents)s + 1), r.ts + interval '1 second',
                           r.ts + interval '2 seconds', r.ts, 0, r.ts, 'explain'
                    FROM bulk_run r CROSS JOIN generate_series(1, %(per)s) v
                    JOIN flowforge.task t ON t.workflow_id = %(wf)s AND t.key = 'work'""", p)
                # Another service's backlog on the same queue, older than anything else pending.
                conn.execute("""
                    INSERT INTO flowforge.work_item (organization_id, engine_kind, run_id, task_id, task_name, queue,
                                                     payload, status, next_attempt_at, max_retries, created_at,
                                                     created_by)
                    SELECT %(org)s, 'graph', flowforge.uuid7(), t.id, 'theirs', 'default', '{}', 'pending',
                           now() - interval '1 day' + g * interval '1 second', 0, now() - interval '1 day', 'explain'
                    FROM generate_series(1, %(backlog)s) g
                    JOIN flowforge.task t ON t.workflow_id = %(wf)s AND t.key = 'theirs'""", p)
                conn.execute("""
                    INSERT INTO flowforge.agent (organization_id, name, status, metadata, heartbeat_interval,
                                                 last_heartbeat_at, last_claim_at, created_at, created_by)
                    SELECT %(org)s, 'agent-' || g, CASE WHEN g %% 20 = 0 THEN 'active' ELSE 'inactive' END,
                           jsonb_build_object('gpu', g %% 2 = 0),
                           CASE WHEN g %% 20 = 0 THEN interval '1 hour' ELSE interval '10 seconds' END,
                           CASE WHEN g %% 20 = 0 THEN now() ELSE now() - interval '1 day' END, now(), now(), 'explain'
                    FROM generate_series(1, %(agents)s) g""", p)
                conn.execute("""
                    INSERT INTO flowforge.affinity_binding (organization_id, affinity_key, agent_id, created_at,
                                                            created_by)
                    SELECT %(org)s, 'key:customer-' || g, 'agent-' || (g * 20), now(), 'explain'
                    FROM generate_series(1, %(bindings)s) g""", p)
            for i in range(N_LIVE):
                start_run(conn, "bulk", {"i": i})
            held = claim_work(conn, ["default"], "agent-20", "1 hour", N_DISPATCHED, task_names=["work"])
            assert len(held) == N_DISPATCHED
            conn.execute("ANALYZE")
            counts = dict(conn.execute("SELECT status::text, count(*) FROM flowforge.work_item GROUP BY 1").fetchall())
            assert counts == {"completed": N_FINISHED, "pending": N_BACKLOG + N_LIVE - N_DISPATCHED,
                              "dispatched": N_DISPATCHED}
        print(f"\nloaded {N_FINISHED} finished work items, {N_BACKLOG} backlog, {N_AGENTS} agents "
              f"in {time.monotonic() - t0:.1f}s")
        yield dsn
    finally:
        drop_database(admin_dsn, name)


@pytest.fixture
def conn(loaded):
    with connect(loaded) as c:
        yield c


def _claim_pick(conn, query: str, task_names: str) -> list[dict]:
    prepare = f"PREPARE pick({CLAIM_WORK_PICK_TYPES}) AS " + query.format(**CLAIM_WORK_PICK_PARAMS)
    return _explain(conn, f"EXECUTE pick({ORG}, ARRAY['default'], {task_names}, now(), NULL, '{{}}'::jsonb, "
                          "true, 'agent-20', 10)", "flowforge_owner", prepare)


def test_claim_work_pick_generic_plan_uses_work_item_status_priority_idx(conn):
    _check_copy(conn, CLAIM_WORK, CLAIM_WORK_PICK, CLAIM_WORK_PICK_SOURCE)
    nodes = _claim_pick(conn, CLAIM_WORK_PICK, "NULL")
    _assert_uses_index(nodes, "work_item_status_priority_idx", "work_item")


def test_claim_work_pick_with_task_names_uses_work_item_ready_by_name_idx(conn):
    """A worker naming its handlers must not walk past another service's backlog on a shared queue:
    the pick reads work_item_ready_by_name_idx (queue, task name, claim order), as claim() reads
    idx_taskrun_ready_by_name. Regression: until 0b1eaab one statement served both cases with
    "k.name IS NULL OR w.task_name = k.name", which no index condition can use — every claim of a
    worker naming its handlers walked work_item_status_priority_idx past the whole backlog of other
    names (20,000 rows here)."""
    _check_copy(conn, CLAIM_WORK, CLAIM_WORK_PICK_BY_NAME, CLAIM_WORK_PICK_SOURCE)
    nodes = _claim_pick(conn, CLAIM_WORK_PICK_BY_NAME, "ARRAY['work']")
    _assert_uses_index(nodes, "work_item_ready_by_name_idx", "work_item")
    # The backlog of other names is not read: the scan's index condition names the task.
    (scan,) = [n for n in nodes if n.get("Index Name") == "work_item_ready_by_name_idx"]
    assert "task_name" in scan["Index Cond"], scan["Index Cond"]


@pytest.mark.parametrize("orgs", ["NULL::uuid[]", f"ARRAY[{ORG}]"])
def test_item_reaper_candidates_use_work_item_lease_idx(conn, orgs):
    _check_copy(conn, REAP_ITEMS, REAP_CANDIDATES, REAP_CANDIDATES_SOURCE)
    nodes = _explain(conn, REAP_CANDIDATES.format(now="now()", orgs=orgs, max=1000), "flowforge_system")
    _assert_uses_index(nodes, "work_item_lease_idx", "work_item")
    prepare = "PREPARE reap(timestamptz, uuid[], integer) AS " + REAP_CANDIDATES.format(now="$1", orgs="$2", max="$3")
    nodes = _explain(conn, f"EXECUTE reap(now(), {orgs}, 1000)", "flowforge_system", prepare)
    _assert_uses_index(nodes, "work_item_lease_idx", "work_item")


def test_claiming_agent_lookup_uses_agent_name_key(conn):
    for signature, names in CLAIMING_AGENT_SOURCES:
        _check_copy(conn, signature, CLAIMING_AGENT_ROW, names)
    prepare = "PREPARE agent_row(timestamptz, uuid, text) AS " + CLAIMING_AGENT_ROW.format(now="$1", org="$2",
                                                                                           name="$3")
    nodes = _explain(conn, f"EXECUTE agent_row(now(), {ORG}, 'agent-20')", "flowforge_owner", prepare)
    _assert_uses_index(nodes, "agent_name_key", "agent")


def test_pinned_elsewhere_uses_the_binding_key_and_the_agent_name(conn):
    _check_copy(conn, PINNED_ELSEWHERE, PINNED, PINNED_SOURCE)
    prepare = "PREPARE pinned(uuid, text, text, text, timestamptz) AS " + PINNED.format(
        org="$1", key="$2", agent="$3", policy="$4", now="$5")
    nodes = _explain(conn, f"EXECUTE pinned({ORG}, 'key:customer-7', 'agent-20', 'soft', now())",
                     "flowforge_owner", prepare)
    _assert_uses_index(nodes, "affinity_binding_key_uq", "affinity_binding")
    _assert_uses_index(nodes, "agent_name_key", "agent")


def test_releasing_an_agents_bindings_uses_affinity_binding_agent_idx(conn):
    _check_copy(conn, RELEASE_BINDINGS, RELEASE, RELEASE_SOURCE)
    prepare = "PREPARE release(uuid, text) AS " + RELEASE.format(org="$1", agent="$2")
    nodes = _explain(conn, f"EXECUTE release({ORG}, 'agent-20')", "flowforge_system", prepare)
    _assert_uses_index(nodes, "affinity_binding_agent_idx", "affinity_binding")


def test_agent_sweep_reads_the_agents_only(conn):
    """The sweep's cost is the agent table's, whatever the size of the queue: its plan (generic, as
    tick runs it) reads agent and setting, never work_item or task_run. No index serves "agents whose
    heartbeat is too old" (the threshold is per agent): with 10,000 registered agents it is one pass
    over them per tick."""
    _check_copy(conn, SWEEP_AGENTS, SWEEP, SWEEP_SOURCE)
    prepare = "PREPARE sweep(timestamptz, uuid[]) AS " + SWEEP.format(now="$1", orgs="$2")
    for orgs in ("NULL", f"ARRAY[{ORG}]"):
        nodes = _explain(conn, f"EXECUTE sweep(now(), {orgs})", "flowforge_system", prepare)
        assert _tables(nodes) == {"agent", "setting"}, _describe(nodes)


def test_list_agents_holding_count_uses_work_item_lease_idx(conn):
    """What an agent holds is counted among the dispatched items, never over the 100k finished ones."""
    _check_copy(conn, LIST_AGENTS, HOLDING, HOLDING_SOURCE)
    prepare = "PREPARE holding(uuid, text) AS " + HOLDING.format(org="$1", name="$2")
    nodes = _explain(conn, f"EXECUTE holding({ORG}, 'agent-20')", "flowforge_owner", prepare)
    _assert_uses_index(nodes, "work_item_lease_idx", "work_item")


def test_the_api_works_at_this_size(conn):
    """claim_work (by name and not), the sweep and the reaper, called for real on the loaded database."""
    with conn.transaction() as tx:
        by_name = claim_work(conn, ["default"], "agent-40", "30 seconds", 10, task_names=["work"])
        assert sorted(r["task_name"] for r in by_name) == ["work"] * (N_LIVE - N_DISPATCHED)
        any_name = claim_work(conn, ["default"], "agent-40", "30 seconds", 10)
        assert [r["task_name"] for r in any_name] == ["theirs"] * 10  # the older backlog comes first
        raise psycopg.Rollback(tx)
    counts = conn.execute("SELECT flowforge.tick()").fetchone()[0]
    assert counts["reaped_items"] == 0  # the dispatched ones hold an hour-long lease
    assert counts["agents_inactive"] == 0  # the live ones heartbeat; the rest already are inactive
    # list_agents pages (1,000 by default since issue 19): one page of them all.
    assert conn.execute("SELECT count(*) FROM flowforge.list_agents(max_rows => 10000) WHERE status = 'active'").fetchone()[0] \
        == N_AGENTS // 20
