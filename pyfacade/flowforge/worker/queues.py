"""Which queues a worker pulls and which it consumes from RabbitMQ.

A queue configured with an exchange (``flowforge queue configure NAME
--exchange X``) is a push queue: with an AMQP URL the worker consumes it
from RabbitMQ instead of claiming it.  Decided once, at start, from
``flowforge.queue_settings``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Sequence

from .. import errors
from ..rows import QueueSetting

log = logging.getLogger("flowforge.worker")


@dataclass(frozen=True)
class PushBinding:
    """Consume ``amqp_queue``, bound to ``exchange`` with ``routing_key`` — all three as SQL named them."""

    queue: str
    exchange: str
    routing_key: str
    amqp_queue: str


def plan(queues: Sequence[str], push_queues: Sequence[str], settings: Sequence[QueueSetting],
         amqp_url: str | None) -> tuple[list[str], list[PushBinding]]:
    """(pull queues, push bindings); FF003 for a push queue without an exchange or without a URL."""
    exchanges = {s.name: (s.exchange, s.routing_key, s.amqp_queue) for s in settings if s.exchange}
    for name in push_queues:
        if name not in exchanges:
            raise errors.InvalidArgument(
                f"queue {name!r} is not a push queue; configure it first: "
                f"flowforge queue configure {name} --exchange EXCHANGE")
    wanted_push = list(push_queues) + [q for q in queues if q in exchanges and amqp_url]
    push = [PushBinding(name, *exchanges[name]) for name in dict.fromkeys(wanted_push)]
    if push and not amqp_url:
        raise errors.InvalidArgument("push queues need an AMQP URL: pass amqp_url= or set FLOWFORGE_AMQP_URL")
    for name in queues:
        if name in exchanges and not amqp_url:
            log.warning("queue %r is configured as push but no AMQP URL is set; its tasks go to RabbitMQ, "
                        "not to claim", name)
    pushed = {b.queue for b in push}
    return [q for q in queues if q not in pushed], push
