"""(6) Push delivery: outbox -> RabbitMQ, published and confirmed, through the daemon.

Subject: ``flowforge daemon`` as a subprocess (its drain is not exposed as a
public function), already started and idle.  One transaction starts N runs of
a workflow whose task is on a push queue, which writes N outbox rows; from the
commit, the bench polls (every 10 ms) until every row has ``published_at`` —
the daemon marks a row only after the broker confirmed it.
Baseline: a raw pika loop in the same process publishing N persistent,
mandatory messages of the same size to the same exchange on a channel in
confirm mode, one confirm per message (as the daemon does).
RabbitMQ at 127.0.0.1:5672 (guest/guest).  Alternating rounds; medians.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import common as c

EXCHANGE = "ffbench.push"
AMQP_QUEUE = "ffbench.push.sink"
TARGET = 0.8


def main() -> None:
    try:
        import pika
    except ImportError:
        c.could_not_run("pika is not installed in this Python")
    try:
        params = pika.URLParameters(c.AMQP_URL)
        amqp = pika.BlockingConnection(params)
    except Exception as exc:  # noqa: BLE001
        c.could_not_run(f"RabbitMQ not reachable at {c.AMQP_URL}: {exc!r}")
    channel = amqp.channel()
    channel.exchange_declare(EXCHANGE, exchange_type="topic", durable=True)
    channel.queue_declare(AMQP_QUEUE, durable=True)
    channel.queue_bind(AMQP_QUEUE, EXCHANGE, routing_key="#")
    channel.queue_purge(AMQP_QUEUE)
    channel.confirm_delivery()

    n_rounds = c.rounds(3)
    n = int(os.environ.get("FF_BENCH_PUSH_MESSAGES", c.scale(3000, 800)))
    dsn = c.flowforge_database("push")
    c.define(dsn, {"name": "pushed", "tasks": [{"key": "work", "queue": "pushq"}]})
    with c.connect(dsn) as conn:
        conn.execute("SELECT flowforge.configure_queue('pushq', %s, NULL)", [EXCHANGE])

    flowforge_bin = os.path.join(os.path.dirname(sys.executable), "flowforge")
    log: list[str] = []
    daemon = subprocess.Popen([flowforge_bin, "daemon", "--dsn", dsn, "--amqp-url", c.AMQP_URL, "--batch-size", "100"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def read_log() -> None:
        for line in daemon.stderr:
            log.append(line.rstrip())
    threading.Thread(target=read_log, daemon=True).start()

    def pending(conn) -> int:
        return conn.execute("SELECT count(*) FROM flowforge.outbox_message WHERE published_at IS NULL").fetchone()[0]

    def daemon_round(count: int) -> float:
        with c.connect(dsn, autocommit=False) as conn:
            conn.execute("SELECT count(flowforge.start_run('pushed', '{}'::jsonb)) FROM generate_series(1, %s)", [count])
            conn.commit()
            t0 = time.perf_counter()
            conn.autocommit = True
            deadline = time.monotonic() + 120
            while pending(conn) and time.monotonic() < deadline:
                if daemon.poll() is not None:
                    raise RuntimeError("the daemon exited: " + " | ".join(log[-5:]))
                time.sleep(0.01)
            left = pending(conn)
            elapsed = time.perf_counter() - t0
        if left:
            raise RuntimeError(f"{left} outbox rows still unpublished after 120 s: " + " | ".join(log[-5:]))
        return count / elapsed

    try:
        deadline = time.monotonic() + 20
        while not any("event=amqp_connected" in line for line in log):
            if daemon.poll() is not None or time.monotonic() > deadline:
                c.could_not_run("flowforge daemon did not start: " + " | ".join(log[-5:]))
            time.sleep(0.05)
        daemon_round(50)  # warm-up: plans, the exchange declare
        with c.connect(dsn) as conn:
            body = conn.execute("SELECT payload::text FROM flowforge.outbox_message LIMIT 1").fetchone()[0]
        props = pika.BasicProperties(delivery_mode=2, content_type="application/json", app_id="ffbench")

        def raw_round(count: int) -> float:
            t0 = time.perf_counter()
            for i in range(count):
                channel.basic_publish(EXCHANGE, "pushq", body, properties=props, mandatory=True)
            return count / (time.perf_counter() - t0)

        raw_round(50)
        raw, dmn = [], []
        for r in range(n_rounds):
            channel.queue_purge(AMQP_QUEUE)
            c.checkpoint(dsn)
            raw.append(raw_round(n))
            channel.queue_purge(AMQP_QUEUE)
            c.checkpoint(dsn)
            dmn.append(daemon_round(n))
            c.progress(f"round {r + 1}/{n_rounds}: raw pika {raw[-1]:,.0f} msg/s, daemon {dmn[-1]:,.0f} msg/s")
    finally:
        daemon.terminate()
        try:
            daemon.wait(15)
        except subprocess.TimeoutExpired:
            daemon.kill()
        try:
            channel.queue_delete(AMQP_QUEUE)
            channel.exchange_delete(EXCHANGE)
            amqp.close()
        except Exception:  # noqa: BLE001
            pass
    ratio = c.median(dmn) / c.median(raw)
    c.figure("outbox -> RabbitMQ confirmed", c.median(dmn), "msg/s", baseline="raw pika confirm-each loop",
             baseline_value=c.median(raw), ratio=ratio, target=f">= {TARGET}", met=ratio >= TARGET,
             note=f"flowforge daemon subprocess, batch 100; {n} messages per round, "
                  f"median of {n_rounds} alternating rounds; {len(body)}-byte payload",
             chart={"kind": "bars", "labels": ["raw pika, confirm each", "flowforge daemon"],
                    "values": [c.median(raw), c.median(dmn)], "rounds": [raw, dmn], "unit": "msg/s"})


if __name__ == "__main__":
    main()
