"""Push workers on a shared broker (issue 11, items 3 and the push minors).

* Every database bound its exchange to one AMQP queue ``flowforge.<queue>``:
  a worker of database A received database B's messages, took "not found"
  for a stale token, acked and dropped them, and B's tasks waited out their
  dispatch lease.  Now SQL names the AMQP queue per database and
  organization (``queue_settings().amqp_queue``) and the routing key that
  reaches it; a message a worker cannot place is rejected (to the
  dead-letter exchange an operator configured), never acked away.
* A push worker started before the daemon declares the exchange itself,
  names its database sessions ``flowforge-worker <name>``, and keeps pika's
  seven INFO lines per connect out of the log.

Real RabbitMQ (127.0.0.1:5672), real databases, the daemon as a subprocess.
"""

from __future__ import annotations

import json
import logging
import uuid

import pika
import pika.exceptions
import pytest
from psycopg.conninfo import conninfo_to_dict

from flowforge import amqp, migrate
from helpers_runtime import (  # noqa: F401 - fixtures
    amqp_url, daemons, define, fast_worker, running, sql, start, tasks, wait_finished, wait_until,
)


class Rabbit:
    """Test-side broker access: declare, inspect and delete what a test used."""

    def __init__(self, url: str):
        self.conn = pika.BlockingConnection(pika.URLParameters(url))
        self.ch = self.conn.channel()
        self.queues: list[str] = []
        self.exchanges: list[str] = []

    def exists(self, kind: str, name: str) -> bool:
        probe = self.conn.channel()
        try:
            if kind == "queue":
                probe.queue_declare(name, passive=True)
            else:
                probe.exchange_declare(name, passive=True)
        except pika.exceptions.ChannelClosedByBroker as exc:
            assert exc.reply_code == 404, exc
            return False
        probe.close()
        return True

    def consumers(self, queue: str) -> int:
        return self.ch.queue_declare(queue, passive=True).method.consumer_count

    def close(self) -> None:
        ch = self.conn.channel()
        for q in self.queues:
            ch.queue_delete(q)
        for x in self.exchanges:
            ch.exchange_delete(x)
        self.conn.close()


@pytest.fixture
def rabbit(amqp_url):
    r = Rabbit(amqp_url)
    try:
        yield r
    finally:
        r.close()


def dbname(dsn: str) -> str:
    return conninfo_to_dict(dsn)["dbname"]


def push_setup(dsn: str, queue: str, exchange: str) -> None:
    sql(dsn, "SELECT flowforge.configure_queue(%s, %s)", queue, exchange)
    define(dsn, {"name": "pushed", "tasks": [
        {"key": "thumb", "queue": queue}, {"key": "publish", "queue": queue, "depends_on": ["thumb"]}]})


def test_two_databases_on_one_broker_never_receive_each_others_messages(make_database, amqp_url, rabbit, daemons,
                                                                        running, caplog):
    caplog.set_level(logging.INFO)
    suffix = uuid.uuid4().hex[:8]
    exchange, queue = f"fftest.{suffix}", f"images{suffix}"
    rabbit.exchanges.append(exchange)
    rabbit.queues.append(f"flowforge.{queue}")  # the one shared queue of old, should a run before the fix leave it
    dsns = [make_database() for _ in range(2)]
    workers = []
    for i, dsn in enumerate(dsns):
        migrate.migrate(dsn)
        push_setup(dsn, queue, exchange)
        rabbit.queues.append(f"flowforge.{dbname(dsn)}.default.{queue}")
        worker = fast_worker(dsn, name=f"db{i}", queues=[], push_queues=[queue], amqp_url=amqp_url, concurrency=2)
        worker.register("thumb", lambda ctx, input, i=i: {"db": i, "n": input["run"]["n"]})
        worker.register("publish", lambda ctx, input, i=i: {"db": i, "thumb": input["deps"]["thumb"]})
        workers.append(running(worker))

    # Before any daemon ran, the workers declared the exchange (and bound their queues to it).
    wait_until(lambda: rabbit.exists("exchange", exchange), 15, "a worker to declare the exchange")

    for dsn in dsns:
        daemons(dsn, amqp_url)
    runs = {dsn: [start(dsn, "pushed", {"n": n}) for n in range(3)] for dsn in dsns}
    for i, dsn in enumerate(dsns):
        for n, run_id in enumerate(runs[dsn]):
            assert wait_finished(dsn, run_id, timeout=30) == "succeeded", tasks(dsn, run_id)
            assert tasks(dsn, run_id)["publish"]["output"] == {"db": i, "thumb": {"db": i, "n": n}}
    assert [w.stats for w in workers] == [{"completed": 6, "failed": 0, "dropped": 0}] * 2
    errors_logged = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert not errors_logged, errors_logged
    # Each database's worker consumes its own queue, flowforge.<database>.<organization>.<queue>.
    for dsn in dsns:
        assert rabbit.consumers(f"flowforge.{dbname(dsn)}.default.{queue}") == 1

    # The worker's sessions are named after it, like the daemon's.
    for i, dsn in enumerate(dsns):
        names = {r[0] for r in sql(dsn, "SELECT application_name FROM pg_stat_activity WHERE datname = "
                                        "current_database() AND pid <> pg_backend_pid() AND backend_type = "
                                        "'client backend' AND application_name NOT LIKE 'flowforge-daemon-%%'")}
        assert names == {f"flowforge-worker db{i}"}
    # pika's INFO lines about every connect stay out of the log.
    assert not [r for r in caplog.records if r.name.startswith("pika") and r.levelno < logging.WARNING]


