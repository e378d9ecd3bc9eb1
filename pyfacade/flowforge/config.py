"""Where FlowForge finds its database and broker.

Resolution order for the database, the same for the CLI, the worker SDK and
the daemon so that they always agree:

1. an explicit DSN (the ``--dsn`` flag, or an argument in code);
2. the environment variable ``FLOWFORGE_DSN``;
3. otherwise the embedded default: a private PostgreSQL started with the
   ``pgserver`` package under ``./.flowforge/pgdata`` (see ``embedded``).

Resolution here is pure — it never starts a server.  ``db.resolve_dsn`` turns
an embedded ``Settings`` into a real DSN only when a command actually needs
the database, so ``--help`` and usage errors stay instant.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping

DSN_ENV = "FLOWFORGE_DSN"
AMQP_URL_ENV = "FLOWFORGE_AMQP_URL"
SQL_DIR_ENV = "FLOWFORGE_SQL_DIR"

SOURCE_FLAG = "flag"
SOURCE_ENV = "env"
SOURCE_EMBEDDED = "embedded"


@dataclass(frozen=True)
class Settings:
    """What a command needs to know about its surroundings.

    ``dsn`` is None exactly when ``dsn_source`` is ``embedded``.
    """

    dsn: str | None
    dsn_source: str
    amqp_url: str | None
    json: bool = False

    @property
    def embedded(self) -> bool:
        return self.dsn_source == SOURCE_EMBEDDED


def _non_empty(value: str | None) -> str | None:
    """An empty or blank variable counts as unset (``FLOWFORGE_DSN= cmd`` must not mean 'no database')."""
    if value is None or not value.strip():
        return None
    return value.strip()


def resolve(dsn_flag: str | None = None, *, json: bool = False,
            environ: Mapping[str, str] | None = None) -> Settings:
    """Apply the resolution order above to a flag value and the environment."""
    env = os.environ if environ is None else environ
    amqp_url = _non_empty(env.get(AMQP_URL_ENV))
    flag = _non_empty(dsn_flag)
    if flag is not None:
        return Settings(flag, SOURCE_FLAG, amqp_url, json)
    from_env = _non_empty(env.get(DSN_ENV))
    if from_env is not None:
        return Settings(from_env, SOURCE_ENV, amqp_url, json)
    return Settings(None, SOURCE_EMBEDDED, amqp_url, json)
