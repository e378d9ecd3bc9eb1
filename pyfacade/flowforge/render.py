"""Turning results into text: aligned tables and coloured states.

Rendering is separate from the commands so every command prints the same
way, and so ``--json`` output can bypass it entirely.  Colour is used only
when stdout is a terminal (and NO_COLOR is unset): piped output stays plain.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections import deque
from typing import Any, Iterable, Sequence

import click

# One palette for check results and for run/task states alike.
STATE_COLOURS = {
    "ok": "green",
    "succeeded": "green",
    "warn": "yellow",
    "pending": "yellow",
    "ready": "yellow",
    "running": "cyan",
    "problem": "red",
    "failed": "red",
    "started": "green",     # trigger firings
    "signalled": "green",
    "refused": "red",
    "skip": "bright_black",
    "skipped": "bright_black",
    "cancelled": "bright_black",
}


def use_colour(stream=None) -> bool:
    stream = stream or sys.stdout
    return bool(getattr(stream, "isatty", lambda: False)()) and "NO_COLOR" not in os.environ


def state(text: str, *, colour: bool | None = None) -> str:
    """``text`` coloured by its state name when writing to a terminal."""
    if colour is None:
        colour = use_colour()
    fg = STATE_COLOURS.get(text)
    return click.style(text, fg=fg, bold=text in {"problem", "failed"}) if colour and fg else text


def table(rows: Iterable[Sequence[Any]], headers: Sequence[str] | None = None,
          *, state_column: int | None = None, colour: bool | None = None) -> str:
    """Rows as left-aligned columns; the last column is not padded.

    Widths are computed on the plain text and colour is applied afterwards,
    so ANSI codes never break alignment.
    """
    if colour is None:
        colour = use_colour()
    plain = [[("" if v is None else str(v)) for v in row] for row in rows]
    if headers:
        plain.insert(0, list(headers))
    if not plain:
        return ""
    ncols = max(len(r) for r in plain)
    widths = [max((len(r[i]) for r in plain if i < len(r)), default=0) for i in range(ncols)]
    lines = []
    for n, row in enumerate(plain):
        cells = []
        for i, cell in enumerate(row):
            padded = cell if i == len(row) - 1 else cell.ljust(widths[i])
            if state_column == i and not (headers and n == 0):
                padded = padded.replace(cell, state(cell, colour=colour), 1)
            elif headers and n == 0 and colour:
                padded = click.style(padded, bold=True)
            cells.append(padded)
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def as_json(value: Any) -> str:
    """Stable JSON for ``--json``: sorted keys, non-JSON values stringified."""
    return json.dumps(value, indent=2, sort_keys=True, default=str)


# --- DAGs, progress, live redraw -------------------------------------------------

FINISHED_RUN_STATES = ("succeeded", "failed", "cancelled")


def levels(tasks: Sequence[dict]) -> list[list[str]]:
    """Task keys grouped by topological level (a task sits one below its deepest dependency).

    Only for drawing: the database validated the DAG.  Keys keep their spec
    order within a level.  Iterative (Kahn's algorithm), so a chain of the
    documented maximum of 1,000 tasks needs no recursion depth.
    """
    keys = {t["key"] for t in tasks}
    deps = {t["key"]: [d for d in (t.get("depends_on") or []) if d in keys] for t in tasks}
    waiting = {key: len(ds) for key, ds in deps.items()}
    dependents: dict[str, list[str]] = {key: [] for key in deps}
    for key, ds in deps.items():
        for d in ds:
            dependents[d].append(key)
    level = {key: 0 for key, n in waiting.items() if n == 0}
    ready = deque(level)
    while ready:
        key = ready.popleft()
        for child in dependents[key]:
            level[child] = max(level.get(child, 0), level[key] + 1)
            waiting[child] -= 1
            if waiting[child] == 0:
                ready.append(child)
    for key in deps:  # a cycle cannot be stored; if one were, draw its keys flat rather than loop
        level.setdefault(key, 0)
    out: list[list[str]] = [[] for _ in range(max(level.values(), default=-1) + 1)]
    for key in deps:
        out[level[key]].append(key)
    return out


def dag_order(tasks: Sequence[dict]) -> list[dict]:
    """The tasks level by level (``levels``), for lists and tables of a run's tasks."""
    by_key = {t["key"]: t for t in tasks}
    return [by_key[key] for layer in levels(tasks) for key in layer]


def dag(tasks: Sequence[dict], *, states: dict[str, str] | None = None, colour: bool | None = None) -> str:
    """The DAG as layers joined by arrows; with ``states``, each key shows its state."""
    if colour is None:
        colour = use_colour()
    lines = []
    for i, layer in enumerate(levels(tasks)):
        if i:
            lines.append("    │")
            lines.append("    ▼")
        cells = []
        for key in layer:
            if states is not None and key in states:
                cells.append(f"{key} [{state(states[key], colour=colour)}]")
            else:
                cells.append(key)
        lines.append("  " + "   ".join(cells))
    return "\n".join(lines)


def bar(done: int, total: int, width: int = 20) -> str:
    """A text progress bar: ``█████░░░░░``."""
    filled = 0 if total <= 0 else min(width, round(width * done / total))
    return "█" * filled + "░" * (width - filled)


def duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes < 60 else f"{minutes // 60}h{minutes % 60:02d}m"


class Live:
    """Redraws a block of lines in place on a terminal; elsewhere prints a block only when it changed."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stdout
        self.tty = use_colour(self.stream) or bool(getattr(self.stream, "isatty", lambda: False)())
        self._height = 0
        self._last: str | None = None

    def update(self, text: str) -> None:
        if text == self._last:
            return
        self._last = text
        if self.tty:
            if self._height:
                self.stream.write(f"\x1b[{self._height}F\x1b[J")
            self.stream.write(text + "\n")
            self._height = text.count("\n") + 1
        else:
            self.stream.write(text + "\n")
        self.stream.flush()


# --- graphs, machines, fan-outs ---------------------------------------------------------

FINAL_MARK = "■"
START_MARK = "▶"
ARROW = "──▶"
ELLIPSIS = "…"

_QUOTED_MEMBER = re.compile(r'\."([A-Za-z_][A-Za-z0-9_]*)"')


def jsonpath(text: str | None) -> str:
    """A jsonpath as a person writes it: ``($."output"."approved" == false)`` → ``$.output.approved == false``.

    Only for display: PostgreSQL's canonical form (what a stored definition
    holds) quotes every member and wraps a predicate in parentheses.
    """
    if not text:
        return ""
    text = _QUOTED_MEMBER.sub(r".\1", text.strip())
    if text.startswith("(") and text.endswith(")") and _wraps_whole(text):
        text = text[1:-1]
    return text


def _wraps_whole(text: str) -> bool:
    """True when the first "(" closes at the last character (outside string literals)."""
    depth, quoted, escaped = 0, False, False
    for i, c in enumerate(text):
        if quoted:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                quoted = False
            continue
        if c == '"':
            quoted = True
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0 and i != len(text) - 1:
                return False
    return depth == 0


def compact(value: Any, limit: int = 120) -> str:
    """A JSON value on one line, keys sorted, cut at ``limit`` characters."""
    text = json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + ELLIPSIS


_HMS = re.compile(r"^(?:(?P<days>\d+) days? )?(?P<h>\d+):(?P<m>\d{2}):(?P<s>\d{2}(?:\.\d+)?)$")


def interval(text: str | None) -> str:
    """PostgreSQL interval text as a duration: ``00:00:01`` → ``1.0s``, ``00:05:00`` → ``5m00s``; others as they are."""
    if not text:
        return "-"
    found = _HMS.match(str(text))
    if not found:
        return str(text)
    seconds = (int(found["days"] or 0) * 86400 + int(found["h"]) * 3600 + int(found["m"]) * 60
               + float(found["s"]))
    return duration(seconds)


def walk(path: Sequence[str], *, limit: int = 24, colour: bool | None = None,
         states: dict[str, str] | None = None) -> str:
    """A graph run's path: ``draft → review → draft#2 → review#2 → publish → done``.

    A node walked more than once carries its visit number; a path longer than
    ``limit`` shows its first and last steps around ``… (N steps) …``.
    """
    counts: dict[str, int] = {}
    for node in path:
        counts[node] = counts.get(node, 0) + 1
    seen: dict[str, int] = {}
    labels = []
    for node in path:
        seen[node] = seen.get(node, 0) + 1
        labels.append(f"{node}#{seen[node]}" if counts[node] > 1 else node)
    if len(labels) > limit:
        head, tail = limit // 3, limit - limit // 3
        hidden = len(labels) - head - tail
        labels = labels[:head] + [f"{ELLIPSIS} ({hidden} steps) {ELLIPSIS}"] + labels[-tail:]
    return " → ".join(labels)


def fan_out(node: str, progress: dict, *, width: int = 20, colour: bool | None = None) -> str:
    """A fanning node's progress: ``resize  map  ██████░░░░  12/20 done  1 failed  3 live  running``."""
    total = progress.get("total") or 0
    idx = progress.get("idx") or 0
    if progress.get("done"):
        outcome = progress.get("outcome") or "done"
    else:
        outcome = "running"
    parts = [node, progress.get("mode") or "map", bar(idx, total, width), f"{idx}/{total} done"]
    if progress.get("failed"):
        parts.append(f"{progress['failed']} failed")
    if not progress.get("done"):
        parts.append(f"{progress.get('live') or 0} live (at most {progress.get('max_concurrency')})")
    parts.append(state(outcome, colour=colour))
    if progress.get("error"):
        parts.append(f"— {progress['error']}")
    return "  ".join(parts)


