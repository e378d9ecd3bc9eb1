"""The workflow / run / queue / worker / demo commands, run as a user runs them.

Every command is a subprocess of the installed ``flowforge`` script against a
fresh migrated database; human output and ``--json`` are both checked, and
every bad input must be one stderr line with a non-zero exit.
"""

from __future__ import annotations

import json
import uuid

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

import flowforge
from test_cli_foundation import assert_one_line_error, run

SPEC_YAML = """
name: thumbnails
description: Make thumbnails and tell someone.
tasks:
  - key: fetch
  - key: small
    depends_on: [fetch]
  - key: large
    depends_on: [fetch]
    max_attempts: 5
  - key: notify
    depends_on: [small, large]
"""


@pytest.fixture
def ff(migrated_dsn):
    """``ff("run", "list")`` runs ``flowforge --dsn <fresh db> run list``."""
    def call(*args, **kw):
        return run("--dsn", migrated_dsn, *args, **kw)
    return call


@pytest.fixture
def applied(ff, tmp_path):
    path = tmp_path / "thumbnails.yaml"
    path.write_text(SPEC_YAML)
    proc = ff("workflow", "apply", str(path))
    assert proc.returncode == 0, proc.stderr
    return path


def ok(proc):
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    return proc.stdout


def start_worker(dsn: str, **handlers) -> flowforge.Worker:
    worker = flowforge.Worker(dsn=dsn, poll_interval=0.2, grace_period=2)
    for key, fn in handlers.items():
        worker.register(key, fn)
    worker.start()
    return worker


# --- workflow -----------------------------------------------------------------------

def test_workflow_apply_yaml_and_json(ff, tmp_path, applied):
    again = ok(ff("workflow", "apply", str(applied)))
    assert "workflow thumbnails version 1 unchanged" in again

    spec = {"name": "thumbnails", "tasks": [{"key": "fetch"}, {"key": "small", "depends_on": ["fetch"]}]}
    as_json = tmp_path / "v2.json"
    as_json.write_text(json.dumps(spec))
    out = json.loads(ok(ff("--json", "workflow", "apply", str(as_json))))
    assert out["name"] == "thumbnails" and out["version"] == 2 and out["created"] is True
    uuid.UUID(out["id"])


def test_workflow_list_and_show(ff, applied):
    listing = ok(ff("workflow", "list"))
    assert listing.splitlines()[0].split() == ["NAME", "VERSION", "TASKS", "DEFINED"]
    assert listing.splitlines()[1].split()[:3] == ["thumbnails", "1", "4"]
    rows = json.loads(ok(ff("workflow", "list", "--json")))
    assert [(r["name"], r["version"], r["tasks"]) for r in rows] == [("thumbnails", 1, 4)]

    shown = ok(ff("workflow", "show", "thumbnails"))
    assert "thumbnails  version 1  (4 tasks" in shown
    layers = [line.strip() for line in shown.splitlines()]
    assert layers.index("fetch") < layers.index("small   large") < layers.index("notify")
    assert "▼" in shown
    obj = json.loads(ok(ff("--json", "workflow", "show", "thumbnails")))
    assert obj["levels"] == [["fetch"], ["small", "large"], ["notify"]]
    assert {t["key"]: t["max_attempts"] for t in obj["spec"]["tasks"]}["large"] == 5


def test_workflow_list_empty(ff):
    assert "no workflows yet" in ok(ff("workflow", "list"))
    assert json.loads(ok(ff("workflow", "list", "--json"))) == []


# --- run ------------------------------------------------------------------------------

