"""Drain N no-op jobs with Procrastinate (psycopg 3); prints {"jobs": n, "seconds": s}.

usage: python procrastinate_drain.py DSN N TIMEOUT_SECONDS
Stops at the timeout and reports the jobs done so far (Procrastinate is slow).
"""
import asyncio
import json
import logging
import sys
import time

import procrastinate

logging.basicConfig(level=logging.ERROR)


async def main(dsn: str, n: int, timeout: float) -> None:
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=dsn))
    done = 0

    @app.task(name="noop")
    async def noop() -> None:
        nonlocal done
        done += 1

    async with app.open_async():
        await app.schema_manager.apply_schema_async()
        for start in range(0, n, 1000):
            k = min(1000, n - start)
            await noop.batch_defer_async(*([{}] * k))
        t0 = time.perf_counter()
        try:
            await asyncio.wait_for(app.run_worker_async(concurrency=10, wait=False, install_signal_handlers=False),
                                   timeout=timeout)
        except asyncio.TimeoutError:
            pass
        seconds = time.perf_counter() - t0
    print(json.dumps({"jobs": done, "seconds": seconds, "timed_out": done < n}))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), float(sys.argv[3])))
