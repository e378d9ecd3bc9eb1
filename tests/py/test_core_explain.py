"""The execution core's hot queries use their indexes on a table with 100k
finished task runs.

Each query below is a copy of the statement inside its SQL function, with the
function's variables as placeholders; the test renders it once with literal
values (what EXPLAIN sees) and once with the variable names, and checks that
the second still occurs in the function's source — so a change to the
function makes this test say that its copy is out of date instead of quietly
checking an old query.

One database is loaded once for the module (set-based INSERT ... SELECT
generate_series, then ANALYZE): 2,000 succeeded runs x 50 tasks = 100k
succeeded task runs, 100k task events, 100k published outbox messages; then a
few live runs (ready and running tasks) and a few pending outbox messages.
"""

from __future__ import annotations

import json
import re
import time

import psycopg
import pytest

from conftest import create_migrated_database, drop_database
from helpers_core import DEFAULT_ORG, claim, connect, define, reap, single_spec, start_run

N_RUNS = 2000
TASKS_PER_RUN = 50
N_FINISHED = N_RUNS * TASKS_PER_RUN  # 100k
N_LIVE = 5
N_RUNNING = 2
N_PENDING_OUTBOX = 3

# --- copies of the statements inside the functions ------------------------------
# {name} placeholders: `literal` is what EXPLAIN runs, `source` what the function says.

# Selectors and affinity, as every claim filters them (an unregistered caller: no labels, not registered).
CLAIM_FILTERS = """
  AND (tr.worker_params IS NULL OR {labels} @> tr.worker_params)
  AND (tr.affinity_key IS NULL
       OR ({registered} AND NOT flowforge._pinned_elsewhere({org}, tr.affinity_key,
                                                           tr.affinity_policy, {worker}, {now})))
"""
CLAIM_FILTERS_LITERAL = {"labels": "'{}'::jsonb", "registered": "false", "worker": "'explain-worker'"}
CLAIM_FILTERS_SOURCE = {"labels": "v_agent.labels", "registered": "v_agent.registered", "worker": "claim.worker"}

CLAIM_ONE_QUEUE = """
SELECT tr.id, tr.affinity_key FROM flowforge.task_run tr
WHERE tr.organization_id = {org} AND tr.state = 'ready' AND tr.queue = {queue}
  AND tr.ready_at <= {now}
""" + CLAIM_FILTERS + """
ORDER BY tr.priority, tr.ready_at
LIMIT {batch}
FOR UPDATE SKIP LOCKED
"""
CLAIM_ONE_QUEUE_SOURCE = {"org": "v_org", "queue": "claim.queues[1]", "now": "v_now", "batch": "claim.batch",
                          **CLAIM_FILTERS_SOURCE}

CLAIM_MANY_QUEUES_FROM = """
SELECT c.id, c.affinity_key FROM (SELECT DISTINCT u.name FROM unnest({queues}) AS u(name)) AS q(name)
"""
# Only this part is checked against the function's text: it is what reads task_run.
CLAIM_MANY_QUEUES = """
CROSS JOIN LATERAL (
    SELECT tr.id, tr.priority, tr.ready_at, tr.affinity_key FROM flowforge.task_run tr
    WHERE tr.organization_id = {org} AND tr.state = 'ready' AND tr.queue = q.name
      AND tr.ready_at <= {now}
""" + CLAIM_FILTERS + """
    ORDER BY tr.priority, tr.ready_at
    LIMIT {batch}
    FOR UPDATE SKIP LOCKED) c
ORDER BY c.priority, c.ready_at
LIMIT {batch}
"""
CLAIM_MANY_QUEUES_SOURCE = {"org": "v_org", "now": "v_now", "batch": "claim.batch", **CLAIM_FILTERS_SOURCE}

# The duty behind reap_expired_leases and tick (every organization: orgs NULL).
REAPER_CANDIDATES = """
SELECT tr.id, tr.workflow_run_id, tr.organization_id
FROM flowforge.task_run tr
WHERE tr.state = 'running' AND tr.lease_expires_at < {now}
  AND ({orgs} IS NULL OR tr.organization_id = ANY ({orgs}))
ORDER BY tr.lease_expires_at
LIMIT {max_rows}
"""
REAPER_CANDIDATES_SOURCE = {"now": "v_now", "max_rows": "p_max", "orgs": "p_orgs"}

OUTBOX_DRAIN = """
SELECT m.id FROM flowforge.outbox_message m
WHERE m.published_at IS NULL AND m.next_attempt_at <= {now}
ORDER BY m.next_attempt_at
LIMIT {batch}
FOR UPDATE SKIP LOCKED
"""
OUTBOX_DRAIN_SOURCE = {"batch": "take_outbox.batch", "now": "v_now"}

