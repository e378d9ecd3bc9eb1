"""`flowforge doctor` on sessions and logins, and `flowforge org create / onboard`.

Issue 12: with every slot taken by workers the daemon got none; tenant
logins had no timeouts; an idle snapshot bloated task_run with nothing
warning about it. Issue 11: doctor on a user's install warned about pgTAP
and plpgsql_check. Real logins (cluster roles with a random suffix, dropped
after the test database) and real connections.
"""

from __future__ import annotations

import json
import uuid

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from test_cli_foundation import assert_one_line_error, run
from test_tenancy import role_registry  # noqa: F401 - fixture: roles dropped after the database

TIMEOUTS = {"statement_timeout", "lock_timeout", "idle_in_transaction_session_timeout"}


def doctor(dsn: str, *args: str) -> dict[str, dict]:
    proc = run("--dsn", dsn, "--json", "doctor", *args)
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stderr
    return {c["name"]: c for c in json.loads(proc.stdout)["checks"]}


def create_login(dsn: str, registry: list[str], short: str) -> str:
    name = f"ff_0{short}_{uuid.uuid4().hex[:8]}"  # "0": sorts before other tests' logins in a listing
    registry.append(name)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(name)))
    return name


def role_settings(dsn: str, login: str) -> set[str]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT unnest(setconfig) FROM pg_db_role_setting d JOIN pg_roles r ON r.oid = d.setrole "
                            "WHERE r.rolname = %s", (login,)).fetchall()
    return {row[0].split("=")[0] for row in rows}


def test_test_tooling_only_with_dev(migrated_dsn):
    plain = doctor(migrated_dsn)
    assert "pgTAP" not in plain and "plpgsql_check" not in plain
    dev = doctor(migrated_dsn, "--dev")
    assert dev["pgTAP"]["status"] in ("ok", "warn") and "plpgsql_check" in dev


def test_connection_slots(migrated_dsn):
    with psycopg.connect(migrated_dsn) as conn:
        max_connections, reserved = conn.execute(
            "SELECT current_setting('max_connections')::int, current_setting('superuser_reserved_connections')::int"
        ).fetchone()
    slots = doctor(migrated_dsn)["connection slots"]
    assert slots["status"] == "ok", slots
    assert f"of {max_connections - reserved} slots free (max_connections {max_connections} - " \
           f"superuser_reserved_connections {reserved} - " in slots["detail"]
    tight = run("--dsn", migrated_dsn, "--json", "doctor", "--min-free-connections", str(max_connections))
    assert tight.returncode == 0  # a warning, not a problem
    check = {c["name"]: c for c in json.loads(tight.stdout)["checks"]}["connection slots"]
    assert check["status"] == "warn" and "CONNECTION LIMIT" in check["detail"]


def test_connection_limits_of_flowforge_logins(role_registry, migrated_dsn):  # noqa: F811
    login = create_login(migrated_dsn, role_registry, "limits")
    assert run("--dsn", migrated_dsn, "org", "onboard", "default", login).returncode == 0
    unlimited = doctor(migrated_dsn)["connection limits"]
    assert unlimited["status"] == "warn" and f"no CONNECTION LIMIT on {login}" in unlimited["detail"]

    with psycopg.connect(migrated_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("ALTER ROLE {} CONNECTION LIMIT 3").format(sql.Identifier(login)))
    with psycopg.connect(make_conninfo(migrated_dsn, user=login)):
        limited = doctor(migrated_dsn)["connection limits"]
    assert f"{login}: limit 3, 1 connected" in limited["detail"]
    assert f"no CONNECTION LIMIT on {login}" not in limited["detail"]


def test_login_timeouts_and_org_onboard(role_registry, migrated_dsn):  # noqa: F811
    slug = f"acme{uuid.uuid4().hex[:6]}"
    created = run("--dsn", migrated_dsn, "org", "create", slug, "Acme Corp")
    assert created.returncode == 0 and created.stdout.startswith(f"organization {slug} created (id ")
    assert doctor(migrated_dsn)["login timeouts"]["status"] == "ok"

    login = create_login(migrated_dsn, role_registry, "tenant")
    with psycopg.connect(migrated_dsn, autocommit=True) as conn:  # mapped the old way: add_member, no timeouts
        conn.execute("SELECT flowforge.add_member(%s, %s, 'member')", (slug, login))
    lacking = doctor(migrated_dsn)["login timeouts"]
    assert lacking["status"] == "warn"
    assert f"{login} ({slug}) has no statement_timeout, lock_timeout, idle_in_transaction_session_timeout" \
        in lacking["detail"]
    assert f"flowforge org onboard {slug} {login}" in lacking["detail"]

    onboarded = run("--dsn", migrated_dsn, "org", "onboard", slug, login, "--lock-timeout", "2s")
    assert onboarded.returncode == 0, onboarded.stderr
    assert onboarded.stdout.strip() == (f"{login} is a member of {slug}; its new sessions get statement_timeout=30s, "
                                        "lock_timeout=2s, idle_in_transaction_session_timeout=60s")
    assert role_settings(migrated_dsn, login) >= TIMEOUTS
    fixed = doctor(migrated_dsn)["login timeouts"]
    assert fixed["status"] == "ok" and "have statement, lock and idle-in-transaction timeouts" in fixed["detail"]
    with psycopg.connect(make_conninfo(migrated_dsn, user=login)) as conn:  # a new session of the login has them
        assert conn.execute("SELECT current_setting('lock_timeout')").fetchone()[0] == "2s"


def test_org_onboard_refusals_are_one_line(role_registry, migrated_dsn):  # noqa: F811
    login = create_login(migrated_dsn, role_registry, "refused")
    unknown = run("--dsn", migrated_dsn, "org", "onboard", "no-such-org", login)
    assert_one_line_error(unknown)
    assert "flowforge org create SLUG NAME" in unknown.stderr
    assert_one_line_error(run("--dsn", migrated_dsn, "org", "onboard", "default", login, "--lock-timeout", "soon"))
    assert_one_line_error(run("--dsn", migrated_dsn, "org", "onboard", "default", "no_such_login_anywhere"))
    assert role_settings(migrated_dsn, login) == set()

    assert run("--dsn", migrated_dsn, "org", "onboard", "default", login).returncode == 0
    as_tenant = run("--dsn", make_conninfo(migrated_dsn, user=login), "org", "onboard", "default", login)
    assert_one_line_error(as_tenant)  # FF007: ALTER ROLE is the operator's
    assert "run it as the operator" in as_tenant.stderr


def test_old_transactions_name_pid_user_application_and_age(migrated_dsn):
    with psycopg.connect(migrated_dsn, application_name="snapshot-holder") as holder:
        holder.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        holder.execute("SELECT count(*) FROM flowforge.task_run")
        pid = holder.info.backend_pid
        found = doctor(migrated_dsn, "--snapshot-age", "0")["old transactions"]
    assert found["status"] == "warn"
    assert f"pid {pid} (user postgres, application snapshot-holder) idle in transaction for " in found["detail"]
    assert "transaction open " in found["detail"] and "holding a snapshot" in found["detail"]
    assert "VACUUM cannot remove" in found["detail"]
    assert doctor(migrated_dsn, "--snapshot-age", "0")["old transactions"]["status"] == "ok"
