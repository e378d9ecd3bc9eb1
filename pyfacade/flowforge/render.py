"""Turning results into text: aligned tables and coloured states.

Rendering is separate from the commands so every command prints the same
way, and so ``--json`` output can bypass it entirely.  Colour is used only
when stdout is a terminal (and NO_COLOR is unset): piped output stays plain.
"""

from __future__ import annotations

import json
import os
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
