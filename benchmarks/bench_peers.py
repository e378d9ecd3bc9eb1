"""(7) Peers, same machine, same run: draining 10,000 no-op jobs.

* FlowForge: the worker SDK (``flowforge.Worker``, concurrency 10, no-op
  handler) on 10,000 pre-enqueued single-task runs, measured once before the
  peers (FF_BENCH_PEER_FF_TWICE=1: also after, median of the two); plus FlowForge's batched raw loop
  (claim 50 + complete_many, 4 threads) for the batched comparison.
* Procrastinate (psycopg 3, concurrency 10) and PgQueuer (asyncpg, batches of
  10), installed from PyPI into ``benchmarks/.peers-venv`` (created on demand).
* Graphile Worker (Node.js, from npm into ``benchmarks/.node``), concurrency
  10, unbatched and batched (localQueue 500, completeJobBatchDelay 0), logging
  errors only.
Every peer gets its own database; jobs are enqueued before timing starts and
each drain is timed from the worker's start to its last completion.  A peer
whose package cannot be installed is skipped with a message.  Procrastinate
is stopped after FF_BENCH_PEER_TIMEOUT seconds (default 45) and its rate is
taken over what it finished.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import common as c
from bench_batch import ff_batch_step, sdk_batches

N = int(os.environ.get("FF_BENCH_PEER_JOBS", c.scale(10_000, 2_000)))
# Graphile Worker batched holds a local queue of 500 jobs; the SDK's like-for-like is prefetch=500.
LOCAL_QUEUE = 500
TIMEOUT = float(os.environ.get("FF_BENCH_PEER_TIMEOUT", "45"))
VENV = c.HERE / ".peers-venv"
NODE_DIR = c.HERE / ".node"
PEERS = c.HERE / "peers"
PY_PACKAGES = ["procrastinate", "pgqueuer", "asyncpg", "matplotlib"]


def ensure_venv() -> tuple[str | None, str]:
    """The peers' Python, creating the venv and installing what is missing; (None, why) when impossible."""
    python = VENV / "bin" / "python"
    try:
        if not python.exists():
            c.progress("creating benchmarks/.peers-venv")
            subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True, capture_output=True, timeout=120)
        missing = [p for p in PY_PACKAGES
                   if subprocess.run([str(python), "-c", f"import {p}"], capture_output=True).returncode != 0]
        if missing:
            c.progress(f"pip install {' '.join(missing)} into benchmarks/.peers-venv")
            r = subprocess.run([str(python), "-m", "pip", "install", "-q", *missing], capture_output=True, text=True,
                               timeout=600)
            if r.returncode != 0:
                return str(python), "pip install failed: " + (r.stderr.strip().splitlines() or ["?"])[-1]
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"cannot create the peers venv: {exc}"
    return str(python), ""


def ensure_graphile() -> str:
    """'' when graphile-worker is installed under benchmarks/.node, else why not."""
    if (NODE_DIR / "node_modules" / "graphile-worker" / "package.json").exists():
        return ""
    try:
        NODE_DIR.mkdir(exist_ok=True)
        (NODE_DIR / "package.json").write_text('{"name": "ffbench-peers", "private": true, "version": "0.0.0"}\n')
        c.progress("npm install graphile-worker into benchmarks/.node")
        r = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "graphile-worker"], cwd=NODE_DIR,
                           capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"npm not usable: {exc}"
    if r.returncode != 0:
        return "npm install graphile-worker failed: " + (r.stderr.strip().splitlines() or ["?"])[-1]
    return ""


def url_of(dsn: str) -> str:
    name = dsn.split("dbname=")[1]
    return f"postgres://{c.PG_USER}@{c.PG_HOST}:{c.PG_PORT}/{name}"


def run_peer(label: str, cmd: list[str], timeout: float) -> tuple[float | None, str]:
    """(jobs/s, note) of one peer drain in its own fresh database."""
    dsn = c.create_database(label)
    try:
        env = {**os.environ, "NODE_PATH": str(NODE_DIR / "node_modules")}
        r = subprocess.run(cmd + [url_of(dsn)] + [str(a) for a in cmd_args[label]], capture_output=True, text=True,
                           timeout=timeout, env=env, cwd=str(c.HERE))
        if r.returncode != 0:
            return None, "failed: " + " ".join((r.stderr.strip().splitlines() or ["?"])[-2:])[:300]
        result = json.loads(r.stdout.strip().splitlines()[-1])
        note = ""
        if result["jobs"] < N:
            note = f"stopped after {result['seconds']:.0f}s with {result['jobs']:,} of {N:,} done; rate over those"
        return result["jobs"] / result["seconds"], note
    except subprocess.TimeoutExpired:
        return None, f"did not finish within {timeout:.0f}s"
    finally:
        c.drop_database(dsn)


cmd_args: dict[str, list] = {}


def flowforge_sdk_drain(prefetch: int | None = None) -> float:
    import flowforge

    dsn = c.flowforge_database("peers_ff")
    c.define(dsn, c.SINGLE_SPEC)
    c.start_runs(dsn, "single", N)
    c.checkpoint(dsn)
    worker = flowforge.Worker(["default"], concurrency=10, dsn=dsn, grace_period=5, prefetch=prefetch)
    worker.register("work", lambda ctx, data: None)
    t0 = time.perf_counter()
    worker.start()
    deadline = time.monotonic() + 300
    while worker.stats["completed"] < N and time.monotonic() < deadline:
        time.sleep(0.005)
    elapsed = time.perf_counter() - t0
    done = worker.stats["completed"]
    worker.stop()
    worker.join(10)
    c.drop_database(dsn)
    return done / elapsed


