"""``flowforge workflow apply FILE | list | show NAME``."""

from __future__ import annotations

import json
from pathlib import Path

import click
import yaml

from .. import errors, render
from ..config import Settings
from ._common import client, cli_hint, emit_json, json_option, wants_json, when

# For the commands that name a workflow: what fixes "workflow ... not found".
UNKNOWN_WORKFLOW_HINT = "`flowforge workflow list` shows what is defined"


@click.group("workflow")
def workflow() -> None:
    """Workflow definitions."""


def read_spec(path: str) -> object:
    """A spec from a .json, .yaml or .yml file (anything else: JSON, then YAML)."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise errors.InvalidArgument(f"cannot read {path}: {exc.strerror or exc}") from None
    suffix = file.suffix.lower()
    try:
        if suffix == ".json":
            return json.loads(text)
        if suffix in (".yaml", ".yml"):
            return yaml.safe_load(text)
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return yaml.safe_load(text)
    except json.JSONDecodeError as exc:
        raise errors.InvalidArgument(f"{path} is not valid JSON: {exc}") from None
    except yaml.YAMLError as exc:
        raise errors.InvalidArgument(f"{path} is not valid YAML: {exc}") from None


@workflow.command("apply")
@click.argument("file", type=click.Path(dir_okay=False))
@click.pass_obj
def apply(settings: Settings, file: str) -> None:
    """Define (or re-version) the workflow in FILE (JSON or YAML).

    The same content as the latest version changes nothing.
    """
    spec = read_spec(file)
    with client(settings) as api:
        result = api.apply_workflow(spec)
    if settings.json:
        emit_json({"id": result["id"], "name": result["name"], "version": result["version"],
                   "created": result["created"]})
    else:
        what = "created" if result["created"] else "unchanged"
        click.echo(f"workflow {result['name']} version {result['version']} {what} (id {result['id']})")


@workflow.command("list")
@json_option
@click.pass_obj
def list_(settings: Settings, json_flag: bool) -> None:
    """Every workflow, at its latest version."""
    with client(settings) as api:
        rows = api.list_workflows()
    if wants_json(settings, json_flag):
        emit_json(rows)
        return
    if not rows:
        click.echo("no workflows yet: flowforge workflow apply FILE")
        return
    click.echo(render.table([(r["name"], r["version"], r["tasks"], when(r["created_at"])) for r in rows],
                            headers=("NAME", "VERSION", "TASKS", "DEFINED")))


@workflow.command("show")
@click.argument("name")
@click.option("--version", type=click.IntRange(1), metavar="N", help="This version instead of the latest.")
@json_option
@click.pass_obj
def show(settings: Settings, name: str, version: int | None, json_flag: bool) -> None:
    """A workflow's latest (or --version N) version, drawn.

    A DAG as layers with its tasks; a graph as its nodes and edges (with
    their conditions, in the order they are tried); a state machine as its
    states, transitions (with guards and assignments), timers and actions.
    """
    with client(settings) as api, cli_hint(errors.NotFound, UNKNOWN_WORKFLOW_HINT):
        wf = api.get_workflow(name, version)
    kind = wf.get("kind") or wf["spec"].get("kind") or "dag"
    if wants_json(settings, json_flag):
        emit_json({**wf, "levels": render.levels(wf["spec"]["tasks"])} if kind == "dag" else wf)
        return
    older = f"; the latest is version {wf['versions']}" if wf["version"] < wf["versions"] else ""
    defined = f"defined {when(wf['created_at'])}{older}"
    if kind == "graph":
        _show_graph(wf, defined)
    elif kind == "statemachine":
        _show_machine(wf, defined)
    else:
        _show_dag(wf, defined)


def _show_dag(wf: dict, defined: str) -> None:
    tasks = wf["spec"]["tasks"]
    click.echo(f"{wf['name']}  version {wf['version']}  ({len(tasks)} tasks, {defined})")
    if wf["spec"].get("description"):
        click.echo(wf["spec"]["description"])
    click.echo("")
    click.echo(render.dag(tasks))
    click.echo("")
    click.echo(render.table(
        [(t["key"], ", ".join(t["depends_on"]) or "-", t["queue"], t["max_attempts"], t["backoff"],
          t.get("timeout") or "-") for t in tasks],
        headers=("TASK", "DEPENDS ON", "QUEUE", "MAX ATTEMPTS", "BACKOFF", "TIMEOUT")))
    fanning = [t for t in tasks if t.get("map")]
    if fanning:
        click.echo("")
        click.echo(render.table([(t["key"], *_map_terms(t["map"])) for t in fanning],
                                headers=("FANS OUT", "MODE", "OVER", "AT ONCE", "ON ITEM FAILURE")))


def _map_terms(fan: dict) -> tuple:
    failure = fan.get("on_item_failure", "fail")
    if fan.get("tolerated_failures"):
        failure += f" (tolerating {fan['tolerated_failures']})"
    return (fan.get("mode", "map"), render.jsonpath(fan.get("over")), fan.get("max_concurrency", 100), failure)


def _show_graph(wf: dict, defined: str) -> None:
    spec = wf["spec"]
    nodes, edges = spec["nodes"], spec["edges"]
    click.echo(f"{wf['name']}  version {wf['version']}  (graph: {len(nodes)} nodes, {len(edges)} edges, "
               f"start {spec['start']}, at most {spec['max_steps']} steps, {defined})")
    if spec.get("description"):
        click.echo(spec["description"])
    click.echo("")
    click.echo(render.graph(nodes, edges, spec["start"]))
    click.echo("")
    click.echo(render.table(
        [(n["key"], "final", "", "", "", "", "", "") if n.get("final") else
         (n["key"], "map" if n.get("map") else "task", n["queue"], n["max_attempts"], n.get("max_visits") or "-",
          render.interval(n.get("backoff")), render.interval(n.get("timeout")),
          _affinity(n))
         for n in nodes],
        headers=("NODE", "KIND", "QUEUE", "MAX ATTEMPTS", "MAX VISITS", "BACKOFF", "TIMEOUT", "AFFINITY")))
    fanning = [n for n in nodes if n.get("map")]
    if fanning:
        click.echo("")
        click.echo(render.table([(n["key"], *_map_terms(n["map"])) for n in fanning],
                                headers=("FANS OUT", "MODE", "OVER", "AT ONCE", "ON ITEM FAILURE")))


def _affinity(node: dict) -> str:
    if not node.get("affinity"):
        return "-"
    return f"{render.jsonpath(node['affinity'])} ({node.get('affinity_policy', 'soft')})"


def _show_machine(wf: dict, defined: str) -> None:
    spec = wf["spec"]
    states = spec["states"]
    finals = sum(1 for s in states.values() if s.get("final"))
    click.echo(f"{wf['name']}  version {wf['version']}  (statemachine: {len(states)} states, {finals} final, "
               f"initial {spec['initial']}, {defined})")
    if spec.get("description"):
        click.echo(spec["description"])
    click.echo(f"context: {render.compact(spec.get('context') or {}, 200)}")
    click.echo("")
    click.echo(render.machine(states, spec["initial"]))
