"""(4) Latency: enqueue -> handler start, through the worker SDK, on an idle system.

An enqueuer commits ``start_run('single')`` at a steady rate (50/s by
default); for each run the time the commit returned to the enqueuer is the
start of the interval, and the time the handler (or raw loop) got the task is
its end — one process, one monotonic clock (``time.perf_counter``).

* subject: ``flowforge.Worker(["default"], concurrency=4)`` — it LISTENs on
  flowforge_ready and claims when woken; the handler records its start;
* floor: a raw psycopg loop — one connection LISTENs, another claims
  (batch 4) on each notification until empty and completes what it took.
Rounds alternate floor / SDK; percentiles are over all samples of a side.
Targets: SDK p50 <= 3 ms, p99 <= 10 ms.
"""

from __future__ import annotations

import os
import threading
import time

import common as c

RATE = float(os.environ.get("FF_BENCH_RATE", "50"))


def percentile(values: list[float], p: float) -> float:
    values = sorted(values)
    if not values:
        return float("nan")
    k = (len(values) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def enqueue_steadily(dsn: str, seconds: float, committed: dict) -> int:
    """start_run at RATE per second for ``seconds``; committed[run_id] = perf_counter when the commit returned."""
    n = int(seconds * RATE)
    with c.connect(dsn) as conn:
        t0 = time.perf_counter()
        for i in range(n):
            delay = t0 + i / RATE - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            run_id = conn.execute("SELECT flowforge.start_run('single', '{}'::jsonb)", prepare=True).fetchone()[0]
            committed[run_id] = time.perf_counter()
    return n


def wait_for(started: dict, n: int, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while len(started) < n and time.monotonic() < deadline:
        time.sleep(0.01)


def latencies(committed: dict, started: dict) -> list[float]:
    return [(started[r] - t) * 1000 for r, t in committed.items() if r in started]


def sdk_round(dsn: str, seconds: float) -> tuple[list[float], int]:
    import flowforge

    started: dict = {}
    worker = flowforge.Worker(["default"], concurrency=4, dsn=dsn, grace_period=2)

    @worker.task("work")
    def work(ctx, data):
        started[ctx.workflow_run_id] = time.perf_counter()

    worker.start()
    time.sleep(1.0)  # connected and listening
    warm: dict = {}
    enqueue_steadily(dsn, 0.5, warm)
    wait_for(started, len(warm))
    started.clear()
    committed: dict = {}
    n = enqueue_steadily(dsn, seconds, committed)
    wait_for(started, n)
    worker.stop()
    worker.join(5)
    return latencies(committed, started), n - len(started.keys() & committed.keys())


def raw_round(dsn: str, seconds: float) -> tuple[list[float], int]:
    started: dict = {}
    stop = threading.Event()
    ready = threading.Event()

    def loop() -> None:
        listen, work = c.connect(dsn), c.connect(dsn)
        listen.execute("LISTEN flowforge_ready")
        ready.set()
        while not stop.is_set():
            for _ in listen.notifies(timeout=0.2, stop_after=1):
                pass
            while True:
                rows = work.execute("SELECT * FROM flowforge.claim(ARRAY['default'], 'raw', '30 seconds', 4)",
                                    prepare=True).fetchall()
                now = time.perf_counter()
                for row in rows:
                    started[row[1]] = now
                for row in rows:
                    work.execute(c.FF_COMPLETE, [row[0], row[4]], prepare=True)
                if not rows:
                    break
        listen.close()
        work.close()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    ready.wait(5)
    warm: dict = {}
    enqueue_steadily(dsn, 0.5, warm)
    wait_for(started, len(warm))
    started.clear()
    committed: dict = {}
    n = enqueue_steadily(dsn, seconds, committed)
    wait_for(started, n)
    stop.set()
    thread.join(5)
    return latencies(committed, started), n - len(started.keys() & committed.keys())


def main() -> None:
    n_rounds = c.rounds(2)
    seconds = float(os.environ.get("FF_BENCH_SECONDS", "2.5" if c.QUICK else "5"))
    dsn = c.flowforge_database("latency")
    c.define(dsn, c.SINGLE_SPEC)
    raw, sdk = [], []
    missing = 0
    for r in range(n_rounds):
        c.checkpoint(dsn)
        lat, miss = raw_round(dsn, seconds)
        raw += lat
        missing += miss
        c.checkpoint(dsn)
        lat, miss = sdk_round(dsn, seconds)
        sdk += lat
        missing += miss
        c.progress(f"round {r + 1}/{n_rounds}: raw p50 {percentile(raw, 50):.2f} ms, SDK p50 {percentile(sdk, 50):.2f} ms")
    note = (f"{RATE:g}/s for {seconds * n_rounds:g}s per side, {len(sdk)} SDK / {len(raw)} raw samples, "
            f"{n_rounds} alternating rounds")
    if missing:
        note += f"; {missing} tasks not started within 5 s were left out"
    chart = {"kind": "latency", "labels": ["raw LISTEN+claim", "worker SDK"],
             "p50": [percentile(raw, 50), percentile(sdk, 50)], "p99": [percentile(raw, 99), percentile(sdk, 99)],
             "unit": "ms"}
    for p, target in ((50, 3.0), (99, 10.0)):
        value, floor = percentile(sdk, p), percentile(raw, p)
        c.figure(f"enqueue->handler start p{p}", value, "ms", baseline="raw LISTEN+claim floor", baseline_value=floor,
                 ratio=value / floor if floor else None, target=f"<= {target:g} ms", met=value <= target, note=note,
                 chart=chart if p == 50 else None)


if __name__ == "__main__":
    main()
