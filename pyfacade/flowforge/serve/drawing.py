"""SVG drawings for the UI: a DAG with each task's state, a graph with the path walked, a machine's states.

Server-side and static: no script draws anything.  The layouts are the CLI's
(``flowforge.render``): a DAG in the topological levels of ``render.levels``,
a graph and a machine in breadth-first layers from their start (the order of
``render._reachable_order`` / ``render.machine_transitions``), left to right.
An edge to a layer at or before its source's (a graph's cycle, a machine's
way back) is drawn as an arc under the nodes.  Every text is escaped; styling
is by class only (``static/app.css``: the CSP allows no inline style), and
each node carries ``data-node`` / ``data-state`` for tests and scripts.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Sequence

from markupsafe import Markup, escape

from .. import render

NODE_W, NODE_H = 156, 46
GAP_X, GAP_Y = 96, 22
PAD = 16
ARC_ROOM = 34  # below the nodes, per back edge lane


@dataclass
class Node:
    key: str
    label: str
    sub: str = ""            # second line: state, attempts, visits
    state: str = "none"      # a css class: state-<state>
    marks: list[str] = field(default_factory=list)  # extra classes: current, start, final, walked
    title: str = ""


@dataclass
class Edge:
    source: str
    target: str
    label: str = ""
    walked: int = 0          # how often the run took it


def _depths(start: str, successors: dict[str, list[str]], keys: Sequence[str]) -> dict[str, int]:
    depth = {start: 0}
    queue = deque([start])
    while queue:
        key = queue.popleft()
        for nxt in successors.get(key, []):
            if nxt not in depth:
                depth[nxt] = depth[key] + 1
                queue.append(nxt)
    deepest = max(depth.values(), default=0)
    for key in keys:  # unreachable ones in a last layer of their own
        depth.setdefault(key, deepest + 1)
    return depth


def _layers_from_depth(depth: dict[str, int], order: Sequence[str]) -> list[list[str]]:
    out: list[list[str]] = [[] for _ in range(max(depth.values(), default=-1) + 1)]
    for key in order:
        out[depth[key]].append(key)
    return [layer for layer in out if layer]


def svg(layers: list[list[str]], nodes: dict[str, Node], edges: list[Edge], *, css: str) -> Markup:
    """The drawing: nodes in columns (one per layer), edges as curves, back edges as arcs below."""
    tallest = max((len(layer) for layer in layers), default=1)
    body_h = tallest * NODE_H + (tallest - 1) * GAP_Y
    pos: dict[str, tuple[float, float]] = {}
    layer_of: dict[str, int] = {}
    for li, layer in enumerate(layers):
        height = len(layer) * NODE_H + (len(layer) - 1) * GAP_Y
        top = PAD + (body_h - height) / 2
        for ni, key in enumerate(layer):
            pos[key] = (PAD + li * (NODE_W + GAP_X), top + ni * (NODE_H + GAP_Y))
            layer_of[key] = li
    drawn = [e for e in edges if e.source in pos and e.target in pos]
    back = [e for e in drawn if layer_of[e.target] <= layer_of[e.source]]
    over = [e for e in drawn if layer_of[e.target] > layer_of[e.source] + 1]  # past a column: over the top
    top = ARC_ROOM * len(over) + (12 if over else 0)
    for key, (x, y) in pos.items():
        pos[key] = (x, y + top)
    width = PAD * 2 + len(layers) * NODE_W + max(len(layers) - 1, 0) * GAP_X
    height = PAD * 2 + top + body_h + ARC_ROOM * len(back) + (12 if back else 0)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="drawing {css}" viewBox="0 0 {width:.0f} {height:.0f}" '
             f'width="{width:.0f}" height="{height:.0f}" role="img">',
             '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="9" markerHeight="9" '
             'markerUnits="userSpaceOnUse" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" class="arrowhead"/></marker></defs>']
    lane = up = 0
    for e in drawn:
        (sx, sy), (tx, ty) = pos[e.source], pos[e.target]
        cls = "edge walked" if e.walked else "edge"
        if layer_of[e.target] > layer_of[e.source] + 1:
            up += 1
            # Up from the source, along a lane above every node, down the gap before the
            # target's column and into its left side: it crosses no node on the way.
            x1, y1 = sx + NODE_W / 2 + 10, sy
            high = PAD + top - ARC_ROOM * up - 6
            gx, ty_mid = tx - GAP_X / 2, ty + NODE_H / 2
            d = (f"M{x1:.0f},{y1:.0f} C{x1:.0f},{high:.0f} {x1:.0f},{high:.0f} {x1 + 30:.0f},{high:.0f} "
                 f"L{gx - 30:.0f},{high:.0f} C{gx:.0f},{high:.0f} {gx:.0f},{ty_mid:.0f} {tx - 2:.0f},{ty_mid:.0f}")
            lx, ly = (x1 + gx) / 2, high - 4
        elif layer_of[e.target] > layer_of[e.source]:
            x1, y1, x2, y2 = sx + NODE_W, sy + NODE_H / 2, tx, ty + NODE_H / 2
            mid = (x1 + x2) / 2
            d = f"M{x1:.0f},{y1:.0f} C{mid:.0f},{y1:.0f} {mid:.0f},{y2:.0f} {x2 - 2:.0f},{y2:.0f}"
            lx, ly = mid, (y1 + y2) / 2 - 5
        else:
            lane += 1
            x1, y1 = sx + NODE_W / 2 + 10, sy + NODE_H
            x2, y2 = tx + NODE_W / 2 - 10, ty + NODE_H
            low = PAD + top + body_h + ARC_ROOM * lane
            d = f"M{x1:.0f},{y1:.0f} C{x1:.0f},{low:.0f} {x2:.0f},{low:.0f} {x2:.0f},{y2 + 2:.0f}"
            lx, ly = (x1 + x2) / 2, low + 4  # under the arc, not on it
        walked = f' data-walked="{e.walked}"' if e.walked else ""
        parts.append(f'<g class="{cls}" data-from="{escape(e.source)}" data-to="{escape(e.target)}"{walked}>'
                     f'<path d="{d}" marker-end="url(#arrow)"/>')
        label = _clip(e.label, 24) + (f" ×{e.walked}" if e.walked > 1 else "")
        if label.strip():
            parts.append(f'<text x="{lx:.0f}" y="{ly:.0f}" class="edge-label">{escape(label.strip())}</text>')
        parts.append("</g>")
    for key, (x, y) in pos.items():
        n = nodes[key]
        classes = " ".join(["node", f"state-{_css(n.state)}", *n.marks])
        parts.append(f'<g class="{classes}" data-node="{escape(key)}" data-state="{escape(n.state)}">'
                     f'<title>{escape(n.title or n.label)}</title>'
                     f'<rect x="{x:.0f}" y="{y:.0f}" width="{NODE_W}" height="{NODE_H}" rx="7"/>'
                     f'<text x="{x + 10:.0f}" y="{y + 19:.0f}" class="node-label">{escape(_clip(n.label, 19))}</text>'
                     f'<text x="{x + 10:.0f}" y="{y + 36:.0f}" class="node-sub">{escape(_clip(n.sub, 24))}</text>'
                     "</g>")
    parts.append("</svg>")
    return Markup("".join(parts))


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _css(state: str) -> str:
    return "".join(c if c.isalnum() or c == "-" else "-" for c in (state or "none").lower())


# --- the three engines --------------------------------------------------------------------

def dag(tasks: Sequence[dict], runs: dict[str, dict] | None = None) -> Markup:
    """A DAG definition (``depends_on`` edges); with ``runs`` (task key → its task run) each task's state."""
    nodes: dict[str, Node] = {}
    for t in tasks:
        key = t["key"]
        tr = (runs or {}).get(key)
        if tr is None:
            sub = f"queue {t.get('queue', 'default')}" if runs is None else "not started"
            nodes[key] = Node(key, key, sub, "none" if runs is None else "pending")
            continue
        sub = tr["state"]
        if (tr.get("attempt") or 0) > 1:
            sub += f" · attempt {tr['attempt']}"
        fan = tr.get("fan_out") or None
        if fan:
            sub += f" · {fan.get('idx', 0)}/{fan.get('total', 0)}"
        title = f"{key}: {tr['state']}" + (f" — {tr['error']}" if tr.get("error") else "")
        nodes[key] = Node(key, key, sub, tr["state"], title=title)
    edges = [Edge(d, t["key"]) for t in tasks for d in (t.get("depends_on") or [])]
    return svg(render.levels(tasks), nodes, edges, css="dag")


