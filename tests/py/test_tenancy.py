"""Tenant isolation against arbitrary SQL, with real login roles.

Each test gets a fresh migrated database (conftest ``migrated_dsn``) and its
own login roles. Roles are cluster-wide, so their names carry a random suffix
and they are dropped at teardown, after the test database is gone (the
``role_registry`` fixture is set up before ``migrated_dsn``, so it is torn
down after it).

The world every test starts from (built by the operator, the superuser):

  org-a: alice (member), viewer (viewer), admin (admin)
  org-b: bob (member), badmin (admin)
  gw:    a gateway login (IN ROLE flowforge_gateway), no organization
  carol: a login that belongs to no organization yet

  alice defined "wf" (one task on queue "default") and "a-only"; she started
  run ``ra`` and claimed its task (``tr_a`` under ``token_a``) and started
  ``ra_ready``, whose task is still ready on "default".
  bob defined "wf" on queue "bq" and started ``rb`` (ready, not claimed).

Every attack below must fail with the documented SQLSTATE and change
nothing: ``snapshot()`` is every row of every flowforge table (read as the
superuser, who bypasses RLS), compared before and after.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import uuid
from dataclasses import dataclass, field
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

NOT_FOUND = "FF001"
STALE = "FF004"
FORBIDDEN = "FF007"
UNAUTHENTICATED = "FF008"
TOO_LARGE = "FF009"
INSUFFICIENT_PRIVILEGE = "42501"
DEFAULT_ORG = "00000000-0000-0000-0000-000000000001"
KEY_FORMAT = re.compile(r"^ffk_[0-9a-f]{12}_[0-9a-f]{64}$")

GUARD_OPTIONS = "-c lock_timeout=10s -c statement_timeout=60s"
SINGLE_WF = {"name": "wf", "tasks": [{"key": "only", "queue": "default"}]}
A_ONLY_WF = {"name": "a-only", "tasks": [{"key": "only", "queue": "default"}]}
B_WF = {"name": "wf", "tasks": [{"key": "only", "queue": "bq"}]}

# Every flowforge table but gateway_session (an UNLOGGED scratch table that
# authenticate() rewrites) takes part in "nothing changed".
SNAPSHOT_TABLES = """
SELECT c.relname FROM pg_class c
WHERE c.relnamespace = 'flowforge'::regnamespace AND c.relkind IN ('r', 'p') AND c.relname <> 'gateway_session'
ORDER BY 1
"""


# ---------------------------------------------------------------------------
# Fixtures
# ---------------------------------------------------------------------------


@pytest.fixture
def role_registry(admin_dsn: str):
    """Names of the cluster roles a test creates; dropped after everything else."""
    names: list[str] = []
    yield names
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        for name in reversed(names):
            conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(name)))


@dataclass
class World:
    dsn: str
    suffix: str
    registry: list[str]
    op: psycopg.Connection  # the operator: superuser, acts for the default organization
    roles: dict[str, str] = field(default_factory=dict)
    conns: dict[str, psycopg.Connection] = field(default_factory=dict)
    ids: dict[str, Any] = field(default_factory=dict)

    # -- roles and connections ----------------------------------------------
    def create_login(self, short: str, *member_of: str) -> str:
        name = f"ff_{short}_{self.suffix}"
        self.registry.append(name)
        stmt = sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(name))
        if member_of:
            stmt = stmt + sql.SQL(" IN ROLE ") + sql.SQL(", ").join(sql.Identifier(r) for r in member_of)
        self.op.execute(stmt)
        self.roles[short] = name
        return name

    def conn(self, short: str) -> psycopg.Connection:
        """An autocommit connection that logs in as the role (cached)."""
        if short not in self.conns:
            self.conns[short] = self._connect(short)
        return self.conns[short]

    def new_conn(self, short: str) -> psycopg.Connection:
        conn = self._connect(short)
        self.conns[f"{short}#{len(self.conns)}"] = conn
        return conn

    def _connect(self, short: str) -> psycopg.Connection:
        # A lock wait the test did not expect fails the test instead of hanging it.
        return psycopg.connect(make_conninfo(self.dsn, user=self.roles[short], options=GUARD_OPTIONS),
                               autocommit=True)

    def close(self) -> None:
        for conn in self.conns.values():
            conn.close()
        self.op.close()

    # -- reading as the operator --------------------------------------------
    def one(self, query: str, params: Any = None) -> Any:
        return self.op.execute(query, params).fetchone()[0]

    def snapshot(self) -> dict[str, list[str]]:
        out = {}
        for (table,) in self.op.execute(SNAPSHOT_TABLES).fetchall():
            rows = self.op.execute(
                sql.SQL("SELECT to_jsonb(t)::text FROM flowforge.{} t ORDER BY 1").format(sql.Identifier(table))
            ).fetchall()
            out[table] = [r[0] for r in rows]
        return out

    def task_state(self, task_run_id: Any) -> tuple[str, int]:
        return self.op.execute(
            "SELECT state, fencing_token FROM flowforge.task_run WHERE id = %s", (task_run_id,)
        ).fetchone()


def error_of(conn: psycopg.Connection, query: Any, params: Any = None) -> tuple[str, psycopg.Error] | None:
    """Run one statement; None when it succeeded, else (SQLSTATE, exception)."""
    try:
        conn.execute(query, params)
    except psycopg.Error as exc:
        if not conn.autocommit and conn.info.transaction_status == psycopg.pq.TransactionStatus.INERROR:
            conn.rollback()
        return exc.sqlstate, exc
    return None


def code_of(conn: psycopg.Connection, query: Any, params: Any = None) -> str | None:
    err = error_of(conn, query, params)
    return None if err is None else err[0]


def full_text(exc: psycopg.Error) -> str:
    d = exc.diag
    return " ".join(str(x) for x in (exc, d.message_primary, d.message_detail, d.message_hint, d.context) if x)


def define(conn: psycopg.Connection, spec: dict) -> Any:
    return conn.execute("SELECT flowforge.define_workflow(%s::jsonb)", (json.dumps(spec),)).fetchone()[0]


def start(conn: psycopg.Connection, workflow: str, payload: dict | None = None) -> Any:
    return conn.execute(
        "SELECT flowforge.start_run(%s, %s::jsonb)", (workflow, json.dumps(payload or {}))
    ).fetchone()[0]


def claim(conn: psycopg.Connection, queue: str = "default", batch: int = 100) -> list[tuple]:
    return conn.execute(
        "SELECT task_run_id, fencing_token FROM flowforge.claim(ARRAY[%s], 'w', '1 hour', %s)", (queue, batch)
    ).fetchall()


@pytest.fixture
def world(role_registry: list[str], migrated_dsn: str):
    op = psycopg.connect(make_conninfo(migrated_dsn, options=GUARD_OPTIONS), autocommit=True)
    w = World(dsn=migrated_dsn, suffix=uuid.uuid4().hex[:8], registry=role_registry, op=op)
    try:
        w.ids["org_a"] = w.one("SELECT flowforge.create_organization('org-a', 'Org A')")
        w.ids["org_b"] = w.one("SELECT flowforge.create_organization('org-b', 'Org B')")
        for short in ("alice", "bob", "viewer", "admin", "badmin", "carol"):
            w.create_login(short)
        w.create_login("gw", "flowforge_gateway")
        for short, org, role in (("alice", "org-a", "member"), ("viewer", "org-a", "viewer"),
                                 ("admin", "org-a", "admin"), ("bob", "org-b", "member"),
                                 ("badmin", "org-b", "admin")):
            op.execute("SELECT flowforge.add_member(%s, %s, %s)", (org, w.roles[short], role))

        alice, bob = w.conn("alice"), w.conn("bob")
        define(alice, SINGLE_WF)
        define(alice, A_ONLY_WF)
        define(bob, B_WF)
        w.ids["ra"] = start(alice, "wf", {"who": "alice"})
        [(w.ids["tr_a"], w.ids["token_a"])] = claim(alice, batch=1)
        w.ids["ra_ready"] = start(alice, "wf", {"who": "alice, later"})
        w.ids["rb"] = start(bob, "wf", {"who": "bob"})
        w.ids["tr_b_ready"] = w.one("SELECT id FROM flowforge.task_run WHERE workflow_run_id = %s", (w.ids["rb"],))
        yield w
    finally:
        w.close()


def api_key(w: World, role: str = "member", org: str = "org-a", admin: str = "admin") -> str:
    token = w.conn(admin).execute("SELECT flowforge.create_api_key(%s, 'test key', %s)", (org, role)).fetchone()[0]
    assert KEY_FORMAT.match(token), token
    return token


def prefix_of(token: str) -> str:
    return "_".join(token.split("_")[:2])


# ---------------------------------------------------------------------------
# The world is what it claims to be
# ---------------------------------------------------------------------------


def test_each_login_acts_for_its_own_organization(world: World) -> None:
    w = world
    for short, org in (("alice", "org_a"), ("viewer", "org_a"), ("admin", "org_a"), ("bob", "org_b"),
                       ("badmin", "org_b")):
        assert w.conn(short).execute("SELECT flowforge.current_organization()").fetchone()[0] == w.ids[org]
    assert w.one("SELECT flowforge.current_organization()") == uuid.UUID(DEFAULT_ORG)
    assert code_of(w.conn("carol"), "SELECT flowforge.current_organization()") is not None
    assert w.task_state(w.ids["tr_a"]) == ("running", w.ids["token_a"])


# ---------------------------------------------------------------------------
# Another tenant's ids: the same answer as an id that does not exist
# ---------------------------------------------------------------------------


def _compare_with_random(conn: psycopg.Connection, cases: list[tuple[str, str, tuple, tuple, list[str], list[str]]]):
    """Each case: (label, query, params with the victim's ids, params with random ids, victim strings, random strings).

    Returns the cases whose (SQLSTATE, message with the ids masked) differ, or that succeeded.
    """
    mismatches = []
    for label, query, victim, random, victim_strs, random_strs in cases:
        got = error_of(conn, query, victim)
        ref = error_of(conn, query, random)
        if got is None:
            mismatches.append(f"{label}: SUCCEEDED with the other tenant's ids")
            continue
        assert ref is not None, f"{label}: random ids unexpectedly succeeded"

        def masked(exc: psycopg.Error, strs: list[str]) -> str:
            text = exc.diag.message_primary or ""
            for s in strs:
                text = text.replace(s, "<X>")
            return text

        if (got[0], masked(got[1], victim_strs)) != (ref[0], masked(ref[1], random_strs)):
            mismatches.append(f"{label}: victim -> {got[0]} {got[1].diag.message_primary!r}; "
                              f"random -> {ref[0]} {ref[1].diag.message_primary!r}")
    return mismatches


def test_run_and_task_ids_of_another_tenant_answer_like_random_ids(world: World) -> None:
    w = world
    ra, tr, tok = str(w.ids["ra"]), str(w.ids["tr_a"]), w.ids["token_a"]
    rnd_run, rnd_tr = str(uuid.uuid4()), str(uuid.uuid4())
    cases = [
        ("run_events", "SELECT * FROM flowforge.run_events(%s)", (ra,), (rnd_run,), [ra], [rnd_run]),
        ("cancel_run", "SELECT flowforge.cancel_run(%s, 'x')", (ra,), (rnd_run,), [ra], [rnd_run]),
        ("retry_run", "SELECT flowforge.retry_run(%s)", (ra,), (rnd_run,), [ra], [rnd_run]),
        ("heartbeat", "SELECT flowforge.heartbeat(%s, %s, '1 minute')", (tr, tok), (rnd_tr, tok), [tr], [rnd_tr]),
        ("complete", "SELECT flowforge.complete(%s, %s, '{}')", (tr, tok), (rnd_tr, tok), [tr], [rnd_tr]),
        ("fail", "SELECT flowforge.fail(%s, %s, 'boom', false)", (tr, tok), (rnd_tr, tok), [tr], [rnd_tr]),
        ("start_run of a workflow only org A has", "SELECT flowforge.start_run(%s, '{}')",
         ("a-only",), ("no-such-workflow",), ["a-only"], ["no-such-workflow"]),
        ("get_run", "SELECT flowforge.get_run(%s)", (ra,), (rnd_run,), [ra], [rnd_run]),
        ("resolve_run_id (whole id)", "SELECT flowforge.resolve_run_id(%s)", (ra,), (rnd_run,), [ra], [rnd_run]),
        ("resolve_run_id (prefix)", "SELECT flowforge.resolve_run_id(%s)", (ra[:8],), (rnd_run[:8],),
         [ra[:8]], [rnd_run[:8]]),
        ("get_workflow", "SELECT flowforge.get_workflow(%s)", ("a-only",), ("no-such-workflow",),
         ["a-only"], ["no-such-workflow"]),
    ]
    before = w.snapshot()
    mismatches = []
    for attacker in ("bob", "badmin"):
        mismatches += [f"{attacker} {m}" for m in _compare_with_random(w.conn(attacker), cases)]
    assert w.snapshot() == before
    # The gateway, authenticated for org B, gets the same answers.
    key_b = api_key(w, org="org-b", admin="badmin")
    before = w.snapshot()  # the key is new state; the attacks must add nothing after it
    gw = w.conn("gw")
    for label, query, victim, random, vs, rs in cases:
        results = []
        for params, strs in ((victim, vs), (random, rs)):
            with gw.transaction():
                gw.execute("SELECT flowforge.authenticate(%s)", (key_b,))
                sp = gw.transaction()  # a savepoint, so the error does not end the transaction
                try:
                    with sp:
                        gw.execute(query, params)
                    results.append(None)
                except psycopg.Error as exc:
                    text = exc.diag.message_primary or ""
                    for s in strs:
                        text = text.replace(s, "<X>")
                    results.append((exc.sqlstate, text))
        if results[0] is None or results[0] != results[1]:
            mismatches.append(f"gateway(org-b) {label}: victim -> {results[0]}; random -> {results[1]}")
    # complete_many reports per task instead of raising: the same outcome as for a random id.
    for attacker in ("bob", "badmin"):
        conn = w.conn(attacker)
        outcomes = [conn.execute("SELECT outcome FROM flowforge.complete_many(ARRAY[%s]::uuid[], ARRAY[%s]::bigint[])",
                                 (i, tok)).fetchall() for i in (tr, rnd_tr)]
        if outcomes[0] != outcomes[1]:
            mismatches.append(f"{attacker} complete_many: victim -> {outcomes[0]}; random -> {outcomes[1]}")
    assert mismatches == [], "\n".join(mismatches)
    # The first codes are the documented ones.
    assert code_of(w.conn("bob"), "SELECT * FROM flowforge.run_events(%s)", (ra,)) == NOT_FOUND
    assert code_of(w.conn("bob"), "SELECT flowforge.complete(%s, %s, '{}')", (tr, tok)) == NOT_FOUND
    after = w.snapshot()
    after.pop("api_key_usage"), before.pop("api_key_usage")  # last_used_at moved: the gateway authenticated
    assert after == before
    assert w.task_state(w.ids["tr_a"]) == ("running", w.ids["token_a"])


def test_admin_calls_naming_another_tenant_answer_like_random_names(world: World) -> None:
    """Slugs, prefixes and members of org A, used by org B's member and admin, must be 'not found'
    exactly like names that do not exist (no existence oracle)."""
    w = world
    a_token = api_key(w)
    a_prefix = prefix_of(a_token)
    rnd_prefix = "ffk_" + uuid.uuid4().hex[:12]
    carol, alice = w.roles["carol"], w.roles["alice"]
    cases = [
        ("add_member", "SELECT flowforge.add_member(%s, %s, 'member')", ("org-a", carol), ("org-zz", carol),
         ["org-a"], ["org-zz"]),
        ("remove_member", "SELECT flowforge.remove_member(%s, %s)", ("org-a", alice), ("org-zz", alice),
         ["org-a"], ["org-zz"]),
        ("create_api_key", "SELECT flowforge.create_api_key(%s, 'k', 'member')", ("org-a",), ("org-zz",),
         ["org-a"], ["org-zz"]),
        ("revoke_api_key", "SELECT flowforge.revoke_api_key(%s)", (a_prefix,), (rnd_prefix,),
         [a_prefix, "org-a"], [rnd_prefix]),
    ]
    before = w.snapshot()
    mismatches = []
    for attacker in ("bob", "badmin"):
        mismatches += [f"{attacker} {m}" for m in _compare_with_random(w.conn(attacker), cases)]
    assert w.snapshot() == before
    assert w.one("SELECT revoked_at FROM flowforge.api_key WHERE prefix = %s", (a_prefix,)) is None
    assert mismatches == [], "\n".join(mismatches)


# ---------------------------------------------------------------------------
# Settings, SET ROLE, direct table access, internal functions
# ---------------------------------------------------------------------------

FORGED_SETTINGS = [
    "flowforge.organization_id", "flowforge.organization", "flowforge.org", "flowforge.current_organization",
    "flowforge.tenant", "flowforge.tenant_id", "flowforge.role", "flowforge.member", "flowforge.api_key",
    "flowforge.authenticated", "flowforge.session_user", "flowforge_test.now",
    "flowforge.caller_org",  # the per-call cache the API itself uses (pinned to '' by every definer function)
]


@pytest.mark.parametrize("how", ["SET", "set_config"])
def test_settings_do_not_move_a_caller_to_another_tenant(world: World, how: str) -> None:
    w = world
    bob = w.conn("bob")
    for name in FORGED_SETTINGS:
        value = "owner" if name.endswith(("role", "member")) else str(w.ids["org_a"])
        if how == "SET":
            bob.execute(sql.SQL("SET {} = {}").format(sql.Identifier(*name.split(".")), sql.Literal(value)))
        else:
            bob.execute("SELECT set_config(%s, %s, false)", (name, value))
    bob.execute("SET search_path = public, flowforge")
    before = w.snapshot()
    assert code_of(bob, "SELECT * FROM flowforge.run_events(%s)", (w.ids["ra"],)) == NOT_FOUND
    assert code_of(bob, "SELECT flowforge.cancel_run(%s)", (w.ids["ra"],)) == NOT_FOUND
    assert code_of(bob, "SELECT flowforge.complete(%s, %s, '{}')", (w.ids["tr_a"], w.ids["token_a"])) == NOT_FOUND
    assert code_of(bob, "SELECT flowforge.start_run('a-only', '{}')") == NOT_FOUND
    assert code_of(bob, "SELECT * FROM flowforge.get_run(%s)", (w.ids["ra"],)) == NOT_FOUND
    assert "a-only" not in json.dumps(bob.execute("SELECT * FROM flowforge.list_workflows()").fetchall(), default=str)
    assert str(w.ids["ra"]) not in json.dumps(bob.execute("SELECT * FROM flowforge.list_runs(NULL, NULL, 1000)")
                                              .fetchall(), default=str)
    assert code_of(bob, "SELECT flowforge.create_api_key('org-b', 'k')") == FORBIDDEN  # still a mere member
    assert claim(bob, "default") == []
    assert code_of(bob, "SELECT * FROM flowforge.workflow_run") == INSUFFICIENT_PRIVILEGE
    assert w.snapshot() == before
    # The same settings on a gateway connection do not authenticate it.
    gw = w.conn("gw")
    for name in FORGED_SETTINGS:
        gw.execute("SELECT set_config(%s, %s, false)", (name, str(w.ids["org_a"])))
    assert code_of(gw, "SELECT flowforge.start_run('wf', '{}')") == UNAUTHENTICATED
    assert code_of(gw, "SELECT * FROM flowforge.list_runs(NULL, NULL, 1000)") == UNAUTHENTICATED


def test_current_organization_cannot_be_talked_into_another_tenant(world: World) -> None:
    """current_organization() is API ("the organization the caller acts in"): a setting must not change
    its answer, on a member login or on an unauthenticated gateway."""
    w = world
    bob, gw = w.conn("bob"), w.conn("gw")
    forged = {}
    for name in FORGED_SETTINGS:
        bob.execute("SELECT set_config(%s, %s, false)", (name, str(w.ids["org_a"])))
        gw.execute("SELECT set_config(%s, %s, false)", (name, str(w.ids["org_a"])))
    got = bob.execute("SELECT flowforge.current_organization()").fetchone()[0]
    if got != w.ids["org_b"]:
        forged["bob"] = str(got)
    err = error_of(gw, "SELECT flowforge.current_organization()")
    if err is None or err[0] != UNAUTHENTICATED:
        forged["unauthenticated gateway"] = "no FF008" if err is None else err[0]
    assert forged == {}, f"current_organization() reported org A ({w.ids['org_a']}) after SET: {forged}"


def test_set_role_is_refused(world: World) -> None:
    w = world
    for short in ("bob", "gw", "admin"):
        conn = w.conn(short)
        for target in ("flowforge_owner", "flowforge_system", "flowforge_daemon", "flowforge_readonly",
                       w.roles["alice"] if short != "admin" else w.roles["bob"], "postgres"):
            assert code_of(conn, sql.SQL("SET ROLE {}").format(sql.Identifier(target))) == INSUFFICIENT_PRIVILEGE, \
                (short, target)
        assert code_of(conn, sql.SQL("SET SESSION AUTHORIZATION {}").format(sql.Identifier(w.roles["alice"]))) \
            == INSUFFICIENT_PRIVILEGE
    # bob may SET ROLE to a group he is in; identity follows session_user, so nothing moves.
    bob = w.conn("bob")
    bob.execute("SET ROLE flowforge_app")
    assert bob.execute("SELECT current_user::text, session_user::text").fetchone() == ("flowforge_app", w.roles["bob"])
    assert bob.execute("SELECT flowforge.current_organization()").fetchone()[0] == w.ids["org_b"]
    assert code_of(bob, "SELECT * FROM flowforge.run_events(%s)", (w.ids["ra"],)) == NOT_FOUND
    assert code_of(bob, "SELECT * FROM flowforge.task_run") == INSUFFICIENT_PRIVILEGE
    bob.execute("RESET ROLE")


def _table_attacks(w: World) -> list[tuple[str, Any]]:
    attacks = []
    for (table,) in w.op.execute(
        "SELECT relname FROM pg_class WHERE relnamespace = 'flowforge'::regnamespace AND relkind IN ('r', 'p') "
        "ORDER BY 1"
    ).fetchall():
        col = w.one(
            "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped "
            "ORDER BY attnum LIMIT 1",
            (f"flowforge.{table}",),
        )
        t = sql.SQL("flowforge.{}").format(sql.Identifier(table))
        c = sql.Identifier(col)
        attacks += [
            (f"SELECT {table}", sql.SQL("SELECT * FROM {}").format(t)),
            (f"SELECT count {table}", sql.SQL("SELECT count(*) FROM {}").format(t)),
            (f"INSERT {table}", sql.SQL("INSERT INTO {} DEFAULT VALUES").format(t)),
            (f"UPDATE {table}", sql.SQL("UPDATE {} SET {} = {}").format(t, c, c)),
            (f"DELETE {table}", sql.SQL("DELETE FROM {}").format(t)),
            (f"TRUNCATE {table}", sql.SQL("TRUNCATE {} CASCADE").format(t)),
            (f"DISABLE TRIGGER {table}", sql.SQL("ALTER TABLE {} DISABLE TRIGGER ALL").format(t)),
            (f"NO FORCE RLS {table}", sql.SQL("ALTER TABLE {} NO FORCE ROW LEVEL SECURITY").format(t)),
            (f"DISABLE RLS {table}", sql.SQL("ALTER TABLE {} DISABLE ROW LEVEL SECURITY").format(t)),
            (f"CREATE POLICY {table}", sql.SQL("CREATE POLICY evil ON {} USING (true)").format(t)),
            (f"DROP POLICY {table}", sql.SQL("DROP POLICY IF EXISTS system_all ON {}").format(t)),
            (f"GRANT {table}", sql.SQL("GRANT SELECT ON {} TO PUBLIC").format(t)),
        ]
    attacks += [
        ("CREATE FUNCTION in flowforge",
         "CREATE FUNCTION flowforge.current_organization_evil() RETURNS uuid LANGUAGE sql AS 'SELECT NULL::uuid'"),
        ("CREATE OR REPLACE flowforge.now()",
         "CREATE OR REPLACE FUNCTION flowforge.now() RETURNS timestamptz LANGUAGE sql AS 'SELECT now()'"),
        ("CREATE TABLE in flowforge", "CREATE TABLE flowforge.evil (x int)"),
        ("CREATE TABLE in public", "CREATE TABLE public.evil (x int)"),
        ("setval", "SELECT setval('flowforge.task_run_event_seq_seq', 1)"),
        ("ALTER FUNCTION", "ALTER FUNCTION flowforge.current_organization() SECURITY INVOKER"),
        ("DISABLE TRIGGER task_run_event", "ALTER TABLE flowforge.task_run_event DISABLE TRIGGER ALL"),
    ]
    return attacks


def test_direct_table_access_is_refused(world: World) -> None:
    w = world
    before = w.snapshot()
    for short in ("bob", "alice", "admin", "gw"):
        conn = w.conn(short)
        wrong = [(label, code) for label, stmt in _table_attacks(w)
                 if (code := code_of(conn, stmt)) != INSUFFICIENT_PRIVILEGE]
        assert wrong == [], short
    # A gateway authenticated for org A, even with an owner key (which only the
    # operator can issue), gets no table rights either.
    gw = w.conn("gw")
    token = w.op.execute("SELECT flowforge.create_api_key('org-a', 'owner key', 'owner')").fetchone()[0]
    before = w.snapshot()
    with gw.transaction():
        gw.execute("SELECT flowforge.authenticate(%s)", (token,))
        for label, stmt in _table_attacks(w):
            sp = gw.transaction()
            try:
                with sp:
                    gw.execute(stmt)
                pytest.fail(f"authenticated gateway: {label} succeeded")
            except psycopg.Error as exc:
                assert exc.sqlstate == INSUFFICIENT_PRIVILEGE, label
    after = w.snapshot()
    after.pop("api_key_usage"), before.pop("api_key_usage")
    assert after == before
    assert w.one("SELECT count(*) FROM pg_trigger WHERE tgrelid = 'flowforge.task_run_event'::regclass "
                 "AND tgenabled = 'D'") == 0


def test_internal_functions_are_not_executable(world: World) -> None:
    w = world
    before = w.snapshot()
    for short in ("bob", "alice", "gw"):
        role = w.roles[short]
        rows = w.op.execute(
            """
            SELECT p.oid::regprocedure::text, p.proname::text,
                   'SELECT flowforge.' || quote_ident(p.proname) || '(' ||
                   coalesce((SELECT string_agg('NULL::' || format_type(t, NULL), ', ' ORDER BY o)
                             FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY AS a(t, o)), '') || ')'
            FROM pg_proc p
            WHERE p.pronamespace = 'flowforge'::regnamespace AND NOT has_function_privilege(%s, p.oid, 'EXECUTE')
            """,
            (role,),
        ).fetchall()
        names = {r[1] for r in rows}
        assert {"_dispatch_rows", "_settle_run", "_audit", "_authorize", "_check_size", "tick", "take_outbox",
                "create_organization"} <= names
        if short != "gw":
            assert "authenticate" in names
        conn = w.conn(short)
        wrong = [(sig, code) for sig, _, call in rows if (code := code_of(conn, call)) != INSUFFICIENT_PRIVILEGE]
        assert wrong == [], short
    assert w.snapshot() == before


# ---------------------------------------------------------------------------
# Workers, viewers, members, admins
# ---------------------------------------------------------------------------


def test_a_worker_never_claims_another_tenants_task(world: World) -> None:
    w = world
    ready_a = w.one("SELECT count(*) FROM flowforge.task_run WHERE organization_id = %s AND state = 'ready' "
                    "AND queue = 'default'", (w.ids["org_a"],))
    assert ready_a >= 1
    before = w.snapshot()
    assert claim(w.conn("bob"), "default") == []
    assert w.conn("bob").execute(
        "SELECT * FROM flowforge.claim(ARRAY['default', 'bq-nothing', 'other'], 'w', '1 minute', 1000)"
    ).fetchall() == []
    token_b = api_key(w, org="org-b", admin="badmin")
    before = w.snapshot()
    gw = w.conn("gw")
    with gw.transaction():
        gw.execute("SELECT flowforge.authenticate(%s)", (token_b,))
        assert claim(gw, "default") == []
    after = w.snapshot()
    after.pop("api_key_usage"), before.pop("api_key_usage")
    assert after == before
    # bob's own queue works, and hands him his own task only.
    got = claim(w.conn("bob"), "bq")
    assert [r[0] for r in got] == [w.ids["tr_b_ready"]]
    # Alice still finds her ready task.
    assert len(claim(w.conn("alice"), "default")) == ready_a


def test_viewer_reads_but_cannot_change(world: World) -> None:
    w = world
    viewer = w.conn("viewer")
    events = viewer.execute("SELECT kind FROM flowforge.run_events(%s)", (w.ids["ra"],)).fetchall()
    assert ("run_started",) in events
    before = w.snapshot()
    for query, params in [
        ("SELECT flowforge.start_run('wf', '{}')", None),
        ("SELECT flowforge.define_workflow(%s::jsonb)", (json.dumps({"name": "v", "tasks": [{"key": "x"}]}),)),
        ("SELECT flowforge.cancel_run(%s)", (w.ids["ra"],)),
        ("SELECT flowforge.retry_run(%s)", (w.ids["ra"],)),
        ("SELECT flowforge.configure_queue('default', 'ex')", None),
        ("SELECT * FROM flowforge.claim(ARRAY['default'], 'w')", None),
        ("SELECT flowforge.complete(%s, %s, '{}')", (w.ids["tr_a"], w.ids["token_a"])),
        ("SELECT flowforge.create_api_key('org-a', 'k')", None),
        ("SELECT flowforge.add_member('org-a', %s)", (w.roles["carol"],)),
    ]:
        assert code_of(viewer, query, params) == FORBIDDEN, query
    assert w.snapshot() == before


def test_members_cannot_administer_admins_can(world: World) -> None:
    w = world
    alice = w.conn("alice")
    before = w.snapshot()
    for query, params in [
        ("SELECT flowforge.create_api_key('org-a', 'k')", None),
        ("SELECT flowforge.add_member('org-a', %s)", (w.roles["carol"],)),
        ("SELECT flowforge.add_member('org-a', %s, 'owner')", (w.roles["alice"],)),  # self-promotion
        ("SELECT flowforge.remove_member('org-a', %s)", (w.roles["viewer"],)),
    ]:
        assert code_of(alice, query, params) == FORBIDDEN, query
    assert code_of(alice, "SELECT flowforge.create_organization('evil', 'Evil')") == INSUFFICIENT_PRIVILEGE
    assert w.snapshot() == before

    admin = w.conn("admin")
    admin.execute("SELECT flowforge.add_member('org-a', %s, 'member')", (w.roles["carol"],))
    assert w.conn("carol").execute("SELECT flowforge.current_organization()").fetchone()[0] == w.ids["org_a"]
    token = api_key(w)
    admin.execute("SELECT flowforge.revoke_api_key(%s)", (prefix_of(token),))
    admin.execute("SELECT flowforge.remove_member('org-a', %s)", (w.roles["carol"],))
    # remove_member also revoked flowforge_app / flowforge_worker: carol may not even ask.
    assert code_of(w.new_conn("carol"), "SELECT flowforge.current_organization()") == INSUFFICIENT_PRIVILEGE
    assert code_of(w.conn("carol"), "SELECT flowforge.start_run('wf', '{}')") == INSUFFICIENT_PRIVILEGE
    # An admin cannot create organizations, nor take a member of another organization.
    assert code_of(admin, "SELECT flowforge.create_organization('evil', 'Evil')") == INSUFFICIENT_PRIVILEGE
    assert code_of(admin, "SELECT flowforge.add_member('org-a', %s)", (w.roles["bob"],)) is not None
    assert w.conn("bob").execute("SELECT flowforge.current_organization()").fetchone()[0] == w.ids["org_b"]


def test_an_admin_cannot_hand_out_more_than_admin(world: World) -> None:
    """Owners have every right; an admin manages keys and members below the owner. An admin that could
    mint an owner key, map a login as owner, or demote/remove the owner would be an owner."""
    w = world
    w.create_login("owner", )
    w.op.execute("SELECT flowforge.add_member('org-a', %s, 'owner')", (w.roles["owner"],))
    admin = w.conn("admin")
    before = w.snapshot()
    results = {
        "create_api_key(role owner)": code_of(admin, "SELECT flowforge.create_api_key('org-a', 'k', 'owner')"),
        "add_member(carol, owner)": code_of(admin, "SELECT flowforge.add_member('org-a', %s, 'owner')",
                                            (w.roles["carol"],)),
        "add_member(self, owner)": code_of(admin, "SELECT flowforge.add_member('org-a', %s, 'owner')",
                                           (w.roles["admin"],)),
        "add_member(owner -> viewer)": code_of(admin, "SELECT flowforge.add_member('org-a', %s, 'viewer')",
                                               (w.roles["owner"],)),
        "remove_member(owner)": code_of(admin, "SELECT flowforge.remove_member('org-a', %s)", (w.roles["owner"],)),
    }
    succeeded = [k for k, v in results.items() if v is None]
    assert succeeded == [], f"an admin could: {succeeded}"
    assert w.snapshot() == before
    # The owner can do all of it.
    owner = w.conn("owner")
    owner.execute("SELECT flowforge.create_api_key('org-a', 'k', 'owner')")
    owner.execute("SELECT flowforge.add_member('org-a', %s, 'owner')", (w.roles["admin"],))


def test_an_org_admin_cannot_capture_an_operator_login(world: World) -> None:
    """An operator login (member of flowforge_owner) acts for the default organization. An org admin
    mapping it into their organization would redirect everything the operator does through the API
    (define_workflow, start_run) into the admin's organization."""
    w = world
    w.create_login("ops", "flowforge_owner")
    ops_before = w.conn("ops").execute("SELECT flowforge.current_organization()").fetchone()[0]
    assert ops_before == uuid.UUID(DEFAULT_ORG)
    err = error_of(w.conn("admin"), "SELECT flowforge.add_member('org-a', %s, 'member')", (w.roles["ops"],))
    ops_after = w.new_conn("ops").execute("SELECT flowforge.current_organization()").fetchone()[0]
    assert err is not None and ops_after == uuid.UUID(DEFAULT_ORG), \
        f"org-a's admin mapped the operator login {w.roles['ops']}: it now acts for {ops_after}"


# ---------------------------------------------------------------------------
# Gateway
# ---------------------------------------------------------------------------


def test_gateway_is_refused_before_it_authenticates(world: World) -> None:
    w = world
    gw = w.conn("gw")
    before = w.snapshot()
    for query, params in [
        ("SELECT flowforge.start_run('wf', '{}')", None),
        ("SELECT * FROM flowforge.run_events(%s)", (w.ids["ra"],)),
        ("SELECT flowforge.cancel_run(%s)", (w.ids["ra"],)),
        ("SELECT * FROM flowforge.claim(ARRAY['default'], 'w')", None),
        ("SELECT flowforge.define_workflow(%s::jsonb)", (json.dumps(SINGLE_WF),)),
        ("SELECT flowforge.create_api_key('org-a', 'k')", None),
    ]:
        assert code_of(gw, query, params) == UNAUTHENTICATED, query
    assert w.snapshot() == before


def test_gateway_with_a_valid_key_acts_for_its_organization(world: World) -> None:
    w = world
    token = api_key(w)
    prefix = prefix_of(token)
    assert w.one("SELECT u.last_used_at FROM flowforge.api_key_usage u JOIN flowforge.api_key k ON k.id = u.api_key_id "
                 "WHERE k.prefix = %s", (prefix,)) is None
    gw = w.conn("gw")
    with gw.transaction():
        assert gw.execute("SELECT flowforge.authenticate(%s)", (token,)).fetchone()[0] == w.ids["org_a"]
        assert gw.execute("SELECT flowforge.current_organization()").fetchone()[0] == w.ids["org_a"]
        run = start(gw, "wf", {"via": "gateway"})
        # Confined to org A: org B's run is not found.
        sp = gw.transaction()
        with pytest.raises(psycopg.Error) as exc:
            with sp:
                gw.execute("SELECT flowforge.cancel_run(%s)", (w.ids["rb"],))
        assert exc.value.sqlstate == NOT_FOUND
        sp = gw.transaction()
        with pytest.raises(psycopg.Error) as exc:
            with sp:
                gw.execute("SELECT * FROM flowforge.run_events(%s)", (w.ids["rb"],))
        assert exc.value.sqlstate == NOT_FOUND
    # Org A's admin sees the gateway's run. (Alice, a member of org A, does not since issue 19: a member reads the
    # runs it created, and this one is the member key's.)
    kinds = [r[0] for r in w.conn("admin").execute("SELECT kind FROM flowforge.run_events(%s)", (run,)).fetchall()]
    assert "run_started" in kinds
    assert code_of(w.conn("alice"), "SELECT * FROM flowforge.run_events(%s)", (run,)) == NOT_FOUND
    assert w.one("SELECT organization_id FROM flowforge.workflow_run WHERE id = %s", (run,)) == w.ids["org_a"]
    assert w.one("SELECT u.last_used_at FROM flowforge.api_key_usage u JOIN flowforge.api_key k ON k.id = u.api_key_id "
                 "WHERE k.prefix = %s", (prefix,)) is not None
    assert code_of(w.conn("bob"), "SELECT * FROM flowforge.run_events(%s)", (run,)) == NOT_FOUND
    # After COMMIT the next transaction is unauthenticated again.
    assert code_of(gw, "SELECT flowforge.start_run('wf', '{}')") == UNAUTHENTICATED
    with gw.transaction():
        sp = gw.transaction()
        with pytest.raises(psycopg.Error) as exc:
            with sp:
                gw.execute("SELECT flowforge.current_organization()")
        assert exc.value.sqlstate == UNAUTHENTICATED
    # ... and after ROLLBACK too.
    with pytest.raises(psycopg.Error):
        with gw.transaction():
            gw.execute("SELECT flowforge.authenticate(%s)", (token,))
            gw.execute("SELECT 1/0")
    assert code_of(gw, "SELECT flowforge.start_run('wf', '{}')") == UNAUTHENTICATED


def test_gateway_key_role_limits_the_gateway(world: World) -> None:
    w = world
    viewer_key = api_key(w, role="viewer")
    gw = w.conn("gw")
    with gw.transaction():
        gw.execute("SELECT flowforge.authenticate(%s)", (viewer_key,))
        assert gw.execute("SELECT count(*) FROM flowforge.run_events(%s)", (w.ids["ra"],)).fetchone()[0] > 0
        sp = gw.transaction()
        with pytest.raises(psycopg.Error) as exc:
            with sp:
                gw.execute("SELECT flowforge.start_run('wf', '{}')")
        assert exc.value.sqlstate == FORBIDDEN


def test_gateway_with_a_wrong_or_revoked_key_is_refused(world: World) -> None:
    w = world
    token = api_key(w)
    prefix, secret = prefix_of(token), token.split("_")[2]
    other = api_key(w)
    gw = w.conn("gw")
    wrong_keys = [
        prefix + "_" + "0" * 64,                        # right prefix, wrong secret
        prefix + "_" + secret[:-1],                     # truncated
        prefix + "_" + secret + "x",                    # extended
        prefix_of(other) + "_" + secret,                # another key's prefix with this secret
        "ffk_" + uuid.uuid4().hex[:12] + "_" + secret,  # unknown prefix
        secret, prefix, "", "ffk__", "%", "ffk_%_%",
    ]
    before = w.snapshot()
    for key in wrong_keys:
        err = error_of(gw, "SELECT flowforge.authenticate(%s)", (key,))
        assert err is not None and err[0] == UNAUTHENTICATED, key
        text = full_text(err[1])
        assert secret not in text and (not key or key not in text), text
    assert code_of(gw, "SELECT flowforge.authenticate(NULL)") == UNAUTHENTICATED
    assert w.snapshot() == before
    # Revocation takes effect on the next authenticate.
    with gw.transaction():
        gw.execute("SELECT flowforge.authenticate(%s)", (token,))
    w.conn("admin").execute("SELECT flowforge.revoke_api_key(%s)", (prefix,))
    err = error_of(gw, "SELECT flowforge.authenticate(%s)", (token,))
    assert err is not None and err[0] == UNAUTHENTICATED
    assert secret not in full_text(err[1]) and token not in full_text(err[1])
    w.conn("admin").execute("SELECT flowforge.revoke_api_key(%s)", (prefix_of(other),))
    assert code_of(gw, "SELECT flowforge.authenticate(%s)", (other,)) == UNAUTHENTICATED
    # A member login cannot call authenticate at all.
    assert code_of(w.conn("alice"), "SELECT flowforge.authenticate(%s)", (token,)) == INSUFFICIENT_PRIVILEGE


def test_one_key_serves_concurrent_gateway_transactions(world: World) -> None:
    """A gateway pool shares one key: a transaction that authenticated must not make the next
    authenticate with the same key (on another connection) wait until it ends."""
    w = world
    token = api_key(w)
    gw1, gw2 = w.conn("gw"), w.new_conn("gw")
    gw2.execute("SET lock_timeout = '2s'")
    with gw1.transaction():
        gw1.execute("SELECT flowforge.authenticate(%s)", (token,))
        err = error_of(gw2, "SELECT flowforge.authenticate(%s)", (token,))
        assert err is None, f"the second authenticate with the same key waited on the first transaction: {err}"


def test_a_gateway_session_belongs_to_its_own_backend(world: World) -> None:
    w = world
    token = api_key(w)
    gw1, gw2 = w.conn("gw"), w.new_conn("gw")
    with gw1.transaction():
        gw1.execute("SELECT flowforge.authenticate(%s)", (token,))
        # The second gateway connection of the same login is not authenticated by the first.
        assert code_of(gw2, "SELECT flowforge.start_run('wf', '{}')") == UNAUTHENTICATED


# ---------------------------------------------------------------------------
# Secrets
# ---------------------------------------------------------------------------


def test_no_api_key_secret_is_stored_anywhere(world: World, tmp_path) -> None:
    w = world
    token = api_key(w)
    secret = token.split("_")[2]
    gw = w.conn("gw")
    with gw.transaction():
        gw.execute("SELECT flowforge.authenticate(%s)", (token,))
        start(gw, "wf")
        admin_key = api_key(w, role="admin")
        # Leave this transaction's gateway_session row in place while we search (other connection).
        found = _search_everywhere(w, [token, secret, admin_key, admin_key.split("_")[2]])
        assert found == []
        # Positive control: the search does find what is stored (the public prefix, the hash).
        assert any(f.startswith("api_key.prefix") for f in _search_everywhere(w, [prefix_of(token)]))
        digest = hashlib.sha256(token.encode()).hexdigest()
        assert any(f.startswith("api_key.hashed_key") for f in _search_everywhere(w, [digest]))
    w.conn("admin").execute("SELECT flowforge.revoke_api_key(%s)", (prefix_of(token),))
    assert _search_everywhere(w, [token, secret, admin_key, admin_key.split("_")[2]]) == []
    # Only the sha256 of the whole token is kept.
    stored = w.one("SELECT encode(hashed_key, 'hex') FROM flowforge.api_key WHERE prefix = %s", (prefix_of(token),))
    assert stored == hashlib.sha256(token.encode()).hexdigest()
    audit = w.op.execute("SELECT to_jsonb(a)::text FROM flowforge.audit_log a").fetchall()
    assert not any(secret in row[0] for row in audit)
    # A dump of the whole database does not contain it either.
    if shutil.which("pg_dump") is None:
        return
    params = conninfo_to_dict(w.dsn)
    dump = subprocess.run(
        ["pg_dump", "--data-only", "-h", params.get("host", "127.0.0.1"), "-p", str(params.get("port", 5432)),
         "-U", params.get("user", "postgres"), "-d", params["dbname"]],
        capture_output=True, text=True, check=False,
    )
    assert dump.returncode == 0, dump.stderr
    assert prefix_of(token) in dump.stdout  # positive control
    assert secret not in dump.stdout and admin_key.split("_")[2] not in dump.stdout


def _search_everywhere(w: World, needles: list[str]) -> list[str]:
    """Every text-like column of every flowforge table (and gateway_session), searched as the superuser."""
    found = []
    cols = w.op.execute(
        """
        SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod)
        FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
        WHERE c.relnamespace = 'flowforge'::regnamespace AND c.relkind IN ('r', 'p')
        """
    ).fetchall()
    assert cols
    for table, col, typ in cols:
        t, c = sql.Identifier(table), sql.Identifier(col)
        for needle in needles:
            if typ == "bytea":
                cond = sql.SQL("position(convert_to({n}, 'UTF8') IN {c}) > 0 OR encode({c}, 'hex') LIKE '%%' || {n} || '%%'"
                               " OR (length({n}) % 2 = 0 AND {n} ~ '^[0-9a-f]+$' AND position(decode({n}, 'hex') IN {c}) > 0)"
                               ).format(c=c, n=sql.Literal(needle))
            else:
                cond = sql.SQL("strpos({c}::text, {n}) > 0").format(c=c, n=sql.Literal(needle))
            q = sql.SQL("SELECT count(*) FROM flowforge.{t} WHERE {cond}").format(t=t, cond=cond)
            if w.op.execute(q).fetchone()[0]:
                found.append(f"{table}.{col} contains {needle[:8]}...")
    return found


# ---------------------------------------------------------------------------
# Size limits
# ---------------------------------------------------------------------------


def _limit(w: World, n: int = 2048) -> None:
    w.op.execute("UPDATE flowforge.setting SET max_payload_bytes = %s", (n,))


def test_oversized_run_input_is_refused_and_nothing_written(world: World) -> None:
    w = world
    _limit(w)
    alice = w.conn("alice")
    before = w.snapshot()
    runs = w.one("SELECT count(*) FROM flowforge.workflow_run")
    big = {"blob": "x" * 4096}
    err = error_of(alice, "SELECT flowforge.start_run('wf', %s::jsonb)", (json.dumps(big),))
    assert err is not None and err[0] == TOO_LARGE
    # Compressible input read from a table (stored compressed) is measured uncompressed.
    alice.execute("CREATE TEMP TABLE big AS SELECT jsonb_build_object('x', repeat('a', 150000)) AS j")
    assert alice.execute("SELECT pg_column_size(j) FROM big").fetchone()[0] < 2048
    assert code_of(alice, "SELECT flowforge.start_run('wf', j) FROM big") == TOO_LARGE
    spec = {"name": "huge", "description": "d" * 4096, "tasks": [{"key": "a"}]}
    assert code_of(alice, "SELECT flowforge.define_workflow(%s::jsonb)", (json.dumps(spec),)) == TOO_LARGE
    # The gateway is held to the same limit.
    token = api_key(w)
    before = w.snapshot()
    gw = w.conn("gw")
    with pytest.raises(psycopg.Error) as exc:
        with gw.transaction():
            gw.execute("SELECT flowforge.authenticate(%s)", (token,))
            gw.execute("SELECT flowforge.start_run('wf', %s::jsonb)", (json.dumps(big),))
    assert exc.value.sqlstate == TOO_LARGE
    assert w.one("SELECT count(*) FROM flowforge.workflow_run") == runs
    after = w.snapshot()
    after.pop("api_key_usage"), before.pop("api_key_usage")
    assert after == before
    # Just under the limit is fine.
    start(alice, "wf", {"blob": "x" * 1000})


def test_oversized_task_output_is_refused_and_the_task_stays_running(world: World) -> None:
    w = world
    _limit(w)
    alice = w.conn("alice")
    tr, tok = w.ids["tr_a"], w.ids["token_a"]
    before = w.snapshot()
    err = error_of(alice, "SELECT flowforge.complete(%s, %s, %s::jsonb)", (tr, tok, json.dumps({"o": "y" * 4096})))
    assert err is not None and err[0] == TOO_LARGE
    alice.execute("CREATE TEMP TABLE big AS SELECT jsonb_build_object('x', repeat('a', 150000)) AS j")
    assert code_of(alice, "SELECT flowforge.complete(%s, %s, j) FROM big", (tr, tok)) == TOO_LARGE
    assert w.task_state(tr) == ("running", tok)
    assert w.snapshot() == before
    alice.execute("SELECT flowforge.complete(%s, %s, %s::jsonb)", (tr, tok, json.dumps({"o": "small"})))
    assert w.task_state(tr)[0] == "succeeded"


@pytest.mark.parametrize("what", ["fail error", "cancel reason"])
def test_oversized_error_and_reason_text_is_bounded(world: World, what: str) -> None:
    """fail(error) and cancel_run(reason) are tenant-supplied text stored in task_run/workflow_run and in
    events: they must be refused (FF009) or stored truncated to the payload limit, never stored whole."""
    w = world
    _limit(w)
    alice = w.conn("alice")
    huge = "e" * 1_000_000
    if what == "fail error":
        err = error_of(alice, "SELECT flowforge.fail(%s, %s, %s, false)", (w.ids["tr_a"], w.ids["token_a"], huge))
        stored = w.one("SELECT coalesce(octet_length(error), 0) FROM flowforge.task_run WHERE id = %s", (w.ids["tr_a"],))
    else:
        err = error_of(alice, "SELECT flowforge.cancel_run(%s, %s)", (w.ids["ra"], huge))
        stored = w.one("SELECT coalesce(octet_length(reason), 0) FROM flowforge.workflow_run WHERE id = %s",
                       (w.ids["ra"],))
    events = w.one("SELECT coalesce(max(octet_length(detail::text)), 0) FROM flowforge.task_run_event "
                   "WHERE workflow_run_id = %s", (w.ids["ra"],))
    assert (err is not None and err[0] == TOO_LARGE) or (stored <= 2048 and events <= 4096), \
        f"{what}: accepted and stored {stored} bytes (events up to {events}) with max_payload_bytes = 2048"


# ---------------------------------------------------------------------------
# Audit log
# ---------------------------------------------------------------------------


def test_audit_log_records_who_did_what_names_only(world: World) -> None:
    w = world
    admin, alice = w.conn("admin"), w.conn("alice")
    marker = "s3cr3t-input-value-" + uuid.uuid4().hex
    token = api_key(w)
    prefix = prefix_of(token)
    admin.execute("SELECT flowforge.revoke_api_key(%s)", (prefix,))
    run = start(alice, "wf", {"card": marker})
    alice.execute("SELECT flowforge.cancel_run(%s, %s)", (run, marker))
    gw_key = api_key(w, role="admin")
    gw = w.conn("gw")
    with gw.transaction():
        gw.execute("SELECT flowforge.authenticate(%s)", (gw_key,))
        gw_run = start(gw, "wf", {"card": marker})
        gw.execute("SELECT flowforge.define_workflow(%s::jsonb)",
                   (json.dumps({"name": "gw-made", "description": marker, "tasks": [{"key": "a"}]}),))

    rows = w.op.execute(
        "SELECT organization_id, actor, action, entity, entity_id, fields FROM flowforge.audit_log"
    ).fetchall()
    have = {(str(o), actor, action, entity, eid) for o, actor, action, entity, eid, _ in rows}
    a, b = str(w.ids["org_a"]), str(w.ids["org_b"])
    op_user = w.one("SELECT session_user::text")
    gw_actor = f"{w.roles['gw']} via key {prefix_of(gw_key)}"
    expected = {
        (a, op_user, "create", "organization", a),
        (b, op_user, "create", "organization", b),
        (a, op_user, "add", "membership", w.roles["alice"]),
        (b, op_user, "add", "membership", w.roles["bob"]),
        (a, w.roles["admin"], "create", "api_key", prefix),
        (a, w.roles["admin"], "revoke", "api_key", prefix),
        (a, w.roles["alice"], "start", "workflow_run", str(run)),
        (a, w.roles["alice"], "cancel", "workflow_run", str(run)),
        (a, w.roles["alice"], "start", "workflow_run", str(w.ids["ra"])),
        (b, w.roles["bob"], "start", "workflow_run", str(w.ids["rb"])),
        (a, gw_actor, "start", "workflow_run", str(gw_run)),
    }
    assert expected <= have, expected - have
    defines = {(o, actor) for o, actor, action, entity, _ in have if action == "define" and entity == "workflow"}
    assert {(a, w.roles["alice"]), (b, w.roles["bob"]), (a, gw_actor)} <= defines
    # Field names only: no value, no secret, no input anywhere in the log.
    for *_, fields in rows:
        assert all(re.fullmatch(r"[a-z_]+", f) for f in fields), fields
    text = "\n".join(r[0] for r in w.op.execute("SELECT to_jsonb(a)::text FROM flowforge.audit_log a").fetchall())
    assert marker not in text
    assert token.split("_")[2] not in text and gw_key.split("_")[2] not in text
    # Tenants cannot read the audit log directly.
    assert code_of(alice, "SELECT * FROM flowforge.audit_log") == INSUFFICIENT_PRIVILEGE


# ---------------------------------------------------------------------------
# Single-tenant use is unchanged
# ---------------------------------------------------------------------------


def test_superuser_uses_the_default_organization_without_setup(migrated_dsn: str) -> None:
    with psycopg.connect(migrated_dsn, autocommit=True) as conn:
        assert conn.execute("SELECT flowforge.current_organization()").fetchone()[0] == uuid.UUID(DEFAULT_ORG)
        define(conn, SINGLE_WF)
        run = start(conn, "wf", {"n": 1})
        [(tr, tok)] = claim(conn)
        conn.execute("SELECT flowforge.heartbeat(%s, %s, '1 minute')", (tr, tok))
        conn.execute("SELECT flowforge.complete(%s, %s, '{\"ok\": true}')", (tr, tok))
        state, org = conn.execute("SELECT state, organization_id FROM flowforge.workflow_run WHERE id = %s",
                                  (run,)).fetchone()
        assert (state, str(org)) == ("succeeded", DEFAULT_ORG)
        kinds = [r[0] for r in conn.execute("SELECT kind FROM flowforge.run_events(%s)", (run,)).fetchall()]
        assert kinds[0] == "run_started" and kinds[-1] == "run_succeeded"
