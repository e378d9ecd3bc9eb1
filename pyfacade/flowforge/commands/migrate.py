"""``flowforge migrate [--rollback]``: bring the schema to this code's version (or remove it)."""

from __future__ import annotations

import click

from .. import db, migrate as migrations, render
from ..config import Settings


@click.command("migrate")
@click.option("--rollback", is_flag=True,
              help="Roll back every applied migration: drops schema flowforge and all its data.")
@click.pass_obj
def migrate(settings: Settings, rollback: bool) -> None:
    """Apply pending migrations and refresh every SQL function.

    Safe to run any time: with nothing pending it only re-applies the
    function definitions, so the database always has this code's functions.
    """
    dsn = db.resolve_dsn(settings)
    if rollback:
        result = migrations.rollback(dsn)
        if settings.json:
            click.echo(render.as_json({"rolled_back": result.rolled_back}))
        elif result.rolled_back:
            click.echo(f"rolled back {len(result.rolled_back)} migration(s): {', '.join(result.rolled_back)}")
        else:
            click.echo("nothing to roll back")
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