def graph(spec: dict, run: dict | None = None) -> Markup:
    """A graph definition; with ``run``, visit counts (run_counts), the path's edges walked and its position."""
    node_specs = spec.get("nodes") or []
    keys = [n["key"] for n in node_specs]
    edges_spec = spec.get("edges") or []
    successors: dict[str, list[str]] = {}
    for e in edges_spec:
        successors.setdefault(e["from"], []).append(e["to"])
    start = spec.get("start") or (keys[0] if keys else "")
    order = render._reachable_order(start, successors, keys)
    layers = _layers_from_depth(_depths(start, successors, keys), order)
    visits = (run or {}).get("run_counts") or {}
    path = (run or {}).get("path") or []
    walked: dict[tuple[str, str], int] = {}
    for a, b in zip(path, path[1:]):
        walked[(a, b)] = walked.get((a, b), 0) + 1
    position = (run or {}).get("position")
    finished = run is not None and run.get("state") in render.FINISHED_RUN_STATES
    nodes = {}
    for n in node_specs:
        key = n["key"]
        marks = []
        if key == start:
            marks.append("start")
        if n.get("final"):
            marks.append("final")
        count = int(visits.get(key) or 0)
        if run is None:
            state, sub = "none", ("final" if n.get("final") else f"queue {n.get('queue', 'default')}")
        elif key == position and not finished:
            state, sub = "running", f"here · visit {count}" if count else "here"
            marks.append("current")
        elif count:
            state, sub = "visited", f"visited ×{count}"
            if key == position:
                marks.append("current")
                state = run.get("state") or "visited"
                sub = f"ended here · ×{count}"
        else:
            state, sub = "unvisited", "not visited"
        nodes[key] = Node(key, key, sub, state, marks, title=f"{key}: {sub}")
    edges = [Edge(e["from"], e["to"], ("when " + render.jsonpath(e["when"])) if e.get("when") else "",
                  walked.get((e["from"], e["to"]), 0)) for e in edges_spec]
    return svg(layers, nodes, edges, css="graph")


