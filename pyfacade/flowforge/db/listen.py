"""Does LISTEN deliver on this connection?  Ask by notifying oneself on a private token.

Behind a transaction pooler a LISTEN registers on a server connection the
client gives back at once: it succeeds and then nothing ever arrives.  So
after every LISTEN, a process sends ``pg_notify('flowforge_probe', <a fresh
token>)`` from **another** connection and waits a few seconds for exactly
that token on the listening one.  (Sent from the listening connection itself
it would come back through whichever server connection ran it, and prove
nothing.)  Other processes' probes on the channel are ignored; other
notifications that arrive meanwhile are handed to ``on_other``.
"""

from __future__ import annotations

import time
import uuid
from typing import Callable

import psycopg

from .connection import mapped_errors

PROBE_CHANNEL = "flowforge_probe"
PROBE_TIMEOUT = 5.0   # seconds for our own notification to come back
_SLICE = 0.25         # longest uninterrupted wait, so a stop is noticed promptly


def probe_token() -> str:
    return uuid.uuid4().hex


def await_probe(conn: psycopg.Connection, token: str, *, on_other: Callable[[psycopg.Notify], None],
                stop: Callable[[], bool], timeout: float = PROBE_TIMEOUT) -> bool:
    """True when ``token`` arrived on ``conn`` (which LISTENs on ``PROBE_CHANNEL``) within ``timeout``."""
    deadline = time.monotonic() + timeout
    with mapped_errors():
        while not stop():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            for note in conn.notifies(timeout=min(_SLICE, remaining), stop_after=1):
                if note.channel == PROBE_CHANNEL:
                    if note.payload == token:
                        return True
                else:
                    on_other(note)
    return False
