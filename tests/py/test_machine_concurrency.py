"""The state-machine engine (issue 14) under real concurrency: many connections, one thread each.

* Ten connections send 500 events to one machine while a worker serves its action. The history
  (machine_transition, by n) is one serial order: it is rebuilt from the rows — every event entry
  names the event id its sender gave, every action_done names its work item — and replayed in a
  single-threaded Python model (helpers_machines.MachineRun). The model's history must equal the
  database's row for row, its final state and context the run's, and every sender's answer
  (applied / queued, the state, suspended) the model's at that point; each sender's events appear
  in the order it sent them; a refused event (FF012, nothing written) must be refused by the model
  at some resting point between that sender's neighbouring events, in the state the error names.
  The machine's guards, assignments and an order-sensitive hash in its context make a lost or
  doubled update, or two events applied against the same state, show.
* Eight connections send the same event id at once, round after round: exactly one is applied
  (or queued, while the machine is suspended) and seven are "duplicate"; a refused event's id is
  not recorded, so all eight are judged again and refused.
* A timer racing an event. The timer duty (tick) runs in a session whose steered clock
  (tests/fixtures/clock.sql) is past the timer's due time. Forced: the tick's transaction holds the
  run's lock and the event is seen waiting for it in pg_stat_activity — after the commit the event
  is judged in the timer's target state; or the event's transaction holds the lock — the tick does
  not wait for a busy run (SKIP LOCKED) and fires nothing, and after the commit the timer is gone.
  Then raced freely over many machines: each ends with exactly one of the two in its history.
"""

from __future__ import annotations

import collections
import random
import re
import threading
import time
import uuid
from datetime import timedelta

import psycopg
import pytest
from psycopg.types.json import Jsonb

from helpers_engines import (
    Blocked,
    claim_work,
    complete_work,
    connect,
    db_now,
    define,
    install_clock,
    run_threads,
    set_clock,
    start_run,
    wait_blocked,
)
from helpers_machines import Candidate, MachineDef, MachineRun, Refused, StateDef, db_history, db_machine

REFUSED = "FF012"
N_SENDERS = 10
EVENTS_PER_SENDER = 50
QUEUE = "mq"

SEND = "SELECT flowforge.send_event(run_id => %s::uuid, event => %s::text, payload => %s::jsonb, event_id => %s::text)"


def send(conn: psycopg.Connection, run, event: str, payload: dict, event_id: str | None) -> dict:
    return conn.execute(SEND, (run, event, Jsonb(payload), event_id)).fetchone()[0]


# --- the machine ---------------------------------------------------------------------------

def _c(key):
    return ("ctx", key)


K = ("ev", "k")
# An order-sensitive digest of every event the machine took: swap two events and it differs.
HASH = ("mod", ("add", ("mul", _c("h"), ("lit", 31)), K), ("lit", 1000003))


def counter() -> MachineDef:
    """ready ⇄ other on guarded events, and ready → busy (an action; events queue) → ready."""
    return MachineDef(initial="ready", context={"n": 0, "h": 0, "flips": 0}, states={
        "ready": StateDef("rest", on={
            "inc": [Candidate("ready", None, {"n": ("add", _c("n"), ("lit", 1)), "h": HASH, "last": K})],
            "flip": [Candidate("other", ("cmp", "==", ("mod", K, ("lit", 3)), ("lit", 0)),
                               {"flips": ("add", _c("flips"), ("lit", 1)), "h": HASH})],
            "work": [Candidate("busy", None, {"h": HASH})],
        }),
        "other": StateDef("rest", on={
            "inc": [Candidate("other", ("cmp", "==", ("mod", _c("n"), ("lit", 2)), ("lit", 0)),
                              {"n": ("add", _c("n"), ("lit", 2)), "h": HASH}),
                    Candidate("ready", None, {"n": ("add", _c("n"), ("lit", 1)), "h": HASH})],
            "flip": [Candidate("ready", ("cmp", "!=", ("mod", K, ("lit", 3)), ("lit", 1)), {"h": HASH})],
        }),
        "busy": StateDef("action", task="crunch", max_attempts=1, on_done="ready"),
    })


