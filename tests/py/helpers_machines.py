"""A single-threaded Python model of the state-machine engine (issue 14, docs/engines.md), shared by
test_machine_concurrency.py and test_machine_stateful.py.

* Expressions: the guards and assignments the tests write are built from a small structural
  language (``("ctx", "n")``, ``("ev", "k")``, ``("lit", 3)``, ``("add" | "mul" | "mod", a, b)``,
  ``("str", "x")``, ``("cmp", op, a, b)``), rendered to the jsonpath text the definition carries
  and evaluated here as PostgreSQL evaluates it with ``silent => true``: a path that finds nothing
  yields nothing, arithmetic on a non-number is an error (nothing), a comparison with nothing on one
  side does not hold, JSON null equals null and differs from every other value (``null != 1``
  holds, ``null < 1`` does not, ``null <= null`` holds), a number never compares with a string.
  An assignment that yields nothing sets null.
* ``MachineDef``: states (final, action or resting), rendered to a ``define_workflow`` spec.
* ``MachineRun``: one run, fed the calls in their serial order — ``start``, ``send``,
  ``claim`` / ``action_completed`` / ``action_failed``, ``tick``, ``cancel``, ``retry`` — keeping
  what the database keeps: state, context, status, reason, failure, the history (one tuple per
  machine_transition row: cause, outcome, event, event_id, payload, from, to), the event queue,
  the event ids seen, the timers and the action's work items.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

MISSING = object()  # a jsonpath that yields nothing


# --- expressions ----------------------------------------------------------------------------

def render(expr: tuple) -> str:
    kind = expr[0]
    if kind == "ctx":
        return f"$.context.{expr[1]}"
    if kind == "ev":
        return f"$.event.{expr[1]}"
    if kind == "lit":
        return str(expr[1])
    if kind == "str":
        return f'"{expr[1]}"'
    if kind in ("add", "mul", "mod"):
        op = {"add": "+", "mul": "*", "mod": "%"}[kind]
        return f"({render(expr[1])} {op} {render(expr[2])})"
    if kind == "cmp":
        return f"{render(expr[2])} {expr[1]} {render(expr[3])}"
    raise ValueError(expr)


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def evaluate(expr: tuple, doc: dict) -> Any:
    """The value a jsonpath expression yields over doc ({"event", "context"}), or MISSING."""
    kind = expr[0]
    if kind in ("ctx", "ev"):
        obj = doc["context" if kind == "ctx" else "event"]
        return obj.get(expr[1], MISSING) if isinstance(obj, dict) else MISSING
    if kind == "lit":
        return expr[1]
    if kind == "str":
        return expr[1]
    if kind in ("add", "mul", "mod"):
        a, b = evaluate(expr[1], doc), evaluate(expr[2], doc)
        if not (_is_num(a) and _is_num(b)):
            return MISSING  # an error, silenced: nothing
        if kind == "add":
            return a + b
        if kind == "mul":
            return a * b
        if b == 0:
            return MISSING
        return a % b  # operands are never negative here, so Python's and PostgreSQL's sign rules agree
    raise ValueError(expr)


def holds(pred: tuple, doc: dict) -> bool:
    """jsonb_path_match(doc, pred, silent => true) IS TRUE for a comparison."""
    _, op, left, right = pred
    a, b = evaluate(left, doc), evaluate(right, doc)
    if a is MISSING or b is MISSING:
        return False
    if a is None or b is None:
        if a is None and b is None:
            return op in ("==", "<=", ">=")
        return op == "!="
    if _is_num(a) != _is_num(b):
        return False  # a number and a string do not compare (unknown)
    return {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


def assigned(expr: tuple, doc: dict) -> Any:
    value = evaluate(expr, doc)
    return None if value is MISSING else value


# --- definitions ----------------------------------------------------------------------------

@dataclass
class Candidate:
    target: str
    guard: tuple | None = None
    assign: dict[str, tuple] = field(default_factory=dict)

    def spec(self) -> dict:
        out: dict[str, Any] = {"target": self.target}
        if self.guard is not None:
            out["guard"] = render(self.guard)
        if self.assign:
            out["assign"] = {k: render(e) for k, e in self.assign.items()}
        return out


@dataclass
class StateDef:
    kind: str                                   # final | action | rest
    on: dict[str, list[Candidate]] = field(default_factory=dict)
    after: list[tuple[int, str]] = field(default_factory=list)  # (delay in seconds, target), in order
    task: str | None = None
    max_attempts: int = 1
    on_done: str | None = None
    on_error: str | None = None

    def spec(self, queue: str) -> dict:
        if self.kind == "final":
            return {"final": True}
        if self.kind == "action":
            out = {"action": {"task": self.task, "queue": queue, "max_attempts": self.max_attempts,
                              "backoff": "0 seconds"},
                   "on_done": self.on_done}
            if self.on_error is not None:
                out["on_error"] = self.on_error
            return out
        out: dict[str, Any] = {"on": {ev: [c.spec() for c in cands] for ev, cands in self.on.items()}}
        if self.after:
            out["after"] = [{"delay": f"{d} seconds", "target": t} for d, t in self.after]
        return out


@dataclass
class MachineDef:
    initial: str
    states: dict[str, StateDef]
    context: dict = field(default_factory=dict)

    def spec(self, name: str, queue: str) -> dict:
        return {"name": name, "kind": "statemachine", "initial": self.initial, "context": self.context,
                "states": {s: d.spec(queue) for s, d in self.states.items()}}

    def accepted_anywhere(self, event: str) -> bool:
        return any(event in d.on for d in self.states.values())


# --- one run ---------------------------------------------------------------------------------

class Refused(Exception):
    """send_event refused (FF012): nothing written. ``state`` is the state the machine rested in."""

    def __init__(self, reason: str, state: str | None):
        super().__init__(reason)
        self.state = state


class IllegalTransition(Exception):
    """cancel_run / retry_run refused (FF005)."""


@dataclass
class Item:
    task: str
    state: str
    payload: dict
    max_attempts: int
    id: uuid.UUID | None = None  # filled in by the test from the database
    status: str = "pending"
    token: int = 0
    attempt: int = 1


class MachineRun:
    def __init__(self, mdef: MachineDef, run_input: dict | None = None, run_id: Any = None):
        self.mdef = mdef
        self.id = run_id
        self.input = dict(run_input or {})
        self.state: str | None = None
        self.context: dict = {}
        self.status = "running"
        self.reason: str | None = None
        self.failure: str | None = None
        self.transitions = 0
        self.history: list[tuple] = []          # (cause, outcome, event, event_id, payload, from, to)
        self.queue: list[tuple[str, dict, str | None]] = []  # (event, payload, event_id)
        self.seen: set[str] = set()
        self.timers: list[tuple[float, int, str]] = []      # (fire_at, position, target)
        self.items: list[Item] = []
        self.action: Item | None = None
        self.run_events: list[str] = []         # run-level kinds: run_started, run_succeeded, ...

    # --- what the run looks like --------------------------------------------------------

    @property
    def live(self) -> bool:
        return self.status == "running"

    @property
    def suspended(self) -> bool:
        return self.action is not None

    def outcome(self, outcome: str) -> dict:
        return {"outcome": outcome, "state": self.state, "live": self.live, "suspended": self.suspended}

    # --- the engine ---------------------------------------------------------------------

    def start(self, now: float = 0.0) -> None:
        self.run_events.append("run_started")
        self._enter(self.mdef.initial, {**self.mdef.context, **self.input}, "start", now=now)

    def _record(self, cause, outcome, event, event_id, payload, frm, to) -> None:
        self.history.append((cause, outcome, event, event_id, payload, frm, to))

    def _enter(self, target: str, context: dict, cause: str, event=None, event_id=None, payload=None,
               now: float = 0.0) -> None:
        self.timers = []
        frm = None if cause == "start" else self.state
        self.state, self.context = target, context
        self.transitions += 1
        self._record(cause, "entered", event, event_id, payload, frm, target)
        sdef = self.mdef.states[target]
        if sdef.kind == "final":
            self._finish("succeeded", cause, f'reached final state "{target}"', None)
        elif sdef.kind == "action":
            item = Item(sdef.task, target, {"state": target, "context": dict(context)}, sdef.max_attempts)
            self.items.append(item)
            self.action = item
        else:
            self.timers = [(now + d, pos, t) for pos, (d, t) in enumerate(sdef.after, start=1)]

    def _finish(self, status: str, cause: str, reason: str, failure: str | None) -> None:
        if self.status != "running":
            return
        self.status, self.reason, self.failure = status, reason, failure
        self.action = None
        self.timers = []
        if status != "succeeded":
            self._record(cause, "stopped", None, None, None, self.state, None)
        for event, payload, event_id in self.queue:
            self._record("event", "refused", event, event_id, payload, self.state, None)
        self.queue = []
        self.run_events.append(f"run_{status}")

    def accept(self, event: str, payload: dict) -> tuple[str, dict]:
        """The target and the new context the resting machine takes for the event, or Refused."""
        cands = self.mdef.states[self.state].on.get(event)
        if cands is None:
            raise Refused(f'state "{self.state}" has no transition for event "{event}"', self.state)
        doc = {"event": payload, "context": self.context}
        for cand in cands:
            if cand.guard is None or holds(cand.guard, doc):
                return cand.target, {**self.context, **{k: assigned(e, doc) for k, e in cand.assign.items()}}
        raise Refused(f'no guard of event "{event}" holds in state "{self.state}"', self.state)

    def send(self, event: str, payload: dict | None = None, event_id: str | None = None,
             now: float = 0.0) -> dict:
        payload = {} if payload is None else payload
        if event_id is not None and event_id in self.seen:
            return self.outcome("duplicate")
        if not self.live:
            raise Refused("the run has ended", None)
        if self.suspended:
            if not self.mdef.accepted_anywhere(event):
                raise Refused("no state of the machine accepts it", None)
            self.queue.append((event, payload, event_id))
            if event_id is not None:
                self.seen.add(event_id)
            return self.outcome("queued")
        target, context = self.accept(event, payload)
        if event_id is not None:
            self.seen.add(event_id)
        self._enter(target, context, "event", event, event_id, payload, now=now)
        return self.outcome("applied")

    def _resume(self, now: float) -> None:
        while self.live and not self.suspended and self.queue:
            event, payload, event_id = self.queue.pop(0)
            try:
                target, context = self.accept(event, payload)
            except Refused:
                self._record("event", "refused", event, event_id, payload, self.state, None)
                continue
            self._enter(target, context, "event", event, event_id, payload, now=now)

    def claim(self, item: Item) -> None:
        assert item.status == "pending", item
        item.status, item.token = "dispatched", item.token + 1

    def action_completed(self, output: Any, now: float = 0.0) -> None:
        item = self.action
        assert item is not None and item.status == "dispatched", item
        item.status = "completed"
        self.action = None
        if output is None:
            context = self.context
        elif isinstance(output, dict):
            context = {**self.context, **output}
        else:
            context = {**self.context, self.state: output}
        self._enter(self.mdef.states[self.state].on_done, context, "action_done", now=now)
        self._resume(now)

    def action_failed(self, error: str, retryable: bool, now: float = 0.0) -> None:
        item = self.action
        assert item is not None and item.status == "dispatched", item
        if retryable and item.attempt < item.max_attempts:
            item.status, item.attempt = "pending", item.attempt + 1
            return
        item.status = "failed"
        self.action = None
        sdef = self.mdef.states[self.state]
        if sdef.on_error is None:
            self._finish("failed", "action_error",
                         f'action "{item.task}" of state "{self.state}" failed after {item.attempt} attempt(s)', error)
            return
        self._enter(sdef.on_error, self.context, "action_error", now=now)
        self._resume(now)

    def due(self, now: float) -> tuple[float, int, str] | None:
        """The timer a tick at ``now`` fires: the earliest due (none while suspended or ended)."""
        if not (self.live and not self.suspended):
            return None
        due = sorted(t for t in self.timers if t[0] <= now)
        return due[0] if due else None

    def tick(self, now: float) -> bool:
        timer = self.due(now)
        if timer is None:
            return False
        self._enter(timer[2], self.context, "timer", now=now)
        return True

    def cancel(self, reason: str = "cancelled") -> None:
        if self.status != "running":
            raise IllegalTransition(self.status)
        for item in self.items:
            if item.status in ("pending", "dispatched"):
                if item.status == "dispatched":
                    item.token += 1
                item.status = "cancelled"
        self._finish("cancelled", "cancel", reason, None)

    def retry(self, now: float = 0.0) -> None:
        if self.status not in ("failed", "cancelled"):
            raise IllegalTransition(self.status)
        self.run_events.append("run_retried")
        self.status, self.reason, self.failure = "running", None, None
        self._enter(self.state, self.context, "retry", now=now)


# --- reading the database -----------------------------------------------------------------------

HISTORY = """
SELECT cause, outcome, event, event_id, payload, from_state, to_state
FROM flowforge.machine_transition WHERE run_id = %s ORDER BY n
"""


def db_history(conn, run_id) -> list[tuple]:
    return [tuple(r) for r in conn.execute(HISTORY, (run_id,)).fetchall()]


def db_machine(conn, run_id) -> dict:
    cur = conn.execute("SELECT * FROM flowforge.machine_run WHERE run_id = %s", (run_id,))
    cols = [d.name for d in cur.description]
    return dict(zip(cols, cur.fetchone()))
