"""Sending one statement and reading its rows by column name, under the one error mapping.

Everything above this layer (``flowforge.client.Client``, ``flowforge.catalog.Catalog``
and the embedded server's bootstrap) runs its statements through these
functions, so any error a statement raises arrives as the ``flowforge.errors``
class for its SQLSTATE, and no caller holds a cursor or a column position.
The statements themselves are the constants of ``flowforge.queries``.

Transactions belong to the caller: on an autocommit connection each statement
is its own; on a connection in a transaction (the daemon's work session) they
run inside it.
"""

from __future__ import annotations

from typing import Any, Callable

import psycopg
from psycopg.rows import RowFactory, dict_row

from .connection import mapped_errors


def only_column(cursor: psycopg.Cursor) -> Callable[[Any], Any]:
    """Row factory for a statement that selects exactly one column: each row is that value."""
    if cursor.description is not None and len(cursor.description) != 1:
        names = [c.name for c in cursor.description]
        raise TypeError(f"only_column rows need a statement with one column, got {names}")
    return lambda values: values[0]


def fetch_all(conn: psycopg.Connection, query: str, params: dict | None = None, *,
              row: RowFactory = dict_row) -> list:
    """Every row of ``query``: dicts by default, or what ``row`` makes of them (e.g. ``class_row``)."""
    with mapped_errors(), conn.cursor(row_factory=row) as cur:
        cur.execute(query, params)
        return cur.fetchall() if cur.description else []


def fetch_one(conn: psycopg.Connection, query: str, params: dict | None = None, *,
              row: RowFactory = dict_row) -> Any | None:
    """The first row of ``query``, or None when there is none."""
    with mapped_errors(), conn.cursor(row_factory=row) as cur:
        cur.execute(query, params)
        return cur.fetchone() if cur.description else None


def fetch_value(conn: psycopg.Connection, query: str, params: dict | None = None) -> Any:
    """The one value a one-column statement returns (None for no row or SQL NULL)."""
    return fetch_one(conn, query, params, row=only_column)


def execute(conn: psycopg.Connection, query: str, params: dict | None = None) -> None:
    """Run a statement whose result does not matter (LISTEN, DDL, a void API call)."""
    with mapped_errors():
        conn.execute(query, params)
