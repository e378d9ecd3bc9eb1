"""``flowforge agent list | drain NAME | activate NAME``: the registered workers (``list_agents``, ``set_agent_status``)."""

from __future__ import annotations

from datetime import datetime, timezone

import click

from .. import errors, render
from ..config import Settings
from ._common import cli_hint, client, emit_json, json_option, wants_json

UNKNOWN_AGENT_HINT = "`flowforge agent list` shows the registered agents"


@click.group("agent")
def agent() -> None:
    """Registered workers (agents): their status, load and what they hold."""


def _ago(at: datetime | None) -> str:
    if at is None:
        return "never"
    seconds = max(0.0, (datetime.now(timezone.utc) - at).total_seconds())
    return f"{render.duration(seconds)} ago"


def _percent(metrics: dict, key: str) -> str:
    value = (metrics or {}).get(key)
    return f"{value:.0f}%" if isinstance(value, (int, float)) else "-"


def _load(metrics: dict) -> str:
    value = (metrics or {}).get("load_1m")
    return f"{value:.2f}" if isinstance(value, (int, float)) else "-"


def _labels(labels: dict | None) -> str:
    return ", ".join(f"{k}={render.compact(v, 40) if not isinstance(v, str) else v}"
                     for k, v in sorted((labels or {}).items())) or "-"


@agent.command("list")
@json_option
@click.pass_obj
def list_(settings: Settings, json_flag: bool) -> None:
    """Every agent by name: its status as the claims see it, what it holds, its last heartbeat and metrics.

    STATUS is the database's call: inactive once the heartbeat is three
    intervals old, whatever the agent last said; drained for a draining agent
    that holds nothing any more (safe to stop).
    """
    with client(settings) as api:
        rows = api.list_agents()
    if wants_json(settings, json_flag):
        emit_json([{**r, "heartbeat_interval": r["heartbeat_interval"].total_seconds()
                    if r["heartbeat_interval"] is not None else None} for r in rows])
        return
    if not rows:
        click.echo("no agents yet: a worker registers with flowforge.Worker(agent=NAME) or "
                   "`flowforge worker MODULE:ATTR --agent NAME`")
        return
    click.echo(render.table(
        [(r["name"], r["status"], r["holding"], _percent(r["metrics"], "cpu_percent"),
          _percent(r["metrics"], "memory_percent"), _load(r["metrics"]), _ago(r["last_heartbeat_at"]),
          _ago(r["last_claim_at"]), r["version"] or "-", _labels(r["labels"])) for r in rows],
        headers=("NAME", "STATUS", "HOLDING", "CPU", "MEMORY", "LOAD", "HEARTBEAT", "LAST CLAIM", "VERSION",
                 "LABELS"), state_column=1))


def _set(settings: Settings, name: str, status: str) -> dict:
    """set_agent_status, then the agent as list_agents sees it now."""
    with client(settings) as api:
        with cli_hint(errors.NotFound, UNKNOWN_AGENT_HINT):
            api.set_agent_status(name, status)
        return next((r for r in api.list_agents() if r["name"] == name), {"name": name, "status": status,
                                                                           "holding": 0})


@agent.command("drain")
@click.argument("name")
@click.pass_obj
def drain(settings: Settings, name: str) -> None:
    """Give agent NAME nothing new from either queue; it finishes what it holds (then it is drained)."""
    now = _set(settings, name, "draining")
    if settings.json:
        emit_json({"name": name, "status": now["status"], "holding": now["holding"]})
    elif now["status"] == "drained":
        click.echo(f"agent {name} drained: it holds nothing and is given nothing new")
    elif now["status"] == "inactive":
        click.echo(f"agent {name} draining, and inactive already: its heartbeat stopped")
    else:
        click.echo(f"agent {name} draining: it finishes the {now['holding']} unit(s) it holds and is given "
                   f"nothing new (`flowforge agent list` shows it drained once it holds nothing)")


@agent.command("activate")
@click.argument("name")
@click.pass_obj
def activate(settings: Settings, name: str) -> None:
    """Make agent NAME active again: it is given work from both queues."""
    now = _set(settings, name, "active")
    if settings.json:
        emit_json({"name": name, "status": now["status"], "holding": now["holding"]})
    elif now["status"] == "inactive":
        click.echo(f"agent {name} marked active, but its last heartbeat was {_ago(now.get('last_heartbeat_at'))}: "
                   f"it counts as inactive until it heartbeats (or registers) again")
    else:
        click.echo(f"agent {name} active: it is given work again")