def crunch(payload: dict) -> dict:
    """The action's output: what the worker saw of the context (the model checks the payload too)."""
    return {"crunched": payload["context"]["n"]}


class ActionWorker:
    """A thread on its own connection completing the machine's action items until told to stop and
    the machine is no longer suspended."""

    def __init__(self, dsn: str, run_id):
        self.dsn, self.run_id = dsn, run_id
        self.stop = threading.Event()
        self.completed = 0
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        try:
            with connect(self.dsn) as conn:
                while True:
                    rows = claim_work(conn, [QUEUE], "crunch-worker", "1 hour", 1)
                    for r in rows:
                        complete_work(conn, r["work_item_id"], r["fencing_token"], crunch(r["payload"]))
                        self.completed += 1
                    if rows:
                        continue
                    if self.stop.is_set() and not conn.execute(
                            "SELECT suspended FROM flowforge.machine_run WHERE run_id = %s",
                            (self.run_id,)).fetchone()[0]:
                        return
                    time.sleep(0.002)  # polling for the next action, nothing asserted on it
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            self.error = exc

    def join(self) -> None:
        self.stop.set()
        self.thread.join(120)
        assert not self.thread.is_alive(), "the action worker did not finish"
        if self.error is not None:
            raise self.error


def _refused_state(message: str) -> str | None:
    m = re.search(r'state "([^"]+)"', message)
    return m.group(1) if m else None


def _judge(mdef: MachineDef, snapshot: tuple, event: str, payload: dict) -> str | None:
    """At a resting point (state, context), the state named by the model's refusal, or None if accepted."""
    state, context, suspended, live = snapshot
    if suspended or not live:
        return "<not resting>"
    probe = MachineRun(mdef)
    probe.state, probe.context = state, context
    try:
        probe.accept(event, payload)
    except Refused as exc:
        return exc.state
    return None


# --- ten connections, 500 events ------------------------------------------------------------

