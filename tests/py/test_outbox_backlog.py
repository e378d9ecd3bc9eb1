"""The outbox drain's cost must not grow with deferred messages (issue 12).

take_outbox used to scan unpublished rows oldest-first and filter out the
deferred ones: with 20,000 refused messages of one tenant deferred, every
take of every daemon read all 20,000. Now every unpublished row says when it
may be taken (next_attempt_at) and idx_outbox_pending is on that column, so a
take reads only what is available. Measured on the statement inside the
function (auto_explain with nested statements, as benchmarks/profile_claim.py
does): rows removed by a filter and buffers touched stay small.
"""

from __future__ import annotations

import json
import re

from helpers_core import connect

DEFERRED = 20_000
AVAILABLE = 5


def _load(dsn: str) -> None:
    with connect(dsn) as conn:
        conn.execute("SELECT flowforge.define_workflow(%s::jsonb)",
                     (json.dumps({"name": "o", "tasks": [{"key": "t", "queue": "pq"}]}),))
        conn.execute("SELECT flowforge.configure_queue('pq', 'ex')")
        run = conn.execute("SELECT flowforge.start_run('o')").fetchone()[0]
        # One message per generation of one task (what matters is the outbox's
        # shape): the broker refused all but the newest few, which wait minutes.
        conn.execute("""
            INSERT INTO flowforge.outbox_message (organization_id, task_run_id, workflow_run_id, exchange, routing_key,
                                                  payload, fencing_token_snapshot, attempt_snapshot, publish_attempts,
                                                  next_attempt_at, last_error, created_at)
            SELECT tr.organization_id, tr.id, tr.workflow_run_id, 'ex', 'pq', '{}', 1 + g, 1,
                   CASE WHEN g <= %(deferred)s THEN 8 ELSE 0 END,
                   CASE WHEN g <= %(deferred)s THEN now() + interval '5 minutes' ELSE now() END,
                   CASE WHEN g <= %(deferred)s THEN 'unroutable' END,
                   now() - interval '1 hour' + g * interval '1 millisecond'
            FROM flowforge.task_run tr, generate_series(1, %(total)s) g
            WHERE tr.workflow_run_id = %(run)s""",
                     {"deferred": DEFERRED, "total": DEFERRED + AVAILABLE - 1, "run": run})
        conn.execute("VACUUM ANALYZE flowforge.outbox_message")


def _take_plan(dsn: str) -> str:
    plans: list[str] = []
    with connect(dsn) as conn:
        conn.execute("LOAD 'auto_explain'")
        for setting, value in (("auto_explain.log_min_duration", "0"), ("auto_explain.log_nested_statements", "on"),
                               ("auto_explain.log_analyze", "on"), ("auto_explain.log_buffers", "on"),
                               ("client_min_messages", "log")):
            conn.execute(f"SET {setting} = '{value}'")
        conn.add_notice_handler(lambda diag: plans.append(diag.message_primary or ""))
        taken = conn.execute("SELECT id FROM flowforge.take_outbox(100)").fetchall()
    assert len(taken) == AVAILABLE, "exactly the available messages are taken"
    picks = [p for p in plans if "FOR UPDATE SKIP LOCKED" in p and "outbox_message" in p]
    assert picks, "the pick statement inside take_outbox was explained"
    return picks[0]


def test_deferred_messages_cost_the_drain_nothing(migrated_dsn):
    _load(migrated_dsn)
    plan = _take_plan(migrated_dsn)
    assert "Index Scan using idx_outbox_pending" in plan, plan
    removed = sum(int(n) for n in re.findall(r"Rows Removed by Filter: (\d+)", plan))
    assert removed == 0, f"the drain filtered {removed} deferred rows:\n{plan}"
    hits = sum(int(n) for n in re.findall(r"Buffers: shared hit=(\d+)", plan))
    assert hits < 200, f"the drain touched {hits} buffers for {AVAILABLE} available rows:\n{plan}"