def graph(nodes: Sequence[dict], edges: Sequence[dict], start: str, *, visits: dict[str, int] | None = None,
          position: str | None = None, colour: bool | None = None) -> str:
    """A graph's nodes and edges, one line per edge in the order they are tried, with their conditions.

    ``▶`` marks the start node and ``■`` a final one; with ``visits`` each node
    shows how often a run entered it (``×2``) and ``position`` is marked
    ``◀ here``.  An edge without ``when`` after conditional edges of the same
    node is the ``otherwise``.
    """
    final = {n["key"] for n in nodes if n.get("final")}

    def label(key: str) -> str:
        text = key + (f" {FINAL_MARK}" if key in final else "")
        if visits is not None and visits.get(key):
            text += f" ×{visits[key]}"
        if position is not None and key == position:
            text += " ◀ here"
        return text

    by_source: dict[str, list[dict]] = {}
    for edge in edges:
        by_source.setdefault(edge["from"], []).append(edge)
    order = _reachable_order(start, {k: [e["to"] for e in v] for k, v in by_source.items()},
                             [n["key"] for n in nodes])
    sources = [label(key) for key in order]
    width = max((len(s) for s in sources), default=0)
    targets = [label(e["to"]) for e in edges]
    twidth = max((len(t) for t in targets), default=0)
    lines = [f"{START_MARK} {label(start)}"]
    for key, shown in zip(order, sources):
        out = by_source.get(key, [])
        if not out:
            if key not in final:
                lines.append(f"  {shown}")
            continue
        conditional = False
        for i, edge in enumerate(out):
            lead = shown.ljust(width) if i == 0 else " " * width
            target = label(edge["to"])
            if edge.get("when"):
                cond = f"when {jsonpath(edge['when'])}"
                conditional = True
            else:
                cond = "otherwise" if conditional else ""
            lines.append(f"  {lead}  {ARROW} {target.ljust(twidth) if cond else target}"
                         + (f"  {cond}" if cond else "").rstrip())
    return "\n".join(line.rstrip() for line in lines)


