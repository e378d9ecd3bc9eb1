"""``flowforge.tick()`` on a cadence: the reaper and due push retries, with per-duty counts.

The timer runs even while the broker is down: reaping expired leases needs
only the database.  Each tick is its own transaction; its counts (``reaped``,
``dispatched``, ...) are added to the daemon's totals and logged when any is
non-zero.
"""

from __future__ import annotations

import time
from collections import Counter

from .. import errors
from .log import EventLog
from .session import WorkSession


class Timer:
    def __init__(self, interval: float, log: EventLog, totals: Counter):
        self.interval = interval
        self.next_at = 0.0   # monotonic time of the next tick: at once, then every interval
        self._log = log
        self._totals = totals

    def due(self, now: float) -> bool:
        return now >= self.next_at

    def tick(self, work: WorkSession) -> bool:
        """Run one tick; True when it dispatched push tasks (the outbox has rows to drain now)."""
        try:
            result = work.api.tick() or {}
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
        return bool(counts.get("dispatched"))
