"""``flowforge queue configure NAME``: make a queue push (RabbitMQ) or pull."""

from __future__ import annotations

from datetime import timedelta

import click

from ..config import Settings
from ._common import client, emit_json


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
    mode = "push" if exchange else "pull"
    if settings.json:
        emit_json({"name": name, "mode": mode, "exchange": exchange,
                   "routing_key": (routing_key or name) if exchange else None, "dispatch_lease": dispatch_lease})
    elif exchange:
        click.echo(f"queue {name}: push to exchange {exchange} with routing key {routing_key or name}")
    else:
        click.echo(f"queue {name}: pull (workers claim its tasks)")
