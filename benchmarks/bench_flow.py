"""(9) Flow control (issue 18): what it costs a queue that does not use it, and what a key limit costs.

Three subjects, the bench_claim step (``claim(…, 1)`` then ``complete``, two commits per job,
single-task runs pre-enqueued with ``start_runs``), each in a database of its own:

* **before** — migrated with this tree's SQL with flow control compiled out
  (``compiled_out``: the claim's flow probe, the two flow columns its update writes and the
  release triggers removed from a copy of ``sql/``; a pattern that no longer matches stops the
  script), queue ``default``. ``FF_BENCH_FLOW_BASE=<commit>`` takes ``git archive`` of that
  commit's ``sql/`` instead (the commit before flow control was adc8b4a; everything merged since
  is then on the "no limit" side too);
* **no limit** — this tree's SQL, queue ``default`` (no flow control: the claim's ``EXISTS`` on
  ``queue_flow_idx``, the flow columns and the release trigger's WHEN clause are all it pays);
* **key limit** — this tree's SQL, queue ``keyed``: every task declares
  ``"concurrency": {"key": "$.run.k", "max": 1000}`` over 16 key values (never binding),
  so every claim takes the flow-control path: counters locked, lanes read, slots counted and
  given back by the release trigger.

Each pair runs in turn job by job on each of 4 connections (``common.interleave``): rounds of
seconds each saw a different machine (paired 4-s rounds had a standard deviation of 0.105 for a
3 % target), job by job both sides see the same one. Figures: no limit vs before (cost before /
cost now, target at least 0.97, "nothing measurable") and key limit vs no limit (the stated
cost of a limited queue; no target), each the median of the per-round ratios.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import common as c

TARGET = 0.97
BASE = os.environ.get("FF_BENCH_FLOW_BASE")  # None: this tree with flow control compiled out
BASE_LABEL = BASE or "this tree, flow control compiled out"

# What compiling flow control out removes: (file, text, replacement), each found exactly once.
COMPILE_OUT = (
    ("functions/10_substrate/20_task_protocol.sql",
     """           EXISTS (SELECT 1 FROM flowforge.queue q
                   WHERE q.organization_id = v_org AND q.name = ANY (claim.queues) AND q.flow) AS flow""",
     "           false AS flow"),
    ("functions/10_substrate/20_task_protocol.sql",
     """            started_at = v_now,
            -- Flow control: this generation holds the slots its pick took (the release trigger gives them back).
            flow_token = CASE WHEN tr.id = ANY (v_holders) THEN tr.fencing_token + 1 END,
            flow_queue_slot = CASE WHEN tr.id = ANY (v_holders) THEN tr.id = ANY (v_queue_holders) END
""",
     "            started_at = v_now\n"),
)
RELEASE_TRIGGERS = re.compile(r"CREATE TRIGGER (task_run|work_item)_flow_release(_deleted)?\n.*?EXECUTE FUNCTION "
                              r"flowforge\._flow_release\(\);\n", re.S)
KEYED_SPEC = {"name": "keyed", "tasks": [{"key": "work", "queue": "keyed", "concurrency": {"key": "$.run.k", "max": 1000}}]}

FF_CLAIM_KEYED = "SELECT * FROM flowforge.claim(ARRAY['keyed'], %s, '30 seconds', 1)"


def compiled_out(tmp: Path) -> Path:
    """A copy of this tree's sql/ without flow control on the claim path (see COMPILE_OUT)."""
    out = tmp / "base" / "sql"
    shutil.copytree(c.REPO / "sql", out)
    for name, text, replacement in COMPILE_OUT:
        path = out / name
        source = path.read_text()
        if source.count(text) != 1:
            raise SystemExit(f"bench_flow: {name} no longer has the flow-control text this script removes; "
                             "update COMPILE_OUT from the claim")
        path.write_text(source.replace(text, replacement))
    migration = out / "migrations" / "0028_flow_control.sql"
    source, n = RELEASE_TRIGGERS.subn("", migration.read_text())
    if n != 4:
        raise SystemExit(f"bench_flow: found {n} of the 4 release triggers in {migration.name}; update RELEASE_TRIGGERS")
    migration.write_text(source)
    return out


