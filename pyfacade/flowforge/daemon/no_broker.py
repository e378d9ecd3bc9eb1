"""No broker configured: the daemon runs the periodic duties and says that push work waits.

A pull-only deployment runs ``flowforge daemon`` for ``tick()`` alone (the
lease reaper and due retries need only PostgreSQL).  Push queues still put
their tasks in the outbox; nothing publishes them until a daemon with a
broker runs.  This daemon takes none of them — they stay available to a
daemon that has a broker — and says so with ``event=push_waiting``: at start
and then at most every ``REPORT_INTERVAL`` seconds while the outbox has rows.

The count comes from the ``outbox_backlog`` inspection view.  A login that
may not read it (it needs ``flowforge_readonly``) gets one ``pg_error`` line,
and from then on ``push_waiting`` without a count whenever push work showed
up (an outbox notification, or ``tick()`` dispatching).
"""

from __future__ import annotations

from .. import errors
from ..catalog import Catalog
from .log import EventLog
from .session import WorkSession

REPORT_INTERVAL = 60.0  # seconds between two push_waiting lines, at least
INSUFFICIENT_PRIVILEGE = "42501"
REASON = ("no broker configured: push tasks stay in the outbox until a daemon runs with --amqp-url "
          "or FLOWFORGE_AMQP_URL")


class PushWaiting:
    def __init__(self, log: EventLog):
        self._log = log
        self._next_at = 0.0       # monotonic time of the next report, at the earliest
        self._readable = True     # may this login read the backlog view?
        self._seen = False        # push work showed up since the last report

    def seen(self) -> None:
        """Outbox rows were written (a notification, or tick() dispatched)."""
        self._seen = True

    def check(self, work: WorkSession, now: float) -> None:
        """Report waiting push work if the interval has passed."""
        if now < self._next_at:
            return
        self._next_at = now + REPORT_INTERVAL
        if not self._readable:
            if self._seen:
                self._log("push_waiting", unpublished="unknown", reason=REASON)
            self._seen = False
            return
        try:
            waiting = Catalog(work.conn).outbox_waiting()
            work.commit()
        except errors.FlowForgeError as exc:
            work.failed("outbox_waiting", exc)
            if exc.sqlstate == INSUFFICIENT_PRIVILEGE:
                self._readable = False
                self._next_at = now  # report without a count from now on
            return
        self._seen = False
        if waiting:
            self._log("push_waiting", unpublished=waiting, reason=REASON)
