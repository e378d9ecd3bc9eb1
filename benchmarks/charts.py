"""Draw the PNG charts of one run: python charts.py FIGURES.jsonl OUT_DIR (needs matplotlib).

One chart per figure that carries a ``chart`` description (see common.figure):
bars (subject vs baseline, with each round's value as a dot), a line (cost
against fan-out width), or latency percentiles.  Prints the files it wrote.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60]


def draw(rec: dict, path: Path, stamp: str) -> None:
    chart = rec["chart"]
    fig, ax = plt.subplots(figsize=(7, 4), dpi=110)
    title = f"{rec['script']}: {rec['name']}"
    if rec.get("ratio") is not None:
        title += f"\nratio {rec['ratio']:.2f}" + (f", target {rec['target']}" if rec.get("target") else "")
    if chart["kind"] == "bars":
        labels, values = chart["labels"], chart["values"]
        colors = ["#9aa5b1" if i == 0 and len(labels) > 1 and "FlowForge" not in labels[0] else "#2f6fb0"
                  for i in range(len(labels))]
        colors = ["#2f6fb0" if "flowforge" in lab.lower() else "#9aa5b1" for lab in labels]
        bars = ax.bar(range(len(labels)), values, color=colors)
        for i, rounds in enumerate(chart.get("rounds") or []):
            ax.scatter([i] * len(rounds), rounds, color="black", s=10, zorder=3)
        for b, v in zip(bars, values):
            ax.annotate(f"{v:,.0f}", (b.get_x() + b.get_width() / 2, v), ha="center", va="bottom", fontsize=8)
        ax.set_xticks(range(len(labels)), labels, rotation=15 if len(labels) > 3 else 0, fontsize=8)
        ax.set_ylabel(chart["unit"])
    elif chart["kind"] == "line":
        ax.plot(chart["x"], chart["values"], marker="o", color="#2f6fb0", label="fan-out 1 -> W -> 1")
        if chart.get("reference") is not None:
            ax.axhline(chart["reference"], color="#9aa5b1", linestyle="--", label=chart.get("reference_label"))
        ax.set_xlabel(chart["xlabel"])
        ax.set_ylabel(chart["unit"])
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=8)
    elif chart["kind"] == "latency":
        x = range(len(chart["labels"]))
        w = 0.38
        ax.bar([i - w / 2 for i in x], chart["p50"], w, label="p50", color="#2f6fb0")
        ax.bar([i + w / 2 for i in x], chart["p99"], w, label="p99", color="#e08a2c")
        ax.axhline(3, color="#2f6fb0", linestyle=":", linewidth=1, label="p50 target 3 ms")
        ax.axhline(10, color="#e08a2c", linestyle=":", linewidth=1, label="p99 target 10 ms")
        ax.set_xticks(list(x), chart["labels"])
        ax.set_ylabel(chart["unit"])
        ax.legend(fontsize=8)
    ax.set_title(title, fontsize=9)
    fig.text(0.99, 0.01, stamp, ha="right", va="bottom", fontsize=6, color="#666")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main() -> None:
    records = [json.loads(line) for line in Path(sys.argv[1]).read_text().splitlines() if line.strip()]
    out = Path(sys.argv[2])
    stamp = sys.argv[3] if len(sys.argv) > 3 else ""
    out.mkdir(parents=True, exist_ok=True)
    for rec in records:
        if rec.get("chart"):
            path = out / f"{rec['script']}-{slug(rec['name'])}.png"
            draw(rec, path, stamp)
            print(path)


if __name__ == "__main__":
    main()
