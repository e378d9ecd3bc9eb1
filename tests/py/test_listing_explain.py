"""Every listing is newest first from one ordered index range: no Sort, no OFFSET (issue 19).

The plans checked are the real ones: each listing function is called and
auto_explain (nested statements, JSON, ANALYZE with buffers, no timing) logs
the plan of the statement inside it, so there is no copy of a query here to
drift from the function's text.

One database is loaded for the module with one INSERT ... SELECT
generate_series per table (FK checks and the directory's definition_name
trigger off for the load, with session_replication_role = replica; the
secondary indexes of the loaded tables dropped first and rebuilt after, as a
sorted build is far cheaper than a million random inserts — same definitions,
same names; the ids are made in order from the series, so the primary and
unique keys kept during the load grow at their right edge), then ANALYZE:

- run directory (engine_run): 1,000,000 runs, 90% in the default organization
  — 97 creators, one real member login (1 run in 1,000), 20 workflows plus a
  rare one (1 in 5,000), one run in ten started by one of 50 triggers plus a
  rare trigger, dag / graph / statemachine 16:3:1, 1% deleted, two runs per
  second (ties broken by id); the newest 20,000 DAG runs have their run row;
- definitions (workflow), triggers, firings and agents: 100,000 rows each —
  what people define and register is far fewer than what runs, and the plan
  shape is the same above a few thousand rows.

Reads scoped to a member are run with the member's login as the session user
(SET SESSION AUTHORIZATION after the superuser-only auto_explain settings).
"""

from __future__ import annotations

import json
import uuid

import psycopg
import pytest
from psycopg import sql

from conftest import create_migrated_database, drop_database

DEFAULT_ORG = "00000000-0000-0000-0000-000000000001"
N_RUNS = 1_000_000
N_SMALL = 100_000
# A page of 50 read from one ordered index range touches a few hundred buffers
# (index pages, 50 heap rows, the joined run rows); a scan of the table would
# touch tens of thousands.
PAGE_BUFFERS = 2_000


def _index_ddl(conn: psycopg.Connection, table: str) -> list[tuple[str, str]]:
    """The secondary indexes of a table (not backing a constraint): name and definition."""
    return conn.execute(
        """
        SELECT c.relname, pg_get_indexdef(i.indexrelid) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
        WHERE i.indrelid = %s::regclass
          AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid)
        """,
        (table,),
    ).fetchall()


