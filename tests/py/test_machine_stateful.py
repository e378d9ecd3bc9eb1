"""A Hypothesis state machine driving random state machines (issue 14) — send_event, their actions
through the work-item API (claim_work, complete_work, fail_work), timers fired by tick() under a
steered clock, cancel_run, retry_run — against the Python model of helpers_machines.MachineRun.

Each example draws one definition: one to three resting states, up to two action states and one or
two final ones, every state reachable from the initial one (a resting state, now and then an action
state); resting states accept some of the events e0..e3 with one or more candidates, each with no
guard or a comparison over the event and the context (``$.context.n >= $.event.k``,
``(($.context.m + $.event.v) % 3) == 0``...) and assignments of context keys n, m and tag from
jsonpath arithmetic over both (``($.context.n * 2)``, ``$.event.k``, a literal ``"x"``); a third of
them have one or two timers (10–45 s, distinct delays); action states have 1–2 attempts, an on_done
and sometimes an on_error. Event payloads carry numbers, a string, or nothing under the keys the
expressions read, so guards that cannot be evaluated and assignments that yield nothing (null) are
exercised too. Event ids are fresh, absent, reused within a run (duplicates) or borrowed from
another run (not duplicates there); ``ez`` is an event no state accepts.

After every step, for every run of the example: status, state, context, reason, failure, the
counters, live and suspended; the whole history (machine_transition, row for row); the event
queue; the timers and their due times; the event ids seen; each action item's status, fencing
token and attempt; the run-level events; the directory's ended_at; and what get_run shows — all
equal to the model. Refusals are FF012 with nothing written, stale tokens FF004, the current token
of an item that is not dispatched FF005, unknown runs FF001, cancel/retry in the wrong status FF005.

One autocommit connection whose flowforge.now() is steered (tests/fixtures/clock.sql), each example
its own definition and queue in one migrated database; leases are a day long and never reaped. The
budget is small and fixed: derandomized, no example database.
"""

from __future__ import annotations

import collections
import itertools
import uuid
from datetime import timedelta

import psycopg
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from psycopg.types.json import Jsonb

from helpers_engines import (
    ILLEGAL_TRANSITION,
    NOT_FOUND,
    STALE_TOKEN,
    claim_work,
    complete_work,
    connect,
    db_now,
    define,
    fail_work,
    heartbeat_work,
    install_clock,
    set_clock,
    sqlstate_of,
    start_run,
)
from helpers_machines import (
    Candidate,
    IllegalTransition,
    Item,
    MachineDef,
    MachineRun,
    Refused,
    StateDef,
)

REFUSED = "FF012"
EVENTS = ["e0", "e1", "e2", "e3"]
NOBODYS_EVENT = "ez"
_example = itertools.count()
COVERED: collections.Counter = collections.Counter()  # which paths the examples took (printed)

SEND = "SELECT flowforge.send_event(run_id => %s::uuid, event => %s::text, payload => %s::jsonb, event_id => %s::text)"


# --- the definitions -------------------------------------------------------------------------------

ATOMS = st.sampled_from([("ctx", "n"), ("ctx", "m"), ("ev", "k"), ("ev", "v")])
LITS = st.integers(0, 4).map(lambda i: ("lit", i))
NUMS = st.one_of(
    ATOMS,
    st.tuples(st.just("add"), ATOMS, LITS),
    st.tuples(st.just("mul"), ATOMS, LITS),
    st.tuples(st.just("mod"), st.tuples(st.just("add"), ATOMS, ATOMS), st.integers(2, 5).map(lambda i: ("lit", i))),
)
GUARDS = st.one_of(st.none(), st.none(), st.none(),
                   st.tuples(st.just("cmp"), st.sampled_from(["==", "!=", "<", "<=", ">", ">="]), NUMS,
                             st.one_of(LITS, ATOMS)))
ASSIGNS = st.dictionaries(st.sampled_from(["n", "m", "tag"]), st.one_of(NUMS, st.sampled_from(
    [("str", "x"), ("str", "y"), ("ev", "k")])), max_size=2)


