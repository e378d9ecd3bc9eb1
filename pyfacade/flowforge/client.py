"""The SQL API in Python: one ``Client`` method per FlowForge API function.

```python
from flowforge import Client, db

with db.connect(dsn, autocommit=True) as conn:
    client = Client(conn)
    run_id = client.start_run("nightly-report", {"region": "emea"})
    print(client.get_run(run_id)["state"])
```

This is the only way the facade calls the API: the CLI, the demo, the worker
SDK, the daemon and the test helpers all hold a ``Client``.  Each method
sends one named statement of ``flowforge.queries`` (named notation, explicit
casts) and returns rows by column name — dicts for reads that go to output,
the dataclasses of ``flowforge.rows`` for rows the SDK and daemon act on.

Nothing here decides anything: refusals come back from PostgreSQL and
arrive as the ``flowforge.errors`` class for their SQLSTATE (through
``db.mapped_errors``, the one mapping).  Transactions belong to the caller:
on an autocommit connection each call is its own transaction; the daemon's
work session groups calls and commits itself.  ``apply_workflow`` is the one
method that needs two statements in one transaction, and it opens it.
"""

from __future__ import annotations

import re
import uuid
from datetime import datetime, timedelta, timezone
from typing import Any, Sequence

import psycopg
from psycopg.rows import class_row
from psycopg.types.json import Jsonb

from . import errors, queries
from .db.statements import execute, fetch_all, fetch_one, fetch_value
from .rows import ClaimedTask, ClaimedWorkItem, CompletionOutcome, OutboxMessage, QueueSetting

# An interval: a timedelta, or interval text PostgreSQL reads ('30 seconds').
Interval = timedelta | str

_HEX_PREFIX = re.compile(r"^[0-9a-fA-F-]{4,36}$")

_CLAIMED = class_row(ClaimedTask)
_CLAIMED_WORK = class_row(ClaimedWorkItem)
_OUTCOMES = class_row(CompletionOutcome)
_QUEUES = class_row(QueueSetting)
_OUTBOX = class_row(OutboxMessage)


def jsonb(value: Any) -> Jsonb | None:
    """A jsonb parameter: None stays SQL NULL; a ready ``Jsonb`` (e.g. pre-serialised text) passes as it is."""
    if value is None or isinstance(value, Jsonb):
        return value
    return Jsonb(value)