FILL = """
INSERT INTO flowforge.engine_run (id, organization_id, run_id, engine_kind, definition_id, definition_name,
                                  triggered_by, created_at, created_by, deleted_at, deleted_by)
SELECT ('00000000-0000-7000-8000-' || lpad(to_hex(g), 12, '0'))::uuid,
       CASE WHEN g %% 10 = 9 THEN %(other)s::uuid ELSE %(org)s::uuid END,
       ('00000000-0000-4000-8000-' || lpad(to_hex(g), 12, '0'))::uuid,
       CASE WHEN (g / 10) %% 20 < 16 THEN 'dag' WHEN (g / 10) %% 20 < 19 THEN 'graph' ELSE 'statemachine' END,
       d.ids[CASE WHEN g %% 5000 = 1 THEN 21 ELSE (g / 7) %% 20 + 1 END],
       d.names[CASE WHEN g %% 5000 = 1 THEN 21 ELSE (g / 7) %% 20 + 1 END],
       CASE WHEN g %% 7919 = 0 THEN 'lx-rare' WHEN g %% 10 = 3 THEN 'lx-hook-' || (g %% 50) END,
       timestamptz '2030-01-01 00:00:00+00' - (g / 2) * interval '1 second',
       CASE WHEN g %% 1000 = 7 THEN %(member)s ELSE 'member-' || (g %% 97) END,
       CASE WHEN g %% 100 = 42 THEN timestamptz '2030-02-01 00:00:00+00' END,
       CASE WHEN g %% 100 = 42 THEN 'member-1' END
FROM generate_series(1, %(runs)s) g
CROSS JOIN (SELECT array_agg(w.id ORDER BY w.name = 'lx_rare', w.created_at) AS ids,
                   array_agg(w.name::text ORDER BY w.name = 'lx_rare', w.created_at) AS names
            FROM flowforge.workflow w WHERE w.name ~ '^lx_(w[0-9]+|rare)$') d;

INSERT INTO flowforge.workflow_run (id, organization_id, workflow_id, state, input, tasks_total, tasks_remaining,
                                    created_at, started_at, created_by)
SELECT e.run_id, e.organization_id, e.definition_id, 'running', '{}', 1, 1, e.created_at, e.created_at, e.created_by
FROM flowforge.engine_run e
WHERE e.organization_id = %(org)s AND e.engine_kind = 'dag'
ORDER BY e.created_at DESC, e.id DESC
LIMIT 20000;

INSERT INTO flowforge.workflow (organization_id, name, version, kind, spec, content_hash, created_at, created_by,
                                superseded_at, deleted_at, deleted_by)
SELECT %(org)s, 'lx_bulk_' || (g / 2), g %% 2 + 1, 'dag', '{"tasks": [{"key": "a"}]}', md5(g::text),
       timestamptz '2029-01-01 00:00:00+00' + g * interval '1 second', 'member-' || (g %% 97),
       CASE WHEN g %% 2 = 0 THEN timestamptz '2029-01-01 00:00:00+00' + (g + 1) * interval '1 second' END,
       CASE WHEN g %% 100 = 43 THEN timestamptz '2030-02-01 00:00:00+00' END, CASE WHEN g %% 100 = 43 THEN 'member-1' END
FROM generate_series(2, %(small)s + 1) g;

INSERT INTO flowforge.scheduled_trigger (organization_id, name, trigger_type, action, target, created_at, created_by,
                                         deleted_at, deleted_by)
SELECT %(org)s, 'lx-t-' || g, 'webhook', 'start', 'lx_w0', timestamptz '2029-01-01 00:00:00+00' + g * interval '1 second',
       'member-' || (g %% 97), CASE WHEN g %% 100 = 44 THEN timestamptz '2030-02-01 00:00:00+00' END,
       CASE WHEN g %% 100 = 44 THEN 'member-1' END
FROM generate_series(1, %(small)s) g;

INSERT INTO flowforge.trigger_firing (organization_id, trigger_name, trigger_type, action, outcome, run_id, fired_on,
                                      recorded_at, created_by)
SELECT %(org)s, 'lx-t-' || (g %% 500), 'webhook', 'start', 'started', ('00000000-0000-4000-9000-' || lpad(to_hex(g), 12, '0'))::uuid,
       timestamptz '2030-01-01 00:00:00+00' - g * interval '1 second', timestamptz '2030-01-01 00:00:00+00', 'lx'
FROM generate_series(1, %(small)s) g;

INSERT INTO flowforge.agent (organization_id, name, created_at, created_by)
SELECT %(org)s, 'lx-agent-' || lpad(g::text, 7, '0'), timestamptz '2029-01-01 00:00:00+00', 'lx'
FROM generate_series(1, %(small)s) g;
"""

LOADED_TABLES = ["flowforge.engine_run", "flowforge.workflow_run", "flowforge.workflow",
                 "flowforge.scheduled_trigger", "flowforge.trigger_firing", "flowforge.agent"]


