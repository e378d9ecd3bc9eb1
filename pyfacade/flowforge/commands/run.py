"""``flowforge run start | list | show | watch | signal | events | cancel | retry``.

Runs of every engine (a DAG, a graph, a state machine) go through the same
commands; ``run_views`` draws each kind.
"""

from __future__ import annotations

import contextlib
import sys
import time
from pathlib import Path

import click

from .. import errors, render
from ..client import Client
from ..config import Settings
from . import run_views as views
from ._common import cli_hint, client, emit_json, json_option, parse_json_object, wants_json, when
from .workflow import UNKNOWN_WORKFLOW_HINT

RUN_STATES = ("pending", "running", "succeeded", "failed", "cancelled")


@click.group("run")
def run() -> None:
    """Workflow runs. RUN_ID may be a unique prefix of the id (at least 4 hex digits)."""


def read_input(text: str, option: str = "--input") -> str:
    """``--input`` (``--payload``): JSON text, ``@FILE`` for a file's content, ``-`` for stdin (large inputs)."""
    if text == "-":
        return sys.stdin.read()
    if text.startswith("@"):  # never valid JSON text, so it cannot be meant literally
        try:
            return Path(text[1:]).read_text(encoding="utf-8")
        except OSError as exc:
            raise errors.InvalidArgument(f"cannot read {option} {text}: {exc.strerror or exc}") from None
    return text


def _resolve(api: Client, text: str):
    with cli_hint(errors.InvalidArgument, "`flowforge run list` shows run ids"):
        return api.resolve_run_id(text)


@run.command("start")
@click.argument("workflow")
@click.option("--input", "input_text", default="{}", metavar="JSON|@FILE|-",
              help="The run's input, a JSON object: inline, @FILE to read it from a file, - from stdin.")
@click.option("--idempotency-key", metavar="KEY", help="Starting again with the same key returns the same run.")
@click.pass_obj
def start(settings: Settings, workflow: str, input_text: str, idempotency_key: str | None) -> None:
    """Start the latest version of WORKFLOW; prints the run id."""
    run_input = parse_json_object(read_input(input_text), "--input")
    with client(settings) as api, cli_hint(errors.NotFound, "define it first with `flowforge workflow apply FILE`"):
        run_id = api.start_run(workflow, run_input, idempotency_key)
    if settings.json:
        emit_json({"id": run_id, "workflow": workflow})
    else:
        click.echo(str(run_id))


@run.command("list")
@click.option("--workflow", help="Only runs of this workflow.")
@click.option("--state", type=click.Choice(RUN_STATES), help="Only runs in this state.")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(1, 10000))
@json_option
@click.pass_obj
def list_(settings: Settings, workflow: str | None, state: str | None, limit: int, json_flag: bool) -> None:
    """The newest runs first."""
    # FF001 from list_runs means the --workflow named none (the SQL says so since issue 11).
    unknown = (cli_hint(errors.NotFound, UNKNOWN_WORKFLOW_HINT, f"no such workflow {workflow!r}") if workflow
               else contextlib.nullcontext())
    with client(settings) as api, unknown:
        rows = api.list_runs(workflow=workflow, state=state, limit=limit)
    if wants_json(settings, json_flag):
        emit_json(rows)
        return
    if not rows:
        click.echo("no runs")
        return
    click.echo(render.table(
        [(r["id"], f"{r['workflow']} v{r['version']}", r["kind"], r["state"],
          f"{r['tasks_done']}/{r['tasks_total']}" if r["tasks_total"] is not None else "-",
          when(r["created_at"]), views.elapsed(r["created_at"], r["finished_at"])) for r in rows],
        headers=("ID", "WORKFLOW", "KIND", "STATE", "TASKS", "CREATED", "TOOK"), state_column=3))


def _load(api: Client, text: str) -> views.Shown:
    return views.load(api, _resolve(api, text))


@run.command("show")
@click.argument("run_id")
@json_option
@click.pass_obj
def show(settings: Settings, run_id: str, json_flag: bool) -> None:
    """A run of any kind: a DAG's tasks, a graph's position and path, a machine's state, context and history.

    A fanning node (map / foreach) shows its progress as a bar.
    """
    with client(settings) as api:
        shown = _load(api, run_id)
    if wants_json(settings, json_flag):
        emit_json(shown.run)
    else:
        click.echo(views.text(shown))


@run.command("watch")
@click.argument("run_id")
@click.option("--interval", default=0.5, show_default=True, type=click.FloatRange(0.1, 60),
              help="Seconds between redraws.")
