"""``flowforge migrate [--rollback [--to VERSION | --all [--yes]]]``: bring the schema to this code's version."""

from __future__ import annotations

import sys

import click

from .. import db, errors, migrate as migrations, render
from ..config import Settings


@click.command("migrate")
@click.option("--rollback", is_flag=True,
              help="Roll back instead: the newest applied migration only, unless --to or --all says more.")
@click.option("--to", "to_version", metavar="VERSION",
              help="With --rollback: roll back every migration newer than VERSION (e.g. 0012), keeping VERSION.")
@click.option("--all", "everything", is_flag=True,
              help="With --rollback: roll back every migration, dropping schema flowforge and ALL its data. "
                   "Asks for confirmation.")
@click.option("--yes", is_flag=True, help="With --all: do not ask (for scripts).")
@click.pass_obj
def migrate(settings: Settings, rollback: bool, to_version: str | None, everything: bool, yes: bool) -> None:
    """Apply pending migrations and refresh every SQL function.

    Safe to run any time: with nothing pending it only re-applies the
    function definitions, so the database always has this code's functions.
    """
    if (to_version or everything or yes) and not rollback:
        raise click.UsageError("--to, --all and --yes go with --rollback")
    if to_version and everything:
        raise click.UsageError("--to and --all exclude each other")
    if yes and not everything:
        raise click.UsageError("--yes only confirms --all")
    # A fresh folder gets its embedded database here (and in `demo`); a rollback has nothing to undo there.
    dsn = db.resolve_dsn(settings, create_embedded=not rollback)
    if rollback:
        _rollback(settings, dsn, to_version, everything, yes)
        return

    result = migrations.migrate(dsn)
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


def _rollback(settings: Settings, dsn: str, to_version: str | None, everything: bool, yes: bool) -> None:
    if everything and not yes:
        _confirm_removing_everything(dsn)
    try:
        result = migrations.rollback(dsn, to=to_version, everything=everything)
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