@pytest.fixture(scope="module")
def loaded(admin_dsn, migrated_template):
    name, dsn = create_migrated_database(admin_dsn, migrated_template)
    member = f"ff_lx_member_{uuid.uuid4().hex[:8]}"
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(member)))
            conn.execute("SELECT flowforge.add_member('default', %s, 'member')", (member,))
            other = conn.execute("SELECT flowforge.create_organization('lx-other', 'Other')").fetchone()[0]
            for w in [f"lx_w{i}" for i in range(20)] + ["lx_rare"]:
                conn.execute("SELECT flowforge.define_workflow(%s::jsonb)",
                             (json.dumps({"name": w, "tasks": [{"key": "a"}]}),))
            with conn.transaction():
                conn.execute("SET LOCAL session_replication_role = replica")
                conn.execute("SET LOCAL maintenance_work_mem = '256MB'")
                rebuild = [ddl for table in LOADED_TABLES for ddl in _index_ddl(conn, table)]
                for index, _ in rebuild:
                    conn.execute(sql.SQL("DROP INDEX flowforge.{}").format(sql.Identifier(index)))
                for statement in FILL.split(";\n\n"):
                    conn.execute(statement, {"org": DEFAULT_ORG, "other": other, "member": member,
                                             "runs": N_RUNS, "small": N_SMALL})
                # pg_get_indexdef names a partitioned table's index ON ONLY the
                # parent (0038 built them that way, partition by partition);
                # rebuilt without ONLY, each month's copy is built with it.
                for _, ddl in rebuild:
                    conn.execute(ddl.replace(" ON ONLY ", " ON ", 1))
            for table in LOADED_TABLES:
                conn.execute(f"ANALYZE {table}")
            cursors = {
                "runs": conn.execute(
                    "SELECT flowforge._cursor('runs', created_at, id) FROM flowforge.engine_run "
                    "WHERE organization_id = %s ORDER BY created_at DESC, id DESC OFFSET 450000 LIMIT 1",
                    (DEFAULT_ORG,)).fetchone()[0],
                "member": conn.execute(
                    "SELECT flowforge._cursor('runs', created_at, id) FROM flowforge.engine_run "
                    "WHERE created_by = %s ORDER BY created_at DESC, id DESC OFFSET 450 LIMIT 1",
                    (member,)).fetchone()[0],
                "workflows": conn.execute(
                    "SELECT flowforge._cursor('workflows', created_at, id) FROM flowforge.workflow "
                    "WHERE superseded_at IS NULL ORDER BY created_at DESC, id DESC OFFSET 25000 LIMIT 1").fetchone()[0],
                "triggers": conn.execute(
                    "SELECT flowforge._cursor('triggers', created_at, id) FROM flowforge.scheduled_trigger "
                    "ORDER BY created_at DESC, id DESC OFFSET 50000 LIMIT 1").fetchone()[0],
                "firings": conn.execute(
                    "SELECT flowforge._cursor('firings', fired_on, id) FROM flowforge.trigger_firing "
                    "ORDER BY fired_on DESC, id DESC OFFSET 50000 LIMIT 1").fetchone()[0],
                "agents": conn.execute("SELECT flowforge._cursor('agents', NULL, NULL, 'lx-agent-0050000')").fetchone()[0],
            }
            assert conn.execute("SELECT count(*) FROM flowforge.engine_run").fetchone()[0] == N_RUNS
        yield {"dsn": dsn, "member": member, "cursors": cursors}
    finally:
        drop_database(admin_dsn, name)
        with psycopg.connect(admin_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(member)))


def _nodes(plan: dict):
    yield plan
    for child in plan.get("Plans", []):
        yield from _nodes(child)


