"""The example workflow behind ``flowforge demo`` and its in-process run.

``nightly-report`` is a small, realistic DAG with fan-out and fan-in::

    extract
      ├─> clean_orders ──┐
      ├─> clean_customers├─> join ─┬─> render_pdf ───────┐
      └─> fetch_rates ───┘         └─> update_dashboard ─┴─> email

``fetch_rates`` fails on its first attempt (a deterministic "flaky API") and
succeeds on the retry, 200 ms later: the retry is FlowForge's, not the
handler's.  The demo migrates, defines the workflow, starts a handful of runs,
runs a ``Worker`` in a thread, calls ``tick()`` like the daemon would, and
reports through a callback so the CLI can draw progress.
"""

from __future__ import annotations

import time
import uuid
import zlib
from dataclasses import dataclass, field
from typing import Callable

from . import db, migrate, queries
from .client import Client
from .worker import Worker

WORKFLOW = "nightly-report"
QUEUE = "demo"  # its own queue, so workers of other workflows in the same database are not disturbed

SPEC = {
    "name": WORKFLOW,
    "description": "Nightly sales report: extract, clean in parallel, join, render and send.",
    "tasks": [
        {"key": "extract", "queue": QUEUE, "description": "read yesterday's orders from the shop database"},
        {"key": "clean_orders", "depends_on": ["extract"], "queue": QUEUE},
        {"key": "clean_customers", "depends_on": ["extract"], "queue": QUEUE},
        {"key": "fetch_rates", "depends_on": ["extract"], "queue": QUEUE, "max_attempts": 3,
         "backoff": "200 milliseconds", "description": "currency rates from a flaky API (fails once)"},
        {"key": "join", "depends_on": ["clean_orders", "clean_customers", "fetch_rates"], "queue": QUEUE},
        {"key": "render_pdf", "depends_on": ["join"], "queue": QUEUE},
        {"key": "update_dashboard", "depends_on": ["join"], "queue": QUEUE},
        {"key": "email", "depends_on": ["render_pdf", "update_dashboard"], "queue": QUEUE},
    ],
}

REGIONS = ("emea", "amer", "apac", "latam", "anz", "nordics", "dach", "iberia", "benelux", "uk")


def _work(ctx, seconds: float) -> None:
    """Simulated work: a deterministic pause per (task, run), 0.1-0.4 s."""
    jitter = zlib.crc32(f"{ctx.task_key}:{ctx.workflow_run_id}".encode()) % 300 / 1000
    time.sleep(seconds + jitter)


