"""What a handler sees: the ``Context`` of the task it runs, and ``PermanentError``."""

from __future__ import annotations

import logging
import threading
import uuid
from datetime import datetime
from typing import Any, Callable

from .jobs import Job

log = logging.getLogger("flowforge.worker")


class PermanentError(Exception):
    """Raise from a handler to fail the task for good: ``fail(retryable=False)``."""


Handler = Callable[["Context", Any], Any]


class Context:
    """What a handler knows about the task it runs.

    Attributes: ``task_run_id``, ``workflow_run_id``, ``task_key``, ``attempt``
    (1 on the first try), ``fencing_token``, ``input`` (the same object the
    handler receives: ``{"run": <run input>, "deps": {<key>: <output>}}``),
    ``logger``, ``worker_name``.
    """

    def __init__(self, job: Job, worker_name: str, heartbeat: Callable[[Job], datetime]):
        self._job = job
        self._heartbeat = heartbeat
        self.task_run_id = job.task_run_id
        self.workflow_run_id = job.workflow_run_id
        self.task_key = job.task_key
        self.attempt = job.attempt
        self.fencing_token = job.fencing_token
        self.input = job.input
        self.worker_name = worker_name
        self.logger = log.getChild(job.task_key)

    @property
    def run_id(self) -> uuid.UUID:
        return self.workflow_run_id

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

        Raises ``flowforge.errors.LeaseLost`` when the task is no longer ours.
        """
        return self._heartbeat(self._job)

    def __repr__(self) -> str:
        return f"<Context {self.task_key} run={self.workflow_run_id} attempt={self.attempt}>"