@st.composite
def machines(draw) -> MachineDef:
    rest = [f"r{i}" for i in range(draw(st.integers(1, 3)))]
    action = [f"a{i}" for i in range(draw(st.sampled_from([0, 1, 1, 2])))]
    final = [f"f{i}" for i in range(draw(st.integers(1, 2)))]
    names = rest + action + final
    states = {s: StateDef("rest") for s in rest}
    states |= {s: StateDef("action", task=f"t_{s}", max_attempts=draw(st.integers(1, 3))) for s in action}
    states |= {s: StateDef("final") for s in final}

    def candidate(target: str) -> Candidate:
        return Candidate(target, draw(GUARDS), draw(ASSIGNS))

    initial = "a0" if action and draw(st.integers(0, 3)) == 0 else "r0"
    others = draw(st.permutations([s for s in names if s != initial]))
    if initial == "a0":  # an action state has two ways out: a resting state right after it keeps the rest reachable
        others = ["r0"] + [s for s in others if s != "r0"]
    order = [initial] + list(others)
    for k, name in enumerate(order[1:], start=1):
        parents = [s for s in order[:k] if states[s].kind == "rest"] or \
            [s for s in order[:k] if states[s].kind == "action" and (states[s].on_done is None or states[s].on_error is None)]
        parent = draw(st.sampled_from(parents))
        if states[parent].kind == "rest":
            states[parent].on.setdefault(draw(st.sampled_from(EVENTS)), []).append(candidate(name))
        elif states[parent].on_done is None:
            states[parent].on_done = name
        else:
            states[parent].on_error = name
    for s in rest:
        for event, target in draw(st.lists(st.tuples(st.sampled_from(EVENTS), st.sampled_from(names)), max_size=3)):
            states[s].on.setdefault(event, []).append(candidate(target))
        if not states[s].on:
            states[s].on[draw(st.sampled_from(EVENTS))] = [candidate(draw(st.sampled_from(names)))]
        for cands in states[s].on.values():  # candidates in a random order: the first that holds is taken
            cands[:] = draw(st.permutations(cands))
        if draw(st.booleans()):
            delays = draw(st.lists(st.sampled_from([10, 20, 30, 45]), min_size=1, max_size=2, unique=True))
            states[s].after = [(d, draw(st.sampled_from(names))) for d in delays]
    for s in action:
        if states[s].on_done is None:
            states[s].on_done = draw(st.sampled_from(names))
        if states[s].on_error is None and draw(st.booleans()):
            states[s].on_error = draw(st.sampled_from(names))
    context = draw(st.sampled_from([{}, {"n": 0}, {"n": 1, "m": 2}]))
    return MachineDef(initial=initial, states=states, context=context)


PAYLOADS = st.one_of(
    st.just({}),
    st.builds(lambda k: {"k": k}, st.integers(0, 4)),
    st.builds(lambda k, v: {"k": k, "v": v}, st.integers(0, 4), st.integers(0, 4)),
    st.just({"k": "s"}),   # a string: arithmetic on it yields nothing, comparisons with numbers do not hold
    st.just({"v": None}),
)
OUTPUTS = st.one_of(
    st.none(),
    st.builds(lambda n: {"n": n}, st.integers(0, 4)),
    st.builds(lambda m: {"m": m, "tag": "y"}, st.integers(0, 4)),
    st.integers(0, 4),     # not an object: stored under the state's name
    st.just("done"),
)


# --- the state machine of the test ----------------------------------------------------------------------

