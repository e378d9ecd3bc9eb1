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


# invalid_schema_name: every statement the CLI sends names schema flowforge, so
# this SQLSTATE means the database was never migrated.
UNMIGRATED = "3F000"


def for_the_cli(exc: errors.FlowForgeError) -> errors.FlowForgeError:
    """The error as the CLI tells it: what the user runs to fix it, chosen by class and SQLSTATE only."""
    if isinstance(exc, errors.DatabaseError) and exc.sqlstate == UNMIGRATED:
        return errors.DatabaseError("this database has no FlowForge schema: it was never migrated",
                                    sqlstate=exc.sqlstate, hint="run `flowforge migrate`")
    return exc


@contextlib.contextmanager
def cli_hint(cls: type[errors.FlowForgeError], hint: str, message: str | None = None) -> Iterator[None]:
    """Inside the block, a ``cls`` error gets the CLI's ``hint`` (and ``message``) instead of the SQL API's.

    The SQL API's hints name SQL functions (``flowforge.define_workflow(spec)``);
    a command knows which of its calls raised ``cls`` and which command fixes it.
    """
    try:
        yield
    except cls as exc:
        exc.hint = hint
        if message is not None:
            exc.message = message
        raise


@contextlib.contextmanager
def cli_hint_by_sqlstate(sqlstate: str, hint: str) -> Iterator[None]:
    """``cli_hint`` for a database error the facade has no class for, chosen by its SQLSTATE."""
    try:
        yield
    except errors.DatabaseError as exc:
        if exc.sqlstate == sqlstate:
            exc.hint = hint
        raise


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
