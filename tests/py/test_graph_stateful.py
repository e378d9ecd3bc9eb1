"""A Hypothesis state machine walking random cyclic graphs (issue 13) through the
work-item API — claim_work, complete_work, fail_work, heartbeat_work, cancel_run,
retry_run — against a small Python model of the walk.

Each example draws one graph: two to five working nodes and one or two final ones,
every node reachable from the start, random extra edges (back edges and self loops:
cycles), edges in a random definition order, each with no condition or one over the
completed item's output, the run's data or the visit counts (``$.output.go == 1``,
``$.output.go != 0``, ``$.state.go == 2``, ``$.visits.n1 >= 2``), optional
``max_visits`` on nodes, ``max_attempts`` 1–2 with no backoff, and ``max_steps``
1–2 (a third of the graphs) or 6–25. The model walks it as engines.md says: an object output's keys replace the
data's, any other value is stored under the node's key; the first edge in
definition order whose condition holds (evaluated over {"output", "state",
"visits"}, the visits counting the node just completed) is taken; entering a node is
a step — refused with ``max_visits`` before ``max_steps`` — and a final node ends the
run.

Invariants after every step, for every run of the example: its status, reason,
error, position and step count; the path and the visit counts get_run reads back;
the run's data; each of its work items' status, fencing token and attempt; the
directory row's ended_at; and every event appended (run-level and per item) — all
equal to the model. Writes with a stale token are FF004, with the current token on
an item that is not dispatched FF005, on unknown ids FF001.

One autocommit connection, every call its own transaction; each example has its own
workflow and queue in one migrated database. Leases are an hour long and the reaper
is left out (it is raced in test_work_items_concurrency.py). The budget is small and
fixed: derandomized, no example database, so every run walks the same graphs.
"""

from __future__ import annotations

import collections
import itertools
import uuid
from dataclasses import dataclass, field
from typing import Any

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

from helpers_engines import (
    ILLEGAL_TRANSITION,
    NOT_FOUND,
    STALE_TOKEN,
    claim_work,
    complete_work,
    connect,
    define,
    fail_work,
    heartbeat_work,
    sqlstate_of,
    start_run,
)

_example = itertools.count()
LIVE = ("pending", "dispatched")


# --- the graphs ---------------------------------------------------------------------

def _condition_text(cond: tuple | None) -> str | None:
    if cond is None:
        return None
    kind = cond[0]
    if kind == "out_eq":
        return f"$.output.go == {cond[1]}"
    if kind == "out_ne":
        return f"$.output.go != {cond[1]}"
    if kind == "state_eq":
        return f"$.state.go == {cond[1]}"
    return f"$.visits.{cond[1]} >= {cond[2]}"


def _holds(cond: tuple | None, output: Any, state: dict, visits: dict) -> bool:
    """jsonb_path_match(..., silent => true) IS TRUE for the four forms: a path that finds nothing
    (a member of a non-object, a missing key) compares false."""
    if cond is None:
        return True
    kind = cond[0]
    if kind == "out_eq":
        return isinstance(output, dict) and "go" in output and output["go"] == cond[1]
    if kind == "out_ne":
        return isinstance(output, dict) and "go" in output and output["go"] != cond[1]
    if kind == "state_eq":
        return "go" in state and state["go"] == cond[1]
    return cond[1] in visits and visits[cond[1]] >= cond[2]


@dataclass
class Graph:
    start: str
    max_steps: int
    nodes: dict[str, dict]                  # key -> {"final", "max_visits", "max_attempts"}
    edges: list[tuple[str, str, tuple | None]]  # in definition order

    def out(self, key: str) -> list[tuple[str, tuple | None]]:
        return [(to, cond) for frm, to, cond in self.edges if frm == key]

    def spec(self, name: str, queue: str) -> dict:
        nodes = []
        for key, n in self.nodes.items():
            if n["final"]:
                nodes.append({"key": key, "final": True})
            else:
                node = {"key": key, "queue": queue, "max_attempts": n["max_attempts"], "backoff": "0 seconds"}
                if n["max_visits"] is not None:
                    node["max_visits"] = n["max_visits"]
                nodes.append(node)
        edges = []
        for frm, to, cond in self.edges:
            edge = {"from": frm, "to": to}
            if cond is not None:
                edge["when"] = _condition_text(cond)
            edges.append(edge)
        return {"name": name, "kind": "graph", "start": self.start, "max_steps": self.max_steps,
                "nodes": nodes, "edges": edges}


