"""``flowforge serve``: the HTTP process — the webhook receiver and ``/healthz`` (on uvicorn)."""

from __future__ import annotations

import os

import click

from .. import db
from ..config import Settings

HOOKS_DSN_ENV = "FLOWFORGE_HOOKS_DSN"


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8080, show_default=True, type=click.IntRange(0, 65535), help="TCP port.")
@click.option("--max-body-bytes", default=1_048_576, show_default=True, type=click.IntRange(1, None),
              metavar="N", help="A webhook body over N bytes is answered 413 without being read whole.")
@click.option("--dsn", metavar="DSN",
              help="PostgreSQL DSN. Default: the global --dsn, else $FLOWFORGE_DSN, else the embedded server.")
@click.option("--hooks-dsn", metavar="DSN",
              help=f"The webhook receiver's login (a member of flowforge_webhook only). "
                   f"Default: ${HOOKS_DSN_ENV}, else the DSN above.")
@click.option("--log-level", default="info", show_default=True,
              type=click.Choice(["critical", "error", "warning", "info", "debug"]))
@click.pass_obj
def serve(settings: Settings, host: str, port: int, max_body_bytes: int, dsn: str | None,
          hooks_dsn: str | None, log_level: str) -> None:
    """Serve HTTP: POST /hooks/{organization}/{trigger} (signed webhooks) and GET /healthz.

    Runs until SIGTERM/SIGINT. The receiver hands each body and its
    X-FlowForge-Signature / X-FlowForge-Delivery headers to
    flowforge.receive_webhook and answers what it says (202, 400, 401, 413).
    """
    import uvicorn

    from ..serve import ServeSettings, build_app

    main_dsn = (dsn or "").strip() or db.resolve_dsn(settings)
    hooks = (hooks_dsn or "").strip() or os.environ.get(HOOKS_DSN_ENV, "").strip() or None
    for value in (main_dsn, hooks):
        if value is not None:
            db.parse_dsn(value)  # a malformed DSN: one FF003 line, before listening
    app = build_app(ServeSettings(dsn=main_dsn, hooks_dsn=hooks, max_body_bytes=max_body_bytes))
    uvicorn.run(app, host=host, port=port, log_level=log_level, proxy_headers=False, server_header=False)
