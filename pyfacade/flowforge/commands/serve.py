"""``flowforge serve``: the HTTP process — web UI, JSON API, /metrics, the webhook receiver, /healthz, /readyz (on uvicorn)."""

from __future__ import annotations

import os

import click

from .. import db
from ..config import Settings

HOOKS_DSN_ENV = "FLOWFORGE_HOOKS_DSN"
OPERATOR_DSN_ENV = "FLOWFORGE_OPERATOR_DSN"
METRICS_TOKEN_ENV = "FLOWFORGE_METRICS_TOKEN"


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8080, show_default=True, type=click.IntRange(0, 65535), help="TCP port.")
@click.option("--max-body-bytes", default=1_048_576, show_default=True, type=click.IntRange(1, None),
              metavar="N", help="A webhook body over N bytes is answered 413 without being read whole.")
@click.option("--dsn", metavar="DSN",
              help="The gateway login (a member of flowforge_gateway, never a superuser) every read "
                   "authenticates on. Default: the global --dsn, else $FLOWFORGE_DSN, else the embedded server "
                   "(with a gateway login of its own).")
@click.option("--hooks-dsn", metavar="DSN",
              help=f"The webhook receiver's login (a member of flowforge_webhook only). "
                   f"Default: ${HOOKS_DSN_ENV}, else the DSN above.")
@click.option("--operator-dsn", metavar="DSN",
              help=f"A flowforge_readonly login: /metrics with the scrape token reads every organization's "
                   f"figures on it. Default: ${OPERATOR_DSN_ENV}.")
@click.option("--metrics-token-file", type=click.Path(dir_okay=False, exists=True), metavar="FILE",
              help=f"A file holding the operator's scrape token for /metrics (default: ${METRICS_TOKEN_ENV}).")
@click.option("--secure-cookies", is_flag=True, help="Mark the login cookie Secure (behind HTTPS).")
@click.option("--log-level", default="info", show_default=True,
              type=click.Choice(["critical", "error", "warning", "info", "debug"]))
@click.pass_obj
def serve(settings: Settings, host: str, port: int, max_body_bytes: int, dsn: str | None,
          hooks_dsn: str | None, operator_dsn: str | None, metrics_token_file: str | None, secure_cookies: bool,
          log_level: str) -> None:
    """Serve HTTP: the read-only web UI (/runs ...), the JSON API (/api/v1/), /metrics, /healthz, /readyz
    and POST /hooks/{organization}/{trigger} (signed webhooks).

    Every page and API call authenticates with its API key (Authorization:
    Bearer, or the login form's cookie) in its own transaction; /metrics
    takes an API key (that organization's figures) or the scrape token
    (every organization's). With no DSN configured it serves the embedded
    database (where `flowforge demo` ran), on logins of its own, with a
    viewer key of the default organization in .flowforge/serve.key.
    Runs until SIGTERM/SIGINT.
    """
    import uvicorn

    from ..serve import ServeSettings, build_app

    main_dsn = (dsn or "").strip() or None
    hooks = (hooks_dsn or "").strip() or os.environ.get(HOOKS_DSN_ENV, "").strip() or None
    key_file = None
    if main_dsn is None and settings.embedded:
        from ..serve import local

        provisioned = local.provision(db.resolve_dsn(settings))
        main_dsn, hooks = provisioned.dsn, hooks or provisioned.hooks_dsn
        key_file = str(provisioned.key_file)
        click.echo(f"embedded database: sign in with the API key in {key_file}", err=True)
    elif main_dsn is None:
        main_dsn = db.resolve_dsn(settings)
    operator = (operator_dsn or "").strip() or os.environ.get(OPERATOR_DSN_ENV, "").strip() or None
    token = None
    if metrics_token_file:
        with open(metrics_token_file, encoding="utf-8") as f:
            token = f.read().strip() or None
    else:
        token = os.environ.get(METRICS_TOKEN_ENV, "").strip() or None
    if token is not None and len(token) < 16:
        raise click.UsageError("the scrape token must be at least 16 characters")
    for value in (main_dsn, hooks, operator):
        if value is not None:
            db.parse_dsn(value)  # a malformed DSN: one FF003 line, before listening
    app = build_app(ServeSettings(dsn=main_dsn, hooks_dsn=hooks, max_body_bytes=max_body_bytes,
                                  operator_dsn=operator, metrics_token=token, key_file=key_file,
                                  secure_cookies=secure_cookies))
    click.echo(f"open http://{host if host not in ('0.0.0.0', '::') else '127.0.0.1'}:{port}", err=True)
    uvicorn.run(app, host=host, port=port, log_level=log_level, proxy_headers=False, server_header=False)
