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
* The bundled server lacks contrib extensions (pgserver 0.1.4 ships plpgsql
  and pgvector only), so FlowForge's SQL must rely on built-ins only
  (``gen_random_uuid()``, ``sha256()``), not on pgcrypto.
"""

from __future__ import annotations

import os
import signal
import time
import warnings
from pathlib import Path

from psycopg import conninfo as _conninfo

from .. import errors, queries
from .connection import connect
from .statements import execute, fetch_value

DATA_SUBDIR = Path(".flowforge") / "pgdata"
DATABASE = "flowforge"
SUPERUSER = "postgres"


def data_dir(base: Path | None = None) -> Path:
    """The pgdata folder for ``base`` (default: the current working directory)."""
    return ((base or Path.cwd()) / DATA_SUBDIR).resolve()


def ensure_running(base: Path | None = None) -> str:
    """Start (or reuse) the embedded server and return a DSN for its ``flowforge`` database."""
    pgdata = data_dir(base)
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


def _ensure_database(admin_dsn: str) -> None:
    """Create the ``flowforge`` database on first use (CREATE DATABASE needs autocommit)."""
    with connect(admin_dsn, autocommit=True) as conn:
        if not fetch_value(conn, queries.EMBEDDED_DATABASE_EXISTS):
            execute(conn, queries.CREATE_EMBEDDED_DATABASE)


def is_running(base: Path | None = None) -> bool:
    """Whether a postmaster recorded in the data folder is alive."""
    pid = _postmaster_pid(data_dir(base))
    return pid is not None and _alive(pid)


def stop(base: Path | None = None, *, timeout: float = 30.0) -> bool:
    """Shut the embedded server down (fast shutdown); True if one was running.

    Sends SIGINT to the postmaster named in ``postmaster.pid`` — PostgreSQL's
    documented fast-shutdown signal — instead of going through pgserver, whose
    public API only stops servers it started in the same process.
    """
    pid = _postmaster_pid(data_dir(base))
    if pid is None or not _alive(pid):
        return False
    os.kill(pid, signal.SIGINT)
    deadline = time.monotonic() + timeout
    while _alive(pid):
        if time.monotonic() > deadline:
            raise errors.DatabaseUnavailable(f"embedded PostgreSQL (pid {pid}) did not stop within {timeout}s")
        time.sleep(0.1)
    return True


def _postmaster_pid(pgdata: Path) -> int | None:
    try:
        first = (pgdata / "postmaster.pid").read_text().splitlines()[0]
        return int(first.strip())
    except (OSError, IndexError, ValueError):
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
