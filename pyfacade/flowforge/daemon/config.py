"""The daemon's settings: flags over environment over defaults, checked once at start."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from typing import Callable, Mapping

from .. import db, errors
from ..db import pooler

# Environment variables (flags override them; FLOWFORGE_DSN and FLOWFORGE_AMQP_URL live in config;
# the outbox lease has no flag).
TICK_INTERVAL_ENV = "FLOWFORGE_TICK_INTERVAL"
BATCH_SIZE_ENV = "FLOWFORGE_BATCH_SIZE"
POLL_INTERVAL_ENV = "FLOWFORGE_POLL_INTERVAL"
OUTBOX_LEASE_ENV = "FLOWFORGE_OUTBOX_LEASE"
ENGINE_ID_ENV = "FLOWFORGE_ENGINE_ID"
FEED_INTERVAL_ENV = "FLOWFORGE_FEED_INTERVAL"

DEFAULT_TICK_INTERVAL = 1.0
DEFAULT_BATCH_SIZE = 100
DEFAULT_POLL_INTERVAL = 5.0
# How often the feeders look at their directories and git branches (filesystem and gitpoll triggers).
DEFAULT_FEED_INTERVAL = 5.0
# How long take_outbox keeps a taken row from other daemons: longer than a batch can take from take to
# settle (publish deadline 10 s + up to 20 s for pika to notice a silent broker), so a live daemon's rows
# are never retaken; rows of a daemon that died come back after it.
DEFAULT_OUTBOX_LEASE = 60.0


def default_engine_id() -> str:
    """This daemon's instance id as ``tick(engine_id)`` records it: ``<host>:<pid>``."""
    return f"{socket.gethostname()}:{os.getpid()}"


@dataclass(frozen=True)
class DaemonConfig:
    dsn: str
    amqp_url: str | None  # None: no broker — periodic duties only, push work waits in the outbox
    tick_interval: float = DEFAULT_TICK_INTERVAL
    batch_size: int = DEFAULT_BATCH_SIZE
    poll_interval: float = DEFAULT_POLL_INTERVAL
    outbox_lease: float = DEFAULT_OUTBOX_LEASE
    # The daemon's instance id: tick(engine_id) shares the organizations' duties among live daemons
    # by per-organization leases held under it (docs/engines.md, "Engine liveness").
    engine_id: str = ""
    feed_interval: float = DEFAULT_FEED_INTERVAL

    def __post_init__(self):
        if not self.engine_id:
            object.__setattr__(self, "engine_id", default_engine_id())


def resolve_config(dsn: str, amqp_url: str | None, *, tick_interval: float | None = None,
                   batch_size: int | None = None, poll_interval: float | None = None,
                   engine_id: str | None = None, feed_interval: float | None = None, environ: Mapping[str, str] | None = None) -> DaemonConfig:
    """Flags (non-None arguments) over environment over defaults; FF003 when a value is out of range.

    No ``amqp_url`` is a pull-only deployment: the daemon still runs ``tick()``
    (the lease reaper needs no broker) and says that push work waits.
    """
    env = os.environ if environ is None else environ
    amqp_url = (amqp_url or "").strip() or None
    tick = _setting(tick_interval, env, TICK_INTERVAL_ENV, float, DEFAULT_TICK_INTERVAL)
    batch = _setting(batch_size, env, BATCH_SIZE_ENV, int, DEFAULT_BATCH_SIZE)
    poll = _setting(poll_interval, env, POLL_INTERVAL_ENV, float, DEFAULT_POLL_INTERVAL)
    lease = _setting(None, env, OUTBOX_LEASE_ENV, float, DEFAULT_OUTBOX_LEASE)
    feed = _setting(feed_interval, env, FEED_INTERVAL_ENV, float, DEFAULT_FEED_INTERVAL)
    engine = (engine_id or env.get(ENGINE_ID_ENV) or "").strip() or default_engine_id()
    if not 0.05 <= tick <= 3600:
        raise errors.InvalidArgument(f"tick interval must be between 0.05 and 3600 seconds, got {tick}")
    if not 1 <= batch <= 10000:
        raise errors.InvalidArgument(f"batch size must be between 1 and 10000, got {batch}")
    if not 0.1 <= poll <= 3600:
        raise errors.InvalidArgument(f"poll interval must be between 0.1 and 3600 seconds, got {poll}")
    if not 0.1 <= feed <= 3600:
        raise errors.InvalidArgument(f"feed interval must be between 0.1 and 3600 seconds, got {feed}")
    if not 3 <= lease <= 3600:
        raise errors.InvalidArgument(f"{OUTBOX_LEASE_ENV} must be between 3 and 3600 seconds, got {lease}")
    if len(engine) > 200:
        raise errors.InvalidArgument(f"engine id must be at most 200 characters, got {len(engine)}")
    db.parse_dsn(dsn)
    pooler.configured()  # FF003 for an unknown FLOWFORGE_POOLER, before anything connects
    return DaemonConfig(dsn=dsn, amqp_url=amqp_url, tick_interval=tick, batch_size=batch, poll_interval=poll,
                        outbox_lease=lease, engine_id=engine, feed_interval=feed)


def _setting(flag, env: Mapping[str, str], name: str, kind: Callable, default):
    if flag is not None:
        return kind(flag)
    raw = (env.get(name) or "").strip()
    if not raw:
        return default
    try:
        return kind(raw)
    except ValueError:
        raise errors.InvalidArgument(f"{name}={raw!r} is not a valid {kind.__name__}") from None
