"""The checks about sessions and logins: connection slots, per-login limits, timeouts, old transactions.

Issue 12: with every slot taken by workers the daemon got none and ``tick()``
stopped; tenant logins had no timeouts, and one idle snapshot bloated
``task_run`` with nothing warning about it.  These checks read
``pg_stat_activity``, ``pg_roles`` and ``pg_db_role_setting`` (run them as
the operator, or a login with ``pg_monitor``: other roles see only their own
sessions' details) and say what to set; docs/security.md explains why.
"""

from __future__ import annotations

from .. import errors
from ..catalog import Catalog
from ..lock_waits import session_name
from .check import OK, PROBLEM, SKIP, WARN, Check, listed

INSUFFICIENT_PRIVILEGE = "42501"
DEFAULT_SNAPSHOT_AGE = 60.0  # seconds: the idle_in_transaction timeout onboarding gives tenant logins
RUNTIME_LOGIN_ROLES = {"flowforge_app", "flowforge_worker", "flowforge_gateway"}  # those a worker fleet uses


def min_free_slots(usable: int) -> int:
    """Below this many free slots doctor warns: 10% of the usable slots, and never fewer than 5."""
    return max(5, usable // 10)


def connection_headroom(catalog: Catalog, min_free: int | None = None) -> Check:
    """Slots left for non-superusers: max_connections - superuser_reserved_connections - client backends."""
    slots = catalog.connection_slots()
    usable = slots["max_connections"] - slots["superuser_reserved"]
    free = usable - slots["in_use"]
    threshold = min_free_slots(usable) if min_free is None else min_free
    detail = (f"{free} of {usable} slots free (max_connections {slots['max_connections']} - "
              f"superuser_reserved_connections {slots['superuser_reserved']} - {slots['in_use']} connected)")
    if free <= 0:
        return Check("connection slots", PROBLEM, f"{detail}: new workers and the daemon cannot connect; "
                     "cap worker logins with CONNECTION LIMIT (docs/security.md, Connections)")
    if free < threshold:
        return Check("connection slots", WARN, f"{detail}, fewer than {threshold}: when they are gone the daemon "
                     "cannot connect and tick() stops; cap worker logins with CONNECTION LIMIT (docs/security.md)")
    return Check("connection slots", OK, detail)


def connection_limits(catalog: Catalog) -> Check:
    """Each FlowForge login's CONNECTION LIMIT; a warning when a worker-side login has none."""
    logins = catalog.flowforge_logins()
    if not logins:
        return Check("connection limits", OK, "no FlowForge logins (everything connects as a superuser)")
    described = [f"{row['login']}: {_limit(row)}" for row in logins]
    unlimited = [row["login"] for row in logins
                 if row["connection_limit"] < 0 and RUNTIME_LOGIN_ROLES & set(row["runtime_roles"])]
    if unlimited:
        return Check("connection limits", WARN,
                     f"no CONNECTION LIMIT on {listed(unlimited)}: a runaway worker fleet can take every slot, the "
                     f"daemon's too; ALTER ROLE <login> CONNECTION LIMIT n (docs/security.md). {listed(described)}")
    return Check("connection limits", OK, listed(described))


def _limit(row: dict) -> str:
    limit = "no limit" if row["connection_limit"] < 0 else f"limit {row['connection_limit']}"
    return f"{limit}, {row['connections']} connected"


def login_timeouts(catalog: Catalog) -> Check:
    """Mapped logins lacking statement_timeout / lock_timeout / idle_in_transaction_session_timeout."""
    if not catalog.schema_installed():
        return Check("login timeouts", SKIP, "schema flowforge not installed")
    try:
        logins = catalog.logins_missing_timeouts()
    except errors.FlowForgeError as exc:
        if exc.sqlstate != INSUFFICIENT_PRIVILEGE:
            raise
        return Check("login timeouts", SKIP, "reading flowforge.membership needs the operator or flowforge_readonly")
    lacking = [row for row in logins if row["missing"]]
    if lacking:
        named = [f"{row['login']} ({row['organization']}) has no {', '.join(row['missing'])}" for row in lacking]
        first = lacking[0]
        return Check("login timeouts", WARN,
                     f"{listed(named, 4)}; a stuck client then holds locks, a snapshot and a slot indefinitely: "
                     f"flowforge org onboard {first['organization']} {first['login']} sets all three")
    if not logins:
        return Check("login timeouts", OK, "no logins mapped to an organization")
    return Check("login timeouts", OK, f"all {len(logins)} mapped login(s) have statement, lock and "
                                       "idle-in-transaction timeouts")


def old_transactions(catalog: Catalog, seconds: float = DEFAULT_SNAPSHOT_AGE) -> Check:
    """Sessions of this database whose transaction is older than ``seconds`` (old snapshots, idle in transaction)."""
    rows = catalog.old_transactions(seconds)
    if not rows:
        return Check("old transactions", OK, f"none open longer than {seconds:g} s")
    described = [_session(row) for row in rows]
    return Check("old transactions", WARN,
                 f"{listed(described, 4)}; while a transaction lives VACUUM cannot remove the dead rows it may "
                 "still see, so task_run bloats and claims slow down: end it (pg_terminate_backend(pid)) and give "
                 "its login idle_in_transaction_session_timeout")


def _session(row: dict) -> str:
    text = session_name(row["pid"], row["usename"], row["application_name"])
    if row["state"] and row["state"].startswith("idle in transaction"):
        text += f" {row['state']} for {row['state_seconds']:.0f} s,"
    text += f" transaction open {row['xact_seconds']:.0f} s"
    return text + (", holding a snapshot" if row["holds_snapshot"] else "")