def test_run_start_list_show_events(ff, applied):
    run_id = ok(ff("run", "start", "thumbnails", "--input", '{"image": "cat.png"}')).strip()
    uuid.UUID(run_id)
    same = json.loads(ok(ff("--json", "run", "start", "thumbnails", "--input", '{"image": "dog.png"}',
                            "--idempotency-key", "k1")))
    again = json.loads(ok(ff("--json", "run", "start", "thumbnails", "--input", '{"image": "dog.png"}',
                             "--idempotency-key", "k1")))
    assert same["id"] == again["id"] != run_id

    listing = ok(ff("run", "list"))
    # KIND since issues 13-14: runs of every engine are listed (test_cli_engines.py covers the other kinds).
    assert listing.splitlines()[0].split() == ["ID", "WORKFLOW", "KIND", "STATE", "TASKS", "CREATED", "TOOK"]
    assert run_id in listing and "running" in listing
    runs = json.loads(ok(ff("run", "list", "--json")))
    assert len(runs) == 2 and {r["state"] for r in runs} == {"running"}
    assert json.loads(ok(ff("run", "list", "--json", "--state", "succeeded"))) == []

    shown = ok(ff("run", "show", run_id[:8]))  # a unique prefix is enough
    assert f"run {run_id}  thumbnails v1  running  0/4 tasks done" in shown
    assert [line.split()[:2] for line in shown.splitlines()[3:]] == [
        ["fetch", "ready"], ["large", "pending"], ["small", "pending"], ["notify", "pending"]]  # DAG levels
    obj = json.loads(ok(ff("run", "show", run_id, "--json")))
    assert obj["id"] == run_id and obj["input"] == {"image": "cat.png"}
    assert [t["key"] for t in obj["tasks"]] == ["fetch", "large", "small", "notify"]

    events = ok(ff("run", "events", run_id))
    assert "run_started" in events and "created" in events
    rows = json.loads(ok(ff("--json", "run", "events", run_id)))
    assert rows[0]["kind"] == "run_started" and rows[0]["task_key"] is None


def test_run_cancel_and_retry(ff, applied):
    run_id = ok(ff("run", "start", "thumbnails")).strip()
    assert ok(ff("run", "cancel", run_id, "--reason", "wrong image")) == f"run {run_id} cancelled\n"
    shown = json.loads(ok(ff("--json", "run", "show", run_id)))
    assert shown["state"] == "cancelled" and shown["reason"] == "wrong image"

    again = ff("run", "cancel", run_id)  # FF005: the run already finished
    assert_one_line_error(again)
    assert "cancel" in again.stderr or "finished" in again.stderr

    assert ok(ff("run", "retry", run_id)) == f"run {run_id} retrying\n"
    assert json.loads(ok(ff("run", "show", run_id, "--json")))["state"] == "running"
    assert json.loads(ok(ff("--json", "run", "cancel", run_id))) == {"id": run_id, "state": "cancelled"}


def test_run_watch_until_the_end(ff, applied, migrated_dsn):
    run_id = ok(ff("run", "start", "thumbnails", "--input", '{"n": 1}')).strip()
    worker = start_worker(migrated_dsn, fetch=lambda c, i: {"bytes": 10}, small=lambda c, i: {},
                          large=lambda c, i: {}, notify=lambda c, i: {"sent": True})
    try:
        watched = ff("run", "watch", run_id, "--interval", "0.2", timeout=60)
    finally:
        worker.stop()
        worker.join(10)
    out = ok(watched)
    assert out.splitlines()[-1].startswith("run succeeded: 4/4 tasks, 0 retries")
    assert "fetch=" in out  # one progress line per change when not on a terminal
    final = json.loads(ok(ff("run", "watch", run_id, "--json")))
    assert final["state"] == "succeeded" and final["tasks"][-1]["output"] == {"sent": True}


def test_run_watch_failed_run_exits_1_and_timeout_exits_3(ff, applied, migrated_dsn):
    run_id = ok(ff("run", "start", "thumbnails")).strip()
    timed_out = ff("run", "watch", run_id, "--timeout", "0.3", "--interval", "0.1")
    assert timed_out.returncode == 3 and "stopped watching" in timed_out.stderr
    ok(ff("run", "cancel", run_id))
    finished = ff("run", "watch", run_id)
    assert finished.returncode == 1 and "run cancelled" in finished.stdout


# --- queue ----------------------------------------------------------------------------

