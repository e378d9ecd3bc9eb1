"""Drain N no-op jobs with PgQueuer (asyncpg, batches of 10); prints {"jobs": n, "seconds": s}.

usage: python pgqueuer_drain.py DSN N
"""
import asyncio
import json
import sys
import time

import asyncpg
from pgqueuer import AsyncpgDriver, Queries, QueueManager
from pgqueuer.types import QueueExecutionMode


async def main(dsn: str, n: int) -> None:
    conn = await asyncpg.connect(dsn)
    queries = Queries(AsyncpgDriver(conn))
    await queries.install()
    for start in range(0, n, 1000):
        k = min(1000, n - start)
        await queries.enqueue(["noop"] * k, [None] * k, [0] * k)
    await conn.close()

    conn = await asyncpg.connect(dsn)
    qm = QueueManager(Queries(AsyncpgDriver(conn)))
    done = 0

    @qm.entrypoint("noop")
    async def noop(job) -> None:
        nonlocal done
        done += 1

    t0 = time.perf_counter()
    await asyncio.wait_for(qm.run(batch_size=10, mode=QueueExecutionMode.drain), timeout=120)
    seconds = time.perf_counter() - t0
    await conn.close()
    print(json.dumps({"jobs": done, "seconds": seconds}))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
