"""The rows the SDK and the daemon act on, as small frozen dataclasses built by column name.

``Client`` builds them with psycopg's ``class_row``: each column fills the
field of the same name, so a column added or reordered in SQL can never shift
a value into the wrong field.  Reads that go straight to output (tables,
``--json``) stay plain dicts.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any


@dataclass(frozen=True, slots=True)
class ClaimedTask:
    """One row of ``flowforge.claim``: a task now held by the caller under ``fencing_token``."""

    task_run_id: uuid.UUID
    workflow_run_id: uuid.UUID
    task_key: str
    attempt: int
    fencing_token: int
    input: Any
    lease_expires_at: datetime


@dataclass(frozen=True, slots=True)
class ClaimedWorkItem:
    """One row of ``flowforge.claim_work``: a work item (a graph node's visit, a machine's action, a fan-out child)
    now held by the caller under ``fencing_token``; ``payload`` is what its engine gave it."""

    work_item_id: uuid.UUID
    run_id: uuid.UUID
    engine_kind: str
    task_name: str
    attempt: int
    fencing_token: int
    payload: Any
    lease_expires_at: datetime


@dataclass(frozen=True, slots=True)
class CompletionOutcome:
    """One row of ``flowforge.complete_many``: completed, stale, not_running or not_found."""

    task_run_id: uuid.UUID
    outcome: str


@dataclass(frozen=True, slots=True)
class QueueSetting:
    """One row of ``flowforge.queue_settings``; ``exchange`` is None for a pull queue.

    ``routing_key`` is what dispatch publishes with and ``amqp_queue`` the
    durable queue a push consumer binds with it: both unique per database and
    organization unless the queue was configured with its own routing key.
    """

    name: str
    exchange: str | None
    routing_key: str | None
    dispatch_lease: timedelta
    amqp_queue: str


@dataclass(frozen=True, slots=True)
class OutboxMessage:
    """One row of ``flowforge.take_outbox``; ``body`` is the payload's JSON text, sent as it is."""

    id: uuid.UUID
    exchange: str
    routing_key: str
    message_id: str
    body: str
