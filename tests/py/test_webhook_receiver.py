"""The webhook receiver over real HTTP (issue 16): ``flowforge serve`` as a process, on a login
that is a member of ``flowforge_webhook`` only, in front of a migrated database.

Every answer is the SQL function's (``receive_webhook``): a good signature starts a run
whose directory row names the trigger and the firing; a bad one and an unknown trigger
get the same 401, and only the bad signature leaves a (refused) firing; a replayed
delivery id returns the first firing and starts nothing; a body over the limit is
answered 413 before it has been sent whole — the test keeps the rest of it and reads the
answer first.
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import uuid
from pathlib import Path

import httpx
import psycopg
import pytest
from psycopg import sql as pgsql
from psycopg.conninfo import make_conninfo
from psycopg.types.json import Jsonb

from conftest import create_migrated_database, drop_database
from helpers_triggers import ServeProcess, drop_login, firings, runs_triggered_by, sign, webhook_login

SECRET = "s3cret-for-the-receiver-tests"
LIMIT = 4096  # --max-body-bytes


@pytest.fixture(scope="module")
def world(admin_dsn, migrated_template):
    """A migrated database with workflow ``build``, the receiver's login, and ``flowforge serve`` on it."""
    name, dsn = create_migrated_database(admin_dsn, migrated_template)
    role = serve = None
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("SELECT flowforge.define_workflow(spec => %s::jsonb)",
                         (Jsonb({"name": "build", "tasks": [{"key": "compile"}]}),))
        role, hooks_dsn = webhook_login(admin_dsn, dsn)
        serve = ServeProcess(dsn, "--max-body-bytes", str(LIMIT), hooks_dsn=hooks_dsn)
        yield {"dsn": dsn, "role": role, "hooks_dsn": hooks_dsn, "serve": serve}
    finally:
        if serve is not None:
            serve.stop()
        drop_database(admin_dsn, name)
        if role is not None:
            drop_login(admin_dsn, role)


def webhook(dsn: str, name: str, target: str = "build") -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT flowforge.create_trigger(name => %s::text, trigger_type => 'webhook', action => 'start', "
                     "target => %s::text, options => %s::jsonb)", (name, target, Jsonb({"secret": SECRET})))


def post(world, path: str, body: bytes, *, signature: str | None = None, delivery: str | None = None,
         secret: str = SECRET) -> httpx.Response:
    headers = {"Content-Type": "application/json",
               "X-FlowForge-Signature": signature if signature is not None else sign(secret, body)}
    if delivery is not None:
        headers["X-FlowForge-Delivery"] = delivery
    return httpx.post(world["serve"].url + path, content=body, headers=headers, timeout=30)


def test_a_good_signature_starts_a_run_that_names_its_trigger_and_firing(world):
    webhook(world["dsn"], "on-push")
    body = json.dumps({"ref": "refs/heads/main", "after": "abc123"}).encode()
    answer = post(world, "/hooks/default/on-push", body, delivery="push-1")
    assert answer.status_code == 202, answer.text
    firing = answer.json()
    assert firing["outcome"] == "started" and firing["run_id"] and firing["error"] is None
    runs = runs_triggered_by(world["dsn"], "on-push")
    assert [(str(r["run_id"]), r["triggered_by"], str(r["trigger_firing_id"])) for r in runs] == \
        [(firing["run_id"], "on-push", firing["firing_id"])]
    [row] = firings(world["dsn"], "on-push")
    assert str(row["id"]) == firing["firing_id"] and row["outcome"] == "started"
    assert row["payload"] == {"ref": "refs/heads/main", "after": "abc123"} and row["delivery_id"] == "push-1"
    with psycopg.connect(world["dsn"], autocommit=True) as conn:
        run_input = conn.execute("SELECT input FROM flowforge.workflow_run WHERE id = %s",
                                 (firing["run_id"],)).fetchone()[0]
    assert run_input["ref"] == "refs/heads/main"  # the payload's keys are the run's input


def test_a_bad_signature_is_401_and_leaves_a_refused_firing_and_no_run(world):
    webhook(world["dsn"], "signed")
    body = b'{"amount": 10}'
    for signature in (sign("another-secret-of-16-chars", body), "sha256=" + "0" * 64, "garbage", ""):
        answer = post(world, "/hooks/default/signed", body, signature=signature, delivery="d-1")
        assert answer.status_code == 401, (signature, answer.text)
        assert answer.json() == {"error": "unknown trigger or bad signature"}
    unsigned = httpx.post(world["serve"].url + "/hooks/default/signed", content=body, timeout=30)
    assert unsigned.status_code == 401
    rows = firings(world["dsn"], "signed")
    assert [r["outcome"] for r in rows] == ["refused"] * 5
    assert all(r["run_id"] is None and "signature" in r["error"] for r in rows)
    assert all(r["delivery_id"] is None for r in rows)  # an unsigned request never takes a delivery id
    assert runs_triggered_by(world["dsn"], "signed") == []
    # The genuine delivery of that id still fires: the refusals did not take it.
    good = post(world, "/hooks/default/signed", body, delivery="d-1")
    assert good.status_code == 202 and good.json()["outcome"] == "started"


