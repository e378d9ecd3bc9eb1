"""``flowforge doctor``: one line per health check; non-zero exit if any is a problem."""

from __future__ import annotations

import click

from .. import doctor as checks, render
from ..config import Settings
from ..doctor import sessions


@click.command("doctor")
@click.option("--dev", is_flag=True, help="Also check the test tooling (pgTAP, plpgsql_check) a contributor needs.")
@click.option("--snapshot-age", type=click.FloatRange(0), default=sessions.DEFAULT_SNAPSHOT_AGE, show_default=True,
              metavar="SECONDS", help="Report transactions (and the snapshots they hold) open longer than this.")
@click.option("--min-free-connections", type=click.IntRange(0), metavar="N",
              help="Warn below N free connection slots. Default: 10% of the usable slots, at least 5.")
@click.pass_obj
@click.pass_context
def doctor(ctx: click.Context, settings: Settings, dev: bool, snapshot_age: float,
           min_free_connections: int | None) -> None:
    """Check the database, schema, connections, logins, old transactions and broker.

    Exits 1 when any check is a problem; warnings say what an operator
    should change but do not fail.
    """
    results = checks.run_checks(settings, dev=dev, snapshot_age=snapshot_age,
                                min_free_connections=min_free_connections)
    failed = checks.has_problem(results)
    if settings.json:
        click.echo(render.as_json({"ok": not failed, "checks": [c.as_dict() for c in results]}))
    else:
        click.echo(render.table([(c.name, c.status, c.detail) for c in results], state_column=1))
    if failed:
        ctx.exit(1)
