"""Three tick loops at once for ten minutes of steered time (issue 16): every cron slot fires once.

The database gets the steerable ``flowforge.now()`` of tests/fixtures/clock.sql. Three
callers, each a thread on its own connection, tick together in rounds (a barrier starts
each round's three calls at once): ``A`` and ``B`` call ``tick()`` (every organization's
duties, what pg_cron or a script does) and ``C`` calls ``tick(engine_id => 'C')`` (a
daemon). Each sets its own time for the round, a second apart, so their views of "now"
interleave. The timeline is ten minutes in steps of 7 seconds, with one jump of three
minutes in the middle (downtime, after which every loop ticks at once again).

Four triggers with catchup ``all`` (so every slot is owed, downtime or not): every minute
in UTC, every two minutes in America/New_York, every five in Australia/Lord_Howe (a
30-minute DST shift), and a 7-minute step list. At the end each trigger's firings are
exactly the slots croniter (the oracle) lists between its creation and the last tick —
each once, in order, each having started one run naming its firing — and the slot counts
the committed ticks returned add up to the firings: no tick counted a slot another fired.
"""

from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import psycopg
from croniter import croniter
from psycopg.types.json import Jsonb

from helpers_engines import connect, db_now, install_clock, set_clock

TRIGGERS = {  # name: (cron, zone)
    "every-minute": ("* * * * *", "UTC"),
    "every-2-ny": ("*/2 * * * *", "America/New_York"),
    "every-5-lh": ("*/5 * * * *", "Australia/Lord_Howe"),
    "odd-list": ("3,10,17,24,31,38,45,52,59 * * * *", "Europe/Berlin"),
}
STEP = timedelta(seconds=7)
SPAN = timedelta(minutes=10)
DOWNTIME_AT = timedelta(minutes=4)
DOWNTIME = timedelta(minutes=3)
OFFSETS = {"A": timedelta(0), "B": timedelta(seconds=1), "C": timedelta(seconds=2)}


def expected_slots(expr: str, zone: str, after: datetime, until: datetime) -> list[datetime]:
    it = croniter(expr, after.astimezone(ZoneInfo(zone)))
    slots = []
    while (slot := it.get_next(datetime).astimezone(timezone.utc)) <= until:
        slots.append(slot)
    return slots


def test_three_tick_loops_fire_every_slot_exactly_once(migrated_dsn):
    install_clock(migrated_dsn)
    setup = connect(migrated_dsn)
    t0 = db_now(setup).replace(second=13, microsecond=0) + timedelta(hours=1)
    set_clock(setup, t0)
    setup.execute("SELECT flowforge.define_workflow(spec => %s::jsonb)",
                  (Jsonb({"name": "report", "tasks": [{"key": "render"}]}),))
    for name, (expr, zone) in TRIGGERS.items():
        setup.execute("SELECT flowforge.create_trigger(name => %s::text, trigger_type => 'cron', action => 'start', "
                      "target => 'report', options => %s::jsonb)",
                      (name, Jsonb({"cron": expr, "timezone": zone, "catchup": "all", "max_catchup": 1000})))

    timeline = []
    at, jumped = t0, False
    while at < t0 + SPAN:
        at += STEP
        if not jumped and at - t0 >= DOWNTIME_AT:
            at, jumped = at + DOWNTIME, True
        timeline.append(at)
    last = timeline[-1] + max(OFFSETS.values())

    conns = {name: connect(migrated_dsn) for name in OFFSETS}
    barrier = threading.Barrier(len(conns))
    fired = {name: 0 for name in conns}
    failures: list[BaseException] = []

    def loop(name: str) -> None:
        conn = conns[name]
        try:
            for round_at in timeline:
                set_clock(conn, round_at + OFFSETS[name])
                barrier.wait(timeout=60)
                if name == "C":
                    counts = conn.execute("SELECT flowforge.tick(engine_id => 'C')").fetchone()[0]
                else:
                    counts = conn.execute("SELECT flowforge.tick()").fetchone()[0]
                assert not counts.get("errors"), counts
                fired[name] += counts["cron_fired"]
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            failures.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=loop, args=(name,)) for name in conns]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    for conn in conns.values():
        conn.close()
    assert not failures, failures
    assert not any(t.is_alive() for t in threads)

    total = 0
    with psycopg.connect(migrated_dsn, autocommit=True) as conn:
        for name, (expr, zone) in TRIGGERS.items():
            want = expected_slots(expr, zone, t0, last)
            rows = conn.execute(
                "SELECT f.fired_on, f.delivery_id, f.outcome, f.run_id, r.trigger_firing_id = f.id AS names_it "
                "FROM flowforge.trigger_firing f LEFT JOIN flowforge.engine_run r ON r.run_id = f.run_id "
                "WHERE f.trigger_name = %s ORDER BY f.fired_on", (name,)).fetchall()
            assert [r[0] for r in rows] == want, name
            assert [r[1] for r in rows] == [f"cron:{s:%Y-%m-%dT%H:%M:%SZ}" for s in want]
            assert all(r[2] == "started" and r[3] is not None and r[4] for r in rows), name
            total += len(rows)
        runs = conn.execute("SELECT count(*) FROM flowforge.engine_run WHERE triggered_by IS NOT NULL").fetchone()[0]
    print("slots fired per loop:", fired)
    assert total == sum(fired.values()) == runs, fired
    assert total >= 15  # ten minutes of the four schedules (19 slots): the test saw real work
