"""``flowforge trigger create | list | enable | disable | drop | fire | firings``: triggers and their firing log.

Each subcommand is one call of the SQL API (``create_trigger``,
``list_triggers``, ``set_trigger_enabled``, ``drop_trigger``, ``fire_trigger``,
``list_firings``); every rule — what a valid schedule, secret, path or target
is — is the database's, and its refusals come back as one line.
"""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path

import click

from .. import errors, render
from ..config import Settings
from ._common import cli_hint, client, emit_json, json_option, parse_json_object, wants_json, when

UNKNOWN_TRIGGER_HINT = "`flowforge trigger list` shows this organization's triggers"
EXIT_NOT_FIRED = 1  # `trigger fire` whose firing was refused or failed (it is recorded all the same)


@click.group("trigger")
def trigger() -> None:
    """Triggers: cron schedules, signed webhooks, watched directories and git branches (docs/triggers.md)."""


def _read_secret(secret: str | None, secret_file: str | None) -> str | None:
    if secret is not None and secret_file is not None:
        raise errors.InvalidArgument("give --secret or --secret-file, not both")
    if secret_file is None:
        return secret
    try:
        text = sys.stdin.read() if secret_file == "-" else Path(secret_file).read_text(encoding="utf-8")
    except OSError as exc:
        raise errors.InvalidArgument(f"cannot read --secret-file {secret_file}: {exc.strerror or exc}") from None
    return text.rstrip("\r\n")


@trigger.command("create")
@click.argument("name")
@click.option("--type", "trigger_type", required=True, metavar="TYPE",
              help="cron, webhook, gitpoll or filesystem.")
@click.option("--start", "start", metavar="WORKFLOW", help="Start a run of WORKFLOW (of any kind) on each firing.")
@click.option("--signal", "signal", metavar="EVENT",
              help="Send EVENT to a state-machine run on each firing (name the run with --run-id-path or --run-id).")
@click.option("--cron", metavar="EXPR", help='cron: five fields or a macro, e.g. "*/15 9-17 * * MON-FRI", "@daily".')
@click.option("--timezone", metavar="ZONE", help="cron: the IANA zone the schedule is read in (default UTC).")
@click.option("--catchup", metavar="POLICY", help="cron: after downtime, latest (default), all or none.")
@click.option("--max-catchup", type=int, metavar="N", help="cron with --catchup all: at most N missed slots.")
@click.option("--on-gap", metavar="RULE", help="cron: a slot in a skipped DST hour: shift (default) or skip.")
@click.option("--on-repeat", metavar="RULE", help="cron: a slot in a repeated DST hour: first (default), last, both.")
@click.option("--secret", metavar="TEXT", help="webhook: the key senders sign bodies with (16-1024 characters).")
@click.option("--secret-file", metavar="PATH", help="webhook: read the secret from PATH ('-': stdin) instead.")
@click.option("--path", "watch_path", metavar="DIR", help="filesystem: the absolute path of the watched directory.")
@click.option("--pattern", metavar="GLOB", help='filesystem: which file names fire (default "*").')
@click.option("--repo", metavar="DIR", help="gitpoll: the absolute path of a local git repository.")
@click.option("--branch", metavar="NAME", help="gitpoll: the branch to follow (default main).")
@click.option("--input", "input_json", metavar="JSON", help="A JSON object merged into every run's input.")
@click.option("--run-id-path", metavar="JSONPATH", help='signal: where the run id is in the payload, e.g. "$.order".')
@click.option("--run-id", metavar="UUID", help="signal: always this run.")
@click.option("--event-id-path", metavar="JSONPATH", help="signal: where the event id is in the payload.")
@click.option("--options", "options_json", metavar="JSON",
              help="Any options as one JSON object (the flags above override its keys).")
