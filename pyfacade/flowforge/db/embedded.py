"""The embedded default database: a private PostgreSQL run by ``pgserver``.

With no DSN configured, FlowForge must still work on a machine that has no
database server (``flowforge demo`` on a laptop).  ``pgserver`` ships
PostgreSQL binaries inside a wheel; we point it at ``./.flowforge/pgdata``
under the current working directory, so each project folder has its own
database and ``.gitignore`` keeps it out of version control.

Decisions
---------
* **The server keeps running between CLI invocations.**  We ask pgserver for
  ``cleanup_mode=None``: it starts PostgreSQL on first use and, on later
  invocations, finds the running postmaster through ``postmaster.pid`` and
  reuses it.  Starting and stopping a server per command would cost seconds
  each time, and the daemon and workers (separate processes) must share one
  server anyway.  ``stop()`` below shuts it down explicitly (tests use it).
* **It listens on a Unix socket only** (pgserver passes ``-h ""``), inside the
  data folder, so it never competes for TCP port 5432 with a real server.
* **FlowForge uses its own database ``flowforge``** in that server, created on
  first use, rather than the ``postgres`` maintenance database.
* **Running as root.**  PostgreSQL refuses to run as root.  pgserver handles
  that itself when ``geteuid() == 0``: it creates (once, with ``useradd``) an
  unprivileged system user ``pgserver``, chowns the data folder to it, runs
  ``initdb``/``pg_ctl`` as that user, and adds group/other read+execute
  permission on every ancestor folder of the data folder and of its bundled
  binaries so that user can reach them.  We verified this works as root
  (containers, CI) and rely on it rather than re-implementing it; the visible
  side effects are that user and those widened directory modes (e.g. running
  ``flowforge`` as root inside ``/root/proj`` makes ``/root`` traversable).
* **Only ``flowforge migrate`` and ``flowforge demo`` create one** (``create=True``):
  they are how a project folder gets its database.  Every other command run
  in a folder without ``.flowforge/pgdata`` and without a DSN raises
  ``NoDatabaseHere`` naming what to do — starting a second, empty server
  there only led to ``schema "flowforge" does not exist`` one step later.
  An existing data folder whose server is stopped is simply started again.
* The bundled server lacks contrib extensions (pgserver 0.1.4 ships plpgsql
  and pgvector only), so FlowForge's SQL must rely on built-ins only
  (``gen_random_uuid()``, ``sha256()``), not on pgcrypto.
"""

from __future__ import annotations

import os
import signal
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

from psycopg import conninfo as _conninfo

from .. import errors, queries
from .connection import connect
from .statements import execute, fetch_value

DATA_SUBDIR = Path(".flowforge") / "pgdata"
DATABASE = "flowforge"
SUPERUSER = "postgres"


class NoDatabaseHere(errors.FlowForgeError):
    """No DSN is configured and this folder has no embedded database, and the command may not create one."""


@dataclass(frozen=True)
class Status:
    """What the data folder says about the embedded server, without starting anything."""

    data_dir: Path
    initialized: bool
    pid: int | None  # the running postmaster, else None
    dsn: str | None  # its ``flowforge`` database while it runs

    @property
    def running(self) -> bool:
        return self.pid is not None


def data_dir(base: Path | None = None) -> Path:
    """The pgdata folder for ``base`` (default: the current working directory)."""
    return ((base or Path.cwd()) / DATA_SUBDIR).resolve()


def initialized(base: Path | None = None) -> bool:
    """Whether ``base`` holds an embedded data folder (initdb has run there)."""
    return (data_dir(base) / "PG_VERSION").is_file()


