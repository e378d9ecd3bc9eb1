"""``flowforge demo``: run the example workflow in-process and show it happen."""

from __future__ import annotations

import click

from .. import db, demo as example, render
from ..config import Settings
from ._common import emit_json


@click.command("demo")
@click.option("--runs", default=5, show_default=True, type=click.IntRange(1, 100),
              help="How many nightly-report (DAG) runs to start.")
@click.option("--concurrency", default=4, show_default=True, type=click.IntRange(1, 64),
              help="Units of work the in-process worker runs at once.")
@click.option("--timeout", default=60.0, show_default=True, type=click.FloatRange(1, 3600),
              help="Give up after this many seconds.")
@click.pass_obj
@click.pass_context
def demo(ctx: click.Context, settings: Settings, runs: int, concurrency: int, timeout: float) -> None:
    """Run the example workflows end to end, in this process: a DAG, a graph, a state machine, a map.

    Migrates the database (the embedded one when no DSN is configured),
    defines a fan-out/fan-in DAG with one task that fails once and is
    retried, a graph that cycles (a draft sent back twice before it is
    approved), an order state machine (paid by an event, its ship action
    failing once and retried, delivered) and a DAG that maps over 24 photos;
    starts RUNS runs of the DAG and one of each other, works them all with
    one in-process worker while calling tick() like the daemon, and prints a
    summary.  Exits 0 only when every run succeeded.
    """
    colour = render.use_colour()
    if settings.embedded and not settings.json:
        click.echo("starting the embedded PostgreSQL in ./.flowforge/pgdata (no FLOWFORGE_DSN set)...")
    dsn = db.resolve_dsn(settings, create_embedded=True)  # `make demo` from a fresh clone
    if not settings.json:
        click.echo(f"database: {db.mask_dsn(dsn)}")
        click.echo(f"workflow {example.WORKFLOW}:")
        click.echo(render.dag(example.SPEC["tasks"], colour=colour))
        click.echo(f"\ngraph {example.GRAPH}:")
        click.echo(render.graph(example.GRAPH_SPEC["nodes"], example.GRAPH_SPEC["edges"],
                                example.GRAPH_SPEC["start"], colour=colour))
        click.echo(f"\nstate machine {example.MACHINE}:")
        click.echo(render.machine(example.MACHINE_SPEC["states"], example.MACHINE_SPEC["initial"], colour=colour))
        click.echo(f"\nmap {example.MAP}: list_photos → resize × {example.PHOTOS} (4 at once) → publish_album")
        click.echo(f"\nstarting {runs} run(s) of {example.WORKFLOW} and one of each other; "
                   f"worker concurrency {concurrency}\n")
    live = render.Live()

    def show(progress: example.Progress) -> None:
        if settings.json:
            return
        if live.tty:
            lines = [f"  {r['id'].hex[:8]}  {render.bar(r['tasks_done'], r['tasks_total'])}  "
                     f"{r['tasks_done']}/{r['tasks_total']}  {render.state(r['state'], colour=colour):<9}"
                     + (f"  ({r['retries']} retr{'y' if r['retries'] == 1 else 'ies'})" if r["retries"] else "")
                     for r in progress.runs]
            lines += _others_lines(progress, colour)
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
                        f"runs {progress.finished}/{len(progress.runs)} finished; {_others_brief(progress)}")

    result = example.run(dsn, runs=runs, concurrency=concurrency, timeout=timeout, on_progress=show)
    if settings.json:
        emit_json({"ok": result.ok, "runs_total": len(result.run_ids), "runs_succeeded": result.succeeded,
                   "tasks": result.tasks, "retries": result.retries, "seconds": round(result.seconds, 3),
                   "timed_out": result.timed_out, "run_ids": [str(r) for r in result.run_ids],
                   "query": result.inspect_query(),
                   "graph": _jsonable(result.graph), "machine": _jsonable(result.machine),
                   "map": _jsonable(result.map)})
    else:
        verdict = render.state("succeeded" if result.ok else "failed", colour=colour)
        click.echo("")
        click.echo(f"demo {verdict}: {result.succeeded}/{len(result.run_ids)} runs succeeded, "
                   f"{result.tasks} tasks, {result.retries} retr{'y' if result.retries == 1 else 'ies'} "
                   f"({example.WORKFLOW}); {_graph_summary(result.graph)}; {_machine_summary(result.machine)}; "
                   f"{_map_summary(result.map)}; {render.duration(result.seconds)} wall time"
                   + (f" (timed out after {timeout:g}s)" if result.timed_out else ""))
        if result.graph.get("path"):
            click.echo(f"{example.GRAPH} path: {render.walk(result.graph['path'])}")
        if result.machine.get("states"):
            click.echo(f"{example.MACHINE} states: {' → '.join(result.machine['states'])}")
        click.echo("look at a run's history yourself:")
        click.echo(f"  {result.psql_command()}")
        click.echo("or: flowforge run list / flowforge run show <id> / flowforge run events <id>")
        if settings.embedded:
            click.echo("or in your browser: run `flowforge serve --port 8080` here, "
                       "then open http://127.0.0.1:8080")
        else:
            click.echo("or in your browser: `flowforge serve --dsn <a flowforge_gateway login> --port 8080`, "
                       "then open http://127.0.0.1:8080 and sign in with an API key")
    if not result.ok:
        ctx.exit(1)


def _others_lines(progress: example.Progress, colour: bool) -> list[str]:
    lines = []
    g, m, f = progress.graph, progress.machine, progress.map
    if g:
        lines.append(f"  graph    {example.GRAPH}: step {g['steps']} at {g['position']}  "
                     f"{render.state(g['state'], colour=colour)}")
    if m:
        lines.append(f"  machine  {example.MACHINE}: in {m['machine_state']}"
                     f"{' (suspended)' if m['suspended'] else ''}  {render.state(m['state'], colour=colour)}")
    if f:
        lines.append(f"  map      {example.MAP}: resize {render.bar(f['idx'], f['total'] or example.PHOTOS)}  "
                     f"{f['idx']}/{f['total'] or example.PHOTOS}  {render.state(f['state'], colour=colour)}")
    return lines


def _others_brief(progress: example.Progress) -> str:
    g, m, f = progress.graph, progress.machine, progress.map
    return (f"graph at {g.get('position')} (step {g.get('steps')}), machine in {m.get('machine_state')}, "
            f"map {f.get('idx', 0)}/{f.get('total') or example.PHOTOS}")


def _graph_summary(graph: dict) -> str:
    if not graph:
        return f"graph {example.GRAPH} not started"
    sent_back = graph.get("path", []).count("review") - 1
    return (f"graph {example.GRAPH} {graph['state']} in {graph['steps']} steps"
            + (f" (sent back {_times(sent_back)})" if sent_back > 0 else ""))


def _machine_summary(machine: dict) -> str:
    if not machine:
        return f"machine {example.MACHINE} not started"
    retries = machine.get("retries", 0)
    return (f"machine {example.MACHINE} {machine['state']} in {machine['machine_state']}"
            + (f" (ship retried {_times(retries)})" if retries else ""))


def _map_summary(fan: dict) -> str:
    if not fan:
        return f"map {example.MAP} not started"
    return (f"map {example.MAP} {fan['state']}: {fan['idx'] - fan['failed']}/{fan['total']} photos resized"
            + (f", {fan['failed']} failed" if fan["failed"] else ""))


def _times(n: int) -> str:
    return {1: "once", 2: "twice"}.get(n, f"{n} times")


def _jsonable(part: dict) -> dict:
    return {k: (str(v) if k == "id" else v) for k, v in part.items()}
