"""Which statements of the hot path would not route to one Citus node: a plan audit.

Citus runs a statement on the one node that holds a tenant's shards (a
router query) when every distributed table in it is filtered on the
distribution column, organization_id (docs/scale.md). This script runs the
typical workflows of ``workloads.py`` (every engine kind, push included),
the worker calls around them (heartbeat, fail and its retry, cancel and
retry), the daemon's tick() and the reads (get_run, run_events), with
auto_explain in the session (``log_nested_statements``, JSON plans sent to
the client as notices), and reads every plan: a scan of a table that has
organization_id counts as routed when organization_id appears in its own
condition or in the condition of a join above it; anything else is listed,
with the API call that ran it and the function whose text holds it.

Beyond the workloads' runs it drives what the hot path meets less often: a
DAG task failing for good (its dependents skipped), a failing fan-out child
(the fan-out fails, its siblings cancelled), a machine action failing, the
reapers (an expired task lease, a pushed task nobody took, an expired work
item), a due cron trigger, a due machine timer, and the daemon's drain.

The tables planned as reference tables although they have organization_id
(``membership``, ``api_key``, ``engine``: docs/scale.md §2) are on every node,
so a scan of one routes anywhere: they are not counted.

Row-level security would put ``organization_id = current_organization()`` in
every scan (and Citus cannot route on a function call): the throwaway
database turns FORCE ROW LEVEL SECURITY off, so the table owner's functions
show their own filters only. Nothing else is changed, and the database is
dropped at exit.

    python benchmarks/router_audit.py            # a table per API call, to stdout
    python benchmarks/router_audit.py --json     # the same as JSON
"""

from __future__ import annotations

import json
import re
import sys
import time
import uuid
from collections import defaultdict

import common as c
import workloads as w
from flowforge.client import Client

# docs/scale.md §2: reference tables (a copy on every node) that have organization_id all the same.
REFERENCE_TABLES = frozenset({"membership", "api_key", "engine"})
CONDITION_KEYS = ("Index Cond", "Filter", "Recheck Cond", "Hash Cond", "Merge Cond", "Join Filter", "TID Cond")
JOIN_KEYS = ("Hash Cond", "Merge Cond", "Join Filter")


def tenant_tables(conn) -> set[str]:
    """The tables distributed on organization_id (every table with it but §2's reference tables)."""
    return {r[0] for r in conn.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'organization_id' "
        "WHERE c.relnamespace = 'flowforge'::regnamespace AND c.relkind IN ('r', 'p')")} - REFERENCE_TABLES


def unrouted_scans(plan: dict, tenants: set[str]) -> list[str]:
    """Tables of ``tenants`` scanned in ``plan`` with no organization_id in its own or an enclosing join's
    condition."""
    found: list[str] = []

    def walk(node: dict, inherited: str) -> None:
        own = " ".join(str(node.get(k, "")) for k in CONDITION_KEYS)
        joins = inherited + " " + " ".join(str(node.get(k, "")) for k in JOIN_KEYS)
        rel = node.get("Relation Name")
        if rel in tenants and node.get("Node Type") != "ModifyTable" and "organization_id" not in own + " " + inherited:
            found.append(rel)
        for child in node.get("Plans", []):
            walk(child, joins)

    walk(plan["Plan"], "")
    return found


def function_of(conn, query: str, cache: dict[str, str]) -> str:
    """The flowforge functions whose source holds ``query`` (its first 50 non-blank characters). PL/pgSQL runs a
    ``SELECT ... INTO v_x`` without its INTO clause, so the sources are also searched without theirs."""
    key = re.sub(r"\s+", "", query)[:50]
    if key not in cache:
        names = [r[0] for r in conn.execute(
            "SELECT DISTINCT p.proname FROM pg_proc p WHERE p.pronamespace = 'flowforge'::regnamespace "
            "AND (strpos(regexp_replace(p.prosrc, '\\s+', '', 'g'), %(key)s) > 0 "
            "     OR strpos(regexp_replace(regexp_replace(p.prosrc, "
            "                   '\\s+INTO\\s+(STRICT\\s+)?v_\\w+(\\s*,\\s*v_\\w+)*', '', 'gi'), '\\s+', '', 'g'), "
            "               %(key)s) > 0) ORDER BY 1", {"key": key})]
        cache[key] = ", ".join(names) or "(not found)"
    return cache[key]


