"""``flowforge.tick(engine_id)`` on a cadence: the periodic duties of the organizations this daemon serves.

Each tick names the daemon (``engine_id``, ``<host>:<pid>`` by default), so
the organizations' duties — reaping task and work-item leases, due push
retries, the agent sweep, machine timers — are shared out among live daemons
by per-organization leases; the database decides who serves what, and a
daemon paused past its lease finds it has lost its organizations.  The timer
runs even while the broker is down: none of that needs one.

Each tick is its own transaction.  Its counts (``reaped``, ``reaped_items``,
``dispatched``, ...) are added to the daemon's totals and logged when any is
non-zero; a change in the organizations served is logged as ``serving``
(which were gained and lost, under which lease generation), and a duty that
failed inside the tick (the others still ran) as ``tick_duty_failed``.
"""

from __future__ import annotations

import time
from collections import Counter

from .. import errors
from .log import EventLog
from .session import WorkSession


class Timer:
    def __init__(self, interval: float, log: EventLog, totals: Counter, engine_id: str | None = None):
        self.interval = interval
        self.next_at = 0.0   # monotonic time of the next tick: at once, then every interval
        self.engine_id = engine_id
        self.serving: dict[str, int] | None = None  # organization -> generation, as of the last tick
        self._log = log
        self._totals = totals

    def due(self, now: float) -> bool:
        return now >= self.next_at

    def tick(self, work: WorkSession) -> bool:
        """Run one tick; True when it dispatched push tasks (the outbox has rows to drain now)."""
        try:
            result = work.api.tick(self.engine_id) or {}
            work.commit()
        except errors.FlowForgeError as exc:
            work.failed("tick", exc)
            return False
        finally:
            self.next_at = time.monotonic() + self.interval
        self._totals["ticks"] += 1
        counts = {k: v for k, v in result.items() if isinstance(v, int) and not isinstance(v, bool)}
        for key, value in counts.items():
            self._totals[key] += value
        if any(counts.values()):
            self._log("tick", **counts)
        self._serving_changed(result.get("serving"))
        for duty, error in sorted((result.get("errors") or {}).items()):
            self._totals["duty_errors"] += 1
            self._log("tick_duty_failed", duty=duty, error=error)
        return bool(counts.get("dispatched"))

    def _serving_changed(self, serving: dict | None) -> None:
        """Log the organizations this daemon serves when the set (or a generation) changed since the last tick."""
        if serving is None:
            return
        serving = {str(org): int(gen) for org, gen in serving.items()}
        before = self.serving or {}
        if serving == before and self.serving is not None:
            return
        gained = sorted(org for org in serving if org not in before or before[org] != serving[org])
        lost = sorted(org for org in before if org not in serving)
        self.serving = serving
        self._log("serving", engine_id=self.engine_id, organizations=len(serving),
                  gained=",".join(f"{org}@{serving[org]}" for org in gained) or None,
                  lost=",".join(lost) or None)
