"""What a handler sees: the ``Context`` of the task it runs, and ``PermanentError``."""

from __future__ import annotations

import logging
import threading
from datetime import datetime
from typing import Any, Callable

from .jobs import Job

log = logging.getLogger("flowforge.worker")


class PermanentError(Exception):
    """Raise from a handler to fail the task for good: ``fail(retryable=False)``."""


Handler = Callable[["Context", Any], Any]


class Context:
    """What a handler knows about the unit of work it runs — the same for every engine.

    A handler is called for a DAG task and for a work item (a graph node's
    visit, a machine's action, a fan-out child) alike; nothing in its
    signature differs.  Attributes:

    * ``task_key``: the name it was registered under (a DAG task's key, a
      graph node's key, a machine action's ``task``, a fanning node's key);
    * ``run_id``: the run's id, whatever its engine (``workflow_run_id`` is
      the same value, kept for DAG handlers written before the other engines);
    * ``attempt`` (1 on the first try), ``fencing_token``;
    * ``input``: the same object the handler receives (a DAG task's ``{"run",
      "deps"}``, a work item's payload — docs/worker.md);
    * ``id``: the unit's id; ``task_run_id`` is it for a DAG task (else None)
      and ``work_item_id`` for a work item (else None);
    * ``engine``: ``dag``, ``graph`` or ``statemachine`` — for logging; a
      handler needs not look;
    * ``logger``, ``worker_name``.
    """

    def __init__(self, job: Job, worker_name: str, heartbeat: Callable[[Job], datetime]):
        self._job = job
        self._heartbeat = heartbeat
        self.id = job.id
        self.task_run_id = job.id if job.is_task else None
        self.work_item_id = None if job.is_task else job.id
        self.run_id = job.run_id
        self.workflow_run_id = job.run_id
        self.engine = job.engine
        self.task_key = job.task_key
        self.attempt = job.attempt
        self.fencing_token = job.fencing_token
        self.input = job.input
        self.worker_name = worker_name
        self.logger = log.getChild(job.task_key)

    @property
    def lease_lost(self) -> bool:
        """True once a heartbeat was refused: stop working, the result will be dropped."""
        return self._job.lease_lost.is_set()

    @property
    def lease_lost_event(self) -> threading.Event:
        """The ``threading.Event`` behind ``lease_lost``, to wait on."""
        return self._job.lease_lost

    def heartbeat(self) -> datetime:
        """Extend the lease now (the worker also does it every lease/3) and return the new expiry.

        Raises ``flowforge.errors.LeaseLost`` when the unit is no longer ours.
        """
        return self._heartbeat(self._job)

    def __repr__(self) -> str:
        return f"<Context {self.task_key} run={self.run_id} attempt={self.attempt}>"