def machine(spec: dict, run: dict | None = None) -> Markup:
    """A machine definition's states and transitions; with ``run``, its current state and the states it went through."""
    states = spec.get("states") or {}
    initial = spec.get("initial") or next(iter(states), "")
    ordered = [name for name, _ in render.machine_transitions(states, initial)] if states else []
    edges: list[Edge] = []
    for name, st in states.items():
        for event, cands in (st.get("on") or {}).items():
            for cand in render._candidates(cands):
                edges.append(Edge(name, cand["target"], f"on {event}" + (" [guard]" if cand.get("guard") else "")))
        for timer in st.get("after") or []:
            edges.append(Edge(name, timer["target"], f"after {timer['delay']}"))
        if st.get("on_done"):
            edges.append(Edge(name, st["on_done"], "done"))
        if st.get("on_error"):
            edges.append(Edge(name, st["on_error"], "error"))
    successors: dict[str, list[str]] = {}
    for e in edges:
        successors.setdefault(e.source, []).append(e.target)
    depth = _depths(initial, successors, ordered)
    # Final states in a last column of their own: every way into them reads left to right.
    last = max((d for n, d in depth.items() if not states[n].get("final")), default=-1) + 1
    depth.update({n: last for n in ordered if states[n].get("final")})
    layers = _layers_from_depth(depth, ordered)
    history = (run or {}).get("history") or []
    entered: dict[str, int] = {}
    taken: dict[tuple[str, str], int] = {}
    for h in history:
        if h.get("outcome") == "entered" and h.get("to"):
            entered[h["to"]] = entered.get(h["to"], 0) + 1
            if h.get("from"):
                taken[(h["from"], h["to"])] = taken.get((h["from"], h["to"]), 0) + 1
    for e in edges:
        e.walked = taken.get((e.source, e.target), 0)
    current = (run or {}).get("machine_state")
    nodes = {}
    for name in ordered:
        st = states[name]
        marks = ["start"] if name == initial else []
        if st.get("final"):
            marks.append("final")
        sub = "final" if st.get("final") else (f"action {st['action']['task']}" if st.get("action") else "")
        state = "none"
        if run is not None:
            if name == current:
                marks.append("current")
                state = "current-" + (run.get("state") or "running")
                sub = "◀ current" + (" (suspended)" if run.get("suspended") else "")
            elif entered.get(name):
                state = "visited"
                sub = f"entered ×{entered[name]}"
            else:
                state = "unvisited"
        nodes[name] = Node(name, name, sub, state, marks, title=f"{name}: {sub}")
    return svg(layers, nodes, edges, css="machine")


def progress(done: int, total: int, failed: int = 0) -> dict:
    """The numbers a fan-out progress bar shows (an HTML <progress> element in the page)."""
    total = max(int(total or 0), 0)
    done = min(max(int(done or 0), 0), total) if total else int(done or 0)
    return {"finished": done, "total": total, "failed": int(failed or 0),
            "percent": round(100 * done / total) if total else 0}