def _reachable_order(start: str, successors: dict[str, list[str]], declared: Sequence[str]) -> list[str]:
    """Keys breadth-first from ``start`` in edge order, then any the walk did not reach in declared order."""
    order, seen, queue = [], {start}, deque([start])
    while queue:
        key = queue.popleft()
        order.append(key)
        for nxt in successors.get(key, []):
            if nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return order + [k for k in declared if k not in seen]


def machine_transitions(states: dict[str, dict], initial: str) -> list[tuple[str, dict]]:
    """The states of a machine spec in reading order: breadth-first from ``initial`` over its transitions, finals last."""
    def targets(spec: dict) -> list[str]:
        out = [c["target"] for cands in (spec.get("on") or {}).values() for c in _candidates(cands)]
        out += [t["target"] for t in spec.get("after") or []]
        out += [spec[k] for k in ("on_done", "on_error") if spec.get(k)]
        return out
    order = _reachable_order(initial, {name: targets(spec) for name, spec in states.items()}, list(states))
    # Final states last: they end the reading as they end a run.
    order = [n for n in order if not states[n].get("final")] + [n for n in order if states[n].get("final")]
    return [(name, states[name]) for name in order]


def _candidates(value: Any) -> list[dict]:
    """A transition as stored (a list of candidates) or as written (a target name, one candidate object)."""
    if isinstance(value, str):
        return [{"target": value}]
    if isinstance(value, dict):
        return [value]
    return list(value or [])


