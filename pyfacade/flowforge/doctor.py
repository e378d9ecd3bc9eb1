"""Health checks behind ``flowforge doctor``.

Each check answers one question an operator asks when something is off, and
says what to do about it.  Statuses:

* ``ok``       — fine;
* ``problem``  — FlowForge will not work correctly; ``doctor`` exits non-zero;
* ``warn``     — only development tooling is missing (pgTAP, plpgsql_check are
  needed to run the SQL test suite, not to run workflows — the embedded
  server has neither, and must still pass);
* ``skip``     — not configured, so not checked (the broker without
  FLOWFORGE_AMQP_URL: only push queues need it).

If the database cannot be reached at all, ``DatabaseUnavailable`` propagates:
every other check needs it, and the CLI prints that one line.

The checks only read: no yoyo tables are created, nothing is migrated.  The
``functions`` check compares schema ``flowforge`` with the functions the
shipped SQL files define (``flowforge.shipped``): a function no file defines
is a signature that changed and was never dropped.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from . import amqp, db, errors, migrate, shipped
from .catalog import Catalog
from .client import Client
from .config import Settings
from .db import embedded

OK, WARN, SKIP, PROBLEM = "ok", "warn", "skip", "problem"
MIN_SERVER_VERSION_NUM = 150000
AMQP_TIMEOUT = 3.0  # seconds
RETIRED_FILE = "sql/functions/00_core/90_retired.sql"  # where DROP FUNCTION IF EXISTS of retired signatures go


@dataclass(frozen=True)
class Check:
    name: str
    status: str
    detail: str

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


def run_checks(settings: Settings) -> list[Check]:
    """Every check, in the order they are printed."""
    dsn = db.resolve_dsn(settings)
    checks = [_database(settings, dsn)]
    with db.connect(dsn) as conn:
        catalog = Catalog(conn)
        checks.append(_server_version(catalog))
        checks.append(_schema_version(catalog, Client(conn)))
        checks.append(_pending(dsn))
        checks.append(_functions(catalog))
        checks.append(_extension(catalog, "pgtap", "pgTAP"))
        checks.append(_extension(catalog, "plpgsql_check", "plpgsql_check"))
    checks.append(_broker(settings.amqp_url))
    return checks


def has_problem(checks: list[Check]) -> bool:
    return any(c.status == PROBLEM for c in checks)


def _database(settings: Settings, dsn: str) -> Check:
    if settings.embedded:
        return Check("database", OK, f"embedded PostgreSQL in {embedded.data_dir()}")
    return Check("database", OK, f"{db.mask_dsn(dsn)} (from {settings.dsn_source})")


def _server_version(catalog: Catalog) -> Check:
    num, text = catalog.server_version()
    if num >= MIN_SERVER_VERSION_NUM:
        return Check("server version", OK, f"PostgreSQL {text}")
    return Check("server version", PROBLEM, f"PostgreSQL {text}; FlowForge needs 15 or newer")


def _schema_version(catalog: Catalog, client: Client) -> Check:
    known = migrate.known_schema_version()
    if not catalog.has_schema_version():
        return Check("schema version", PROBLEM, f"not installed (this code expects {known}); run `flowforge migrate`")
    applied = client.schema_version()
    if applied == known:
        return Check("schema version", OK, f"{applied}")
    if applied is not None and known is not None and applied > known:
        return Check("schema version", PROBLEM,
                     f"database is at {applied}, newer than this code ({known}); upgrade flowforge")
    return Check("schema version", PROBLEM, f"database is at {applied}, this code expects {known}; run `flowforge migrate`")


def _pending(dsn: str) -> Check:
    pending = migrate.pending_migrations(dsn)
    if not pending:
        return Check("pending migrations", OK, "none")
    return Check("pending migrations", PROBLEM, f"{', '.join(pending)}; run `flowforge migrate`")


def _functions(catalog: Catalog) -> Check:
    """Functions in schema flowforge that no shipped file defines (and shipped ones that are absent)."""
    if not catalog.schema_installed():
        return Check("functions", SKIP, "schema flowforge not installed")
    found = shipped.compare(catalog, migrate.function_files(), migrate.migration_files())
    if found.unknown:
        signatures = ", ".join(found.unknown)
        return Check("functions", PROBLEM,
                     f"{len(found.unknown)} not defined by any shipped file: {signatures}; if a signature was "
                     f"retired, add `DROP FUNCTION IF EXISTS <signature>;` for it to {RETIRED_FILE} and migrate")
    if found.missing:
        headers = ", ".join(str(h) for h in found.missing)
        return Check("functions", PROBLEM,
                     f"{len(found.missing)} shipped but not in the database: {headers}; run `flowforge migrate`")
    return Check("functions", OK, f"{found.defined} in schema flowforge, each defined by a shipped file")


def _extension(catalog: Catalog, name: str, label: str) -> Check:
    row = catalog.extension(name)
    if row is None:
        return Check(label, WARN, "not available on this server (needed only to run the SQL test suite)")
    default_version, installed = row["default_version"], row["installed_version"]
    detail = f"available ({default_version})" + (f", installed {installed}" if installed else "")
    return Check(label, OK, detail)


def _broker(amqp_url: str | None) -> Check:
    if not amqp_url:
        return Check("broker", SKIP, "FLOWFORGE_AMQP_URL not set (needed only for push queues)")
    try:
        _amqp_ping(amqp_url)
    except errors.BrokerUnavailable as exc:
        return Check("broker", PROBLEM, str(exc))
    return Check("broker", OK, f"{amqp.mask_url(amqp_url)} answered")


def _amqp_ping(url: str) -> None:
    """Open and close a real AMQP connection (handshake included) with short timeouts."""
    import pika  # late import: only needed when a broker is configured
    import pika.exceptions

    try:
        params = pika.URLParameters(url)
    except Exception as exc:  # pika raises ValueError and friends for bad URLs
        raise errors.BrokerUnavailable(f"invalid FLOWFORGE_AMQP_URL: {exc}") from None
    params.socket_timeout = AMQP_TIMEOUT
    params.stack_timeout = AMQP_TIMEOUT
    params.blocked_connection_timeout = AMQP_TIMEOUT
    params.connection_attempts = 1
    params.retry_delay = 0
    try:
        connection = pika.BlockingConnection(params)
    except (pika.exceptions.AMQPError, OSError) as exc:
        # pika nests the real cause in args (e.g. ConnectionRefusedError).
        reason = "; ".join(repr(a) if isinstance(a, BaseException) else str(a) for a in exc.args)
        reason = reason or type(exc).__name__
        raise errors.BrokerUnavailable(f"cannot reach {amqp.mask_url(url)}: {reason}") from None
    connection.close()