RUN_EVENTS_PER_TASK = """
SELECT ev.* FROM flowforge.task_run t
JOIN flowforge.task_run_event ev ON ev.task_run_id = t.id
WHERE t.workflow_run_id = {run_id} AND t.organization_id = {org} AND ev.organization_id = {org}
"""
RUN_EVENTS_PER_TASK_SOURCE = {"run_id": "run_events.run_id", "org": "v_org"}


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _function_source(conn: psycopg.Connection, signature: str) -> str:
    return conn.execute("SELECT prosrc FROM pg_proc WHERE oid = %s::regprocedure", (signature,)).fetchone()[0]


def _plan_nodes(plan: dict):
    yield plan
    for child in plan.get("Plans", []):
        yield from _plan_nodes(child)


def _explain(conn: psycopg.Connection, query: str, as_owner_of: str, prepare: str | None = None) -> list[dict]:
    """EXPLAIN (FORMAT JSON) the query as the role owning the SECURITY DEFINER function it
    comes from, so the row-level security policies that apply inside the function are in
    the plan (a superuser would bypass them). With prepare, the statement is PREPAREd and
    its generic plan explained (PL/pgSQL may switch to it after five calls)."""
    owner = conn.execute(
        "SELECT proowner::regrole::text FROM pg_proc WHERE oid = %s::regprocedure", (as_owner_of,)).fetchone()[0]
    with conn.transaction():
        conn.execute(f'SET LOCAL ROLE "{owner}"')
        # What an API call has cached once it has authorized its caller (see flowforge._authorize).
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


def _describe(nodes: list[dict]) -> str:
    return "; ".join(
        f"{n['Node Type']}" + (f" on {n['Relation Name']}" if "Relation Name" in n else "")
        + (f" using {n['Index Name']}" if "Index Name" in n else "")
        for n in nodes
    )


def _assert_uses_index(nodes: list[dict], index: str, table: str) -> None:
    used = {n.get("Index Name") for n in nodes}
    assert index in used, f"plan does not use {index}: {_describe(nodes)}"
    seq = [n for n in nodes if n["Node Type"] == "Seq Scan" and n.get("Relation Name") == table]
    assert not seq, f"plan has a Seq Scan on {table}: {_describe(nodes)}"


def _check_copy(conn: psycopg.Connection, signature: str, template: str, source_names: dict) -> None:
    source = _squash(_function_source(conn, signature))
    expected = _squash(template.format(**source_names))
    assert expected in source, (
        f"the copy of {signature}'s query in this test is out of date; update it from sql/functions.\n"
        f"expected to find: {expected}"
    )


