"""A seeded database and a real ``flowforge serve`` on a free port, for the HTTP and browser tests (issue 20).

``seed(dsn)`` runs ``flowforge demo`` into the default organization (a DAG
with a retried task, a graph that cycles, a machine, a map of 24 photos), adds
a trigger with a started and a refused firing, and makes a second
organization ``org-b`` with runs of its own (one failed) started through the
gateway with its own key.  ``Served`` runs ``build_app`` under uvicorn in a
thread on a socket bound to port 0, as the gateway login — never as a
superuser — with an operator login and a scrape token for ``/metrics``.
"""

from __future__ import annotations

import json
import secrets
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field

import psycopg
import uvicorn
from psycopg import sql
from psycopg.conninfo import make_conninfo

from flowforge import demo
from flowforge.serve import ServeSettings, build_app

GUARD = "-c lock_timeout=5s -c statement_timeout=30s"


@dataclass
class Seeded:
    dsn: str                       # superuser
    gateway_dsn: str
    operator_dsn: str
    key_a: str                     # default organization, admin
    key_a_viewer: str
    key_b: str                     # org-b, member
    token: str                     # the operator's scrape token
    logins: list[str] = field(default_factory=list)
    runs_a: dict[str, str] = field(default_factory=dict)   # kind -> a run id (dag, graph, statemachine, map)
    runs_b: list[str] = field(default_factory=list)
    by_key_a: str = ""             # a run of the default organization started through the gateway with key_a
    failed_b: str = ""

    def gateway(self, key: str) -> psycopg.Connection:
        """A gateway transaction authenticated with ``key`` (commit to end it)."""
        conn = psycopg.connect(self.gateway_dsn, autocommit=False)
        conn.execute("SELECT flowforge.authenticate(%s)", (key,))
        return conn

    def start_b(self, n: int, workflow: str = "b-job") -> list[str]:
        with self.gateway(self.key_b) as conn:
            ids = [str(conn.execute("SELECT flowforge.start_run(%s, %s::jsonb)",
                                    (workflow, json.dumps({"i": i}))).fetchone()[0]) for i in range(n)]
            conn.commit()
        return ids


def seed(dsn: str, *, demo_runs: int = 2) -> Seeded:
    suffix = uuid.uuid4().hex[:8]
    result = demo.run(dsn, runs=demo_runs, concurrency=4, timeout=90)
    assert result.ok, "the demo's runs must all succeed to seed the UI tests"
    logins = {short: f"ff_{short}_{suffix}" for short in ("gw", "dba")}
    with psycopg.connect(dsn, autocommit=True) as op:
        op.execute(sql.SQL("CREATE ROLE {} LOGIN IN ROLE flowforge_gateway").format(sql.Identifier(logins["gw"])))
        op.execute(sql.SQL("CREATE ROLE {} LOGIN IN ROLE flowforge_readonly").format(sql.Identifier(logins["dba"])))
        op.execute("SELECT flowforge.create_organization('org-b', 'Org B')")
        key_a = op.execute("SELECT flowforge.create_api_key('default', 'ui tests', 'admin')").fetchone()[0]
        key_a_viewer = op.execute("SELECT flowforge.create_api_key('default', 'ui viewer', 'viewer')").fetchone()[0]
        key_b = op.execute("SELECT flowforge.create_api_key('org-b', 'b tests', 'member')").fetchone()[0]
        # Triggers of the default organization: one that started a run, and a refused firing.
        op.execute("SELECT flowforge.create_trigger('nightly', 'webhook', 'start', %s, %s::jsonb)",
                   (demo.WORKFLOW, json.dumps({"secret": "s" * 24})))
        op.execute("SELECT flowforge.fire_trigger('nightly', '{\"region\": \"emea\"}'::jsonb, NULL, 'delivery-1')")
        op.execute("SELECT flowforge.fire_trigger('nobody', '{}'::jsonb)")
        # Two agents: one heartbeating with metrics, one draining.
        op.execute("""SELECT flowforge.register_agent('render-farm-1', '{"type": "remote", "version": "1.4.2",
                      "labels": {"gpu": "a10"}, "heartbeat_interval": "1 hour"}'::jsonb)""")
        op.execute("""SELECT flowforge.agent_heartbeat('render-farm-1', '{"cpu": 0.42, "rss_mb": 312}'::jsonb)""")
        op.execute("""SELECT flowforge.register_agent('render-farm-2', '{"type": "remote", "heartbeat_interval": "1 hour"}')""")
        op.execute("SELECT flowforge.set_agent_status('render-farm-2', 'draining')")
    seeded = Seeded(dsn, make_conninfo(dsn, user=logins["gw"], options=GUARD),
                    make_conninfo(dsn, user=logins["dba"], options=GUARD), key_a, key_a_viewer, key_b,
                    secrets.token_urlsafe(24), list(logins.values()))
    seeded.runs_a = {"dag": str(result.run_ids[0]), "graph": str(result.graph["id"]),
                     "statemachine": str(result.machine["id"]), "map": str(result.map["id"])}
    with seeded.gateway(key_a) as conn:
        seeded.by_key_a = str(conn.execute("SELECT flowforge.start_run(%s, '{\"region\": \"apac\"}'::jsonb)",
                                           (demo.MAP,)).fetchone()[0])
        conn.commit()
    with psycopg.connect(dsn, autocommit=True) as op:  # render-farm-1 holds one task of queue demo
        op.execute("SELECT task_run_id FROM flowforge.claim(ARRAY['demo'], 'render-farm-1', '1 hour', 1)").fetchone()
    # org-b: its own definitions and runs, through the gateway with its own key.
    with seeded.gateway(key_b) as conn:
        conn.execute("SELECT flowforge.define_workflow(%s::jsonb)",
                     (json.dumps({"name": "b-job", "tasks": [{"key": "only", "queue": "b"}]}),))
        conn.execute("SELECT flowforge.define_workflow(%s::jsonb)",
                     (json.dumps({"name": "b-fail", "tasks": [{"key": "only", "queue": "b-fail", "max_attempts": 1}]}),))
        seeded.failed_b = str(conn.execute("SELECT flowforge.start_run('b-fail')").fetchone()[0])
        conn.commit()
    with seeded.gateway(key_b) as conn:
        task, token = conn.execute("SELECT task_run_id, fencing_token FROM flowforge.claim(ARRAY['b-fail'], 'b-worker')"
                                   ).fetchone()
        conn.execute("SELECT flowforge.fail(%s, %s, 'boom <b>not bold</b>', false)", (task, token))
        conn.commit()
    seeded.runs_b = [seeded.failed_b, *seeded.start_b(3)]
    return seeded


def drop_logins(admin_dsn: str, seeded: Seeded) -> None:
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        for name in seeded.logins:
            conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(name)))


class Served:
    """``flowforge serve``'s app under uvicorn, in a thread, on a free port of 127.0.0.1."""

    def __init__(self, settings: ServeSettings):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(build_app(settings), log_level="warning", lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self) -> "Served":
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("flowforge serve did not start")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(15)
        self.sock.close()


def serve(seeded: Seeded) -> Served:
    return Served(ServeSettings(dsn=seeded.gateway_dsn, operator_dsn=seeded.operator_dsn, metrics_token=seeded.token))
