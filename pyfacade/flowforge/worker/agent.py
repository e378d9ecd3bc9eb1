"""A worker that registered: an agent — registration, heartbeats with metrics, draining, deregistration.

``Worker(agent="gpu-1")`` (or ``register=True``, under the worker's name)
makes the process an agent (docs/engines.md, "Agents"):

* at start, ``register_agent(name, info)`` — labels (what selectors match),
  addresses, version, type, binary path and the heartbeat interval — before
  the first claim, so claims see its labels and status; the worker's claim
  name is the agent name;
* every ``heartbeat_interval`` seconds, ``agent_heartbeat(name, metrics)``
  with the host's and the process's load (``metrics``); it returns the
  agent's status, which is the database's call, not ours;
* **draining** (``set_agent_status(name, 'draining')``, ``flowforge agent
  drain NAME``): the database gives a draining agent nothing from either
  queue; the worker stops asking, finishes what it holds, keeps
  heartbeating (its metrics say ``running``), and logs once it holds
  nothing — ``list_agents`` shows it ``drained``.  Made active again, it
  claims again;
* **inactive** (its heartbeat was late — a pause, a partition — and the
  sweep or an operator marked it so, or its row is gone): it registers
  again, as the SQL asks, and goes on;
* at shutdown, after the drain, one last heartbeat (metrics with what it
  holds then) and ``set_agent_status(name, 'inactive')`` — which releases
  its affinity bindings at once.  That function is granted to
  ``flowforge_app`` (every member login ``add_member`` maps has it), not to
  ``flowforge_worker``: a worker-only login is refused, the worker says so,
  and the database's own rule makes it inactive three heartbeat intervals
  later.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from typing import Any, Callable

from .. import __version__, errors
from .connection import SharedConnection
from .jobs import InFlight, Stats
from .metrics import Metrics

log = logging.getLogger("flowforge.worker")

ACTIVE, DRAINING, INACTIVE = "active", "draining", "inactive"
INFO_FIELDS = ("http_address", "grpc_address", "infra_address", "version", "binary_path", "type")


def agent_info(*, labels: dict | None, info: dict | None, heartbeat_interval: float) -> dict[str, Any]:
    """What ``register_agent`` gets: defaults, then the caller's ``info`` fields, ``labels`` and the interval."""
    extra = dict(info or {})
    unknown = sorted(set(extra) - set(INFO_FIELDS))
    if unknown:
        raise ValueError(f"unknown agent_info field(s) {unknown}; known: {list(INFO_FIELDS)} (labels= is separate)")
    if labels is not None and not isinstance(labels, dict):
        raise TypeError("labels is a dict (what a node's worker_params are matched against)")
    return {
        "type": "remote",  # a process of its own, not inside the orchestrator
        "version": f"flowforge-python {__version__}",
        "binary_path": sys.argv[0] or sys.executable,
        **extra,
        "labels": labels or {},
        "heartbeat_interval": f"{heartbeat_interval:g} seconds",
    }


