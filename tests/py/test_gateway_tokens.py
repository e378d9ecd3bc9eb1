"""Gateway identity, operator reads and onboarding, with real login roles (issues 11 and 12).

authenticate() used to write a gateway_session row per transaction: every
gateway transaction consumed a transaction id, and revoke_api_key waited for
the key holder's open transaction (the holder kept acting until it ended).
It now hands the transaction a signed, transaction-bound token and every call
re-checks the key. These tests failed before that change:

* a gateway transaction that only reads consumes no transaction id;
* revoke_api_key completes while the holder's transaction is open, and the
  holder's next call in that same transaction is refused;
* a token copied into another transaction, or edited, is refused.

And the operator's read path (issue 11): a superuser or a flowforge_readonly
login reads any organization's run through get_run / run_events /
resolve_run_id, while authenticate() outside a gateway session is refused
instead of succeeding and changing nothing.
"""

from __future__ import annotations

import json
import uuid

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

NOT_FOUND = "FF001"
INVALID_ARGUMENT = "FF003"
FORBIDDEN = "FF007"
UNAUTHENTICATED = "FF008"
INSUFFICIENT_PRIVILEGE = "42501"
GUARD = "-c lock_timeout=5s -c statement_timeout=30s"


@pytest.fixture
def roles(admin_dsn):
    names: list[str] = []
    yield names
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        for name in reversed(names):
            conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(name)))


class Setup:
    """Two organizations, a member of org-b, a gateway login, a readonly login, a key of org-a."""

    def __init__(self, dsn: str, registry: list[str]):
        self.dsn = dsn
        self.suffix = uuid.uuid4().hex[:8]
        self.op = psycopg.connect(dsn, autocommit=True)
        self.logins: dict[str, str] = {}
        for short, member_of in (("gw", "flowforge_gateway"), ("dba", "flowforge_readonly"), ("bob", None)):
            name = f"ff_{short}_{self.suffix}"
            registry.append(name)
            stmt = sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(name))
            if member_of:
                stmt += sql.SQL(" IN ROLE {}").format(sql.Identifier(member_of))
            self.op.execute(stmt)
            self.logins[short] = name
        self.op.execute("SELECT flowforge.create_organization('org-a', 'A'), flowforge.create_organization('org-b', 'B')")
        self.op.execute("SELECT flowforge.add_member('org-b', %s, 'member')", (self.logins["bob"],))
        self.key = self.op.execute("SELECT flowforge.create_api_key('org-a', 'svc', 'member')").fetchone()[0]
        self.prefix = "_".join(self.key.split("_")[:2])
        # A run of org-a, started through the gateway.
        gw = self.connect("gw", autocommit=False)
        gw.execute("SELECT flowforge.authenticate(%s)", (self.key,))
        gw.execute("SELECT flowforge.define_workflow(%s::jsonb)",
                   (json.dumps({"name": "wf", "tasks": [{"key": "only"}]}),))
        self.run_a = gw.execute("SELECT flowforge.start_run('wf')").fetchone()[0]
        gw.commit()
        gw.close()

    def connect(self, short: str, *, autocommit: bool = True) -> psycopg.Connection:
        return psycopg.connect(make_conninfo(self.dsn, user=self.logins[short], options=GUARD), autocommit=autocommit)

    def close(self) -> None:
        self.op.close()


@pytest.fixture
def world(roles, migrated_dsn):
    w = Setup(migrated_dsn, roles)
    try:
        yield w
    finally:
        w.close()


def sqlstate(conn: psycopg.Connection, query: str, params=None) -> str | None:
    try:
        with conn.transaction():  # a savepoint when a transaction is open
            conn.execute(query, params)
    except psycopg.Error as exc:
        return exc.sqlstate
    return None


# --- no transaction id per gateway transaction ----------------------------------------------