def test_queue_configure(ff, migrated_dsn):
    # Without --routing-key, dispatch publishes with <database>.<organization>.<queue> (issue 11, item 3).
    database = conninfo_to_dict(migrated_dsn)["dbname"]
    assert ok(ff("queue", "configure", "images", "--exchange", "media")) == \
        f"queue images: push to exchange media with routing key {database}.default.images\n"
    out = json.loads(ok(ff("--json", "queue", "configure", "images", "--exchange", "media", "--routing-key", "img.*")))
    assert out["mode"] == "push" and out["routing_key"] == "img.*"
    assert ok(ff("queue", "configure", "images")) == "queue images: pull (workers claim its tasks)\n"
    assert_one_line_error(ff("queue", "configure", "9 bad name"))
    assert_one_line_error(ff("queue", "configure", "images", "--routing-key", "x"))


def test_queue_flow_control(ff, migrated_dsn):
    # Flow control (issue 18): limits with configure, pause / resume, refusals in one line.
    assert ok(ff("queue", "configure", "api", "--max-running", "3", "--rate", "100/1 minute")) == \
        "queue api: pull (workers claim its tasks), at most 3 running, at most 100 per 1 minute\n"
    out = json.loads(ok(ff("--json", "queue", "configure", "api", "--max-running", "2", "--rate", "20/1s")))
    assert out["max_running"] == 2 and out["rate"] == {"limit": 20, "per": "1s"}
    assert ok(ff("queue", "pause", "api")) == "queue api: paused (nothing is claimed from it until flowforge queue resume api)\n"
    assert json.loads(ok(ff("--json", "queue", "resume", "api"))) == {"name": "api", "paused": False}
    with psycopg.connect(migrated_dsn) as conn:
        assert conn.execute("SELECT max_running, rate_limit, paused FROM flowforge.queue WHERE name = 'api'"
                            ).fetchone() == (2, 20, False)
    assert_one_line_error(ff("queue", "configure", "api", "--rate", "lots"))
    assert_one_line_error(ff("queue", "configure", "api", "--rate", "10/forever"))
    assert_one_line_error(ff("queue", "configure", "api", "--max-running", "0"))
    assert_one_line_error(ff("queue", "pause", "9 bad name"))


def test_queue_list(ff, applied, migrated_dsn):
    assert "no queues yet" in ok(ff("queue", "list"))
    ok(ff("run", "start", "thumbnails"))
    ok(ff("queue", "configure", "images", "--exchange", "media", "--routing-key", "img"))
    listing = ok(ff("queue", "list"))
    lines = listing.splitlines()
    assert lines[0].split() == ["QUEUE", "DELIVERY", "READY", "RUNNING", "OLDEST", "READY", "EXCHANGE", "/",
                                "ROUTING", "KEY"]
    assert lines[1].split()[:4] == ["default", "pull", "1", "0"]  # the run's first task waits
    assert lines[2].split() == ["images", "push", "0", "0", "media", "/", "img"]
    rows = {r["name"]: r for r in json.loads(ok(ff("queue", "list", "--json")))}
    assert rows["images"]["dispatch_lease"] == 300.0 and rows["images"]["amqp_queue"].startswith("flowforge.")
    assert rows["default"]["ready"] == 1 and rows["default"]["exchange"] is None


# --- bad input: one line, non-zero, no traceback ---------------------------------------

def test_unknown_workflow(ff):
    proc = ff("run", "start", "no-such-workflow")
    assert_one_line_error(proc)
    assert "no-such-workflow" in proc.stderr
    assert_one_line_error(ff("workflow", "show", "no-such-workflow"))


def test_invalid_json_input(ff, applied):
    proc = ff("run", "start", "thumbnails", "--input", "{not json")
    assert_one_line_error(proc)
    assert "--input is not valid JSON" in proc.stderr
    assert_one_line_error(ff("run", "start", "thumbnails", "--input", "[1, 2]"))  # FF003: not an object


@pytest.mark.parametrize("content, expected", [
    ("name: loop\ntasks:\n  - {key: a, depends_on: [b]}\n  - {key: b, depends_on: [a]}\n", "cycle"),
    ("name: dup\ntasks:\n  - {key: a}\n  - {key: a}\n", "duplicate"),
    ("name: [unclosed\n", "not valid YAML"),
    ("- just\n- a list\n", "JSON object"),
])
def test_invalid_definition_file(ff, tmp_path, content, expected):
    path = tmp_path / "bad.yaml"
    path.write_text(content)
    proc = ff("workflow", "apply", str(path))
    assert_one_line_error(proc)
    assert expected in proc.stderr


