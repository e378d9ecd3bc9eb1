"""Talking to PostgreSQL: connections, the one error mapping, statements, where the database is.

Imports point one way: ``dsn`` → ``embedded`` → ``statements`` → ``connection``.

* ``connection``: ``connect()``, ``map_error()``, ``mapped_errors()``, DSN parsing and masking;
* ``statements``: run one statement, rows by column name, errors mapped;
* ``embedded``: the private PostgreSQL started with ``pgserver`` when no DSN is configured;
* ``dsn``: ``resolve_dsn()`` — the configured DSN, or the embedded server's.
"""

from .connection import (
    APPLICATION_NAME,
    DEFAULT_CONNECT_TIMEOUT,
    connect,
    first_line,
    map_error,
    mapped_errors,
    mask_dsn,
    parse_dsn,
)
from .dsn import resolve_dsn

__all__ = [
    "APPLICATION_NAME", "DEFAULT_CONNECT_TIMEOUT", "connect", "first_line", "map_error", "mapped_errors",
    "mask_dsn", "parse_dsn", "resolve_dsn",
]
