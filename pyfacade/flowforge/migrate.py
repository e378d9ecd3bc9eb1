"""Schema migrations (yoyo) plus the re-application of every SQL function.

Two kinds of SQL live in the repository:

* ``sql/migrations/NNNN_name.sql`` (+ ``NNNN_name.rollback.sql``): tables,
  constraints, indexes, roles, RLS.  Applied once each, in dependency order
  (yoyo reads the ``-- depends:`` header), recorded in yoyo's
  ``_yoyo_migration`` table.
* ``sql/functions/**/*.sql``: ``CREATE OR REPLACE`` definitions, in folders
  of one family each (``00_core/00_meta.sql``, ``10_substrate/...``).
  Re-applied in order of their path below ``functions/`` with
  ``99_grants.sql`` last, in one transaction, after *every* migrate — even
  when no migration was pending — so the text in the repository is always
  the text in the database and a function has exactly one source file.
  (``flowforge doctor`` lists functions in the database that no shipped file
  defines: retired signatures that need a ``DROP FUNCTION``.)

Both steps run under yoyo's lock (a row in ``yoyo_lock``), so concurrent
``flowforge migrate`` calls serialise instead of racing.

Every connection of a migrate carries ``lock_timeout`` and
``statement_timeout`` (``Bounds``): a migration never waits behind an idle
transaction for longer than a few seconds, so the claims queued behind its
lock request drain; it is tried again with a backoff, saying who is in the
way, until ``Bounds.max_wait`` (``flowforge.lock_waits``).  The migrations
themselves keep to CONTRIBUTING.md's policy (indexes on existing tables
``CONCURRENTLY``, constraints ``NOT VALID`` then ``VALIDATE``).

The SQL folder is found, in order, at ``$FLOWFORGE_SQL_DIR``, at
``<package>/sql`` (a wheel install: pyproject force-includes it there), or at
``<repo>/sql`` next to ``pyfacade/`` (a source or editable install).
"""

from __future__ import annotations

import contextlib
import io
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import psycopg
from psycopg import conninfo as _conninfo
from yoyo import read_migrations
from yoyo.backends import get_backend_class
from yoyo.connections import DatabaseURI
from yoyo.exceptions import LockTimeout, MigrationConflict
from yoyo.migrations import MigrationList

from . import db, errors, lock_waits
from .catalog import Catalog
from .config import SQL_DIR_ENV
from .db.statements import execute

YOYO_SCHEME = "postgresql+psycopg"
YOYO_MIGRATION_TABLE = "_yoyo_migration"
MIN_LOCK_WAIT = 60  # seconds to wait at least for another migrate to finish (yoyo's lock)
MIGRATE_APPLICATION = "flowforge-migrate"  # application_name of a migrate's sessions
GRANTS_FILE = "99_grants.sql"  # ownership and EXECUTE for every function: applied after all the others


@dataclass
class MigrateResult:
    """What a migrate or rollback did, for the CLI to render."""

    applied: list[str] = field(default_factory=list)
    rolled_back: list[str] = field(default_factory=list)
    function_files: list[str] = field(default_factory=list)


# --- locating the SQL -------------------------------------------------------

def sql_dir() -> Path:
    """The folder holding ``migrations/`` and ``functions/`` (see module docstring)."""
    override = os.environ.get(SQL_DIR_ENV, "").strip()
    if override:
        path = Path(override)
        if not (path / "migrations").is_dir():
            raise errors.InvalidArgument(f"{SQL_DIR_ENV}={override} has no migrations/ folder")
        return path
    here = Path(__file__).resolve().parent
    for candidate in (here / "sql", here.parent.parent / "sql"):
        if (candidate / "migrations").is_dir():
            return candidate
    raise errors.InvalidArgument(
        "cannot find FlowForge's SQL (looked in the package and the source tree); set " + SQL_DIR_ENV
    )


def migrations_dir() -> Path:
    return sql_dir() / "migrations"


def functions_dir() -> Path:
    return sql_dir() / "functions"


def function_files() -> list[Path]:
    """Every ``functions/**/*.sql`` file, in the order they are applied in.

    Sorted by path below ``functions/`` (``00_core/...`` before
    ``10_substrate/...``), except that the top-level grants file comes last
    whatever else is added: it grants on the functions every other file created.
    """
    folder = functions_dir()
    if not folder.is_dir():
        return []

    def order(path: Path) -> tuple[bool, tuple[str, ...]]:
        relative = path.relative_to(folder)
        return relative.parts == (GRANTS_FILE,), relative.parts

    return sorted(folder.rglob("*.sql"), key=order)


def migration_files() -> list[Path]:
    """The forward migration files (``NNNN_name.sql``, rollbacks left out), oldest first."""
    return sorted(p for p in migrations_dir().glob("*.sql") if not p.name.endswith(".rollback.sql"))


def known_migration_ids() -> list[str]:
    """Ids of the migration files shipped with this code, oldest first (``NNNN_name``)."""
    return [p.name[: -len(".sql")] for p in migration_files()]


