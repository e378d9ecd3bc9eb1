"""Push queues: consuming tasks that the daemon published to RabbitMQ.

The worker declares the exchange (as the daemon would, so either may start
first) and the durable AMQP queue ``queue_settings`` names for the queue —
``flowforge.<database>.<organization slug>.<queue>``, unique per database and
organization — bound with the routing key dispatch publishes with.  Either
one that exists already (an operator's, say with a dead-letter exchange) is
used as it is.  It consumes with a prefetch of ``concurrency``, takes each
delivered task with ``heartbeat`` (its fencing token came in the message),
and acks only after the task's write committed.

What becomes of a message that does not end in a write:

* stale or redelivered (FF004 / FF005 on the first heartbeat): acked and
  dropped — a newer generation exists, or the task is already done;
* not ours to place — malformed, for another database (its ``database``),
  or for a task this database does not have (FF001): **rejected**
  (``basic_nack(requeue=False)``), logged as an error saying why (the log
  first: a dead letter is never there before its reason), so a dead-letter
  exchange configured on the queue keeps it; never acked away;
* not started before stop, or the database unreachable: nacked back to the
  queue for another consumer.

pika's ``BlockingConnection`` belongs to the thread that runs ``run``; pool
threads ack and nack through ``add_callback_threadsafe``.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import timedelta
from typing import Callable

from .. import errors
from ..amqp import EXCHANGE_TYPE, describe, mask_url, quiet_pika
from .connection import SharedConnection, reconnect_delay
from .decode import MalformedMessage, decode_message
from .jobs import NOT_OURS, InFlight, Job
from .queues import PushBinding

log = logging.getLogger("flowforge.worker")

AMQP_HEARTBEAT = 30  # seconds
DEAD_LETTERED = " (to the queue's dead-letter exchange, if one is configured)"


class PushConsumer:
    def __init__(self, amqp_url: str, bindings: list[PushBinding], worker_name: str, *, database: str,
                 concurrency: int, lease: float, ops: SharedConnection, in_flight: InFlight,
                 submit: Callable[[Job], None], stop: threading.Event, abandon: threading.Event):
        self._amqp_url = amqp_url
        self._bindings = bindings
        self._worker_name = worker_name
        self._database = database  # current_database() of our sessions; a message names the one it is for
        self._concurrency = concurrency
        self._lease = lease
        self._ops = ops
        self._in_flight = in_flight
        self._submit = submit
        self._stop = stop          # stop consuming
        self._abandon = abandon    # grace period over: stop serving acks too

    # --- the consumer thread -------------------------------------------------------

    def run(self) -> None:
        """Consume until stop, then keep serving acks of in-flight work until the drain is over."""
        import pika
        import pika.exceptions

        quiet_pika()
        attempt = 0
        while not self._abandon.is_set():
            connection = None
            try:
                params = pika.URLParameters(self._amqp_url)
                params.heartbeat = AMQP_HEARTBEAT
                params.client_properties = {"connection_name": f"flowforge-worker {self._worker_name}"}
                connection = pika.BlockingConnection(params)
                channel = connection.channel()
                for binding in self._bindings:
                    channel = self._declare(connection, channel, binding, pika)
                channel.basic_qos(prefetch_count=self._concurrency)  # on the channel that consumes
                tags = [channel.basic_consume(b.amqp_queue, self._on_message_callback(connection))
                        for b in self._bindings]
                attempt = 0
                log.info("consuming %s from %s", [b.amqp_queue for b in self._bindings], mask_url(self._amqp_url))
                while not self._stop.is_set():
                    connection.process_data_events(time_limit=0.5)
                for tag in tags:
                    channel.basic_cancel(tag)
                # Keep serving acks of in-flight push work until the drain is over.
                while not self._abandon.is_set():
                    connection.process_data_events(time_limit=0.2)
                connection.process_data_events(time_limit=0)
                connection.close()
                return
            except (pika.exceptions.AMQPError, OSError) as exc:
                if self._abandon.is_set():
                    return
                log.warning("AMQP consumer: %s; reconnecting", describe(exc))
                if connection is not None and connection.is_open:
                    try:
                        connection.close()
                    except Exception:  # noqa: BLE001
                        pass
                time.sleep(reconnect_delay(attempt))
                attempt += 1

    @staticmethod
    def _declare(connection, channel, binding: PushBinding, pika):
        """The exchange and the durable queue ``binding.amqp_queue`` bound to it; returns the channel to use."""
        channel = _declare_unless_exists(connection, channel, pika, lambda ch, passive: ch.exchange_declare(
            exchange=binding.exchange, exchange_type=EXCHANGE_TYPE, durable=True, passive=passive))
        channel = _declare_unless_exists(connection, channel, pika, lambda ch, passive: ch.queue_declare(
            queue=binding.amqp_queue, durable=True, passive=passive))
        channel.queue_bind(queue=binding.amqp_queue, exchange=binding.exchange, routing_key=binding.routing_key)
        return channel

    def _on_message_callback(self, connection):
        def on_message(channel, method, _properties, body):
            try:
                payload = decode_message(body)  # an input beyond Python arrives as Undecodable: failed for good
                job = Job.delivered(payload, broker=self)
            except (MalformedMessage, ValueError, KeyError, TypeError) as exc:
                log.error("malformed push message rejected%s: %s", DEAD_LETTERED, exc)
                channel.basic_nack(method.delivery_tag, requeue=False)
                return
            database = payload.get("database")
            if database is not None and database != self._database:
                log.error("push message for task %s (%s) rejected%s: it is for database %r, this worker serves %r "
                          "(two databases share an AMQP queue: check the queue's routing key)",
                          job.task_key, job.id, DEAD_LETTERED, database, self._database)
                channel.basic_nack(method.delivery_tag, requeue=False)
                return
            job.deliveries.append((connection, channel, method.delivery_tag))
            self._submit(job)
        return on_message

    # --- called from pool threads -------------------------------------------------------

    def take(self, job: Job) -> bool:
        """Before a pushed job runs: the first heartbeat makes it ours (or tells us it is stale)."""
        if self._stop.is_set():
            job.deliveries, requeue = [], job.deliveries
            self._nack(requeue)  # not started: let another consumer have it
            return False
        try:
            lease = timedelta(seconds=self._lease)
            self._ops.call(lambda api: job.unit.heartbeat(api, job, lease),
                           give_up=lambda: self._stop.is_set())
        except errors.NotFound as exc:
            # Logged before the reject, so whoever reads the dead-letter queue finds the reason already written.
            log.error("push message for task %s (%s) rejected%s: this database has no such task (%s: %s)",
                      job.task_key, job.id, DEAD_LETTERED, exc.sqlstate, exc)
            job.deliveries, rejected = [], job.deliveries
            self._nack(rejected, requeue=False)
            return False
        except NOT_OURS as exc:
            log.info("stale or redelivered message for task %s (%s), dropped: %s",
                     job.task_key, job.id, exc)
            return False
        except errors.DatabaseUnavailable:
            job.deliveries, requeue = [], job.deliveries
            self._nack(requeue)
            return False
        job.last_beat = time.monotonic()
        return self._in_flight.adopt(job)

    def ack(self, job: Job) -> None:
        """After a pushed job is done (written, dropped or refused): ack every delivery of it."""
        for connection, channel, tag in job.deliveries:
            self._threadsafe(connection, channel, "basic_ack", tag)
        job.deliveries = []

    def _nack(self, deliveries: list, *, requeue: bool = True) -> None:
        """Back to the queue (requeue), or rejected for good: to the queue's dead-letter exchange, if any."""
        for connection, channel, tag in deliveries:
            self._threadsafe(connection, channel, "basic_nack", tag, requeue=requeue)

    @staticmethod
    def _threadsafe(connection, channel, method: str, tag: int, **kwargs) -> None:
        """Ack/nack from a pool thread: pika runs it on the connection's own thread."""
        def call():
            try:
                if channel.is_open:
                    getattr(channel, method)(tag, **kwargs)
            except Exception as exc:  # noqa: BLE001 - a closed channel redelivers; the token makes that safe
                log.warning("AMQP %s not delivered: %s", method, exc)
        try:
            connection.add_callback_threadsafe(call)
        except Exception as exc:  # noqa: BLE001 - connection already closed: the broker redelivers
            log.warning("AMQP %s not delivered: %s", method, exc)


def _declare_unless_exists(connection, channel, pika, declare: Callable):
    """``declare(channel, passive)``: passively first — an exchange or queue that exists is used as it is
    (another type, a dead-letter exchange) — and for real only when absent.  Returns the channel to go on with
    (the broker closes a channel whose passive declare found nothing)."""
    try:
        declare(channel, True)
        return channel
    except pika.exceptions.ChannelClosedByBroker as exc:
        if exc.reply_code != 404:
            raise
    channel = connection.channel()
    declare(channel, False)
    return channel
