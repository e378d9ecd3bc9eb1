"""(9) Flow control (issue 18): what it costs a queue that does not use it, and what a key limit costs.

Three subjects, the bench_claim loop (4 threads, ``claim(…, 1)`` then ``complete``, two
commits per job, single-task runs pre-enqueued with ``start_run``), in alternating rounds:

* **before** — a database migrated with the SQL of the commit before flow control
  (``FF_BENCH_FLOW_BASE``, default adc8b4a: ``git archive`` of its ``sql/``), queue ``default``;
* **no limit** — a database migrated with this tree's SQL, queue ``default`` (no flow control:
  the claim's one probe of ``queue_flow_idx`` and the release trigger's WHEN clause are all it pays);
* **key limit** — a third database with this tree's SQL, queue ``keyed``: every task declares
  ``"concurrency": {"key": "$.run.k", "max": 1000}`` over 16 key values (never binding),
  so every claim takes the flow-control path: counters locked, lanes read, slots counted and
  given back by the release trigger.

Figures: no limit vs before (target: at least 0.97, "nothing measurable") and key limit vs no
limit (the stated cost of a limited queue; no target). Each ratio is the median of the
per-round ratios: before and no limit run back to back, in alternating order, so both see
the same machine; each subject has its own database (no backlog or dead rows of another).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import common as c

TARGET = 0.97
BASE = os.environ.get("FF_BENCH_FLOW_BASE", "adc8b4a")
KEYED_SPEC = {"name": "keyed", "tasks": [{"key": "work", "queue": "keyed", "concurrency": {"key": "$.run.k", "max": 1000}}]}

FF_CLAIM_KEYED = "SELECT * FROM flowforge.claim(ARRAY['keyed'], %s, '30 seconds', 1)"


def base_sql(tmp: Path) -> Path | None:
    """The sql/ folder of the commit before flow control, or None when git cannot give it."""
    out = tmp / "base"
    out.mkdir()
    archive = subprocess.run(["git", "archive", BASE, "sql"], cwd=c.REPO, capture_output=True)
    if archive.returncode != 0:
        return None
    subprocess.run(["tar", "-x", "-C", str(out)], input=archive.stdout, check=True)
    return out / "sql"


def database_with(label: str, sql_dir: Path | None) -> str:
    """A database migrated with the SQL of sql_dir (this tree's when None)."""
    if sql_dir is None:
        return c.flowforge_database(label)
    saved = os.environ.get("FLOWFORGE_SQL_DIR")
    os.environ["FLOWFORGE_SQL_DIR"] = str(sql_dir)
    try:
        return c.flowforge_database(label)
    finally:
        if saved is None:
            os.environ.pop("FLOWFORGE_SQL_DIR", None)
        else:
            os.environ["FLOWFORGE_SQL_DIR"] = saved


def keyed_step(conn, i: int) -> int:
    row = conn.execute(FF_CLAIM_KEYED, [f"bench-{i}"], prepare=True).fetchone()
    if row is None:
        return 0
    conn.execute(c.FF_COMPLETE, [row[0], row[4]], prepare=True)
    return 1


def keyed_enqueue(dsn: str, n: int) -> None:
    with c.connect(dsn) as conn:
        conn.execute("SELECT count(flowforge.start_run('keyed', jsonb_build_object('k', g %% 16))) "
                     "FROM generate_series(1, %s) g", [n])


def paired_ratio(subject: c.Subject, baseline: c.Subject) -> float:
    return c.median([s / b for s, b in zip(subject.rates, baseline.rates)])


def main() -> None:
    n_rounds, seconds = c.rounds(5), c.round_seconds(4.0, 2.0)
    with tempfile.TemporaryDirectory() as tmp:
        old_sql = base_sql(Path(tmp))
        # Each subject in a database of its own, so none reads past another's backlog or dead rows.
        new = database_with("flow", None)
        c.define(new, c.SINGLE_SPEC)
        keyed_db = database_with("flow_keyed", None)
        c.define(keyed_db, KEYED_SPEC)
        before = None
        if old_sql is not None:
            old = database_with("flow_base", old_sql)
            c.define(old, c.SINGLE_SPEC)
            before = c.Subject("before", old, c.ff_single_step(), lambda n: c.start_runs(old, "single", n),
                               first_guess=1000)
        else:
            c.progress(f"no SQL of {BASE} (git archive failed): the before/after figure is skipped")
        plain = c.Subject("no limit", new, c.ff_single_step(), lambda n: c.start_runs(new, "single", n), first_guess=1000)
        keyed = c.Subject("key limit", keyed_db, keyed_step, lambda n: keyed_enqueue(keyed_db, n), first_guess=1000)
        subjects = [s for s in (before, plain, keyed) if s is not None]
        for s in subjects:
            s.round(1.0)  # warm up: plans, caches
            s.rates.clear()
        for r in range(n_rounds):
            # The pair under test back to back, in alternating order; the key limit after it.
            pair = [before, plain] if r % 2 == 0 else [plain, before]
            for s in [x for x in pair if x is not None] + [keyed]:
                s.round(seconds)
            c.progress(f"round {r + 1}/{n_rounds}: " + ", ".join(f"{s.name} {s.rates[-1]:,.0f}/s" for s in subjects))
    note = f"median of {n_rounds} paired {seconds:g}s rounds, 4 conns"
    if before is not None:
        ratio = paired_ratio(plain, before)
        c.figure("claim+complete, a queue without flow control vs before it", plain.median, "jobs/s",
                 baseline=f"before flow control ({BASE})", baseline_value=before.median, ratio=ratio,
                 target=f">= {TARGET}", met=ratio >= TARGET, note=note,
                 chart={"kind": "bars", "labels": [f"before ({BASE})", "no limit"],
                        "values": [before.median, plain.median], "rounds": [before.rates, plain.rates],
                        "unit": "jobs/s"})
    ratio = paired_ratio(keyed, plain)
    c.figure("claim+complete with a concurrency key (never binding) vs none", keyed.median, "jobs/s",
             baseline="no limit", baseline_value=plain.median, ratio=ratio, note=note,
             chart={"kind": "bars", "labels": ["no limit", "key limit"], "values": [plain.median, keyed.median],
                    "rounds": [plain.rates, keyed.rates], "unit": "jobs/s"})


if __name__ == "__main__":
    main()