@st.composite
def graphs(draw) -> Graph:
    work = [f"n{i}" for i in range(draw(st.integers(2, 5)))]
    finals = [f"f{i}" for i in range(draw(st.integers(1, 2)))]
    keys = work + finals
    edges = []
    for k, key in enumerate(keys[1:], start=1):  # every node reachable from n0: an edge from an earlier working node
        edges.append((draw(st.sampled_from(work[:min(k, len(work))])), key))
    edges += draw(st.lists(st.tuples(st.sampled_from(work), st.sampled_from(keys)), max_size=6))
    for key in work:
        if not any(frm == key for frm, _ in edges):
            edges.append((key, draw(st.sampled_from(keys))))
    edges = draw(st.permutations(edges))
    conds = st.one_of(
        st.none(), st.none(),
        st.tuples(st.just("out_eq"), st.integers(0, 2)),
        st.tuples(st.just("out_ne"), st.integers(0, 2)),
        st.tuples(st.just("state_eq"), st.integers(0, 2)),
        st.tuples(st.just("visits_ge"), st.sampled_from(work), st.integers(1, 3)),
    )
    nodes = {key: {"final": False, "max_attempts": draw(st.integers(1, 2)),
                   "max_visits": draw(st.one_of(st.none(), st.integers(1, 3)))} for key in work}
    nodes |= {key: {"final": True, "max_attempts": None, "max_visits": None} for key in finals}
    max_steps = draw(st.one_of(st.integers(1, 2), st.integers(6, 25), st.integers(6, 25)))
    return Graph(start="n0", max_steps=max_steps, nodes=nodes,
                 edges=[(frm, to, draw(conds)) for frm, to in edges])


OUTPUTS = st.one_of(
    st.builds(lambda v: {"go": v}, st.integers(0, 2)),
    st.builds(lambda v, w: {"go": v, "w": w}, st.integers(0, 2), st.integers(0, 9)),
    st.integers(0, 2),           # not an object: stored under the node's key
    st.just({"other": 1}),
    st.none(),                   # no output: the data is unchanged
)


# --- the model ----------------------------------------------------------------------

@dataclass
class ItemModel:
    id: uuid.UUID
    run: uuid.UUID
    node: str
    visit: int
    payload: dict
    max_attempts: int
    ready_seq: int
    status: str = "pending"
    token: int = 0
    attempt: int = 1


@dataclass
class RunModel:
    id: uuid.UUID
    input: dict
    status: str = "running"
    reason: str | None = None
    error: str | None = None
    position: str | None = None
    steps: int = 0
    path: list[str] = field(default_factory=list)
    visits: collections.Counter = field(default_factory=collections.Counter)
    state: dict = field(default_factory=dict)
    items: list[ItemModel] = field(default_factory=list)

    def live_item(self) -> ItemModel | None:
        live = [i for i in self.items if i.status in LIVE]
        assert len(live) <= 1, "a graph run holds one position"
        return live[0] if live else None


