"""(2) Batched mode: FlowForge claim of N + complete_many vs the bare batch-of-10 queue.

Subject: FlowForge ``claim(..., batch => N)`` (N = 50 by default) and one
``complete_many`` for the whole batch — two transactions per N tasks.  When the
worker SDK batches its completions (it calls ``complete_many``), the drain goes
end to end through ``flowforge.Worker`` with no-op handlers; otherwise it is a
raw client loop (4 threads, prepared statements) and the output line says so.
Baseline: the bare table, claiming 10 per transaction and completing 10 per
transaction, same 4-thread loop.  Also: FlowForge with batches of 10, for a
like-for-like figure.  Timed, alternating rounds; medians.
"""

from __future__ import annotations

import inspect
import os
import threading
import time

import common as c

TARGET_TASKS = 10_000
BATCH = int(os.environ.get("FF_BENCH_BATCH", "50"))


def sdk_batches() -> bool:
    """Does the worker SDK complete in batches (complete_many)?"""
    try:
        from flowforge import queries, worker
    except Exception:  # noqa: BLE001 - an SDK that does not import cannot be used either
        return False
    return "complete_many" in inspect.getsource(worker).lower() or hasattr(queries, "COMPLETE_MANY")


def own_workflow(dsn: str, queue: str) -> str:
    """A single-task workflow on a queue of its own, so each subject drains only its own backlog
    (on a shared queue one subject completes another's runs and the other runs dry)."""
    c.define(dsn, {"name": queue, "tasks": [{"key": "work", "queue": queue}]})
    return queue


def ff_batch_step(n: int, queue: str = "default"):
    claim = c.FF_CLAIM_N.replace("ARRAY['default']", "ARRAY[%s]")

    def step(conn, i):
        rows = conn.execute(claim, [queue, f"batch-{i}", n], prepare=True).fetchall()
        if not rows:
            return 0
        done = conn.execute(c.FF_COMPLETE_MANY, [[r[0] for r in rows], [r[4] for r in rows]],
                            prepare=True).fetchone()[0]
        return done
    return step


def bare_batch_step(conn, i):
    ids = [r[0] for r in conn.execute(c.BARE_CLAIM_N, [10], prepare=True).fetchall()]
    if not ids:
        return 0
    conn.execute(c.BARE_DONE_N, [ids], prepare=True)
    return len(ids)


class SdkSubject(c.Subject):
    """The worker SDK draining the backlog with no-op handlers for one timed round."""

    def __init__(self, dsn: str, concurrency: int = BATCH):
        self.queue = own_workflow(dsn, f"sdk{concurrency}")
        super().__init__(f"flowforge SDK c{concurrency}", dsn, None, lambda n: c.start_runs(dsn, self.queue, n),
                         first_guess=5000)
        self.concurrency = concurrency

    def round(self, seconds: float) -> float:
        # The worker drains for a fixed time, so a queue that runs dry inside it would measure the
        # backlog, not the worker, and the next round (sized by that rate) would run drier still.
        # The backlog covers the untimed start and the round at the best rate seen, and a round
        # whose queue ran dry is run again with twice the backlog.
        for _ in range(4):
            rate = self._timed(seconds)
            if self.backlog > 0:
                self.rates.append(rate)
                return rate
            self.guess = max(self.guess, int(rate * (seconds + 0.5))) * 2
        self.rates.append(rate)
        return rate

    def _timed(self, seconds: float) -> float:
        import flowforge

        want = int(max([self.guess] + [r * (seconds + 0.5) * 1.5 for r in self.rates])) + 1
        if self.backlog < want:
            self.enqueue(want - self.backlog)
            self.backlog += want - self.backlog
        c.checkpoint(self.dsn)
        worker = flowforge.Worker([self.queue], concurrency=self.concurrency, dsn=self.dsn, poll_interval=0.05,
                                  grace_period=5)
        worker.register("work", lambda ctx, data: None)
        worker.start()
        time.sleep(0.5)  # connected, listening, first claims made: not timed
        n0, t0 = worker.stats["completed"], time.perf_counter()
        time.sleep(seconds)
        n = worker.stats["completed"] - n0
        elapsed = time.perf_counter() - t0
        worker.stop()
        worker.join(10)
        self.backlog -= worker.stats["completed"]
        return n / elapsed


def main() -> None:
    n_rounds, seconds = c.rounds(3), c.round_seconds(3.0, 2.0)  # start_run enqueue costs more than the drain
    dsn = c.flowforge_database("batch")
    c.bare_setup(dsn)
    via_sdk = sdk_batches()
    bare = c.Subject("bare batch-10", dsn, bare_batch_step, lambda n: c.bare_enqueue(dsn, n), first_guess=20000)
    if via_sdk:
        subject = SdkSubject(dsn)
        how = (f"end to end through flowforge.Worker (concurrency {BATCH}, so claims of up to {BATCH}; completions "
               f"batched by the SDK into complete_many; no-op handlers; timed from 0.5 s after start)")
    else:
        raw = own_workflow(dsn, f"batch{BATCH}")
        subject = c.Subject(f"flowforge batch-{BATCH}", dsn, ff_batch_step(BATCH, raw),
                            lambda n: c.start_runs(dsn, raw, n), first_guess=5000)
        how = (f"raw client loop: the worker SDK has no batched completion (no complete_many call), "
               f"so claim({BATCH}) + complete_many from 4 threads")
    raw10 = own_workflow(dsn, "batch10")
    ff10 = c.Subject("flowforge batch-10", dsn, ff_batch_step(10, raw10), lambda n: c.start_runs(dsn, raw10, n),
                     first_guess=3000)
    # The same SDK at concurrency 10, side by side: more capacity must never make it slower (issue 17).
    sdk10 = SdkSubject(dsn, 10) if via_sdk else None
    c.alternate([bare, subject, ff10] + ([sdk10] if sdk10 else []), n_rounds, seconds)
    ratio = subject.median / bare.median
    c.figure(f"batched claim {BATCH} + complete_many", subject.median, "tasks/s", baseline="bare batch-of-10",
             baseline_value=bare.median, ratio=ratio, target=f">= {TARGET_TASKS:,} tasks/s",
             met=subject.median >= TARGET_TASKS, note=how + f"; median of {n_rounds} alternating {seconds:g}s rounds",
             chart={"kind": "bars", "labels": ["bare batch-10", ("FlowForge SDK, claim " if via_sdk else "FlowForge batch-") + str(BATCH),
                               "FlowForge batch-10 loop"],
                    "values": [bare.median, subject.median, ff10.median],
                    "rounds": [bare.rates, subject.rates, ff10.rates], "unit": "tasks/s"})
    if sdk10 is not None:
        c.figure(f"SDK throughput at concurrency {BATCH} vs at concurrency 10", subject.median, "tasks/s",
                 baseline="concurrency 10", baseline_value=sdk10.median, ratio=subject.median / sdk10.median,
                 target=">= 1.0", met=subject.median >= sdk10.median,
                 note=f"flowforge.Worker, no-op handlers, default prefetch; median of {n_rounds} alternating "
                      f"{seconds:g}s rounds")
    ratio10 = ff10.median / bare.median
    c.figure("batched claim 10 + complete_many", ff10.median, "tasks/s", baseline="bare batch-of-10",
             baseline_value=bare.median, ratio=ratio10, note="raw client loop, like-for-like batch size")


if __name__ == "__main__":
    main()