def base_sql(tmp: Path) -> Path | None:
    """The baseline's sql/ folder: this tree compiled out, or FF_BENCH_FLOW_BASE's (None when git cannot give it)."""
    if BASE is None:
        return compiled_out(tmp)
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


def main() -> None:
    n_rounds, jobs = c.rounds(5), c.scale(400, 120)
    threads, warmup = 4, 20
    per_round = threads * (jobs + warmup)
    with tempfile.TemporaryDirectory() as tmp:
        old_sql = base_sql(Path(tmp))
        # Each subject in a database of its own, so none reads past another's backlog or dead rows.
        new = database_with("flow", None)
        c.define(new, c.SINGLE_SPEC)
        keyed_db = database_with("flow_keyed", None)
        c.define(keyed_db, KEYED_SPEC)
        old = None
        if old_sql is not None:
            old = database_with("flow_base", old_sql)
            c.define(old, c.SINGLE_SPEC)
            c.start_runs(old, "single", n_rounds * per_round + 100)
        else:
            c.progress(f"no SQL of {BASE_LABEL} (git archive failed): the before/after figure is skipped")
        # "no limit" is in both pairs: against before, then against the key limit.
        c.start_runs(new, "single", 2 * n_rounds * per_round + 100)
        keyed_enqueue(keyed_db, n_rounds * per_round + 100)
        for dsn in (new, keyed_db) + ((old,) if old else ()):
            with c.connect(dsn) as conn:
                conn.execute("VACUUM ANALYZE")
        step = c.ff_single_step()
        us = {"before": [], "no limit": [], "no limit (keyed pair)": [], "key limit": []}
        for r in range(n_rounds):
            # Job by job in turn on each of 4 threads (common.interleave); the side first alternates by round.
            if old is not None:
                pair = (old, new) if r % 2 == 0 else (new, old)
                got = dict(zip(pair, c.interleave(pair, (step, step), threads=threads, jobs=jobs, warmup=warmup)))
                us["before"].append(got[old])
                us["no limit"].append(got[new])
            plain_us, keyed_us = c.interleave((new, keyed_db), (step, keyed_step), threads=threads, jobs=jobs,
                                              warmup=warmup)
            us["no limit (keyed pair)"].append(plain_us)
            us["key limit"].append(keyed_us)
            c.progress(f"round {r + 1}/{n_rounds}: " + ", ".join(f"{k} {v[-1]:,.0f} us/job" for k, v in us.items() if v))
    note = f"median of {n_rounds} rounds of {jobs} jobs a side on each of {threads} conns, the two sides in turn job by job"

    def rate(name: str) -> float:
        return threads * 1e6 / c.median(us[name])  # jobs/s of one side at this concurrency

    if old is not None:
        # Cost before / cost now per round: 1.0 is "nothing measurable", below is what flow control costs.
        ratio = c.median([b / n for b, n in zip(us["before"], us["no limit"])])
        c.figure("claim+complete, a queue without flow control vs before it", rate("no limit"), "jobs/s",
                 baseline=f"before flow control ({BASE_LABEL})", baseline_value=rate("before"), ratio=ratio,
                 target=f">= {TARGET}", met=ratio >= TARGET, note=note,
                 chart={"kind": "bars", "labels": [f"before ({BASE_LABEL})", "no limit"],
                        "values": [rate("before"), rate("no limit")],
                        "rounds": [[threads * 1e6 / u for u in us["before"]],
                                   [threads * 1e6 / u for u in us["no limit"]]],
                        "unit": "jobs/s"})
    ratio = c.median([n / k for n, k in zip(us["no limit (keyed pair)"], us["key limit"])])
    c.figure("claim+complete with a concurrency key (never binding) vs none", rate("key limit"), "jobs/s",
             baseline="no limit", baseline_value=rate("no limit (keyed pair)"), ratio=ratio, note=note,
             chart={"kind": "bars", "labels": ["no limit", "key limit"],
                    "values": [rate("no limit (keyed pair)"), rate("key limit")],
                    "rounds": [[threads * 1e6 / u for u in us["no limit (keyed pair)"]],
                               [threads * 1e6 / u for u in us["key limit"]]], "unit": "jobs/s"})


if __name__ == "__main__":
    main()
