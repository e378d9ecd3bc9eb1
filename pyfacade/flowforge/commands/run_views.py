"""How ``run show`` and ``run watch`` draw a run of each engine: a DAG, a graph, a state machine.

``get_run`` says which engine owns a run (``kind``) and carries that engine's
detail; the definition (``get_workflow`` of the run's version) supplies what a
drawing needs besides — a DAG's task timeouts, a graph's nodes and edges, a
machine's states.  Each kind has three views: the text of ``run show`` (and of
a watch's redraw on a terminal), one line per change for a piped watch, and
the summary line a watch ends with.  A fanning node's progress (``fan_out`` of
a DAG task, ``fan_outs`` of a graph run) is drawn as a bar in all of them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from .. import render
from ..client import Client
from ._common import when

UNFINISHED_FOR_GOOD = ("failed", "skipped", "cancelled")  # task states a summary must not call "done" silently
RECENT_ITEMS = 10
RECENT_HISTORY = 20


@dataclass
class Shown:
    """A run as ``get_run`` returned it, and what its definition adds for drawing it."""

    run: dict
    timeouts: dict[str, timedelta | None] = field(default_factory=dict)  # a DAG's tasks
    spec: dict | None = None                                              # a graph's or a machine's definition

    @property
    def kind(self) -> str:
        return self.run.get("kind", "dag")


def load(api: Client, run_id) -> Shown:
    """The run (a DAG's tasks in DAG order) and its definition's facts."""
    run = api.get_run(run_id)
    if run.get("kind", "dag") == "dag":
        run = {**run, "tasks": render.dag_order(run["tasks"])}
        return Shown(run, timeouts=api.task_timeouts(run["workflow"], run["version"]))
    return Shown(run, spec=api.get_workflow(run["workflow"], run["version"])["spec"])


def reload(api: Client, shown: Shown) -> Shown:
    """The same run read again (the definition does not change)."""
    run = api.get_run(shown.run["id"])
    if shown.kind == "dag":
        run = {**run, "tasks": render.dag_order(run["tasks"])}
    return Shown(run, shown.timeouts, shown.spec)


def elapsed(start: datetime | None, end: datetime | None) -> str:
    if start is None:
        return ""
    return render.duration(((end or datetime.now(timezone.utc)) - start).total_seconds())


def _took_run(run: dict) -> str:
    return elapsed(run.get("started_at") or run.get("created_at"), run.get("finished_at"))


# --- run show (and a watch's redraw) ------------------------------------------------------------

def text(shown: Shown, *, colour: bool | None = None, drawing: bool = False) -> str:
    """What ``run show`` prints; ``drawing`` adds the definition drawn with the run's state (a watch's redraw)."""
    if shown.kind == "graph":
        return _graph_text(shown, colour, drawing)
    if shown.kind == "statemachine":
        return _machine_text(shown, colour, drawing)
    out = _dag_text(shown, colour)
    if drawing:
        states = {t["key"]: t["state"] for t in shown.run["tasks"]}
        out += "\n\n" + render.dag(shown.run["tasks"], states=states, colour=colour)
    return out


def tally(run: dict) -> str:
    """How a DAG's finished tasks ended — "2 succeeded, 1 failed, 1 skipped" — or "" when every one succeeded."""
    counts = Counter(t["state"] for t in run["tasks"])
    if not any(counts[s] for s in UNFINISHED_FOR_GOOD):
        return ""
    return ", ".join(f"{counts[s]} {s}" for s in ("succeeded", *UNFINISHED_FOR_GOOD) if counts[s] or s == "succeeded")


def _took(task: dict, timeout: timedelta | None) -> str:
    """How long the task's attempt ran; a timed-out attempt ran until its timeout, not until the reaper came."""
    if task["started_at"] is None:
        return ""
    end = task["finished_at"] or datetime.now(timezone.utc)
    if timeout is not None:
        end = min(end, task["started_at"] + timeout)
    return render.duration((end - task["started_at"]).total_seconds())


def _dag_text(shown: Shown, colour: bool | None) -> str:
    run = shown.run
    counted = tally(run)
    head = (f"run {run['id']}  {run['workflow']} v{run['version']}  "
            f"{render.state(run['state'], colour=colour)}  {run['tasks_done']}/{run['tasks_total']} tasks done"
            f"{': ' + counted if counted else ''}  {_took_run(run)}")
    lines = [head]
    if run.get("reason"):
        lines.append(f"reason: {run['reason']}")
    lines.append("")
    lines.append(render.table(
        # WORKER: who holds the task, or who held it last (get_run keeps lease_owner once finished).
        [(t["key"], t["state"], f"{t['attempt']}/{t['max_attempts']}", _took(t, shown.timeouts.get(t["key"])),
          t["lease_owner"] or "",
          (t["error"] or "")[:80] if t["state"] != "succeeded" else "") for t in run["tasks"]],
        headers=("TASK", "STATE", "ATTEMPT", "TOOK", "WORKER", "ERROR"), state_column=1, colour=colour))
    fanning = [(t["key"], t["fan_out"]) for t in run["tasks"] if t.get("fan_out")]
    if fanning:
        lines += ["", "FAN-OUT"] + ["  " + render.fan_out(key, fo, colour=colour) for key, fo in fanning]
    return "\n".join(lines)


