"""``flowforge doctor --deep``: the DBA's questions, answered from the inspection views.

Migration 0026 answers each question a DBA asks of a FlowForge database with
one view (docs/operations.md, "A DBA's questions"); this prints the same
answers from the CLI, one compact section per view:

* ``why not ready``  — every unit of work that waits, and why (``why_not_ready``);
* ``queue depth``    — ready, running, later, the oldest ready, claims a minute (``queue_depth``);
* ``stuck runs``     — the stuck-run sweep of every engine, with what each waits on (``stuck_runs``);
* ``worker load``    — who holds what, until when, its heartbeat (``worker_load``);
* ``tenant usage``   — runs, work finished lately, history size per organization (``tenant_usage``);
* ``index usage``    — scans, size and the query each index serves, unused first (``index_usage``).

Each section shows at most ``rows`` rows and says how many more there are.
The sections only inform: they never make ``doctor`` fail.  Reading the views
takes the operator or a member of ``flowforge_readonly``; a login that may not
is told so in the section instead.  The statements are ``flowforge.queries``'
(through ``Catalog``), sent in autocommit with JIT compilation off.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from .. import db, errors, render
from ..catalog import Catalog
from ..config import Settings

INSUFFICIENT_PRIVILEGE = "42501"
DEFAULT_ROWS = 20
READ_ROLE_NOTE = "reading the inspection views needs the operator or a member of flowforge_readonly"


@dataclass
class Section:
    """One view's answer: a title, a summary line, a table of at most ``rows`` rows, and the rows as data."""

    key: str
    title: str
    headers: Sequence[str] = ()
    cells: list[tuple] = field(default_factory=list)
    total: int = 0
    summary: str = ""
    note: str = ""          # set instead of a table when the view could not be read
    data: list[dict] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"total": self.total, "rows": self.data}
        if self.summary:
            out["summary"] = self.summary
        if self.note:
            out["note"] = self.note
        return out

    def render(self, *, colour: bool | None = None) -> str:
        lines = [f"{self.title}" + (f": {self.summary}" if self.summary else "")]
        if self.note:
            lines.append(f"  {self.note}")
        elif self.cells:
            table = render.table(self.cells, headers=self.headers, colour=colour)
            lines.extend("  " + line for line in table.splitlines())
            if self.total > len(self.cells):
                lines.append(f"  ... and {self.total - len(self.cells)} more (SELECT * FROM flowforge.{self.key})")
        return "\n".join(lines)


def run(settings: Settings, *, rows: int = DEFAULT_ROWS) -> list[Section]:
    """Every section, in the order they are printed, read on one autocommit connection."""
    with db.connect(db.resolve_dsn(settings), autocommit=True) as conn:
        return read(Catalog(conn), rows=rows)


def read(catalog: Catalog, *, rows: int = DEFAULT_ROWS) -> list[Section]:
    """Every section from ``catalog``'s connection (which should be in autocommit); JIT is turned off on it."""
    if not catalog.schema_installed() or not catalog.inspection_installed():
        return [Section("why_not_ready", "inspection",
                        note="the inspection views are not installed (migration 0026): run `flowforge migrate`")]
    catalog.without_jit()
    return [_read(builder, catalog, rows) for builder in SECTIONS]


def _read(builder: Callable[[Catalog, int], Section], catalog: Catalog, rows: int) -> Section:
    try:
        return builder(catalog, rows)
    except errors.FlowForgeError as exc:
        if exc.sqlstate != INSUFFICIENT_PRIVILEGE:
            raise
        key, title = TITLES[builder]
        return Section(key, title, note=READ_ROLE_NOTE)


# --- the sections ------------------------------------------------------------------

def why_not_ready(catalog: Catalog, rows: int) -> Section:
    reasons = catalog.why_not_ready_reasons()
    found = catalog.why_not_ready(rows)
    total = sum(r["units"] for r in reasons)
    summary = (f"{total} unit{'' if total == 1 else 's'} waiting: "
               + ", ".join(f"{r['units']} {r['reason']}" for r in reasons)) if total else "nothing waits"
    cells = [(r["reason"], r["unit_kind"], _short(r["run_id"]), r["name"], r["queue"] or "",
              _age(r["waiting_seconds"]), r["explanation"]) for r in found]
    return Section("why_not_ready", "why not ready", ("REASON", "UNIT", "RUN", "NAME", "QUEUE", "WAITING", "WHY"),
                   cells, total, summary, data=found)


def queue_depth(catalog: Catalog, rows: int) -> Section:
    found = catalog.queue_depth(rows)
    total = _total(found)
    cells = [(r["organization"], r["unit_kind"], r["queue"], r["delivery"], r["ready"], r["running"], r["scheduled"],
              _age(r["oldest_ready_seconds"]), r["claims_last_minute"]) for r in found]
    summary = "" if total else "no queue has live work or a claim in the last minute"
    return Section("queue_depth", "queue depth",
                   ("ORG", "UNIT", "QUEUE", "DELIVERY", "READY", "RUNNING", "LATER", "OLDEST READY", "CLAIMS/MIN"),
                   cells, total, summary, data=found)


