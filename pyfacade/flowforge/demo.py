"""The example workflows behind ``flowforge demo`` and their in-process run.

``nightly-report`` is a small, realistic DAG with fan-out and fan-in::

    extract
      ├─> clean_orders ──┐
      ├─> clean_customers├─> join ─┬─> render_pdf ───────┐
      └─> fetch_rates ───┘         └─> update_dashboard ─┴─> email

``fetch_rates`` fails on its first attempt (a deterministic "flaky API") and
succeeds on the retry, 200 ms later: the retry is FlowForge's, not the
handler's.

Beside it, one run of each other engine, served by the same worker:

* ``article-review``, a graph that cycles: draft → review, sent back to
  draft twice (``when $.output.approved == false``) before it is approved
  and published — its path is printed;
* ``order-delivery``, the state machine of issue 14: it waits for payment,
  the demo sends ``paid`` (the guard checks the amount), the ``ship`` action
  fails once and is retried by FlowForge, and the order is delivered;
* ``photo-thumbnails``, a DAG whose ``resize`` task maps over the photos
  its first task lists (at most 4 children at once), and an album task that
  gets their outputs in order.

The demo migrates, defines the workflows, starts the runs, runs a ``Worker``
in a thread, calls ``tick()`` like the daemon would, and reports through a
callback so the CLI can draw progress.
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

GRAPH = "article-review"
GRAPH_SPEC = {
    "name": GRAPH, "kind": "graph", "start": "draft", "max_steps": 20,
    "description": "Write, review, send back until approved, publish.",
    "nodes": [{"key": "draft", "queue": QUEUE},
              {"key": "review", "queue": QUEUE, "max_visits": 5},
              {"key": "publish", "queue": QUEUE},
              {"key": "done", "final": True}],
    "edges": [{"from": "draft", "to": "review"},
              {"from": "review", "to": "draft", "when": "$.output.approved == false"},
              {"from": "review", "to": "publish"},
              {"from": "publish", "to": "done"}],
}
APPROVED_AT_VISIT = 3  # the reviewer sends the draft back twice

MACHINE = "order-delivery"
MACHINE_SPEC = {
    "name": MACHINE, "kind": "statemachine", "initial": "awaiting_payment", "context": {"total": 100},
    "description": "An order: paid by an event, shipped by an action (retried once), delivered.",
    "states": {
        "awaiting_payment": {
            "on": {"paid": [{"target": "shipping", "guard": "$.event.amount >= $.context.total",
                             "assign": {"paid_amount": "$.event.amount"}}],
                   "cancel": "cancelled"},
            "after": [{"delay": "2 days", "target": "expired"}]},
        "shipping": {"action": {"task": "ship", "queue": QUEUE, "max_attempts": 3, "backoff": "200 milliseconds"},
                     "on_done": "delivered", "on_error": "needs_attention"},
        "needs_attention": {"on": {"retry": "shipping", "give_up": "cancelled"}},
        "delivered": {"final": True}, "cancelled": {"final": True}, "expired": {"final": True}},
}

MAP = "photo-thumbnails"
PHOTOS = 24
MAP_SPEC = {
    "name": MAP, "description": "List an album's photos, resize each (a map, 4 at once), publish the album.",
    "tasks": [
        {"key": "list_photos", "queue": QUEUE},
        {"key": "resize", "depends_on": ["list_photos"], "queue": QUEUE,
         "map": {"over": "$.deps.list_photos.photos", "mode": "map", "max_concurrency": 4}},
        {"key": "publish_album", "depends_on": ["resize"], "queue": QUEUE},
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

    # The graph's nodes: a work item's payload is {"state": <run data>, "node", "visit"}.
    @worker.task("draft")
    def draft(ctx, input):
        _work(ctx, 0.05)
        return {"draft": f"v{input['visit']}", "words": 600 + 150 * input["visit"]}

    @worker.task("review")
    def review(ctx, input):
        _work(ctx, 0.05)
        approved = input["visit"] >= APPROVED_AT_VISIT
        return {"approved": approved, "notes": "ship it" if approved else f"tighten {input['state']['draft']}"}

    @worker.task("publish")
    def publish(ctx, input):
        return {"url": f"https://blog.example.com/{input['state'].get('slug', 'why-postgres')}"}

    # The machine's action: payload {"state", "context"}; its output is merged into the context.
    @worker.task("ship")
    def ship(ctx, input):
        _work(ctx, 0.05)
        if ctx.attempt == 1:
            raise ConnectionError("carrier API unavailable (the demo's flaky action: fails on attempt 1)")
        return {"tracking": f"TRK-{zlib.crc32(str(ctx.run_id).encode()) % 100000:05d}",
                "paid": input["context"]["paid_amount"]}

    # The map: a fan-out child's payload is {"item", "index", "input"}.
    @worker.task("list_photos")
    def list_photos(ctx, input):
        return {"photos": [f"img_{i:03d}.jpg" for i in range(input["run"].get("photos", PHOTOS))]}

    @worker.task("resize")
    def resize(ctx, input):
        time.sleep(0.02)
        return {"thumb": input["item"].replace(".jpg", "_thumb.jpg"), "index": input["index"]}

    @worker.task("publish_album")
    def publish_album(ctx, input):
        thumbs = input["deps"]["resize"]
        return {"thumbs": len(thumbs), "cover": thumbs[0]["thumb"] if thumbs else None}

    return worker


FINISHED = ("succeeded", "failed", "cancelled")


def _progress(run: dict) -> dict:
    """What the progress display needs from one get_run() object."""
    return {"id": run["id"], "state": run["state"], "tasks_total": run["tasks_total"],
            "tasks_done": run["tasks_done"],
            "tasks_running": sum(t["state"] == "running" for t in run["tasks"]),
            "retries": sum(t["attempt"] - 1 for t in run["tasks"])}


def _engine_progress(run: dict) -> dict:
    """What the progress display needs from a graph's, a machine's or a mapping DAG's get_run() object."""
    out = {"id": run["id"], "kind": run["kind"], "state": run["state"]}
    if run["kind"] == "graph":
        out.update(steps=run["steps"], position=run["position"], path=run["path"])
    elif run["kind"] == "statemachine":
        out.update(machine_state=run["machine_state"], suspended=run["suspended"], transitions=run["transitions"],
                   attempts=max((i["attempt"] for i in run["items"]), default=0))
    else:
        fan = next((t["fan_out"] for t in run["tasks"] if t.get("fan_out")), None) or {}
        out.update(idx=fan.get("idx", 0), total=fan.get("total", 0), failed=fan.get("failed", 0),
                   live=fan.get("live", 0), tasks_done=run["tasks_done"], tasks_total=run["tasks_total"])
    return out


