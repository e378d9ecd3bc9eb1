"""The seed's two tracing queries (issue 16), verbatim but for our names, through real firings.

tests/sql/70_maintenance/cron_triggers.sql runs them on firings made in SQL; here the
firings come the way production makes them: signed webhooks over HTTP to ``flowforge
serve`` (on a ``flowforge_webhook``-only login) and files the daemon's feeder finds in a
real directory. The expected rows are built from what the test sent and what each HTTP
answer said — never read back from the table the queries read.

* query 1, the runs trigger ``on-push`` caused with their firing's outcome and payload,
  newest first: the three accepted pushes (a redelivery is no second row), not the run
  another trigger caused, nor one started by hand;
* query 2, the firings that caused nothing, newest by the *source's* time first: the
  push with a bad signature, the push whose body was not JSON, and the file whose signal
  named no run — the file's ``fired_on`` is its mtime (2023), so it comes last although it
  was recorded last.
"""

from __future__ import annotations

import json
import os
import uuid
from datetime import datetime, timezone

import httpx
import psycopg
import pytest
from psycopg.types.json import Jsonb

from conftest import create_migrated_database, drop_database
from helpers_runtime import DaemonProcess, wait_until
from helpers_triggers import ServeProcess, drop_login, firings, sign, webhook_login

SECRET = "the-on-push-secret-0123456789"
QUERY_1 = ("SELECT r.run_id, r.engine_kind, r.definition_id, f.outcome, f.payload FROM flowforge.engine_run r "
           "JOIN flowforge.trigger_firing f ON f.id = r.trigger_firing_id WHERE r.triggered_by = 'on-push' "
           "ORDER BY r.created_at DESC;")
QUERY_2 = ("SELECT trigger_name, outcome, error, fired_on FROM flowforge.trigger_firing "
           "WHERE outcome IN ('refused', 'failed') ORDER BY fired_on DESC LIMIT 50;")
MTIME_NS = 1_700_000_000_000_000_000  # 2023-11-14T22:13:20Z


@pytest.fixture
def world(admin_dsn, migrated_template, tmp_path):
    name, dsn = create_migrated_database(admin_dsn, migrated_template)
    role = serve = daemon = None
    try:
        role, hooks_dsn = webhook_login(admin_dsn, dsn)
        serve = ServeProcess(dsn, hooks_dsn=hooks_dsn)
        yield {"dsn": dsn, "serve": serve, "tmp": tmp_path,
               "daemon": lambda: DaemonProcess(dsn, None, "--feed-interval", "0.2", "--engine-id", "tracing")}
    finally:
        if serve is not None:
            serve.stop()
        drop_database(admin_dsn, name)
        if role is not None:
            drop_login(admin_dsn, role)


def push(world, body: bytes, delivery: str, secret: str = SECRET) -> httpx.Response:
    return httpx.post(world["serve"].url + "/hooks/default/on-push", content=body, timeout=30,
                      headers={"X-FlowForge-Signature": sign(secret, body), "X-FlowForge-Delivery": delivery})


def test_the_seeds_tracing_queries_answer_through_serve_and_the_feeders(world):
    dsn, inbox = world["dsn"], world["tmp"] / "inbox"
    inbox.mkdir()
    with psycopg.connect(dsn, autocommit=True) as conn:
        build = conn.execute("SELECT flowforge.define_workflow(spec => %s::jsonb)",
                             (Jsonb({"name": "build", "tasks": [{"key": "compile"}]}),)).fetchone()[0]
        conn.execute("SELECT flowforge.create_trigger(name => 'on-push', trigger_type => 'webhook', action => 'start', "
                     "target => 'build', options => %s::jsonb)", (Jsonb({"secret": SECRET}),))
        conn.execute("SELECT flowforge.create_trigger(name => 'on-tag', trigger_type => 'webhook', action => 'start', "
                     "target => 'build', options => %s::jsonb)", (Jsonb({"secret": SECRET}),))
        conn.execute("SELECT flowforge.create_trigger(name => 'drop-box', trigger_type => 'filesystem', "
                     "action => 'signal', target => 'paid', options => %s::jsonb)",
                     (Jsonb({"path": str(inbox), "run_id": str(uuid.uuid4())}),))
        by_hand = conn.execute("SELECT flowforge.start_run(workflow => 'build')").fetchone()[0]

    bodies = [{"ref": "refs/heads/main", "after": "a1"}, {"ref": "refs/heads/dev", "after": "b2"},
              {"ref": "refs/heads/main", "after": "c3"}]
    accepted = []
    for n, body in enumerate(bodies, 1):
        answer = push(world, json.dumps(body).encode(), f"gh-{n}")
        assert answer.status_code == 202 and answer.json()["outcome"] == "started"
        accepted.append((answer.json()["run_id"], body))
        if n == 2:
            replay = push(world, json.dumps(body).encode(), "gh-2")
            assert replay.json()["duplicate"] is True
    tag = httpx.post(world["serve"].url + "/hooks/default/on-tag", content=b'{"tag": "v1"}', timeout=30,
                     headers={"X-FlowForge-Signature": sign(SECRET, b'{"tag": "v1"}')})
    assert tag.status_code == 202
    forged = push(world, b'{"ref": "refs/heads/main"}', "gh-9", secret="not-the-secret-at-all")
    assert forged.status_code == 401
    not_json = push(world, b"ref=main", "gh-10")
    assert not_json.status_code == 400

    (inbox / "payment.json").write_text("{}")
    os.utime(inbox / "payment.json", ns=(MTIME_NS, MTIME_NS))
    daemon = world["daemon"]()
    try:
        wait_until(lambda: firings(dsn, "drop-box"), 30, "the feeder's firing")
        assert daemon.stop() == 0
    finally:
        daemon.cleanup()

    with psycopg.connect(dsn, autocommit=True) as conn:
        traced = conn.execute(QUERY_1).fetchall()
        nothing = conn.execute(QUERY_2).fetchall()

    assert [(str(run_id), kind, definition, outcome, payload) for run_id, kind, definition, outcome, payload in traced] \
        == [(run_id, "dag", build, "started", body) for run_id, body in reversed(accepted)]
    assert str(by_hand) not in {str(r[0]) for r in traced} and tag.json()["run_id"] not in {str(r[0]) for r in traced}

    assert [(name, outcome) for name, outcome, _, _ in nothing] == \
        [("on-push", "refused"), ("on-push", "refused"), ("drop-box", "refused")]
    assert "the body is not JSON" in nothing[0][2] and "signature does not match" in nothing[1][2]
    assert "not found" in nothing[2][2]  # the signal named no run
    assert nothing[0][3] > nothing[1][3] > nothing[2][3] == datetime.fromtimestamp(MTIME_NS / 1e9, timezone.utc)
