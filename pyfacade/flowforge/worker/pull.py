"""Pull: a LISTEN thread that wakes the claim loop, and the claim loop over both queues.

A dedicated connection LISTENs on ``flowforge_ready`` (notified when a task
becomes ready *and* when a work item is enqueued) and wakes the claim loop; a
fallback poll every ``poll_interval`` seconds covers retries whose backoff
just ended and notifications lost while reconnecting.

The loop serves two queues with one capacity: DAG tasks (``claim``, from the
pull queues) and work items — graph nodes, machine actions, fan-out children
(``claim_work``, from every queue the worker serves: work items are never
pushed, so a push queue's work items are claimed here too).  Each round asks
one queue for up to its free capacity and the other for what is left,
alternating which goes first, so neither starves the other; it goes again at
once when it got all it asked for.

Every claim names the task keys this worker has handlers for (``task_names``):
a unit another service handles stays pending for that service, and a worker
with no handlers claims nothing.  A registered agent that is draining claims
nothing at all (``agent.may_claim``); the database would give it nothing.

Nothing a claim raises ends the loop: an input Python cannot decode arrives
as ``Undecodable`` in its own row (``decode``) and that unit is failed for
good; any other exception is logged and backed off from (bounded), and the
loop goes on.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import timedelta
from typing import Callable, Sequence


from .. import db, errors
from ..client import Client
from ..db import listen as listen_probe, pooler
from .connection import SharedConnection, reconnect_delay
from .decode import tolerate_undecodable_jsonb
from .jobs import TASK, WORK_ITEM, InFlight, Job, Unit

log = logging.getLogger("flowforge.worker")

MAX_TASK_NAMES = 1000  # what one claim accepts (task_names of flowforge.claim and claim_work)
MAX_BATCH = 1000       # what one claim returns at most (batch of flowforge.claim and claim_work)
DRY_RETRY = 0.05       # seconds before a queue found short is asked again without a notification


def claim_window(concurrency: int, prefetch: int) -> tuple[int, int]:
    """(units held at most, smallest claim worth making) for a worker of this concurrency and prefetch.

    Held: ``concurrency`` running plus ``prefetch`` waiting in the local queue.
    Without prefetch every free slot is claimed for at once (min 1); with it a
    claim waits until half the prefetch is free, so it is a batch.
    """
    return concurrency + prefetch, max(1, (prefetch + 1) // 2)


class PullQueues:
    def __init__(self, dsn: str, queues: list[str], worker_name: str, *, lease: float, concurrency: int,
                 poll_interval: float, in_flight: InFlight, submit: Callable[[Job], None],
                 stop: threading.Event, wake: threading.Event, task_names: Callable[[], Sequence[str]],
                 item_queues: list[str] | None = None, may_claim: Callable[[], bool] = lambda: True,
                 prefetch: int = 0):
        self._dsn = dsn
        self._queues = queues                      # DAG tasks: the pull queues
        self._item_queues = item_queues if item_queues is not None else queues  # work items: every queue served
        self._may_claim = may_claim                # False while the agent is draining
        self._task_names = task_names  # the handlers registered now
        self._worker_name = worker_name
        self._lease = lease
        self._concurrency = concurrency
        self._poll_interval = poll_interval
        self._in_flight = in_flight
        self._submit = submit
        self._stop = stop      # stop claiming
        self._wake = wake      # something to claim, or capacity freed
        self._claims = SharedConnection(self._dsn, "claim", configure=tolerate_undecodable_jsonb)
        self._capacity, self._min_claim = claim_window(concurrency, prefetch)
        # Set by the LISTEN thread for every notification (and when it (re)connects):
        # something may have become ready, so a queue found empty is worth asking again.
        self._notified = threading.Event()
        self._listening = False   # LISTEN delivers (its probe came back): empty queues can wait for a notification

    def wants_claim(self) -> bool:
        """Whether a finished job should wake the claim loop: enough room for a claim worth its round trip."""
        return self._capacity - self._in_flight.count >= self._min_claim

    def listen(self) -> None:
        """The LISTEN thread: wake the claim loop on every notification, reconnecting until stop.

        Behind a transaction pooler (configured, or LISTEN found not to
        deliver) it ends, and the claim loop's poll is all there is.
        """
        if pooler.configured():
            log.info("behind a transaction pooler (%s=transaction): no LISTEN, polling every %g s",
                     pooler.POOLER_ENV, self._poll_interval)
            return
        attempt = 0
        while not self._stop.is_set():
            conn = None
            try:
                conn = db.connect(self._dsn, autocommit=True)
                api = Client(conn)
                api.listen_ready()
                api.listen_probe()
                attempt = 0
                if not self._delivers(conn):
                    return
                self._listening = True
                with db.mapped_errors():
                    self._poke()  # anything made ready while we were not listening
                    while not self._stop.is_set():
                        for _ in conn.notifies(timeout=1.0, stop_after=1):
                            self._poke()
            except Exception as exc:  # noqa: BLE001 - the listener must outlive anything; polling covers the gap
                self._listening = False  # notifications may be missed until we listen again: ask every queue
                if self._stop.is_set():
                    break
                log.warning("listen connection: %s; reconnecting", db.first_line(exc))
                time.sleep(reconnect_delay(attempt))
                attempt += 1
            finally:
                if conn is not None:
                    try:
                        conn.close()
                    except Exception:  # noqa: BLE001
                        pass

    def _delivers(self, conn) -> bool:
        """Notify ourselves from the claim connection; False (and polling from now on) if it never arrives."""
        token = listen_probe.probe_token()
        self._claims.call(lambda api: api.notify_probe(token), give_up=self._stop.is_set)
        if listen_probe.await_probe(conn, token, on_other=lambda _note: self._poke(), stop=self._stop.is_set):
            return True
        if self._stop.is_set():
            return False
        if pooler.detected("LISTEN did not deliver"):
            log.warning(pooler.DETECTED.format(reason="LISTEN did not deliver"))
        log.warning("listen_not_delivering: a notification this worker sent itself did not arrive within %g s "
                    "(a transaction pooler?); polling every %g s instead", listen_probe.PROBE_TIMEOUT,
                    self._poll_interval)
        return False

    def _poke(self) -> None:
        """A notification: something may be ready. Every queue is worth asking again."""
        self._notified.set()
        self._wake.set()

    def claim_loop(self) -> None:
        """Claim while there is room, until stop (or the database is away while stopping).

        Room is ``concurrency + prefetch`` units held (running or waiting in
        the pool's local queue); a claim is made once at least ``min_claim``
        of it is free, so claims come in batches instead of one per finished
        handler.  While LISTEN delivers, a queue whose last claim came back
        short is asked again on a notification, at the poll, or once it has
        been short for ``DRY_RETRY`` seconds (work another worker's
        completion let through reaches us without a notification): an empty
        queue's round trip is not paid on every round.
        """
        claims = self._claims
        lease = timedelta(seconds=self._lease)
        sources = [unit for unit, queues in ((TASK, self._queues), (WORK_ITEM, self._item_queues)) if queues]
        dry: dict[Unit, float] = {}   # queue -> when its claim came back short (since the last notification)
        try:
            warned = False
            failures = 0
            rounds = 0
            allowed = True
            while not self._stop.is_set():
                self._wake.clear()
                if self._notified.is_set() or not self._listening:
                    self._notified.clear()
                    dry.clear()
                free = self._capacity - self._in_flight.count
                names = sorted(self._task_names())
                if not names and not warned:
                    log.warning("worker %s has no task handlers: it claims nothing from %s", self._worker_name,
                                sorted(set(self._queues) | set(self._item_queues)))
                    warned = True
                may = self._may_claim()
                if may and not allowed:
                    dry.clear()  # an agent allowed to claim again: ask every queue
                allowed = may
                now = time.monotonic()
                asked = [unit for unit in sources if now - dry.get(unit, -DRY_RETRY) >= DRY_RETRY]
                if free >= self._min_claim and names and may and asked:
                    rounds += 1
                    order = asked if rounds % 2 else asked[::-1]  # alternate who asks first
                    taken = 0
                    try:
                        for unit in order:
                            if free - taken <= 0:
                                break
                            want = min(free - taken, MAX_BATCH)
                            got = self._claim(claims, unit, lease, want, names)
                            if got < want:
                                dry[unit] = time.monotonic()
                            else:
                                dry.pop(unit, None)
                            taken += got
                    except errors.DatabaseUnavailable:
                        break  # stopping while the database is away
                    except errors.FlowForgeError as exc:
                        log.error("claim refused: %s", exc)
                        self._stop.wait(self._poll_interval)
                        continue
                    except Exception:  # noqa: BLE001 - no exception from a claim may end the worker
                        delay = max(self._poll_interval, reconnect_delay(failures))
                        failures += 1
                        log.exception("claim failed (attempt %d); trying again in %.1f s", failures, delay)
                        self._stop.wait(delay)
                        continue
                    failures = 0
                    if taken == free:
                        continue  # took all we could: there may be more, and capacity to check
                if not self._wake.wait(self._poll_interval):
                    dry.clear()  # the poll: ready_at of a retry may have come, a notification may be lost
        finally:
            claims.close()

    def _claim(self, claims: SharedConnection, unit: Unit, lease: timedelta, batch: int, names: list[str]) -> int:
        """One claim of ``unit``'s queue for up to ``batch``; each unit taken is submitted. Returns how many."""
        batch = min(batch, MAX_BATCH)
        if unit is TASK:
            rows = claims.call(lambda api: api.claim(self._queues, self._worker_name, lease, batch, task_names=names),
                               give_up=self._stop.is_set)
            jobs = [Job.claimed(row) for row in rows]
        else:
            rows = claims.call(lambda api: api.claim_work(self._item_queues, self._worker_name, lease, batch,
                                                          task_names=names),
                               give_up=self._stop.is_set)
            jobs = [Job.claimed_item(row) for row in rows]
        for job in jobs:
            self._submit(job)
        return len(jobs)
