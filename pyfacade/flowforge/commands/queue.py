"""``flowforge queue configure NAME`` (push or pull, flow control's limits), ``pause`` / ``resume`` and ``list``."""

from __future__ import annotations

from datetime import timedelta

import click

from .. import errors, render
from ..config import Settings
from ._common import client, emit_json, json_option, wants_json, when


@click.group("queue")
def queue() -> None:
    """Queue delivery settings."""


@queue.command("configure")
@click.argument("name")
@click.option("--exchange", help="RabbitMQ exchange: the queue becomes push. Omit to make it pull.")
@click.option("--routing-key", help="Routing key (default: the queue name). Needs --exchange.")
@click.option("--dispatch-lease", default=300.0, show_default=True, type=click.FloatRange(1, 86400),
              help="Seconds a consumer has to take a pushed task before it is dispatched again.")
@click.option("--max-running", type=int,  # the range is the database's rule (FF003)
              help="Flow control: at most this many of the queue's units running at once, across all workers.")
@click.option("--rate", metavar="LIMIT/PER",
              help="Flow control: a token bucket, e.g. 100/1min or 20/1s (LIMIT per PER, any PostgreSQL duration).")
@click.pass_obj
def configure(settings: Settings, name: str, exchange: str | None, routing_key: str | None,
              dispatch_lease: float, max_running: int | None, rate: str | None) -> None:
    """Configure queue NAME as push (with --exchange) or pull (without), with its limits (none when omitted)."""
    rate_spec = None
    if rate is not None:
        limit, sep, per = rate.partition("/")
        if not sep or not limit.strip().isdigit() or not per.strip():
            raise errors.InvalidArgument(f"--rate {rate!r} is not LIMIT/PER, such as 100/1min or 20/1s")
        rate_spec = {"limit": int(limit), "per": per.strip()}
    with client(settings) as api:
        api.configure_queue(name, exchange, routing_key, timedelta(seconds=dispatch_lease), max_running, rate_spec)
        # The routing key the database will publish with: without --routing-key it is
        # <database>.<organization>.<queue>, unique per database and organization.
        configured = next(q for q in api.list_queues() if q["name"] == name)
    mode = "push" if exchange else "pull"
    if settings.json:
        emit_json({"name": name, "mode": mode, "exchange": exchange, "routing_key": configured["routing_key"],
                   "amqp_queue": configured["amqp_queue"], "dispatch_lease": dispatch_lease,
                   "max_running": max_running, "rate": rate_spec})
        return
    limits = "".join([f", at most {max_running} running" if max_running else "",
                      f", at most {rate_spec['limit']} per {rate_spec['per']}" if rate_spec else ""])
    if exchange:
        click.echo(f"queue {name}: push to exchange {exchange} with routing key {configured['routing_key']}{limits}")
    else:
        click.echo(f"queue {name}: pull (workers claim its tasks){limits}")


@queue.command("pause")
@click.argument("name")
@click.pass_obj
def pause(settings: Settings, name: str) -> None:
    """Claims take nothing from queue NAME until it is resumed; what runs finishes."""
    with client(settings) as api:
        api.pause_queue(name)
    if settings.json:
        emit_json({"name": name, "paused": True})
    else:
        click.echo(f"queue {name}: paused (nothing is claimed from it until flowforge queue resume {name})")


@queue.command("resume")
@click.argument("name")
@click.pass_obj
def resume(settings: Settings, name: str) -> None:
    """Queue NAME is claimed from again."""
    with client(settings) as api:
        api.resume_queue(name)
    if settings.json:
        emit_json({"name": name, "paused": False})
    else:
        click.echo(f"queue {name}: resumed")


@queue.command("list")
@json_option
@click.pass_obj
def list_(settings: Settings, json_flag: bool) -> None:
    """Every queue that is configured or has ready or running tasks: delivery, routing, what waits."""
    with client(settings) as api:
        rows = api.list_queues()
    if wants_json(settings, json_flag):
        emit_json([{**r, "dispatch_lease": r["dispatch_lease"].total_seconds()} for r in rows])
        return
    if not rows:
        click.echo("no queues yet: tasks name their queue (default \"default\"); flowforge queue configure NAME")
        return
    click.echo(render.table(
        [(r["name"], r["delivery"], r["ready"], r["running"], when(r["oldest_ready_at"]),
          f"{r['exchange']} / {r['routing_key']}" if r["delivery"] == "push" else "")
         for r in rows],
        headers=("QUEUE", "DELIVERY", "READY", "RUNNING", "OLDEST READY", "EXCHANGE / ROUTING KEY")))
