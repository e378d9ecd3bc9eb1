"""purge() while workers claim and complete (issue 19): nothing live is touched, nobody waits on purge.

The database holds three months of finished history — runs, task runs, their
events, their directory rows — in the months' partitions, the oldest two older
than the cutoff, and a backlog of live runs that four worker connections
claim and complete. While they do, a fifth connection purges in batches until
its report says nothing is left (row by row, and the two old months of events
whole: TRUNCATE, which locks the month's partition and not its table), and a
sixth samples pg_stat_activity and pg_blocking_pids for the workers as fast
as it can. tick() drops the emptied months afterwards.

Asserted: every live run ran to the end with all its history, the runs that
ended after the cutoff are whole, the old ones are gone with their events and
their months; and no sample ever saw a worker waiting on a lock the purging
session held. (No timing is asserted.)
"""

from __future__ import annotations

import threading
import time

import psycopg

WORKERS = 4
LIVE_RUNS = 1200
OLD_RUNS = 2400  # in the two months before the cutoff, three tasks each
KEPT_RUNS = 300  # in the month after the cutoff

FILL = """
CREATE TEMP TABLE fill_run AS
SELECT gen_random_uuid() AS id, %(lo)s::timestamptz + g * ((%(hi)s::timestamptz - %(lo)s::timestamptz) / (%(n)s + 1)) AS t0
FROM generate_series(1, %(n)s) g;
INSERT INTO flowforge.workflow_run (id, organization_id, workflow_id, state, input, tasks_total, tasks_remaining,
                                    created_at, started_at, finished_at)
SELECT f.id, w.organization_id, w.id, 'succeeded', '{}', 3, 0, f.t0, f.t0, f.t0 + interval '2 seconds'
FROM fill_run f, (SELECT id, organization_id FROM flowforge.workflow WHERE name = 'old') w;
INSERT INTO flowforge.engine_run (organization_id, run_id, engine_kind, definition_id, ended_at, created_at, created_by)
SELECT w.organization_id, f.id, 'dag', w.id, f.t0 + interval '2 seconds', f.t0, 'history'
FROM fill_run f, (SELECT id, organization_id FROM flowforge.workflow WHERE name = 'old') w;
CREATE TEMP TABLE fill_task AS
SELECT gen_random_uuid() AS id, f.id AS run_id, f.t0, t.id AS task_id, t.key, t.organization_id
FROM fill_run f
CROSS JOIN (SELECT t.id, t.key, t.organization_id FROM flowforge.task t
            JOIN flowforge.workflow w ON w.id = t.workflow_id WHERE w.name = 'old') t;
INSERT INTO flowforge.task_run (id, organization_id, workflow_run_id, task_id, task_key, queue, priority, state,
                                attempt, max_attempts, fencing_token, lease_owner, ready_at, remaining_deps, output,
                                created_at, started_at, finished_at)
SELECT x.id, x.organization_id, x.run_id, x.task_id, x.key, 'old', 0, 'succeeded', 1, 3, 1, 'history', x.t0, 0,
       '{"ok": true}', x.t0, x.t0 + interval '1 second', x.t0 + interval '2 seconds'
FROM fill_task x;
INSERT INTO flowforge.task_run_event (organization_id, workflow_run_id, task_run_id, kind, from_state, to_state,
                                      fencing_token, attempt, created_at)
SELECT x.organization_id, x.run_id, x.id, e.kind, e.from_state, e.to_state, e.token, 1, x.t0 + e.at
FROM fill_task x
CROSS JOIN (VALUES ('created', NULL, 'ready', 0, interval '0'), ('claimed', 'ready', 'running', 1, interval '1 second'),
                   ('completed', 'running', 'succeeded', 1, interval '2 seconds')) AS e(kind, from_state, to_state, token, at);
INSERT INTO flowforge.task_run_event (organization_id, workflow_run_id, kind, from_state, to_state, created_at)
SELECT w.organization_id, f.id, e.kind, e.from_state, e.to_state, f.t0 + e.at
FROM fill_run f, (SELECT organization_id FROM flowforge.workflow WHERE name = 'old') w
CROSS JOIN (VALUES ('run_started', NULL, 'running', interval '0'), ('run_succeeded', 'running', 'succeeded', interval '2 seconds'))
     AS e(kind, from_state, to_state, at);
DROP TABLE fill_run, fill_task;
"""

