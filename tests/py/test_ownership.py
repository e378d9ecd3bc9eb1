"""Creator-scoped reads with real logins (issue 19, seed 002; docs/security.md, "Ownership").

Each caller below is its own LOGIN role on its own connection, as in
production: two members of one organization, a viewer, an admin, a gateway
login carrying a member key. A member lists and reads only the runs it
created; viewer and admin read the whole organization; a member key is one
caller through the gateway; a worker claims and completes any run's work.
tests/sql/80_reads/ownership.sql covers the same rules function by function.
"""

from __future__ import annotations

import json
import uuid

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

NOT_FOUND = "FF001"
SPEC = {"name": "own", "tasks": [{"key": "a", "queue": "own-q"}]}


@pytest.fixture
def logins(migrated_dsn, admin_dsn):
    suffix = uuid.uuid4().hex[:8]
    names = {short: f"ff_own_{short}_{suffix}" for short in ("alice", "bob", "viewer", "admin", "gw")}
    conns: dict[str, psycopg.Connection] = {}
    try:
        with psycopg.connect(migrated_dsn, autocommit=True) as op:
            op.execute("SELECT flowforge.create_organization('own', 'Ownership')")
            for short, role in (("alice", "member"), ("bob", "member"), ("viewer", "viewer"), ("admin", "admin")):
                op.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(names[short])))
                op.execute("SELECT flowforge.add_member('own', %s, %s)", (names[short], role))
            op.execute(sql.SQL("CREATE ROLE {} LOGIN IN ROLE flowforge_gateway").format(sql.Identifier(names["gw"])))
            key = op.execute("SELECT flowforge.create_api_key('own', 'svc', 'member')").fetchone()[0]
        for short, name in names.items():
            conns[short] = psycopg.connect(make_conninfo(migrated_dsn, user=name), autocommit=True)
        conns["alice"].execute("SELECT flowforge.define_workflow(%s::jsonb)", (json.dumps(SPEC),))
        yield conns, names, key
    finally:
        for conn in conns.values():
            conn.close()
        with psycopg.connect(admin_dsn, autocommit=True) as admin:
            for name in names.values():
                admin.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(name)))


def start(conn: psycopg.Connection) -> uuid.UUID:
    return conn.execute("SELECT flowforge.start_run('own')").fetchone()[0]


def listed(conn: psycopg.Connection) -> list[uuid.UUID]:
    return [r[0] for r in conn.execute("SELECT id FROM flowforge.list_runs()").fetchall()]


def code_of(conn: psycopg.Connection, query: str, params=()) -> str | None:
    try:
        conn.execute(query, params).fetchall()
    except psycopg.Error as exc:
        return exc.sqlstate
    return None


def through_gateway(conn: psycopg.Connection, key: str, query: str, params=()):
    with conn.transaction():
        conn.execute("SELECT flowforge.authenticate(%s)", (key,))
        return conn.execute(query, params).fetchall()


def test_members_read_their_own_runs_and_the_organization_reads_all(logins):
    conns, names, key = logins
    a1, a2 = start(conns["alice"]), start(conns["alice"])
    b1 = start(conns["bob"])
    (g1,), = through_gateway(conns["gw"], key, "SELECT flowforge.start_run('own')")

    assert listed(conns["alice"]) == [a2, a1]
    assert listed(conns["bob"]) == [b1]
    assert set(listed(conns["viewer"])) == set(listed(conns["admin"])) == {a1, a2, b1, g1}
    assert [r[0] for r in through_gateway(conns["gw"], key, "SELECT id FROM flowforge.list_runs()")] == [g1]

    created = dict(conns["admin"].execute("SELECT id, created_by FROM flowforge.list_runs()").fetchall())
    prefix = "_".join(key.split("_")[:2])
    assert created == {a1: names["alice"], a2: names["alice"], b1: names["bob"], g1: prefix}

    # Another member's run is "not found", exactly like a run that never existed.
    for query in ("SELECT flowforge.get_run(%s)", "SELECT * FROM flowforge.run_events(%s)",
                  "SELECT flowforge.cancel_run(%s)", "SELECT flowforge.delete_run(%s)"):
        assert code_of(conns["alice"], query, (b1,)) == NOT_FOUND, query
    def message(run_id):
        try:
            conns["alice"].execute("SELECT flowforge.get_run(%s)", (run_id,))
        except psycopg.Error as exc:
            return exc.diag.message_primary.replace(str(run_id), "<id>")
    assert message(b1) == message(uuid.uuid4())
    assert conns["viewer"].execute("SELECT flowforge.get_run(%s) ->> 'created_by'", (b1,)).fetchone()[0] == names["bob"]
    assert conns["alice"].execute("SELECT flowforge.get_run(%s) ->> 'created_by'", (a1,)).fetchone()[0] == names["alice"]


def test_workers_are_not_creator_scoped(logins):
    conns, _, _ = logins
    b1 = start(conns["bob"])
    claimed = conns["alice"].execute(
        "SELECT task_run_id, fencing_token, workflow_run_id FROM flowforge.claim(ARRAY['own-q'], 'alice-w', '1 minute', 10)"
    ).fetchall()
    assert [c[2] for c in claimed] == [b1], "alice's worker claims bob's run's task"
    task, token, _ = claimed[0]
    conns["alice"].execute("SELECT flowforge.complete(%s, %s, '{}')", (task, token))
    assert conns["bob"].execute("SELECT flowforge.get_run(%s) ->> 'state'", (b1,)).fetchone()[0] == "succeeded"
    # bob deletes his finished run; it leaves the listings, not the database.
    conns["bob"].execute("SELECT flowforge.delete_run(%s)", (b1,))
    assert listed(conns["bob"]) == []
    assert [r[0] for r in conns["bob"].execute("SELECT id FROM flowforge.list_runs(include_deleted => true)")] == [b1]
    assert conns["bob"].execute("SELECT flowforge.get_run(%s) ->> 'state'", (b1,)).fetchone()[0] == "succeeded"
