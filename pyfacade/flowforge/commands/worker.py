"""``flowforge worker MODULE:ATTR``: import a Worker and run it until SIGTERM/SIGINT."""

from __future__ import annotations

import importlib
import json
import logging
import os
import sys

import click

from .. import errors
from ..config import Settings
from ..worker import Worker


def load_worker(target: str) -> Worker:
    """``package.module:attr`` → the Worker object it names (the current folder is importable)."""
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise errors.InvalidArgument(f"expected MODULE:ATTR (e.g. myapp.tasks:worker), got {target!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 - any import failure of user code is one line
        raise errors.InvalidArgument(f"cannot import {module_name}: {type(exc).__name__}: {exc}") from None
    obj = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise errors.InvalidArgument(f"{module_name} has no attribute {attr}") from None
    if not isinstance(obj, Worker):
        raise errors.InvalidArgument(f"{target} is a {type(obj).__name__}, not a flowforge.Worker")
    return obj


@click.command("worker")
@click.argument("target", metavar="MODULE:ATTR")
@click.option("--concurrency", type=click.IntRange(1, 1000), help="Override the Worker's concurrency.")
@click.option("--grace-period", type=click.FloatRange(0), help="Seconds to finish in-flight work on SIGTERM.")
@click.option("--agent", "agent_name", metavar="NAME",
              help="Register the worker as the agent NAME (heartbeats with metrics, draining; its claim name).")
@click.option("--label", "labels", multiple=True, metavar="KEY=VALUE",
              help="An agent label (what nodes' worker_params match); VALUE is JSON if it parses, else text. "
                   "Repeatable; needs --agent (or a Worker built with agent=).")
@click.option("--log-level", default="INFO", show_default=True,
              type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False))
@click.pass_obj
def worker(settings: Settings, target: str, concurrency: int | None, grace_period: float | None,
           agent_name: str | None, labels: tuple[str, ...], log_level: str) -> None:
    """Run the flowforge.Worker named MODULE:ATTR until SIGTERM or SIGINT.

    --dsn (or FLOWFORGE_DSN) is used when the Worker was built without a dsn.
    With --agent NAME the process registers as that agent: it heartbeats its
    metrics, stops claiming while drained (`flowforge agent drain NAME`) and
    is marked inactive when it stops.
    On SIGTERM it stops claiming, finishes in-flight tasks within the grace
    period and exits 0; unfinished tasks come back via their lease.
    """
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    w = load_worker(target)
    if w.dsn is None and settings.dsn is not None:
        w.dsn = settings.dsn
    if concurrency is not None:
        w.concurrency = concurrency
    if grace_period is not None:
        w.grace_period = grace_period
    if agent_name is not None:
        if not 1 <= len(agent_name) <= 200:
            raise errors.InvalidArgument("--agent must be a name of 1 to 200 characters")
        w.name = agent_name
        w.register_agent = True
    if labels:
        if not w.register_agent:
            raise errors.InvalidArgument("--label needs --agent NAME: labels are an agent's")
        w.labels = {**(w.labels or {}), **dict(_label(text) for text in labels)}
    if not w.handlers:
        raise errors.InvalidArgument(f"{target} has no task handlers registered")
    w.run()


def _label(text: str) -> tuple[str, object]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise errors.InvalidArgument(f"--label takes KEY=VALUE, got {text!r}")
    try:
        return key, json.loads(value)
    except ValueError:
        return key, value
