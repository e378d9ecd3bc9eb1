"""Side by side: the benchmarks of an older commit and of this tree, in one run.

    .venv/bin/python benchmarks/compare.py --old f3e42c7 [--new COMMIT] [--only claim,batch,dag] [--rounds 2]

The old commit is checked out in a temporary worktree; each script is run
from there (its own benchmarks/, its own sql/ through FLOWFORGE_SQL_DIR, its
own pyfacade/ on PYTHONPATH) and from here, alternating old / new for
``--rounds`` rounds, so both sides see the same machine at nearly the same
time. For every figure the median FlowForge value of each side is compared:
new / old, and for a cost (µs, ms, x) the other way round, so a ratio
below 1 is always "new is worse". A hot-path figure more than 10% worse is
flagged. The section is appended to RESULTS.md (``--no-record``: printed only).
``--new`` checks out a second commit the same way instead of this tree: one
change measured alone (an issue's own commits against their parent), not
everything that landed since.
Scripts that exist only in the new tree (new engines) have no old column.
``--same-scripts`` runs this tree's scripts on both sides (each against its own
sql/ and pyfacade/), so a fix to a benchmark script measures both commits the
same way, a ``--new`` commit's too.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

import common  # noqa: E402
from run_all import SCRIPTS  # noqa: E402

# Figures on the hot path (issue 10: none may be more than 10% worse).
HOT = ("claim", "batch", "dag", "latency", "history", "push")
# Units where a larger number is worse.
COSTS = ("us", "ms", "x", "s")


def run_script(tree: Path, file: str, out: Path, quick: bool, scripts: Path | None = None) -> int:
    """Run one script against tree's sql/ and pyfacade/; the script itself from scripts
    (another tree's benchmarks/) when given, else from tree's own."""
    env = dict(os.environ, FF_BENCH_OUT=str(out), FLOWFORGE_SQL_DIR=str(tree / "sql"),
               PYTHONPATH=str(tree / "pyfacade") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    if quick:
        env["FF_BENCH_QUICK"] = "1"
    bench = scripts or tree / "benchmarks"
    proc = subprocess.run([sys.executable, str(bench / file)], cwd=bench, env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        tail = " ".join(proc.stderr.strip().splitlines()[-2:])
        print(f"    {tree.name}/{file}: exit {proc.returncode} {tail}", flush=True)
    return proc.returncode


def figures(path: Path) -> dict[tuple[str, str], list[dict]]:
    found: dict[tuple[str, str], list[dict]] = {}
    for line in path.read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            found.setdefault((r["script"], r["name"]), []).append(r)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", default="f3e42c7", help="the older commit (default: the last landed one before issue 10)")
    parser.add_argument("--new", default=None, help="the newer commit (default: this tree as it is)")
    parser.add_argument("--only", default="claim,batch,dag,latency,history,push",
                        help="comma-separated script keys of run_all.py")
    parser.add_argument("--rounds", type=int, default=2, help="alternating old/new runs of each script")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-record", action="store_true")
    parser.add_argument("--same-scripts", action="store_true",
                        help="run this tree's benchmark scripts on both sides (each side its own sql/ and "
                             "pyfacade/): a fix to a script measures both commits the same way, --new's too")
    args = parser.parse_args()
    chosen = [s for s in SCRIPTS if s[0] in args.only.split(",")]
    started = dt.datetime.now(dt.timezone.utc)
    info = common.machine_info()
    with tempfile.TemporaryDirectory() as tmp:
        old_tree = Path(tmp) / "old"
        subprocess.run(["git", "worktree", "add", "--detach", str(old_tree), args.old], cwd=REPO, check=True,
                       capture_output=True)
        new_tree = REPO
        if args.new:
            new_tree = Path(tmp) / "new"
            subprocess.run(["git", "worktree", "add", "--detach", str(new_tree), args.new], cwd=REPO, check=True,
                           capture_output=True)
        try:
            old_out, new_out = Path(tmp) / "old.jsonl", Path(tmp) / "new.jsonl"
            old_out.touch()
            new_out.touch()
            for key, file, what, _ in chosen:
                for r in range(args.rounds):
                    print(f"{key} round {r + 1}/{args.rounds}: old, new", flush=True)
                    scripts = HERE if args.same_scripts else None
                    if ((scripts or old_tree / "benchmarks") / file).exists():
                        run_script(old_tree, file, old_out, args.quick, scripts)
                    if ((scripts or new_tree / "benchmarks") / file).exists():
                        run_script(new_tree, file, new_out, args.quick, scripts)
            old, new = figures(old_out), figures(new_out)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(old_tree)], cwd=REPO, capture_output=True)
            if args.new:
                subprocess.run(["git", "worktree", "remove", "--force", str(new_tree)], cwd=REPO, capture_output=True)

    old_rev = subprocess.run(["git", "rev-parse", "--short", args.old], cwd=REPO, capture_output=True,
                             text=True).stdout.strip()
    new_rev = subprocess.run(["git", "rev-parse", "--short", args.new or "HEAD"], cwd=REPO, capture_output=True,
                             text=True).stdout.strip()
    lines = [f"## {started:%Y-%m-%d %H:%M} UTC — side by side: {old_rev} (old) vs {new_rev} (new), "
             f"{args.rounds} alternating runs per script{' (quick)' if args.quick else ''}"
             f"{'; both sides run this tree' + chr(39) + 's scripts' if args.same_scripts else ''}", "",
             f"- machine: {info.get('cpu', '?')}, {info.get('cores')} cores, load average at start "
             f"{info.get('loadavg', '?')} (shared)", f"- PostgreSQL: {info.get('postgresql')}", "",
             "| script | figure | old | new | new vs old | hot path |", "|---|---|---|---|---|---|"]
    worst = []
    for (script, name), runs in sorted(new.items()):
        unit = runs[0]["unit"]
        new_v = statistics.median(r["value"] for r in runs if r["value"] is not None) if runs else None
        olds = old.get((script, name), [])
        old_v = statistics.median(r["value"] for r in olds if r["value"] is not None) if olds else None
        rel = None
        if old_v and new_v:
            rel = (old_v / new_v) if unit in COSTS else (new_v / old_v)
        hot = script in HOT
        flag = ""
        if hot and rel is not None:
            flag = "❌ > 10% worse" if rel < 0.9 else "ok"
            if rel < 0.9:
                worst.append(f"{script}: {name}")
        fmt = lambda v: "—" if v is None else (f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}") + f" {unit}"
        lines.append(f"| {script} | {name} | {fmt(old_v)} | {fmt(new_v)} | "
                     f"{'—' if rel is None else f'{rel:.2f}'} | {flag or '—'} |")
    lines += ["", "new vs old: above 1 is better (a cost is inverted); hot path: issue 10's rule, at most 10% worse.",
              "Worse than 10% on the hot path: " + (", ".join(worst) if worst else "none"), ""]
    section = "\n".join(lines) + "\n"
    print(section)
    if not args.no_record:
        with (HERE / "RESULTS.md").open("a", encoding="utf-8") as fh:
            fh.write(section)
    sys.exit(1 if worst else 0)


if __name__ == "__main__":
    main()
