"""What one run of each typical workflow costs the database: transactions, WAL, fsyncs, CPU.

The inputs of the capacity model in docs/scale.md. For each workflow of
``workloads.py`` (a one-task DAG, the DAG diamond, the graph review loop, the
order state machine, a DAG mapping over 10 elements then one task, a push
task through the outbox) it runs ``N`` runs to their end, one after the other
on one connection (every API call its own transaction, as workers and the
daemon make them), and measures around them:

* transactions per run: the API calls the run took (counted by the driver,
  checked against ``pg_stat_database.xact_commit``);
* WAL per run: ``pg_current_wal_lsn()`` before and after, and from
  ``pg_stat_wal`` the records, full-page images and fsyncs (``wal_sync``);
* CPU per run: the backend's own CPU time (``/proc``, through psutil) and the
  whole cluster's (every postgres process: the backend, walwriter,
  checkpointer, background writer, stats) over the same runs;
* wall time per run, for reference (one connection: latency, not throughput).

So that nothing else counts, it starts a PostgreSQL cluster of its own
(``initdb`` into a temporary folder, a free port, stopped and removed at
exit) with the settings of the shared server's benchmarks (fsync on,
synchronous_commit on, shared_buffers 128MB, wal_level replica) and
autovacuum off (a VACUUM and a CHECKPOINT before each workflow instead). WAL
is measured from the checkpoint on, so it includes the full-page images a
checkpoint costs: ``--steady`` runs a warm-up of the same size first and
measures a second batch, closer to what a long-running server pays between
checkpoints.

    python benchmarks/capacity.py                 # every workflow, N = 300
    python benchmarks/capacity.py --runs 1000 --steady
    python benchmarks/capacity.py --json          # the figures as JSON
    FF_BENCH_QUICK=1 python benchmarks/capacity.py   # N = 60

The machine's fsync rate (``pg_test_fsync``, 2 s per method) is printed too:
with synchronous_commit on every transaction that wrote waits for one WAL
flush (commits of concurrent sessions share one: group commit).
"""

from __future__ import annotations

import atexit
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import psycopg

import common as c
import workloads as w

PG_BIN = Path(os.environ.get("FF_PG_BIN") or subprocess.run(
    ["pg_config", "--bindir"], capture_output=True, text=True).stdout.strip() or "/usr/lib/postgresql/15/bin")
