"""Lease heartbeats: every held task or work item is heartbeaten every ``lease / 3`` seconds.

A task's lease is extended with ``heartbeat``, a work item's with
``heartbeat_work`` (``Job.unit`` decides); the rest is the same.

When a heartbeat is refused the task is no longer ours: its ``lease_lost``
event is set, the handler can see it (``ctx.lease_lost``), and whatever it
returns is dropped, not written.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import datetime, timedelta

from .. import errors
from .connection import SharedConnection
from .jobs import NOT_OURS, InFlight, Job

log = logging.getLogger("flowforge.worker")


class Heartbeats:
    def __init__(self, ops: SharedConnection, in_flight: InFlight, lease: float, abandon: threading.Event):
        self._ops = ops
        self._in_flight = in_flight
        self._lease = lease
        self._abandon = abandon

    def loop(self) -> None:
        """The heartbeat thread: until the grace period is over, extend every lease that is due."""
        interval = self._lease / 3
        while not self._abandon.is_set():
            self._abandon.wait(min(1.0, interval / 3))
            if self._abandon.is_set():
                return
            for job in self._in_flight.due_for_heartbeat(interval):
                try:
                    self.beat(job)
                except errors.FlowForgeError as exc:
                    log.warning("heartbeat of %s failed: %s", job.describe(), exc)
                except Exception:  # noqa: BLE001 - the heartbeat thread must outlive anything, or every lease lapses
                    log.exception("heartbeat of %s failed", job.describe())

    def beat(self, job: Job, *, raise_if_lost: bool = False) -> datetime | None:
        """Extend ``job``'s lease now; None (or LeaseLost with ``raise_if_lost``) when it is not ours."""
        if job.lease_lost.is_set() or self._abandon.is_set():
            if raise_if_lost:
                raise errors.LeaseLost(f"{job.describe()} is no longer held by this worker")
            return None
        beat_started = time.monotonic()
        lease = timedelta(seconds=self._lease)
        try:
            expires = self._ops.call(lambda api: job.unit.heartbeat(api, job, lease), give_up=lambda: True)
        except NOT_OURS as exc:
            job.lease_lost.set()
            log.warning("lease on %s lost: %s", job.describe(), exc)
            if raise_if_lost:
                raise errors.LeaseLost(str(exc), sqlstate=exc.sqlstate) from None
            return None
        job.last_beat = beat_started
        job.lease_expires_at = expires
        return expires

    def for_handler(self, job: Job) -> datetime:
        """``Context.heartbeat``: extend now, LeaseLost when the task is no longer ours."""
        return self.beat(job, raise_if_lost=True)
