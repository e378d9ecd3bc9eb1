"""``flowforge queue configure NAME`` (push or pull) and ``flowforge queue list``."""

from __future__ import annotations

from datetime import timedelta

import click

from .. import render
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
@click.pass_obj
def configure(settings: Settings, name: str, exchange: str | None, routing_key: str | None,
              dispatch_lease: float) -> None:
    """Configure queue NAME as push (with --exchange) or pull (without)."""
    with client(settings) as api:
        api.configure_queue(name, exchange, routing_key, timedelta(seconds=dispatch_lease))
        # The routing key the database will publish with: without --routing-key it is
        # <database>.<organization>.<queue>, unique per database and organization.
        configured = next(q for q in api.list_queues() if q["name"] == name)
    mode = "push" if exchange else "pull"
    if settings.json:
        emit_json({"name": name, "mode": mode, "exchange": exchange, "routing_key": configured["routing_key"],
                   "amqp_queue": configured["amqp_queue"], "dispatch_lease": dispatch_lease})
    elif exchange:
        click.echo(f"queue {name}: push to exchange {exchange} with routing key {configured['routing_key']}")
    else:
        click.echo(f"queue {name}: pull (workers claim its tasks)")


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