class Agent:
    def __init__(self, ops: SharedConnection, name: str, info: dict[str, Any], *, interval: float,
                 in_flight: InFlight, stats: Stats, concurrency: int, wake: threading.Event,
                 stop: threading.Event):
        self.name = name
        self.status: str | None = None  # as the database last said
        self._ops = ops
        self._info = info
        self._interval = interval
        self._in_flight = in_flight
        self._stats = stats
        self._concurrency = concurrency
        self._wake = wake                  # the claim loop: wake it when we may claim again
        self._stop = stop                  # the worker stops claiming
        self._done = threading.Event()     # the heartbeat loop ends (after the drain)
        self._metrics = Metrics()
        self._drained_said = False
        self.last_metrics: dict[str, Any] | None = None

    # --- the claim loop asks ---------------------------------------------------------

    def may_claim(self) -> bool:
        """False while the database says draining (it would give us nothing anyway)."""
        return self.status != DRAINING

    # --- start, heartbeats, end -------------------------------------------------------------

    def register(self, give_up: Callable[[], bool]) -> None:
        """``register_agent``: waits for the database like every first connection; FF003 for bad info is raised."""
        self._ops.call(lambda api: api.register_agent(self.name, self._info), give_up=give_up)
        self._set_status(ACTIVE)
        log.info("agent %s registered (labels %s, heartbeat every %g s)", self.name, self._info.get("labels") or {},
                 self._interval)

    def loop(self) -> None:
        """The agent heartbeat thread: every interval, until the worker is done."""
        next_beat = time.monotonic() + self._interval
        while not self._done.is_set():
            self._done.wait(min(1.0, max(0.0, next_beat - time.monotonic())))
            if self._done.is_set():
                return
            self._say_if_drained()
            if time.monotonic() < next_beat:
                continue
            next_beat = time.monotonic() + self._interval
            try:
                self.beat()
            except errors.DatabaseUnavailable as exc:
                log.warning("agent %s heartbeat not sent, database unreachable: %s", self.name, exc)
            except errors.FlowForgeError as exc:
                log.warning("agent %s heartbeat refused: %s", self.name, exc)
            except Exception:  # noqa: BLE001 - the thread must outlive anything, or the agent goes inactive
                log.exception("agent %s heartbeat failed", self.name)

    def beat(self) -> str:
        """One ``agent_heartbeat`` with fresh metrics; acts on the status it returns."""
        metrics = self.sample()
        try:
            status = self._ops.call(lambda api: api.agent_heartbeat(self.name, metrics), give_up=lambda: True)
        except errors.NotFound:
            status = INACTIVE  # our row is gone: register again
        if status == INACTIVE and not self._stop.is_set():
            log.warning("agent %s was marked inactive (heartbeats missed?); registering again", self.name)
            self._ops.call(lambda api: api.register_agent(self.name, self._info), give_up=lambda: True)
            status = ACTIVE
        self._set_status(status)
        return status

    def sample(self) -> dict[str, Any]:
        self.last_metrics = self._metrics.sample(running=self._in_flight.owned_by_unit(),
                                                 concurrency=self._concurrency, stats=dict(self._stats.counts))
        return self.last_metrics

    def finish(self) -> None:
        """After the drain: a last heartbeat with the final metrics, then mark the agent inactive if allowed."""
        self._done.set()
        try:
            self._ops.call(lambda api: api.agent_heartbeat(self.name, self.sample()), give_up=lambda: True)
        except errors.FlowForgeError as exc:
            log.warning("agent %s stopped; its last heartbeat was not written: %s", self.name, exc)
            return
        try:
            self._ops.call(lambda api: api.set_agent_status(self.name, INACTIVE), give_up=lambda: True)
        except (errors.PermissionDenied, errors.DatabaseError) as exc:
            # set_agent_status is an application's right, not flowforge_worker's (42501 for a role without it).
            log.info("agent %s stopped; not marked inactive (%s): it goes inactive by itself after three missed "
                     "heartbeats", self.name, exc)
            return
        except errors.FlowForgeError as exc:
            log.warning("agent %s stopped; not marked inactive: %s", self.name, exc)
            return
        self.status = INACTIVE
        log.info("agent %s stopped and marked inactive", self.name)

    # --- status changes ---------------------------------------------------------------------

    def _set_status(self, status: str) -> None:
        previous, self.status = self.status, status
        if status == previous:
            return
        if status == DRAINING:
            self._drained_said = False
            log.info("agent %s is draining: finishing the %d unit(s) it holds, claiming nothing new", self.name,
                     self._in_flight.count)
            self._say_if_drained()
        elif status == ACTIVE and previous == DRAINING:
            log.info("agent %s is active again: claiming", self.name)
            self._wake.set()

    def _say_if_drained(self) -> None:
        if self.status == DRAINING and not self._drained_said and self._in_flight.count == 0:
            self._drained_said = True
            log.info("agent %s drained: it holds nothing and claims nothing (flowforge agent activate %s to resume)",
                     self.name, self.name)
