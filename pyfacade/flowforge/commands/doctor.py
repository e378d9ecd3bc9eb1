"""``flowforge doctor``: one line per health check; non-zero exit if any is a problem.

``--deep`` adds the DBA's answers from the inspection views (``flowforge.doctor.inspection``).
"""

from __future__ import annotations

import click

from .. import doctor as checks, render
from ..config import Settings
from ..doctor import inspection, sessions


@click.command("doctor")
@click.option("--dev", is_flag=True, help="Also check the test tooling (pgTAP, plpgsql_check) a contributor needs.")
@click.option("--snapshot-age", type=click.FloatRange(0), default=sessions.DEFAULT_SNAPSHOT_AGE, show_default=True,
              metavar="SECONDS", help="Report transactions (and the snapshots they hold) open longer than this.")
@click.option("--min-free-connections", type=click.IntRange(0), metavar="N",
              help="Warn below N free connection slots. Default: 10% of the usable slots, at least 5.")
@click.option("--deep", is_flag=True,
              help="Also answer the DBA's questions from the inspection views: why work is not ready, queue depth, "
                   "stuck runs, worker load, tenant usage, index usage. Needs the operator or flowforge_readonly.")
@click.option("--deep-rows", type=click.IntRange(1, 10000), default=inspection.DEFAULT_ROWS, show_default=True,
              metavar="N", help="With --deep: at most N rows per view.")
@click.pass_obj
@click.pass_context
def doctor(ctx: click.Context, settings: Settings, dev: bool, snapshot_age: float,
           min_free_connections: int | None, deep: bool, deep_rows: int) -> None:
    """Check the database, schema, connections, logins, old transactions and broker.

    Exits 1 when any check is a problem; warnings say what an operator
    should change but do not fail. With --deep, the inspection views'
    answers follow (they inform, they never fail the command).
    """
    results = checks.run_checks(settings, dev=dev, snapshot_age=snapshot_age,
                                min_free_connections=min_free_connections)
    failed = checks.has_problem(results)
    sections = inspection.run(settings, rows=deep_rows) if deep else []
    if settings.json:
        out: dict = {"ok": not failed, "checks": [c.as_dict() for c in results]}
        if deep:
            out["inspection"] = {s.key: s.as_dict() for s in sections}
        click.echo(render.as_json(out))
    else:
        click.echo(render.table([(c.name, c.status, c.detail) for c in results], state_column=1))
        for section in sections:
            click.echo("")
            click.echo(section.render())
    if failed:
        ctx.exit(1)