def _graph_text(shown: Shown, colour: bool | None, drawing: bool) -> str:
    run, spec = shown.run, shown.spec or {}
    finals = {n["key"] for n in spec.get("nodes", []) if n.get("final")}
    lines = [f"run {run['id']}  {run['workflow']} v{run['version']}  graph  "
             f"{render.state(run['state'], colour=colour)}  {run['steps']} step{'s' if run['steps'] != 1 else ''} "
             f"(max {run['max_steps']})  {_took_run(run)}"]
    position = run.get("position")
    where = f"position: {position}" + (" (final)" if position in finals else "")
    current = next((i for i in run.get("items", []) if i["node"] == position), None)
    if current is not None and run["state"] == "running" and position not in run.get("fan_outs", {}):
        where += f"  — its item is {current['status']}, attempt {current['attempt']}/{current['max_attempts']}"
    lines.append(where)
    if run.get("reason"):
        lines.append(f"reason: {run['reason']}")
    if run.get("error") and run.get("error") != run.get("reason"):
        lines.append(f"error: {run['error']}")
    lines += ["", "path: " + render.walk(run.get("path") or []), ""]
    counts = run.get("run_counts") or {}
    order = [n["key"] for n in spec.get("nodes", [])] or sorted(counts)
    lines.append(render.table(
        [(key, counts.get(key, 0), _visit_limit(spec, key), "final" if key in finals else "")
         for key in order],
        headers=("NODE", "VISITS", "MAX VISITS", "")))
    fan_outs = run.get("fan_outs") or {}
    if fan_outs:
        lines += ["", "FAN-OUT"] + ["  " + render.fan_out(node, fo, colour=colour)
                                    for node, fo in fan_outs.items() if fo]
    items = [i for i in run.get("items", []) if not _is_child(i, fan_outs)][:RECENT_ITEMS]
    if items:
        lines += ["", f"ITEMS (the {len(items)} most recent)", render.table(
            [(i["node"], i["status"], f"{i['attempt']}/{i['max_attempts']}", i.get("agent") or "",
              (i.get("error") or "")[:80]) for i in items],
            headers=("NODE", "STATUS", "ATTEMPT", "AGENT", "ERROR"), state_column=1, colour=colour)]
    if drawing and spec:
        lines += ["", render.graph(spec["nodes"], spec["edges"], spec["start"], visits=counts,
                                   position=position, colour=colour)]
    return "\n".join(lines)


def _is_child(item: dict, fan_outs: dict) -> bool:
    """A fanning node's items (its children) are counted by the node's bar, not listed one by one."""
    return item["node"] in fan_outs


def _visit_limit(spec: dict, key: str) -> str:
    node = next((n for n in spec.get("nodes", []) if n["key"] == key), {})
    return str(node["max_visits"]) if node.get("max_visits") else "-"


