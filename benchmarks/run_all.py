"""Run every FlowForge benchmark, show progress, append the figures to RESULTS.md and draw charts.

usage: python benchmarks/run_all.py [--quick] [--only claim,dag,...] [--no-record]

Each script runs as a subprocess with FF_BENCH_OUT pointing at a JSON-lines
file; its figure lines are shown as they come.  At the end: one section
appended to benchmarks/RESULTS.md (date, commit, machine, PostgreSQL version
and settings, every figure with its baseline, ratio and target, links to the
charts) and PNG charts in benchmarks/charts/ (matplotlib, from the
benchmark venv benchmarks/.peers-venv).  Exits non-zero when a script could
not run (a missed target is a result, not a failure).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import common  # noqa: E402

SCRIPTS = [  # (key, file, what, rough share of the budget in seconds, full run)
    ("claim", "bench_claim.py", "claim+complete vs bare SKIP LOCKED", 45),
    ("batch", "bench_batch.py", "batched claim + complete_many vs bare batch-10", 80),
    ("dag", "bench_dag.py", "diamond, fan-out 10/50/200 vs single-task runs", 110),
    ("latency", "bench_latency.py", "enqueue -> handler start, SDK vs raw LISTEN floor", 35),
    ("history", "bench_history.py", "claim+complete with 1M history rows vs empty", 330),
    ("retention", "bench_retention.py", "claim+complete with 10M partitioned history rows vs empty; purging a month", 900),
    ("push", "bench_push.py", "outbox -> RabbitMQ via daemon vs raw pika", 30),
    ("peers", "bench_peers.py", "10k no-op drain: Procrastinate, PgQueuer, Graphile", 170),
    ("fanout", "bench_fanout.py", "map child vs lone work item, 1k and 10k elements", 90),
    ("engines", "bench_engines.py", "graph step and machine event vs one DAG task's claim+complete", 50),
    ("enqueue", "bench_enqueue.py", "bulk enqueue: start_runs of 100k runs vs Graphile add_jobs", 90),
    ("flow", "bench_flow.py", "flow control: no limit vs before it, key limit vs none", 90),
    ("profile", "profile_claim.py", "where one claim + complete spends its time", 15),
]
BUDGET = 15 * 60


def fmt_secs(s: float) -> str:
    return f"{int(s) // 60:02d}:{int(s) % 60:02d}"


def bar(done: float, total: float, width: int = 24) -> str:
    k = min(width, int(width * done / total)) if total else 0
    return "█" * k + "░" * (width - k)


def run_script(index: int, count: int, key: str, file: str, what: str, out: Path, t_start: float,
               expected_before: float, expected_total: float, quick: bool) -> int:
    env = {**os.environ, "FF_BENCH_OUT": str(out), "PYTHONUNBUFFERED": "1"}
    if quick:
        env["FF_BENCH_QUICK"] = "1"
    print(f"\n[{index}/{count}] {key}: {what}", flush=True)
    proc = subprocess.Popen([sys.executable, str(HERE / file)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, cwd=str(HERE.parent))
    status = {"last": ""}
    tty = sys.stdout.isatty()
    lock = threading.Lock()

    def show(line: str, figure: bool) -> None:
        elapsed = time.monotonic() - t_start
        head = f"{bar(expected_before, expected_total)} {fmt_secs(elapsed)}"
        with lock:
            if tty:
                sys.stdout.write("\r\033[K")
            if figure:
                print(f"  = {line}", flush=True)
            else:
                status["last"] = line.strip()
                if tty:
                    sys.stdout.write(f"  {head} {status['last'][:100]}")
                    sys.stdout.flush()
                else:
                    print(f"  {head} {status['last']}", flush=True)

    def pump_err() -> None:
        for line in proc.stderr:
            line = line.rstrip()
            if line.startswith("  · "):
                show(line[4:], False)
            elif line:
                with lock:
                    if tty:
                        sys.stdout.write("\r\033[K")
                    print(f"  ! {line[:300]}", flush=True)

    err_thread = threading.Thread(target=pump_err, daemon=True)
    err_thread.start()
    for line in proc.stdout:
        show(line.rstrip(), True)
    proc.wait()
    err_thread.join(5)
    if tty:
        sys.stdout.write("\r\033[K")
    print(f"  {key} finished in {fmt_secs(time.monotonic() - t_start)} total elapsed"
          + ("" if proc.returncode == 0 else f" — COULD NOT RUN (exit {proc.returncode})"), flush=True)
    return proc.returncode


def git_commit() -> str:
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", "sql", "pyfacade"],
                               cwd=HERE.parent, capture_output=True, text=True).stdout.strip()
        return rev + (" (sql/ or pyfacade/ with uncommitted changes)" if dirty else "")
    except OSError:
        return "unknown"


def draw_charts(figures: Path, stamp: str) -> list[str]:
    from bench_peers import ensure_venv

    python, problem = ensure_venv()
    if python is None or problem:
        print(f"charts skipped: {problem}")
        return []
    r = subprocess.run([python, str(HERE / "charts.py"), str(figures), str(HERE / "charts"), stamp],
                       capture_output=True, text=True)
    if r.returncode != 0:
        print("charts failed: " + " ".join(r.stderr.strip().splitlines()[-2:]))
        return []
    return [line.strip() for line in r.stdout.splitlines() if line.strip()]


def record(records: list[dict], info: dict, started: dt.datetime, secs: float, codes: dict, charts: list[str],
           quick: bool) -> str:
    settings = info.get("pg_settings", {})
    lines = [
        f"## {started:%Y-%m-%d %H:%M} UTC — `make bench`{' (quick)' if quick else ''}, commit {git_commit()}",
        "",
        f"- machine: {info.get('host')} — {info.get('cpu', '?')}, {info.get('cores')} cores, "
        f"{info.get('memory_gib', '?')} GiB, Linux {info.get('kernel')}, load average at start {info.get('loadavg', '?')} "
        "(shared with colleagues' test runs)",
        f"- PostgreSQL: {info.get('postgresql')}",
        "- settings: " + ", ".join(f"{k}={v}" for k, v in settings.items() if v not in ("",)),
        f"- Python {info.get('python')}; whole run {fmt_secs(secs)}",
        "",
        "| script | figure | FlowForge | baseline | ratio | target |",
        "|---|---|---|---|---|---|",
    ]

    def num(v, unit):
        if v is None:
            return "—"
        return (f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}") + f" {unit}"

    for r in records:
        if r["script"] == "profile_claim":
            continue
        target = "—" if not r.get("target") else f"{r['target']} {'✅ met' if r.get('met') else '❌ missed'}"
        base = "—" if r.get("baseline") is None else f"{r['baseline']}: {num(r.get('baseline_value'), r['unit'])}"
        ratio = "—" if r.get("ratio") is None else f"{r['ratio']:.2f}"
        lines.append(f"| {r['script']} | {r['name']} | {num(r['value'], r['unit'])} | {base} | {ratio} | {target} |")
    failed = [k for k, code in codes.items() if code != 0]
    if failed:
        lines += ["", "Could not run: " + ", ".join(failed)]
    lines += ["", "<details><summary>Output lines, as printed (with notes)</summary>", "", "```"]
    lines += [r["line"] for r in records]
    lines += ["```", "", "</details>", ""]
    if charts:
        lines += ["Charts: " + " · ".join(f"[{Path(p).stem}](charts/{Path(p).name})" for p in charts), ""]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes and fewer rounds (a smoke run)")
    parser.add_argument("--only", default="", help="comma-separated keys: " + ",".join(s[0] for s in SCRIPTS))
    parser.add_argument("--no-record", action="store_true", help="do not append to RESULTS.md or draw charts")
    args = parser.parse_args()
    chosen = [s for s in SCRIPTS if not args.only or s[0] in args.only.split(",")]
    started = dt.datetime.now(dt.timezone.utc)
    info = common.machine_info()
    print(f"FlowForge benchmarks — {started:%Y-%m-%d %H:%M} UTC — {len(chosen)} scripts, budget {fmt_secs(BUDGET)}")
    print(f"  {info.get('cpu', '?')}, {info.get('cores')} cores, load {info.get('loadavg', '?')}")
    print(f"  {info.get('postgresql')}")
    # The peers' venv (Procrastinate, PgQueuer, matplotlib) before the clock of any benchmark starts.
    if any(k in ("peers",) for k, *_ in chosen) or not args.no_record:
        from bench_peers import ensure_venv

        ensure_venv()
    t0 = time.monotonic()
    expected_total = sum(s[3] for s in chosen)
    expected_before = 0.0
    codes: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "figures.jsonl"
        out.touch()
        for i, (key, file, what, share) in enumerate(chosen, 1):
            codes[key] = run_script(i, len(chosen), key, file, what, out, t0, expected_before, expected_total,
                                    args.quick)
            expected_before += share
        secs = time.monotonic() - t0
        records = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
        print(f"\nall done in {fmt_secs(secs)} ({len(records)} figures)"
              + ("" if secs <= BUDGET else f" — OVER the {fmt_secs(BUDGET)} budget"))
        if not args.no_record:
            stamp = f"{started:%Y-%m-%d %H:%M} UTC"
            charts = draw_charts(out, stamp)
            section = record(records, info, started, secs, codes, charts, args.quick)
            results = HERE / "RESULTS.md"
            if not results.exists():
                results.write_text("# FlowForge benchmark results\n\nOne section per `make bench` run, newest last. "
                                   "See README.md for how to read the figures.\n\n")
            with results.open("a", encoding="utf-8") as fh:
                fh.write(section)
            print(f"appended to {results.relative_to(HERE.parent)}; {len(charts)} charts in benchmarks/charts/")
    sys.exit(1 if any(code != 0 for code in codes.values()) else 0)


if __name__ == "__main__":
    main()