def test_an_unknown_trigger_or_organization_is_the_same_401_and_records_nothing(world):
    webhook(world["dsn"], "known")
    with psycopg.connect(world["dsn"], autocommit=True) as conn:
        before = conn.execute("SELECT count(*) FROM flowforge.trigger_firing").fetchone()[0]
    body = b'{"x": 1}'
    bad_signature = post(world, "/hooks/default/known", body, signature=sign("wrong-secret-wrong-secret", body))
    answers = [post(world, "/hooks/default/nobody", body), post(world, "/hooks/no-such-org/known", body),
               post(world, "/hooks/default/nobody", body, signature="sha256=" + "a" * 64)]
    for answer in answers:
        assert answer.status_code == 401
        assert answer.content == bad_signature.content  # nothing tells an unknown name from a bad signature
    with psycopg.connect(world["dsn"], autocommit=True) as conn:
        after = conn.execute("SELECT count(*) FROM flowforge.trigger_firing").fetchone()[0]
    assert after == before + 1  # only the bad signature on the trigger that exists
    assert firings(world["dsn"], "nobody") == []


def test_a_replayed_delivery_returns_the_first_firing_and_starts_nothing(world):
    webhook(world["dsn"], "replayed")
    first = post(world, "/hooks/default/replayed", b'{"n": 1}', delivery="evt-42")
    assert first.status_code == 202
    again = post(world, "/hooks/default/replayed", b'{"n": 1}', delivery="evt-42")
    other_body = post(world, "/hooks/default/replayed", b'{"n": 2}', delivery="evt-42")
    not_json = post(world, "/hooks/default/replayed", b"this is not JSON", delivery="evt-42")
    for answer in (again, other_body, not_json):
        assert answer.status_code == 202, answer.text
        assert answer.json()["firing_id"] == first.json()["firing_id"]
        assert answer.json()["duplicate"] is True and answer.json()["run_id"] == first.json()["run_id"]
    assert len(firings(world["dsn"], "replayed")) == 1
    assert len(runs_triggered_by(world["dsn"], "replayed")) == 1
    # Another delivery id is another firing.
    fresh = post(world, "/hooks/default/replayed", b'{"n": 3}', delivery="evt-43")
    assert fresh.status_code == 202 and fresh.json()["firing_id"] != first.json()["firing_id"]
    assert len(runs_triggered_by(world["dsn"], "replayed")) == 2


def test_what_the_sql_refuses_gets_a_clear_status(world):
    webhook(world["dsn"], "strict")
    not_json = post(world, "/hooks/default/strict", b"<xml/>", delivery="x-1")
    assert not_json.status_code == 400 and not_json.json() == {"error": "the body is not JSON"}
    long_id = post(world, "/hooks/default/strict", b"{}", delivery="d" * 201)
    assert long_id.status_code == 400 and "200 characters" in long_id.json()["error"]
    ok_id = post(world, "/hooks/default/strict", b"{}", delivery="d" * 200)
    assert ok_id.status_code == 202
    assert [r["outcome"] for r in firings(world["dsn"], "strict")] == ["refused", "started"]
    wrong_method = httpx.get(world["serve"].url + "/hooks/default/strict", timeout=30)
    assert wrong_method.status_code == 405


def raw_request(world, head: str, first_bytes: bytes) -> tuple[bytes, socket.socket]:
    """Send a request head and the first bytes of its body, keep the rest, and read the answer."""
    sock = socket.create_connection(("127.0.0.1", world["serve"].port), timeout=30)
    sock.sendall(head.encode() + first_bytes)
    answer = b""
    while b"\r\n\r\n" not in answer:
        chunk = sock.recv(65536)
        if not chunk:
            break
        answer += chunk
    return answer, sock