def test_ten_connections_500_events_one_serial_order_equal_to_the_model(migrated_dsn):
    mdef = counter()
    with connect(migrated_dsn) as conn:
        define(conn, mdef.spec("counter", QUEUE))
        run_id = start_run(conn, "counter")
    rng = random.Random(1415)
    plans = [[(rng.choices(["inc", "flip", "work"], [66, 30, 4])[0], {"k": rng.randrange(100)}, f"s{i}-{j}")
              for j in range(EVENTS_PER_SENDER)] for i in range(N_SENDERS)]
    barrier = threading.Barrier(N_SENDERS)
    worker = ActionWorker(migrated_dsn, run_id)

    def sender(i: int) -> list[tuple]:
        answers = []
        with connect(migrated_dsn) as conn:
            barrier.wait()
            for j, (event, payload, event_id) in enumerate(plans[i]):
                try:
                    answers.append((j, "ok", send(conn, run_id, event, payload, event_id)))
                except psycopg.Error as exc:
                    assert exc.sqlstate == REFUSED, (exc.sqlstate, str(exc))
                    answers.append((j, "refused", exc.diag.message_primary))
        return answers

    try:
        results = run_threads([lambda i=i: sender(i) for i in range(N_SENDERS)], timeout=300)
    finally:
        worker.join()
    answers = {plans[i][j][2]: (i, j) + plans[i][j][:2] + (kind, value)
               for i, (got, _) in enumerate(results) for j, kind, value in got}
    assert len(answers) == N_SENDERS * EVENTS_PER_SENDER

    with connect(migrated_dsn) as conn:
        rows = conn.execute("SELECT n, cause, outcome, event, event_id, payload, detail FROM flowforge.machine_transition "
                            "WHERE run_id = %s ORDER BY n", (run_id,)).fetchall()
        items = {r[0]: (r[1], r[2], r[3]) for r in conn.execute(
            "SELECT id, payload, output, status::text FROM flowforge.work_item WHERE run_id = %s", (run_id,))}
        history = db_history(conn, run_id)
        machine = db_machine(conn, run_id)
        seen = {r[0] for r in conn.execute("SELECT event_id FROM flowforge.machine_event_seen WHERE run_id = %s",
                                           (run_id,))}
        queue_left = conn.execute("SELECT count(*) FROM flowforge.machine_event_queue WHERE run_id = %s",
                                  (run_id,)).fetchone()[0]
        kinds = collections.Counter(dict(conn.execute(
            "SELECT kind::text, count(*) FROM flowforge.task_run_event WHERE workflow_run_id = %s AND work_item_id IS NULL "
            "GROUP BY 1", (run_id,)).fetchall()))

    assert [r[0] for r in rows] == list(range(1, len(rows) + 1)), "history numbers are not 1..N without gaps"
    assert rows[0][1] == "start" and all(r[1] in ("event", "action_done") for r in rows[1:]), {r[1] for r in rows}
    ok = {eid for eid, a in answers.items() if a[4] == "ok"}
    in_history = [r[4] for r in rows if r[1] == "event"]
    assert collections.Counter(in_history) == collections.Counter(ok), \
        "the history's events are not exactly the events whose send succeeded, once each"
    assert seen == ok, "the event ids recorded are not exactly those of the events taken"
    assert queue_left == 0 and not machine["suspended"]
    queued = {eid for eid in ok if answers[eid][5]["outcome"] == "queued"}
    assert queued == {r[4] for r in rows if r[1] == "event" and r[6].get("queued")}
    assert all(answers[eid][5]["outcome"] == "applied" for eid in ok - queued)
    refused = [a for a in answers.values() if a[4] == "refused"]
    # The workload reaches every path (with ten senders at once and ~75 actions this is never close).
    assert queued and refused and worker.completed > 1, (len(queued), len(refused), worker.completed)
    print(f"queued {len(queued)}, refused {len(refused)}, actions {worker.completed}, history {len(rows)}")

    # The serial order: the rows, with each queued event's send put just before the action's end
    # that resumed the machine it then applied to (it was sent while the machine was suspended).
    inputs: list[tuple] = []
    pending_queued: list[str] = []
    for row in reversed(rows[1:]):
        _, cause, _, _, event_id, _, detail = row
        if cause == "event" and detail.get("queued"):
            pending_queued.append(event_id)
        elif cause == "event":
            inputs.append(("send", event_id))
        else:
            inputs.append(("done", detail["work_item_id"]))
            inputs.extend(("send", eid) for eid in pending_queued)
            pending_queued = []
    assert pending_queued == [], "a queued event applied before any action ended"
    inputs.reverse()

    model = MachineRun(mdef)
    model.start()
    snapshots = []
    position: dict[str, int] = {}
    for p, (kind, ref) in enumerate(inputs):
        snapshots.append((model.state, dict(model.context), model.suspended, model.live))
        if kind == "send":
            i, j, event, payload, _, answer = answers[ref]
            position[ref] = p
            try:
                want = model.send(event, payload, ref)
            except Refused as exc:
                raise AssertionError(f"the model refuses {ref} ({event} {payload}) at its place in the history: "
                                     f"{exc}") from None
            assert answer == want, f"{ref}: the sender got {answer}, the model says {want}"
        else:
            payload, output, status = items[uuid.UUID(ref)]
            assert status == "completed"
            assert model.action is not None and payload == model.action.payload, (payload, model.action)
            model.claim(model.action)
            model.action_completed(output)
    snapshots.append((model.state, dict(model.context), model.suspended, model.live))

    assert history == model.history, _first_difference(history, model.history)
    assert (machine["state"], machine["context"], machine["status"], machine["transitions"],
            machine["history_length"]) == \
        (model.state, model.context, "running", model.transitions, len(model.history))
    assert machine["next_event_seq"] == len(queued) + 1
    outcomes = collections.Counter(r[2] for r in rows)
    assert kinds == collections.Counter({"run_started": 1, "state_entered": outcomes["entered"],
                                         "event_refused": outcomes["refused"]}), kinds

    # Each sender's events are in the order it sent them.
    for i in range(N_SENDERS):
        mine = [position[eid] for _, _, eid in plans[i] if eid in ok]
        assert mine == sorted(mine), f"sender {i}'s events are out of its program order"

    # A refused event was refused at a resting point between its sender's neighbouring events.
    for eid, (i, j, event, payload, _, message) in ((e, a) for e, a in answers.items() if a[4] == "refused"):
        before = [position[e] for _, _, e in plans[i][:j] if e in ok]
        after = [position[e] for _, _, e in plans[i][j + 1:] if e in ok]
        lo = before[-1] + 1 if before else 0
        hi = after[0] if after else len(inputs)
        named = _refused_state(message)
        judged = [_judge(mdef, snapshots[q], event, payload) for q in range(lo, hi + 1)]
        assert named in judged, (f"{eid} ({event} {payload}) refused in state {named!r} ({message}); the model "
                                 f"refuses it in none of the states between positions {lo} and {hi}: {judged}")