def _explained(dsn: str, call: str, params: dict, marker: str, as_role: str | None = None) -> tuple[list, dict]:
    """Run a listing; return its rows and the auto_explain JSON of its statement containing marker."""
    logged: list[str] = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("LOAD 'auto_explain'")
        for setting, value in (("auto_explain.log_min_duration", "0"), ("auto_explain.log_nested_statements", "on"),
                               ("auto_explain.log_analyze", "on"), ("auto_explain.log_buffers", "on"),
                               ("auto_explain.log_timing", "off"), ("auto_explain.log_format", "json")):
            conn.execute(f"SET {setting} = '{value}'")
        if as_role is not None:
            conn.execute(sql.SQL("SET SESSION AUTHORIZATION {}").format(sql.Identifier(as_role)))
        conn.execute("SET client_min_messages = log")
        conn.add_notice_handler(lambda diag: logged.append(diag.message_primary or ""))
        rows = conn.execute(call, params).fetchall()
        conn.execute("RESET SESSION AUTHORIZATION")
        # A partitioned table (0032's history) is scanned month by month: each
        # partition and each copy of an index is named for its root here.
        roots = dict(conn.execute(
            "SELECT c.relname::text, r.relname::text FROM pg_class c JOIN pg_class r ON r.oid = pg_partition_root(c.oid) "
            "WHERE c.relnamespace IN ('flowforge'::regnamespace, 'flowforge_history'::regnamespace) AND r.oid <> c.oid").fetchall())
    docs = [json.loads(m[m.index("{"):]) for m in logged if "{" in m]
    mine = [d for d in docs if marker in d.get("Query Text", "")]
    assert len(mine) == 1, f"expected one explained statement containing {marker!r}, got {len(mine)}"
    for node in _nodes(mine[0]["Plan"]):
        for key in ("Relation Name", "Index Name"):
            if key in node:
                node[key] = roots.get(node[key], node[key])
    return rows, mine[0]


def _check(doc: dict, table: str, index: str, *, max_buffers: int | None = PAGE_BUFFERS) -> None:
    nodes = list(_nodes(doc["Plan"]))
    described = "; ".join(n["Node Type"] + (f" on {n['Relation Name']}" if "Relation Name" in n else "")
                          + (f" using {n['Index Name']}" if "Index Name" in n else "") for n in nodes)
    assert not [n for n in nodes if n["Node Type"] in ("Sort", "Incremental Sort")], f"a sort in the plan: {described}"
    assert not [n for n in nodes if n["Node Type"] == "Seq Scan" and n.get("Relation Name") == table], \
        f"a sequential scan of {table}: {described}"
    assert index in {n.get("Index Name") for n in nodes}, f"{index} not used: {described}"
    assert "OFFSET" not in doc["Query Text"].upper(), "the listing pages by OFFSET"
    if max_buffers is not None:
        top = doc["Plan"]
        touched = top.get("Shared Hit Blocks", 0) + top.get("Shared Read Blocks", 0)
        assert touched < max_buffers, f"the page touched {touched} buffers: {described}"


RUNS = "ORDER BY e.created_at DESC, e.id DESC"

RUN_CASES = [
    # (id, arguments, index, rows expected, buffer bound)
    ("organization", {}, "engine_run_tenant_created", 50, PAGE_BUFFERS),
    ("workflow", {"workflow": "lx_rare"}, "engine_run_tenant_definition_created", 50, PAGE_BUFFERS),
    ("trigger", {"trigger_name": "lx-rare"}, "engine_run_tenant_trigger_created", 50, PAGE_BUFFERS),
    ("creator", {"creator": "member-5"}, "engine_run_tenant_creator_created", 50, PAGE_BUFFERS),
    ("kind", {"of_kind": "statemachine"}, "engine_run_tenant_created", 50, PAGE_BUFFERS),
    ("include_deleted", {"include_deleted": True}, "engine_run_tenant_created", 50, PAGE_BUFFERS),
    ("workflow_and_kind", {"workflow": "lx_w3", "of_kind": "graph"}, "engine_run_tenant_definition_created", 50,
     PAGE_BUFFERS),
    # with_state lives in each engine's run row, not in the directory: the order still comes from the index, the
    # state is a filter on it (no sort, no offset; how far it reads depends on how rare the state is).
    ("state", {"with_state": "running"}, "engine_run_tenant_created", 50, None),
]


