"""The units a worker holds: one ``Job`` per task or work item from claim (or delivery) to its write.

A worker serves two queues with one protocol (DESIGN.md, "Two queues, one
protocol"): a DAG task's attempt (a task run: ``claim`` / ``heartbeat`` /
``complete`` / ``fail``) and a work item — a graph node's visit, a machine's
action, a fan-out child (``claim_work`` / ``heartbeat_work`` /
``complete_work`` / ``fail_work``).  A ``Job`` says which it is through its
``unit`` (``TASK`` or ``WORK_ITEM``), the one place that knows which SQL
function each write calls; everything else — pool, heartbeats, results,
shutdown — treats both alike, and so does the handler.

``InFlight`` is what every thread agrees on: how many jobs are submitted and
not finished (free capacity for the claim loop, the drain at shutdown) and
which are ours to heartbeat, keyed by ``(kind, id, fencing_token)`` — a reaped
unit can come back to this worker as a new generation while the old handler
still runs.  ``Stats`` counts how jobs ended.
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

from .. import errors
from ..client import Client
from ..rows import ClaimedTask, ClaimedWorkItem

# Answers to heartbeat/complete/fail (and their _work twins) that mean "this unit is not ours any more".
NOT_OURS = (errors.LeaseLost, errors.IllegalTransition, errors.NotFound)

MAX_ERROR_LENGTH = 2000


def one_line(exc: BaseException) -> str:
    """The exception's repr on one line, capped in length (what ``fail`` records)."""
    text = " ".join(repr(exc).split())
    return text if len(text) <= MAX_ERROR_LENGTH else text[: MAX_ERROR_LENGTH - 3] + "..."


@dataclass(frozen=True)
class Unit:
    """Which queue a job came from, and the SQL function each of its writes calls."""

    kind: str          # "task" (a DAG task run) or "work_item"
    noun: str          # how log lines name it

    def heartbeat(self, api: Client, job: "Job", lease: timedelta) -> datetime:
        if self is TASK:
            return api.heartbeat(job.id, job.fencing_token, lease)
        return api.heartbeat_work(job.id, job.fencing_token, lease)

    def complete(self, api: Client, job: "Job", output: Any) -> None:
        if self is TASK:
            api.complete(job.id, job.fencing_token, output)
        else:
            api.complete_work(job.id, job.fencing_token, output)

    def fail(self, api: Client, job: "Job", error: str, retryable: bool) -> None:
        if self is TASK:
            api.fail(job.id, job.fencing_token, error, retryable)
        else:
            api.fail_work(job.id, job.fencing_token, error, retryable)


TASK = Unit("task", "task")
WORK_ITEM = Unit("work_item", "work item")


class Broker(Protocol):
    """Where a pushed job came from (``push.PushConsumer``): it takes the task over, and acks it."""

    def take(self, job: "Job") -> bool: ...

    def ack(self, job: "Job") -> None: ...


@dataclass
class Job:
    """One unit this worker is responsible for, from claim (or delivery) to its write.

    ``id`` is the task run's id or the work item's, ``run_id`` the run's (of
    any engine), ``task_key`` the handler's name (a DAG task's key, a graph
    node's key, a machine action's task, a fanning node's key for its
    children), ``input`` what the handler receives: a task's input or a work
    item's payload.
    """

    id: uuid.UUID
    run_id: uuid.UUID
    task_key: str
    attempt: int
    fencing_token: int
    input: Any
    unit: Unit = TASK
    engine: str = "dag"               # the engine whose run this is: dag, graph, statemachine
    broker: Broker | None = None      # set for a pushed task
    owned: bool = True                 # pushed tasks become ours at their first heartbeat
    lease_expires_at: datetime | None = None
    last_beat: float = field(default_factory=time.monotonic)
    lease_lost: threading.Event = field(default_factory=threading.Event)
    deliveries: list = field(default_factory=list)  # (connection, channel, delivery_tag) to ack

    @property
    def key(self) -> tuple[str, uuid.UUID, int]:
        return (self.unit.kind, self.id, self.fencing_token)

    @property
    def push(self) -> bool:
        return self.broker is not None

    @property
    def is_task(self) -> bool:
        return self.unit is TASK

    def describe(self) -> str:
        """How log lines name it: ``task resize (<id>)`` or ``work item resize (<id>)``."""
        return f"{self.unit.noun} {self.task_key} ({self.id})"

    @classmethod
    def claimed(cls, row: ClaimedTask) -> "Job":
        """A pulled task: ours from the claim on."""
        return cls(row.task_run_id, row.workflow_run_id, row.task_key, row.attempt, row.fencing_token, row.input,
                   lease_expires_at=row.lease_expires_at)

    @classmethod
    def claimed_item(cls, row: ClaimedWorkItem) -> "Job":
        """A claimed work item: ours from the claim on; its payload is the handler's input."""
        return cls(row.work_item_id, row.run_id, row.task_name, row.attempt, row.fencing_token, row.payload,
                   unit=WORK_ITEM, engine=row.engine_kind, lease_expires_at=row.lease_expires_at)

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
        self._owned: dict[tuple[str, uuid.UUID, int], Job] = {}
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

    def owned_by_unit(self) -> dict[str, int]:
        """How many owned jobs of each unit kind run now: ``{"task": n, "work_item": m}``."""
        with self._lock:
            counts = {TASK.kind: 0, WORK_ITEM.kind: 0}
            for job in self._owned.values():
                counts[job.unit.kind] += 1
            return counts

    def due_for_heartbeat(self, interval: float) -> list[Job]:
        """Owned jobs whose lease is still ours and whose last heartbeat is ``interval`` seconds old."""
        now = time.monotonic()
        with self._lock:
            return [j for j in self._owned.values()
                    if j.owned and not j.lease_lost.is_set() and now - j.last_beat >= interval]


class Stats:
    """How jobs ended: ``completed``, ``failed`` (written as failures) and ``dropped`` (not written).

    ``counts`` adds them up over both queues; ``by_unit`` keeps them apart
    (``{"task": {...}, "work_item": {...}}``).
    """

    def __init__(self):
        self.counts = {"completed": 0, "failed": 0, "dropped": 0}
        self.by_unit = {unit.kind: {"completed": 0, "failed": 0, "dropped": 0} for unit in (TASK, WORK_ITEM)}
        self._lock = threading.Lock()

    def add(self, what: str, job: Job | None = None) -> None:
        with self._lock:
            self.counts[what] += 1
            if job is not None:
                self.by_unit[job.unit.kind][what] += 1