def _first_difference(got: list, want: list) -> str:
    for n, (g, w) in enumerate(zip(got, want), start=1):
        if g != w:
            return f"history differs first at n={n}: db={g} model={w}"
    return f"history lengths differ: db={len(got)} model={len(want)}"


# --- eight connections, one event id ----------------------------------------------------------

def test_one_event_id_from_eight_connections_is_applied_once(migrated_dsn):
    """Round after round, eight connections send the same (event, payload, event_id) at once:
    one applied (or queued while the action runs), seven duplicate; a refused one records no id, so
    all eight are refused. Each id is in the history once, and the model agrees with every answer."""
    mdef = counter()
    with connect(migrated_dsn) as conn:
        define(conn, mdef.spec("counter", QUEUE))
        run_id = start_run(conn, "counter")
    model = MachineRun(mdef)
    model.start()
    rounds = [("inc", 1), ("inc", 2), ("flip", 4), ("flip", 3), ("inc", 5), ("flip", 6), ("work", 7),
              ("inc", 8), ("flip", 9), ("inc", 10), ("work", 11), ("inc", 12)]
    conns = [connect(migrated_dsn) for _ in range(8)]
    seen_outcomes = set()
    try:
        for r, (event, k) in enumerate(rounds):
            if model.suspended and r % 3 == 0:  # let the action end now and then: the queue drains
                with connect(migrated_dsn) as conn:
                    (row,) = claim_work(conn, [QUEUE], "w", "1 hour")
                    complete_work(conn, row["work_item_id"], row["fencing_token"], crunch(row["payload"]))
                model.claim(model.action)
                model.action_completed(crunch(model.action.payload))
            event_id = f"dup-{r}"
            barrier = threading.Barrier(len(conns))

            def one(c):
                barrier.wait()
                try:
                    return ("ok", send(c, run_id, event, {"k": k}, event_id))
                except psycopg.Error as exc:
                    return ("error", exc.sqlstate)

            got = [res for res, _ in run_threads([lambda c=c: one(c) for c in conns])]
            try:
                first = model.send(event, {"k": k}, event_id)
            except Refused:
                assert got == [("error", REFUSED)] * 8, (r, event, k, got)
                seen_outcomes.add("refused")
                continue
            seen_outcomes.add(first["outcome"])
            outcomes = collections.Counter(res[1]["outcome"] for res in got if res[0] == "ok")
            assert outcomes == {first["outcome"]: 1, "duplicate": 7}, (r, event, k, got)
            # Every answer, duplicate or not, names the state as the machine is after the round.
            assert {(res[1]["state"], res[1]["suspended"]) for res in got} == {(model.state, model.suspended)}, got
        if model.suspended:
            with connect(migrated_dsn) as conn:
                (row,) = claim_work(conn, [QUEUE], "w", "1 hour")
                complete_work(conn, row["work_item_id"], row["fencing_token"], crunch(row["payload"]))
            model.claim(model.action)
            model.action_completed(crunch(model.action.payload))
        # A late redelivery of every id: duplicate, nothing moves.
        for r, (event, k) in enumerate(rounds):
            if f"dup-{r}" in model.seen:
                assert send(conns[r % 8], run_id, event, {"k": k}, f"dup-{r}")["outcome"] == "duplicate"
    finally:
        for c in conns:
            c.close()
    with connect(migrated_dsn) as conn:
        history = db_history(conn, run_id)
        machine = db_machine(conn, run_id)
        seen = {r[0] for r in conn.execute("SELECT event_id FROM flowforge.machine_event_seen WHERE run_id = %s",
                                           (run_id,))}
    assert history == model.history, _first_difference(history, model.history)
    ids = [h[3] for h in history if h[3] is not None]
    assert len(ids) == len(set(ids)) and set(ids) == seen == model.seen
    assert (machine["state"], machine["context"]) == (model.state, model.context)
    assert seen_outcomes == {"applied", "queued", "refused"}, seen_outcomes