@pytest.fixture(scope="module")
def loaded(admin_dsn, migrated_template):
    """A migrated database with 100k finished task runs plus a few live ones, analyzed."""
    admin = admin_dsn
    name, dsn = create_migrated_database(admin, migrated_template)
    try:
        t0 = time.monotonic()
        with connect(dsn) as conn:
            bulk = define(conn, {"name": "bulk", "tasks": [{"key": f"t{i}"} for i in range(TASKS_PER_RUN)]})
            define(conn, single_spec("live"))
            with conn.transaction():
                conn.execute(
                    """
                    INSERT INTO flowforge.workflow_run (organization_id, workflow_id, state, input, tasks_total,
                                                        tasks_remaining, created_at, started_at, finished_at)
                    SELECT %(org)s, %(wf)s, 'succeeded', jsonb_build_object('g', g), %(n)s, 0,
                           ts, ts, ts + interval '1 minute'
                    FROM generate_series(1, %(runs)s) g,
                         LATERAL (SELECT now() - interval '30 days' + g * interval '1 minute' AS ts) t
                    """,
                    {"org": DEFAULT_ORG, "wf": bulk, "n": TASKS_PER_RUN, "runs": N_RUNS},
                )
                # Every run is in the run directory, as start_run records it.
                conn.execute(
                    """
                    INSERT INTO flowforge.engine_run (organization_id, run_id, engine_kind, definition_id, created_at,
                                                      created_by, ended_at)
                    SELECT r.organization_id, r.id, 'dag', r.workflow_id, r.created_at, 'explain', r.finished_at
                    FROM flowforge.workflow_run r WHERE r.workflow_id = %s
                    """,
                    (bulk,),
                )
                conn.execute(
                    """
                    INSERT INTO flowforge.task_run (organization_id, workflow_run_id, task_id, task_key, queue,
                                                    priority, state, attempt, max_attempts, fencing_token, ready_at,
                                                    remaining_deps, output, created_at, started_at, finished_at)
                    SELECT r.organization_id, r.id, t.id, t.key, t.queue, t.priority, 'succeeded', 1, t.max_attempts,
                           1, r.created_at, 0, '{"ok": true}', r.created_at,
                           r.created_at + interval '1 second', r.created_at + interval '2 seconds'
                    FROM flowforge.workflow_run r JOIN flowforge.task t ON t.workflow_id = r.workflow_id
                    WHERE r.workflow_id = %s
                    """,
                    (bulk,),
                )
                conn.execute(
                    """
                    INSERT INTO flowforge.task_run_event (organization_id, workflow_run_id, task_run_id, kind,
                                                          from_state, to_state, fencing_token, attempt, created_at)
                    SELECT tr.organization_id, tr.workflow_run_id, tr.id, 'completed', 'running', 'succeeded', 1, 1,
                           tr.finished_at
                    FROM flowforge.task_run tr
                    """
                )
                conn.execute(
                    """
                    INSERT INTO flowforge.task_run_event (organization_id, workflow_run_id, task_run_id, kind,
                                                          from_state, to_state, created_at)
                    SELECT r.organization_id, r.id, NULL, k.kind, k.from_state, k.to_state, r.created_at
                    FROM flowforge.workflow_run r
                    CROSS JOIN (VALUES ('run_started', NULL, 'running'), ('run_succeeded', 'running', 'succeeded'))
                               AS k(kind, from_state, to_state)
                    """
                )
                conn.execute(
                    """
                    INSERT INTO flowforge.outbox_message (organization_id, task_run_id, workflow_run_id, exchange,
                                                          routing_key, payload, fencing_token_snapshot,
                                                          attempt_snapshot, published_at, created_at)
                    SELECT tr.organization_id, tr.id, tr.workflow_run_id, 'flowforge', tr.queue,
                           jsonb_build_object('task_run_id', tr.id), 1, 1,
                           tr.created_at + interval '1 second', tr.created_at
                    FROM flowforge.task_run tr
                    """
                )
            for i in range(N_LIVE):
                start_run(conn, "live", {"i": i})
            running = claim(conn, ["default"], "explain-holder", "1 hour", N_RUNNING)
            assert len(running) == N_RUNNING
            conn.execute(
                """
                INSERT INTO flowforge.outbox_message (organization_id, task_run_id, workflow_run_id, exchange,
                                                      routing_key, payload, fencing_token_snapshot, attempt_snapshot,
                                                      created_at)
                SELECT tr.organization_id, tr.id, tr.workflow_run_id, 'flowforge', tr.queue,
                       jsonb_build_object('task_run_id', tr.id), 2, 1, now()
                FROM flowforge.task_run tr WHERE tr.task_key = 't0' LIMIT %s
                """,
                (N_PENDING_OUTBOX,),
            )
            conn.execute("ANALYZE")
            counts = dict(conn.execute(
                "SELECT state::text, count(*) FROM flowforge.task_run GROUP BY state").fetchall())
            assert counts == {"succeeded": N_FINISHED, "ready": N_LIVE - N_RUNNING, "running": N_RUNNING}
        print(f"\nloaded {N_FINISHED} finished task runs in {time.monotonic() - t0:.1f}s")
        yield dsn
    finally:
        drop_database(admin, name)


@pytest.fixture
def conn(loaded):
    with connect(loaded) as c:
        yield c


CLAIM = "flowforge.claim(text[],text,interval,integer,text[])"
REAPER = "flowforge._reap_task_leases(uuid[],integer,timestamp with time zone)"
TAKE_OUTBOX = "flowforge.take_outbox(integer,interval)"
RUN_EVENTS = "flowforge.run_events(uuid)"
ORG = f"'{DEFAULT_ORG}'::uuid"


def test_claim_one_queue_uses_idx_taskrun_state_age(conn):
    _check_copy(conn, CLAIM, CLAIM_ONE_QUEUE, CLAIM_ONE_QUEUE_SOURCE)
    nodes = _explain(conn, CLAIM_ONE_QUEUE.format(org=ORG, queue="'default'", now="now()", batch=10,
                                                  **CLAIM_FILTERS_LITERAL), CLAIM)
    _assert_uses_index(nodes, "idx_taskrun_state_age", "task_run")