# The API calls traced: each names the plans its statements produce.
TRACED = ("start_run", "claim", "complete", "fail", "heartbeat", "claim_work", "complete_work", "fail_work",
          "heartbeat_work", "send_event", "take_outbox", "mark_published", "defer_outbox", "cancel_run",
          "retry_run", "get_run", "run_events", "tick", "register_agent", "agent_heartbeat", "complete_many",
          "reap_expired_leases", "create_trigger")

# Definitions of the less common paths, next to the workloads' own.
TIMER_MACHINE = {"name": "audit_timer", "kind": "statemachine", "initial": "waiting",
                 "states": {"waiting": {"after": [{"delay": "1 hour", "target": "expired"}]},
                            "expired": {"final": True}}}

Results = dict[str, dict[tuple[str, str], set[str]]]


def prepare(dsn: str) -> None:
    """RLS off for the table owner (NO FORCE) in this throwaway database, and the definitions the audit runs."""
    with c.connect(dsn) as conn:
        conn.execute("""DO $$ DECLARE t record; BEGIN
            FOR t IN SELECT c.oid::regclass AS r FROM pg_class c
                     WHERE c.relnamespace = 'flowforge'::regnamespace AND c.relkind IN ('r', 'p') LOOP
                EXECUTE format('ALTER TABLE %s NO FORCE ROW LEVEL SECURITY', t.r);
            END LOOP; END $$""")
        w.setup(conn)
        Client(conn).define_workflow(TIMER_MACHINE)


def scenario(api: Client, conn, expire) -> None:
    """What the audit runs: the workloads' runs, then the calls around them. ``expire(sql)`` runs an UPDATE that
    makes a lease, a slot or a timer due, untraced (the clock cannot be steered outside the test suite)."""
    for kind in w.KINDS:
        for _ in range(3):
            w.run_one(conn, kind)
    # The calls around a run: heartbeats, a failure and its retry, a cancel and a retry_run.
    api.register_agent("audit-agent")
    api.agent_heartbeat("audit-agent")
    run = api.start_run(w.SPECS["single"]["name"])
    (t,) = api.claim([w.QUEUE], "audit-agent")
    api.heartbeat(t.task_run_id, t.fencing_token)
    api.fail(t.task_run_id, t.fencing_token, "boom", True)
    api.get_run(run)
    api.run_events(run)
    graph = api.start_run(w.SPECS["graph"]["name"])
    (i,) = api.claim_work([w.QUEUE], "audit-agent")
    api.heartbeat_work(i.work_item_id, i.fencing_token)
    api.fail_work(i.work_item_id, i.fencing_token, "boom", False)
    api.get_run(graph)
    dag = api.start_run(w.SPECS["dag"]["name"])
    api.cancel_run(dag, "audit")
    api.retry_run(dag)
    api.cancel_run(dag, "audit")
    # Failing for good: a DAG task (its dependents skipped, the run settles), a fan-out child (the fan-out fails,
    # its live siblings are cancelled, the node fails), a machine action (on_error).
    dag = api.start_run(w.SPECS["dag"]["name"])
    (t,) = api.claim([w.QUEUE], "audit-agent")
    api.fail(t.task_run_id, t.fencing_token, "boom", False)
    api.get_run(dag)
    api.start_run(w.SPECS["fanout"]["name"], w.INPUTS["fanout"])
    (i,) = api.claim_work([w.QUEUE], "audit-agent")
    api.fail_work(i.work_item_id, i.fencing_token, "boom", False)
    machine = api.start_run(w.SPECS["machine"]["name"])
    api.send_event(machine, "paid", {"amount": 100})
    (i,) = api.claim_work([w.QUEUE], "audit-agent")
    api.fail_work(i.work_item_id, i.fencing_token, "boom", False)
    # The daemon's duties with something due: an expired task lease, a pushed task no consumer took, an expired
    # work item, a due cron trigger, a due machine timer.
    api.start_run(w.SPECS["single"]["name"])
    api.claim([w.QUEUE], "audit-agent")
    api.start_run(w.SPECS["push"]["name"])
    api.start_run(w.SPECS["graph"]["name"])
    api.claim_work([w.QUEUE], "audit-agent")
    api.create_trigger("audit-cron", "cron", "start", w.SPECS["single"]["name"], {"cron": "* * * * *"})
    api.start_run(TIMER_MACHINE["name"])
    expire("UPDATE flowforge.task_run SET lease_expires_at = flowforge.now() - interval '1 minute' "
           "WHERE state = 'running' AND lease_expires_at <> 'infinity'")
    expire("UPDATE flowforge.work_item SET lease_expires_at = flowforge.now() - interval '1 minute' "
           "WHERE status = 'dispatched' AND lease_expires_at <> 'infinity'")
    expire("UPDATE flowforge.scheduled_trigger SET next_fire_at = flowforge.now() - interval '1 minute'")
    expire("UPDATE flowforge.machine_timer SET fire_at = flowforge.now() - interval '1 minute'")
    api.tick(f"audit-{uuid.uuid4().hex[:6]}")
    api.tick()
    api.reap_expired_leases()
    taken = api.take_outbox(batch=100)
    if taken:
        api.defer_outbox([taken[0].id], "audit")
        api.mark_published([m.id for m in taken[1:]])
    batch = [api.start_run(w.SPECS["single"]["name"]) for _ in range(3)]
    claimed = api.claim([w.QUEUE], "audit-agent", batch=10)
    api.complete_many([x.task_run_id for x in claimed], [x.fencing_token for x in claimed])
    del batch


