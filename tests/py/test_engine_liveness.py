"""Engine liveness (issue 13): three daemons' worth of tick(engine_id) sharing 21 organizations.

The organizations (the built-in one and twenty made with the tenancy API) each have
duties — an agent whose heartbeat stopped, a work item whose lease expired — made in
waves through the gateway. Three tick callers share them:

* ``A`` and ``B`` are threads with their own connections; ``B`` at some point just
  stops calling (what SIGSTOP does to a daemon), and later comes back;
* ``C`` is a separate Python process (its own connection) that ticks like the others,
  then ticks once more *inside a transaction it keeps open* — it has done its
  organizations' duties, uncommitted, holding their rows — and is killed with SIGKILL
  while ``A`` and ``B`` wait for its locks in pg_stat_activity.

The daemons live on a shared, steered timeline (the test's database gets the
steerable flowforge.now() of tests/fixtures/clock.sql; every caller sets the round's
time), 10 s a round, with the default duty lease (30 s; live = a heartbeat within 90 s).

Checked after every round, from what each committed tick returned and from the table:
no organization has two serving rows (engine_one_serving_per_org); the organizations
the round's callers serve are disjoint; an organization changes hands only under a
higher generation, and only after its holder gave it back or its lease lapsed; a
generation belongs to one daemon. At the end every organization is served, by live
daemons only, and every duty was done exactly once: one lease_expired event per item,
every stale agent inactive, and the committed ticks' counts add up to the duties —
the killed transaction's work was rolled back and done again by the survivors, and the
paused daemon that came back acted on no organization it had lost.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import uuid
from datetime import timedelta

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

from helpers_engines import (
    claim_work,
    connect,
    db_now,
    define,
    install_clock,
    lock_waiters,
    register_agent,
    set_clock,
    single_graph,
    start_run,
    wait_until,
)

N_CREATED = 20
N_ORGS = N_CREATED + 1  # and the built-in one
STEP = timedelta(seconds=10)
LEASE = timedelta(seconds=30)  # setting.duty_lease, the default
LIVE = 3 * LEASE

# The killed daemon: a process of its own. "tick <at>" ticks in autocommit and prints the
# counts; "hold <at>" ticks inside a transaction, prints the counts, and keeps the
# transaction open until the process is killed.
DAEMON_C = r"""
import json, sys
import psycopg
conn = psycopg.connect(sys.argv[1], autocommit=True)
print(json.dumps({"pid": conn.info.backend_pid}), flush=True)
for line in sys.stdin:
    command, at = line.split()
    if command == "hold":
        conn.autocommit = False
    conn.execute("SELECT set_config('flowforge_test.now', %s, false)", (at,))
    print(json.dumps(conn.execute("SELECT flowforge.tick(%s)", (sys.argv[2],)).fetchone()[0]), flush=True)
    if command == "hold":
        sys.stdin.readline()
