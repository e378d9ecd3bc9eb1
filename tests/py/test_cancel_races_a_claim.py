"""cancel_run against a claim that started after the cancel's transaction did (issue 12).

cancel_run stamped finished_at with its own transaction time. A claim that
started later and committed first left the task with a later started_at, and
the cancel aborted on taskrun_finished_after_started (23514, "a FlowForge
bug") — always when the cancel ran in an application transaction opened
before the claim. The interleaving is forced here with real connections:
the application's transaction takes its snapshot time first, the claim
commits, then the application cancels.
"""

from __future__ import annotations

from helpers_core import cancel_run, claim, connect, define, single_spec, start_run


def test_cancel_in_an_older_transaction_after_a_newer_claim(migrated_dsn):
    with connect(migrated_dsn) as setup:
        define(setup, single_spec("raced", queue="race"))
        run = start_run(setup, "raced")
    app = connect(migrated_dsn, autocommit=False)
    worker = connect(migrated_dsn)
    try:
        app.execute("SELECT now()")  # the application's transaction starts (and fixes now()) first
        assert len(claim(worker, ["race"], "w")) == 1  # a claim that starts later commits first
        cancel_run(app, run, "changed my mind")
        app.commit()
        state, started, finished = worker.execute(
            "SELECT state, started_at, finished_at FROM flowforge.task_run WHERE workflow_run_id = %s", (run,)).fetchone()
        assert state == "cancelled"
        assert finished >= started
    finally:
        app.close()
        worker.close()


def test_many_cancels_racing_claims_never_fail(migrated_dsn):
    """Cancel and claim started together, many times: every cancel succeeds or finds the run finished."""
    runs = 40
    with connect(migrated_dsn) as setup:
        define(setup, single_spec("many", queue="many"))
        ids = [start_run(setup, "many") for _ in range(runs)]
    apps = [connect(migrated_dsn, autocommit=False) for _ in range(runs)]
    worker = connect(migrated_dsn)
    try:
        for app in apps:
            app.execute("SELECT now()")
        while claim(worker, ["many"], "w", batch=10):
            pass
        for app, run in zip(apps, ids):
            cancel_run(app, run)
            app.commit()
        states = worker.execute(
            "SELECT tr.state, count(*) FROM flowforge.task_run tr JOIN flowforge.workflow_run r ON r.id = tr.workflow_run_id "
            "WHERE r.id = ANY(%s) GROUP BY tr.state", (ids,)).fetchall()
        assert states == [("cancelled", runs)]
    finally:
        for app in apps:
            app.close()
        worker.close()
