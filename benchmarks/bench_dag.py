"""(3) DAG throughput: the cost of releasing dependents.

Workflows, each on a queue of its own (a subject drains only its own runs), all
driven by the same 4-connection claim(1)/complete loop as bench_claim (threads keep polling when a claim comes
back empty, since dependents become ready later):
* ``single``  — one task (the baseline);
* ``diamond`` — a → (b, c) → d: 4 tasks, 4 dependency edges;
* ``fan<W>``  — 1 → W → 1 for W = 10, 50, 200: W + 2 tasks, 2W edges.
Timed rounds alternate over all five on a topped-up backlog of runs; a
workflow's runs/s is its completions/s divided by its task count.

Figures: diamond run cost / (4 × single-task run cost) (target ≤ 1.3); the
1→50→1 runs/s; and the wall time per completion as the fan-out widens
(10 vs 50 vs 200) — flat means release is O(1) per completion.
"""

from __future__ import annotations

import common as c

DIAMOND = {"name": "diamond", "tasks": [
    {"key": "a"}, {"key": "b", "depends_on": ["a"]}, {"key": "c", "depends_on": ["a"]},
    {"key": "d", "depends_on": ["b", "c"]}]}
WIDTHS = (10, 50, 200)


def fan_spec(width: int) -> dict:
    mids = [f"m{i}" for i in range(width)]
    return {"name": f"fan{width}", "tasks": [{"key": "root"}] + [{"key": m, "depends_on": ["root"]} for m in mids]
            + [{"key": "join", "depends_on": mids}]}


def on_own_queue(spec: dict) -> dict:
    """The workflow with every task on a queue named after it: each subject drains only its own runs."""
    return dict(spec, tasks=[dict(t, queue=spec["name"]) for t in spec["tasks"]])


def main() -> None:
    n_rounds, seconds = c.rounds(3), c.round_seconds(4.0, 2.0)
    dsn = c.flowforge_database("dag")
    specs = [(c.SINGLE_SPEC, 1), (DIAMOND, 4)] + [(fan_spec(w), w + 2) for w in WIDTHS]
    subjects = []
    for spec, tasks in specs:
        c.define(dsn, on_own_queue(spec))
        name = spec["name"]
        subjects.append(c.Subject(name, dsn, c.ff_single_step(name, queue=name),
                                  (lambda wf: lambda n: c.start_runs(dsn, wf, n))(name),
                                  per_unit=tasks, first_guess=1000, stop_on_empty=False))
    c.alternate(subjects, n_rounds, seconds)
    runs = {s.name: s.median / s.per_unit for s in subjects}          # runs/s
    per_completion_us = {s.name: 1e6 / s.median for s in subjects}    # wall µs per completion, 4 connections
    cost_ratio = runs["single"] / (4 * runs["diamond"])
    dry = sum(s.dry for s in subjects)
    c.figure("diamond run cost / (4 x single-task run cost)", cost_ratio, "x", target="<= 1.3", met=cost_ratio <= 1.3,
             note=f"diamond {runs['diamond']:,.0f} runs/s, single {runs['single']:,.0f} runs/s; "
                  f"median of {n_rounds} alternating {seconds:g}s rounds; rounds that ran dry: {dry}",
             chart={"kind": "bars", "labels": ["4 x single", "diamond"],
                    "values": [4 / runs["single"] * 1000, 1 / runs["diamond"] * 1000], "unit": "ms of wall time per run"})
    c.figure("fan-out 1->50->1", runs["fan50"], "runs/s", baseline="single-task runs", baseline_value=runs["single"],
             ratio=runs["single"] / (52 * runs["fan50"]),
             note="ratio = fan50 run cost / (52 x single-task run cost)")
    growth = per_completion_us["fan200"] / per_completion_us["fan10"]
    c.figure("per-completion cost, fan-out 10 / 50 / 200", per_completion_us["fan200"], "us",
             baseline="fan-out 10", baseline_value=per_completion_us["fan10"], ratio=growth,
             target="<= 1.3 (O(1) release)", met=growth <= 1.3,
             note="per completion: " + " / ".join(f"{per_completion_us[f'fan{w}']:,.0f}" for w in WIDTHS)
                  + f" us; single-task {per_completion_us['single']:,.0f} us",
             chart={"kind": "line", "x": list(WIDTHS), "values": [per_completion_us[f"fan{w}"] for w in WIDTHS],
                    "reference": per_completion_us["single"], "reference_label": "single-task run",
                    "xlabel": "fan-out width W (1 -> W -> 1)", "unit": "us of wall time per completion"})


if __name__ == "__main__":
    main()
