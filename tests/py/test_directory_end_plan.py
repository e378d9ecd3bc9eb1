"""A run's end reaches its directory row through the key, however many runs are live.

Regression: the statements that stamp engine_run.ended_at (first write wins) said
``AND e.ended_at IS NULL``. That predicate made the partial index
engine_run_live_created (organization_id, created_at) WHERE ended_at IS NULL usable,
and on tables not analysed yet (a fresh installation, a bulk enqueue) the generic
plan chose it and walked every live run of the organization on each run's end
(auto_explain, 10,000 runs queued: 9,997 rows filtered, 1.2 ms per completion). The statements now keep the first end by coalesce, so only
engine_run_tenant_run_uq (organization_id, run_id) fits.

complete stamps a run's end in a statement of its own, run only when the task it
completed was the run's last (the DAG's hook inline): a third copy, keyed like
_record_run_ended's; _graph_finish (a graph run's end, one statement) a fourth. Each statement below is checked against its function's source (test_core_explain's
copy check), then its generic plan is explained as the function's owner on a
database holding 5,000 live runs and no statistics (no ANALYZE: the case that chose
the walk).
"""

from __future__ import annotations

import pytest

from conftest import create_migrated_database, drop_database
from helpers_core import DEFAULT_ORG, connect, define, single_spec
from test_core_explain import _assert_uses_index, _check_copy, _describe, _explain

N_LIVE = 5000
ORG = f"'{DEFAULT_ORG}'::uuid"

RECORD_RUN_ENDED = "flowforge._record_run_ended(uuid,uuid,timestamp with time zone)"
SETTLE_RUN = "flowforge._settle_run(uuid,uuid,integer,integer,timestamp with time zone)"

# _record_run_ended: cancel, the graph and machine engines, the reaper's settle.
ENDED = """
UPDATE flowforge.engine_run e SET ended_at = coalesce(e.ended_at, greatest({now}, e.created_at))
WHERE e.organization_id = {org} AND e.run_id = {run}
"""
ENDED_SOURCE = {"now": "p_now", "org": "p_org", "run": "p_run_id"}

# _settle_run's inline copy (complete's fast path), joined to the run it settled.
SETTLED_END = """
UPDATE flowforge.engine_run e SET ended_at = coalesce(e.ended_at, greatest({now}, e.created_at))
FROM settled s
WHERE s.state <> 'running' AND e.organization_id = s.organization_id AND e.run_id = {run}
"""
SETTLED_END_SOURCE = {"now": "p_now", "run": "p_run_id"}

COMPLETE = "flowforge.complete(uuid,bigint,jsonb)"
# complete's own copy, the same statement as _record_run_ended's with complete's names: it
# runs when the task it completed was its run's last.
COMPLETED_END_SOURCE = {"now": "v_now", "org": "v_org", "run": "v_task.workflow_run_id"}

GRAPH_FINISH = "flowforge._graph_finish(uuid,uuid,text,text,text,timestamp with time zone,jsonb,boolean)"
# _graph_finish's copy (every graph run's end), joined to the graph run it ends (the row it
# wrote, or the one the step into a final node wrote).
GRAPH_END = """
UPDATE flowforge.engine_run e SET ended_at = coalesce(e.ended_at, greatest({now}, e.created_at))
FROM ending g
WHERE e.organization_id = {org} AND e.run_id = g.run_id
"""
GRAPH_END_SOURCE = {"now": "p_now", "org": "p_org"}


@pytest.fixture(scope="module")
def live(admin_dsn, migrated_template):
    """A migrated database with N_LIVE queued single-task runs, never analysed."""
    name, dsn = create_migrated_database(admin_dsn, migrated_template)
    try:
        with connect(dsn) as conn:
            # No statistics, whatever autovacuum's timing: the case that chose the walk.
            conn.execute("ALTER TABLE flowforge.engine_run SET (autovacuum_enabled = false)")
            define(conn, single_spec("live"))
            conn.execute("SELECT count(flowforge.start_run('live', '{}'::jsonb)) FROM generate_series(1, %s)",
                         (N_LIVE,))
        yield dsn
    finally:
        drop_database(admin_dsn, name)


@pytest.fixture
def conn(live):
    with connect(live) as c:
        yield c


def _assert_keyed(nodes: list[dict]) -> None:
    used = {n.get("Index Name") for n in nodes if n.get("Relation Name") == "engine_run"}
    assert "engine_run_live_created" not in used, f"the end walks the live runs: {_describe(nodes)}"
    _assert_uses_index(nodes, "engine_run_tenant_run_uq", "engine_run")


@pytest.mark.parametrize("signature, source_names", [(RECORD_RUN_ENDED, ENDED_SOURCE), (COMPLETE, COMPLETED_END_SOURCE)],
                         ids=["record_run_ended", "complete"])
def test_keyed_end_uses_the_directory_key(conn, signature, source_names):
    _check_copy(conn, signature, ENDED, source_names)
    prepare = "PREPARE ended(timestamptz, uuid, uuid) AS " + ENDED.format(now="$1", org="$2", run="$3")
    nodes = _explain(conn, f"EXECUTE ended(now(), {ORG}, flowforge.uuid7())", signature, prepare)
    _assert_keyed(nodes)


# The copies joined to the row their statement's first part wrote: each with a CTE that
# stands for that row ($2 the organization, $3 the run), and its placeholders' values.
JOINED_COPIES = {
    "settle_run": (SETTLE_RUN, SETTLED_END, SETTLED_END_SOURCE,
                   "WITH settled AS (SELECT 'succeeded'::varchar AS state, $2::uuid AS organization_id) ",
                   {"now": "$1", "run": "$3"}),
    "graph_finish": (GRAPH_FINISH, GRAPH_END, GRAPH_END_SOURCE,
                     "WITH ending AS (SELECT $3::uuid AS run_id) ",
                     {"now": "$1", "org": "$2"}),
}


@pytest.mark.parametrize("copy", sorted(JOINED_COPIES))
def test_joined_end_uses_the_directory_key(conn, copy):
    signature, template, source_names, stand_in, params = JOINED_COPIES[copy]
    _check_copy(conn, signature, template, source_names)
    prepare = "PREPARE joined_end(timestamptz, uuid, uuid) AS " + stand_in + template.format(**params)
    nodes = _explain(conn, f"EXECUTE joined_end(now(), {ORG}, flowforge.uuid7())", signature, prepare)
    _assert_keyed(nodes)
