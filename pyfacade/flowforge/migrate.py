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

import psycopg
from yoyo import read_migrations
from yoyo.backends import get_backend_class
from yoyo.connections import DatabaseURI
from yoyo.exceptions import LockTimeout, MigrationConflict
from yoyo.migrations import MigrationList

from . import db, errors
from .catalog import Catalog
from .config import SQL_DIR_ENV

YOYO_SCHEME = "postgresql+psycopg"
YOYO_MIGRATION_TABLE = "_yoyo_migration"
LOCK_TIMEOUT = 60  # seconds to wait for another migrate to finish
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
    parts.setdefault("application_name", db.APPLICATION_NAME + "-migrate")
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


# --- the three operations -----------------------------------------------------

def migrate(dsn: str) -> MigrateResult:
    """Apply pending migrations, then re-apply every function file. Idempotent."""
    result = MigrateResult()
    backend = _backend(dsn)
    migrations = _read_migrations()
    with _locked(backend), db.mapped_errors():
        pending = backend.to_apply(migrations)
        with _quiet():
            backend.apply_migrations(pending)
        result.applied = [m.id for m in pending]
        result.function_files = apply_functions(dsn)
    return result


class RemovesEverything(errors.InvalidArgument):
    """A rollback that would include the first migration, whose rollback drops schema ``flowforge``."""


def rollback(dsn: str, *, to: str | None = None, everything: bool = False) -> MigrateResult:
    """Roll back the newest applied migration; with ``to``, every one newer than it; with ``everything``, all.

    One step is the default because a rollback destroys what the migration
    created, data included.  Rolling back the first migration drops schema
    ``flowforge`` CASCADE (every table, row and function), so a plan that
    reaches it is refused with ``RemovesEverything`` unless ``everything``
    says so; asking for confirmation is the caller's (the CLI's) business.
    Non-transactional migrations (``-- transactional: false``) roll back
    statement by statement outside a transaction, as yoyo applies them.
    """
    result = MigrateResult()
    backend = _backend(dsn)
    migrations = _read_migrations()
    with _locked(backend), db.mapped_errors():
        applied = list(backend.to_rollback(migrations))  # newest first
        plan = _rollback_plan(applied, to=to, everything=everything)
        for migration in plan:
            with _quiet():
                backend.rollback_migrations(MigrationList([migration]))
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

    def __init__(self, backend):
        self._cm = backend.lock(timeout=LOCK_TIMEOUT)

    def __enter__(self):
        try:
            return self._cm.__enter__()
        except LockTimeout as exc:
            raise errors.DatabaseUnavailable(f"another migration holds the lock: {exc}") from None
        except psycopg.Error as exc:
            raise db.map_error(exc) from None

    def __exit__(self, *exc_info):
        return self._cm.__exit__(*exc_info)