@dataclass
class Progress:
    """One snapshot of the demo's runs, for live display."""

    elapsed: float
    runs: list[dict]  # the DAG runs: id, state, tasks_total, tasks_done, tasks_running, retries
    graph: dict = field(default_factory=dict)    # id, state, steps, position, path
    machine: dict = field(default_factory=dict)  # id, state, machine_state, suspended, transitions, attempts
    map: dict = field(default_factory=dict)      # id, state, idx, total, failed, live

    @property
    def others(self) -> list[dict]:
        return [r for r in (self.graph, self.machine, self.map) if r]

    @property
    def finished(self) -> int:
        return sum(r["state"] in FINISHED for r in self.runs)

    @property
    def all_finished(self) -> bool:
        return self.finished == len(self.runs) and all(r["state"] in FINISHED for r in self.others)


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
    graph: dict = field(default_factory=dict)
    machine: dict = field(default_factory=dict)
    map: dict = field(default_factory=dict)
    paid: dict = field(default_factory=dict)   # what send_event answered

    @property
    def succeeded(self) -> int:
        return sum(r["state"] == "succeeded" for r in self.runs)

    @property
    def ok(self) -> bool:
        return (bool(self.runs) and self.succeeded == len(self.run_ids)
                and all(r.get("state") == "succeeded" for r in (self.graph, self.machine, self.map)))

    def inspect_query(self) -> str:
        run = next((r["id"] for r in self.runs if r.get("retries")), self.run_ids[0])
        return queries.DEMO_INSPECT_RUN.format(run_id=run)

    def psql_command(self) -> str:
        return f'psql "{db.mask_dsn(self.dsn)}" -c "{self.inspect_query()}"'


