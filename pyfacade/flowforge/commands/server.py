"""``flowforge status`` and ``flowforge stop``: the embedded PostgreSQL of this folder, and which database is used.

Neither starts a server: ``status`` reads the data folder's ``postmaster.pid``
(and, when a database is reachable, its schema version); ``stop`` shuts the
folder's server down.
"""

from __future__ import annotations

import click

from .. import db, migrate as migrations, render
from ..catalog import Catalog
from ..client import Client
from ..config import Settings
from ..db import embedded
from ._common import emit_json

EXIT_NOT_RUNNING = 3  # as an LSB init script's `status` says "not running"


@click.command("status")
@click.pass_obj
@click.pass_context
def status(ctx: click.Context, settings: Settings) -> None:
    """Which database this folder uses: the embedded server (running? where?) or the DSN, and its schema version.

    Exits 0 when the database is up, 3 when the embedded server is not running
    (or this folder has none).  Starts nothing.
    """
    if settings.embedded:
        server = embedded.status()
        report = {"embedded": True, "data_dir": str(server.data_dir), "initialized": server.initialized,
                  "running": server.running, "pid": server.pid, "database": embedded.DATABASE}
        dsn = server.dsn
    else:
        report = {"embedded": False, "database": db.mask_dsn(settings.dsn), "source": settings.dsn_source}
        dsn = settings.dsn
    if dsn is not None:
        report["schema_version"] = _schema_version(dsn)
    report["expected_schema_version"] = migrations.known_schema_version()
    if settings.json:
        emit_json(report)
    else:
        click.echo(render.table(_lines(report)))
    if settings.embedded and not report["running"]:
        ctx.exit(EXIT_NOT_RUNNING)


def _schema_version(dsn: str) -> str | None:
    with db.connect(dsn, autocommit=True) as conn:
        return Client(conn).schema_version() if Catalog(conn).has_schema_version() else None


def _lines(report: dict) -> list[tuple[str, str]]:
    if report["embedded"]:
        if not report["initialized"]:
            state = "none in this folder (`flowforge migrate` creates one)"
        elif report["running"]:
            state = f"running (pid {report['pid']})"
        else:
            state = "stopped (the next command starts it)"
        lines = [("embedded PostgreSQL", state), ("data folder", report["data_dir"])]
        if report["running"]:
            lines.append(("database", report["database"]))
    else:
        lines = [("database", f"{report['database']} (from {report['source']})")]
    if "schema_version" in report:
        version = report["schema_version"]
        expected = report["expected_schema_version"]
        lines.append(("schema version", "not migrated: run `flowforge migrate`" if version is None else
                      version if version == expected else f"{version} (this code expects {expected})"))
    return lines


@click.command("stop")
@click.pass_obj
def stop(settings: Settings) -> None:
    """Stop this folder's embedded PostgreSQL (fast shutdown: open transactions are rolled back)."""
    server = embedded.status()
    stopped = embedded.stop()
    if settings.json:
        emit_json({"stopped": stopped, "pid": server.pid, "data_dir": str(server.data_dir)})
    elif stopped:
        click.echo(f"stopped the embedded PostgreSQL (pid {server.pid}) in {server.data_dir}")
    else:
        click.echo(f"no embedded PostgreSQL is running in {server.data_dir}")