def known_schema_version() -> str | None:
    """The newest migration id this code knows — what ``flowforge.schema_version()`` should return."""
    ids = known_migration_ids()
    return ids[-1] if ids else None


# --- yoyo plumbing ----------------------------------------------------------

def _backend(dsn: str):
    """A yoyo backend for ``dsn``.

    yoyo wants a URL, but FlowForge accepts any libpq DSN (key=value strings,
    socket paths, service files).  So we let libpq parse the DSN and hand yoyo
    the parts as connect() keyword arguments instead of re-serialising a URL.
    """
    parts = db.parse_dsn(dsn)
    dbname = parts.pop("dbname", None)
    parts.setdefault("connect_timeout", str(db.DEFAULT_CONNECT_TIMEOUT))
    parts.setdefault("application_name", MIGRATE_APPLICATION)
    uri = DatabaseURI(YOYO_SCHEME, None, None, None, None, dbname, parts)
    backend = get_backend_class(YOYO_SCHEME)(uri, YOYO_MIGRATION_TABLE)
    try:
        backend.init_database()
    except psycopg.OperationalError as exc:
        raise errors.DatabaseUnavailable(
            f"cannot connect to PostgreSQL ({db.mask_dsn(dsn)}): {db.first_line(exc)}"
        ) from None
    except psycopg.Error as exc:
        raise db.map_error(exc) from None
    return backend


def _read_migrations():
    try:
        return read_migrations(str(migrations_dir()))
    except MigrationConflict as exc:
        raise errors.InvalidArgument(f"inconsistent migration files: {exc}") from None


# --- how long a migration may wait ----------------------------------------------

@dataclass(frozen=True)
class Bounds:
    """Time limits of every connection a migrate opens (see ``flowforge.lock_waits``).

    ``lock_timeout``: seconds one statement may wait for a lock before it gives
    up, so live traffic never queues behind a migration for longer; the step
    is then tried again.  ``statement_timeout``: seconds one statement may run
    (0: no limit).  ``max_wait``: seconds a whole migrate keeps trying again
    (and waits for another migrate's yoyo lock) before it fails.
    """

    lock_timeout: float = 5.0
    statement_timeout: float = 600.0
    max_wait: float = 300.0


DEFAULT_BOUNDS = Bounds()


def _silent(line: str) -> None:
    pass


def _bounded(dsn: str, bounds: Bounds) -> tuple[str, str]:
    """``dsn`` with the bounds as startup options, and the application_name its sessions go by.

    As startup options (``-c lock_timeout=...``) they hold for every
    connection yoyo opens (one per migration) and survive its ROLLBACKs.
    The application_name is how ``BlockerWatch`` finds the migration's
    waiting backend.
    """
    parts = db.parse_dsn(dsn)
    application = parts.get("application_name") or MIGRATE_APPLICATION
    options = " ".join(filter(None, [parts.get("options", ""),
                                     f"-c lock_timeout={_ms(bounds.lock_timeout)}",
                                     f"-c statement_timeout={_ms(bounds.statement_timeout)}"]))
    return _conninfo.make_conninfo(dsn, application_name=application, options=options), application


def _ms(seconds: float) -> int:
    return max(0, round(seconds * 1000))


# --- the three operations -----------------------------------------------------

def migrate(dsn: str, bounds: Bounds = DEFAULT_BOUNDS, report: Callable[[str], None] = _silent) -> MigrateResult:
    """Apply pending migrations one by one, then re-apply every function file. Idempotent.

    Each migration and the function files are one step each: a step that
    times out on a lock (``bounds.lock_timeout``) has changed nothing and is
    tried again until ``bounds.max_wait``; ``report`` hears why.  Migrations
    applied before a failure stay applied (each commits on its own).
    """
    result = MigrateResult()
    dsn, application = _bounded(dsn, bounds)
    backend = _backend(dsn)
    migrations = _read_migrations()
    retrier = lock_waits.Retrier(dsn, application, lock_timeout=bounds.lock_timeout, max_wait=bounds.max_wait,
                                 report=report)
    with _locked(backend, bounds.max_wait):
        with db.mapped_errors():
            pending = list(backend.to_apply(migrations))
        for migration in pending:
            retrier.run(lambda: _step(backend, migration, dsn, "apply", report), migration.id)
            result.applied.append(migration.id)
        result.function_files = retrier.run(lambda: apply_functions(dsn), "the function files")
    return result


def _step(backend, migration, dsn: str, direction: str, report: Callable[[str], None]) -> None:
    """Apply or roll back one migration, errors mapped by SQLSTATE.

    A non-transactional migration first loses any INVALID index in schema
    flowforge: a ``CREATE INDEX CONCURRENTLY`` that timed out (or a migrate
    that was killed) leaves one behind, and ``IF NOT EXISTS`` would keep it.
    """
    one = MigrationList([migration])
    with db.mapped_errors():
        migration.load()
        if not migration.use_transactions:
            _drop_invalid_indexes(dsn, report)
        with _quiet():
            if direction == "apply":
                backend.apply_migrations_only(one)
            else:
                backend.rollback_migrations(one)


