"""`flowforge doctor --deep`: the inspection views' answers from the CLI (issue 19).

A small database populated through the API — a diamond waiting on its first
task, a task in backoff, a registered agent holding work, a graph item, a run
stuck for two hours — and the command as a user runs it: the six sections in
text (compact, cut to --deep-rows with "... and N more") and in --json, the
checks' exit code untouched, a login that may not read the views told so, and
a database migrated before 0026 told to migrate.
"""

from __future__ import annotations

import json
import uuid

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo
from psycopg.types.json import Jsonb

from flowforge import migrate
from flowforge.catalog import Catalog
from flowforge.doctor import inspection
from test_cli_foundation import run
from test_tenancy import role_registry  # noqa: F401 - fixture: roles dropped after the database

SECTIONS = ["why not ready", "queue depth", "stuck runs", "worker load", "tenant usage", "index usage"]
KEYS = ["why_not_ready", "queue_depth", "stuck_runs", "worker_load", "tenant_usage", "index_usage"]


@pytest.fixture
def populated(migrated_dsn: str) -> dict:
    """A diamond whose a runs, a task in backoff, an agent holding a graph item, a DAG run stuck for two hours."""
    ids: dict = {}
    with psycopg.connect(migrated_dsn, autocommit=True) as conn:
        def one(query: str, *params):
            return conn.execute(query, params).fetchone()[0]

        one("SELECT flowforge.define_workflow(spec => %s::jsonb)", Jsonb({"name": "dd_diamond", "tasks": [
            {"key": "a", "queue": "dd"}, {"key": "b", "queue": "dd", "depends_on": ["a"]},
            {"key": "c", "queue": "dd", "depends_on": ["a"]}, {"key": "d", "queue": "dd", "depends_on": ["b", "c"]}]}))
        ids["diamond"] = one("SELECT flowforge.start_run(workflow => 'dd_diamond')")
        one("SELECT count(*) FROM flowforge.claim(queues => ARRAY['dd'], worker => 'dd-worker')")

        one("SELECT flowforge.define_workflow(spec => %s::jsonb)", Jsonb({"name": "dd_retry", "tasks": [
            {"key": "flaky", "queue": "dd-retry", "backoff": "1 hour", "max_backoff": "1 hour"}]}))
        ids["retry"] = one("SELECT flowforge.start_run(workflow => 'dd_retry')")
        task, token = conn.execute("SELECT task_run_id, fencing_token FROM flowforge.claim(queues => ARRAY['dd-retry'], "
                                   "worker => 'dd-worker')").fetchone()
        conn.execute("SELECT flowforge.fail(task_run_id => %s, fencing_token => %s, error => 'upstream 503')", (task, token))

        one("SELECT flowforge.register_agent(name => 'dd-agent', info => %s::jsonb)", Jsonb({"version": "9.9"}))
        one("SELECT flowforge.define_workflow(spec => %s::jsonb)", Jsonb({
            "name": "dd_graph", "kind": "graph", "start": "work",
            "nodes": [{"key": "work", "queue": "dd-items"}, {"key": "done", "final": True}],
            "edges": [{"from": "work", "to": "done"}]}))
        ids["graph"] = one("SELECT flowforge.start_run(workflow => 'dd_graph')")
        one("SELECT count(*) FROM flowforge.claim_work(queues => ARRAY['dd-items'], agent => 'dd-agent')")

        one("SELECT flowforge.define_workflow(spec => %s::jsonb)", Jsonb({"name": "dd_old", "tasks": [
            {"key": "slow", "queue": "dd-old"}]}))
        ids["stuck"] = one("SELECT flowforge.start_run(workflow => 'dd_old')")
        # Started two hours ago (a plain UPDATE as the operator: the clock cannot be steered from here).
        conn.execute("UPDATE flowforge.workflow_run SET created_at = now() - interval '2 hours', "
                     "started_at = now() - interval '2 hours' WHERE id = %s", (ids["stuck"],))
    ids["dsn"] = migrated_dsn
    return ids


