"""``flowforge purge --older-than DURATION``: retention, a dry run unless ``--apply``.

The work is ``flowforge.purge`` (SQL): this command calls it batch after batch,
each call its own transaction, and draws the report.
"""

from __future__ import annotations

from typing import Any

import click

from ..config import Settings
from ._common import client, emit_json


def _add(total: dict[str, int], part: dict[str, int]) -> None:
    for key, n in part.items():
        total[key] = total.get(key, 0) + n


def _counts(counts: dict[str, int]) -> str:
    shown = [f"{key} {n:,}" for key, n in sorted(counts.items()) if n]
    return ", ".join(shown) if shown else "none"


@click.command("purge")
@click.option("--older-than", "older_than", required=True, metavar="DURATION",
              help="Remove the runs that ended longer ago than this (a PostgreSQL interval: '90 days', '6 months').")
@click.option("--apply", "apply", is_flag=True,
              help="Remove them. Without it nothing is removed and the report says what would be.")
@click.option("--batch-size", default=1000, show_default=True, type=int,  # the range is the database's rule (FF003)
              help="Runs (and firings, audit rows) per call; each call is one transaction.")
@click.option("--once", is_flag=True, help="With --apply: one batch, even if more remain.")
@click.pass_obj
def purge(settings: Settings, older_than: str, apply: bool, batch_size: int, once: bool) -> None:
    """Retention: the runs of every engine that ended more than --older-than ago, with what hangs off them.

    Live work is never touched. The operator purges every organization, an organization's owner its own.
    """
    reports: list[dict[str, Any]] = []
    with client(settings) as api:
        while True:
            report = api.purge(older_than, dry_run=not apply, batch_size=batch_size)
            reports.append(report)
            # A dry run is one batch by construction; a live batch that removed nothing
            # (what is left is busy: being retried or written to) would loop forever.
            if not apply or once or not report["more"] or not any(report["removed"].values()):
                break
    runs: dict[str, int] = {}
    removed: dict[str, int] = {}
    for report in reports:
        _add(runs, report["runs"])
        _add(removed, report["removed"])
    partitions = [p for report in reports for p in report["partitions"]]
    last = reports[-1]
    if settings.json:
        emit_json({"dry_run": not apply, "batches": len(reports), "runs_ended_before": last["runs_ended_before"],
                   "runs": runs, "removed": removed, "partitions": partitions, "more": last["more"]})
        return
    head = "dry run, nothing removed" if not apply else f"purged in {len(reports)} batch(es)"
    click.echo(f"{head}: runs that ended before {last['runs_ended_before']}")
    click.echo(f"  runs: {_counts(runs)}")
    click.echo(f"  rows: {_counts(removed)}")
    for p in partitions:
        state = "emptied" if p.get("emptied") else ("busy" if p.get("busy") else "to empty")
        click.echo(f"  month {p['partition']} of {p['table']}: {p.get('rows') or 0:,} rows, {state}")
    if last["more"]:
        click.echo("  more remain: " + ("run with --apply to remove them batch by batch" if not apply
                                        else "run again (the rest was busy, or --once)"))