def flowforge_batched_drain() -> float:
    dsn = c.flowforge_database("peers_ffb")
    c.define(dsn, c.SINGLE_SPEC)
    c.start_runs(dsn, "single", N)
    c.checkpoint(dsn)
    done, secs = c.drain(dsn, ff_batch_step(50), seconds=300)
    c.drop_database(dsn)
    return done / secs


def main() -> None:
    python, venv_problem = ensure_venv()
    graphile_problem = ensure_graphile()
    results: dict[str, tuple[float | None, str]] = {}
    ff_runs = [flowforge_sdk_drain()]
    c.progress(f"FlowForge SDK: {ff_runs[-1]:,.0f} jobs/s")
    sdk_local = flowforge_sdk_drain(LOCAL_QUEUE)
    c.progress(f"FlowForge SDK, prefetch {LOCAL_QUEUE}: {sdk_local:,.0f} jobs/s")
    results["FlowForge batched loop"] = (flowforge_batched_drain(), "raw loop: claim 50 + complete_many, 4 threads")
    c.progress(f"FlowForge batched loop: {results['FlowForge batched loop'][0]:,.0f} jobs/s")

    peers = []
    if python and not venv_problem:
        peers.append(("Procrastinate", "procrastinate", [python, str(PEERS / "procrastinate_drain.py")], [N, TIMEOUT]))
        peers.append(("PgQueuer", "pgqueuer", [python, str(PEERS / "pgqueuer_drain.py")], [N]))
    else:
        for name in ("Procrastinate", "PgQueuer"):
            results[name] = (None, f"skipped: {venv_problem}")
    if not graphile_problem:
        peers.append(("Graphile Worker", "graphile", ["node", str(PEERS / "graphile_drain.js")], [N, 0, 10]))
        peers.append(("Graphile Worker batched", "graphile_b", ["node", str(PEERS / "graphile_drain.js")], [N, 1, 10]))
    else:
        for name in ("Graphile Worker", "Graphile Worker batched"):
            results[name] = (None, f"skipped: {graphile_problem}")
    for name, label, cmd, args in peers:
        cmd_args[label] = args
        results[name] = run_peer(label, cmd, TIMEOUT + 60)
        rate, note = results[name]
        c.progress(f"{name}: " + (f"{rate:,.0f} jobs/s" if rate else note))
    if os.environ.get("FF_BENCH_PEER_FF_TWICE"):
        ff_runs.append(flowforge_sdk_drain())
        c.progress(f"FlowForge SDK (again): {ff_runs[-1]:,.0f} jobs/s")
    ff = c.median(ff_runs)

    labels, values = ["FlowForge SDK"], [ff]
    for name, (rate, note) in results.items():
        if rate is not None:
            labels.append(name)
            values.append(rate)
    chart = {"kind": "bars", "labels": labels, "values": values, "unit": f"jobs/s draining {N:,} no-op jobs"}
    c.figure("FlowForge SDK drain", ff, "jobs/s", note=f"{N:,} no-op tasks, concurrency 10, "
             + ("one drain, before the peers" if len(ff_runs) == 1 else f"median of {len(ff_runs)} drains, before and after the peers"), chart=chart)
    for name, (rate, note) in results.items():
        if name == "FlowForge batched loop":
            continue
        if rate is None:
            c.figure(f"{name} drain", None, "jobs/s", note=note)
            continue
        c.figure(f"FlowForge SDK vs {name}", ff, "jobs/s", baseline=name, baseline_value=rate, ratio=ff / rate,
                 note="ratio = FlowForge SDK / peer" + (f"; {name}: {note}" if note else ""))
    batched, _ = results["FlowForge batched loop"]
    g_rate, g_note = results.get("Graphile Worker batched", (None, "not run"))
    if g_rate is not None:
        c.figure(f"FlowForge SDK prefetch {LOCAL_QUEUE} vs Graphile Worker batched", sdk_local, "jobs/s",
                 baseline="Graphile Worker batched", baseline_value=g_rate, ratio=sdk_local / g_rate,
                 target=">= 0.5 and >= 10,000 jobs/s", met=sdk_local / g_rate >= 0.5 and sdk_local >= 10_000,
                 note=f"flowforge.Worker(concurrency=10, prefetch={LOCAL_QUEUE}): a local queue like Graphile's "
                      f"localQueue {LOCAL_QUEUE}; one drain of {N:,}")
    else:
        c.figure(f"FlowForge SDK prefetch {LOCAL_QUEUE} drain", sdk_local, "jobs/s", note=f"Graphile: {g_note}")
    if g_rate is not None:
        c.figure("FlowForge batched vs Graphile Worker batched", batched, "jobs/s", baseline="Graphile Worker batched",
                 baseline_value=g_rate, ratio=batched / g_rate, target=">= 1 (ahead)", met=batched >= g_rate,
                 note="FlowForge raw loop claim 50 + complete_many, 4 threads; the SDK drain above is "
                      + ("also batched (it completes through complete_many)" if sdk_batches() else
                         "not batched (the SDK has no complete_many path)"))
    else:
        c.figure("FlowForge batched loop drain", batched, "jobs/s", note=f"Graphile Worker batched: {g_note}")


if __name__ == "__main__":
    main()