@json_option
@click.pass_obj
def create(settings: Settings, name: str, trigger_type: str, start: str | None, signal: str | None,
           cron: str | None, timezone: str | None, catchup: str | None, max_catchup: int | None,
           on_gap: str | None, on_repeat: str | None, secret: str | None, secret_file: str | None,
           watch_path: str | None, pattern: str | None, repo: str | None, branch: str | None,
           input_json: str | None, run_id_path: str | None, run_id: str | None, event_id_path: str | None,
           options_json: str | None, json_flag: bool) -> None:
    """Create trigger NAME: --type and one of --start WORKFLOW / --signal EVENT, and the options of its type.

    \b
    flowforge trigger create nightly --type cron --cron '0 2 * * *' --timezone Europe/Berlin --start report
    flowforge trigger create on-push --type webhook --secret-file secret.txt --start build
    flowforge trigger create inbox --type filesystem --path /srv/inbox --pattern '*.csv' --start import
    flowforge trigger create commits --type gitpoll --repo /srv/git/app.git --branch main --start build
    """
    if (start is None) == (signal is None):
        raise errors.InvalidArgument("give exactly one of --start WORKFLOW or --signal EVENT")
    options = parse_json_object(options_json, "--options") if options_json is not None else {}
    if not isinstance(options, dict):
        raise errors.InvalidArgument("--options must be a JSON object")
    flags = {"cron": cron, "timezone": timezone, "catchup": catchup, "max_catchup": max_catchup,
             "on_gap": on_gap, "on_repeat": on_repeat, "secret": _read_secret(secret, secret_file),
             "path": watch_path, "pattern": pattern, "repo": repo, "branch": branch,
             "run_id_path": run_id_path, "run_id": run_id, "event_id_path": event_id_path}
    if input_json is not None:
        flags["input"] = parse_json_object(input_json, "--input")
    options.update({k: v for k, v in flags.items() if v is not None})
    action, target = ("start", start) if start is not None else ("signal", signal)
    with client(settings) as api:
        with cli_hint(errors.NotFound, "`flowforge workflow list` shows the defined workflows"):
            trigger_id = api.create_trigger(name, trigger_type, action, target, options)
        row = next((r for r in api.list_triggers() if r["id"] == trigger_id), None)
    if wants_json(settings, json_flag):
        emit_json(row or {"id": trigger_id, "name": name})
        return
    what = f"starts {target}" if action == "start" else f"sends {target}"
    line = f"trigger {name} created ({trigger_type}, {what})"
    if row is not None and row["next_fire_at"] is not None:
        line += f"; next firing {when(row['next_fire_at'])}"
    click.echo(line)


def _source(row: dict) -> str:
    """What the trigger watches, in one cell."""
    options = row["options"] or {}
    kind = row["trigger_type"]
    if kind == "cron":
        return f"{options.get('cron')} ({options.get('timezone', 'UTC')}, catchup {options.get('catchup')})"
    if kind == "filesystem":
        return f"{options.get('path')}/{options.get('pattern', '*')}"
    if kind == "gitpoll":
        return f"{options.get('repo')} {options.get('branch', 'main')}"
    return "POST /hooks/<organization>/" + row["name"]


@trigger.command("list")
@json_option
@click.pass_obj
def list_(settings: Settings, json_flag: bool) -> None:
    """This organization's triggers by name: type, action, what they watch, the next and last firing."""
    with client(settings) as api:
        # By name, as the help says (list_triggers itself is newest first since 0031).
        rows = sorted(api.list_triggers(), key=lambda r: r["name"])
    if wants_json(settings, json_flag):
        emit_json(rows)
        return
    if not rows:
        click.echo("no triggers yet: `flowforge trigger create NAME --type cron --cron '@daily' --start WORKFLOW`")
        return
    click.echo(render.table(
        [(r["name"], r["trigger_type"], f"{r['action']} {r['target']}", "yes" if r["enabled"] else "no",
          when(r["next_fire_at"]) or "-", when(r["last_fired_at"]) or "-", _source(r)) for r in rows],
        headers=("NAME", "TYPE", "ACTION", "ENABLED", "NEXT", "LAST FIRED", "SOURCE")))


def _set_enabled(settings: Settings, name: str, enabled: bool) -> None:
    with client(settings) as api:
        with cli_hint(errors.NotFound, UNKNOWN_TRIGGER_HINT):
            api.set_trigger_enabled(name, enabled)
        row = next((r for r in api.list_triggers() if r["name"] == name), None)
    if settings.json:
        emit_json({"name": name, "enabled": enabled, "next_fire_at": row and row["next_fire_at"]})
    elif enabled:
        nxt = row and row["next_fire_at"]
        click.echo(f"trigger {name} enabled" + (f"; next firing {when(nxt)}" if nxt else ""))
    else:
        click.echo(f"trigger {name} disabled: its firings are refused (and recorded) until it is enabled")