"""


class ProcessDaemon:
    def __init__(self, dsn: str, engine_id: str, path):
        path.write_text(DAEMON_C)
        self.proc = subprocess.Popen([sys.executable, str(path), dsn, engine_id], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        self.pid = json.loads(self.proc.stdout.readline())["pid"]  # its backend

    def _send(self, command: str, at) -> dict:
        self.proc.stdin.write(f"{command} {at.isoformat()}\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, f"daemon C exited ({self.proc.poll()})"
        return json.loads(line)

    def tick(self, at) -> dict:
        return self._send("tick", at)

    def hold(self, at) -> dict:
        return self._send("hold", at)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()  # SIGKILL
            self.proc.wait(timeout=10)


class Daemons:
    def __init__(self, dsn: str, tmp_path):
        self.observer = connect(dsn)
        self.monitor = connect(dsn)  # polls pg_stat_activity while a round runs
        self.t0 = db_now(self.observer) + timedelta(hours=1)
        self.conns = {name: connect(dsn) for name in ("A", "B")}
        self.c = ProcessDaemon(dsn, "C", tmp_path / "daemon_c.py")
        self.holders: dict = {}   # org -> {"engine", "gen", "last", "released"} from committed ticks
        self.gens: dict = {}      # (org, generation) -> engine
        self.counts = {"reaped_items": 0, "agents_inactive": 0}
        self.history: list = []   # (at, engine, serving) of every committed tick

    def close(self) -> None:
        self.c.kill()
        for conn in (*self.conns.values(), self.observer, self.monitor):
            conn.close()

    def at(self, n: int):
        return self.t0 + n * STEP

    def _thread_tick(self, name: str, at) -> dict:
        conn = self.conns[name]
        set_clock(conn, at)
        return conn.execute("SELECT flowforge.tick(%s)", (name,)).fetchone()[0]

    def round(self, n: int, callers: str) -> dict[str, dict]:
        """One round at time n: the callers tick together (C through its process); checked."""
        at = self.at(n)
        barrier = threading.Barrier(len(callers))
        out: dict[str, dict] = {}
        errors: list = []

        def go(name):
            try:
                barrier.wait()
                out[name] = self.c.tick(at) if name == "C" else self._thread_tick(name, at)
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)

        threads = [threading.Thread(target=go, args=(name,), daemon=True) for name in callers]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not errors, errors
        assert len(out) == len(callers), f"a tick did not return in round {n}"
        self.record(at, out)
        return out

    def record(self, at, results: dict[str, dict]) -> None:
        """Account committed ticks and check the serving rules against everything seen so far."""
        serving = {name: {uuid.UUID(o): g for o, g in r["serving"].items()} for name, r in results.items()}
        names = sorted(serving)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                both = set(serving[a]) & set(serving[b])
                assert not both, f"at {at}: {a} and {b} both serve {both}"
        for name in names:  # what a daemon no longer returns, it gave back (or lost)
            for org, h in self.holders.items():
                if h["engine"] == name and org not in serving[name] and h["released"] is None:
                    h["released"] = at
        for name in names:
            for org, gen in serving[name].items():
                owner = self.gens.setdefault((org, gen), name)
                assert owner == name, f"generation {gen} of {org} held by {owner} and by {name}"
                h = self.holders.get(org)
                if h is not None and h["engine"] != name:
                    assert gen > h["gen"], f"{name} took {org} at {at} under generation {gen} <= {h['gen']}"
                    assert h["released"] is not None or at >= h["last"] + LEASE, (
                        f"{name} took {org} at {at} while {h['engine']}'s lease (renewed {h['last']}) ran")
                elif h is not None:
                    assert gen >= h["gen"]
                self.holders[org] = {"engine": name, "gen": gen, "last": at, "released": None}
            for key in self.counts:
                self.counts[key] += results[name][key]
            self.history.append((at, name, serving[name]))
        twice = self.observer.execute("SELECT organization_id FROM flowforge.engine WHERE status = 'serving' "
                                      "GROUP BY 1 HAVING count(*) > 1").fetchall()
        assert twice == [], f"organizations with two serving rows: {twice}"

    def served(self, at) -> dict:
        """org -> engine of every organization with a live lease at `at` (from the table)."""
        return dict(self.observer.execute(
            "SELECT organization_id, engine_id::text FROM flowforge.engine WHERE status = 'serving' "
            "AND lease_expires_at > %s", (at,)).fetchall())


@pytest.fixture
def gateway_login(admin_dsn):
    name = f"ff_gw13_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN IN ROLE flowforge_gateway").format(sql.Identifier(name)))
    try:
        yield name
    finally:
        with psycopg.connect(admin_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(name)))


@pytest.fixture
def organizations(gateway_login, migrated_dsn):
    """21 organizations, each with an API key and a one-node graph 'duty'; yields (dsn, keys, gateway)."""
    install_clock(migrated_dsn)
    keys = {}
    with connect(migrated_dsn) as op:
        for i in range(N_CREATED):
            op.execute("SELECT flowforge.create_organization(%s, %s)", (f"duty-{i:02d}", f"Duty {i}"))
        for org_id, slug in op.execute("SELECT id, slug FROM flowforge.organization").fetchall():
            keys[org_id] = op.execute("SELECT flowforge.create_api_key(%s, 'duties', 'member')", (slug,)).fetchone()[0]
    assert len(keys) == N_ORGS
    gw = psycopg.connect(make_conninfo(migrated_dsn, user=gateway_login), autocommit=True)
    for key in keys.values():
        with gw.transaction():
            gw.execute("SELECT flowforge.authenticate(%s)", (key,))
            define(gw, single_graph("duty", queue="dq", max_attempts=1))
    try:
        yield migrated_dsn, keys, gw
    finally:
        gw.close()


def make_duties(keys: dict, gw, wave: int) -> list:
    """In every organization: an agent that registered and went quiet, and the item it claimed with a
    1-second lease (real time: long expired on the daemons' timeline). Returns the items."""
    items = []
    for key in keys.values():
        with gw.transaction():
            gw.execute("SELECT flowforge.authenticate(%s)", (key,))
            register_agent(gw, f"stale-{wave}", {"heartbeat_interval": "10 seconds"})
            start_run(gw, "duty", {"wave": wave})
            (row,) = claim_work(gw, ["dq"], f"stale-{wave}", "1 second")
            items.append(row["work_item_id"])
    return items


def test_three_daemons_share_21_organizations_through_a_kill_and_a_pause(organizations, tmp_path):
    dsn, keys, gw = organizations
    d = Daemons(dsn, tmp_path)
    try:
        # ---- all three tick until the organizations are split evenly (7 each)
        n = 0
        while True:
            d.round(n, "ABC")
            n += 1
            split = sorted(list(d.served(d.at(n - 1)).values()).count(e) for e in "ABC")
            if split == [7, 7, 7]:
                break
            assert n < 12, f"no even split after {n} rounds: {split}"
        assert set(d.served(d.at(n - 1))) == set(keys)

        # ---- wave 1; C ticks inside a transaction it keeps open, A and B tick beside it
        wave1 = make_duties(keys, gw, 1)
        c_orgs = {o for o, e in d.served(d.at(n - 1)).items() if e == "C"}
        c_last = d.at(n - 1)  # C's last committed tick
        held = d.c.hold(d.at(n))
        assert {uuid.UUID(o) for o in held["serving"]} == c_orgs
        assert (held["reaped_items"], held["agents_inactive"]) == (7, 7), held  # done, not committed
        d.round(n, "AB")
        n += 1
        # C is silent from now on. Once A or B would take one of C's organizations (its lease lapsed
        # and they have room under their share), demoting C's serving row waits for C's open
        # transaction: then C is killed, mid-transaction.
        while True:
            out: dict = {}
            runner = threading.Thread(target=lambda: out.setdefault("round", d.round(n, "AB")), daemon=True)
            runner.start()
            wait_until(lambda: not runner.is_alive() or lock_waiters(d.monitor, d.c.pid),
                       what="the round to end or to wait for C")
            waiting = lock_waiters(d.monitor, d.c.pid)
            if waiting:
                assert set(waiting) <= {d.conns["A"].info.backend_pid, d.conns["B"].info.backend_pid}, waiting
                assert d.at(n) >= c_last + LEASE, "C's organizations were taken before its lease lapsed"
                d.c.kill()
            runner.join(60)
            assert not runner.is_alive() and "round" in out, f"round {n} did not finish"
            n += 1
            if waiting:
                break
            assert d.at(n) <= c_last + LIVE, "nobody took C's organizations within 3 leases of its last tick"
        wait_until(lambda: not d.monitor.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s",
                                                  (d.c.pid,)).fetchone(), what="C's backend to end")
        d.round(n, "AB")
        n += 1
        assert all(d.holders[o]["gen"] > 1 for o in c_orgs)
        assert set(d.served(d.at(n - 1)).values()) == {"A", "B"}
        assert set(d.served(d.at(n - 1))) == set(keys)
        _assert_done_once(d, wave1)
        assert d.counts == {"reaped_items": N_ORGS, "agents_inactive": N_ORGS}, d.counts

        # ---- wave 2; B stops calling (SIGSTOP), A goes on alone
        d.round(n, "AB")
        n += 1
        b_orgs = {o for o, e in d.served(d.at(n - 1)).items() if e == "B"}
        b_last = d.at(n - 1)
        assert b_orgs
        wave2 = make_duties(keys, gw, 2)
        while d.at(n) < b_last + LIVE:
            d.round(n, "A")
            n += 1
        d.round(n, "A")  # B no longer counts as live: A's share is every organization
        n += 1
        assert set(d.served(d.at(n - 1))) == set(keys)
        assert set(d.served(d.at(n - 1)).values()) == {"A"}
        _assert_done_once(d, wave2)
        assert d.counts == {"reaped_items": 2 * N_ORGS, "agents_inactive": 2 * N_ORGS}, d.counts

        # ---- wave 3; B wakes up (SIGCONT): its generation is superseded, it acts on nothing it lost
        wave3 = make_duties(keys, gw, 3)
        woke = d.round(n, "B")
        n += 1
        assert woke["B"]["serving"] == {}, woke
        assert (woke["B"]["reaped_items"], woke["B"]["agents_inactive"]) == (0, 0), woke
        stale = d.observer.execute("SELECT count(*) FROM flowforge.work_item WHERE id = ANY (%s) "
                                   "AND status = 'dispatched'", (wave3,)).fetchone()[0]
        assert stale == N_ORGS, "B did wave 3's duties in organizations it no longer serves"
        for _ in range(4):  # A and B rebalance: A gives back what exceeds ceil(21/2), B takes it
            d.round(n, "AB")
            n += 1
        served = d.served(d.at(n - 1))
        assert set(served) == set(keys)
        assert sorted(list(served.values()).count(e) for e in "AB") == [10, 11]
        _assert_done_once(d, wave3)
        assert d.counts == {"reaped_items": 3 * N_ORGS, "agents_inactive": 3 * N_ORGS}, d.counts
        # Every handover left a trace: C's and B's organizations under new generations, the
        # generations of each organization never reused by another daemon.
        assert len(d.gens) == len(set(d.gens))
        print(f"\n{n} rounds; final generations: "
              f"{sorted(d.holders[o]['gen'] for o in d.holders)}; served: "
              f"{ {e: list(served.values()).count(e) for e in 'AB'} }")
    finally:
        d.close()


def _assert_done_once(d: Daemons, items: list) -> None:
    """Each item reaped exactly once (one lease_expired event, failed, its run failed); its agent swept."""
    rows = d.observer.execute(
        "SELECT w.id, w.status::text, (SELECT count(*) FROM flowforge.task_run_event e WHERE e.work_item_id = w.id "
        "AND e.kind = 'lease_expired'), g.status::text, a.status::text FROM flowforge.work_item w "
        "JOIN flowforge.graph_run g ON g.run_id = w.run_id "
        "JOIN flowforge.agent a ON a.organization_id = w.organization_id AND a.name = w.agent_id "
        "WHERE w.id = ANY (%s)", (items,)).fetchall()
    assert len(rows) == len(items)
    wrong = [r for r in rows if r[1:] != ("failed", 1, "failed", "inactive")]
    assert wrong == [], f"duties not done exactly once: {wrong[:5]}"
