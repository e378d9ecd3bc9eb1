"""One worker process of the soak test (tests/py/test_soak.py): every handler of its workflows, each execution recorded.

    python soak_worker.py DSN AMQP_URL RECORD_FILE NAME [raw]

With ``raw``, no SDK: one loop claims a task or a work item through the SQL
API, runs the same handler, sometimes sleeps past its 3 s lease (never
heartbeating) and writes the result with its fencing token anyway — what a
worker stalled by a GC pause or a VM migration does. The database must
refuse every such stale write (FF004); the SDK, which notices a lost lease
itself, would hide that from the test.

DSN logs in as one organization's login, so the process serves that
organization only. Each handler appends a ``start`` line before it works and
an ``end`` line after (JSON: the unit's id, its fencing token, attempt,
engine, pid and wall time) to RECORD_FILE with one unbuffered ``write`` per
line, so a line written before a SIGKILL is on disk. What the handlers
return is fixed by their input, so the test knows every run's end in advance.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time

import flowforge
from flowforge import errors

DSN, AMQP_URL, RECORD_FILE, NAME = sys.argv[1:5]
RAW = sys.argv[5:6] == ["raw"]
QUEUE, PUSH_QUEUE = "soak", "soak-push"
HANDLERS = {}

worker = flowforge.Worker(queues=[QUEUE], push_queues=[PUSH_QUEUE], amqp_url=AMQP_URL, dsn=DSN, name=NAME,
                          concurrency=4, lease=3, poll_interval=0.2, grace_period=2, complete_batch_interval=0.002)
_fd = os.open(RECORD_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)


def record(ctx, what: str, **extra) -> None:
    line = json.dumps({"e": what, "unit": str(ctx.id), "kind": "task" if ctx.task_run_id else "item",
                       "key": ctx.task_key, "token": ctx.fencing_token, "attempt": ctx.attempt, "engine": ctx.engine,
                       "run": str(ctx.run_id), "pid": os.getpid(), "worker": NAME, "t": time.time(), **extra})
    os.write(_fd, (line + "\n").encode())


def handler(name: str):
    def register(fn):
        @worker.task(name)
        def run(ctx, input):
            record(ctx, "start")
            time.sleep(random.uniform(0.05, 0.4))
            out = fn(ctx, input)
            record(ctx, "end")
            return out
        HANDLERS[name] = fn
        return fn
    return register


@handler("da")
def da(ctx, input):
    return {"key": "da"}


@handler("db")
def db(ctx, input):
    return {"key": "db"}


@handler("dc")
def dc(ctx, input):
    if input["run"].get("fail"):
        raise flowforge.PermanentError("asked to fail")
    return {"key": "dc"}


@handler("dd")
def dd(ctx, input):
    return {"key": "dd", "deps": sorted(input["deps"])}


@handler("draft")
def draft(ctx, input):
    return {"text": f"v{input['visit']}"}


@handler("review")
def review(ctx, input):
    return {"approved": input["visit"] >= input["state"]["rounds"]}


@handler("publish")
def publish(ctx, input):
    return {"published": True}


@handler("ship")
def ship(ctx, input):
    return {"shipped": True}


@handler("resize")
def resize(ctx, input):
    return {"size": input["item"]}


@handler("album")
def album(ctx, input):
    sizes = [o["size"] for o in input["deps"]["resize"]]
    return {"n": len(sizes), "sum": sum(sizes)}


@handler("pushed")
def pushed(ctx, input):
    return {"pushed": True}


class RawUnit:
    """What record() needs of a unit claimed by hand."""

    def __init__(self, row, is_task: bool):
        self.id = row.task_run_id if is_task else row.work_item_id
        self.task_run_id = self.id if is_task else None
        self.task_key = row.task_key if is_task else row.task_name
        self.fencing_token, self.attempt = row.fencing_token, row.attempt
        self.engine = "dag" if is_task else row.engine_kind
        self.run_id = row.workflow_run_id if is_task else row.run_id
        self.input = row.input if is_task else row.payload


def raw_loop() -> None:
    import psycopg

    from flowforge.client import Client

    api = Client(psycopg.connect(DSN, autocommit=True))
    while True:
        units = [RawUnit(r, True) for r in api.claim([QUEUE], NAME, lease="3 seconds", batch=1)] \
            or [RawUnit(r, False) for r in api.claim_work([QUEUE], NAME, lease="3 seconds", batch=1)]
        if not units:
            time.sleep(0.2)
            continue
        for u in units:
            record(u, "start")
            time.sleep(random.uniform(3.2, 4.5) if random.random() < 0.25 else random.uniform(0.05, 0.4))
            try:
                try:
                    out = HANDLERS[u.task_key](u, u.input)
                except flowforge.PermanentError as exc:
                    (api.fail if u.task_run_id else api.fail_work)(u.id, u.fencing_token, str(exc), False)
                else:
                    (api.complete if u.task_run_id else api.complete_work)(u.id, u.fencing_token, out)
                record(u, "end", written=True)
            except errors.FlowForgeError as exc:
                record(u, "end", written=False, refused=getattr(exc, "sqlstate", None))


if __name__ == "__main__":
    if RAW:
        raw_loop()
    else:
        worker.run()
