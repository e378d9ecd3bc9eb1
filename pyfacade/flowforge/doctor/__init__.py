"""Health checks behind ``flowforge doctor``.

Each check answers one question an operator asks when something is off, and
says what to do about it.  Statuses:

* ``ok``       — fine;
* ``problem``  — FlowForge will not work correctly; ``doctor`` exits non-zero;
* ``warn``     — it works, but something an operator should change (few
  connection slots left, logins without limits or timeouts, a transaction
  holding back VACUUM) or, with ``--dev``, development tooling is missing
  (pgTAP, plpgsql_check: needed for the SQL test suite, not for workflows);
* ``skip``     — not configured or not readable, so not checked (the broker
  without FLOWFORGE_AMQP_URL: only push queues need it).

If the database cannot be reached at all, ``DatabaseUnavailable`` propagates:
every other check needs it, and the CLI prints that one line.

The checks only read: no yoyo tables are created, nothing is migrated, and
the connection is in autocommit so that doctor itself holds no snapshot.
The ``functions`` check compares schema ``flowforge`` with the functions the
shipped SQL files define (``flowforge.shipped``): a function no file defines
is a signature that changed and was never dropped.

Layout: ``check`` (the result type), ``schema`` (server, schema, functions,
tooling), ``sessions`` (connections, logins, old transactions), ``broker``;
``inspection`` is ``doctor --deep``: the DBA's answers from the inspection
views (why work is not ready, queue depth, stuck runs, worker load, tenant
usage, index usage), printed after the checks and never failing them.
"""

from __future__ import annotations

from .. import db
from ..catalog import Catalog
from ..client import Client
from ..config import Settings
from . import broker, schema, sessions
from .check import OK, PROBLEM, SKIP, WARN, Check

__all__ = ["OK", "PROBLEM", "SKIP", "WARN", "Check", "has_problem", "run_checks"]


def run_checks(settings: Settings, *, dev: bool = False, snapshot_age: float = sessions.DEFAULT_SNAPSHOT_AGE,
               min_free_connections: int | None = None) -> list[Check]:
    """Every check, in the order they are printed; ``dev`` adds the test tooling."""
    dsn = db.resolve_dsn(settings)
    checks = [schema.database(settings, dsn)]
    with db.connect(dsn, autocommit=True) as conn:
        catalog = Catalog(conn)
        checks.append(schema.server_version(catalog))
        checks.append(schema.schema_version(catalog, Client(conn)))
        checks.append(schema.pending(dsn))
        checks.append(schema.functions(catalog))
        checks.append(sessions.connection_headroom(catalog, min_free_connections))
        checks.append(sessions.connection_limits(catalog))
        checks.append(sessions.login_timeouts(catalog))
        checks.append(sessions.old_transactions(catalog, snapshot_age))
        if dev:
            checks.append(schema.extension(catalog, "pgtap", "pgTAP"))
            checks.append(schema.extension(catalog, "plpgsql_check", "plpgsql_check"))
    checks.append(broker.broker(settings.amqp_url))
    return checks


def has_problem(checks: list[Check]) -> bool:
    return any(c.status == PROBLEM for c in checks)
