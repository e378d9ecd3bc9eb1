"""The daemon is an engine instance: ``tick(engine_id => '<host>:<pid>')`` (issue 13, engine liveness).

The database shares the organizations' duties among live daemons by
per-organization leases; the daemon only names itself, logs the
organizations it serves whenever that changes (``serving``) and any duty the
tick reports failed (``tick_duty_failed``).  It needs no broker for any of it.
"""

from __future__ import annotations

import io
import os
import socket
from collections import Counter

import pytest

from flowforge import errors
from flowforge.daemon import EventLog, resolve_config
from flowforge.daemon.timer import Timer
from helpers_runtime import daemons, sql, wait_until  # noqa: F401 - fixture
from helpers_sdk_engines import call, get_run, review_loop

DEFAULT_ORG = "00000000-0000-0000-0000-000000000001"


def engines(dsn: str) -> dict[str, dict]:
    return {e["engine_id"]: e for e in call(dsn, lambda api: api.list_engines())}


def test_the_daemon_ticks_under_its_engine_id_and_does_the_duties_of_what_it_serves(migrated_dsn, daemons):
    call(migrated_dsn, lambda api: api.define_workflow(review_loop()))
    run_id = call(migrated_dsn, lambda api: api.start_run("review_loop"))
    # A work item claimed under a one-second lease, never heartbeaten: the daemon's reaper must take it back.
    (item,) = call(migrated_dsn, lambda api: api.claim_work(["default"], "gone", lease="1 second"))
    daemon = daemons(migrated_dsn, None, "--engine-id", "engine-a")
    daemon.wait_for_event("serving")
    (serving,) = daemon.events("serving")[:1]
    assert serving["engine_id"] == "engine-a" and serving["organizations"] == "1"
    assert serving["gained"].startswith(f"{DEFAULT_ORG}@")
    assert daemon.events("started")[0]["engine_id"] == "engine-a"
    wait_until(lambda: get_run(migrated_dsn, run_id)["items"][0]["status"] == "pending", 15, "the item reaped")
    assert get_run(migrated_dsn, run_id)["items"][0]["attempt"] == 2
    wait_until(lambda: [e for e in daemon.events("tick") if e.get("reaped_items") == "1"], 10, "a tick line")
    assert engines(migrated_dsn)["engine-a"]["live"] is True
    assert engines(migrated_dsn)["engine-a"]["organizations"] == 1
    assert daemon.stop() == 0
    assert "Traceback" not in daemon.log and not daemon.events("tick_duty_failed")


def test_two_daemons_share_two_organizations(migrated_dsn, daemons):
    call(migrated_dsn, lambda api: api.create_organization("second", "Second Ltd"))
    first = daemons(migrated_dsn, None, "--engine-id", "engine-1")
    wait_until(lambda: [e for e in first.events("serving") if e["organizations"] == "2"], 15, "one daemon, both")
    second = daemons(migrated_dsn, None, "--engine-id", "engine-2")

    def split():
        found = engines(migrated_dsn)
        return all(found.get(e, {}).get("organizations") == 1 for e in ("engine-1", "engine-2"))

    wait_until(split, 20, "each daemon to serve one organization")
    # Each said so: the first gave one back, the second took it.
    wait_until(lambda: [e for e in first.events("serving") if e["organizations"] == "1" and e.get("lost")], 10,
               "the first daemon's serving line")
    wait_until(lambda: [e for e in second.events("serving") if e["organizations"] == "1"], 10,
               "the second daemon's serving line")
    held = {r[0]: r[1] for r in sql(migrated_dsn, "SELECT organization_id::text, engine_id FROM flowforge.engine "
                                                  "WHERE status = 'serving'")}
    assert sorted(held.values()) == ["engine-1", "engine-2"]
    assert first.stop() == 0 and second.stop() == 0


def test_the_default_engine_id_is_host_and_pid_and_a_flag_or_the_environment_overrides_it():
    dsn = "dbname=x"
    assert resolve_config(dsn, None, environ={}).engine_id == f"{socket.gethostname()}:{os.getpid()}"
    assert resolve_config(dsn, None, environ={"FLOWFORGE_ENGINE_ID": "from-env"}).engine_id == "from-env"
    assert resolve_config(dsn, None, engine_id="flag", environ={"FLOWFORGE_ENGINE_ID": "env"}).engine_id == "flag"
    with pytest.raises(errors.InvalidArgument, match="engine id"):
        resolve_config(dsn, None, engine_id="x" * 201, environ={})


class _Api:
    def __init__(self, results):
        self.results = list(results)
        self.engine_ids = []

    def tick(self, engine_id=None):
        self.engine_ids.append(engine_id)
        return self.results.pop(0)


class _Work:
    def __init__(self, results):
        self.api = _Api(results)

    def commit(self):
        pass


def _lines(stream: io.StringIO) -> list[dict[str, str]]:
    return [dict(part.split("=", 1) for part in line.split() if "=" in part) for line in stream.getvalue().splitlines()]


def test_the_timer_logs_serving_changes_and_failed_duties():
    stream = io.StringIO()
    totals = Counter()
    timer = Timer(0.1, EventLog(stream), totals, engine_id="me")
    work = _Work([
        {"reaped": 0, "serving": {"o1": 1}},
        {"reaped": 0, "serving": {"o1": 1}},                    # no change: no line
        {"reaped": 2, "serving": {"o1": 1, "o2": 4}},           # gained o2
        {"reaped": 0, "serving": {"o2": 5}, "errors": {"timers_fired": "relation is gone"}},  # lost o1, o2 anew
    ])
    for _ in range(4):
        timer.tick(work)
    assert work.api.engine_ids == ["me"] * 4
    lines = _lines(stream)
    serving = [line for line in lines if line["event"] == "serving"]
    assert [(s["organizations"], s.get("gained"), s.get("lost")) for s in serving] == [
        ("1", "o1@1", None), ("2", "o2@4", None), ("1", "o2@5", "o1")]
    (failed,) = [line for line in lines if line["event"] == "tick_duty_failed"]
    assert failed["duty"] == "timers_fired" and "relation is gone" in stream.getvalue()
    assert [line["reaped"] for line in lines if line["event"] == "tick"] == ["2"]
    assert totals["ticks"] == 4 and totals["reaped"] == 2 and totals["duty_errors"] == 1