def ensure_running(base: Path | None = None, *, create: bool = False) -> str:
    """Start (or reuse) the embedded server and return a DSN for its ``flowforge`` database.

    Without ``create``, a folder with no data folder raises ``NoDatabaseHere``
    instead of getting a new server.
    """
    pgdata = data_dir(base)
    if not create and not initialized(base):
        raise _no_database_here(pgdata)
    try:
        pgdata.parent.mkdir(parents=True, exist_ok=True)
        with warnings.catch_warnings():
            # platformdirs warns on stderr when XDG_RUNTIME_DIR is unset (root,
            # containers) and falls back to /tmp/runtime-<uid>; that is fine here.
            warnings.simplefilter("ignore")
            import pgserver  # late import: only needed without a DSN, and slow to import

        server = pgserver.get_server(pgdata, cleanup_mode=None)
        info = server.get_postmaster_info()
    except Exception as exc:  # pgserver raises plain exceptions (CalledProcessError, AssertionError...)
        raise errors.DatabaseUnavailable(
            f"could not start the embedded PostgreSQL in {pgdata}: {type(exc).__name__}: {exc}"
            f" (server log: {pgdata / 'log'})"
        ) from None
    host = str(info.socket_dir) if info.socket_dir is not None else (info.hostname or "127.0.0.1")
    admin_dsn = _conninfo.make_conninfo(host=host, port=str(info.port), user=SUPERUSER, dbname="postgres")
    _ensure_database(admin_dsn)
    return _conninfo.make_conninfo(host=host, port=str(info.port), user=SUPERUSER, dbname=DATABASE)


def _no_database_here(pgdata: Path) -> NoDatabaseHere:
    project = _enclosing_project(pgdata.parent.parent)
    where = (f"the nearest is in {project / DATA_SUBDIR}: cd {project}" if project is not None
             else "cd to the project folder that holds .flowforge/")
    return NoDatabaseHere(
        f"no database: FLOWFORGE_DSN is not set and there is no embedded FlowForge database in {pgdata}",
        hint=f"{where}, set FLOWFORGE_DSN, or run `flowforge migrate` to create an embedded one here")


def _enclosing_project(folder: Path) -> Path | None:
    """The nearest parent of ``folder`` with an embedded data folder (for the hint only: never used)."""
    for parent in folder.parents:
        if initialized(parent):
            return parent
    return None


def status(base: Path | None = None) -> Status:
    """The embedded server of ``base``: is there a data folder, is it running, its DSN. Starts nothing."""
    pgdata = data_dir(base)
    lines = _postmaster_lines(pgdata)
    pid = _int(lines, 0)
    if pid is None or not _alive(pid):
        return Status(pgdata, initialized(base), None, None)
    # postmaster.pid: pid, data folder, start time, port, socket folder, listen address, shmem, status.
    socket_dir = lines[4].strip() if len(lines) > 4 else ""
    host = socket_dir or (lines[5].strip() if len(lines) > 5 else "") or "127.0.0.1"
    dsn = _conninfo.make_conninfo(host=host, port=str(_int(lines, 3) or 5432), user=SUPERUSER, dbname=DATABASE)
    return Status(pgdata, True, pid, dsn)


def _ensure_database(admin_dsn: str) -> None:
    """Create the ``flowforge`` database on first use (CREATE DATABASE needs autocommit)."""
    with connect(admin_dsn, autocommit=True) as conn:
        if not fetch_value(conn, queries.EMBEDDED_DATABASE_EXISTS):
            execute(conn, queries.CREATE_EMBEDDED_DATABASE)


def is_running(base: Path | None = None) -> bool:
    """Whether a postmaster recorded in the data folder is alive."""
    return status(base).running


def stop(base: Path | None = None, *, timeout: float = 30.0) -> bool:
    """Shut the embedded server down (fast shutdown); True if one was running.

    Sends SIGINT to the postmaster named in ``postmaster.pid`` — PostgreSQL's
    documented fast-shutdown signal — instead of going through pgserver, whose
    public API only stops servers it started in the same process.
    """
    pid = status(base).pid
    if pid is None:
        return False
    os.kill(pid, signal.SIGINT)
    deadline = time.monotonic() + timeout
    while _alive(pid):
        if time.monotonic() > deadline:
            raise errors.DatabaseUnavailable(f"embedded PostgreSQL (pid {pid}) did not stop within {timeout}s")
        time.sleep(0.1)
    return True


def _postmaster_lines(pgdata: Path) -> list[str]:
    try:
        return (pgdata / "postmaster.pid").read_text().splitlines()
    except OSError:
        return []


def _int(lines: list[str], index: int) -> int | None:
    try:
        return int(lines[index].strip())
    except (IndexError, ValueError):
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child would still answer signal 0; postgres is never our child
    # (pg_ctl daemonises it), so this is enough.
    return True
