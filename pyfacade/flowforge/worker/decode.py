"""Task inputs Python cannot decode: one task's problem, never the worker's.

PostgreSQL accepts JSON that Python's ``json`` refuses — a number of more
than 4300 digits (``int`` conversion is capped), a custom loader that
raises — and before the database bounded nesting, a 10,000-deep document
raised RecursionError.  Decoded inside a claim, one such input aborted the
whole fetch: the claim loop died with the worker, the claimed tasks waited
out their leases, and the next worker died the same way until the attempts
ran out.

So an input that cannot be decoded becomes ``Undecodable(reason)`` in its
own row (pull: a jsonb loader on the claim connection that never raises;
push: the message's envelope read with numbers as text), and the pool fails
that task for good with the reason.  The rows around it are unaffected.
"""

from __future__ import annotations

import json
from typing import Any

import psycopg
from psycopg.types.json import JsonbBinaryLoader, JsonbLoader

from .jobs import one_line


class Undecodable:
    """What stands in for an input that could not be decoded; ``reason`` says why."""

    def __init__(self, reason: str):
        self.reason = reason

    def __repr__(self) -> str:
        return f"<Undecodable: {self.reason}>"


def _tolerant(base: type) -> type:
    class Tolerant(base):
        def load(self, data: Any) -> Any:
            try:
                return super().load(data)
            except Exception as exc:  # noqa: BLE001 - whatever the loader raised is this value's problem
                return Undecodable(one_line(exc))
    Tolerant.__name__ = f"Tolerant{base.__name__}"
    return Tolerant


_TOLERANT_LOADERS = (_tolerant(JsonbLoader), _tolerant(JsonbBinaryLoader))


def tolerate_undecodable_jsonb(conn: psycopg.Connection) -> None:
    """On ``conn``, a jsonb value Python cannot decode arrives as ``Undecodable`` instead of raising."""
    for loader in _TOLERANT_LOADERS:
        conn.adapters.register_loader("jsonb", loader)


class MalformedMessage(ValueError):
    """A push message whose envelope cannot be read at all."""


def decode_message(body: bytes) -> dict:
    """A push message's payload; its ``input`` is ``Undecodable`` when only the input is beyond Python."""
    try:
        payload = json.loads(body)
    except (ValueError, RecursionError) as exc:
        reason = one_line(exc)
        try:
            # Numbers as text: the envelope's ids and counters survive, the input does not matter.
            payload = json.loads(body, parse_int=str, parse_float=str, parse_constant=str)
        except (ValueError, RecursionError):
            raise MalformedMessage(f"not JSON: {reason}") from None
        if isinstance(payload, dict):
            payload["input"] = Undecodable(reason)
    if not isinstance(payload, dict):
        raise MalformedMessage(f"not a JSON object: {type(payload).__name__}")
    return payload