@click.option("--timeout", type=click.FloatRange(0), help="Stop watching after this many seconds (exit 3).")
@json_option
@click.pass_obj
@click.pass_context
def watch(ctx: click.Context, settings: Settings, run_id: str, interval: float, timeout: float | None,
          json_flag: bool) -> None:
    """Live progress of a run (its tasks, its graph position, its machine state, its fan-outs) until it ends.

    Exits 0 when the run succeeded, 1 when it failed or was cancelled, 3 when
    --timeout passed first.  With --json, prints the final run as JSON.
    """
    as_json = wants_json(settings, json_flag)
    live = render.Live()
    started = time.monotonic()
    with client(settings) as api:
        shown = _load(api, run_id)
        while True:
            finished = shown.run["state"] in render.FINISHED_RUN_STATES
            if not as_json:
                if live.tty:
                    live.update(views.text(shown, drawing=True))
                else:
                    live.update(views.progress_line(shown))  # piped: one line per change, not a redraw
            if finished:
                break
            if timeout is not None and time.monotonic() - started > timeout:
                if as_json:
                    emit_json(shown.run)  # the state it was in when watching stopped
                else:
                    click.echo(f"still {shown.run['state']} after {timeout:g}s; stopped watching", err=True)
                ctx.exit(3)
            time.sleep(interval)
            shown = views.reload(api, shown)
    if as_json:
        emit_json(shown.run)
    else:
        if not live.tty:
            click.echo("")
            click.echo(views.text(shown))
        click.echo("\n" + views.summary(shown))
    if shown.run["state"] != "succeeded":
        ctx.exit(1)


@run.command("signal")
@click.argument("run_id")
@click.argument("event")
@click.option("--payload", "payload_text", default="{}", metavar="JSON|@FILE|-",
              help="The event's payload, a JSON object: inline, @FILE to read it from a file, - from stdin.")
@click.option("--event-id", metavar="ID",
              help="The event's own id (a webhook delivery id): sent again, it changes nothing.")
@click.pass_obj
def signal(settings: Settings, run_id: str, event: str, payload_text: str, event_id: str | None) -> None:
    """Send EVENT to a state-machine run (send_event) and say what it did.

    applied: the machine took the transition; queued: it is suspended (its
    action runs) and applies the event when it resumes; duplicate: an event
    with this --event-id was seen before, nothing changed.  An event the
    machine does not accept now is refused (exit 1) and nothing is written.
    """
    payload = parse_json_object(read_input(payload_text, "--payload"), "--payload")
    with client(settings) as api:
        rid = _resolve(api, run_id)
        try:
            outcome = api.send_event(rid, event, payload, event_id)
        except errors.EventRefused as exc:
            # Nothing was written; say where to look, by the run's own workflow.
            workflow = api.get_run(rid)["workflow"]
            exc.hint = (f"`flowforge run show {rid}` shows the state it rests in, "
                        f"`flowforge workflow show {workflow}` the events each state accepts")
            raise
    if settings.json:
        emit_json({"id": rid, "event": event, "event_id": event_id, **outcome})
        return
    state = outcome["state"]
    if outcome["outcome"] == "duplicate":
        click.echo(f"event {event} duplicate: event id {event_id} was seen before, nothing changed; "
                   f"run {rid} is in {state}")
    elif outcome["outcome"] == "queued":
        click.echo(f"event {event} queued: run {rid} is suspended in {state} (its action runs); "
                   f"the event applies when it resumes")
    else:
        how = ("suspended: its action runs" if outcome["suspended"] else
               "waiting for the next event" if outcome["live"] else "ended")
        click.echo(f"event {event} applied: run {rid} is now in {state} ({how})")


@run.command("events")
@click.argument("run_id")
@json_option
@click.pass_obj
def events(settings: Settings, run_id: str, json_flag: bool) -> None:
    """The run's history, oldest first."""
    with client(settings) as api:
        rows = api.run_events(_resolve(api, run_id))
    if wants_json(settings, json_flag):
        emit_json(rows)
        return
    click.echo(render.table(
        [(r["seq"], when(r["created_at"]), r["task_key"] or "(run)", r["kind"],
          f"{r['from_state'] or ''}→{r['to_state'] or ''}" if r["to_state"] or r["from_state"] else "",
          r["attempt"] or "", _detail(r["detail"])) for r in rows],
        headers=("SEQ", "AT", "TASK", "EVENT", "STATE", "ATTEMPT", "DETAIL")))


def _detail(detail: dict | None) -> str:
    """The event's detail as ``key=value``: absent (null) fields left out, an upstream task by its key."""
    shown = {k: v for k, v in (detail or {}).items() if v is not None}
    if "upstream_task" in shown:
        shown.pop("upstream_task_id", None)  # the key says which task; --json keeps the id
    text = ", ".join(f"{k}={v}" for k, v in shown.items())
    return text if len(text) <= 100 else text[:97] + "..."


@run.command("cancel")
@click.argument("run_id")
@click.option("--reason", help="Recorded with the run and its run_cancelled event.")
@click.pass_obj
def cancel(settings: Settings, run_id: str, reason: str | None) -> None:
    """Cancel a pending or running run; running tasks lose their lease."""
    with client(settings) as api:
        rid = _resolve(api, run_id)
        api.cancel_run(rid, reason)
    if settings.json:
        emit_json({"id": rid, "state": "cancelled"})
    else:
        click.echo(f"run {rid} cancelled")


@run.command("retry")
@click.argument("run_id")
@click.pass_obj
def retry(settings: Settings, run_id: str) -> None:
    """Run a failed or cancelled run again; succeeded tasks keep their output."""
    with client(settings) as api:
        rid = _resolve(api, run_id)
        api.retry_run(rid)
    if settings.json:
        emit_json({"id": rid, "state": "running"})
    else:
        click.echo(f"run {rid} retrying")
