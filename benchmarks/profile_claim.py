"""Profile of one claim(1) + complete on an idle database: where the time goes.

Not a benchmark figure with a baseline: a diagnosis printed next to them.
On one connection, as the superuser, in its own database:
1. ``SET track_functions = 'all'`` and run N claim + complete pairs; then
   ``pg_stat_user_functions`` gives each function's calls and self time
   (time in its own statements, not in the functions it calls);
2. ``LOAD 'auto_explain'`` with log_nested_statements + log_analyze and
   ``client_min_messages = log``, so every statement run inside the functions
   comes back to the client with its plan and duration; they are summed by
   statement text.
Both are session settings: no server configuration is changed.
"""

from __future__ import annotations

import re
import time
from collections import defaultdict

import common as c

N = c.scale(2000, 500)


def main() -> None:
    dsn = c.flowforge_database("profile")
    c.define(dsn, c.SINGLE_SPEC)
    k = c.scale(300, 100)  # auto_explain pairs
    c.start_runs(dsn, "single", 100 + N + k + 50)  # warm-up, timed pairs, explained pairs, spare
    step = c.ff_single_step("profile")
    with c.connect(dsn) as conn:
        for _ in range(100):  # warm-up, not counted
            step(conn, 0)
    with c.connect(dsn) as conn:
        conn.execute("SET track_functions = 'all'")
        conn.execute("SELECT pg_stat_reset()")
        t0 = time.perf_counter()
        for _ in range(N):
            step(conn, 0)
        wall_us = (time.perf_counter() - t0) / N * 1e6
    time.sleep(1.5)  # the backend's function stats are flushed when it exits
    with c.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT funcname, calls, self_time, total_time FROM pg_stat_user_functions "
            "WHERE schemaname = 'flowforge' ORDER BY self_time DESC").fetchall()
    top = {r[0]: r for r in rows}
    server_us = (top["claim"][3] + top["complete"][3]) * 1000 / N if "claim" in top and "complete" in top else None
    c.figure("one claim(1) + complete, single connection", wall_us, "us wall",
             note=f"server time in the two functions {server_us:,.0f} us; the rest is round trips and commits"
             if server_us else "")
    for name, calls, self_ms, total_ms in rows[:8]:
        c.figure(f"function {name} self time", self_ms * 1000 / N, "us per job",
                 note=f"{calls / N:.1f} calls per job, total incl. callees {total_ms * 1000 / N:,.0f} us"
                      + (f", {self_ms * 1000 / N / server_us:.0%} of server time" if server_us else ""))

    # Per statement, inside the functions.
    stats: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    pattern = re.compile(r"duration: ([0-9.]+) ms\s+plan:\s*Query Text: (.*?)(?:\n[A-Z][a-z]+ |\n  ->|\n[A-Z]|\Z)", re.S)

    def on_notice(diag) -> None:
        m = pattern.search(diag.message_primary or "")
        if m:
            text = " ".join(m.group(2).split())[:110]
            stats[text][0] += 1
            stats[text][1] += float(m.group(1))

    with c.connect(dsn) as conn:
        conn.execute("LOAD 'auto_explain'")
        for setting, value in (("auto_explain.log_min_duration", "0"), ("auto_explain.log_nested_statements", "on"),
                               ("auto_explain.log_analyze", "on"), ("auto_explain.log_timing", "on"),
                               ("client_min_messages", "log")):
            conn.execute(f"SET {setting} = '{value}'")
        conn.add_notice_handler(on_notice)
        for _ in range(k):
            step(conn, 0)
    nested = {t: v for t, v in stats.items() if not t.startswith("SELECT * FROM flowforge.claim")
              and not t.startswith("SELECT flowforge.complete")}
    for text, (calls, ms) in sorted(nested.items(), key=lambda kv: -kv[1][1])[:8]:
        c.figure(f"statement: {text}", ms * 1000 / k, "us per job", note=f"{calls / k:.1f} runs per job (auto_explain, analyze on)")


if __name__ == "__main__":
    main()
