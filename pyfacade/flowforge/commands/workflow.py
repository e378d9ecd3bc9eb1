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
    """A workflow's latest (or --version N) version: its tasks and the DAG."""
    with client(settings) as api, cli_hint(errors.NotFound, UNKNOWN_WORKFLOW_HINT):
        wf = api.get_workflow(name, version)
    tasks = wf["spec"]["tasks"]
    if wants_json(settings, json_flag):
        emit_json({**wf, "levels": render.levels(tasks)})
        return
    older = f"; the latest is version {wf['versions']}" if wf["version"] < wf["versions"] else ""
    click.echo(f"{wf['name']}  version {wf['version']}  ({len(tasks)} tasks, defined {when(wf['created_at'])}{older})")
    if wf["spec"].get("description"):
        click.echo(wf["spec"]["description"])
    click.echo("")
    click.echo(render.dag(tasks))
    click.echo("")
    click.echo(render.table(
        [(t["key"], ", ".join(t["depends_on"]) or "-", t["queue"], t["max_attempts"], t["backoff"],
          t.get("timeout") or "-") for t in tasks],
        headers=("TASK", "DEPENDS ON", "QUEUE", "MAX ATTEMPTS", "BACKOFF", "TIMEOUT")))