def build_worker(dsn: str, *, concurrency: int = 4) -> Worker:
    """A Worker with the demo's handlers (pull, queue ``demo``)."""
    worker = Worker(queues=[QUEUE], concurrency=concurrency, dsn=dsn, lease=15, poll_interval=0.2,
                    grace_period=5, name=f"demo-worker-{uuid.uuid4().hex[:6]}")

    @worker.task("extract")
    def extract(ctx, input):
        _work(ctx, 0.1)
        region = input["run"].get("region", "emea")
        return {"region": region, "orders": 900 + zlib.crc32(region.encode()) % 400}

    @worker.task("clean_orders")
    def clean_orders(ctx, input):
        _work(ctx, 0.1)
        orders = input["deps"]["extract"]["orders"]
        return {"orders": orders - orders // 50, "dropped": orders // 50}

    @worker.task("clean_customers")
    def clean_customers(ctx, input):
        _work(ctx, 0.1)
        return {"customers": input["deps"]["extract"]["orders"] // 3}

    @worker.task("fetch_rates")
    def fetch_rates(ctx, input):
        _work(ctx, 0.05)
        if ctx.attempt == 1:
            raise ConnectionError("rates API timed out (the demo's flaky task: fails on attempt 1)")
        return {"EUR": 1.0, "USD": 1.08, "GBP": 0.86}

    @worker.task("join")
    def join(ctx, input):
        _work(ctx, 0.1)
        deps = input["deps"]
        revenue = round(deps["clean_orders"]["orders"] * 42.5 * deps["fetch_rates"]["USD"], 2)
        return {"revenue_usd": revenue, "customers": deps["clean_customers"]["customers"]}

    @worker.task("render_pdf")
    def render_pdf(ctx, input):
        _work(ctx, 0.15)
        return {"pages": 4, "file": f"report-{input['run'].get('region', 'emea')}.pdf"}

    @worker.task("update_dashboard")
    def update_dashboard(ctx, input):
        _work(ctx, 0.05)
        return {"tiles": 6}

    @worker.task("email")
    def email(ctx, input):
        _work(ctx, 0.05)
        return {"sent_to": f"sales-{input['run'].get('region', 'emea')}@example.com",
                "attachment": input["deps"]["render_pdf"]["file"]}

    return worker


FINISHED = ("succeeded", "failed", "cancelled")


def _progress(run: dict) -> dict:
    """What the progress display needs from one get_run() object."""
    return {"id": run["id"], "state": run["state"], "tasks_total": run["tasks_total"],
            "tasks_done": run["tasks_done"],
            "tasks_running": sum(t["state"] == "running" for t in run["tasks"]),
            "retries": sum(t["attempt"] - 1 for t in run["tasks"])}


@dataclass
class Progress:
    """One snapshot of the demo's runs, for live display."""

    elapsed: float
    runs: list[dict]  # id, state, tasks_total, tasks_done, tasks_running, retries

    @property
    def finished(self) -> int:
        return sum(r["state"] in FINISHED for r in self.runs)


@dataclass
class DemoResult:
    dsn: str
    workflow_version: int
    workflow_created: bool
    run_ids: list[uuid.UUID]
    runs: list[dict] = field(default_factory=list)
    tasks: int = 0
    retries: int = 0
    seconds: float = 0.0
    timed_out: bool = False

    @property
    def succeeded(self) -> int:
        return sum(r["state"] == "succeeded" for r in self.runs)

    @property
    def ok(self) -> bool:
        return bool(self.runs) and self.succeeded == len(self.run_ids)

    def inspect_query(self) -> str:
        run = next((r["id"] for r in self.runs if r.get("retries")), self.run_ids[0])
        return queries.DEMO_INSPECT_RUN.format(run_id=run)

    def psql_command(self) -> str:
        return f'psql "{db.mask_dsn(self.dsn)}" -c "{self.inspect_query()}"'


def run(dsn: str, *, runs: int = 5, concurrency: int = 4, timeout: float = 60.0,
        on_progress: Callable[[Progress], None] | None = None, tick_every: float = 1.0) -> DemoResult:
    """Migrate, define, start ``runs`` runs, work them to the end (or ``timeout``)."""
    migrate.migrate(dsn)
    with db.connect(dsn, autocommit=True) as conn:
        api = Client(conn)
        defined = api.apply_workflow(SPEC)
        stamp = time.strftime("%Y-%m-%d")
        run_ids = [api.start_run(WORKFLOW, {"region": REGIONS[i % len(REGIONS)], "date": stamp, "batch": i + 1})
                   for i in range(runs)]
        result = DemoResult(dsn, defined["version"], defined["created"], run_ids)

        worker = build_worker(dsn, concurrency=concurrency)
        started = time.monotonic()
        worker.start()
        last_tick = 0.0
        latest: dict[uuid.UUID, dict] = {}
        try:
            while True:
                now = time.monotonic()
                if now - last_tick >= tick_every:
                    api.tick()  # the daemon's periodic duties (reaper, push retries)
                    last_tick = now
                for rid in run_ids:  # get_run of the unfinished ones; finished runs do not change
                    if rid not in latest or latest[rid]["state"] not in FINISHED:
                        latest[rid] = _progress(api.get_run(rid))
                snapshot = [latest[rid] for rid in run_ids]
                progress = Progress(now - started, snapshot)
                if on_progress is not None:
                    on_progress(progress)
                if progress.finished == len(run_ids):
                    break
                if now - started > timeout:
                    result.timed_out = True
                    break
                time.sleep(0.1)
        finally:
            worker.stop()
            worker.join(10)
        result.seconds = time.monotonic() - started
        result.runs = snapshot
        result.tasks = sum(r["tasks_total"] for r in snapshot)
        result.retries = sum(sum(e["kind"] == "retry_scheduled" for e in api.run_events(rid))
                             for rid in run_ids)
    return result