def test_a_message_the_worker_cannot_place_is_rejected_to_the_dead_letter_exchange(migrated_dsn, amqp_url, rabbit,
                                                                                   running, caplog):
    caplog.set_level(logging.INFO)
    suffix = uuid.uuid4().hex[:8]
    exchange, queue, dlx = f"fftest.{suffix}", f"images{suffix}", f"fftest.dlx.{suffix}"
    route = f"{dbname(migrated_dsn)}.default.{queue}"
    own = f"flowforge.{route}"
    # The operator's dead-lettering: the consumer queue declared first with a DLX (a policy works the same way).
    rabbit.exchanges += [exchange, dlx]
    rabbit.queues.append(own)
    rabbit.ch.exchange_declare(exchange, exchange_type="topic", durable=True)
    rabbit.ch.exchange_declare(dlx, exchange_type="fanout")
    dead = rabbit.ch.queue_declare("", exclusive=True).method.queue
    rabbit.ch.queue_bind(dead, dlx)
    rabbit.ch.queue_declare(own, durable=True, arguments={"x-dead-letter-exchange": dlx})
    push_setup(migrated_dsn, queue, exchange)
    calls = []
    worker = fast_worker(migrated_dsn, name="placer", queues=[], push_queues=[queue], amqp_url=amqp_url)
    worker.register("thumb", lambda ctx, input: calls.append(ctx.task_run_id))
    running(worker)
    wait_until(lambda: rabbit.consumers(own) == 1, 15, "the worker to consume its queue")

    def envelope(database: str) -> bytes:
        return json.dumps({"task_run_id": str(uuid.uuid4()), "fencing_token": 1, "attempt": 1,
                           "workflow_run_id": str(uuid.uuid4()), "task_key": "thumb",
                           "organization_id": str(uuid.uuid4()), "database": database, "input": {}}).encode()

    bodies = {"foreign": envelope("some_other_database"), "unknown": envelope(dbname(migrated_dsn)),
              "malformed": b"{not json"}
    for body in bodies.values():
        rabbit.ch.basic_publish(exchange, route, body)

    dead_letters = []
    for method, props, body in rabbit.ch.consume(dead, inactivity_timeout=0.2):
        if method is not None:
            dead_letters.append((body, props.headers["x-death"][0]["reason"]))
            rabbit.ch.basic_ack(method.delivery_tag)
        if len(dead_letters) == len(bodies):
            break
        assert len(caplog.records) < 10000  # keeps the loop finite while the worker keeps logging
    rabbit.ch.cancel()
    assert sorted(dead_letters) == sorted((body, "rejected") for body in bodies.values())
    assert calls == [] and worker.stats == {"completed": 0, "failed": 0, "dropped": 0}
    errors_logged = "\n".join(r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR)
    assert "some_other_database" in errors_logged      # it names why
    assert "FF001" in errors_logged or "not found" in errors_logged.lower()
    assert "malformed" in errors_logged


def test_pika_loggers_are_quiet_unless_configured():
    pika_log = logging.getLogger("pika")
    saved = pika_log.level
    try:
        pika_log.setLevel(logging.NOTSET)
        amqp.quiet_pika()
        assert pika_log.level == logging.WARNING
        pika_log.setLevel(logging.DEBUG)  # the user asked for pika's detail: keep it
        amqp.quiet_pika()
        assert pika_log.level == logging.DEBUG
    finally:
        pika_log.setLevel(saved)