@trigger.command("enable")
@click.argument("name")
@click.pass_obj
def enable(settings: Settings, name: str) -> None:
    """Resume trigger NAME (a cron trigger starts from its next slot after now: missed ones are not caught up)."""
    _set_enabled(settings, name, True)


@trigger.command("disable")
@click.argument("name")
@click.pass_obj
def disable(settings: Settings, name: str) -> None:
    """Pause trigger NAME: its firings are refused and recorded."""
    _set_enabled(settings, name, False)


@trigger.command("drop")
@click.argument("name")
@click.pass_obj
def drop(settings: Settings, name: str) -> None:
    """Drop trigger NAME: it never fires again, its name is free, its firings and runs stay readable."""
    with client(settings) as api:
        with cli_hint(errors.NotFound, UNKNOWN_TRIGGER_HINT):
            api.drop_trigger(name)
    if settings.json:
        emit_json({"name": name, "dropped": True})
    else:
        click.echo(f"trigger {name} dropped (its firings stay in `flowforge trigger firings {name}`)")


def _parse_time(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise errors.InvalidArgument(f"--fired-on must be an ISO 8601 time such as 2024-05-01T12:00:00+02:00, "
                                     f"got {text!r}") from None
    if value.tzinfo is None:
        value = value.astimezone()  # local time, as `when` prints it
    return value


@trigger.command("fire")
@click.argument("name")
@click.option("--payload", "payload_json", metavar="JSON", help="What arrived (default {}); '-' reads stdin.")
@click.option("--delivery-id", metavar="ID", help="The sender's id: the same id again returns the first firing.")
@click.option("--fired-on", metavar="TIME", help="The source's time (ISO 8601; default now).")
@json_option
@click.pass_obj
@click.pass_context
def fire(ctx: click.Context, settings: Settings, name: str, payload_json: str | None, delivery_id: str | None,
         fired_on: str | None, json_flag: bool) -> None:
    """Fire trigger NAME by hand, as its source would: one firing recorded, whatever its outcome.

    Exits 0 when the firing started or signalled a run, 1 when it was refused
    or failed (the firing is recorded all the same; its error says why).
    """
    if payload_json == "-":
        payload_json = sys.stdin.read()
    payload = parse_json_object(payload_json, "--payload") if payload_json is not None else {}
    at = _parse_time(fired_on)
    with client(settings) as api:
        firing = api.fire_trigger(name, payload, fired_on=at, delivery_id=delivery_id)
    outcome = firing.get("outcome")
    if wants_json(settings, json_flag):
        emit_json(firing)
    else:
        dup = " (a delivery already recorded: nothing new happened)" if firing.get("duplicate") else ""
        if outcome in ("started", "signalled"):
            verb = "started run" if outcome == "started" else "signalled run"
            click.echo(f"firing {firing['firing_id']}: {verb} {firing['run_id']}{dup}")
        else:
            click.echo(f"firing {firing['firing_id']}: {outcome}: {firing.get('error')}{dup}")
    if outcome not in ("started", "signalled"):
        ctx.exit(EXIT_NOT_FIRED)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + render.ELLIPSIS


@trigger.command("firings")
@click.argument("name", required=False)
@click.option("--outcome", metavar="OUTCOME", help="Only started, signalled, refused or failed firings.")
@click.option("--limit", "max_rows", type=int, default=50, show_default=True, metavar="N",
              help="At most N firings (1-10000).")
@json_option
@click.pass_obj
def firings(settings: Settings, name: str | None, outcome: str | None, max_rows: int, json_flag: bool) -> None:
    """The firing log, newest first (of trigger NAME, dropped ones included): what arrived and what became of it.

    Payloads are shown (with --json) to admins of the organization only.
    """
    with client(settings) as api:
        rows = api.list_firings(name, outcome, max_rows)
    if wants_json(settings, json_flag):
        emit_json(rows)
        return
    if not rows:
        click.echo("no firings" + (f" of {name}" if name else "") + (f" with outcome {outcome}" if outcome else ""))
        return
    click.echo(render.table(
        [(when(r["fired_on"]), r["name"] or "-", r["trigger_type"] or "-", r["result"],
          str(r["run_id"]) if r["run_id"] else "-", _cut(r["delivery_id"], 40) if r["delivery_id"] else "-",
          r["error"] or "") for r in rows],
        headers=("FIRED ON", "TRIGGER", "TYPE", "RESULT", "RUN", "DELIVERY", "ERROR"), state_column=3))
