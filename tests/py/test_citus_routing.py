"""Under Citus, the hot path's statements route to one node (issue 21, docs/scale.md §6).

Citus runs a statement on the one node holding a tenant when every distributed
table in it is filtered on organization_id, and refuses a multi-shard
``FOR UPDATE``. ``benchmarks/router_audit.py`` runs the typical workflows of
every engine kind and the calls around them — heartbeats, failures for good
(a DAG task, a fan-out child, a machine action), cancel and retry, the reapers,
a due cron trigger and machine timer, tick, the drain, the reads — under
auto_explain, and lists every scan of a distributed table (one with
organization_id that §2 does not plan as a reference table) with no
organization_id in its condition or an enclosing join's.

This test runs that audit on a fresh database and holds it to §6: the API calls
of the hot path list nothing, and what is listed at all is exactly what §6
keeps open — the daemon's drain across organizations, and the operator's read
of which organization a run belongs to. A statement that loses its
organization filter fails here, named by API call, function and text.
"""

from __future__ import annotations

import sys
from pathlib import Path

import psycopg
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import router_audit  # noqa: E402  (benchmarks/ is not a package)
import workloads  # noqa: E402

# docs/scale.md §6 "Still open": API call -> the functions whose statements may not route, and why.
STILL_OPEN = {
    # The daemon's drain reads and writes outbox rows of every organization it serves in one statement.
    "take_outbox": {"take_outbox"},
    "mark_published": {"mark_published"},
    "defer_outbox": {"defer_outbox"},
    # The operator (the audit runs as the superuser) reads any organization's run: which one, by run id alone.
    "get_run": {"_run_organization"},
    "run_events": {"_run_organization"},
}

# The calls a tenant's workers, apps and the daemon's duties make in volume: none may list anything.
HOT_PATH = ("start_run", "claim", "heartbeat", "complete", "complete_many", "fail", "claim_work", "heartbeat_work",
            "complete_work", "fail_work", "send_event", "cancel_run", "retry_run", "tick", "reap_expired_leases",
            "register_agent", "agent_heartbeat", "create_trigger")


def _listing(results: dict, calls) -> str:
    return "\n".join(f"  {call}: {function}: {query} [{', '.join(sorted(tables))}]"
                     for call in sorted(calls) for (function, query), tables in sorted(results.get(call, {}).items()))


@pytest.fixture(scope="module")
def audited(admin_dsn):
    from conftest import create_database, drop_database
    from flowforge import migrate

    name, dsn = create_database(admin_dsn)
    try:
        migrate.migrate(dsn)
        router_audit.prepare(dsn)
        results = router_audit.audit(dsn)
        yield dsn, results
    finally:
        drop_database(admin_dsn, name)


def test_the_audit_ran_what_it_claims(audited):
    """A vacuous audit proves nothing: the paths it is there for ran, and it does see what §6 keeps open."""
    dsn, results = audited
    with psycopg.connect(dsn) as conn:
        def count(query: str) -> int:
            return conn.execute(query).fetchone()[0]

        assert count("SELECT count(*) FROM flowforge.task_run_event WHERE kind = 'lease_expired' "
                     "AND task_run_id IS NOT NULL") >= 2, "the reaper took back an expired task lease and a dispatch"
        assert count("SELECT count(*) FROM flowforge.task_run_event WHERE kind = 'lease_expired' "
                     "AND work_item_id IS NOT NULL") >= 1, "the item reaper took back an expired work item"
        assert count("SELECT count(*) FROM flowforge.trigger_firing") >= 1, "the cron duty fired"
        assert count("SELECT count(*) FROM flowforge.machine_transition WHERE cause = 'timer'") >= 1, \
            "a machine timer fired"
        assert count("SELECT count(*) FROM flowforge.checkpoint WHERE outcome = 'failed'") >= 1, "a fan-out failed"
        assert count("SELECT count(*) FROM flowforge.task_run WHERE state = 'skipped'") >= 1, \
            "a task failed for good skipped its dependents"
        assert count("SELECT count(*) FROM flowforge.outbox_message WHERE published_at IS NOT NULL") >= 3, \
            "push tasks were dispatched and published"
    assert "take_outbox" in results, "the audit no longer sees the drain's cross-organization pick (§6 keeps it)"


def test_the_hot_path_routes_to_one_node(audited):
    _, results = audited
    listed = [call for call in HOT_PATH if results.get(call)]
    assert listed == [], "statements of the hot path without organization_id:\n" + _listing(results, listed)


def test_only_what_scale_md_keeps_open_does_not_route(audited):
    _, results = audited
    unexpected = {call: rows for call, rows in results.items()
                  if {function for function, _ in rows} - STILL_OPEN.get(call, set())}
    assert unexpected == {}, ("statements without organization_id that docs/scale.md §6 does not list as open:\n"
                              + _listing(results, unexpected))


def test_a_statement_that_loses_its_organization_filter_is_named(migrated_dsn):
    """The audit is not blind to the statements it passes: take the filter out of complete's run update (the
    statement that settles the run) and it is listed."""
    router_audit.prepare(migrated_dsn)
    signature = "flowforge.complete(uuid,bigint,jsonb)"
    with psycopg.connect(migrated_dsn, autocommit=True) as conn:
        definition = conn.execute("SELECT pg_get_functiondef(%s::regprocedure)", (signature,)).fetchone()[0]
        assert definition.count("AND r.organization_id = v_org AND r.state") == 1
        conn.execute(definition.replace("AND r.organization_id = v_org AND r.state", "AND r.state"))

    def one_task(api, conn, expire) -> None:
        api.start_run(workloads.SPECS["single"]["name"])
        (task,) = api.claim([workloads.QUEUE], "audit-agent")
        api.complete(task.task_run_id, task.fencing_token, {"ok": True})

    results = router_audit.audit(migrated_dsn, one_task)
    assert {function for function, _ in results.get("complete", {})} == {"complete"}, _listing(results, results)