class MachineWalk(RuleBasedStateMachine):
    dsn: str = ""

    def __init__(self):
        super().__init__()
        n = next(_example)
        self.name, self.queue = f"mwalk_{n}", f"mq{n}"
        self.conn = connect(self.dsn)
        self.t0 = db_now(self.conn).replace(microsecond=0) + timedelta(hours=n)  # after every earlier example
        self.now = 0.0
        set_clock(self.conn, self.t0)
        self.mdef: MachineDef | None = None
        self.runs: dict[uuid.UUID, MachineRun] = {}
        self.ids = itertools.count()
        self.used_ids: list[str] = []
        self.step = 0
        self.counted: dict = {}
        self.touched = None

    def teardown(self):
        try:
            self.conn.execute("SELECT flowforge.cancel_run(run_id, 'teardown') FROM flowforge.machine_run "
                              "WHERE run_id = ANY (%s) AND status = 'running'", (list(self.runs),))
        finally:
            self.conn.close()

    # --- bookkeeping ---------------------------------------------------------------------

    def _items(self, *statuses: str) -> list[tuple[MachineRun, Item]]:
        return [(r, i) for r in self.runs.values() for i in r.items if not statuses or i.status in statuses]

    def _learn_items(self, run: MachineRun) -> None:
        """The model created the run's new action items (at most one per call): their ids from the database."""
        unknown = [i for i in run.items if i.id is None]
        known = {i.id for i in run.items if i.id is not None}
        fresh = [r[0] for r in self.conn.execute(
            "SELECT id FROM flowforge.work_item WHERE run_id = %s ORDER BY created_at, id", (run.id,)).fetchall()
            if r[0] not in known]
        assert len(fresh) == len(unknown) <= 1, (fresh, unknown)
        for item, item_id in zip(unknown, fresh):
            item.id = item_id

    def _after(self, run: MachineRun) -> None:
        self._learn_items(run)
        self.step += 1
        self.touched = run.id  # the run whose get_run the invariant reads (one per step: it is the dear read)

    # --- rules ----------------------------------------------------------------------------

    @initialize(mdef=machines())
    def define_and_start(self, mdef):
        self.mdef = mdef
        define(self.conn, mdef.spec(self.name, self.queue))
        self.start({})

    @precondition(lambda self: len(self.runs) < 8 and sum(r.live for r in self.runs.values()) < 2)
    @rule(run_input=st.sampled_from([{}, {"n": 3}, {"m": 0, "tag": "z"}]))
    def start(self, run_input):
        run_id = start_run(self.conn, self.name, run_input)
        run = MachineRun(self.mdef, run_input, run_id)
        run.start(self.now)
        self.runs[run_id] = run
        self._after(run)

    @precondition(lambda self: len(self.runs) < 8 and not any(r.live for r in self.runs.values()))
    @rule(run_input=st.sampled_from([{}, {"n": 1}]))
    def start_again(self, run_input):  # nothing is live: a new run, sooner than the uniform choice would
        self.start(run_input)

    @rule(data=st.data(), event=st.sampled_from(EVENTS + EVENTS + [NOBODYS_EVENT]), payload=PAYLOADS,
          id_kind=st.sampled_from(["none", "fresh", "fresh", "reuse", "borrow"]), pick=st.integers(0, 3))
    def send(self, data, event, payload, id_kind, pick):
        live = [r for r in self.runs.values() if r.live]
        run = data.draw(st.sampled_from(live if live and pick else list(self.runs.values())))
        accepted = sorted(self.mdef.states[run.state].on) if run.live and not run.suspended else []
        if accepted and pick:  # mostly an event the state has a transition for (its guards decide)
            event = data.draw(st.sampled_from(accepted))
        mine = [h[3] for h in run.history if h[3] is not None] + [q[2] for q in run.queue if q[2] is not None]
        if id_kind == "reuse" and mine:
            event_id = data.draw(st.sampled_from(sorted(set(mine))))
        elif id_kind == "borrow" and [i for i in self.used_ids if i not in run.seen]:
            event_id = data.draw(st.sampled_from([i for i in self.used_ids if i not in run.seen]))
        elif id_kind == "none":
            event_id = None
        else:
            event_id = f"id-{next(self.ids)}"
        try:
            want = run.send(event, payload, event_id, now=self.now)
        except Refused:
            want = None
        try:
            got = self.conn.execute(SEND, (run.id, event, Jsonb(payload), event_id)).fetchone()[0]
        except psycopg.Error as exc:
            assert want is None and exc.sqlstate == REFUSED, (want, exc.sqlstate, str(exc))
            COVERED["send refused"] += 1
        else:
            assert got == want, (event, payload, event_id, got, want)
            COVERED[f"send {got['outcome']}"] += 1
        if event_id is not None:
            self.used_ids.append(event_id)
        self._after(run)

    # Sending is what a machine mostly does: weighted up (Hypothesis picks among enabled rules uniformly).
    @precondition(lambda self: any(r.live for r in self.runs.values()))
    @rule(data=st.data(), event=st.sampled_from(EVENTS), payload=PAYLOADS,
          id_kind=st.sampled_from(["none", "fresh", "reuse"]), pick=st.integers(0, 3))
    def send_more(self, data, event, payload, id_kind, pick):
        self.send(data, event, payload, id_kind, pick)

    @precondition(lambda self: any(r.live for r in self.runs.values()))
    @rule(data=st.data(), event=st.sampled_from(EVENTS), payload=PAYLOADS, pick=st.integers(0, 3))
    def send_again(self, data, event, payload, pick):
        self.send(data, event, payload, "fresh", pick)

    @rule(batch=st.integers(1, 3))
    def claim(self, batch):
        pending = {i.id: (r, i) for r, i in self._items("pending")}
        rows = claim_work(self.conn, [self.queue], "walker", "1 day", batch)
        assert len(rows) == min(batch, len(pending)), (rows, batch, list(pending))
        for row in rows:
            assert row["work_item_id"] in pending, "claimed an item the model does not have pending"
            run, item = pending[row["work_item_id"]]
            run.claim(item)
            assert (row["run_id"], row["engine_kind"], row["task_name"], row["attempt"], row["fencing_token"],
                    row["payload"]) == (run.id, "statemachine", item.task, item.attempt, item.token, item.payload)
        self.step += 1

    # An action ends completed (mostly) or failed, retryable or not: one rule for every ending, so
    # switching rules off per example (Hypothesis's swarm testing) never leaves actions one way only.
    SETTLE = st.sampled_from(["complete", "complete", "fail", "fail for good"])

    @precondition(lambda self: self._items("dispatched"))
    @rule(data=st.data(), how=SETTLE, output=OUTPUTS)
    def settle(self, data, how, output):
        run, item = data.draw(st.sampled_from(self._items("dispatched")))
        assert run.action is item
        if how == "complete":
            complete_work(self.conn, item.id, item.token, output)
            run.action_completed(output, now=self.now)
            COVERED["action completed"] += 1
        else:
            retryable = how == "fail"
            fail_work(self.conn, item.id, item.token, "boom", retryable)
            run.action_failed("boom", retryable, now=self.now)
            COVERED["action " + ("retried" if item.status == "pending" else "failed for good")] += 1
        self._after(run)

    # ... and claim + settle weighted up, so machines get past their actions often.
    @precondition(lambda self: self._items("pending"))
    @rule(data=st.data(), how=SETTLE, output=OUTPUTS)
    def walk(self, data, how, output):
        self.claim(1)
        self.settle(data, how, output)

    @precondition(lambda self: self._items("pending"))
    @rule(data=st.data(), how=SETTLE, output=OUTPUTS)
    def walk_more(self, data, how, output):
        self.walk(data, how, output)

    @precondition(lambda self: any(r.live for r in self.runs.values()))
    @rule(seconds=st.sampled_from([5, 10, 15, 25, 45]))
    def advance_and_tick(self, seconds):
        self.now += seconds
        set_clock(self.conn, self.t0 + timedelta(seconds=self.now))
        counts = self.conn.execute("SELECT flowforge.tick()").fetchone()[0]
        fired = sum(run.tick(self.now) for run in self.runs.values())
        assert counts["timers_fired"] == fired, (counts, fired)
        COVERED["timer fired"] += fired
        assert counts["reaped_items"] == 0, counts
        for run in self.runs.values():
            self._learn_items(run)
        self.step += 1

    @precondition(lambda self: any(r.timers for r in self.runs.values()))
    @rule(seconds=st.sampled_from([10, 45]))
    def tick_a_timer(self, seconds):  # a machine resting where a timer waits: time passes, sooner than uniformly
        self.advance_and_tick(seconds)

    @precondition(lambda self: self.step % 3 == 0)  # now and then
    @rule(data=st.data())
    def cancel(self, data):
        run = data.draw(st.sampled_from(list(self.runs.values())))
        code = sqlstate_of(lambda: self.conn.execute("SELECT flowforge.cancel_run(%s, 'stateful')", (run.id,)))
        try:
            run.cancel("stateful")
        except IllegalTransition:
            assert code == ILLEGAL_TRANSITION, code
        else:
            assert code is None, code
            COVERED["cancelled"] += 1
        self._after(run)

    @rule(data=st.data())
    def retry(self, data):
        run = data.draw(st.sampled_from(list(self.runs.values())))
        code = sqlstate_of(lambda: self.conn.execute("SELECT flowforge.retry_run(%s)", (run.id,)))
        try:
            run.retry(now=self.now)
        except IllegalTransition:
            assert code == ILLEGAL_TRANSITION, (code, run.status)
        else:
            assert code is None, code
            COVERED["retried"] += 1
        self._after(run)

    @rule(data=st.data(), probe=st.sampled_from(["stale", "not_dispatched", "unknown"]),
          op=st.sampled_from(["complete", "fail", "heartbeat"]))
    def probe(self, data, probe, op):
        """Writes that must be refused and change nothing: a stale token (FF004), the current token
        of an item that is not dispatched (FF005), a run or item nobody has (FF001)."""
        if probe == "stale" and [1 for _, i in self._items() if i.token > 0]:
            _, item = data.draw(st.sampled_from([(r, i) for r, i in self._items() if i.token > 0]))
            token = item.token + data.draw(st.sampled_from([-1, 1]))
            assert sqlstate_of(self._write(op, item, token)) == STALE_TOKEN
        elif probe == "not_dispatched" and self._items("pending", "completed", "failed", "cancelled"):
            _, item = data.draw(st.sampled_from(self._items("pending", "completed", "failed", "cancelled")))
            assert sqlstate_of(self._write(op, item, item.token)) == ILLEGAL_TRANSITION
        else:
            missing = uuid.uuid4()
            call = data.draw(st.sampled_from([
                lambda: self.conn.execute(SEND, (missing, "e0", Jsonb({}), None)),
                lambda: self.conn.execute(SEND, (missing, "e0", Jsonb({}), "id-0")),
                lambda: complete_work(self.conn, missing, 1),
                lambda: self.conn.execute("SELECT flowforge.cancel_run(%s)", (missing,)),
                lambda: self.conn.execute("SELECT flowforge.get_run(%s)", (missing,)),
            ]))
            assert sqlstate_of(call) == NOT_FOUND

    def _write(self, op: str, item: Item, token: int):
        return {
            "complete": lambda: complete_work(self.conn, item.id, token, {"late": True}),
            "fail": lambda: fail_work(self.conn, item.id, token, "late", True),
            "heartbeat": lambda: heartbeat_work(self.conn, item.id, token, "1 day"),
        }[op]

    # --- invariants -----------------------------------------------------------------------

    @invariant()
    def database_matches_model(self):
        COVERED["steps"] += 1
        if not self.runs:
            return
        rows = self.conn.execute(INVARIANT, {"ids": list(self.runs), "t0": self.t0,
                                             "touched": self.touched}).fetchall()
        assert {r[0] for r in rows} == set(self.runs)
        for (run_id, status, state, context, reason, failure, transitions, history_length, live, suspended,
             open_, history, queue, timers, seen, items, run_events, detail) in rows:
            run = self.runs[run_id]
            got = (status, state, context, reason, failure, transitions, history_length, live, suspended, open_)
            want = (run.status, run.state, run.context, run.reason, run.failure, run.transitions, len(run.history),
                    run.live, run.suspended, run.status == "running")
            assert got == want, f"run {run_id}: {got} != model {want}"
            model_history = [list(h) for h in run.history]
            assert history == model_history, _first_difference(history, model_history)
            assert queue == [[e, p, i] for e, p, i in run.queue]
            assert timers == sorted([[target, fire_at] for fire_at, _, target in run.timers],
                                    key=lambda t: t[1]), (timers, run.timers)
            assert set(seen) == run.seen
            assert items == {str(i.id): [i.task, i.status, i.token, i.attempt] for i in run.items}
            assert run_events == dict(collections.Counter(run.run_events))
            for h in run.history[len(self.counted.get(run_id, [])):]:
                COVERED[f"history {h[0]} {h[1]}"] += 1
            self.counted[run_id] = list(run.history)
            if detail is None:
                continue
            shown = {k: detail[k] for k in ("kind", "state", "machine_state", "context", "live", "suspended",
                                            "reason", "failure", "transitions", "history_length")}
            assert shown == {"kind": "statemachine", "state": run.status, "machine_state": run.state,
                             "context": run.context, "live": run.live, "suspended": run.suspended,
                             "reason": run.reason, "failure": run.failure, "transitions": run.transitions,
                             "history_length": len(run.history)}, shown
            assert [(h["cause"], h["outcome"], h.get("event"), h.get("from"), h.get("to"))
                    for h in detail["history"]] == [(h[0], h[1], h[2], h[5], h[6]) for h in run.history[-100:]]
            assert detail["action_item_id"] == (str(run.action.id) if run.action else None)
            assert [(q["event"], q.get("event_id")) for q in detail["queued"]] == [(e, i) for e, _, i in run.queue]


