"""What the daemon writes and how it waits to retry: logfmt event lines, bounded backoff."""

from __future__ import annotations

import datetime as _dt
import random
import sys
from typing import TextIO

MAX_BACKOFF = 5.0    # seconds between reconnect attempts, at most
BASE_BACKOFF = 0.2   # first retry delay; doubles per failed attempt


class EventLog:
    """One logfmt line per event: ``event=<name> key=value ... ts=<UTC ISO time>``."""

    def __init__(self, stream: TextIO | None = None):
        self._stream = stream

    def __call__(self, event: str, **fields) -> None:
        parts = [f"event={event}"]
        parts += [f"{key}={_logfmt(value)}" for key, value in fields.items() if value is not None]
        parts.append("ts=" + _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds"))
        stream = self._stream or sys.stderr
        try:
            stream.write(" ".join(parts) + "\n")
            stream.flush()
        except (OSError, ValueError):
            pass  # a closed stderr must not stop the daemon


def _logfmt(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.3f}"
    text = " ".join(str(value).split())  # one line, whatever the value held
    if text == "" or any(c in text for c in ' ="\\'):
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return text


class Backoff:
    """Bounded exponential backoff with jitter: 0.2 s, 0.4 s, ... at most MAX_BACKOFF."""

    def __init__(self):
        self.failures = 0
        self.next_at = 0.0

    def ready(self, now: float) -> bool:
        return now >= self.next_at

    def failed(self, now: float) -> float:
        delay = min(MAX_BACKOFF, BASE_BACKOFF * (2 ** self.failures)) * random.uniform(0.8, 1.0)
        self.failures += 1
        self.next_at = now + delay
        return delay

    def succeeded(self) -> int:
        failures, self.failures, self.next_at = self.failures, 0, 0.0
        return failures
