"""``flowforge run start | list | show | watch | events | cancel | retry``."""

from __future__ import annotations

import contextlib
import sys
import time
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path

import click

from .. import errors, render
from ..client import Client
from ..config import Settings
from ._common import cli_hint, client, emit_json, json_option, parse_json_object, wants_json, when
from .workflow import UNKNOWN_WORKFLOW_HINT

RUN_STATES = ("pending", "running", "succeeded", "failed", "cancelled")
UNFINISHED_FOR_GOOD = ("failed", "skipped", "cancelled")  # task states a summary must not call "done" silently


@click.group("run")
def run() -> None:
    """Workflow runs. RUN_ID may be a unique prefix of the id (at least 4 hex digits)."""


def read_input(text: str) -> str:
    """``--input``: JSON text, ``@FILE`` for a file's content, ``-`` for stdin (large inputs)."""
    if text == "-":
        return sys.stdin.read()
    if text.startswith("@"):  # never valid JSON text, so it cannot be meant literally
        try:
            return Path(text[1:]).read_text(encoding="utf-8")
        except OSError as exc:
            raise errors.InvalidArgument(f"cannot read --input {text}: {exc.strerror or exc}") from None
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
        [(r["id"], f"{r['workflow']} v{r['version']}", r["state"], f"{r['tasks_done']}/{r['tasks_total']}",
          when(r["created_at"]), _elapsed(r["created_at"], r["finished_at"])) for r in rows],
        headers=("ID", "WORKFLOW", "STATE", "TASKS", "CREATED", "TOOK"), state_column=2))


def _elapsed(start: datetime | None, end: datetime | None) -> str:
    if start is None:
        return ""
    return render.duration(((end or datetime.now(timezone.utc)) - start).total_seconds())


def _in_dag_order(run: dict) -> dict:
    """get_run's object with its tasks listed level by level, as every view of a run shows them."""
    return {**run, "tasks": render.dag_order(run["tasks"])}


def _run_json(run: dict) -> dict:
    return run  # get_run's object; tasks in DAG order


def _tally(run: dict) -> str:
    """How the finished tasks ended — "2 succeeded, 1 failed, 1 skipped" — or "" when every one succeeded."""
    counts = Counter(t["state"] for t in run["tasks"])
    if not any(counts[s] for s in UNFINISHED_FOR_GOOD):
        return ""
    return ", ".join(f"{counts[s]} {s}" for s in ("succeeded", *UNFINISHED_FOR_GOOD) if counts[s] or s == "succeeded")


def _took(task: dict, timeout: timedelta | None) -> str:
    """How long the task's attempt ran; a timed-out attempt ran until its timeout, not until the reaper came."""
    if task["started_at"] is None:
        return ""
    end = task["finished_at"] or datetime.now(timezone.utc)
    if timeout is not None:
        end = min(end, task["started_at"] + timeout)
    return render.duration((end - task["started_at"]).total_seconds())


def _run_text(run: dict, timeouts: dict[str, timedelta | None], colour: bool | None = None) -> str:
    tally = _tally(run)
    head = (f"run {run['id']}  {run['workflow']} v{run['version']}  "
            f"{render.state(run['state'], colour=colour)}  {run['tasks_done']}/{run['tasks_total']} tasks done"
            f"{': ' + tally if tally else ''}  "
            f"{_elapsed(run['started_at'] or run['created_at'], run['finished_at'])}")
    lines = [head]
    if run.get("reason"):
        lines.append(f"reason: {run['reason']}")
    lines.append("")
    lines.append(render.table(
        # WORKER: who holds the task, or who held it last (get_run keeps lease_owner once finished).
        [(t["key"], t["state"], f"{t['attempt']}/{t['max_attempts']}", _took(t, timeouts.get(t["key"])),
          t["lease_owner"] or "",
          (t["error"] or "")[:80] if t["state"] != "succeeded" else "") for t in run["tasks"]],
        headers=("TASK", "STATE", "ATTEMPT", "TOOK", "WORKER", "ERROR"), state_column=1, colour=colour))
    return "\n".join(lines)


def _load(api: Client, text: str) -> tuple[dict, dict[str, timedelta | None]]:
    """The run (tasks in DAG order) and its tasks' timeouts."""
    found = _in_dag_order(api.get_run(_resolve(api, text)))
    return found, api.task_timeouts(found["workflow"], found["version"])


@run.command("show")
@click.argument("run_id")
@json_option
@click.pass_obj
def show(settings: Settings, run_id: str, json_flag: bool) -> None:
    """A run and each of its tasks."""
    with client(settings) as api:
        found, timeouts = _load(api, run_id)
    if wants_json(settings, json_flag):
        emit_json(_run_json(found))
    else:
        click.echo(_run_text(found, timeouts))


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
    """Live progress of each task until the run ends.

    Exits 0 when the run succeeded, 1 when it failed or was cancelled, 3 when
    --timeout passed first.  With --json, prints the final run as JSON.
    """
    as_json = wants_json(settings, json_flag)
    live = render.Live()
    started = time.monotonic()
    with client(settings) as api:
        found, timeouts = _load(api, run_id)
        while True:
            finished = found["state"] in render.FINISHED_RUN_STATES
            if not as_json:
                if live.tty:
                    states = {t["key"]: t["state"] for t in found["tasks"]}
                    live.update(_run_text(found, timeouts) + "\n\n" + render.dag(found["tasks"], states=states))
                else:
                    # Piped: one line per change, not a redraw.
                    live.update(f"{found['state']}: " + ", ".join(
                        f"{t['key']}={t['state']}" + (f"#{t['attempt']}" if t["attempt"] > 1 else "")
                        for t in found["tasks"]))
            if finished:
                break
            if timeout is not None and time.monotonic() - started > timeout:
                if as_json:
                    emit_json(_run_json(found))  # the state it was in when watching stopped
                else:
                    click.echo(f"still {found['state']} after {timeout:g}s; stopped watching", err=True)
                ctx.exit(3)
            time.sleep(interval)
            found = _in_dag_order(api.get_run(found["id"]))
    if as_json:
        emit_json(_run_json(found))
    else:
        if not live.tty:
            click.echo("")
            click.echo(_run_text(found, timeouts))
        retries = sum(t["attempt"] - 1 for t in found["tasks"])
        tally = _tally(found)
        click.echo(f"\nrun {found['state']}: {found['tasks_done']}/{found['tasks_total']} tasks"
                   f"{' (' + tally + ')' if tally else ''}, {retries} retr{'y' if retries == 1 else 'ies'}, "
                   f"{_elapsed(found['started_at'] or found['created_at'], found['finished_at'])}")
    if found["state"] != "succeeded":
        ctx.exit(1)


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
