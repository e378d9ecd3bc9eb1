"""``flowforge serve``: FlowForge's HTTP process (Starlette on uvicorn).

* ``app.build_app(settings)``: the application factory — ``/healthz`` and the
  webhook receiver (``hooks.routes()``); the operator surface (UI, JSON API,
  ``/metrics``) is added to the same factory;
* ``hooks``: ``POST /hooks/{organization}/{trigger}``, which hands the raw body
  and two headers to ``flowforge.receive_webhook`` and answers what it says;
* ``ServeSettings``: what the factory needs (DSNs, body limit).

No rule lives here: the HMAC, the trigger lookup, idempotency and the firing
are all the SQL function's.  Python streams the body, enforces the size limit
before reading it whole, and translates the function's answer into HTTP.
"""

from .app import ServeSettings, build_app

__all__ = ["ServeSettings", "build_app"]