# --- a timer racing an event -----------------------------------------------------------------------

def poke_machine(late_accepts_poke: bool) -> dict:
    """waiting: poke → poked (final), or after 1 minute → late (final; or, accepting poke, → poked_late)."""
    states = {
        "waiting": {"on": {"poke": "poked"}, "after": [{"delay": "1 minute", "target": "late"}]},
        "poked": {"final": True},
        "late": {"final": True},
    }
    if late_accepts_poke:
        states["late"] = {"on": {"poke": "poked_late"}}
        states["poked_late"] = {"final": True}
    return {"name": "poke_late" if late_accepts_poke else "poke", "kind": "statemachine", "initial": "waiting",
            "states": states}


@pytest.fixture
def clocked(migrated_dsn):
    """The steerable clock installed; a ticker connection (its own transactions) two minutes ahead —
    every timer set in real time is due for it — and an observer."""
    install_clock(migrated_dsn)
    observer = connect(migrated_dsn)
    ticker = connect(migrated_dsn, autocommit=False)
    set_clock(ticker, db_now(observer) + timedelta(minutes=2))
    ticker.commit()
    try:
        yield migrated_dsn, ticker, observer
    finally:
        ticker.close()
        observer.close()


def _entries(conn, run_id) -> list[tuple]:
    return [(h[0], h[1], h[2], h[5], h[6]) for h in db_history(conn, run_id)]


@pytest.mark.parametrize("late_accepts_poke", [False, True])
def test_timer_first_the_event_waits_and_is_judged_in_the_timers_state(clocked, late_accepts_poke):
    dsn, ticker, observer = clocked
    spec = poke_machine(late_accepts_poke)
    define(observer, spec)
    run_id = start_run(observer, spec["name"])

    counts = ticker.execute("SELECT flowforge.tick()").fetchone()[0]
    assert counts["timers_fired"] == 1, counts
    poke = Blocked(connect(dsn), lambda c: send(c, run_id, "poke", {}, "poke-1"))
    try:
        wait_blocked(observer, poke.pid, by=ticker.info.backend_pid, what="send_event behind the timer")
        ticker.commit()
        outcome = poke.result()
    finally:
        poke.conn.close()
    history = _entries(observer, run_id)
    assert history[:2] == [("start", "entered", None, None, "waiting"), ("timer", "entered", None, "waiting", "late")]
    if late_accepts_poke:
        assert outcome[0] == "ok" and outcome[1]["outcome"] == "applied" and outcome[1]["state"] == "poked_late"
        assert history[2:] == [("event", "entered", "poke", "late", "poked_late")]
    else:
        assert outcome[:2] == ("error", REFUSED) and "the run has ended" in outcome[2], outcome
        assert history[2:] == []
        # Refused: its id was not recorded, nothing else written.
        assert observer.execute("SELECT count(*) FROM flowforge.machine_event_seen WHERE run_id = %s",
                                (run_id,)).fetchone()[0] == 0
    assert observer.execute("SELECT count(*) FROM flowforge.machine_timer WHERE run_id = %s",
                            (run_id,)).fetchone()[0] == 0