class Client:
    """The FlowForge SQL API on one psycopg connection (which the caller owns and closes)."""

    def __init__(self, conn: psycopg.Connection):
        self.conn = conn

    # --- identity and tenancy (05_identity.sql) ---------------------------------

    def schema_version(self) -> str | None:
        """The newest migration applied to this database (``flowforge.schema_version()``)."""
        return fetch_value(self.conn, queries.SCHEMA_VERSION)

    def authenticate(self, api_key: str) -> uuid.UUID:
        """Act for the key's organization for the rest of the session (gateway logins)."""
        return fetch_value(self.conn, queries.AUTHENTICATE, {"api_key": api_key})

    def create_organization(self, slug: str, name: str) -> uuid.UUID:
        return fetch_value(self.conn, queries.CREATE_ORGANIZATION, {"slug": slug, "name": name})

    def add_member(self, organization: str, member: str, role: str = "member") -> None:
        execute(self.conn, queries.ADD_MEMBER, {"organization": organization, "member": member, "role": role})

    def onboard_login(self, organization: str, member: str, role: str = "member", *, statement_timeout: str = "30s",
                      lock_timeout: str = "5s", idle_in_transaction_timeout: str = "60s") -> None:
        """add_member plus the login's three timeouts (the operator's path: superuser or CREATEROLE)."""
        execute(self.conn, queries.ONBOARD_LOGIN, {
            "organization": organization, "member": member, "role": role, "statement_timeout": statement_timeout,
            "lock_timeout": lock_timeout, "idle_in_transaction_timeout": idle_in_transaction_timeout,
        })

    def remove_member(self, organization: str, member: str) -> None:
        execute(self.conn, queries.REMOVE_MEMBER, {"organization": organization, "member": member})

    def create_api_key(self, organization: str, name: str, role: str = "member") -> str:
        """A new API key's token: shown once, stored only as a hash."""
        return fetch_value(self.conn, queries.CREATE_API_KEY,
                           {"organization": organization, "name": name, "role": role})

    def revoke_api_key(self, prefix: str) -> None:
        execute(self.conn, queries.REVOKE_API_KEY, {"prefix": prefix})

    # --- definitions ------------------------------------------------------------------

    def define_workflow(self, spec: Any) -> uuid.UUID:
        """The id of the workflow version ``spec`` defines (an unchanged spec keeps the latest version)."""
        return fetch_value(self.conn, queries.DEFINE_WORKFLOW, {"spec": jsonb(spec)})

    def apply_workflow(self, spec: Any) -> dict:
        """define_workflow(spec) and what it did: {id, name, version, created}, in one transaction (commits)."""
        with self.conn.transaction():
            version_id = self.define_workflow(spec)
            # define_workflow validated the spec, so it is an object with a name.
            info = fetch_one(self.conn, queries.WORKFLOW_DEFINED, {"name": spec["name"]}) or {}
        return {"id": version_id, **info}

    def _every_page(self, query: str, page: int = 1000) -> list[dict]:
        """Every row of a keyset listing, page after page (each row's ``cursor`` is where the next page starts)."""
        rows: list[dict] = []
        after = None
        while True:
            got = fetch_all(self.conn, query, {"max_rows": page, "after": after})
            rows.extend({k: v for k, v in row.items() if k != "cursor"} for row in got)
            if len(got) < page:
                return rows
            after = got[-1]["cursor"]

    def list_workflows(self) -> list[dict]:
        """The latest version of every live workflow, newest first."""
        return self._every_page(queries.WORKFLOW_LIST)

    def get_workflow(self, name: str, version: int | None = None) -> dict:
        """A version (default the latest): {id, name, version, kind, created_at, spec, versions}."""
        return _parse_times(fetch_value(self.conn, queries.GET_WORKFLOW, {"name": name, "version": version}))

    def task_timeouts(self, name: str, version: int) -> dict[str, timedelta | None]:
        """Each task key of a workflow version → its timeout (None: no timeout)."""
        return {row["key"]: row["timeout"]
                for row in fetch_all(self.conn, queries.TASK_TIMEOUTS, {"name": name, "version": version})}

    # --- runs ------------------------------------------------------------------------------

    def start_run(self, workflow: str, input: Any = None, idempotency_key: str | None = None) -> uuid.UUID:
        return fetch_value(self.conn, queries.START_RUN, {
            "workflow": workflow, "input": jsonb({} if input is None else input),
            "idempotency_key": idempotency_key,
        })

    def start_runs(self, workflow: str, inputs: Sequence[Any],
                   idempotency_keys: Sequence[str | None] | None = None) -> list[uuid.UUID]:
        """One run per input (None is {}), in one statement; the run ids in input order."""
        return [row["id"] for row in fetch_all(self.conn, queries.START_RUNS, {
            "workflow": workflow, "inputs": [jsonb({} if i is None else i) for i in inputs],
            "idempotency_keys": None if idempotency_keys is None else list(idempotency_keys),
        })]

    def cancel_run(self, run_id: uuid.UUID, reason: str | None = None) -> None:
        execute(self.conn, queries.CANCEL_RUN, {"run_id": run_id, "reason": reason})

    def retry_run(self, run_id: uuid.UUID) -> None:
        execute(self.conn, queries.RETRY_RUN, {"run_id": run_id})

    def delete_run(self, run_id: uuid.UUID) -> None:
        """Soft-delete a finished run (``errors.IllegalTransition`` while it runs, ``errors.Deleted`` twice)."""
        execute(self.conn, queries.DELETE_RUN, {"run_id": run_id})

    def delete_workflow(self, name: str) -> int:
        """Soft-delete every version of a workflow; how many were live (``errors.Deleted`` if none)."""
        return fetch_value(self.conn, queries.DELETE_WORKFLOW, {"name": name})

    def run_events(self, run_id: uuid.UUID) -> list[dict]:
        return fetch_all(self.conn, queries.RUN_EVENTS, {"run_id": run_id})

    def list_runs(self, *, workflow: str | None = None, state: str | None = None, limit: int = 20) -> list[dict]:
        return fetch_all(self.conn, queries.RUN_LIST, {"workflow": workflow, "state": state, "limit": limit})

    def get_run(self, run_id: uuid.UUID) -> dict:
        """get_run(run_id) of any kind, with timestamps as datetimes and ``id`` a UUID.

        ``kind`` says which engine's detail it carries: a DAG's ``tasks`` (in
        spec order, plus ``tasks_done``), a graph's position, path, run_counts,
        fan_outs and items, a machine's machine_state, context, history,
        queued, timers and items.
        """
        run = _parse_times(fetch_value(self.conn, queries.GET_RUN, {"run_id": run_id}))
        run["id"] = uuid.UUID(run["id"])
        if run.get("kind", "dag") == "dag":
            run["tasks_done"] = run["tasks_total"] - run["tasks_remaining"]
            run["tasks"] = [_parse_times(task) for task in run["tasks"]]
        for key in ("items", "history", "queued", "timers"):
            if isinstance(run.get(key), list):
                run[key] = [_parse_times(entry) for entry in run[key]]
        return run

    def send_event(self, run_id: uuid.UUID, event: str, payload: Any = None, event_id: str | None = None) -> dict:
        """An event for a machine run: {outcome: applied | queued | duplicate, state, live, suspended}.

        A refusal (the state does not accept it, no guard holds, the run ended)
        is ``errors.EventRefused`` (FF012), and nothing was written.
        """
        return fetch_value(self.conn, queries.SEND_EVENT, {
            "run_id": run_id, "event": event, "payload": jsonb({} if payload is None else payload),
            "event_id": event_id,
        })

    def fan_out_output(self, run_id: uuid.UUID, node: str, after_index: int = -1, max_items: int = 1000) -> list[dict]:
        """A fanning node's children's outputs from ``after_index + 1``: {index, status, output}, in element order."""
        return fetch_all(self.conn, queries.FAN_OUT_OUTPUT, {
            "run_id": run_id, "node": node, "after_index": after_index, "max_items": max_items,
        })

    def resolve_run_id(self, text: str) -> uuid.UUID:
        """A run id from its full text or a unique prefix of at least 4 hex digits."""
        text = text.strip()
        try:
            return uuid.UUID(text)
        except ValueError:
            pass
        if not _HEX_PREFIX.match(text):
            raise errors.InvalidArgument(f"{text!r} is not a run id (a UUID or a prefix of at least 4 hex digits)")
        return fetch_value(self.conn, queries.RESOLVE_RUN_ID, {"prefix": text})

    # --- queues ---------------------------------------------------------------------------------

    def configure_queue(self, name: str, exchange: str | None = None, routing_key: str | None = None,
                        dispatch_lease: Interval = timedelta(minutes=5), max_running: int | None = None,
                        rate: dict | None = None) -> None:
        """The whole configuration of a queue: delivery, and flow control's max_running and rate
        ({"limit": n, "per": "1 minute"}); what is omitted takes its default (no limit)."""
        execute(self.conn, queries.CONFIGURE_QUEUE, {"name": name, "exchange": exchange,
                                                     "routing_key": routing_key, "dispatch_lease": dispatch_lease,
                                                     "max_running": max_running,
                                                     "rate": jsonb(rate)})

    def pause_queue(self, name: str) -> None:
        """Claims take nothing from the queue until resume_queue; what runs finishes."""
        execute(self.conn, queries.PAUSE_QUEUE, {"name": name})

    def resume_queue(self, name: str) -> None:
        execute(self.conn, queries.RESUME_QUEUE, {"name": name})

    def list_queues(self) -> list[dict]:
        """Every configured queue or queue with live tasks: delivery, routing, ready/running counts."""
        return fetch_all(self.conn, queries.LIST_QUEUES)

    def queue_settings(self, names: Sequence[str]) -> list[QueueSetting]:
        return fetch_all(self.conn, queries.QUEUE_SETTINGS, {"names": list(names)}, row=_QUEUES)

    # --- the worker protocol ---------------------------------------------------------------------

    def listen_ready(self) -> None:
        """LISTEN on ``flowforge_ready``, notified when a transaction made a task ready."""
        execute(self.conn, queries.LISTEN_READY)

    def claim(self, queues: Sequence[str], worker: str, lease: Interval = "30 seconds",
              batch: int = 1, task_names: Sequence[str] | None = None) -> list[ClaimedTask]:
        """Take up to ``batch`` ready tasks; with ``task_names``, only tasks of those names."""
        return fetch_all(self.conn, queries.CLAIM, {
            "queues": list(queues), "worker": worker, "lease": lease, "batch": batch,
            "task_names": None if task_names is None else list(task_names),
        }, row=_CLAIMED)

    def heartbeat(self, task_run_id: uuid.UUID, fencing_token: int, lease: Interval = "30 seconds") -> datetime:
        """Extend the lease; returns when it now expires."""
        return fetch_value(self.conn, queries.HEARTBEAT, {
            "task_run_id": task_run_id, "fencing_token": fencing_token, "lease": lease,
        })

    def complete(self, task_run_id: uuid.UUID, fencing_token: int, output: Any = None) -> None:
        execute(self.conn, queries.COMPLETE, {
            "task_run_id": task_run_id, "fencing_token": fencing_token, "output": jsonb(output),
        })

    def complete_many(self, task_run_ids: Sequence[uuid.UUID], fencing_tokens: Sequence[int],
                      outputs: Sequence[Any] | None = None) -> list[CompletionOutcome]:
        """complete() for many tasks in one transaction; a refusal is an outcome, not an error."""
        return fetch_all(self.conn, queries.COMPLETE_MANY, {
            "task_run_ids": list(task_run_ids), "fencing_tokens": list(fencing_tokens),
            "outputs": None if outputs is None else [jsonb(o) for o in outputs],
        }, row=_OUTCOMES)

    def fail(self, task_run_id: uuid.UUID, fencing_token: int, error: str, retryable: bool = True) -> None:
        execute(self.conn, queries.FAIL, {
            "task_run_id": task_run_id, "fencing_token": fencing_token, "error": error, "retryable": retryable,
        })

    # --- the work-item queue (graph nodes, machine actions, fan-out children) ------------------------

    def claim_work(self, queues: Sequence[str], agent: str, lease: Interval = "30 seconds", batch: int = 1,
                   engine_kinds: Sequence[str] | None = None,
                   task_names: Sequence[str] | None = None) -> list[ClaimedWorkItem]:
        """Take up to ``batch`` pending work items; with ``task_names``, only items of those names."""
        return fetch_all(self.conn, queries.CLAIM_WORK, {
            "queues": list(queues), "agent": agent, "lease": lease, "batch": batch,
            "engine_kinds": None if engine_kinds is None else list(engine_kinds),
            "task_names": None if task_names is None else list(task_names),
        }, row=_CLAIMED_WORK)

    def heartbeat_work(self, work_item_id: uuid.UUID, fencing_token: int, lease: Interval = "30 seconds") -> datetime:
        """Extend a work item's lease; returns when it now expires."""
        return fetch_value(self.conn, queries.HEARTBEAT_WORK, {
            "work_item_id": work_item_id, "fencing_token": fencing_token, "lease": lease,
        })

    def complete_work(self, work_item_id: uuid.UUID, fencing_token: int, output: Any = None) -> None:
        execute(self.conn, queries.COMPLETE_WORK, {
            "work_item_id": work_item_id, "fencing_token": fencing_token, "output": jsonb(output),
        })

    def fail_work(self, work_item_id: uuid.UUID, fencing_token: int, error: str, retryable: bool = True) -> None:
        execute(self.conn, queries.FAIL_WORK, {
            "work_item_id": work_item_id, "fencing_token": fencing_token, "error": error, "retryable": retryable,
        })

    # --- agents ---------------------------------------------------------------------------------------

    def register_agent(self, name: str, info: dict | None = None) -> uuid.UUID:
        """Create or update the agent ``name`` (status active); ``info``: addresses, version, type, labels..."""
        return fetch_value(self.conn, queries.REGISTER_AGENT, {"name": name, "info": jsonb(info or {})})

    def agent_heartbeat(self, name: str, metrics: dict | None = None) -> str:
        """Record a heartbeat (and metrics); returns the agent's status: active, draining or inactive."""
        return fetch_value(self.conn, queries.AGENT_HEARTBEAT, {"name": name, "metrics": jsonb(metrics)})

    def set_agent_status(self, name: str, status: str) -> None:
        """active | draining (finish what it holds, take nothing new) | inactive (bindings released)."""
        execute(self.conn, queries.SET_AGENT_STATUS, {"name": name, "status": status})

    def list_agents(self) -> list[dict]:
        """Every agent of the organization by name, with its effective status (the claims' own rule)."""
        return self._every_page(queries.LIST_AGENTS)

    # --- maintenance and the outbox (the daemon) ---------------------------------------------------

    def tick(self, engine_id: str | None = None) -> dict:
        """The periodic duties, with a count per duty.

        With ``engine_id`` (a daemon's instance id) only the duties of the
        organizations this daemon serves now (``serving``: organization →
        lease generation); without, every organization's.  A duty that failed
        is named under ``errors``.
        """
        return fetch_value(self.conn, queries.TICK, {"engine_id": engine_id})

    def list_engines(self) -> list[dict]:
        """Every daemon that ever served duties: engine_id, live, organizations (served now), heartbeat_at."""
        return fetch_all(self.conn, queries.LIST_ENGINES)

    def leave_duties(self, engine_id: str) -> int:
        """A daemon stopping cleanly: give back the organizations it serves and stop counting as live."""
        return fetch_value(self.conn, queries.LEAVE_DUTIES, {"engine_id": engine_id})

    def reap_expired_leases(self, max_rows: int = 1000) -> int:
        return fetch_value(self.conn, queries.REAP_EXPIRED_LEASES, {"max_rows": max_rows})

    def purge(self, older_than: Interval, dry_run: bool = True, batch_size: int = 1000) -> dict:
        """Retention, one batch: the runs that ended more than ``older_than`` ago and what hangs off them.

        With ``dry_run`` (the default) nothing is removed and the report says what would be;
        ``report["more"]`` says another call has more to take (docs/operations.md, retention).
        """
        return fetch_value(self.conn, queries.PURGE,
                           {"older_than": older_than, "dry_run": dry_run, "batch_size": batch_size})

    def listen_probe(self) -> None:
        """LISTEN on ``flowforge_probe``, where a process checks that LISTEN delivers (``db.listen``)."""
        execute(self.conn, queries.LISTEN_PROBE)

    def notify_probe(self, token: str) -> None:
        """NOTIFY ``flowforge_probe`` with ``token`` (delivered at commit)."""
        execute(self.conn, queries.NOTIFY_PROBE, {"token": token})

    def listen_outbox(self) -> None:
        """LISTEN on ``flowforge_outbox``, notified when a transaction wrote outbox rows."""
        execute(self.conn, queries.LISTEN_OUTBOX)

    def bound_session(self, *, statement_timeout: str, lock_timeout: str, idle_in_transaction_timeout: str) -> None:
        """Bound every statement, lock wait and open transaction of this session."""
        execute(self.conn, queries.BOUND_SESSION, {
            "statement_timeout": statement_timeout, "lock_timeout": lock_timeout,
            "idle_in_transaction_timeout": idle_in_transaction_timeout,
        })

    def take_outbox(self, batch: int = 100, lease: Interval = "30 seconds") -> list[OutboxMessage]:
        """Available unpublished messages, held from other takers for ``lease``: commit, then publish, then settle."""
        return fetch_all(self.conn, queries.TAKE_OUTBOX, {"batch": batch, "lease": lease}, row=_OUTBOX)

    def mark_published(self, ids: Sequence[uuid.UUID]) -> int:
        return fetch_value(self.conn, queries.MARK_PUBLISHED, {"ids": list(ids)})

    def defer_outbox(self, ids: Sequence[uuid.UUID], error: str) -> int:
        return fetch_value(self.conn, queries.DEFER_OUTBOX, {"ids": list(ids), "error": error})

    # --- triggers (60_triggers, 80_reads/50_firings.sql) ---------------------------

    def create_trigger(self, name: str, trigger_type: str, action: str, target: str,
                       options: dict | None = None) -> uuid.UUID:
        """A cron | webhook | gitpoll | filesystem trigger that starts ``target`` (a workflow) or signals it (an event)."""
        return fetch_value(self.conn, queries.CREATE_TRIGGER, {
            "name": name, "trigger_type": trigger_type, "action": action, "target": target,
            "options": jsonb(options if options is not None else {})})

    def set_trigger_enabled(self, name: str, enabled: bool) -> None:
        execute(self.conn, queries.SET_TRIGGER_ENABLED, {"name": name, "enabled": enabled})

    def drop_trigger(self, name: str) -> None:
        """Soft delete: it never fires again; its firings and the runs they caused stay readable."""
        execute(self.conn, queries.DROP_TRIGGER, {"name": name})

    def fire_trigger(self, name: str, payload: Any = None, *, fired_on: datetime | None = None,
                     delivery_id: str | None = None) -> dict:
        """Fire by hand: ``{"firing_id", "outcome", "run_id", "error"}`` (a refusal is an outcome, not an error)."""
        return fetch_value(self.conn, queries.FIRE_TRIGGER, {
            "name": name, "payload": jsonb(payload if payload is not None else {}), "fired_on": fired_on,
            "delivery_id": delivery_id})

    def list_triggers(self) -> list[dict]:
        """Every live trigger of the organization, newest first (all of them: page after page)."""
        return self._every_page(queries.LIST_TRIGGERS)

    def list_firings(self, trigger_name: str | None = None, outcome: str | None = None,
                     max_rows: int = 50) -> list[dict]:
        """Newest first; ``payload`` is None unless the caller is an admin of the organization."""
        return fetch_all(self.conn, queries.LIST_FIRINGS,
                         {"trigger_name": trigger_name, "outcome": outcome, "max_rows": max_rows})

    def cron_next(self, expr: str, after: datetime, timezone: str = "UTC") -> datetime | None:
        return fetch_value(self.conn, queries.CRON_NEXT, {"expr": expr, "after": after, "timezone": timezone})

    # --- the daemon's feeders (50_feeders.sql) -------------------------------------

    def feeder_triggers(self, engine_id: str | None = None) -> list[dict]:
        """The live filesystem and gitpoll triggers (of the organizations ``engine_id`` serves)."""
        return fetch_all(self.conn, queries.FEEDER_TRIGGERS, {"engine_id": engine_id})

    def feeder_unfired(self, trigger_id: uuid.UUID, delivery_ids: Sequence[str]) -> list[str]:
        return list(fetch_value(self.conn, queries.FEEDER_UNFIRED,
                                {"trigger_id": trigger_id, "delivery_ids": list(delivery_ids)}) or [])

    def feeder_fire(self, trigger_id: uuid.UUID, delivery_id: str, payload: Any,
                    fired_on: datetime | None = None) -> dict:
        return fetch_value(self.conn, queries.FEEDER_FIRE, {
            "trigger_id": trigger_id, "delivery_id": delivery_id, "payload": jsonb(payload), "fired_on": fired_on})

    def feeder_save_state(self, trigger_id: uuid.UUID, state: dict) -> None:
        execute(self.conn, queries.FEEDER_SAVE_STATE, {"trigger_id": trigger_id, "state": jsonb(state)})


def _parse_times(obj: dict) -> dict:
    """jsonb from the read API carries timestamps as ISO text (``*_at``, a history entry's ``at``); make them datetimes."""
    for key, value in obj.items():
        if isinstance(value, str) and (key.endswith("_at") or key == "at"):
            obj[key] = _INFINITE.get(value) or datetime.fromisoformat(value)
    return obj


# A fanning node's unit is held by the engine under a lease that never expires ('infinity').
_INFINITE = {"infinity": datetime.max.replace(tzinfo=timezone.utc),
             "-infinity": datetime.min.replace(tzinfo=timezone.utc)}
