"""A Hypothesis state machine driving the execution core's SQL API against a
small Python model of the run and task state machines.

One autocommit connection; every API call is its own transaction. Each
example gets its own queue and workflow names, so the examples share one
migrated database without seeing each other's tasks. Leases are an hour long
and reaping is left out: the steerable clock is transaction-local and would
not survive autocommit (the reaper is raced in test_core_concurrency.py).

Invariants after every step: task states, run states, fencing tokens and
attempts equal the model's; the events appended so far equal, per (run, task,
kind, from_state, to_state), the events the model expects; the run's
tasks_remaining and each pending task's remaining_deps counters agree with
the model.  complete_many is driven against the same model as complete: its
per-task outcomes (completed, stale, not_running, not_found) are asserted
where complete() would raise FF004 / FF005 / FF001.
"""

from __future__ import annotations

import collections
import itertools
import uuid
from dataclasses import dataclass, field

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

from helpers_core import (
    ILLEGAL_TRANSITION,
    NOT_FOUND,
    STALE_TOKEN,
    cancel_run,
    claim,
    complete,
    complete_many,
    connect,
    define,
    fail,
    heartbeat,
    retry_run,
    sqlstate_of,
    start_run,
)

MAX_ATTEMPTS = 2
UNFINISHED = ("pending", "ready", "running")
TASK_FIELDS = {"max_attempts": MAX_ATTEMPTS, "backoff": "0 seconds"}
SHAPES = {
    "single": {"only": []},
    "diamond": {"a": [], "b": ["a"], "c": ["a"], "d": ["b", "c"]},
}

_example = itertools.count()


@dataclass
class TaskModel:
    id: uuid.UUID
    key: str
    deps: list[str]
    state: str
    attempt: int = 1
    max_attempts: int = MAX_ATTEMPTS
    token: int = 0
    ready_seq: int | None = None  # which API call made it ready: claim order is oldest first


@dataclass
class RunModel:
    id: uuid.UUID
    shape: str
    state: str
    tasks: dict[str, TaskModel] = field(default_factory=dict)

    def dependents(self, key: str) -> list[TaskModel]:
        return [t for t in self.tasks.values() if key in t.deps]

    def downstream(self, key: str) -> list[TaskModel]:
        out: dict[str, TaskModel] = {}
        frontier = [key]
        while frontier:
            for t in self.dependents(frontier.pop()):
                if t.key not in out:
                    out[t.key] = t
                    frontier.append(t.key)
        return list(out.values())


