"""The CLI for graphs, state machines, fan-outs and agents (issues 13, 14, 15), run as a user runs it.

Runs are moved by hand through ``flowforge.Client`` (claim_work /
complete_work / fail_work) wherever the rendered text is asserted, so the
output is deterministic; assertions are on the drawn lines (whitespace
normalised), never on timing.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import textwrap
import threading

import pytest

from helpers_runtime import FLOWFORGE, wait_until
from helpers_sdk_engines import agents, client, drive, get_run, order, photos, review_loop
from test_cli import ff, ok  # noqa: F401 - fixture
from test_cli_foundation import assert_one_line_error


def words(text: str) -> list[list[str]]:
    """Each line as its words: alignment is render.table's business, not these tests'."""
    return [line.split() for line in text.splitlines()]


def has_line(text: str, line: str) -> bool:
    return line.split() in words(text)


def apply(ff, tmp_path, spec: dict) -> None:
    path = tmp_path / f"{spec['name']}.json"
    path.write_text(json.dumps(spec))
    ok(ff("workflow", "apply", str(path)))


# --- workflow show ---------------------------------------------------------------------------

def test_workflow_show_draws_a_graph_with_its_conditional_edges(ff, tmp_path):
    apply(ff, tmp_path, review_loop(timeout="5 minutes"))
    shown = ok(ff("workflow", "show", "review_loop"))
    lines = shown.splitlines()
    assert lines[0].startswith("review_loop  version 1  (graph: 4 nodes, 4 edges, start draft, at most 20 steps")
    assert has_line(shown, "▶ draft")
    assert has_line(shown, "draft ──▶ review")
    assert has_line(shown, "review ──▶ draft when $.output.approved == false")  # tried first
    assert has_line(shown, "──▶ publish otherwise")                             # then the fallback
    assert has_line(shown, "publish ──▶ done ■")
    assert shown.index("when $.output.approved") < shown.index("otherwise")
    assert has_line(shown, "NODE KIND QUEUE MAX ATTEMPTS MAX VISITS BACKOFF TIMEOUT AFFINITY")
    assert has_line(shown, "review task default 3 5 1.0s 5m00s -")
    assert has_line(shown, "done final")
    obj = json.loads(ok(ff("workflow", "show", "review_loop", "--json")))
    assert obj["kind"] == "graph" and [n["key"] for n in obj["spec"]["nodes"]] == ["draft", "review", "publish",
                                                                                     "done"]


def test_workflow_show_draws_a_machine_with_guards_timers_and_actions(ff, tmp_path):
    apply(ff, tmp_path, order())
    shown = ok(ff("workflow", "show", "order"))
    assert shown.splitlines()[0].startswith("order  version 1  (statemachine: 6 states, 3 final, initial "
                                            "awaiting_payment")
    assert 'context: {"total": 100}' in shown
    assert has_line(shown, "▶ awaiting_payment")
    assert has_line(shown, "on paid ──▶ shipping if $.event.amount >= $.context.total; "
                           "set paid_amount = $.event.amount")
    assert has_line(shown, "on cancel ──▶ cancelled")
    assert has_line(shown, "after 2 days ──▶ expired")
    assert has_line(shown, "shipping action ship (queue default, 3 attempts, backoff 0.1s)")
    assert has_line(shown, "done ──▶ delivered") and has_line(shown, "error ──▶ needs_attention")
    assert has_line(shown, "on retry ──▶ shipping") and has_line(shown, "on give_up ──▶ cancelled")
    finals = [line for line in shown.splitlines() if line.startswith("■")]
    assert sorted(finals) == ["■ cancelled  (final)", "■ delivered  (final)", "■ expired  (final)"]
    # Reading order: the initial state first, the finals last.
    assert shown.index("awaiting_payment") < shown.index("  shipping") < shown.index("■ cancelled")
    assert json.loads(ok(ff("--json", "workflow", "show", "order")))["kind"] == "statemachine"


def test_workflow_show_lists_what_a_dag_fans_out_over(ff, tmp_path):
    apply(ff, tmp_path, photos(max_concurrency=7, on_item_failure="continue"))
    shown = ok(ff("workflow", "show", "photos"))
    assert has_line(shown, "FANS OUT MODE OVER AT ONCE ON ITEM FAILURE")
    assert has_line(shown, "resize map $.run.photos 7 continue")


# --- run show / run list -----------------------------------------------------------------------

def test_run_show_draws_a_graph_run_position_path_and_visits(ff, tmp_path, migrated_dsn):
    apply(ff, tmp_path, review_loop())
    run_id = ok(ff("run", "start", "review_loop", "--input", '{"title": "t"}')).strip()
    conn, api = client(migrated_dsn)
    drive(api, "w1", lambda row: {"approved": row.payload["visit"] == 2} if row.task_name == "review"
          else {"text": f"v{row.payload['visit']}"}, steps=3)  # draft, review (sent back), draft
    mid = ok(ff("run", "show", run_id))
    assert f"run {run_id}  review_loop v1  graph  running  4 steps (max 20)" in mid.splitlines()[0]
    assert "position: review  — its item is pending, attempt 1/3" in mid
    assert "path: draft#1 → review#1 → draft#2 → review#2" in mid
    drive(api, "w1", lambda row: {"approved": True} if row.task_name == "review" else {"url": "u"})
    shown = ok(ff("run", "show", run_id))
    head = shown.splitlines()
    assert f"run {run_id}  review_loop v1  graph  succeeded  6 steps (max 20)" in head[0]
    assert head[1] == "position: done (final)"
    assert head[2] == 'reason: reached final node "done"'
    assert "path: draft#1 → review#1 → draft#2 → review#2 → publish → done" in shown
    assert has_line(shown, "NODE VISITS MAX VISITS")
    assert has_line(shown, "draft 2 -") and has_line(shown, "review 2 5") and has_line(shown, "done 1 - final")
    assert has_line(shown, "ITEMS (the 5 most recent)")
    assert has_line(shown, "publish completed 1/3 w1")
    obj = json.loads(ok(ff("run", "show", run_id, "--json")))
    assert obj["kind"] == "graph" and obj["run_counts"] == {"draft": 2, "review": 2, "publish": 1, "done": 1}


def test_run_show_draws_a_machine_run_state_context_history_queue_and_timers(ff, tmp_path, migrated_dsn):
    apply(ff, tmp_path, order(backoff="0 seconds"))
    run_id = ok(ff("run", "start", "order", "--input", '{"customer": "c1"}')).strip()
    resting = ok(ff("run", "show", run_id))
    assert "state: awaiting_payment  live, waiting for an event" in resting
    assert has_line(resting, "TARGET DELAY FIRES AT IN")
    assert [w[:3] for w in words(resting) if w[:1] == ["expired"]] == [["expired", "2", "days"]]

    assert ok(ff("run", "signal", run_id, "paid", "--payload", '{"amount": 150}', "--event-id", "pay-1")) == \
        f"event paid applied: run {run_id} is now in shipping (suspended: its action runs)\n"
    assert ok(ff("run", "signal", run_id, "paid", "--payload", '{"amount": 150}', "--event-id", "pay-1")) == \
        f"event paid duplicate: event id pay-1 was seen before, nothing changed; run {run_id} is in shipping\n"
    assert ok(ff("run", "signal", run_id, "retry")) == \
        (f"event retry queued: run {run_id} is suspended in shipping (its action runs); "
         f"the event applies when it resumes\n")
    suspended = ok(ff("run", "show", run_id))
    assert f"run {run_id}  order v1  statemachine  running  2 transitions" in suspended.splitlines()[0]
    assert "state: shipping  suspended (action ship pending, attempt 1/3)" in suspended
    assert 'context: {"customer": "c1", "paid_amount": 150, "total": 100}' in suspended
    assert has_line(suspended, "QUEUED EVENTS (1, applied in this order when the action ends)")
    assert [w[1] for w in words(suspended) if w[:1] == ["1"] and len(w) > 1 and w[1] == "retry"] == ["retry"]
    assert "TIMERS" not in suspended  # leaving awaiting_payment deleted its timer

    conn, api = client(migrated_dsn)
    tries = iter(["carrier down", None])
    drive(api, "w-ship", {"ship": {"tracking": "T-9"}}, fail=lambda row: next(tries))
    done = ok(ff("run", "show", run_id))
    assert f"run {run_id}  order v1  statemachine  succeeded  3 transitions" in done.splitlines()[0]
    assert "state: delivered  ended" in done and 'reason: reached final state "delivered"' in done
    assert has_line(done, "HISTORY")
    history = [w for w in words(done) if w[:1] and w[0].isdigit() and len(w) > 4]
    causes = [w[3] for w in history]  # N, date, time, CAUSE ...
    assert causes[:3] == ["start", "event", "action_done"], history
    assert any("retry" in w and "refused" in w for w in history), history  # the queued event, refused at the end
    assert has_line(done, "queued events: none")
    assert has_line(done, "ship shipping completed 2/3 w-ship")

    refused = ff("run", "signal", run_id, "paid", "--payload", '{"amount": 150}')
    assert_one_line_error(refused)
    assert refused.returncode == 1
    assert 'event "paid" refused: the run has ended' in refused.stderr
    assert f"flowforge run show {run_id}" in refused.stderr and "flowforge workflow show order" in refused.stderr


def test_run_signal_reads_the_payload_from_a_file_or_stdin_and_refuses_bad_input(ff, tmp_path, migrated_dsn):
    apply(ff, tmp_path, order())
    apply(ff, tmp_path, {"name": "plain", "tasks": [{"key": "only"}]})
    by_file = ok(ff("run", "start", "order")).strip()
    payload = tmp_path / "payment.json"
    payload.write_text('{"amount": 100}')
    assert "event paid applied" in ok(ff("run", "signal", by_file, "paid", "--payload", f"@{payload}"))
    by_stdin = ok(ff("run", "start", "order")).strip()
    out = json.loads(ok(ff("--json", "run", "signal", by_stdin, "paid", "--payload", "-", input='{"amount": 101}')))
    assert out == {"id": by_stdin, "event": "paid", "event_id": None, "outcome": "applied", "state": "shipping",
                   "live": True, "suspended": True}
    low = ok(ff("run", "start", "order")).strip()
    guard = ff("run", "signal", low, "paid", "--payload", '{"amount": 5}')  # the guard does not hold
    assert_one_line_error(guard)
    assert 'event "paid" refused' in guard.stderr
    assert get_run(migrated_dsn, low)["machine_state"] == "awaiting_payment"  # nothing was written
    for args, expected in [((low, "nonsense"), "no transition"), ((low, "paid", "--payload", "{oops"), "not valid JSON"),
                           ((low, "paid", "--payload", "[1]"), "JSON object"),
                           ((ok(ff("run", "start", "plain")).strip(), "paid"), "only statemachine runs take events"),
                           (("ffffffff", "paid"), "not found")]:
        proc = ff("run", "signal", *args)
        assert_one_line_error(proc)
        assert expected in proc.stderr, (args, proc.stderr)


def test_run_list_shows_the_kind_of_every_run(ff, tmp_path):
    apply(ff, tmp_path, review_loop())
    apply(ff, tmp_path, order())
    apply(ff, tmp_path, {"name": "plain", "tasks": [{"key": "only"}]})
    ids = {kind: ok(ff("run", "start", name)).strip() for kind, name in
           (("graph", "review_loop"), ("statemachine", "order"), ("dag", "plain"))}
    listing = ok(ff("run", "list"))
    assert words(listing)[0] == ["ID", "WORKFLOW", "KIND", "STATE", "TASKS", "CREATED", "TOOK"]
    rows = {w[0]: w for w in words(listing)[1:]}
    assert rows[ids["graph"]][1:6] == ["review_loop", "v1", "graph", "running", "-"]
    assert rows[ids["statemachine"]][1:6] == ["order", "v1", "statemachine", "running", "-"]
    assert rows[ids["dag"]][1:6] == ["plain", "v1", "dag", "running", "0/1"]
    assert {r["id"]: r["kind"] for r in json.loads(ok(ff("run", "list", "--json")))} == {v: k for k, v in ids.items()}


def test_run_show_draws_fan_out_progress_of_a_dag_task_and_a_graph_node(ff, tmp_path, migrated_dsn):
    apply(ff, tmp_path, photos(max_concurrency=2))
    run_id = ok(ff("run", "start", "photos", "--input", '{"photos": ["a", "b", "c", "d", "e", "f"]}')).strip()
    conn, api = client(migrated_dsn)
    (first,) = api.claim_work(["default"], "w1", batch=1)
    api.complete_work(first.work_item_id, first.fencing_token, {"thumb": first.payload["item"]})
    shown = ok(ff("run", "show", run_id))
    assert has_line(shown, "FAN-OUT")
    line = next(line for line in shown.splitlines() if line.strip().startswith("resize  map"))
    assert line.endswith("  1/6 done  2 live (at most 2)  running"), line  # one settled, the next two live
    assert "███" in line and "░" in line

    graph = {"name": "album", "kind": "graph", "start": "split",
             "nodes": [{"key": "split", "map": {"over": "$.state.items", "mode": "foreach", "max_concurrency": 3}},
                       {"key": "done", "final": True}],
             "edges": [{"from": "split", "to": "done"}]}
    apply(ff, tmp_path, graph)
    graph_id = ok(ff("run", "start", "album", "--input", '{"items": [1, 2, 3, 4]}')).strip()
    rows = api.claim_work(["default"], "w1", batch=10, task_names=["split"])
    assert len(rows) == 3  # the node's bound
    api.fail_work(rows[0].work_item_id, rows[0].fencing_token, "bad item", False)
    failed = ok(ff("run", "show", graph_id))
    assert "FAN-OUT" in failed
    fan_line = next(line for line in failed.splitlines() if line.strip().startswith("split  foreach"))
    assert "  1/4 done  1 failed  failed  — element 0 failed" in fan_line, fan_line
    assert "graph  failed" in failed.splitlines()[0]
    assert "ITEMS" not in failed  # the children are counted by the bar, not listed


def test_run_watch_updates_fan_out_progress_live(ff, tmp_path, migrated_dsn):
    """Piped, watch prints one line per change: each child completed by hand shows up as [k/4]."""
    apply(ff, tmp_path, photos(max_concurrency=1))
    run_id = ok(ff("run", "start", "photos", "--input", '{"photos": ["a", "b", "c", "d"]}')).strip()
    env = {k: v for k, v in os.environ.items() if k not in ("FLOWFORGE_DSN", "FLOWFORGE_AMQP_URL")}
    proc = subprocess.Popen([str(FLOWFORGE), "--dsn", migrated_dsn, "run", "watch", run_id, "--interval", "0.1",
                             "--timeout", "60"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    lines: queue.Queue = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True)
    reader.start()
    seen: list[str] = []

    def wait_for(fragment: str) -> None:
        def found():
            while not lines.empty():
                seen.append(lines.get())
            return any(fragment in line for line in seen)
        wait_until(found, 20, f"watch to print {fragment!r} (so far {seen})")

    conn, api = client(migrated_dsn)
    try:
        wait_for("resize=running[0/4]")
        for k in range(1, 5):
            (row,) = api.claim_work(["default"], "w1", batch=1, task_names=["resize"])
            api.complete_work(row.work_item_id, row.fencing_token, {"n": k})
            wait_for(f"resize=succeeded[4/4]" if k == 4 else f"resize=running[{k}/4]")
        (album,) = api.claim(["default"], "w1")
        api.complete(album.task_run_id, album.fencing_token, {"ok": True})
        proc.wait(timeout=30)
        err = proc.stderr.read()
        reader.join(10)
    finally:
        if proc.poll() is None:
            proc.kill()
        conn.close()
    while not lines.empty():
        seen.append(lines.get())
    assert proc.returncode == 0, err
    progress = [line for line in seen if line.startswith("running:")]
    assert [f"[{k}/4]" in "".join(progress) for k in range(4)] == [True] * 4
    assert seen[-1].startswith("run succeeded: 2/2 tasks, 0 retries")
    assert any("4/4 done" in line and "succeeded" in line for line in seen)  # the final drawing's bar


def test_run_watch_of_a_graph_and_a_machine_ends_with_their_summary(ff, tmp_path, migrated_dsn):
    apply(ff, tmp_path, review_loop())
    apply(ff, tmp_path, order(backoff="0 seconds"))
    graph_id = ok(ff("run", "start", "review_loop")).strip()
    machine_id = ok(ff("run", "start", "order")).strip()
    ok(ff("run", "signal", machine_id, "paid", "--payload", '{"amount": 100}'))
    conn, api = client(migrated_dsn)
    drive(api, "w1", lambda row: {"approved": True} if row.task_name == "review" else {"tracking": "T"})
    graph = ok(ff("run", "watch", graph_id))
    assert graph.splitlines()[-1].startswith(
        'run succeeded: 4 steps, path draft → review → publish → done (reached final node "done"), ')
    machine = ok(ff("run", "watch", machine_id))
    assert machine.splitlines()[-1].startswith(
        'run succeeded: in delivered after 3 transitions (reached final state "delivered"), ')
    cancelled = ok(ff("run", "start", "order")).strip()
    ok(ff("run", "cancel", cancelled))
    watched = ff("run", "watch", cancelled)
    assert watched.returncode == 1 and "run cancelled: in awaiting_payment" in watched.stdout


# --- agents ----------------------------------------------------------------------------------

def test_agent_list_drain_and_activate(ff, tmp_path, migrated_dsn):
    assert "no agents yet" in ok(ff("agent", "list"))
    assert json.loads(ok(ff("agent", "list", "--json"))) == []
    apply(ff, tmp_path, review_loop())
    conn, api = client(migrated_dsn)
    api.register_agent("cli-a", {"labels": {"gpu": True, "zone": "eu"}, "version": "v9",
                                 "heartbeat_interval": "30 seconds"})
    api.agent_heartbeat("cli-a", {"cpu_percent": 12.5, "memory_percent": 40.2, "load_1m": 0.75})
    api.register_agent("cli-b", {})
    api.start_run("review_loop")
    (held,) = api.claim_work(["default"], "cli-a")
    listing = ok(ff("agent", "list"))
    assert words(listing)[0] == ["NAME", "STATUS", "HOLDING", "CPU", "MEMORY", "LOAD", "HEARTBEAT", "LAST", "CLAIM",
                                 "VERSION", "LABELS"]
    row_a = next(w for w in words(listing) if w[0] == "cli-a")
    assert row_a[1:6] == ["active", "1", "12%", "40%", "0.75"] and row_a[-3:] == ["v9", "gpu=true,", "zone=eu"]
    row_b = next(w for w in words(listing) if w[0] == "cli-b")
    assert row_b[1:6] == ["active", "0", "-", "-", "-"] and "never" in row_b  # it never claimed
    as_json = {a["name"]: a for a in json.loads(ok(ff("--json", "agent", "list")))}
    assert as_json["cli-a"]["heartbeat_interval"] == 30.0 and as_json["cli-a"]["metrics"]["cpu_percent"] == 12.5

    assert ok(ff("agent", "drain", "cli-a")) == (
        "agent cli-a draining: it finishes the 1 unit(s) it holds and is given nothing new "
        "(`flowforge agent list` shows it drained once it holds nothing)\n")
    assert api.claim_work(["default"], "cli-a", batch=5) == []  # given nothing while draining
    api.complete_work(held.work_item_id, held.fencing_token, {"text": "x"})
    assert next(w for w in words(ok(ff("agent", "list"))) if w[0] == "cli-a")[1] == "drained"
    assert ok(ff("agent", "drain", "cli-b")) == "agent cli-b drained: it holds nothing and is given nothing new\n"
    assert json.loads(ok(ff("--json", "agent", "activate", "cli-a"))) == {"name": "cli-a", "status": "active",
                                                                         "holding": 0}
    assert ok(ff("agent", "activate", "cli-b")) == "agent cli-b active: it is given work again\n"
    assert agents(migrated_dsn)["cli-b"]["status"] == "active"
    for verb in ("drain", "activate"):
        proc = ff("agent", verb, "nobody")
        assert_one_line_error(proc)
        assert "agent 'nobody' not found" in proc.stderr and "flowforge agent list" in proc.stderr


WORKER_APP = """
import flowforge

worker = flowforge.Worker(queues=["default"], poll_interval=0.2, heartbeat_interval=1, grace_period=2)

@worker.task("draft")
def draft(ctx, input):
    return {"by": ctx.worker_name, "engine": ctx.engine}

@worker.task("review")
def review(ctx, input):
    return {"approved": True}

@worker.task("publish")
def publish(ctx, input):
    return {}
"""


def test_the_worker_command_registers_an_agent_with_labels(ff, tmp_path, migrated_dsn):
    (tmp_path / "agent_app.py").write_text(textwrap.dedent(WORKER_APP))
    apply(ff, tmp_path, review_loop(worker_params={"gpu": True}))
    run_id = ok(ff("run", "start", "review_loop")).strip()
    env = {k: v for k, v in os.environ.items() if k not in ("FLOWFORGE_DSN", "FLOWFORGE_AMQP_URL")}
    proc = subprocess.Popen([str(FLOWFORGE), "--dsn", migrated_dsn, "worker", "agent_app:worker", "--agent", "cli-gpu",
                             "--label", "gpu=true", "--label", "zone=eu", "--log-level", "WARNING"],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: get_run(migrated_dsn, run_id)["state"] == "succeeded", 30, "the labelled worker")
        agent = agents(migrated_dsn)["cli-gpu"]
        assert agent["labels"] == {"gpu": True, "zone": "eu"}
        assert get_run(migrated_dsn, run_id)["data"]["by"] == "cli-gpu"
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    assert agents(migrated_dsn)["cli-gpu"]["status"] == "inactive"
    bad = ff("worker", "agent_app:worker", "--label", "gpu=true", cwd=tmp_path)
    assert_one_line_error(bad)
    assert "--label needs --agent" in bad.stderr


@pytest.mark.parametrize("args", [("agent", "list"), ("run", "signal", "ffff", "paid")])
def test_unreachable_database_is_one_line(args):
    from test_cli_foundation import run

    assert_one_line_error(run("--dsn", "postgresql://postgres@127.0.0.1:1/postgres", *args))