def test_a_reading_gateway_transaction_consumes_no_transaction_id(world):
    gw = world.connect("gw", autocommit=False)
    try:
        # The first use records last_used_at (at most once a minute): that one writes.
        gw.execute("SELECT flowforge.authenticate(%s)", (world.key,))
        gw.commit()
        assigned = []
        for _ in range(5):
            gw.execute("SELECT flowforge.authenticate(%s)", (world.key,))
            gw.execute("SELECT * FROM flowforge.list_runs()").fetchall()
            gw.execute("SELECT flowforge.get_run(%s)", (world.run_a,)).fetchone()
            assigned.append(gw.execute("SELECT pg_current_xact_id_if_assigned()").fetchone()[0])
            gw.commit()
        assert assigned == [None] * 5, "a gateway transaction that only reads must not consume a transaction id"
    finally:
        gw.close()


# --- revocation --------------------------------------------------------------------------

def test_revocation_never_waits_for_the_holder_and_stops_it_at_its_next_call(world):
    gw = world.connect("gw", autocommit=False)
    try:
        gw.execute("SELECT flowforge.authenticate(%s)", (world.key,))
        assert gw.execute("SELECT count(*) FROM flowforge.list_runs()").fetchone()[0] == 1
        # The holder's transaction stays open. The revoke must not wait for it
        # (lock_timeout 1s would fail it with 55P03 if it did).
        with psycopg.connect(world.dsn, autocommit=True, options="-c lock_timeout=1s") as op:
            op.execute("SELECT flowforge.revoke_api_key(%s)", (world.prefix,))
        # In the same, still open transaction, the holder's next call is refused.
        assert sqlstate(gw, "SELECT * FROM flowforge.list_runs()") == UNAUTHENTICATED
        gw.rollback()
        assert sqlstate(gw, "SELECT flowforge.authenticate(%s)", (world.key,)) == UNAUTHENTICATED
    finally:
        gw.close()


# --- forged tokens ---------------------------------------------------------------------------

def test_a_token_copied_into_another_transaction_is_refused(world):
    gw = world.connect("gw", autocommit=False)
    try:
        gw.execute("SELECT flowforge.authenticate(%s)", (world.key,))
        token = gw.execute("SELECT current_setting('flowforge.gateway')").fetchone()[0]
        gw.commit()
        gw.execute("SELECT set_config('flowforge.gateway', %s, true)", (token,))
        assert sqlstate(gw, "SELECT * FROM flowforge.list_runs()") == UNAUTHENTICATED
        gw.rollback()
        # The same value SET for the whole session is no better.
        gw.execute("SELECT set_config('flowforge.gateway', %s, false)", (token,))
        gw.commit()
        assert sqlstate(gw, "SELECT * FROM flowforge.list_runs()") == UNAUTHENTICATED
    finally:
        gw.close()


def test_an_edited_token_is_refused_even_in_its_own_transaction(world):
    org_b = world.op.execute("SELECT id FROM flowforge.organization WHERE slug = 'org-b'").fetchone()[0]
    gw = world.connect("gw", autocommit=False)
    try:
        gw.execute("SELECT flowforge.authenticate(%s)", (world.key,))
        token = gw.execute("SELECT current_setting('flowforge.gateway')").fetchone()[0]
        parts = token.split(".")
        for edited in (".".join(parts[:2] + [str(org_b)] + parts[3:]),          # another organization
                       ".".join(parts[:3] + ["owner"] + parts[4:]),             # a higher role
                       ".".join(parts[:6] + ["0" * 64])):                       # a made-up MAC
            gw.execute("SELECT set_config('flowforge.gateway', %s, true)", (edited,))
            assert sqlstate(gw, "SELECT * FROM flowforge.list_runs()") == UNAUTHENTICATED, edited
    finally:
        gw.close()


# --- the operator's read path -------------------------------------------------------------