SETTINGS = {"fsync": "on", "synchronous_commit": "on", "shared_buffers": "128MB", "wal_level": "replica",
            "max_wal_size": "1GB", "checkpoint_timeout": "5min", "autovacuum": "off", "jit": "off",
            "max_connections": "20"}


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Cluster:
    """A throwaway PostgreSQL cluster: initdb, start on a free port, stop and remove at exit."""

    def __init__(self):
        self.dir = Path(tempfile.mkdtemp(prefix="ffcapacity-"))
        self.data = self.dir / "data"
        self.port = free_port()
        # PostgreSQL refuses to run as root: then as the postgres OS user (the packages' server user).
        self.as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        if self.as_user:
            shutil.chown(self.dir, "postgres")
        subprocess.run([*self.as_user, str(PG_BIN / "initdb"), "-D", str(self.data), "-U", "postgres",
                        "--auth=trust", "-E", "UTF8", "--no-instructions"], check=True, capture_output=True)
        opts = " ".join(f"-c {k}={v}" for k, v in SETTINGS.items())
        subprocess.run([*self.as_user, str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-l", str(self.dir / "log"),
                        "-w", "-o", f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 {opts}", "start"],
                       check=True, capture_output=True)
        atexit.register(self.stop)
        self.postmaster = psutil.Process(int((self.data / "postmaster.pid").read_text().split()[0]))

    def dsn(self, db: str = "postgres") -> str:
        return f"host=127.0.0.1 port={self.port} user=postgres dbname={db}"

    def cpu(self) -> float:
        """CPU seconds of the postmaster and every process it started (ended ones are gone: take it around runs)."""
        total = 0.0
        for p in [self.postmaster, *self.postmaster.children(recursive=True)]:
            try:
                t = p.cpu_times()
                total += t.user + t.system
            except psutil.NoSuchProcess:
                pass
        return total

    def stop(self) -> None:
        if self.data.exists():
            subprocess.run([*self.as_user, str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-m", "fast", "stop"],
                           capture_output=True)
        shutil.rmtree(self.dir, ignore_errors=True)


def backend_cpu(pid: int) -> float:
    t = psutil.Process(pid).cpu_times()
    return t.user + t.system


def wal_stats(conn) -> tuple[int, int, int, int]:
    lsn = conn.execute("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint").fetchone()[0]
    rec, fpi, sync = conn.execute("SELECT wal_records, wal_fpi, wal_sync FROM pg_stat_wal").fetchone()
    return lsn, rec, fpi, sync


def commits(admin, db: str) -> int:
    admin.execute("SELECT pg_stat_clear_snapshot()")
    return admin.execute("SELECT xact_commit FROM pg_stat_database WHERE datname = %s", (db,)).fetchone()[0]


def measure(cluster: Cluster, db: str, kind: str, n: int, steady: bool) -> dict:
    dsn = cluster.dsn(db)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("VACUUM")
        conn.execute("CHECKPOINT")
    conn = psycopg.connect(dsn, autocommit=True)
    admin = psycopg.connect(cluster.dsn(), autocommit=True)
    pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
    for _ in range(n if steady else min(n, 20)):  # warm-up: plans cached, pages in memory
        w.run_one(conn, kind)
    time.sleep(0.6)  # the warm-up's stats flushed (at most once a second per backend)
    x0 = commits(admin, db)
    wal0, cpu0, all0, t0 = wal_stats(admin), backend_cpu(pid), cluster.cpu(), time.perf_counter()
    calls = sum(w.run_one(conn, kind) for _ in range(n))
    t1, wal1, cpu1, all1 = time.perf_counter(), wal_stats(admin), backend_cpu(pid), cluster.cpu()
    conn.close()  # a backend flushes its stats when it exits
    time.sleep(1.2)
    x1 = commits(admin, db)
    admin.close()
    return {
        "kind": kind, "runs": n,
        "transactions_per_run": calls / n,
        "commits_per_run": (x1 - x0) / n,  # the API calls plus the few statements of this script
        "wal_bytes_per_run": (wal1[0] - wal0[0]) / n,
        "wal_records_per_run": (wal1[1] - wal0[1]) / n,
        "wal_fpi_per_run": (wal1[2] - wal0[2]) / n,
        "wal_fsyncs_per_run": (wal1[3] - wal0[3]) / n,
        "backend_cpu_ms_per_run": (cpu1 - cpu0) * 1000 / n,
        "cluster_cpu_ms_per_run": (all1 - all0) * 1000 / n,
        "wall_ms_per_run": (t1 - t0) * 1000 / n,
    }


def tick_cost(cluster: Cluster, db: str, orgs: int = 10, n: int = 200) -> dict:
    """CPU of one tick() by a daemon serving ``orgs`` idle organizations: the fixed cost of the duties."""
    with psycopg.connect(cluster.dsn(db), autocommit=True) as conn:
        for i in range(orgs - 1):
            conn.execute("SELECT flowforge.create_organization(%s, %s)", (f"cap-{i}", f"Capacity {i}"))
        pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
        for _ in range(20):
            conn.execute("SELECT flowforge.tick('capacity-daemon')")
        cpu0, t0 = backend_cpu(pid), time.perf_counter()
        for _ in range(n):
            conn.execute("SELECT flowforge.tick('capacity-daemon')")
        return {"organizations": orgs, "backend_cpu_ms_per_tick": (backend_cpu(pid) - cpu0) * 1000 / n,
                "wall_ms_per_tick": (time.perf_counter() - t0) * 1000 / n}


def fsync_rate() -> dict:
    """pg_test_fsync's ops/s per method, in this machine's temporary folder (where the cluster's WAL was)."""
    with tempfile.TemporaryDirectory(prefix="fffsync-") as d:
        out = subprocess.run([str(PG_BIN / "pg_test_fsync"), "-s", "2", "-f", str(Path(d) / "probe")],
                             capture_output=True, text=True).stdout
    rates = {}
    section = ""
    for line in out.splitlines():
        if "one 8kB write" in line or "two 8kB writes" in line:
            section = "one write" if "one" in line else "two writes"
        m = re.match(r"\s+(\S+(?: \S+)?)\s+([\d,.]+) ops/sec", line)
        if m and section == "one write":
            rates[m.group(1)] = float(m.group(2).replace(",", ""))
    return rates


def main() -> None:
    as_json = "--json" in sys.argv
    steady = "--steady" in sys.argv
    n = c.scale(300, 60)
    if "--runs" in sys.argv:
        n = int(sys.argv[sys.argv.index("--runs") + 1])
    c.progress("starting a private PostgreSQL cluster")
    cluster = Cluster()
    from flowforge import migrate

    with psycopg.connect(cluster.dsn(), autocommit=True) as admin:
        admin.execute("CREATE DATABASE capacity")
        version = admin.execute("SELECT version()").fetchone()[0]
    migrate.migrate(cluster.dsn("capacity"))
    with psycopg.connect(cluster.dsn("capacity"), autocommit=True) as conn:
        w.setup(conn)
    results = []
    for kind in w.KINDS:
        c.progress(f"{kind}: {n} runs")
        r = measure(cluster, "capacity", kind, n, steady)
        results.append(r)
        if not as_json:
            c.figure(f"{kind} run: cluster CPU", r["cluster_cpu_ms_per_run"], "ms per run",
                     note=(f"backend {r['backend_cpu_ms_per_run']:.2f} ms; {r['transactions_per_run']:.0f} "
                           f"transactions ({r['commits_per_run']:.1f} commits counted); "
                           f"WAL {r['wal_bytes_per_run'] / 1024:.1f} KiB in {r['wal_records_per_run']:.0f} records "
                           f"({r['wal_fpi_per_run']:.1f} full-page images), {r['wal_fsyncs_per_run']:.1f} fsyncs; "
                           f"wall {r['wall_ms_per_run']:.1f} ms on one connection; {n} runs"))
    with psycopg.connect(cluster.dsn("capacity"), autocommit=True) as conn:
        ended = w.check_ended(conn)
    if set(ended) != {"succeeded"}:
        c.could_not_run(f"some runs did not succeed: {ended}")
    tick = tick_cost(cluster, "capacity")
    fsync = fsync_rate()
    info = {"postgresql": version, "settings": SETTINGS, "steady": steady, "machine": c.machine_info(),
            "tick": tick, "fsync_ops_per_s": fsync, "results": results}
    if as_json:
        print(json.dumps(info, indent=2, default=str))
        return
    c.figure("tick() with 10 idle organizations: backend CPU", tick["backend_cpu_ms_per_tick"], "ms per tick",
             note=f"wall {tick['wall_ms_per_tick']:.2f} ms")
    for method, rate in fsync.items():
        c.figure(f"fsync rate ({method}, pg_test_fsync, one 8kB write)", rate, "ops/s")


if __name__ == "__main__":
    main()