@pytest.mark.parametrize("case", RUN_CASES, ids=[c[0] for c in RUN_CASES])
def test_list_runs_is_one_ordered_index_range(loaded, case):
    _, args, index, expected, bound = case
    named = ", ".join(f"{k} => %({k})s" for k in args)
    rows, doc = _explained(loaded["dsn"], f"SELECT id, created_at FROM flowforge.list_runs({named})", args, RUNS)
    assert len(rows) == expected
    assert [r[1] for r in rows] == sorted((r[1] for r in rows), reverse=True), "not newest first"
    _check(doc, "engine_run", index, max_buffers=bound)


@pytest.mark.parametrize("filters", [{}, {"workflow": "lx_w3"}, {"of_kind": "dag"}], ids=["all", "workflow", "kind"])
def test_a_deep_page_starts_at_its_cursor(loaded, filters):
    """Half a million rows in: the cursor is an index condition, the page costs what the first one does."""
    args = {**filters, "after": loaded["cursors"]["runs"]}
    named = ", ".join(f"{k} => %({k})s" for k in args)
    rows, doc = _explained(loaded["dsn"], f"SELECT id FROM flowforge.list_runs({named})", args, RUNS)
    assert len(rows) == 50
    _check(doc, "engine_run", "engine_run_tenant_definition_created" if "workflow" in filters
           else "engine_run_tenant_created")
    conds = " ".join(n.get("Index Cond", "") for n in _nodes(doc["Plan"]))
    assert "ROW(created_at, id) <" in conds, f"the cursor is not an index condition: {conds}"


@pytest.mark.parametrize("after", [False, True], ids=["first_page", "deep_page"])
def test_a_member_reads_its_own_runs_from_the_creator_index(loaded, after):
    """The member role's scope (created_by = the caller) is the leading column of its own index."""
    args = {"after": loaded["cursors"]["member"] if after else None}
    rows, doc = _explained(loaded["dsn"], "SELECT id, created_by FROM flowforge.list_runs(after => %(after)s)",
                           args, RUNS, as_role=loaded["member"])
    assert len(rows) == 50 and {r[1] for r in rows} == {loaded["member"]}
    _check(doc, "engine_run", "engine_run_tenant_creator_created")


OTHER_CASES = [
    ("workflows", "SELECT name FROM flowforge.list_workflows(max_rows => 50, after => %(after)s)",
     "ORDER BY w.created_at DESC, w.id DESC", "workflow", "workflow_tenant_latest_created"),
    ("triggers", "SELECT name FROM flowforge.list_triggers(max_rows => 50, after => %(after)s)",
     "ORDER BY t.created_at DESC, t.id DESC", "scheduled_trigger", "scheduled_trigger_tenant_created"),
    ("firings", "SELECT name FROM flowforge.list_firings(max_rows => 50, after => %(after)s)",
     "ORDER BY f.fired_on DESC, f.id DESC", "trigger_firing", "trigger_firing_tenant_fired"),
    ("agents", "SELECT name FROM flowforge.list_agents(max_rows => 50, after => %(after)s)",
     "ORDER BY a.name", "agent", "agent_name_key"),
]


@pytest.mark.parametrize("deep", [False, True], ids=["first_page", "deep_page"])
@pytest.mark.parametrize("case", OTHER_CASES, ids=[c[0] for c in OTHER_CASES])
def test_every_other_listing_is_one_ordered_index_range(loaded, case, deep):
    listing, call, marker, table, index = case
    rows, doc = _explained(loaded["dsn"], call, {"after": loaded["cursors"][listing] if deep else None}, marker)
    assert len(rows) == 50
    _check(doc, table, index)


def test_list_firings_of_one_trigger_pages_on_its_index(loaded):
    rows, doc = _explained(loaded["dsn"], "SELECT name FROM flowforge.list_firings(trigger_name => 'lx-t-7')", {},
                           "ORDER BY f.fired_on DESC, f.id DESC")
    assert len(rows) == 50 and {r[0] for r in rows} == {"lx-t-7"}
    _check(doc, "trigger_firing", "trigger_firing_tenant_trigger")
