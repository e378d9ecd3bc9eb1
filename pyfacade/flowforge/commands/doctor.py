"""``flowforge doctor``: one line per health check; non-zero exit if any is a problem."""

from __future__ import annotations

import click

from .. import doctor as checks, render
from ..config import Settings


@click.command("doctor")
@click.pass_obj
@click.pass_context
def doctor(ctx: click.Context, settings: Settings) -> None:
    """Check the database, schema version, test tooling and broker."""
    results = checks.run_checks(settings)
    failed = checks.has_problem(results)
    if settings.json:
        click.echo(render.as_json({"ok": not failed, "checks": [c.as_dict() for c in results]}))
    else:
        click.echo(render.table([(c.name, c.status, c.detail) for c in results], state_column=1))
    if failed:
        ctx.exit(1)