class GraphWalk(RuleBasedStateMachine):
    dsn: str = ""

    def __init__(self):
        super().__init__()
        n = next(_example)
        self.name, self.queue = f"walk_{n}", f"wq{n}"
        self.conn = connect(self.dsn)
        self.graph: Graph | None = None
        self.runs: dict[uuid.UUID, RunModel] = {}
        self.events: collections.Counter = collections.Counter()
        self.seq = 0

    def teardown(self):
        self.conn.close()

    # --- bookkeeping ---------------------------------------------------------

    def _tick(self) -> None:
        self.seq += 1

    def _event(self, run: RunModel, item: ItemModel | None, kind: str, from_state, to_state) -> None:
        self.events[(run.id, item.id if item else None, kind, from_state, to_state)] += 1

    def _finish(self, run: RunModel, status: str, reason: str, error: str | None = None) -> None:
        self._event(run, None, f"run_{status}", "running", status)
        run.status, run.reason, run.error = status, reason, error

    def _enter(self, run: RunModel, key: str) -> None:
        """_graph_enter: max_visits, then max_steps, then the step; a final node ends the run."""
        node = self.graph.nodes[key]
        if node["max_visits"] is not None and run.visits[key] >= node["max_visits"]:
            self._finish(run, "failed", "max_visits", f'node "{key}" would be entered a {run.visits[key] + 1}th '
                                                      f'time (max_visits {node["max_visits"]})')
            return
        if run.steps >= self.graph.max_steps:
            self._finish(run, "failed", "max_steps",
                         f'entering node "{key}" would be step {run.steps + 1}, over max_steps {self.graph.max_steps}')
            return
        run.steps += 1
        run.position = key
        run.path.append(key)
        run.visits[key] += 1
        if node["final"]:
            self._finish(run, "succeeded", f'reached final node "{key}"')
        else:
            self._new_item(run, key)

    def _new_item(self, run: RunModel, key: str) -> None:
        item_id = self.conn.execute(
            "SELECT id FROM flowforge.work_item WHERE run_id = %s AND status = 'pending' "
            "ORDER BY created_at DESC, id DESC LIMIT 1", (run.id,)).fetchone()
        assert item_id is not None, f"no pending item for {key} in run {run.id}"
        assert item_id[0] not in {i.id for i in run.items}
        item = ItemModel(item_id[0], run.id, key, run.visits[key],
                         {"state": dict(run.state), "node": key, "visit": run.visits[key]},
                         self.graph.nodes[key]["max_attempts"], self.seq)
        run.items.append(item)
        self._event(run, item, "created", None, "pending")

    def _items(self, *statuses: str) -> list[tuple[RunModel, ItemModel]]:
        return [(r, i) for r in self.runs.values() for i in r.items if not statuses or i.status in statuses]

    # --- rules ----------------------------------------------------------------

    @initialize(graph=graphs())
    def define_and_start(self, graph):
        self.graph = graph
        define(self.conn, graph.spec(self.name, self.queue))
        self.start(0)

    @precondition(lambda self: len(self.runs) < 6 and sum(r.status == "running" for r in self.runs.values()) < 2)
    @rule(go=st.one_of(st.none(), st.integers(0, 2)))
    def start(self, go):
        self._tick()
        run_input = {} if go is None else {"go": go}
        run_id = start_run(self.conn, self.name, run_input)
        run = RunModel(run_id, run_input, state=dict(run_input))
        self.runs[run_id] = run
        self._event(run, None, "run_started", None, "running")
        self._enter(run, self.graph.start)

    @rule(batch=st.integers(1, 3))
    def claim(self, batch):
        self._tick()
        rows = claim_work(self.conn, [self.queue], "walker", "1 hour", batch)
        pending = {i.id: (r, i) for r, i in self._items("pending")}
        assert len(rows) == min(batch, len(pending)), (rows, batch, list(pending))
        got = {row["work_item_id"] for row in rows}
        assert got <= set(pending), "claimed an item the model does not have pending"
        if got and len(got) < len(pending):  # the longest ready first (every priority is 0)
            newest = max(pending[i][1].ready_seq for i in got)
            oldest_left = min(it.ready_seq for i, (_, it) in pending.items() if i not in got)
            assert newest <= oldest_left, "claim_work skipped an item ready longer"
        for row in rows:
            run, item = pending[row["work_item_id"]]
            item.token += 1
            assert (row["run_id"], row["engine_kind"], row["task_name"], row["attempt"], row["fencing_token"]) == \
                (run.id, "graph", item.node, item.attempt, item.token)
            assert row["payload"] == item.payload
            item.status = "dispatched"
            self._event(run, item, "claimed", "pending", "dispatched")

    @rule(batch=st.integers(1, 3))
    def claim_more(self, batch):
        self.claim(batch)

    @precondition(lambda self: self._items("dispatched"))
    @rule(data=st.data(), output=OUTPUTS)
    def complete(self, data, output):
        run, item = data.draw(st.sampled_from(self._items("dispatched")))
        self._tick()
        complete_work(self.conn, item.id, item.token, output)
        item.status = "completed"
        self._event(run, item, "completed", "dispatched", "completed")
        if output is not None:
            if isinstance(output, dict):
                run.state.update(output)
            else:
                run.state[item.node] = output
        visits = dict(run.visits)
        for to, cond in self.graph.out(item.node):
            if _holds(cond, output, run.state, visits):
                self._enter(run, to)
                return
        self._finish(run, "failed", f'no edge from node "{item.node}" matched')

    @precondition(lambda self: self._items("dispatched"))
    @rule(data=st.data(), output=OUTPUTS)
    def complete_more(self, data, output):
        self.complete(data, output)

    # A walk advances by claim + complete: weighted up (Hypothesis picks among enabled rules
    # uniformly), so runs get deep into their cycles instead of being cancelled early.
    @precondition(lambda self: self._items("pending"))
    @rule(data=st.data(), output=OUTPUTS)
    def walk(self, data, output):
        self.claim(1)
        self.complete(data, output)

    @precondition(lambda self: self._items("pending"))
    @rule(data=st.data(), output=OUTPUTS)
    def walk_more(self, data, output):
        self.walk(data, output)

    @precondition(lambda self: self._items("pending"))
    @rule(data=st.data(), output=OUTPUTS)
    def walk_again(self, data, output):
        self.walk(data, output)

    @precondition(lambda self: self._items("dispatched"))
    @rule(data=st.data(), retryable=st.booleans())
    def fail(self, data, retryable):
        run, item = data.draw(st.sampled_from(self._items("dispatched")))
        self._tick()
        fail_work(self.conn, item.id, item.token, "boom", retryable)
        if retryable and item.attempt < item.max_attempts:
            item.attempt += 1
            item.status, item.ready_seq = "pending", self.seq
            self._event(run, item, "retry_scheduled", "dispatched", "pending")
        else:
            item.status = "failed"
            self._event(run, item, "failed", "dispatched", "failed")
            self._finish(run, "failed", f'node "{item.node}" failed after {item.attempt} attempt(s)', "boom")

    @precondition(lambda self: self.seq % 4 == 0)  # now and then: a cancel ends a walk
    @rule(data=st.data())
    def cancel(self, data):
        run = data.draw(st.sampled_from(list(self.runs.values())))
        self._tick()
        code = sqlstate_of(lambda: self.conn.execute("SELECT flowforge.cancel_run(%s, 'stateful')", (run.id,)))
        if run.status != "running":
            assert code == ILLEGAL_TRANSITION, code
            return
        assert code is None, code
        item = run.live_item()
        assert item is not None, "a running graph run without an outstanding item"
        if item.status == "dispatched":
            item.token += 1
        self._event(run, item, "cancelled", item.status, "cancelled")
        item.status = "cancelled"
        self._finish(run, "cancelled", "stateful")

    @rule(data=st.data())
    def retry(self, data):
        run = data.draw(st.sampled_from(list(self.runs.values())))
        self._tick()
        code = sqlstate_of(lambda: self.conn.execute("SELECT flowforge.retry_run(%s)", (run.id,)))
        retryable = run.status == "cancelled" or (
            run.status == "failed" and run.reason not in ("max_steps", "max_visits")
            and not run.reason.startswith("no edge from node"))
        if not retryable:
            assert code == ILLEGAL_TRANSITION, (code, run.status, run.reason)
            return
        assert code is None, code
        self._event(run, None, "run_retried", run.status, "running")
        run.status, run.reason, run.error = "running", None, None
        self._new_item(run, run.position)  # the same step and visit again, a fresh attempt budget

    @rule(data=st.data(), probe=st.sampled_from(["heartbeat", "stale", "not_dispatched", "unknown"]),
          op=st.sampled_from(["complete", "fail", "heartbeat"]))
    def probe(self, data, probe, op):
        """A heartbeat by the holder, or a write that must be refused: a stale token (FF004), the
        current token of an item that is not dispatched (FF005), an id nobody has (FF001)."""
        if probe == "heartbeat" and self._items("dispatched"):
            _, item = data.draw(st.sampled_from(self._items("dispatched")))
            self._tick()
            assert heartbeat_work(self.conn, item.id, item.token, "1 hour") is not None
        elif probe == "stale" and [1 for _, i in self._items() if i.token > 0]:
            _, item = data.draw(st.sampled_from([(r, i) for r, i in self._items() if i.token > 0]))
            self._tick()
            assert sqlstate_of(self._write(op, item, item.token + data.draw(st.sampled_from([-1, 1])))) \
                == STALE_TOKEN
        elif probe == "not_dispatched" and self._items("pending", "completed", "failed", "cancelled"):
            _, item = data.draw(st.sampled_from(self._items("pending", "completed", "failed", "cancelled")))
            self._tick()
            assert sqlstate_of(self._write(op, item, item.token)) == ILLEGAL_TRANSITION
        else:
            self._tick()
            missing = uuid.uuid4()
            call = data.draw(st.sampled_from([
                lambda: complete_work(self.conn, missing, 1),
                lambda: self.conn.execute("SELECT flowforge.cancel_run(%s)", (missing,)),
                lambda: self.conn.execute("SELECT flowforge.retry_run(%s)", (missing,)),
                lambda: self.conn.execute("SELECT flowforge.get_run(%s)", (missing,)),
            ]))
            assert sqlstate_of(call) == NOT_FOUND

    def _write(self, op: str, item: ItemModel, token: int):
        return {
            "complete": lambda: complete_work(self.conn, item.id, token, {"late": True}),
            "fail": lambda: fail_work(self.conn, item.id, token, "late", True),
            "heartbeat": lambda: heartbeat_work(self.conn, item.id, token),
        }[op]

    # --- invariants -------------------------------------------------------------

    @invariant()
    def database_matches_model(self):
        if not self.runs:
            return
        ids = list(self.runs)
        got_runs = {r[0]: r[1:] for r in self.conn.execute(
            "SELECT g.run_id, g.status::text, g.reason, g.error, g.task::text, g.steps, e.ended_at IS NULL "
            "FROM flowforge.graph_run g JOIN flowforge.engine_run e ON e.run_id = g.run_id "
            "WHERE g.run_id = ANY (%s)", (ids,)).fetchall()}
        want_runs = {r.id: (r.status, r.reason, r.error, r.position, r.steps, r.status == "running")
                     for r in self.runs.values()}
        assert got_runs == want_runs, _diff(got_runs, want_runs)

        got_items = {r[0]: r[1:] for r in self.conn.execute(
            "SELECT id, run_id, task_name::text, status::text, fencing_token, retry_count + 1 FROM flowforge.work_item "
            "WHERE run_id = ANY (%s)", (ids,)).fetchall()}
        want_items = {i.id: (i.run, i.node, i.status, i.token, i.attempt) for _, i in self._items()}
        assert got_items == want_items, _diff(got_items, want_items)

        for run in self.runs.values():
            detail = self.conn.execute("SELECT flowforge.get_run(%s)", (run.id,)).fetchone()[0]
            seen = (detail["kind"], detail["state"], detail["path"], detail["run_counts"], detail["data"],
                    detail["position"], detail["steps"])
            want = ("graph", run.status, run.path, dict(run.visits), run.state, run.position, run.steps)
            assert seen == want, f"get_run of {run.id}: {seen} != {want}"

        got_events = collections.Counter({r[:5]: r[5] for r in self.conn.execute(
            "SELECT workflow_run_id, work_item_id, kind::text, from_state::text, to_state::text, count(*) "
            "FROM flowforge.task_run_event WHERE workflow_run_id = ANY (%s) GROUP BY 1, 2, 3, 4, 5",
            (ids,)).fetchall()})
        assert got_events == self.events, _diff(dict(got_events), dict(self.events))


def _diff(got: dict, want: dict) -> str:
    keys = sorted(set(got) | set(want), key=repr)
    lines = [f"  {k}: db={got.get(k)!r} model={want.get(k)!r}" for k in keys if got.get(k) != want.get(k)]
    return "database differs from the model:\n" + "\n".join(lines)


def test_random_cyclic_graph_walks_match_the_model(migrated_dsn):
    GraphWalk.dsn = migrated_dsn
    run_state_machine_as_test(
        GraphWalk,
        settings=settings(
            max_examples=30,
            stateful_step_count=50,
            derandomize=True,
            database=None,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )
