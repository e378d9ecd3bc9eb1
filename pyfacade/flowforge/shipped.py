"""Which functions the shipped SQL defines, read from its ``CREATE FUNCTION`` headers.

``CREATE OR REPLACE`` with a changed argument list adds an overload instead
of replacing the old function, so a database upgraded across such a change
keeps the old signature, and ``99_grants.sql`` grants on it like any other.
``flowforge doctor`` finds these leftovers by comparing the functions in
schema ``flowforge`` with what the shipped files define: every ``*.sql``
under ``functions/`` (recursively) and the forward migrations (which create
trigger functions such as ``refuse_history_change()``).

Reading a header
    ``CREATE [OR REPLACE] FUNCTION flowforge.<name>(<arguments>)`` anywhere
    outside comments and quoted strings.  Dollar-quoted text is read as code:
    in FlowForge it is a function body or a ``DO`` block, and 0006 creates its
    bootstrap ``current_organization()`` inside one.  The argument list is
    split at its top-level commas (a DEFAULT may hold commas, parentheses
    and quotes); OUT arguments are dropped, as are modes and ``DEFAULT`` /
    ``=`` expressions.  What is left is ``[name] type``.
Resolving a header (``resolve``, on the database being checked)
    PostgreSQL decides what is a type: ``to_regtype`` on the argument without
    its first word (FlowForge names every argument), or on the whole text when
    that is a type itself (``double precision``, ``timestamp with time
    zone``).  The signature spelled with PostgreSQL's own type names goes to
    ``to_regprocedure``, so headers and catalog are compared by oid, exactly,
    and without writing anything.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from .catalog import Catalog

_HEADER = re.compile(
    r"\bCREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION\s+(?:flowforge|\"flowforge\")\s*\.\s*"
    r"(?P<name>\"(?:[^\"]|\"\")+\"|[A-Za-z_][A-Za-z0-9_$]*)\s*\(",
    re.IGNORECASE,
)
_MODE = re.compile(r"^(IN|OUT|INOUT|VARIADIC)\s+(.*)$", re.IGNORECASE | re.DOTALL)
_DEFAULT = re.compile(r"\s+DEFAULT\s.*$|\s*=.*$", re.IGNORECASE | re.DOTALL)
_FIRST_WORD = re.compile(r"^(\"(?:[^\"]|\"\")+\"|\S+)\s+(.+)$", re.DOTALL)
_DOLLAR_TAG = re.compile(r"\$(?:[A-Za-z_][A-Za-z0-9_]*)?\$")

# The first words of PostgreSQL's multi-word type names (SQL-standard syntax in
# gram.y).  Only for these can the whole argument text be a bare type, so only
# for these is PostgreSQL asked about the whole text before the rest.
_MULTI_WORD_TYPE_STARTS = {"double", "character", "char", "national", "nchar", "bit", "time", "timestamp",
                           "interval", "varchar"}


@dataclass(frozen=True)
class Header:
    """One ``CREATE FUNCTION flowforge.<name>(...)`` header of a shipped file."""

    path: Path
    line: int
    name: str                      # as written: an identifier, or a quoted one with its quotes
    arguments: tuple[str, ...]     # the signature's arguments as "[name] type", modes and defaults removed

    def __str__(self) -> str:
        return f"flowforge.{self.name}({', '.join(self.arguments)}) ({self.path.name}:{self.line})"


def code_only(text: str) -> str:
    """``text`` with comments and the contents of quoted strings blanked, offsets and newlines kept.

    Double-quoted identifiers are kept.  Dollar quotes lose their delimiters
    only: what they enclose is read as code (see the module docstring).
    """
    out = list(text)
    i, n = 0, len(text)

    def blank(start: int, end: int) -> None:
        for k in range(start, end):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if text.startswith("--", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            blank(i, end)
            i = end
        elif text.startswith("/*", i):
            depth, j = 1, i + 2  # block comments nest in PostgreSQL
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            blank(i, j)
            i = j
        elif c == "'":
            escapes = i > 0 and text[i - 1] in "eE" and (i < 2 or not (text[i - 2].isalnum() or text[i - 2] == "_"))
            j = i + 1
            while j < n:
                if escapes and text[j] == "\\":
                    j += 2
                elif text[j] == "'":
                    if text.startswith("''", j):
                        j += 2
                    else:
                        break
                else:
                    j += 1
            blank(i + 1, j)  # keep the quotes: "DEFAULT ''" still reads as a default
            i = j + 1
        elif c == '"':
            j = text.find('"', i + 1)
            while j >= 0 and text.startswith('""', j):
                j = text.find('"', j + 2)
            i = n if j < 0 else j + 1
        elif c == "$" and (tag := _DOLLAR_TAG.match(text, i)) and not (i > 0 and (text[i - 1].isalnum()
                                                                                 or text[i - 1] == "_")):
            blank(i, tag.end())
            i = tag.end()
        else:
            i += 1
    return "".join(out)


def _split_arguments(code: str, start: int) -> tuple[list[str], int]:
    """The top-level comma-separated parts of the list opening at ``code[start] == '('``, and its end."""
    depth, part_start, parts = 0, start + 1, []
    for i in range(start, len(code)):
        c = code[i]
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
            if depth == 0:
                parts.append(code[part_start:i])
                return [p for p in parts if p.strip()], i
        elif c == "," and depth == 1:
            parts.append(code[part_start:i])
            part_start = i + 1
    raise ValueError("unbalanced parentheses in a CREATE FUNCTION header")


def signature_argument(text: str) -> str | None:
    """One argument as ``[name] type``, or None for an OUT argument (not part of the signature)."""
    text = " ".join(text.split())
    text = _DEFAULT.sub("", text)
    mode = _MODE.match(text)
    if mode is not None:
        if mode.group(1).upper() == "OUT":
            return None
        text = mode.group(2)
    return text.strip()


def read_headers(text: str, path: Path = Path("<text>")) -> list[Header]:
    """Every ``CREATE FUNCTION flowforge.*`` header in one file's text."""
    code = code_only(text)
    headers = []
    for match in _HEADER.finditer(code):
        parts, _end = _split_arguments(code, match.end() - 1)
        arguments = tuple(a for a in (signature_argument(p) for p in parts) if a is not None)
        headers.append(Header(path, code.count("\n", 0, match.start()) + 1, match.group("name"), arguments))
    return headers