def machine(states: dict[str, dict], initial: str, *, current: str | None = None,
            colour: bool | None = None) -> str:
    """A machine's states and what moves it: events (with guards and assignments), timers, its action's ends.

    ``▶`` marks the initial state, ``■`` a final one, ``current`` is marked ``◀ here``.
    """
    lines = []
    for name, spec in machine_transitions(states, initial):
        mark = START_MARK if name == initial else (FINAL_MARK if spec.get("final") else " ")
        head = f"{mark} {name}"
        if spec.get("final"):
            head += "  (final)"
        action = spec.get("action")
        if action:
            head += f"  action {action['task']} ({_action_terms(action)})"
        if current is not None and name == current:
            head += "  ◀ here"
        lines.append(head)
        rows = []
        for event, cands in (spec.get("on") or {}).items():
            for cand in _candidates(cands):
                notes = []
                if cand.get("guard"):
                    notes.append(f"if {jsonpath(cand['guard'])}")
                if cand.get("assign"):
                    notes.append("set " + ", ".join(f"{k} = {jsonpath(v)}" for k, v in cand["assign"].items()))
                rows.append((f"on {event}", cand["target"], "; ".join(notes)))
        for timer in spec.get("after") or []:
            rows.append((f"after {timer['delay']}", timer["target"], ""))
        if spec.get("on_done"):
            rows.append(("done", spec["on_done"], ""))
        if spec.get("on_error"):
            rows.append(("error", spec["on_error"], ""))
        elif action:
            rows.append(("error", "(the run fails)", ""))
        if rows:
            width = max(len(r[0]) for r in rows)
            twidth = max(len(r[1]) for r in rows)
            for trigger, target, note in rows:
                lines.append(f"    {trigger.ljust(width)}  {ARROW} {target.ljust(twidth) if note else target}"
                             + (f"  {note}" if note else ""))
    return "\n".join(line.rstrip() for line in lines)


def _action_terms(action: dict) -> str:
    terms = [f"queue {action.get('queue', 'default')}", f"{action.get('max_attempts', 3)} attempts"]
    if action.get("backoff"):
        terms.append(f"backoff {interval(action['backoff'])}")
    if action.get("timeout"):
        terms.append(f"timeout {interval(action['timeout'])}")
    return ", ".join(terms)