@pytest.mark.parametrize("reader", ["superuser", "readonly login"])
def test_operators_read_any_organizations_run(world, reader):
    conn = (psycopg.connect(world.dsn, autocommit=True) if reader == "superuser" else world.connect("dba"))
    try:
        run = conn.execute("SELECT flowforge.get_run(%s)", (world.run_a,)).fetchone()[0]
        assert run["id"] == str(world.run_a) and run["workflow"] == "wf"
        org_a = world.op.execute("SELECT id FROM flowforge.organization WHERE slug = 'org-a'").fetchone()[0]
        assert run["organization_id"] == str(org_a)
        kinds = [r[0] for r in conn.execute("SELECT kind FROM flowforge.run_events(%s)", (world.run_a,))]
        assert kinds[:2] == ["run_started", "created"]
        assert conn.execute("SELECT flowforge.resolve_run_id(%s)", (str(world.run_a)[:8],)).fetchone()[0] == world.run_a
        assert sqlstate(conn, "SELECT flowforge.get_run(%s)", (uuid.uuid4(),)) == NOT_FOUND
    finally:
        conn.close()


def test_the_read_path_opens_nothing_to_tenants(world):
    bob = world.connect("bob")
    try:
        for query in ("SELECT flowforge.get_run(%s)", "SELECT * FROM flowforge.run_events(%s)"):
            assert sqlstate(bob, query, (world.run_a,)) == NOT_FOUND
        assert sqlstate(bob, "SELECT flowforge.resolve_run_id(%s)", (str(world.run_a)[:8],)) == NOT_FOUND
    finally:
        bob.close()
    dba = world.connect("dba")
    try:
        # The DBA's read role reads; it never writes.
        assert sqlstate(dba, "SELECT flowforge.cancel_run(%s)", (world.run_a,)) == INSUFFICIENT_PRIVILEGE
    finally:
        dba.close()


def test_authenticate_outside_a_gateway_session_is_refused(world):
    with psycopg.connect(world.dsn, autocommit=True) as op:
        assert sqlstate(op, "SELECT flowforge.authenticate(%s)", (world.key,)) == FORBIDDEN
    bob = world.connect("bob")
    try:
        assert sqlstate(bob, "SELECT flowforge.authenticate(%s)", (world.key,)) == INSUFFICIENT_PRIVILEGE
    finally:
        bob.close()


# --- onboarding --------------------------------------------------------------------------

def _role_settings(conn: psycopg.Connection, login: str) -> dict[str, str]:
    rows = conn.execute(
        "SELECT unnest(s.setconfig) FROM pg_db_role_setting s JOIN pg_roles r ON r.oid = s.setrole "
        "WHERE r.rolname = %s AND s.setdatabase = 0", (login,)).fetchall()
    return dict(r[0].split("=", 1) for r in rows)


def test_onboard_login_maps_the_login_and_gives_it_safe_timeouts(world, roles):
    login = f"ff_carol_{world.suffix}"
    roles.append(login)
    world.op.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(login)))
    assert _role_settings(world.op, login) == {}
    assert sqlstate(world.op, "SELECT flowforge.onboard_login('org-b', %s, 'member', statement_timeout => 'soon')",
                    (login,)) == INVALID_ARGUMENT
    assert _role_settings(world.op, login) == {}, "a refused onboarding changes nothing"
    world.op.execute("SELECT flowforge.onboard_login('org-b', %s, 'member')", (login,))
    assert _role_settings(world.op, login) == {
        "statement_timeout": "30s", "lock_timeout": "5s", "idle_in_transaction_session_timeout": "60s"}
    carol = psycopg.connect(make_conninfo(world.dsn, user=login), autocommit=True)
    try:
        assert carol.execute("SHOW idle_in_transaction_session_timeout").fetchone()[0] == "1min"
        assert carol.execute("SELECT flowforge.current_organization()").fetchone()[0] == \
            world.op.execute("SELECT id FROM flowforge.organization WHERE slug = 'org-b'").fetchone()[0]
    finally:
        carol.close()


def test_onboard_login_needs_an_operator_who_may_alter_roles(world):
    bob = world.connect("bob")
    try:
        assert sqlstate(bob, "SELECT flowforge.onboard_login('org-b', %s)", (world.logins["bob"],)) == \
            INSUFFICIENT_PRIVILEGE
    finally:
        bob.close()