# A worker's backend waiting on a heavyweight lock, who holds it up, and on what.
SAMPLE = """
SELECT a.pid, a.wait_event_type, a.wait_event, pg_blocking_pids(a.pid),
       (SELECT string_agg(coalesce(l.relation::regclass::text, l.locktype) || ' ' || l.mode, ', ')
        FROM pg_locks l WHERE l.pid = a.pid AND NOT l.granted)
FROM pg_stat_activity a WHERE a.pid = ANY (%s)
"""


def test_purge_under_load(migrated_dsn):
    with psycopg.connect(migrated_dsn, autocommit=True) as conn:
        conn.execute("""SELECT flowforge.define_workflow('{"name": "live", "tasks": [{"key": "only", "queue": "live"}]}')""")
        conn.execute("""SELECT flowforge.define_workflow('{"name": "old", "tasks": [{"key": "a", "queue": "old"},
                        {"key": "b", "queue": "old"}, {"key": "c", "queue": "old"}]}')""")
        m0 = conn.execute("SELECT date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'").fetchone()[0]
        months = conn.execute("SELECT %s::timestamptz - k * interval '1 month' FROM generate_series(3, 1, -1) k",
                              (m0,)).fetchall()
        months = [m for (m,) in months]
        for table in ("task_run_event", "audit_log", "trigger_firing"):
            for month in months:
                conn.execute("SELECT flowforge._history_partition_create(%s, %s)", (table, month))
        with conn.transaction(), psycopg.ClientCursor(conn) as cur:  # several statements: bound client-side
            cur.execute(FILL, {"lo": months[0], "hi": months[2], "n": OLD_RUNS})
        with conn.transaction(), psycopg.ClientCursor(conn) as cur:
            cur.execute(FILL, {"lo": months[2], "hi": m0, "n": KEPT_RUNS})
        conn.execute("SELECT flowforge.start_run('live') FROM generate_series(1, %s)", (LIVE_RUNS,))
        conn.execute("VACUUM ANALYZE")
        cutoff = months[2]
        older_than = conn.execute("SELECT now() - %s::timestamptz", (cutoff,)).fetchone()[0]
        old_parts = [f"flowforge_history.task_run_event_p{m:%Y%m}" for m in months[:2]]
        assert conn.execute("SELECT count(*) FROM flowforge.task_run_event WHERE created_at < %s",
                            (cutoff,)).fetchone()[0] == OLD_RUNS * 11
        kept_before = conn.execute(
            "SELECT count(*), sum(hashtext(e::text)) FROM flowforge.task_run_event e WHERE created_at >= %s AND created_at < %s",
            (cutoff, m0)).fetchone()

    stop = threading.Event()
    purging = threading.Event()
    done_purging = threading.Event()
    worker_pids: list[int] = []
    completed_during_purge = [0]
    errors: list[BaseException] = []
    reports: list[dict] = []
    samples = {"taken": 0, "lock_waits": 0, "blocked_by_purge": []}
    purge_pid = [None]

    def worker(name: str, ready: threading.Barrier) -> None:
        try:
            with psycopg.connect(migrated_dsn, autocommit=True) as conn:
                worker_pids.append(conn.execute("SELECT pg_backend_pid()").fetchone()[0])
                ready.wait()
                idle = 0
                while not stop.is_set():
                    row = conn.execute("SELECT task_run_id, fencing_token FROM flowforge.claim(ARRAY['live'], %s, "
                                       "'30 seconds', 1)", (name,)).fetchone()
                    if row is None:
                        idle += 1
                        if idle > 20 and done_purging.is_set():
                            return
                        time.sleep(0.01)
                        continue
                    idle = 0
                    conn.execute("SELECT flowforge.complete(%s, %s, '{}')", row)
                    if purging.is_set() and not done_purging.is_set():
                        completed_during_purge[0] += 1
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    def purger(ready: threading.Barrier) -> None:
        try:
            with psycopg.connect(migrated_dsn, autocommit=True) as conn:
                purge_pid[0] = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
                ready.wait()
                time.sleep(0.3)  # the workers are at it
                purging.set()
                deadline = time.monotonic() + 120
                while time.monotonic() < deadline:
                    report = conn.execute("SELECT flowforge.purge(%s, false, 200)", (older_than,)).fetchone()[0]
                    reports.append(report)
                    if not report["more"]:
                        break
                    time.sleep(0.02)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
        finally:
            done_purging.set()

    def sampler(ready: threading.Barrier) -> None:
        try:
            with psycopg.connect(migrated_dsn, autocommit=True) as conn:
                ready.wait()
                while not done_purging.is_set():
                    for pid, wait_type, wait_event, blockers, waits_for in conn.execute(SAMPLE, (worker_pids,)).fetchall():
                        samples["taken"] += 1
                        if wait_type == "Lock":
                            samples["lock_waits"] += 1
                            if purge_pid[0] in (blockers or []):
                                samples["blocked_by_purge"].append((pid, wait_event, waits_for))
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    ready = threading.Barrier(WORKERS + 2)
    threads = [threading.Thread(target=worker, args=(f"w{i}", ready)) for i in range(WORKERS)]
    threads += [threading.Thread(target=purger, args=(ready,)), threading.Thread(target=sampler, args=(ready,))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=180)
    stop.set()
    assert not errors, errors
    assert reports and not reports[-1]["more"], "purge did not finish"

    # Nobody waited on purge's locks, while both were at work.
    assert samples["taken"] > 100, samples
    assert completed_during_purge[0] > 0, "the workers completed nothing while purge ran: no overlap to speak of"
    assert samples["blocked_by_purge"] == [], samples["blocked_by_purge"][:10]

    with psycopg.connect(migrated_dsn, autocommit=True) as conn:
        # Live work: every run ran to its end, its history whole.
        live = conn.execute("""
            SELECT count(*), count(*) FILTER (WHERE r.state = 'succeeded'),
                   sum((SELECT count(*) FROM flowforge.task_run_event e WHERE e.workflow_run_id = r.id AND e.task_run_id IS NULL)
                       + (SELECT count(*) FROM flowforge.task_run t JOIN flowforge.task_run_event e ON e.task_run_id = t.id
                          WHERE t.workflow_run_id = r.id))
            FROM flowforge.workflow_run r JOIN flowforge.workflow w ON w.id = r.workflow_id WHERE w.name = 'live'""").fetchone()
        assert live[0] == LIVE_RUNS and live[1] == LIVE_RUNS, live
        per_run = live[2] / LIVE_RUNS
        assert per_run >= 5, f"a live run's history is short: {per_run} events"  # started, created, claimed, completed, succeeded
        # What ended after the cutoff is whole.
        kept_after = conn.execute(
            "SELECT count(*), sum(hashtext(e::text)) FROM flowforge.task_run_event e WHERE created_at >= %s AND created_at < %s",
            (cutoff, m0)).fetchone()
        assert kept_after == kept_before
        assert conn.execute("SELECT count(*) FROM flowforge.engine_run WHERE ended_at >= %s AND ended_at < %s",
                            (cutoff, m0)).fetchone()[0] == KEPT_RUNS
        # The old runs are gone, with their events and their months.
        assert conn.execute("SELECT count(*) FROM flowforge.engine_run WHERE ended_at < %s", (cutoff,)).fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM flowforge.workflow_run WHERE created_at < %s", (cutoff,)).fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM flowforge.task_run_event WHERE created_at < %s", (cutoff,)).fetchone()[0] == 0
        # Their months went whole: emptied by purge (TRUNCATE, no lock on the parent) ...
        emptied = {p["partition"] for r in reports for p in r["partitions"] if p.get("emptied")}
        assert set(old_parts) <= emptied, [r["partitions"] for r in reports]
        assert conn.execute("SELECT sum(pg_relation_size(p)) FROM unnest(%s::text[]) p", (old_parts,)).fetchone()[0] == 0
        removed = sum(r["removed"]["task_run_event"] for r in reports)
        assert removed == OLD_RUNS * 11, (removed, [r["partitions"] for r in reports])
        truncated = sum(p["rows"] for r in reports for p in r["partitions"] if p["table"] == "task_run_event")
        assert truncated > OLD_RUNS * 11 // 2, f"most of the old events should have gone with their months: {truncated}"
        # ... and dropped by tick() (the workers are done: its brief ACCESS EXCLUSIVE on the parent waits for nobody).
        assert conn.execute("SELECT (flowforge.tick() ->> 'partitions_dropped')::int").fetchone()[0] >= 2
        assert conn.execute("SELECT count(*) FROM unnest(%s::text[]) p WHERE to_regclass(p) IS NOT NULL",
                            (old_parts,)).fetchone()[0] == 0, "the two old months of events were not dropped"

