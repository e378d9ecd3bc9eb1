"""What the command modules share: a ``Client`` on a connection, the ``--json`` switch, output."""

from __future__ import annotations

import contextlib
import json
from typing import Any, Iterator

import click

from .. import db, errors, render
from ..client import Client
from ..config import Settings


@contextlib.contextmanager
def client(settings: Settings) -> Iterator[Client]:
    """The SQL API on an autocommit connection to the configured (or embedded) database."""
    conn = db.connect(db.resolve_dsn(settings), autocommit=True)
    try:
        yield Client(conn)
    finally:
        conn.close()


def json_option(fn):
    """``--json`` on a read command, equivalent to the global ``flowforge --json``."""
    return click.option("--json", "json_flag", is_flag=True,
                        help="Print JSON (a list prints one array, a show one object).")(fn)


def wants_json(settings: Settings, json_flag: bool) -> bool:
    return settings.json or json_flag


def emit_json(value: Any) -> None:
    click.echo(render.as_json(value))


def parse_json_object(text: str, what: str) -> Any:
    """Parse a JSON argument; a syntax error becomes one FF003 line."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise errors.InvalidArgument(f"{what} is not valid JSON: {exc}") from None


def when(value) -> str:
    """A timestamp for tables: local time to the second."""
    if value is None:
        return ""
    return value.astimezone().strftime("%Y-%m-%d %H:%M:%S")