def headers_in(paths: Iterable[Path]) -> list[Header]:
    return [h for path in paths for h in read_headers(path.read_text(encoding="utf-8"), path)]


# --- resolving against a database ---------------------------------------------------

class _Types:
    """PostgreSQL's spelling of argument types, one question per distinct text."""

    def __init__(self, catalog: Catalog):
        self._catalog = catalog
        self._known: dict[str, str | None] = {}

    def _regtype(self, text: str) -> str | None:
        if text not in self._known:
            self._known[text] = self._catalog.regtype(text)
        return self._known[text]

    def of(self, argument: str) -> str | None:
        """The type of ``[name] type``: PostgreSQL's spelling, or None when it names none."""
        split = _FIRST_WORD.match(argument)
        if split is None:  # one word: a bare type
            return self._regtype(argument)
        first, rest = split.groups()
        if first.lower() in _MULTI_WORD_TYPE_STARTS and (whole := self._regtype(argument)) is not None:
            return whole  # the whole text is the type, e.g. "double precision"
        return self._regtype(rest) or self._regtype(argument)


def resolve(catalog: Catalog, headers: Iterable[Header]) -> dict[Header, int | None]:
    """Each header → the oid of the function it defines in this database (None: no such function)."""
    types = _Types(catalog)
    signatures: dict[Header, str | None] = {}
    for header in headers:
        spelled = [types.of(a) for a in header.arguments]
        signatures[header] = None if None in spelled else f"flowforge.{header.name}({', '.join(spelled)})"
    oids = catalog.regprocedures(sorted({s for s in signatures.values() if s is not None}))
    return {header: (None if s is None else oids.get(s)) for header, s in signatures.items()}


@dataclass(frozen=True)
class Comparison:
    """The functions of a database against the shipped headers."""

    defined: int                   # distinct functions in the database that a shipped file defines
    unknown: tuple[str, ...]       # signatures in the database that no shipped file defines
    missing: tuple[Header, ...]    # function-file headers with no function in the database


def compare(catalog: Catalog, function_files: Iterable[Path], migration_files: Iterable[Path]) -> Comparison:
    """Compare schema flowforge with the headers of the function files and migrations.

    A migration's function that is not in the database is not missing: a
    later migration may have dropped it.  Function files are re-applied on
    every migrate, so each of their functions must exist.
    """
    function_headers = headers_in(function_files)
    resolved = resolve(catalog, function_headers + headers_in(migration_files))
    present = catalog.flowforge_functions()
    shipped = {oid for oid in resolved.values() if oid is not None}
    return Comparison(
        defined=len(shipped & present.keys()),
        unknown=tuple(sorted(sig for oid, sig in present.items() if oid not in shipped)),
        missing=tuple(h for h in function_headers if resolved[h] is None),
    )
