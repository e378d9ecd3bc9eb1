"""The tasks a worker holds: one ``Job`` per task from claim (or delivery) to its write, and their bookkeeping.

``InFlight`` is what every thread agrees on: how many jobs are submitted and
not finished (free capacity for the claim loop, the drain at shutdown) and
which are ours to heartbeat, keyed by ``(task_run_id, fencing_token)`` — a
reaped task can come back to this worker as a new generation while the old
handler still runs.  ``Stats`` counts how jobs ended.
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from .. import errors
from ..rows import ClaimedTask

# Answers to heartbeat/complete/fail that mean "this task is not ours any more".
NOT_OURS = (errors.LeaseLost, errors.IllegalTransition, errors.NotFound)

MAX_ERROR_LENGTH = 2000


def one_line(exc: BaseException) -> str:
    """The exception's repr on one line, capped in length (what ``fail`` records)."""
    text = " ".join(repr(exc).split())
    return text if len(text) <= MAX_ERROR_LENGTH else text[: MAX_ERROR_LENGTH - 3] + "..."


class Broker(Protocol):
    """Where a pushed job came from (``push.PushConsumer``): it takes the task over, and acks it."""

    def take(self, job: "Job") -> bool: ...

    def ack(self, job: "Job") -> None: ...


@dataclass
class Job:
    """One task this worker is responsible for, from claim (or delivery) to its write."""

    task_run_id: uuid.UUID
    workflow_run_id: uuid.UUID
    task_key: str
    attempt: int
    fencing_token: int
    input: Any
    broker: Broker | None = None      # set for a pushed task
    owned: bool = True                 # pushed tasks become ours at their first heartbeat
    lease_expires_at: datetime | None = None
    last_beat: float = field(default_factory=time.monotonic)
    lease_lost: threading.Event = field(default_factory=threading.Event)
    deliveries: list = field(default_factory=list)  # (connection, channel, delivery_tag) to ack

    @property
    def key(self) -> tuple[uuid.UUID, int]:
        return (self.task_run_id, self.fencing_token)

    @property
    def push(self) -> bool:
        return self.broker is not None

    @classmethod
    def claimed(cls, row: ClaimedTask) -> "Job":
        """A pulled task: ours from the claim on."""
        return cls(row.task_run_id, row.workflow_run_id, row.task_key, row.attempt, row.fencing_token, row.input,
                   lease_expires_at=row.lease_expires_at)

    @classmethod
    def delivered(cls, payload: dict, broker: Broker) -> "Job":
        """A pushed task, from its message (KeyError/ValueError/TypeError when malformed); ours only once taken."""
        return cls(uuid.UUID(payload["task_run_id"]), uuid.UUID(payload["workflow_run_id"]), payload["task_key"],
                   int(payload["attempt"]), int(payload["fencing_token"]), payload.get("input"),
                   broker=broker, owned=False)


class InFlight:
    """Jobs submitted and not finished (pull and push), and the ones we own."""

    def __init__(self):
        self._lock = threading.Lock()
        self._owned: dict[tuple[uuid.UUID, int], Job] = {}
        self._pending = 0

    @property
    def count(self) -> int:
        with self._lock:
            return self._pending

    def add(self, job: Job) -> None:
        with self._lock:
            self._pending += 1
            if job.owned:
                self._owned[job.key] = job

    def remove(self, job: Job) -> None:
        with self._lock:
            self._pending -= 1
            if self._owned.get(job.key) is job:
                del self._owned[job.key]

    def adopt(self, job: Job) -> bool:
        """A pushed job we just took over becomes owned; False if that generation already runs here."""
        with self._lock:
            existing = self._owned.get(job.key)
            if existing is not None:
                existing.deliveries.extend(job.deliveries)  # redelivered while we run it: ack with it
                job.deliveries = []
                return False
            job.owned = True
            self._owned[job.key] = job
            return True

    def due_for_heartbeat(self, interval: float) -> list[Job]:
        """Owned jobs whose lease is still ours and whose last heartbeat is ``interval`` seconds old."""
        now = time.monotonic()
        with self._lock:
            return [j for j in self._owned.values()
                    if j.owned and not j.lease_lost.is_set() and now - j.last_beat >= interval]


class Stats:
    """How jobs ended: ``completed``, ``failed`` (written as failures) and ``dropped`` (not written)."""

    def __init__(self):
        self.counts = {"completed": 0, "failed": 0, "dropped": 0}
        self._lock = threading.Lock()

    def add(self, what: str) -> None:
        with self._lock:
            self.counts[what] += 1