def test_claim_one_queue_generic_plan_uses_idx_taskrun_state_age(conn):
    prepare = "PREPARE claim_one(uuid, text, timestamptz, integer) AS " + CLAIM_ONE_QUEUE.format(
        org="$1", queue="$2", now="$3", batch="$4", **CLAIM_FILTERS_LITERAL)
    nodes = _explain(conn, f"EXECUTE claim_one({ORG}, 'default', now(), 10)", CLAIM, prepare)
    _assert_uses_index(nodes, "idx_taskrun_state_age", "task_run")


def test_claim_many_queues_uses_idx_taskrun_state_age(conn):
    _check_copy(conn, CLAIM, CLAIM_MANY_QUEUES, CLAIM_MANY_QUEUES_SOURCE)
    query = CLAIM_MANY_QUEUES_FROM.format(queues="ARRAY['default', 'other']::text[]") + CLAIM_MANY_QUEUES.format(
        org=ORG, now="now()", batch=10, **CLAIM_FILTERS_LITERAL)
    nodes = _explain(conn, query, CLAIM)
    _assert_uses_index(nodes, "idx_taskrun_state_age", "task_run")


def test_reaper_candidates_use_idx_taskrun_lease_expiry(conn):
    _check_copy(conn, REAPER, REAPER_CANDIDATES, REAPER_CANDIDATES_SOURCE)
    nodes = _explain(conn, REAPER_CANDIDATES.format(now="now()", max_rows=1000, orgs="NULL::uuid[]"), REAPER)
    _assert_uses_index(nodes, "idx_taskrun_lease_expiry", "task_run")

    prepare = "PREPARE reap_candidates(timestamptz, integer, uuid[]) AS " + REAPER_CANDIDATES.format(
        now="$1", max_rows="$2", orgs="$3")
    nodes = _explain(conn, "EXECUTE reap_candidates(now(), 1000, NULL)", REAPER, prepare)
    _assert_uses_index(nodes, "idx_taskrun_lease_expiry", "task_run")


def test_outbox_drain_uses_idx_outbox_pending(conn):
    _check_copy(conn, TAKE_OUTBOX, OUTBOX_DRAIN, OUTBOX_DRAIN_SOURCE)
    nodes = _explain(conn, OUTBOX_DRAIN.format(batch=100, now="now()"), TAKE_OUTBOX)
    _assert_uses_index(nodes, "idx_outbox_pending", "outbox_message")


def test_run_events_per_task_lookup_uses_idx_event_taskrun_created(conn):
    _check_copy(conn, RUN_EVENTS, RUN_EVENTS_PER_TASK, RUN_EVENTS_PER_TASK_SOURCE)
    run_id = conn.execute(
        "SELECT id FROM flowforge.workflow_run WHERE state = 'succeeded' ORDER BY created_at LIMIT 1 OFFSET 1000"
    ).fetchone()[0]
    nodes = _explain(conn, RUN_EVENTS_PER_TASK.format(run_id=f"'{run_id}'::uuid", org=ORG), RUN_EVENTS)
    # task_run_event is partitioned by month (0032): a task run's events are looked up in every month's copy of
    # the index (no time bound prunes them); the months ahead are empty, and the planner reads an empty table
    # whole at no cost. Every partition holding rows must be read through its idx_event_taskrun_created copy.
    used = {n.get("Index Name") or "" for n in nodes}
    assert any(re.fullmatch(r"idx_event_taskrun_created(_p\d{6}|_default)?", u) for u in used), _describe(nodes)
    for node in nodes:
        if node["Node Type"] == "Seq Scan":
            rel = node.get("Relation Name") or ""
            assert rel.startswith("task_run_event_p"), f"a Seq Scan on {rel}: {_describe(nodes)}"
            held = conn.execute(f"SELECT count(*) FROM flowforge_history.{rel}").fetchone()[0]
            assert held == 0, f"a Seq Scan on {rel}, which holds {held} rows: {_describe(nodes)}"
    events = conn.execute("SELECT kind FROM flowforge.run_events(%s::uuid)", (run_id,)).fetchall()
    assert len(events) == 2 + TASKS_PER_RUN


def test_api_works_at_this_size(conn):
    """claim, the reaper and the outbox drain, called for real on the loaded database."""
    rows = claim(conn, ["default"], "explain-worker", "30 seconds", 10)
    assert len(rows) == N_LIVE - N_RUNNING
    assert {r[2] for r in rows} == {"only"}
    assert reap(conn) == 0  # the running ones hold an hour-long lease
    with conn.transaction():
        pending = conn.execute("SELECT id FROM flowforge.take_outbox(100)").fetchall()
    assert len(pending) == N_PENDING_OUTBOX
