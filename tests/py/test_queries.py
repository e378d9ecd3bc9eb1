"""Every API call in flowforge.queries names its arguments, and every name and cast matches pg_proc.

A parameter inserted in the middle of a SQL signature, or an argument
renamed, must fail here rather than bind a value to the wrong parameter in
production.  The statements are read as text: every ``flowforge.<fn>(...)``
call with arguments must use only ``name => %(param)s::type``, each name an
IN argument of ``<fn>`` in a migrated database, each cast its type.
"""

from __future__ import annotations

import re

import psycopg
import pytest

from flowforge import queries
from flowforge.catalog import Catalog

CALL = re.compile(r"\bflowforge\.(\w+)\(")
NAMED = re.compile(r"^(?P<name>\w+)\s*=>\s*%\((?P<param>\w+)\)s::(?P<cast>[\w ]+(?:\[\])?)$")
INPUT_MODES = {"i", "b", "v"}  # IN, INOUT, VARIADIC

STATEMENTS = {name: text for name, text in vars(queries).items() if name.isupper() and isinstance(text, str)}


def calls(text: str) -> list[tuple[str, list[str]]]:
    """(function, [argument text]) for every flowforge.<fn>(...) call in a statement."""
    found = []
    for match in CALL.finditer(text):
        depth, start, args = 1, match.end(), []
        for i in range(match.end(), len(text)):
            if text[i] == "(":
                depth += 1
            elif text[i] == ")":
                depth -= 1
                if depth == 0:
                    args.append(text[start:i])
                    break
            elif text[i] == "," and depth == 1:
                args.append(text[start:i])
                start = i + 1
        found.append((match.group(1), [" ".join(a.split()) for a in args if a.strip()]))
    return found


API_CALLS = [(name, fn, args) for name, text in sorted(STATEMENTS.items()) if name != "DEMO_INSPECT_RUN"
             for fn, args in calls(text) if args]


@pytest.fixture(scope="module")
def signatures(admin_dsn):
    """function → {argument name: type} of its IN arguments, from a migrated database."""
    from conftest import create_database, drop_database
    from flowforge import migrate

    name, dsn = create_database(admin_dsn)
    try:
        migrate.migrate(dsn)
        with psycopg.connect(dsn) as conn:
            catalog = Catalog(conn)
            found: dict[str, dict[str, str]] = {}
            for row in catalog.function_arguments():
                if row["mode"] in INPUT_MODES and row["name"]:
                    found.setdefault(row["function"], {})[row["name"]] = row["type"]
            types = {cast: catalog.regtype(cast) for _, _, args in API_CALLS for cast in _casts(args)}
        yield found, types
    finally:
        drop_database(admin_dsn, name)


def _casts(args: list[str]) -> list[str]:
    return [m.group("cast") for m in (NAMED.match(a) for a in args) if m]


def test_the_statements_call_the_api():
    called = {fn for _, fn, _ in API_CALLS}
    assert {"claim", "heartbeat", "complete", "complete_many", "fail", "start_run", "take_outbox"} <= called


@pytest.mark.parametrize("statement, function, arguments", API_CALLS, ids=[f"{s}:{f}" for s, f, _ in API_CALLS])
def test_api_call_uses_named_arguments_that_exist(signatures, statement, function, arguments):
    known, types = signatures
    assert function in known, f"{statement}: flowforge.{function} has no named arguments in the database"
    for argument in arguments:
        match = NAMED.match(argument)
        assert match is not None, f"{statement}: {argument!r} is not `name => %(param)s::type`"
        name, cast = match.group("name"), match.group("cast")
        assert name in known[function], f"{statement}: flowforge.{function} has no argument {name!r}"
        assert types[cast] == known[function][name], (
            f"{statement}: {name} is cast to {cast} ({types[cast]}), the argument is {known[function][name]}")
