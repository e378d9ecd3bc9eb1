"""AMQP publishing with publisher confirms, for the outbox daemon.

One ``Publisher`` holds one pika ``BlockingConnection`` and one channel in
confirm mode.  ``publish`` sends one outbox row and answers a single
question: did the broker confirm it?  Only a confirmed row may be reported to
``flowforge.mark_published``; anything else (nack, return of an unroutable
mandatory message, a lost connection, the batch running out of time) leaves
the row unpublished, and the next drain sends it again.

Every message is persistent (delivery mode 2), ``application/json``, carries
the outbox row's ``message_id`` (``<task_run_id>:<fencing_token>``) and is
published with ``mandatory`` so a message no queue would receive comes back
instead of vanishing.

Exchanges are declared lazily, once per connection: a passive declare first
(an operator may have created the exchange with another type — we use it as
it is), and only if it does not exist, an active declare as a durable
``topic`` exchange.

A broker that hangs must not hold the daemon's database transaction (and the
outbox row locks in it) for long, so every wait is bounded: connect and
handshake by ``socket_timeout``/``stack_timeout``, a broker that stops
answering by the AMQP heartbeat (pika checks every ``heartbeat + 5`` seconds
and closes a connection that received nothing for a whole check interval:
10-20 s with the default; measured 20 s against a frozen proxy), a broker that blocks
publishers (resource alarm) by ``blocked_connection_timeout``.
"""

from __future__ import annotations

import enum

import pika
import pika.exceptions

from .. import errors
from ..amqp import EXCHANGE_TYPE, describe, mask_url, quiet_pika
from ..rows import OutboxMessage

CONTENT_TYPE = "application/json"
PERSISTENT = 2
APP_ID = "flowforge"

DEFAULT_TIMEOUT = 5.0  # seconds: connect, handshake, blocked connection
DEFAULT_HEARTBEAT = 5  # seconds: a silent broker is dropped within 1-2 x (heartbeat + 5) s


class Outcome(enum.Enum):
    """What happened to one publish.  Only CONFIRMED may be marked published."""

    CONFIRMED = "confirmed"
    NACKED = "nacked"          # the broker refused it (Basic.Nack)
    UNROUTABLE = "unroutable"  # mandatory and no queue bound for it (Basic.Return)
    EXCHANGE = "exchange"      # the exchange could not be declared
    CONNECTION = "connection"  # the connection or channel broke; reconnect