class CoreMachine(RuleBasedStateMachine):
    dsn: str = ""

    def __init__(self):
        super().__init__()
        n = next(_example)
        self.queue = f"q{n}"
        self.names = {shape: f"{shape}_{n}" for shape in SHAPES}
        self.conn = connect(self.dsn)
        for shape, deps in SHAPES.items():
            define(self.conn, {"name": self.names[shape], "tasks": [
                {"key": key, "depends_on": d, "queue": self.queue, **TASK_FIELDS} for key, d in deps.items()
            ]})
        self.runs: dict[uuid.UUID, RunModel] = {}
        self.events: collections.Counter = collections.Counter()
        self.seq = 0  # one per API call (= one transaction)

    def teardown(self):
        self.conn.close()

    # --- the model's bookkeeping ---------------------------------------------

    def _event(self, run: RunModel, task: TaskModel | None, kind: str, from_state, to_state) -> None:
        self.events[(run.id, task.key if task else None, kind, from_state, to_state)] += 1

    def _set(self, run: RunModel, task: TaskModel, kind: str, to_state: str) -> None:
        self._event(run, task, kind, task.state, to_state)
        task.state = to_state
        if to_state == "ready":
            task.ready_seq = self.seq

    def _settle(self, run: RunModel) -> None:
        if run.state == "running" and not any(t.state in UNFINISHED for t in run.tasks.values()):
            end = "failed" if any(t.state == "failed" for t in run.tasks.values()) else "succeeded"
            self._event(run, None, f"run_{end}", "running", end)
            run.state = end

    def _tasks(self, *states: str) -> list[tuple[RunModel, TaskModel]]:
        return [(r, t) for r in self.runs.values() for t in r.tasks.values() if not states or t.state in states]

    def _claimed(self) -> list[tuple[RunModel, TaskModel]]:
        return [(r, t) for r, t in self._tasks() if t.token > 0]

    def _tick(self) -> None:
        self.seq += 1

    # --- rules ----------------------------------------------------------------

    @initialize()
    def first_runs(self):
        # Every example starts with work to do (Hypothesis's swarm testing may
        # disable the start rule for a whole example).
        self.start("diamond")
        self.start("single")

    # Few live runs at a time, so steps go into working them rather than starting more.
    @precondition(lambda self: len(self.runs) < 8 and sum(r.state == "running" for r in self.runs.values()) < 3)
    @rule(shape=st.sampled_from(sorted(SHAPES)))
    def start(self, shape):
        self._tick()
        run_id = start_run(self.conn, self.names[shape], {"seq": self.seq})
        assert run_id not in self.runs
        ids = dict(self.conn.execute(
            "SELECT task_key::text, id FROM flowforge.task_run WHERE workflow_run_id = %s", (run_id,)).fetchall())
        assert sorted(ids) == sorted(SHAPES[shape])
        run = RunModel(run_id, shape, "running")
        self._event(run, None, "run_started", None, "running")
        for key, deps in SHAPES[shape].items():
            state = "pending" if deps else "ready"
            task = TaskModel(ids[key], key, deps, state, ready_seq=self.seq if state == "ready" else None)
            run.tasks[key] = task
            self._event(run, task, "created", None, state)
        self.runs[run_id] = run

    @rule(batch=st.integers(1, 3))
    def claim(self, batch):
        self._tick()
        rows = claim(self.conn, [self.queue], "sm-worker", "1 hour", batch)
        ready = {t.id: (r, t) for r, t in self._tasks("ready")}
        assert len(rows) == min(batch, len(ready)), (rows, batch, list(ready))
        got = {row[0] for row in rows}
        assert got <= set(ready), "claimed a task the model does not have ready"
        # Oldest ready first (all priorities equal): no unclaimed ready task is older than a claimed one.
        if got and len(got) < len(ready):
            newest_claimed = max(ready[i][1].ready_seq for i in got)
            oldest_left = min(t.ready_seq for i, (_, t) in ready.items() if i not in got)
            assert newest_claimed <= oldest_left, "claim skipped an older ready task"
        for task_run_id, run_id, key, attempt, token, task_input, _lease in rows:
            run, task = ready[task_run_id]
            assert (run_id, key, attempt, token) == (run.id, task.key, task.attempt, task.token + 1)
            assert set(task_input["deps"]) == set(task.deps)
            task.token += 1
            self._set(run, task, "claimed", "running")

    # Hypothesis picks among the enabled rules uniformly: a second entry for
    # claim and complete doubles their weight, so runs get worked, not just
    # started and cancelled.
    @rule(batch=st.integers(1, 3))
    def claim_more(self, batch):
        self.claim(batch)

    @precondition(lambda self: self._tasks("running"))
    @rule(data=st.data())
    def heartbeat(self, data):
        run, task = data.draw(st.sampled_from(self._tasks("running")))
        self._tick()
        expires = heartbeat(self.conn, task.id, task.token, "1 hour")
        assert expires is not None

    @precondition(lambda self: self._tasks("running"))
    @rule(data=st.data())
    def complete(self, data):
        run, task = data.draw(st.sampled_from(self._tasks("running")))
        self._tick()
        complete(self.conn, task.id, task.token, {"key": task.key})
        self._set(run, task, "completed", "succeeded")
        for dependent in run.dependents(task.key):
            if dependent.state == "pending" and all(run.tasks[d].state == "succeeded" for d in dependent.deps):
                self._set(run, dependent, "released", "ready")
        self._settle(run)

    @precondition(lambda self: self._tasks("running"))
    @rule(data=st.data())
    def complete_more(self, data):
        self.complete(data)

    @precondition(lambda self: self._tasks("running"))
    @rule(data=st.data(), refusals=st.lists(st.sampled_from(["stale", "not_running", "not_found"]), max_size=2))
    def complete_batch(self, data, refusals):
        """complete_many: several running tasks at once, with refused items mixed in at drawn positions.

        The model is complete()'s, applied to the whole batch: every task
        succeeds, then dependents whose dependencies all succeeded are
        released, then each run settles.  A refused item is an outcome, and
        it changes nothing.
        """
        picked = data.draw(st.lists(st.sampled_from(self._tasks("running")), min_size=1, max_size=4,
                                    unique_by=lambda rt: rt[1].id))
        chosen = {task.id for _, task in picked}
        items = [(task.id, task.token, {"key": task.key}, "completed") for _, task in picked]
        for kind in refusals:
            if kind == "stale":
                others = [t for _, t in self._claimed() if t.id not in chosen]
                if not others:
                    continue
                task = data.draw(st.sampled_from(others))
                item = (task.id, task.token + data.draw(st.sampled_from([-1, 1])), {"stale": True}, "stale")
            elif kind == "not_running":
                others = [t for _, t in self._tasks() if t.state != "running" and t.id not in chosen]
                if not others:
                    continue
                task = data.draw(st.sampled_from(others))
                item = (task.id, task.token, {"late": True}, "not_running")
            else:
                item = (uuid.uuid4(), 1, None, "not_found")
            items.insert(data.draw(st.integers(0, len(items))), item)
        self._tick()
        outcomes = complete_many(self.conn, [(task_run_id, token, output) for task_run_id, token, output, _ in items])
        assert outcomes == [(task_run_id, outcome) for task_run_id, _, _, outcome in items], (outcomes, items)
        for run, task in picked:
            self._set(run, task, "completed", "succeeded")
        for run, task in picked:
            for dependent in run.dependents(task.key):
                if dependent.state == "pending" and all(run.tasks[d].state == "succeeded" for d in dependent.deps):
                    self._set(run, dependent, "released", "ready")
        for run in {run.id: run for run, _ in picked}.values():
            self._settle(run)

    @precondition(lambda self: self._tasks("running"))
    @rule(data=st.data(), refusals=st.lists(st.sampled_from(["not_found", "not_running", "stale"]), max_size=2))
    def complete_batch_more(self, data, refusals):
        self.complete_batch(data, refusals)

    @precondition(lambda self: self._tasks("running"))
    @rule(data=st.data(), retryable=st.booleans())
    def fail(self, data, retryable):
        run, task = data.draw(st.sampled_from(self._tasks("running")))
        self._tick()
        fail(self.conn, task.id, task.token, "boom", retryable)
        if retryable and task.attempt < task.max_attempts:
            task.attempt += 1
            self._set(run, task, "retry_scheduled", "ready")
        else:
            self._set(run, task, "failed", "failed")
            for down in run.downstream(task.key):
                if down.state == "pending":
                    self._set(run, down, "skipped", "skipped")
            self._settle(run)

    @precondition(lambda self: self.runs)
    @rule(data=st.data())
    def cancel(self, data):
        run = data.draw(st.sampled_from(list(self.runs.values())))
        self._tick()
        code = sqlstate_of(lambda: cancel_run(self.conn, run.id, "stateful"))
        if run.state not in ("pending", "running"):
            assert code == ILLEGAL_TRANSITION
            return
        assert code is None
        for task in run.tasks.values():
            if task.state in UNFINISHED:
                if task.state == "running":
                    task.token += 1
                self._set(run, task, "cancelled", "cancelled")
        self._event(run, None, "run_cancelled", run.state, "cancelled")
        run.state = "cancelled"

    @precondition(lambda self: self.runs)
    @rule(data=st.data())
    def retry(self, data):
        run = data.draw(st.sampled_from(list(self.runs.values())))
        self._tick()
        code = sqlstate_of(lambda: retry_run(self.conn, run.id))
        if run.state not in ("failed", "cancelled"):
            assert code == ILLEGAL_TRANSITION
            return
        assert code is None
        again = [t for t in run.tasks.values() if t.state in ("failed", "cancelled", "skipped")]
        # Decided on the states before the reset: wait for every upstream that has not succeeded.
        waiting = {t.key: any(run.tasks[d].state != "succeeded" for d in t.deps) for t in again}
        for task in again:
            task.max_attempts = task.attempt + MAX_ATTEMPTS
            task.attempt += 1
            self._set(run, task, "retried", "pending" if waiting[task.key] else "ready")
        self._event(run, None, "run_retried", run.state, "running")
        run.state = "running"

    @precondition(lambda self: self._claimed())
    @rule(data=st.data(), op=st.sampled_from(["complete", "fail", "heartbeat"]), offset=st.sampled_from([-1, 1]))
    def write_with_wrong_token(self, data, op, offset):
        run, task = data.draw(st.sampled_from(self._claimed()))
        self._tick()
        token = task.token + offset
        call = {
            "complete": lambda: complete(self.conn, task.id, token, {"stale": True}),
            "fail": lambda: fail(self.conn, task.id, token, "stale", False),
            "heartbeat": lambda: heartbeat(self.conn, task.id, token),
        }[op]
        assert sqlstate_of(call) == STALE_TOKEN

    @precondition(lambda self: [1 for _, t in self._tasks() if t.state != "running"])
    @rule(data=st.data(), op=st.sampled_from(["complete", "fail", "heartbeat"]))
    def write_to_task_not_running(self, data, op):
        run, task = data.draw(st.sampled_from([(r, t) for r, t in self._tasks() if t.state != "running"]))
        self._tick()
        call = {
            "complete": lambda: complete(self.conn, task.id, task.token, {"late": True}),
            "fail": lambda: fail(self.conn, task.id, task.token, "late", True),
            "heartbeat": lambda: heartbeat(self.conn, task.id, task.token),
        }[op]
        assert sqlstate_of(call) == ILLEGAL_TRANSITION

    @rule(op=st.sampled_from(["complete", "cancel_run", "retry_run"]))
    def unknown_id(self, op):
        self._tick()
        missing = uuid.uuid4()
        call = {
            "complete": lambda: complete(self.conn, missing, 1),
            "cancel_run": lambda: cancel_run(self.conn, missing),
            "retry_run": lambda: retry_run(self.conn, missing),
        }[op]
        assert sqlstate_of(call) == NOT_FOUND

    # --- invariants -------------------------------------------------------------

    @invariant()
    def database_matches_model(self):
        if not self.runs:
            return
        ids = list(self.runs)
        tasks = {
            (row[0], row[1]): row[2:] for row in self.conn.execute(
                "SELECT workflow_run_id, task_key::text, state::text, fencing_token, attempt, max_attempts, "
                "remaining_deps FROM flowforge.task_run WHERE workflow_run_id = ANY(%s::uuid[])", (ids,)).fetchall()
        }
        want_tasks = {}
        for run in self.runs.values():
            for t in run.tasks.values():
                want_tasks[(run.id, t.key)] = (t.state, t.token, t.attempt, t.max_attempts)
        got_tasks = {k: v[:4] for k, v in tasks.items()}
        assert got_tasks == want_tasks, _diff(got_tasks, want_tasks)
        for run in self.runs.values():
            for t in run.tasks.values():
                if t.state == "pending":
                    waiting = sum(run.tasks[d].state != "succeeded" for d in t.deps)
                    assert tasks[(run.id, t.key)][4] == waiting, f"remaining_deps of {t.key} in run {run.id}"

        got_runs = {
            row[0]: (row[1], row[2]) for row in self.conn.execute(
                "SELECT id, state::text, tasks_remaining FROM flowforge.workflow_run WHERE id = ANY(%s::uuid[])",
                (ids,)).fetchall()
        }
        want_runs = {
            run.id: (run.state, sum(t.state in UNFINISHED for t in run.tasks.values())) for run in self.runs.values()
        }
        assert got_runs == want_runs, _diff(got_runs, want_runs)

        got_events = collections.Counter({
            (row[0], row[1], row[2], row[3], row[4]): row[5] for row in self.conn.execute(
                "SELECT e.workflow_run_id, tr.task_key::text, e.kind::text, e.from_state::text, e.to_state::text, "
                "count(*) FROM flowforge.task_run_event e LEFT JOIN flowforge.task_run tr ON tr.id = e.task_run_id "
                "WHERE e.workflow_run_id = ANY(%s::uuid[]) GROUP BY 1, 2, 3, 4, 5", (ids,)).fetchall()
        })
        assert got_events == self.events, _diff(dict(got_events), dict(self.events))


def _diff(got: dict, want: dict) -> str:
    keys = sorted(set(got) | set(want), key=repr)
    lines = [f"  {k}: db={got.get(k)!r} model={want.get(k)!r}" for k in keys if got.get(k) != want.get(k)]
    return "database differs from the model:\n" + "\n".join(lines)


def test_execution_core_matches_model(migrated_dsn):
    CoreMachine.dsn = migrated_dsn
    run_state_machine_as_test(
        CoreMachine,
        settings=settings(
            max_examples=50,
            stateful_step_count=30,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )
