"""What the daemon's publisher and the push worker agree on about RabbitMQ.

The exchange type both declare when an exchange does not exist yet, the
two helpers both log with (a URL with its password hidden, and one line for
a pika or socket error), and the quieting of pika's own loggers.  No pika
import here: ``doctor`` and the CLI load this module without a broker.
"""

from __future__ import annotations

import logging
from urllib.parse import urlsplit, urlunsplit

# Exchanges are declared as durable topic exchanges unless an operator created them first.
EXCHANGE_TYPE = "topic"


def quiet_pika() -> None:
    """pika logs seven INFO lines per connect; keep its loggers at WARNING unless the user set a level."""
    pika_log = logging.getLogger("pika")
    if pika_log.level == logging.NOTSET:
        pika_log.setLevel(logging.WARNING)


def mask_url(url: str) -> str:
    """An AMQP URL with its password hidden, safe to log."""
    parts = urlsplit(url)
    if parts.password:
        parts = parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", ":***@", 1))
    return urlunsplit(parts)


def describe(exc: BaseException) -> str:
    """One line for a pika/socket error (pika nests the real cause in ``args``)."""
    reason = "; ".join(repr(a) if isinstance(a, BaseException) else str(a) for a in exc.args)
    return " ".join(f"{type(exc).__name__}: {reason}".split()) if reason else type(exc).__name__