def audit(dsn: str, run=scenario) -> Results:
    """Runs ``run(api, conn, expire)`` on a database ``prepare`` made ready, under auto_explain; returns, per API
    call, the statements (function, text) that scanned a distributed table without organization_id, and which."""
    with c.connect(dsn) as conn:
        tenants = tenant_tables(conn)
    results: Results = defaultdict(lambda: defaultdict(set))
    current = ["setup"]
    conn = c.connect(dsn)
    cache: dict[str, str] = {}
    lookup = c.connect(dsn)

    def on_notice(diag) -> None:
        text = diag.message_primary or ""
        if "plan:" not in text:
            return
        body = text[text.index("plan:") + 5:].strip()
        try:
            plan = json.loads(body)
        except ValueError:
            return
        tables = unrouted_scans(plan, tenants)
        if tables:
            query = " ".join(plan.get("Query Text", "").split())
            results[current[0]][(function_of(lookup, query, cache), query[:160])].update(tables)

    conn.add_notice_handler(on_notice)
    for setting in ("LOAD 'auto_explain'", "SET auto_explain.log_min_duration = 0",
                    "SET auto_explain.log_nested_statements = on", "SET auto_explain.log_format = 'json'",
                    "SET auto_explain.log_level = 'notice'", "SET client_min_messages = 'notice'"):
        conn.execute(setting)

    class Traced(Client):
        """Client whose every API call names itself for the plans it produces."""

    def traced(name):
        original = getattr(Client, name)

        def call(self, *args, **kwargs):
            current[0] = name
            try:
                return original(self, *args, **kwargs)
            finally:
                current[0] = "(between calls)"
        return call

    for name in TRACED:
        setattr(Traced, name, traced(name))
    api = Traced(conn)
    original_client = w.Client
    w.Client = Traced  # the drivers build their client from the connection
    try:
        run(api, conn, lookup.execute)
    finally:
        w.Client = original_client
        time.sleep(0.1)
        conn.close()
        lookup.close()
    return {call: dict(rows) for call, rows in results.items()}


def main() -> None:
    as_json = "--json" in sys.argv
    dsn = c.flowforge_database("router")
    prepare(dsn)
    results = audit(dsn)
    if as_json:
        print(json.dumps({call: [{"function": f, "statement": q, "tables": sorted(t)} for (f, q), t in rows.items()]
                          for call, rows in results.items()}, indent=2))
        return
    print("| API call | function | statement | tables scanned without organization_id |")
    print("|---|---|---|---|")
    for call in sorted(results):
        for (function, query), tables in sorted(results[call].items()):
            query = re.sub(r"\|", "\\|", query)
            print(f"| {call} | {function} | `{query[:110]}` | {', '.join(sorted(tables))} |")


if __name__ == "__main__":
    main()