def deep(dsn: str, *args: str) -> dict:
    proc = run("--dsn", dsn, "--json", "doctor", "--deep", *args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def test_text_output_has_every_section_compactly(populated):
    proc = run("--dsn", populated["dsn"], "doctor", "--deep")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "schema version" in out  # the checks first, as without --deep
    positions = [out.index(f"\n{title}") for title in SECTIONS]
    assert positions == sorted(positions), "the sections in their order"
    assert "why not ready: 5 units waiting: 3 waiting_on_dependencies, 1 backoff, 1 ready" in out
    assert "waiting on a (running)" in out and "waiting on b (pending), c (pending)" in out
    assert "in backoff after attempt 1 failed: upstream 503" in out
    assert "stuck runs: 1 run past the threshold" in out
    stuck_line = next(line for line in out.splitlines() if str(populated["stuck"])[:8] in line and "dd_old v1" in line)
    assert "2h00m" in stuck_line and "1 ready (the oldest since" in stuck_line
    agent_line = next(line for line in out.splitlines() if line.strip().startswith("default  dd-agent"))
    assert agent_line.split()[2:6] == ["agent", "active", "0", "1"]  # kind, status, task runs, work items
    worker_line = next(line for line in out.splitlines() if line.strip().startswith("default  dd-worker"))
    assert worker_line.split()[2:5] == ["worker", "1", "0"]  # unregistered: no status
    assert "index usage: " in out and "never scanned and enforcing nothing" in out
    index_lines = out.split("\nindex usage")[1].splitlines()
    assert index_lines[1].split() == ["INDEX", "SCANS", "SIZE", "SERVES"]
    assert all(len(line.split("  ")) > 3 for line in index_lines[2:-1]), "every index shown says what it serves"
    assert "... and " in out.split("\nindex usage")[1], "index usage is cut to 20 rows"


def test_json_rows_and_totals(populated):
    report = deep(populated["dsn"])
    assert report["ok"] is True and report["checks"]
    inspection = report["inspection"]
    assert sorted(inspection) == sorted(KEYS)

    waiting = inspection["why_not_ready"]
    assert waiting["total"] == 5
    by_name = {(r["run_id"], r["name"]): r for r in waiting["rows"]}
    d = by_name[(str(populated["diamond"]), "d")]
    assert d["reason"] == "waiting_on_dependencies"
    assert d["detail"]["waiting_on"] == [{"key": "b", "state": "pending"}, {"key": "c", "state": "pending"}]
    flaky = by_name[(str(populated["retry"]), "flaky")]
    assert flaky["reason"] == "backoff" and flaky["until"] is not None and flaky["detail"]["attempt"] == 2

    depth = {(r["unit_kind"], r["queue"]): r for r in inspection["queue_depth"]["rows"]}
    assert depth[("task_run", "dd")]["running"] == 1 and depth[("task_run", "dd")]["claims_last_minute"] == 1
    assert depth[("task_run", "dd-retry")]["scheduled"] == 1 and depth[("task_run", "dd-retry")]["ready"] == 0
    assert depth[("work_item", "dd-items")]["running"] == 1

    [stuck] = inspection["stuck_runs"]["rows"]
    assert stuck["run_id"] == str(populated["stuck"]) and stuck["engine_kind"] == "dag"
    assert stuck["threshold_seconds"] == 3600 and stuck["stuck_seconds"] >= 7200

    load = {r["worker"]: r for r in inspection["worker_load"]["rows"]}
    assert load["dd-agent"]["kind"] == "agent" and load["dd-agent"]["work_items"] == 1
    assert load["dd-worker"]["kind"] == "worker" and load["dd-worker"]["task_runs"] == 1

    [usage] = [r for r in inspection["tenant_usage"]["rows"] if r["organization"] == "default"]
    assert usage["runs"] == 4 and usage["live_runs"] == 4
    assert usage["runs_by_engine"] == {"dag": {"running": 3}, "graph": {"running": 1}}
    assert usage["history_exact"] is True and usage["history_rows"] > 0

    indexes = inspection["index_usage"]
    with psycopg.connect(populated["dsn"]) as conn:
        count = conn.execute("SELECT count(*) FROM pg_index x JOIN pg_class t ON t.oid = x.indrelid "
                             "WHERE t.relnamespace = 'flowforge'::regnamespace").fetchone()[0]
    assert indexes["total"] == count and len(indexes["rows"]) == 20
    assert all(r["serves"] for r in indexes["rows"])


def test_deep_rows_cuts_each_section(populated):
    proc = run("--dsn", populated["dsn"], "doctor", "--deep", "--deep-rows", "2")
    assert proc.returncode == 0, proc.stderr
    assert "  ... and 3 more (SELECT * FROM flowforge.why_not_ready)" in proc.stdout
    report = deep(populated["dsn"], "--deep-rows", "2")
    assert len(report["inspection"]["why_not_ready"]["rows"]) == 2
    assert report["inspection"]["why_not_ready"]["total"] == 5


def test_a_login_without_the_read_role_is_told(populated, role_registry):  # noqa: F811
    """doctor runs as the operator (its checks read yoyo's table); the sections, read by an application's
    login, say what it lacks instead of failing, and a member of flowforge_readonly reads them all."""
    login = f"ff_0deep_{uuid.uuid4().hex[:8]}"
    role_registry.append(login)
    with psycopg.connect(populated["dsn"], autocommit=True) as conn:
        # An application's login: it may call the API, not read the DBA's views.
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN IN ROLE flowforge_app").format(sql.Identifier(login)))
    with psycopg.connect(make_conninfo(populated["dsn"], user=login), autocommit=True) as conn:
        sections = inspection.read(Catalog(conn), rows=5)
    assert [s.key for s in sections] == KEYS
    for section in sections:
        assert section.note == inspection.READ_ROLE_NOTE and not section.data, section.key
        assert section.render() == f"{section.title}\n  {inspection.READ_ROLE_NOTE}"

    with psycopg.connect(populated["dsn"], autocommit=True) as conn:
        conn.execute(sql.SQL("GRANT flowforge_readonly TO {}").format(sql.Identifier(login)))
    with psycopg.connect(make_conninfo(populated["dsn"], user=login), autocommit=True) as conn:
        sections = {s.key: s for s in inspection.read(Catalog(conn), rows=5)}
    assert sections["why_not_ready"].total == 5, "a member of flowforge_readonly reads them all"
    assert all(not s.note for s in sections.values())


def test_a_database_before_0026_is_told_to_migrate(migrated_dsn):
    migrate.rollback(migrated_dsn, to="0023")
    proc = run("--dsn", migrated_dsn, "doctor", "--deep")
    assert proc.returncode == 1  # pending migrations are a problem of the checks, not of --deep
    assert "the inspection views are not installed (migration 0026): run `flowforge migrate`" in proc.stdout