def test_missing_definition_file_and_bad_json_file(ff, tmp_path):
    assert_one_line_error(ff("workflow", "apply", str(tmp_path / "absent.json")))
    bad = tmp_path / "bad.json"
    bad.write_text("{oops")
    proc = ff("workflow", "apply", str(bad))
    assert_one_line_error(proc)
    assert "not valid JSON" in proc.stderr


def test_bad_run_ids(ff):
    assert_one_line_error(ff("run", "show", "not-a-uuid"))
    proc = ff("run", "show", str(uuid.uuid4()))
    assert_one_line_error(proc)
    assert "not found" in proc.stderr
    assert_one_line_error(ff("run", "events", "abcd"))
    assert_one_line_error(ff("run", "retry", str(uuid.uuid4())))


@pytest.mark.parametrize("args", [
    ("workflow", "list"), ("run", "list"), ("run", "start", "x"), ("run", "show", str(uuid.uuid4())),
    ("queue", "configure", "q"),
])
def test_unreachable_database(args):
    assert_one_line_error(run("--dsn", "postgresql://postgres@127.0.0.1:1/postgres", *args))


def test_worker_command_bad_targets(ff, tmp_path):
    (tmp_path / "notaworker.py").write_text("thing = 42\n")
    (tmp_path / "broken.py").write_text("import no_such_module_anywhere\n")
    for target, expected in [("nocolon", "MODULE:ATTR"), ("notaworker:thing", "not a flowforge.Worker"),
                             ("notaworker:missing", "no attribute"), ("broken:worker", "cannot import")]:
        proc = ff("worker", target, cwd=tmp_path)
        assert_one_line_error(proc)
        assert expected in proc.stderr


def test_json_flag_before_or_after(ff, applied):
    assert json.loads(ok(ff("--json", "workflow", "list"))) == json.loads(ok(ff("workflow", "list", "--json")))


# --- demo ---------------------------------------------------------------------------------

def test_demo_on_a_fresh_database(fresh_dsn):
    proc = run("--dsn", fresh_dsn, "demo", "--runs", "3", timeout=120)
    out = ok(proc)
    summary = [line for line in out.splitlines() if line.startswith("demo ")]
    assert summary and summary[0].startswith("demo succeeded: 3/3 runs succeeded, 24 tasks, 3 retries")
    # The other engines, on the same line (issues 13-15): the graph cycled, the machine's action was retried
    # once, the map resized every photo.
    assert ("; graph article-review succeeded in 8 steps (sent back twice); machine order-delivery succeeded "
            "in delivered (ship retried once); map photo-thumbnails succeeded: 24/24 photos resized; ") in summary[0]
    assert ("article-review path: draft#1 → review#1 → draft#2 → review#2 → draft#3 → review#3 → publish → done"
            in out.splitlines())
    assert "order-delivery states: awaiting_payment → shipping → delivered" in out.splitlines()
    assert "psql " in out and "flowforge.run_events(" in out
    assert proc.stderr == ""
    # Since issues 13-15 the demo runs a graph, a machine and a mapping DAG besides nightly-report's runs.
    listed = json.loads(ok(run("--dsn", fresh_dsn, "--json", "run", "list")))
    assert sorted((r["workflow"], r["kind"]) for r in listed) == [
        ("article-review", "graph"), *[("nightly-report", "dag")] * 3, ("order-delivery", "statemachine"),
        ("photo-thumbnails", "dag")]
    assert {r["state"] for r in listed} == {"succeeded"}


def test_demo_json(fresh_dsn):
    out = json.loads(ok(run("--dsn", fresh_dsn, "--json", "demo", "--runs", "2", timeout=120)))
    assert out["ok"] is True and out["runs_succeeded"] == 2 and out["retries"] == 2 and out["tasks"] == 16
    assert out["graph"]["state"] == "succeeded" and out["graph"]["path"].count("review") == 3
    assert (out["machine"]["state"], out["machine"]["machine_state"], out["machine"]["retries"]) == \
        ("succeeded", "delivered", 1)
    assert (out["map"]["state"], out["map"]["idx"], out["map"]["total"], out["map"]["failed"]) == \
        ("succeeded", 24, 24, 0)
