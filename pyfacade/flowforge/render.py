"""Turning results into text: aligned tables and coloured states.

Rendering is separate from the commands so every command prints the same
way, and so ``--json`` output can bypass it entirely.  Colour is used only
when stdout is a terminal (and NO_COLOR is unset): piped output stays plain.
"""

from __future__ import annotations

import json
import os
import sys
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
