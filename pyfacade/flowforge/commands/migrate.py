"""``flowforge migrate [--rollback [--to VERSION | --all [--yes]]]``: bring the schema to this code's version."""

from __future__ import annotations

import sys

import click

from .. import db, errors, migrate as migrations, render
from ..config import Settings
from ._common import cli_hint_by_sqlstate

STATEMENT_TIMED_OUT = "57014"  # query_canceled: here, statement_timeout


@click.command("migrate")
@click.option("--rollback", is_flag=True,
              help="Roll back instead: the newest applied migration only, unless --to or --all says more.")
@click.option("--to", "to_version", metavar="VERSION",
              help="With --rollback: roll back every migration newer than VERSION (e.g. 0012), keeping VERSION.")
@click.option("--all", "everything", is_flag=True,
              help="With --rollback: roll back every migration, dropping schema flowforge and ALL its data. "
                   "Asks for confirmation.")
@click.option("--yes", is_flag=True, help="With --all: do not ask (for scripts).")
@click.option("--lock-timeout", type=click.FloatRange(0.1, 600), default=migrations.DEFAULT_BOUNDS.lock_timeout,
              show_default=True, metavar="SECONDS",
              help="How long one statement may wait for a lock; then the step is tried again later, "
                   "so live traffic never queues behind the migration for longer.")
@click.option("--statement-timeout", type=click.FloatRange(0), default=migrations.DEFAULT_BOUNDS.statement_timeout,
              show_default=True, metavar="SECONDS", help="How long one statement may run (0: no limit).")
@click.option("--max-wait", type=click.FloatRange(0), default=migrations.DEFAULT_BOUNDS.max_wait,
              show_default=True, metavar="SECONDS",
              help="How long to keep trying steps that could not get their locks before failing.")
@click.pass_obj
def migrate(settings: Settings, rollback: bool, to_version: str | None, everything: bool, yes: bool,
            lock_timeout: float, statement_timeout: float, max_wait: float) -> None:
    """Apply pending migrations and refresh every SQL function.

    Safe to run any time: with nothing pending it only re-applies the
    function definitions, so the database always has this code's functions.
    A step that cannot get a lock within --lock-timeout is tried again with
    a growing pause (each retry says on stderr which session is in the way)
    until --max-wait, then migrate fails with that explanation.
    """
    if (to_version or everything or yes) and not rollback:
        raise click.UsageError("--to, --all and --yes go with --rollback")
    if to_version and everything:
        raise click.UsageError("--to and --all exclude each other")
    if yes and not everything:
        raise click.UsageError("--yes only confirms --all")
    # A fresh folder gets its embedded database here (and in `demo`); a rollback has nothing to undo there.
    dsn = db.resolve_dsn(settings, create_embedded=not rollback)
    bounds = migrations.Bounds(lock_timeout=lock_timeout, statement_timeout=statement_timeout, max_wait=max_wait)
    with cli_hint_by_sqlstate(STATEMENT_TIMED_OUT, "a statement ran longer than --statement-timeout; "
                                                   "raise it for a large table"):
        if rollback:
            _rollback(settings, dsn, to_version, everything, yes, bounds)
        else:
            _migrate(settings, dsn, bounds)


def _report(line: str) -> None:
    click.echo(f"flowforge: migrate: {line}", err=True)


def _migrate(settings: Settings, dsn: str, bounds: migrations.Bounds) -> None:
    result = migrations.migrate(dsn, bounds, report=_report)
    version = migrations.known_schema_version()
    if settings.json:
        click.echo(render.as_json({
            "applied": result.applied,
            "function_files": result.function_files,
            "schema_version": version,
        }))
        return
    if result.applied:
        click.echo(f"applied {len(result.applied)} migration(s): {', '.join(result.applied)}")
    else:
        click.echo("no pending migrations")
    click.echo(f"refreshed functions from {len(result.function_files)} file(s); schema version {version}")


def _rollback(settings: Settings, dsn: str, to_version: str | None, everything: bool, yes: bool,
              bounds: migrations.Bounds) -> None:
    if everything and not yes:
        _confirm_removing_everything(dsn)
    try:
        result = migrations.rollback(dsn, to=to_version, everything=everything, bounds=bounds, report=_report)
    except migrations.RemovesEverything as exc:
        exc.hint = "that removes everything: pass --all (and confirm) if you mean it"
        raise
    remaining = migrations.applied_migrations(dsn)
    version = remaining[-1] if remaining else None
    if settings.json:
        click.echo(render.as_json({"rolled_back": result.rolled_back, "schema_version": version}))
    elif result.rolled_back:
        click.echo(f"rolled back {len(result.rolled_back)} migration(s): {', '.join(result.rolled_back)}")
        click.echo(f"schema version now {version}" if version else "schema flowforge removed")
    else:
        click.echo("nothing to roll back")


def _confirm_removing_everything(dsn: str) -> None:
    """An interactive yes, or a refusal: removing every table and row is never a default."""
    if not sys.stdin.isatty():
        raise errors.InvalidArgument("refusing to roll back every migration without confirmation "
                                     "(stdin is not a terminal)", hint="pass --yes to confirm in a script")
    question = (f"Roll back every migration of {db.mask_dsn(dsn)}? "
                "This drops schema flowforge with every workflow, run and event")
    if not click.confirm(question, default=False, err=True):
        raise errors.InvalidArgument("not confirmed; nothing was rolled back")
