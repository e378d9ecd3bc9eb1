"""The broker check: a real AMQP handshake with short timeouts, when a broker is configured."""

from __future__ import annotations

from .. import amqp, errors
from .check import OK, PROBLEM, SKIP, Check

AMQP_TIMEOUT = 3.0  # seconds


def broker(amqp_url: str | None) -> Check:
    if not amqp_url:
        return Check("broker", SKIP, "FLOWFORGE_AMQP_URL not set (needed only for push queues)")
    try:
        _amqp_ping(amqp_url)
    except errors.BrokerUnavailable as exc:
        return Check("broker", PROBLEM, str(exc))
    return Check("broker", OK, f"{amqp.mask_url(amqp_url)} answered")


def _amqp_ping(url: str) -> None:
    """Open and close a real AMQP connection (handshake included) with short timeouts."""
    import pika  # late import: only needed when a broker is configured
    import pika.exceptions

    try:
        params = pika.URLParameters(url)
    except Exception as exc:  # pika raises ValueError and friends for bad URLs
        raise errors.BrokerUnavailable(f"invalid FLOWFORGE_AMQP_URL: {exc}") from None
    params.socket_timeout = AMQP_TIMEOUT
    params.stack_timeout = AMQP_TIMEOUT
    params.blocked_connection_timeout = AMQP_TIMEOUT
    params.connection_attempts = 1
    params.retry_delay = 0
    try:
        connection = pika.BlockingConnection(params)
    except (pika.exceptions.AMQPError, OSError) as exc:
        # pika nests the real cause in args (e.g. ConnectionRefusedError).
        reason = "; ".join(repr(a) if isinstance(a, BaseException) else str(a) for a in exc.args)
        reason = reason or type(exc).__name__
        raise errors.BrokerUnavailable(f"cannot reach {amqp.mask_url(url)}: {reason}") from None
    connection.close()

