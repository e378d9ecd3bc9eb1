"""What a registered worker reports with each agent heartbeat: the machine's and the process's load, from psutil.

``agent_heartbeat(name, metrics)`` stores whatever object the agent sends;
FlowForge decides nothing from it (the liveness rule reads the heartbeat's
time, never its metrics).  The numbers are for people and schedulers
reading ``list_agents()``: CPU, memory, load, disk, and how busy the worker
is.  Every value comes from psutil (no hand-parsed /proc), and one that
psutil cannot read on this platform is left out rather than guessed.

Keys (flat, so a table can show them): ``cpu_percent`` (all CPUs, since the
previous sample), ``cpu_count``, ``load_1m`` / ``load_5m`` / ``load_15m``,
``memory_percent``, ``memory_used_bytes``, ``memory_available_bytes``,
``memory_total_bytes``, ``disk_percent`` (the filesystem of the working
directory), ``process_rss_bytes``, ``process_cpu_percent``,
``process_threads``, ``pid``; and the worker's own: ``running`` (units held
now), ``running_tasks``, ``running_work_items``, ``concurrency``,
``completed``, ``failed``, ``dropped`` (since the worker started).
"""

from __future__ import annotations

import os
from typing import Any, Callable

import psutil


class Metrics:
    """Samples the host and this process; ``cpu_percent`` values cover the time since the previous sample."""

    def __init__(self):
        self._process = psutil.Process()
        # psutil's CPU percentages compare with the previous call: prime both,
        # so the first heartbeat reports the time since the worker started.
        _quietly(lambda: psutil.cpu_percent(interval=None))
        _quietly(lambda: self._process.cpu_percent(interval=None))

    def sample(self, *, running: dict[str, int], concurrency: int, stats: dict[str, int]) -> dict[str, Any]:
        found: dict[str, Any] = {}

        def put(key: str, read: Callable[[], Any]) -> None:
            value = _quietly(read)
            if value is not None:
                found[key] = value

        put("cpu_percent", lambda: psutil.cpu_percent(interval=None))
        put("cpu_count", psutil.cpu_count)
        load = _quietly(psutil.getloadavg)
        if load is not None:
            found["load_1m"], found["load_5m"], found["load_15m"] = (round(v, 2) for v in load)
        memory = _quietly(psutil.virtual_memory)
        if memory is not None:
            found.update(memory_percent=memory.percent, memory_used_bytes=memory.used,
                         memory_available_bytes=memory.available, memory_total_bytes=memory.total)
        put("disk_percent", lambda: psutil.disk_usage(os.getcwd()).percent)
        put("process_rss_bytes", lambda: self._process.memory_info().rss)
        put("process_cpu_percent", lambda: self._process.cpu_percent(interval=None))
        put("process_threads", self._process.num_threads)
        found["pid"] = self._process.pid
        found["running"] = sum(running.values())
        found["running_tasks"] = running.get("task", 0)
        found["running_work_items"] = running.get("work_item", 0)
        found["concurrency"] = concurrency
        found.update({k: stats[k] for k in ("completed", "failed", "dropped") if k in stats})
        return found


def _quietly(read: Callable[[], Any]) -> Any:
    """``read()``, or None when psutil cannot tell on this platform (or the process lacks the right)."""
    try:
        return read()
    except (psutil.Error, OSError, AttributeError, NotImplementedError):
        return None