INVARIANT = """
SELECT m.run_id, m.status, m.state, m.context, m.reason, m.failure, m.transitions, m.history_length, m.live,
       m.suspended, e.ended_at IS NULL,
       (SELECT coalesce(jsonb_agg(jsonb_build_array(h.cause, h.outcome, h.event, h.event_id, h.payload, h.from_state,
                                                    h.to_state) ORDER BY h.n), '[]')
        FROM flowforge.machine_transition h WHERE h.run_id = m.run_id),
       (SELECT coalesce(jsonb_agg(jsonb_build_array(q.event, q.payload, q.event_id) ORDER BY q.seq), '[]')
        FROM flowforge.machine_event_queue q WHERE q.run_id = m.run_id),
       (SELECT coalesce(jsonb_agg(jsonb_build_array(t.target, extract(epoch FROM t.fire_at - %(t0)s::timestamptz))
                                  ORDER BY t.fire_at), '[]')
        FROM flowforge.machine_timer t WHERE t.run_id = m.run_id),
       (SELECT coalesce(array_agg(s.event_id::text), '{}') FROM flowforge.machine_event_seen s WHERE s.run_id = m.run_id),
       (SELECT coalesce(jsonb_object_agg(w.id, jsonb_build_array(w.task_name, w.status, w.fencing_token,
                                                                 w.retry_count + 1)), '{}')
        FROM flowforge.work_item w WHERE w.run_id = m.run_id),
       (SELECT coalesce(jsonb_object_agg(x.kind, x.n), '{}')
        FROM (SELECT ev.kind::text AS kind, count(*) AS n FROM flowforge.task_run_event ev
              WHERE ev.workflow_run_id = m.run_id AND ev.work_item_id IS NULL AND ev.kind::text LIKE 'run\\_%%'
              GROUP BY 1) x),
       CASE WHEN m.run_id = %(touched)s::uuid THEN flowforge.get_run(m.run_id) END
FROM flowforge.machine_run m JOIN flowforge.engine_run e ON e.run_id = m.run_id
WHERE m.run_id = ANY (%(ids)s)
"""


def _first_difference(got: list, want: list) -> str:
    for n, (g, w) in enumerate(zip(got, want), start=1):
        if g != w:
            return f"history differs first at n={n}: db={g} model={w}\n db: {got}\n model: {want}"
    return f"history lengths differ: db={len(got)} model={len(want)}\n db: {got}\n model: {want}"


def test_random_machines_match_the_model(migrated_dsn):
    install_clock(migrated_dsn)
    MachineWalk.dsn = migrated_dsn
    run_state_machine_as_test(
        MachineWalk,
        settings=settings(
            max_examples=30,
            stateful_step_count=30,
            derandomize=True,
            database=None,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )
    print("paths taken:", dict(sorted(COVERED.items())))
    # Which paths an example takes depends on Hypothesis's choices (swarm testing switches rules off
    # per example), so only the common ones are required; the print shows the rest.
    assert COVERED["send applied"] and COVERED["send refused"] and COVERED["history start entered"], COVERED