def test_event_first_the_timer_does_not_fire(clocked):
    """The event's transaction holds the run; the tick does not wait for a busy run (SKIP LOCKED) and
    fires nothing; after the event commits, its timer is gone and a later tick fires nothing either."""
    dsn, ticker, observer = clocked
    define(observer, poke_machine(False))
    run_id = start_run(observer, "poke")
    sender = connect(dsn, autocommit=False)
    try:
        assert send(sender, run_id, "poke", {}, "poke-1")["outcome"] == "applied"
        tick = Blocked(ticker, lambda c: c.execute("SELECT flowforge.tick()").fetchone()[0])
        status, counts = tick.result()  # never waits on the sender's lock
        assert status == "ok" and counts["timers_fired"] == 0, counts
        ticker.commit()
        sender.commit()
    finally:
        sender.close()
    assert ticker.execute("SELECT flowforge.tick()").fetchone()[0]["timers_fired"] == 0
    ticker.commit()
    assert _entries(observer, run_id) == [("start", "entered", None, None, "waiting"),
                                          ("event", "entered", "poke", "waiting", "poked")]
    assert observer.execute("SELECT count(*) FROM flowforge.machine_timer WHERE run_id = %s",
                            (run_id,)).fetchone()[0] == 0


def test_timers_and_events_raced_freely_each_machine_moves_once(clocked):
    """Forty machines with a due timer; four connections poke them while two tickers fire timers, in
    any interleaving: every machine took exactly one transition out of waiting — the timer's (and
    then its poke was refused, the run having ended) or the poke's (and its timer never fired)."""
    dsn, ticker, observer = clocked
    define(observer, poke_machine(False))
    runs = [start_run(observer, "poke") for _ in range(40)]
    ticker.close()
    ahead = db_now(observer) + timedelta(minutes=2)

    def poker(i: int) -> dict:
        got = {}
        with connect(dsn) as c:
            for run in runs[i::4]:
                try:
                    got[run] = send(c, run, "poke", {}, f"poke-{run}")["outcome"]
                except psycopg.Error as exc:
                    got[run] = exc.sqlstate
        return got

    def tick_loop() -> int:
        fired = 0
        with connect(dsn) as c:
            set_clock(c, ahead)
            for _ in range(20):
                fired += c.execute("SELECT flowforge.tick()").fetchone()[0]["timers_fired"]
        return fired

    results = run_threads([lambda i=i: poker(i) for i in range(4)] + [tick_loop, tick_loop])
    outcomes = {}
    for got, _ in results[:4]:
        outcomes.update(got)
    fired = results[4][0] + results[5][0]
    # Whatever the tickers left (a run busy at their every look), one more tick settles.
    with connect(dsn) as c:
        set_clock(c, ahead)
        fired += c.execute("SELECT flowforge.tick()").fetchone()[0]["timers_fired"]
    by_winner = collections.Counter()
    for run in runs:
        history = _entries(observer, run)
        assert history[0] == ("start", "entered", None, None, "waiting")
        assert len(history) == 2, history
        if history[1] == ("timer", "entered", None, "waiting", "late"):
            assert outcomes[run] == REFUSED, (run, outcomes[run])
            by_winner["timer"] += 1
        else:
            assert history[1] == ("event", "entered", "poke", "waiting", "poked"), history
            assert outcomes[run] == "applied", (run, outcomes[run])
            by_winner["event"] += 1
        assert db_machine(observer, run)["status"] == "succeeded"
    assert by_winner["timer"] == fired, (by_winner, fired)
    assert observer.execute("SELECT count(*) FROM flowforge.machine_timer").fetchone()[0] == 0
    print(f"winners: {dict(by_winner)}")