def test_an_oversized_body_is_413_before_it_is_read_whole(world):
    webhook(world["dsn"], "big")
    body_sig = "sha256=" + "0" * 64
    # 1. Content-Length says it: answered with no byte of the body sent.
    head = (f"POST /hooks/default/big HTTP/1.1\r\nHost: x\r\nContent-Length: {10 * LIMIT}\r\n"
            f"X-FlowForge-Signature: {body_sig}\r\n\r\n")
    answer, sock = raw_request(world, head, b"")
    sock.close()
    assert answer.startswith(b"HTTP/1.1 413 "), answer
    # 2. Chunked, no length: LIMIT + 1 bytes sent, the body never terminated — the answer comes anyway.
    head = ("POST /hooks/default/big HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
            f"X-FlowForge-Signature: {body_sig}\r\n\r\n")
    piece = b"x" * 1024
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for _ in range(LIMIT // 1024 + 1))
    answer, sock = raw_request(world, head, chunks)
    try:
        assert answer.startswith(b"HTTP/1.1 413 "), answer
        assert b"connection: close" in answer.lower()  # the rest is never read: the connection is not reused
        assert b"over the limit of 4096 bytes" in answer + sock.recv(65536)
    finally:
        sock.close()
    # 3. Exactly at the limit is read (and refused for what it is, not for its size).
    at_limit = post(world, "/hooks/default/big", b" " * (LIMIT - 2) + b"{}")
    assert at_limit.status_code == 202
    assert [r["outcome"] for r in firings(world["dsn"], "big")] == ["started"]  # the 413s recorded nothing


def test_the_receiver_connects_as_a_login_that_may_call_receive_webhook_only(world):
    with psycopg.connect(world["dsn"], autocommit=True) as conn:
        memberships = conn.execute(
            "SELECT array_agg(g.rolname::text ORDER BY g.rolname) FROM pg_auth_members m "
            "JOIN pg_roles g ON g.oid = m.roleid JOIN pg_roles r ON r.oid = m.member WHERE r.rolname = %s",
            (world["role"],)).fetchone()[0]
        sessions = conn.execute("SELECT DISTINCT usename::text FROM pg_stat_activity "
                                "WHERE datname = current_database() AND application_name = 'flowforge-serve'"
                                ).fetchall()
        superuser = conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = %s", (world["role"],)).fetchone()[0]
    assert memberships == ["flowforge_webhook"] and superuser is False
    assert sessions == [(world["role"],)]  # the pool's connections are the receiver's login, none other
    # That login can do nothing else: not fire a trigger, not read a table.
    with psycopg.connect(world["hooks_dsn"], autocommit=True) as conn:
        for statement in ("SELECT flowforge.fire_trigger(name => 'on-push')",
                          "SELECT count(*) FROM flowforge.trigger_firing",
                          "SELECT * FROM flowforge.list_triggers()"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement)


def test_healthz_says_whether_the_database_answers(world):
    health = httpx.get(world["serve"].url + "/healthz", timeout=30)
    assert health.status_code == 200 and health.json() == {"status": "ok", "database": "ok"}


def test_the_signing_example_in_docs_triggers_md_runs_as_written(world):
    """docs/triggers.md's openssl + curl block, with this test's secret and URL, gets a 202."""
    if not (shutil.which("openssl") and shutil.which("curl")):
        pytest.fail("openssl and curl are needed (make system-deps installs them)", pytrace=False)
    doc = (Path(__file__).resolve().parents[2] / "docs" / "triggers.md").read_text(encoding="utf-8")
    script = re.search(r"With `openssl` and `curl`:\n\n```sh\n(.*?)```", doc, re.S).group(1)
    assert script.count("SECRET=") == 1 and script.count("URL=") == 1
    webhook(world["dsn"], "docs-hook")
    script = re.sub(r"^SECRET=.*$", f"SECRET='{SECRET}'", script, flags=re.M)
    script = re.sub(r"^URL=.*$", f"URL='{world['serve'].url}/hooks/default/docs-hook'", script, flags=re.M)
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", script + "\n"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["outcome"] == "started"
    [row] = firings(world["dsn"], "docs-hook")
    assert row["payload"] == {"ref": "refs/heads/main", "after": "9fceb02"} and row["delivery_id"] == "push-0001"


def test_a_receiver_login_without_flowforge_webhook_is_the_receivers_fault_not_the_senders(world, admin_dsn):
    """A misconfigured login: 500 with a plain message (the detail in serve's log), never a 401 or a traceback."""
    role = f"ff_nohooks_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(pgsql.SQL("CREATE ROLE {} LOGIN").format(pgsql.Identifier(role)))
    serve = None
    try:
        serve = ServeProcess(world["dsn"], hooks_dsn=make_conninfo(world["dsn"], user=role))
        webhook(world["dsn"], "misconfigured")
        body = b'{"a": 1}'
        answer = httpx.post(serve.url + "/hooks/default/misconfigured", content=body, timeout=30,
                            headers={"X-FlowForge-Signature": sign(SECRET, body)})
        assert answer.status_code == 500
        assert answer.json() == {"error": "the receiver could not record this delivery"}
        assert "receive_webhook failed" in serve.log and "permission denied" in serve.log
        assert "Traceback" not in serve.log
        assert firings(world["dsn"], "misconfigured") == []
    finally:
        if serve is not None:
            serve.stop()
        with psycopg.connect(admin_dsn, autocommit=True) as conn:
            conn.execute(TERMINATE, (role,))
            conn.execute(pgsql.SQL("DROP ROLE IF EXISTS {}").format(pgsql.Identifier(role)))


TERMINATE = "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s"