def _drop_invalid_indexes(dsn: str, report: Callable[[str], None]) -> None:
    with db.connect(dsn, autocommit=True) as conn:  # DROP INDEX CONCURRENTLY cannot run in a transaction
        for statement in Catalog(conn).drop_invalid_index_statements():
            report(f"{statement}: an earlier build was interrupted and left it invalid")
            execute(conn, statement)


class RemovesEverything(errors.InvalidArgument):
    """A rollback that would include the first migration, whose rollback drops schema ``flowforge``."""


def rollback(dsn: str, *, to: str | None = None, everything: bool = False, bounds: Bounds = DEFAULT_BOUNDS,
             report: Callable[[str], None] = _silent) -> MigrateResult:
    """Roll back the newest applied migration; with ``to``, every one newer than it; with ``everything``, all.

    One step is the default because a rollback destroys what the migration
    created, data included.  Rolling back the first migration drops schema
    ``flowforge`` CASCADE (every table, row and function), so a plan that
    reaches it is refused with ``RemovesEverything`` unless ``everything``
    says so; asking for confirmation is the caller's (the CLI's) business.
    Non-transactional migrations (``-- transactional: false``) roll back
    statement by statement outside a transaction, as yoyo applies them.
    Lock timeouts are retried as in ``migrate``.
    """
    result = MigrateResult()
    dsn, application = _bounded(dsn, bounds)
    backend = _backend(dsn)
    migrations = _read_migrations()
    retrier = lock_waits.Retrier(dsn, application, lock_timeout=bounds.lock_timeout, max_wait=bounds.max_wait,
                                 report=report)
    with _locked(backend, bounds.max_wait):
        with db.mapped_errors():
            applied = list(backend.to_rollback(migrations))  # newest first
        for migration in _rollback_plan(applied, to=to, everything=everything):
            retrier.run(lambda: _step(backend, migration, dsn, "rollback", report), migration.id)
            result.rolled_back.append(migration.id)
    return result


def _rollback_plan(applied: list, *, to: str | None, everything: bool) -> list:
    """Which of the applied migrations (newest first) to roll back, in that order."""
    if everything:
        return applied
    if to is not None:
        target = resolve_migration_id(to)
        ids = [m.id for m in applied]
        if target not in ids:
            raise errors.InvalidArgument(f"{target} is not applied to this database, so it cannot be kept"
                                         + (f"; the newest applied is {ids[0]}" if ids else ""))
        plan = applied[: ids.index(target)]
    else:
        plan = applied[:1]
    first = known_migration_ids()[0]
    if any(m.id == first for m in plan):
        raise RemovesEverything(f"rolling back {first} drops schema flowforge and all its data")
    return plan


def resolve_migration_id(text: str) -> str:
    """A shipped migration id from its full id or its number (``0012`` → ``0012_gateway_tokens``)."""
    text = text.strip()
    known = known_migration_ids()
    matches = [m for m in known if m == text or m.split("_", 1)[0] == text]
    if len(matches) != 1:
        raise errors.InvalidArgument(f"no shipped migration {text!r}; known: {known[0]} .. {known[-1]}")
    return matches[0]


def apply_functions(dsn: str) -> list[str]:
    """Run every function file (``function_files()``) in one transaction; return their names.

    One transaction: either the database gets the whole new function set or it
    keeps the old one — never a mix of old and new function text.
    """
    files = function_files()
    with db.connect(dsn) as conn, db.mapped_errors():
        with conn.transaction():
            for path in files:
                # No parameters: psycopg sends the file as one simple query,
                # so it may hold many statements and literal % signs.
                conn.execute(path.read_text(encoding="utf-8"))
    return [p.name for p in files]


def pending_migrations(dsn: str) -> list[str]:
    """Ids of shipped migrations not applied to ``dsn`` — read-only, unlike yoyo's own API."""
    known = known_migration_ids()
    applied = set(applied_migrations(dsn))
    return [m for m in known if m not in applied]


def applied_migrations(dsn: str) -> list[str]:
    """Ids recorded in yoyo's table (empty when the database was never migrated)."""
    with db.connect(dsn) as conn:
        return Catalog(conn).applied_migrations()


def _quiet():
    """yoyo prints the rows of any statement that returns some (a rollback's ``SELECT 'no undo'``) to
    stdout; they mean nothing to the user and would corrupt ``--json`` output."""
    return contextlib.redirect_stdout(io.StringIO())


class _locked:
    """yoyo's migration lock, with its timeout reported as a FlowForge error."""

    def __init__(self, backend, timeout: float):
        self._cm = backend.lock(timeout=max(timeout, MIN_LOCK_WAIT))

    def __enter__(self):
        try:
            return self._cm.__enter__()
        except LockTimeout as exc:
            raise errors.DatabaseUnavailable(f"another migration holds the lock: {exc}") from None
        except psycopg.Error as exc:
            raise db.map_error(exc) from None

    def __exit__(self, *exc_info):
        return self._cm.__exit__(*exc_info)