def stuck_runs(catalog: Catalog, rows: int) -> Section:
    found = catalog.stuck_runs(rows)
    total = _total(found)
    cells = [(r["organization"], _short(r["run_id"]), r["engine_kind"], f"{r['workflow']} v{r['version']}",
              _age(r["stuck_seconds"]), r["waiting_on"]) for r in found]
    summary = (f"{total} run{'' if total == 1 else 's'} past the threshold" if total
               else "no run is stuck (the threshold: 1 hour, or the session's flowforge.stuck_after)")
    return Section("stuck_runs", "stuck runs", ("ORG", "RUN", "ENGINE", "WORKFLOW", "FOR", "WAITING ON"),
                   cells, total, summary, data=found)


def worker_load(catalog: Catalog, rows: int) -> Section:
    found = catalog.worker_load(rows)
    total = _total(found)
    cells = [(r["organization"], r["worker"], r["kind"], r["status"] or "", r["task_runs"], r["work_items"],
              _since(r["oldest_held_since"], r["task_runs"] + r["work_items"]), _lease(r["lease_left_seconds"]),
              _age(r["heartbeat_age_seconds"], suffix=" ago"), r["pins"]) for r in found]
    summary = "" if total else "no worker holds anything and no agent is registered"
    return Section("worker_load", "worker load",
                   ("ORG", "WORKER", "KIND", "STATUS", "TASKS", "ITEMS", "OLDEST HELD", "LEASE LEFT", "HEARTBEAT", "PINS"),
                   cells, total, summary, data=found)


def tenant_usage(catalog: Catalog, rows: int) -> Section:
    found = catalog.tenant_usage(rows)
    total = _total(found)
    cells = [(r["organization"], r["runs"], r["live_runs"], f"{r['succeeded_last_hour']}/{r['failed_last_hour']}",
              f"{r['succeeded_last_day']}/{r['failed_last_day']}",
              ("" if r["history_exact"] else "~") + f"{r['history_rows']:,} rows, {_bytes(r['history_bytes'])}")
             for r in found]
    estimated = any(not r["history_exact"] for r in found)
    summary = "history estimated from a block sample (~)" if estimated else ""
    return Section("tenant_usage", "tenant usage",
                   ("ORG", "RUNS", "LIVE", "OK/FAILED 1H", "OK/FAILED 1D", "HISTORY"), cells, total, summary, data=found)


def index_usage(catalog: Catalog, rows: int) -> Section:
    found = catalog.index_usage(rows)
    total = _total(found)
    unused = found[0]["unused_total"] if found else 0
    since = found[0]["counted_since"] if found else None
    summary = (f"{total} indexes, {_bytes(found[0]['total_bytes'] if found else 0)}; {unused} never scanned and "
               f"enforcing nothing, counted since {since or 'the statistics began'}")
    cells = [(f"{r['table_name']}.{r['index_name']}", r["idx_scan"], r["size"], "unused" if r["unused"] else "",
              r["serves"] or "") for r in found]
    return Section("index_usage", "index usage", ("INDEX", "SCANS", "SIZE", "", "SERVES"), cells, total, summary,
                   data=found)


SECTIONS: list[Callable[[Catalog, int], Section]] = [why_not_ready, queue_depth, stuck_runs, worker_load, tenant_usage,
                                                      index_usage]
TITLES = {why_not_ready: ("why_not_ready", "why not ready"), queue_depth: ("queue_depth", "queue depth"),
          stuck_runs: ("stuck_runs", "stuck runs"), worker_load: ("worker_load", "worker load"),
          tenant_usage: ("tenant_usage", "tenant usage"), index_usage: ("index_usage", "index usage")}


# --- cells ----------------------------------------------------------------------

def _total(found: list[dict]) -> int:
    return int(found[0]["total"]) if found else 0


def _short(run_id: Any) -> str:
    return str(run_id)[:8] if run_id else ""


def _age(seconds: float | None, *, suffix: str = "") -> str:
    if seconds is None:
        return ""
    return render.duration(max(seconds, 0.0)) + suffix


def _since(at: Any, held: int) -> str:
    return at.strftime("%Y-%m-%d %H:%M:%S") if held and at is not None else ""


def _lease(seconds: float | None) -> str:
    if seconds is None:
        return ""
    if seconds == float("inf"):
        return "never expires"
    return "expired" if seconds < 0 else render.duration(seconds)


def _bytes(n: int | None) -> str:
    value = float(n or 0)
    for unit in ("B", "kB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TB"