class Publisher:
    """A confirm-mode AMQP channel that publishes outbox rows.

    Not thread-safe (neither is pika's BlockingConnection).  After any
    ``Outcome.CONNECTION`` the publisher is closed; call ``connect`` again.
    """

    def __init__(self, url: str, *, timeout: float = DEFAULT_TIMEOUT, heartbeat: int = DEFAULT_HEARTBEAT):
        try:
            params = pika.URLParameters(url)
        except Exception as exc:  # pika raises ValueError and friends for bad URLs
            raise errors.InvalidArgument(f"invalid AMQP URL {mask_url(url)}: {exc}") from None
        params.socket_timeout = timeout
        params.stack_timeout = timeout
        params.blocked_connection_timeout = timeout
        params.heartbeat = heartbeat
        params.connection_attempts = 1  # the daemon owns the retry policy (bounded backoff, logged)
        params.retry_delay = 0
        params.client_properties = {"connection_name": "flowforge-daemon"}
        quiet_pika()
        self.url = url
        self._params = params
        self._connection: pika.BlockingConnection | None = None
        self._channel = None
        self._declared: set[str] = set()

    # --- connection ---------------------------------------------------------

    @property
    def is_open(self) -> bool:
        return (self._connection is not None and self._connection.is_open
                and self._channel is not None and self._channel.is_open)

    def connect(self) -> None:
        """Open the connection and a confirm-mode channel; BrokerUnavailable if that fails."""
        self.close()
        try:
            self._connection = pika.BlockingConnection(self._params)
            self._open_channel()
        except (pika.exceptions.AMQPError, OSError) as exc:
            self.close()
            raise errors.BrokerUnavailable(f"cannot reach {mask_url(self.url)}: {describe(exc)}") from None

    def _open_channel(self) -> None:
        self._channel = self._connection.channel()
        self._channel.confirm_delivery()
        self._declared = set()  # declarations are cached per channel: a new channel re-checks them

    def close(self) -> None:
        connection, self._connection, self._channel = self._connection, None, None
        self._declared = set()
        if connection is not None and connection.is_open:
            try:
                connection.close()
            except Exception:  # noqa: BLE001 - closing a broken connection must not fail the caller
                pass

    def keepalive(self) -> str | None:
        """Process pending I/O (heartbeats, a close from the broker) without waiting.

        BlockingConnection only does I/O when called, so an idle daemon must
        call this often (it does, every quarter second) or the broker drops
        the connection for missed heartbeats.  Returns why the connection is
        gone, or None while it is fine.
        """
        if not self.is_open:
            return "not connected"
        try:
            self._connection.process_data_events(time_limit=0)
        except (pika.exceptions.AMQPError, OSError) as exc:
            self.close()
            return describe(exc)
        if not self.is_open:
            self.close()
            return "the broker closed the connection"
        return None

    # --- publishing ---------------------------------------------------------

    def publish(self, message: OutboxMessage) -> tuple[Outcome, str | None]:
        """Publish one message and wait for the broker's confirm.

        Returns the outcome and, for anything but CONFIRMED, a one-line reason.
        Never raises for broker trouble: the caller must always learn which
        rows were confirmed before the connection broke.
        """
        if not self.is_open:
            return Outcome.CONNECTION, "not connected"
        outcome = self._ensure_exchange(message.exchange)
        if outcome is not None:
            return outcome
        properties = pika.BasicProperties(
            content_type=CONTENT_TYPE,
            delivery_mode=PERSISTENT,
            message_id=message.message_id,
            app_id=APP_ID,
        )
        try:
            self._channel.basic_publish(
                exchange=message.exchange,
                routing_key=message.routing_key,
                body=message.body.encode("utf-8"),
                properties=properties,
                mandatory=True,
            )
        except pika.exceptions.UnroutableError:
            return Outcome.UNROUTABLE, f"no queue bound for routing key {message.routing_key!r} on {message.exchange!r}"
        except pika.exceptions.NackError:
            return Outcome.NACKED, f"broker nacked the message on {message.exchange!r}"
        except (pika.exceptions.AMQPError, OSError) as exc:
            # Connection or channel lost (heartbeat timeout, blocked too long, broker closed it...).
            self.close()
            return Outcome.CONNECTION, describe(exc)
        return Outcome.CONFIRMED, None

    def _ensure_exchange(self, exchange: str) -> tuple[Outcome, str] | None:
        """Make sure ``exchange`` exists (once per channel); None when it does."""
        if exchange in self._declared:
            return None
        try:
            self._channel.exchange_declare(exchange=exchange, passive=True)
        except pika.exceptions.ChannelClosedByBroker as exc:
            if exc.reply_code != 404:
                return self._channel_lost(exc, Outcome.EXCHANGE)
            # Absent: the broker closed the channel (404). Reopen and create it.
            try:
                self._open_channel()
                self._channel.exchange_declare(exchange=exchange, exchange_type=EXCHANGE_TYPE, durable=True)
            except pika.exceptions.ChannelClosedByBroker as exc2:
                return self._channel_lost(exc2, Outcome.EXCHANGE)
            except (pika.exceptions.AMQPError, OSError) as exc2:
                self.close()
                return Outcome.CONNECTION, describe(exc2)
        except (pika.exceptions.AMQPError, OSError) as exc:
            self.close()
            return Outcome.CONNECTION, describe(exc)
        self._declared.add(exchange)
        return None

    def _channel_lost(self, exc: pika.exceptions.ChannelClosedByBroker, outcome: Outcome) -> tuple[Outcome, str]:
        """The broker closed our channel over one exchange: reopen it so other exchanges keep flowing."""
        reason = describe(exc)
        try:
            self._open_channel()
        except (pika.exceptions.AMQPError, OSError) as exc2:
            self.close()
            return Outcome.CONNECTION, f"{reason}; reopening the channel failed: {describe(exc2)}"
        return outcome, reason
