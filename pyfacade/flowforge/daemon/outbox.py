"""One drain batch: take under a committed lease, publish with confirms, settle in a new transaction.

1. ``take_outbox(batch, lease)`` takes the oldest available unpublished rows
   (``FOR UPDATE SKIP LOCKED`` inside that statement only) and moves each
   row's ``next_attempt_at`` past the lease; the daemon **commits at once**.
   The committed lease, not a lock, keeps other daemons off those rows: no
   transaction is open while the broker is talked to, however long it hangs.
2. Each row is published with publisher confirms, outside any transaction.
3. A new transaction settles the batch: ``mark_published`` records only what
   the broker confirmed; ``defer_outbox`` makes what it refused (nack,
   unroutable, exchange error) wait before it is offered again, so it cannot
   keep newer messages from being taken.  Rows that met a broken connection
   or the publish deadline are left alone: they come back when their lease
   runs out.

A row is never marked without a confirm.  A daemon that dies (or loses the
database) between confirm and settle leaves its batch to come back after the
lease: that batch is published once more, nothing else; consumers are
protected by the fencing token.
"""

from __future__ import annotations

import time
from collections import Counter
from datetime import timedelta

from .. import db, errors
from ..rows import OutboxMessage
from .log import Backoff, EventLog
from .publisher import Outcome, Publisher
from .session import WorkSession

PUBLISH_DEADLINE = 10.0  # seconds of publishing per batch, at most


class OutboxDrain:
    def __init__(self, publisher: Publisher, batch_size: int, lease: float, log: EventLog, totals: Counter,
                 amqp_backoff: Backoff):
        self._publisher = publisher
        self._batch_size = batch_size
        self._lease = timedelta(seconds=lease)
        # A short lease must leave room to settle: stop publishing well before it runs out.
        self._deadline = min(PUBLISH_DEADLINE, lease / 3)
        self._log = log
        self._totals = totals
        self._amqp_backoff = amqp_backoff  # a publish that lost the broker counts as a failed connection

    def batch(self, work: WorkSession) -> bool:
        """Drain one batch; True when another full batch may be waiting (and nothing failed)."""
        started = time.monotonic()
        try:
            rows = work.api.take_outbox(self._batch_size, self._lease)
            work.commit()  # at once: from here on the lease, not a lock, holds these rows
        except errors.FlowForgeError as exc:
            work.failed("take_outbox", exc)
            return False
        if not rows:
            return False

        confirmed, refused, failed, reasons = self._publish(rows, started)
        marked = self._settle(work, confirmed, refused, reasons)
        if marked is None:
            return False
        self._report(len(rows), marked, confirmed, refused, failed, reasons, started)
        # Rows that failed stay unpublished: refused ones come back after their
        # deferral, the rest when their lease runs out.
        return len(rows) == self._batch_size and not failed

    def _settle(self, work: WorkSession, confirmed: list, refused: list, reasons: dict[str, str]) -> int | None:
        """Mark the confirmed, defer the refused, in one new transaction; how many were marked (None: failed)."""
        if not confirmed and not refused:
            return 0
        marked = 0
        try:
            if confirmed:
                marked = work.api.mark_published(confirmed)
            if refused:
                error = "; ".join(f"{kind}: {reasons[kind]}" for kind in sorted(reasons)
                                  if kind not in (Outcome.CONNECTION.value, "timeout"))
                work.api.defer_outbox(refused, error)
            work.commit()
        except errors.FlowForgeError as exc:
            if confirmed:
                # Confirmed by the broker but not recorded: sent again once their lease runs out.
                self._log("mark_failed", unmarked=len(confirmed), error=db.first_line(exc))
            work.failed("mark_published", exc)
            return None
        return marked

    def _publish(self, rows: list[OutboxMessage], started: float) -> tuple[list, list, Counter, dict[str, str]]:
        """Publish in order until done, the deadline, or a lost connection: (confirmed, refused, failed, reasons)."""
        confirmed: list = []
        refused: list = []
        failed: Counter = Counter()
        reasons: dict[str, str] = {}
        for index, message in enumerate(rows):
            if time.monotonic() - started > self._deadline:
                failed["timeout"] += len(rows) - index
                reasons["timeout"] = f"batch ran past its {self._deadline:.0f}s publish deadline"
                break
            outcome, reason = self._publisher.publish(message)
            if outcome is Outcome.CONFIRMED:
                confirmed.append(message.id)
                continue
            failed[outcome.value] += 1
            reasons.setdefault(outcome.value, reason or "")
            if outcome is Outcome.CONNECTION:
                failed[outcome.value] += len(rows) - index - 1
                break
            # The broker answered and refused this one: it waits before the next try,
            # so it cannot keep newer messages from being taken.
            refused.append(message.id)
        return confirmed, refused, failed, reasons

    def _report(self, taken: int, marked: int, confirmed: list, refused: list, failed: Counter,
                reasons: dict[str, str], started: float) -> None:
        elapsed_ms = int((time.monotonic() - started) * 1000)
        self._totals["published"] += marked
        if confirmed:
            self._log("published", count=marked, taken=taken, failed=sum(failed.values()) or None, ms=elapsed_ms)
        for kind, count in sorted(failed.items()):
            if kind == Outcome.CONNECTION.value:
                delay = self._amqp_backoff.failed(time.monotonic())
                self._log("amqp_error", op="publish", unpublished=count, attempt=self._amqp_backoff.failures,
                          retry_in=delay, error=reasons.get(kind))
            else:
                self._log("publish_failed", reason=kind, count=count, error=reasons.get(kind),
                          deferred=len(refused) or None)
