"""``GET /metrics``: FlowForge's figures in the Prometheus text format (prometheus_client).

Two callers:

* a tenant, ``Authorization: Bearer <api key>``: its organization's figures,
  through ``flowforge.metrics(since)`` on the gateway login;
* the operator, ``Authorization: Bearer <scrape token>`` (the server's
  ``--metrics-token``): every organization's, labelled by organization,
  through ``flowforge.metrics_all(since)`` on the operator's login
  (``--operator-dsn``, a member of ``flowforge_readonly``).

Gauges are read as they are.  Counters (claims, completions, failures,
retries, trigger firings) are this process's: each scrape adds the window the
SQL counted since the previous scrape's window end, so a scrape reads what
happened since the last one, never the history; a restart starts them at 0
again (Prometheus' ``rate()`` handles the reset).  Scrapes of one scope are
serialized, so two at once never count a window twice.
"""

from __future__ import annotations

import asyncio
import hmac
from dataclasses import dataclass, field
from typing import Iterable

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .. import errors, queries
from .common import api_key, json_error, not_authenticated
from .gateway import Gateway

QUEUE_LABELS = ("organization", "queue", "unit")

GAUGES: dict[str, tuple[str, tuple[str, ...]]] = {
    "queue_ready": ("Units of work ready and due, per queue and unit kind (task_run, work_item).", QUEUE_LABELS),
    "queue_scheduled": ("Units of work ready later (backoff, a delay), per queue.", QUEUE_LABELS),
    "queue_running": ("Units of work claimed and running, per queue.", QUEUE_LABELS),
    "queue_oldest_ready_age_seconds": ("Age of the oldest ready and due unit, per queue (0 when none).",
                                       QUEUE_LABELS),
    "outbox_backlog": ("Outbox messages not yet published to the broker.", ("organization",)),
    "outbox_oldest_age_seconds": ("Age of the oldest unpublished outbox message.", ("organization",)),
    "agents": ("Agents by effective status (active, draining, drained, paused, inactive).",
               ("organization", "status")),
    "runs": ("Runs by engine (dag, graph, statemachine) and state.", ("organization", "engine", "state")),
}
COUNTERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "claims": ("Units of work claimed, per queue and unit kind.", QUEUE_LABELS),
    "completions": ("Units of work completed, per queue.", QUEUE_LABELS),
    "failures": ("Units of work that failed for good (no attempt left, or not retryable), per queue.", QUEUE_LABELS),
    "retries": ("Attempts that failed or were reaped and were scheduled again, per queue.", QUEUE_LABELS),
    "trigger_firings": ("Trigger firings recorded, by outcome (started, signalled, refused, failed).",
                        ("organization", "outcome")),
}


@dataclass
class Scope:
    """One caller's counters: an organization's (tenant keys) or every organization's (the scrape token)."""

    since: object = None
    counters: dict[tuple[str, tuple[str, ...]], float] = field(default_factory=dict)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class State:
    def __init__(self) -> None:
        self.scopes: dict[str, Scope] = {}

    def scope(self, name: str) -> Scope:
        return self.scopes.setdefault(name, Scope())


def _label_values(metric: str, labels: tuple[str, ...], row: dict) -> tuple[str, ...]:
    values = {"organization": row["organization"], **{k: str(v) for k, v in (row["labels"] or {}).items()}}
    return tuple(values.get(name, "") for name in labels)


def families(rows: list[dict], scope: Scope) -> list[Metric]:
    """The metric families of one scrape; counter windows added to the scope's totals."""
    gauges = {name: GaugeMetricFamily(f"flowforge_{name}", doc, labels=list(labels))
              for name, (doc, labels) in GAUGES.items()}
    for row in rows:
        name = row["metric"]
        if name in GAUGES:
            gauges[name].add_metric(list(_label_values(name, GAUGES[name][1], row)), row["value"])
        elif name in COUNTERS:
            key = (name, _label_values(name, COUNTERS[name][1], row))
            scope.counters[key] = scope.counters.get(key, 0.0) + row["value"]
        if row.get("window_end") is not None:
            scope.since = row["window_end"]
    counters = {name: CounterMetricFamily(f"flowforge_{name}", doc, labels=list(labels))
                for name, (doc, labels) in COUNTERS.items()}
    for (name, values), total in sorted(scope.counters.items()):
        counters[name].add_metric(list(values), total)
    return [*gauges.values(), *counters.values()]


class _Collected:
    def __init__(self, found: Iterable[Metric]):
        self.found = list(found)

    def collect(self) -> Iterable[Metric]:
        return self.found


def exposition(found: list[Metric]) -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Collected(found))
    return generate_latest(registry)


async def metrics(request: Request) -> Response:
    key = api_key(request)
    settings = request.app.state.settings
    state: State = request.app.state.metrics_state
    try:
        if key is None:
            raise not_authenticated()
        token = getattr(settings, "metrics_token", None)
        if token and hmac.compare_digest(key.encode(), token.encode()):
            operator: Gateway | None = request.app.state.operator
            if operator is None:
                raise errors.DatabaseUnavailable("the scrape token needs --operator-dsn (a flowforge_readonly "
                                                 "login) to read every organization's figures")
            scope = state.scope("operator")
            async with scope.lock:
                async with operator.plain() as s:
                    rows = await s.rows(queries.METRICS_ALL, {"since": scope.since})
                found = families(rows, scope)
        else:
            gateway: Gateway = request.app.state.gateway
            async with gateway.session(key) as s:
                scope = state.scope(f"org:{s.organization_id}")
                async with scope.lock:
                    rows = await s.rows(queries.METRICS, {"since": scope.since})
                    found = families(rows, scope)
    except errors.FlowForgeError as exc:
        return json_error(exc)
    return Response(exposition(found), media_type=CONTENT_TYPE_LATEST)


def routes() -> list[Route]:
    return [Route("/metrics", metrics, methods=["GET"])]
