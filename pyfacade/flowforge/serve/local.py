"""The embedded default of ``flowforge serve``: logins of its own on the folder's private PostgreSQL.

``flowforge serve`` never reads as a superuser.  With no DSN configured (the
``make demo`` path) the folder's embedded server is the database and its
superuser is this folder's owner, so once, with that superuser, this makes

* ``flowforge_serve``, a login in ``flowforge_gateway`` — every page and API
  call authenticates on it with an API key;
* ``flowforge_serve_hooks``, a login in ``flowforge_webhook`` — the receiver;
* a viewer API key of the default organization (where ``flowforge demo``'s
  runs are), written to ``.flowforge/serve.key`` (mode 0600) and reused while
  it authenticates;

and returns the DSNs of the two logins.  Nothing here is used with a real DSN.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import conninfo

from .. import errors, queries
from ..db import connect, embedded, map_error
from ..db.statements import execute, fetch_value

GATEWAY_LOGIN = "flowforge_serve"
HOOKS_LOGIN = "flowforge_serve_hooks"
KEY_NAME = "flowforge serve (embedded default)"
DEFAULT_ORGANIZATION = "default"


@dataclass(frozen=True)
class Local:
    dsn: str          # the gateway login's
    hooks_dsn: str    # the receiver's
    key_file: Path
    api_key: str


def key_file() -> Path:
    return embedded.data_dir().parent / "serve.key"


def _as(dsn: str, login: str) -> str:
    parts = conninfo.conninfo_to_dict(dsn)
    parts["user"] = login
    return conninfo.make_conninfo(**parts)


def provision(superuser_dsn: str) -> Local:
    """The embedded default's logins and key (made on first use, reused after)."""
    with connect(superuser_dsn, autocommit=True) as conn:
        for login, create in ((GATEWAY_LOGIN, queries.CREATE_SERVE_LOGIN), (HOOKS_LOGIN, queries.CREATE_SERVE_HOOKS_LOGIN)):
            if not fetch_value(conn, queries.SERVE_LOGIN_EXISTS, {"login": login}):
                execute(conn, create)
    gateway_dsn = _as(superuser_dsn, GATEWAY_LOGIN)
    path = key_file()
    key = path.read_text().strip() if path.is_file() else ""
    if not key or not _authenticates(gateway_dsn, key):
        with connect(superuser_dsn, autocommit=True) as conn:
            key = fetch_value(conn, queries.CREATE_SERVE_KEY,
                              {"organization": DEFAULT_ORGANIZATION, "name": KEY_NAME, "role": "viewer"})
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(key + "\n")
    return Local(gateway_dsn, _as(superuser_dsn, HOOKS_LOGIN), path, key)


def _authenticates(dsn: str, key: str) -> bool:
    try:
        with connect(dsn) as conn:
            fetch_value(conn, queries.AUTHENTICATE, {"api_key": key})
        return True
    except errors.NotAuthenticated:
        return False
    except psycopg.Error as exc:
        raise map_error(exc) from exc
