"""Which database a command uses: the configured DSN, or the embedded server's.

Kept apart from ``connection`` so that imports point one way: this module
needs the embedded server, and the embedded server needs a connection.
"""

from __future__ import annotations

from ..config import Settings
from . import embedded
from .connection import parse_dsn


def resolve_dsn(settings: Settings, *, create_embedded: bool = False) -> str:
    """The DSN to use: the configured one, or the embedded server's (started on demand).

    Only the commands that set up a folder (``migrate``, ``demo``) pass
    ``create_embedded``; for the others a folder without an embedded data
    folder is ``embedded.NoDatabaseHere``, never a new server.
    """
    if settings.dsn is not None:
        parse_dsn(settings.dsn)
        return settings.dsn
    return embedded.ensure_running(create=create_embedded)
