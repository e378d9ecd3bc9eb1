"""Which handler runs which task key: registration and lookup."""

from __future__ import annotations

from typing import Callable

from .context import Handler


class Registry:
    """Task key → handler; ``handlers`` is the dict itself (``Worker.handlers``)."""

    def __init__(self):
        self.handlers: dict[str, Handler] = {}

    def task(self, key: str) -> Callable[[Handler], Handler]:
        """Decorator: ``@worker.task("resize")`` runs the function for task key ``resize``."""
        def register(fn: Handler) -> Handler:
            self.register(key, fn)
            return fn
        return register

    def register(self, key: str, fn: Handler) -> None:
        if not isinstance(key, str) or not key:
            raise ValueError("a task key is a non-empty string")
        if key in self.handlers:
            raise ValueError(f"a handler for task key {key!r} is already registered")
        if not callable(fn):
            raise TypeError(f"the handler for {key!r} is not callable")
        self.handlers[key] = fn

    def get(self, key: str) -> Handler | None:
        return self.handlers.get(key)
