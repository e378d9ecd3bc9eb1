"""``flowforge demo``: run the example workflow in-process and show it happen."""

from __future__ import annotations

import click

from .. import db, demo as example, render
from ..config import Settings
from ._common import emit_json


@click.command("demo")
@click.option("--runs", default=5, show_default=True, type=click.IntRange(1, 100), help="How many runs to start.")
@click.option("--concurrency", default=4, show_default=True, type=click.IntRange(1, 64),
              help="Tasks the in-process worker runs at once.")
@click.option("--timeout", default=60.0, show_default=True, type=click.FloatRange(1, 3600),
              help="Give up after this many seconds.")
@click.pass_obj
@click.pass_context
def demo(ctx: click.Context, settings: Settings, runs: int, concurrency: int, timeout: float) -> None:
    """Run the example 'nightly-report' workflow end to end, in this process.

    Migrates the database (the embedded one when no DSN is configured),
    defines a fan-out/fan-in DAG with one task that fails once and is
    retried, starts RUNS runs, works them with an in-process worker while
    calling tick() like the daemon, and prints a summary.  Exits 0 only when
    every run succeeded.
    """
    colour = render.use_colour()
    if settings.embedded and not settings.json:
        click.echo("starting the embedded PostgreSQL in ./.flowforge/pgdata (no FLOWFORGE_DSN set)...")
    dsn = db.resolve_dsn(settings, create_embedded=True)  # `make demo` from a fresh clone
    if not settings.json:
        click.echo(f"database: {db.mask_dsn(dsn)}")
        click.echo(f"workflow {example.WORKFLOW}:")
        click.echo(render.dag(example.SPEC["tasks"], colour=colour))
        click.echo(f"\nstarting {runs} run(s); worker concurrency {concurrency}\n")
    live = render.Live()

    def show(progress: example.Progress) -> None:
        if settings.json:
            return
        if live.tty:
            lines = [f"  {r['id'].hex[:8]}  {render.bar(r['tasks_done'], r['tasks_total'])}  "
                     f"{r['tasks_done']}/{r['tasks_total']}  {render.state(r['state'], colour=colour):<9}"
                     + (f"  ({r['retries']} retr{'y' if r['retries'] == 1 else 'ies'})" if r["retries"] else "")
                     for r in progress.runs]
            lines.append(f"  {progress.finished}/{len(progress.runs)} runs finished  "
                         f"{render.duration(progress.elapsed)}")
            live.update("\n".join(lines))
        else:
            done = sum(r["tasks_done"] for r in progress.runs)
            total = sum(r["tasks_total"] for r in progress.runs)
            running = sum(r["tasks_running"] for r in progress.runs)
            retries = sum(r["retries"] for r in progress.runs)
            # No elapsed time in the line: it is printed only when the counts change.
            live.update(f"tasks {done}/{total} done, {running} running, {retries} retried; "
                        f"runs {progress.finished}/{len(progress.runs)} finished")

    result = example.run(dsn, runs=runs, concurrency=concurrency, timeout=timeout, on_progress=show)
    if settings.json:
        emit_json({"ok": result.ok, "runs_total": len(result.run_ids), "runs_succeeded": result.succeeded,
                   "tasks": result.tasks, "retries": result.retries, "seconds": round(result.seconds, 3),
                   "timed_out": result.timed_out, "run_ids": [str(r) for r in result.run_ids],
                   "query": result.inspect_query()})
    else:
        verdict = render.state("succeeded" if result.ok else "failed", colour=colour)
        click.echo("")
        click.echo(f"demo {verdict}: {result.succeeded}/{len(result.run_ids)} runs succeeded, "
                   f"{result.tasks} tasks, {result.retries} retr{'y' if result.retries == 1 else 'ies'}, "
                   f"{render.duration(result.seconds)} wall time"
                   + (f" (timed out after {timeout:g}s)" if result.timed_out else ""))
        click.echo("look at a run's history yourself:")
        click.echo(f"  {result.psql_command()}")
        click.echo("or: flowforge run list / flowforge run show <id> / flowforge run events <id>")
    if not result.ok:
        ctx.exit(1)