def run(dsn: str, *, runs: int = 5, concurrency: int = 4, timeout: float = 60.0,
        on_progress: Callable[[Progress], None] | None = None, tick_every: float = 1.0) -> DemoResult:
    """Migrate, define, start ``runs`` DAG runs and one run of each other engine, work them to the end (or ``timeout``)."""
    migrate.migrate(dsn)
    with db.connect(dsn, autocommit=True) as conn:
        api = Client(conn)
        defined = api.apply_workflow(SPEC)
        for spec in (GRAPH_SPEC, MACHINE_SPEC, MAP_SPEC):
            api.apply_workflow(spec)
        stamp = time.strftime("%Y-%m-%d")
        run_ids = [api.start_run(WORKFLOW, {"region": REGIONS[i % len(REGIONS)], "date": stamp, "batch": i + 1})
                   for i in range(runs)]
        graph_id = api.start_run(GRAPH, {"title": "Why PostgreSQL is enough", "slug": "why-postgres"})
        machine_id = api.start_run(MACHINE, {"order": f"A-{stamp}"})
        map_id = api.start_run(MAP, {"album": "holiday", "photos": PHOTOS})
        result = DemoResult(dsn, defined["version"], defined["created"], run_ids)
        # The machine rests in awaiting_payment until an event comes: the payment.
        result.paid = api.send_event(machine_id, "paid", {"amount": 120}, event_id=f"payment-{machine_id}")
        others = {"graph": graph_id, "machine": machine_id, "map": map_id}

        worker = build_worker(dsn, concurrency=concurrency)
        started = time.monotonic()
        worker.start()
        last_tick = 0.0
        latest: dict[uuid.UUID, dict] = {}
        try:
            while True:
                now = time.monotonic()
                if now - last_tick >= tick_every:
                    api.tick()  # the daemon's periodic duties (reapers, push retries, timers)
                    last_tick = now
                for rid in run_ids:  # get_run of the unfinished ones; finished runs do not change
                    if rid not in latest or latest[rid]["state"] not in FINISHED:
                        latest[rid] = _progress(api.get_run(rid))
                for rid in others.values():
                    if rid not in latest or latest[rid]["state"] not in FINISHED:
                        latest[rid] = _engine_progress(api.get_run(rid))
                progress = Progress(now - started, [latest[rid] for rid in run_ids],
                                    **{name: latest[rid] for name, rid in others.items()})
                if on_progress is not None:
                    on_progress(progress)
                if progress.all_finished:
                    break
                if now - started > timeout:
                    result.timed_out = True
                    break
                time.sleep(0.1)
        finally:
            worker.stop()
            worker.join(10)
        result.seconds = time.monotonic() - started
        result.runs = progress.runs
        result.tasks = sum(r["tasks_total"] for r in progress.runs)
        result.retries = sum(sum(e["kind"] == "retry_scheduled" for e in api.run_events(rid))
                             for rid in run_ids)
        result.graph, result.machine, result.map = progress.graph, progress.machine, progress.map
        result.machine["retries"] = sum(e["kind"] == "retry_scheduled" for e in api.run_events(machine_id))
        result.machine["states"] = [h["to"] for h in api.get_run(machine_id)["history"] if h["outcome"] == "entered"]
    return result