def _machine_text(shown: Shown, colour: bool | None, drawing: bool) -> str:
    run = shown.run
    if run.get("suspended"):
        action = next((i for i in run.get("items", []) if i.get("state") == run["machine_state"]), None)
        rest = "suspended" + (f" (action {action['task']} {action['status']}, attempt "
                              f"{action['attempt']}/{action['max_attempts']})" if action else "")
    elif run.get("live"):
        rest = "live, waiting for an event"
    else:
        rest = "ended"
    lines = [f"run {run['id']}  {run['workflow']} v{run['version']}  statemachine  "
             f"{render.state(run['state'], colour=colour)}  {run['transitions']} transition"
             f"{'s' if run['transitions'] != 1 else ''}  {_took_run(run)}",
             f"state: {run['machine_state']}  {rest}"]
    if run.get("reason"):
        lines.append(f"reason: {run['reason']}")
    if run.get("failure"):
        lines.append(f"failure: {render.compact(run['failure'], 200)}")
    lines.append(f"context: {render.compact(run.get('context'), 200)}")
    history = run.get("history") or []
    shown_history = history[-RECENT_HISTORY:]
    total = run.get("history_length") or len(history)
    title = "HISTORY" if len(shown_history) == total else f"HISTORY (the last {len(shown_history)} of {total})"
    lines += ["", title, render.table(
        [(h["n"], when(h.get("at")), h["cause"], h.get("event") or "",
          f"{h.get('from') or ''} → {h.get('to') or ''}".strip(), h["outcome"], _history_detail(h))
         for h in shown_history],
        headers=("N", "AT", "CAUSE", "EVENT", "FROM → TO", "OUTCOME", "DETAIL"))]
    queued = run.get("queued") or []
    lines.append("")
    if queued:
        lines += [f"QUEUED EVENTS ({len(queued)}, applied in this order when the action ends)", render.table(
            [(q["seq"], q["event"], q.get("event_id") or "", render.compact(q.get("payload") or {}, 60),
              when(q.get("received_at"))) for q in queued],
            headers=("SEQ", "EVENT", "EVENT ID", "PAYLOAD", "RECEIVED"))]
    else:
        lines.append("queued events: none")
    timers = run.get("timers") or []
    if timers:
        lines += ["", "TIMERS", render.table(
            [(t["target"], t["delay"], when(t.get("fire_at")), _until(t.get("fire_at"))) for t in timers],
            headers=("TARGET", "DELAY", "FIRES AT", "IN"))]
    items = (run.get("items") or [])[:RECENT_ITEMS]
    if items:
        lines += ["", "ACTIONS (most recent first)", render.table(
            [(i["task"], i.get("state") or "", i["status"], f"{i['attempt']}/{i['max_attempts']}",
              i.get("agent") or "", (i.get("error") or "")[:80]) for i in items],
            headers=("TASK", "STATE", "STATUS", "ATTEMPT", "AGENT", "ERROR"), state_column=2, colour=colour)]
    if drawing and shown.spec:
        lines += ["", render.machine(shown.spec["states"], shown.spec["initial"], current=run["machine_state"],
                                     colour=colour)]
    return "\n".join(lines)


def _history_detail(entry: dict) -> str:
    detail = {k: v for k, v in (entry.get("detail") or {}).items() if v is not None}
    if entry.get("event_id"):
        detail = {"event_id": entry["event_id"], **detail}
    text = ", ".join(f"{k}={v if isinstance(v, (str, int, float)) else render.compact(v, 60)}"
                     for k, v in detail.items())
    return text if len(text) <= 100 else text[:99] + render.ELLIPSIS


def _until(at: datetime | None) -> str:
    if at is None:
        return ""
    seconds = (at - datetime.now(timezone.utc)).total_seconds()
    return "due" if seconds <= 0 else render.duration(seconds)


# --- run watch: one line per change when piped, and the closing summary -------------------------------

def progress_line(shown: Shown) -> str:
    run = shown.run
    if shown.kind == "graph":
        line = f"{run['state']}: at {run.get('position')} (step {run['steps']})"
        counts = run.get("run_counts") or {}
        if counts:
            line += ", visits " + " ".join(f"{k}={v}" for k, v in sorted(counts.items()))
        for node, fo in (run.get("fan_outs") or {}).items():
            if fo:
                line += f", {node}[{fo['idx']}/{fo['total']}" + (f", {fo['failed']} failed" if fo["failed"] else "") + "]"
        return line
    if shown.kind == "statemachine":
        how = "suspended" if run.get("suspended") else ("live" if run.get("live") else "ended")
        queued = len(run.get("queued") or [])
        return (f"{run['state']}: in {run['machine_state']} ({how}), {run['transitions']} transitions"
                + (f", {queued} queued" if queued else ""))
    parts = []
    for t in run["tasks"]:
        part = f"{t['key']}={t['state']}" + (f"#{t['attempt']}" if t["attempt"] > 1 else "")
        fo = t.get("fan_out")
        if fo:
            part += f"[{fo['idx']}/{fo['total']}" + (f", {fo['failed']} failed" if fo["failed"] else "") + "]"
        parts.append(part)
    return f"{run['state']}: " + ", ".join(parts)


def summary(shown: Shown) -> str:
    run = shown.run
    if shown.kind == "graph":
        return (f"run {run['state']}: {run['steps']} step{'s' if run['steps'] != 1 else ''}, "
                f"path {render.walk(run.get('path') or [], limit=12)}"
                + (f" ({run['reason']})" if run.get("reason") else "") + f", {_took_run(run)}")
    if shown.kind == "statemachine":
        return (f"run {run['state']}: in {run['machine_state']} after {run['transitions']} transition"
                f"{'s' if run['transitions'] != 1 else ''}" + (f" ({run['reason']})" if run.get("reason") else "")
                + f", {_took_run(run)}")
    retries = sum(t["attempt"] - 1 for t in run["tasks"])
    counted = tally(run)
    return (f"run {run['state']}: {run['tasks_done']}/{run['tasks_total']} tasks"
            f"{' (' + counted + ')' if counted else ''}, {retries} retr{'y' if retries == 1 else 'ies'}, "
            f"{_took_run(run)}")
