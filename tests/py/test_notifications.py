"""Who is woken when work becomes ready (issue 12, item 11).

A push-only dispatch sent two notifications: ``flowforge_outbox`` for the
daemon and ``flowforge_ready``, which woke every pull worker for nothing.
``_tasks_ready`` now notifies ``flowforge_ready`` only when due ready work
is left for pull workers.  A real LISTEN connection counts what arrives; a
sentinel notification committed after the run started marks the end (a
listener receives notifications in commit order).
"""

from __future__ import annotations

from collections import Counter

import psycopg

from helpers_runtime import define, sql

CHANNELS = ("flowforge_ready", "flowforge_outbox", "flowforge_test_end")


def notifications_of(dsn: str, action) -> Counter:
    with psycopg.connect(dsn, autocommit=True) as listener:
        for channel in CHANNELS:
            listener.execute(f"LISTEN {channel}")
        action()
        sql(dsn, "SELECT pg_notify('flowforge_test_end', '')")
        seen: Counter = Counter()
        for note in listener.notifies(timeout=10):
            if note.channel == "flowforge_test_end":
                return seen
            seen[note.channel] += 1
    raise AssertionError(f"the sentinel never arrived; got {dict(seen)}")


def test_a_push_only_run_notifies_the_outbox_once_and_no_pull_worker(migrated_dsn):
    sql(migrated_dsn, "SELECT flowforge.configure_queue('pushq', 'fftest.notifications')")
    define(migrated_dsn, {"name": "pushed", "tasks": [{"key": "a", "queue": "pushq"}, {"key": "b", "queue": "pushq"}]})
    seen = notifications_of(migrated_dsn, lambda: sql(migrated_dsn, "SELECT flowforge.start_run('pushed')"))
    assert seen == Counter({"flowforge_outbox": 1})


def test_a_pull_run_wakes_pull_workers(migrated_dsn):
    sql(migrated_dsn, "SELECT flowforge.configure_queue('pushq', 'fftest.notifications')")  # push exists elsewhere
    define(migrated_dsn, {"name": "pulled", "tasks": [{"key": "a"}, {"key": "b"}]})
    seen = notifications_of(migrated_dsn, lambda: sql(migrated_dsn, "SELECT flowforge.start_run('pulled')"))
    assert seen == Counter({"flowforge_ready": 1})


def test_a_mixed_run_wakes_both(migrated_dsn):
    sql(migrated_dsn, "SELECT flowforge.configure_queue('pushq', 'fftest.notifications')")
    define(migrated_dsn, {"name": "mixed", "tasks": [{"key": "a", "queue": "pushq"}, {"key": "b"}]})
    seen = notifications_of(migrated_dsn, lambda: sql(migrated_dsn, "SELECT flowforge.start_run('mixed')"))
    assert seen == Counter({"flowforge_outbox": 1, "flowforge_ready": 1})
