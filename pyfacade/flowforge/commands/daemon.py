"""``flowforge daemon``: publish push-queue tasks to RabbitMQ, run ``tick()`` on a timer, poll the feeders."""

from __future__ import annotations

import click

from .. import daemon as outbox_daemon, db, errors
from ..config import Settings

EXIT_SCHEMA = outbox_daemon.EXIT_SCHEMA


@click.command("daemon")
@click.option("--dsn", metavar="DSN",
              help="PostgreSQL DSN. Default: the global --dsn, else $FLOWFORGE_DSN, else the embedded server.")
@click.option("--amqp-url", metavar="URL",
              help="RabbitMQ URL, e.g. amqp://guest:guest@127.0.0.1:5672/%2F. Default: $FLOWFORGE_AMQP_URL; "
                   "without one, only tick() runs and push work waits for a broker.")
@click.option("--tick-interval", type=float, metavar="SECONDS",
              help=f"How often to call flowforge.tick(). Default: ${outbox_daemon.TICK_INTERVAL_ENV}, "
                   f"else {outbox_daemon.DEFAULT_TICK_INTERVAL:g}.")
@click.option("--batch-size", type=int, metavar="N",
              help=f"Outbox rows per transaction (1-10000). Default: ${outbox_daemon.BATCH_SIZE_ENV}, "
                   f"else {outbox_daemon.DEFAULT_BATCH_SIZE}.")
@click.option("--poll-interval", type=float, metavar="SECONDS",
              help=f"Drain even without a notification this often. Default: ${outbox_daemon.POLL_INTERVAL_ENV}, "
                   f"else {outbox_daemon.DEFAULT_POLL_INTERVAL:g}.")
@click.option("--engine-id", metavar="ID",
              help=f"This daemon's instance id for tick(engine_id): the organizations' duties are shared among "
                   f"live daemons by it. Default: ${outbox_daemon.ENGINE_ID_ENV}, else <host>:<pid>.")
@click.option("--feed-interval", type=float, metavar="SECONDS",
              help=f"How often the feeders look at their directories and git branches (filesystem and gitpoll "
                   f"triggers). Default: ${outbox_daemon.FEED_INTERVAL_ENV}, "
                   f"else {outbox_daemon.DEFAULT_FEED_INTERVAL:g}.")
@click.pass_obj
@click.pass_context
def daemon(ctx: click.Context, settings: Settings, dsn: str | None, amqp_url: str | None,
           tick_interval: float | None, batch_size: int | None, poll_interval: float | None,
           engine_id: str | None, feed_interval: float | None) -> None:
    """Call tick(), poll the feeder triggers and drain the outbox to RabbitMQ (if a broker is given) until SIGTERM/SIGINT.

    Logs one logfmt line per event to stderr. Exits 0 on SIGTERM/SIGINT after
    finishing the batch in flight, 2 when the database schema is not the one
    this code knows (it never migrates; run `flowforge migrate`).
    """
    amqp_url = (amqp_url or "").strip() or settings.amqp_url  # none: periodic duties only
    try:
        config = outbox_daemon.resolve_config(
            (dsn or "").strip() or db.resolve_dsn(settings), amqp_url,
            tick_interval=tick_interval, batch_size=batch_size, poll_interval=poll_interval, engine_id=engine_id,
            feed_interval=feed_interval)
    except errors.InvalidArgument as exc:
        raise click.UsageError(str(exc)) from None
    runner = outbox_daemon.Daemon(config)
    runner.install_signal_handlers()
    try:
        code = runner.run()
    except errors.SchemaVersionMismatch as exc:
        click.echo("flowforge: error: " + " ".join(str(exc).split()), err=True)
        ctx.exit(EXIT_SCHEMA)
    ctx.exit(code)
