"""The worker SDK: run Python functions as FlowForge tasks — DAG tasks and work items from one registry.

```python
import flowforge

worker = flowforge.Worker(queues=["default"], concurrency=4)

@worker.task("resize")
def resize(ctx, input):
    return {"ok": True}

worker.run()          # until SIGTERM / SIGINT or worker.stop()
```

A worker only moves data between PostgreSQL and your functions; every rule
(who may take a task, retries, backoff, what becomes ready next) is in the
SQL API it calls: ``claim``, ``heartbeat``, ``complete`` (``complete_many``),
``fail`` for a DAG task; ``claim_work``, ``heartbeat_work``, ``complete_work``,
``fail_work`` for a work item — a graph node's visit, a machine's action, a
fan-out child.  One ``@worker.task(name)`` registry serves both: a handler
receives a task's input or an item's payload as ``input`` and never needs to
know which engine called it (docs/worker.md).

Agents
    ``Worker(agent="gpu-1", labels={...})`` registers the process
    (``register_agent``), heartbeats psutil metrics (``agent_heartbeat``),
    stops claiming while the database says it is draining, and is marked
    inactive at shutdown (``agent``, ``metrics``).

Pull queues
    A dedicated connection LISTENs on ``flowforge_ready`` and wakes the claim
    loop (a fallback poll every ``poll_interval`` seconds covers retries whose
    backoff just ended and notifications lost while reconnecting).  The loop
    claims up to its free capacity, from the task queue and the work-item
    queue in turn, naming the task names it has handlers for: another
    service's units stay pending for it.  Work items are never pushed, so
    they are claimed from every queue the worker serves.
Push queues
    With an AMQP URL, a queue configured with an exchange
    (``flowforge queue configure NAME --exchange X``) is consumed from
    RabbitMQ instead: the worker declares the exchange and the durable AMQP
    queue ``queue_settings`` names (``flowforge.<database>.<org>.<queue>``)
    bound with its routing key, takes each delivered task with ``heartbeat``
    (its fencing token came in the message), runs it, completes or fails it,
    and acks only after that committed.  A stale or redelivered message
    (FF004 / FF005 on the first heartbeat) is acked and dropped; one it
    cannot place (malformed, another database's, FF001) is rejected to the
    queue's dead-letter exchange, with an error line.
Behind a transaction pooler
    ``FLOWFORGE_POOLER=transaction``, or found out (LISTEN does not deliver
    the worker's own NOTIFY, a prepared-statement error): no server-side
    prepared statements, no LISTEN, the claim loop polls (``db.pooler``).
Leases
    Every in-flight task is heartbeaten every ``lease / 3`` seconds.  When a
    heartbeat is refused the task is no longer ours: ``ctx.lease_lost``
    becomes True and whatever the handler returns is dropped, not written.
Results
    A return value must be JSON-serialisable (else the task fails for good
    with a message saying so) and within the installation's limits (else the
    database refuses it — FF009, or ``too_large`` from ``complete_many`` —
    and the task fails for good at once with that reason).  An exception fails the task with
    ``retryable=True`` and the exception's one-line repr; raise
    ``flowforge.PermanentError`` to fail it without retry.  A pushed task whose
    key has no registered handler fails with ``retryable=False`` (pull workers
    never claim one).
Shutdown
    ``stop()`` (or SIGTERM / SIGINT in ``run()``) stops claiming and waits up
    to ``grace_period`` seconds for in-flight handlers.  Work still running
    then is abandoned: no more heartbeats, no writes; its lease expires and
    the reaper (``tick``) hands it to another worker.  A second signal skips
    the rest of the grace period.

Threads: handlers run on ``concurrency`` pool threads (daemon threads, so an
abandoned handler cannot keep the process alive); ``async def`` handlers run
on one asyncio loop thread.  Connections: one for LISTEN, one for claims, one
for batched completions, one shared (under a lock) for heartbeats,
completions of pushed tasks and failures — psycopg connections must not be
used by two threads at once.  Every call goes through ``flowforge.Client``.

The parts, each in its own module (imports point down: ``worker`` composes
the others, ``jobs`` and ``connection`` need none of them):

* ``worker``      ``Worker``: configuration, lifecycle, signals, the drain;
* ``agent``       registration, agent heartbeats, draining, deregistration;
* ``metrics``     what an agent heartbeat reports (psutil);
* ``registry``    task key → handler;
* ``context``     ``Context`` and ``PermanentError``, what a handler sees;
* ``pool``        the handler threads (and the asyncio loop);
* ``pull``        the LISTEN thread and the claim loop;
* ``push``        the AMQP consumer: declare, consume, take over, ack/nack thread-safely;
* ``queues``      which queues are pulled and which pushed;
* ``heartbeats``  lease heartbeats;
* ``results``     writing complete / fail, or dropping the result;
* ``completer``   batched completion through ``complete_many``;
* ``decode``      inputs Python cannot decode: one task's failure, not the worker's;
* ``jobs``        ``Job`` and its ``Unit`` (task or work item: which SQL each write calls), ``InFlight``, ``Stats``;
* ``connection``  ``SharedConnection``: one connection for several threads, reconnecting.
"""

from .context import Context, PermanentError
from .worker import Worker

__all__ = ["Context", "PermanentError", "Worker"]
