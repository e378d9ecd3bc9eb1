"""The feeders: filesystem and gitpoll triggers, polled by the daemon as one more periodic duty.

Every ``feed_interval`` the daemon asks ``feeder_triggers(engine_id)`` for the
live feeder triggers of the organizations it serves (the duty leases that
``tick`` hands out), looks at each trigger's directory or branch, and fires
what it finds through the feeder functions of
``sql/functions/60_triggers/50_feeders.sql``.  Progress lives in SQL, never in
this process:

* ``filesystem`` — each regular file in ``options.path`` whose name matches
  ``options.pattern`` (a glob; ``*`` by default; names starting with ``.`` only
  when the pattern does) is one delivery, ``<path>@<mtime_ns>``: the firings
  already recorded under those ids are what ``feeder_unfired`` leaves out, so
  a restarted daemon re-fires nothing and a file rewritten in place (a new
  mtime) fires again.  Payload ``{"path", "name", "size", "mtime", "mtime_ns"}``;
  the source's time is the mtime.
* ``gitpoll`` — ``refs/heads/<options.branch>`` of the local repository
  ``options.repo``.  The first poll records the head (``feeder_save_state``
  ``{"sha": ...}``) and fires nothing; later polls fire each commit in
  ``<saved>..<head>``, oldest first, with its sha as the delivery id and
  ``{"ref", "branch", "sha", "author", "author_name", "author_email",
  "message", "committed_at"}`` as the payload, then save the head.

Each firing is its own transaction (``feeder_fire`` then commit): one that
fails is logged and the rest still fire.  A delivery already fired — by this
daemon before a restart, or by another daemon during a lease handover —
returns the first firing (the delivery id is unique per trigger in SQL).

Logged: ``feeder_fired`` per poll that fired something (trigger, count),
``feeder_error`` when a directory or repository cannot be read (once per
trigger until it changes), ``feeder_fire_failed`` for a firing the database
refused to record.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import subprocess
import time
from collections import Counter
from datetime import datetime, timezone
from typing import Any

from .. import errors
from .log import EventLog
from .session import WorkSession

MAX_DELIVERY_ID = 200      # characters; the SQL refuses longer ones (FF003)
UNFIRED_PAGE = 10_000      # feeder_unfired takes at most this many ids a call
MAX_FIRES_PER_POLL = 500   # per trigger; the rest fire on the next poll
MAX_MESSAGE_CHARS = 16_384 # a commit message longer than this is cut (the payload limits are the database's)
GIT_TIMEOUT = 30.0         # seconds for one git command

_GIT_ENV = {"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "GIT_OPTIONAL_LOCKS": "0"}
_FIELD_SEP = "\x1f"
_RECORD_SEP = "\x1e"


class FeederError(Exception):
    """A trigger's directory or repository could not be read (logged; retried on the next poll)."""


def delivery_id_for(path: str, mtime_ns: int) -> str:
    """``<path>@<mtime_ns>``, or ``sha256:<hex of it>`` when that is over the SQL's 200 characters."""
    text = f"{path}@{mtime_ns}"
    if len(text) <= MAX_DELIVERY_ID:
        return text
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).isoformat()


def scan_directory(path: str, pattern: str) -> list[tuple[str, dict, datetime]]:
    """(delivery id, payload, fired_on) of every matching regular file in ``path``, oldest mtime first."""
    found = []
    try:
        with os.scandir(path) as entries:
            for entry in entries:
                if entry.name.startswith(".") and not pattern.startswith("."):
                    continue
                if not fnmatch.fnmatchcase(entry.name, pattern):
                    continue
                try:
                    if not entry.is_file(follow_symlinks=False):
                        continue
                    st = entry.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue  # gone between the listing and the stat
                full = os.path.join(path, entry.name)
                payload = {"path": full, "name": entry.name, "size": st.st_size, "mtime": _iso(st.st_mtime),
                           "mtime_ns": st.st_mtime_ns}
                found.append((delivery_id_for(full, st.st_mtime_ns), payload,
                              datetime.fromtimestamp(st.st_mtime, timezone.utc)))
    except OSError as exc:
        raise FeederError(f"cannot list {path}: {exc.strerror or exc}") from None
    found.sort(key=lambda item: (item[1]["mtime_ns"], item[1]["name"]))
    return found


def git(repo: str, *args: str) -> str:
    """One git command in ``repo``; its stdout, or FeederError with git's first line of stderr."""
    env = {**os.environ, **_GIT_ENV}
    try:
        done = subprocess.run(["git", "-C", repo, *args], capture_output=True, env=env, timeout=GIT_TIMEOUT,
                              stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise FeederError("git is not installed (gitpoll triggers need it on the daemon's PATH)") from None
    except subprocess.TimeoutExpired:
        raise FeederError(f"git {args[0]} in {repo} took over {GIT_TIMEOUT:g} s") from None
    if done.returncode != 0:
        lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise FeederError(f"git {args[0]} in {repo}: {lines[0] if lines else f'exit {done.returncode}'}")
    return done.stdout.decode("utf-8", "replace")


def branch_head(repo: str, branch: str) -> str | None:
    """The sha ``refs/heads/<branch>`` points at, None when the branch does not exist (yet)."""
    env = {**os.environ, **_GIT_ENV}
    ref = f"refs/heads/{branch}"
    try:
        done = subprocess.run(["git", "-C", repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
                              capture_output=True, env=env, timeout=GIT_TIMEOUT, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise FeederError("git is not installed (gitpoll triggers need it on the daemon's PATH)") from None
    except subprocess.TimeoutExpired:
        raise FeederError(f"git rev-parse in {repo} took over {GIT_TIMEOUT:g} s") from None
    if done.returncode == 0:
        return done.stdout.decode().strip()
    if done.returncode == 1 and not done.stderr.strip():
        return None  # --quiet: no such ref
    lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
    raise FeederError(f"git rev-parse in {repo}: {lines[0] if lines else f'exit {done.returncode}'}")


def has_commit(repo: str, sha: str) -> bool:
    try:
        git(repo, "cat-file", "-e", f"{sha}^{{commit}}")
        return True
    except FeederError:
        return False


def new_commits(repo: str, since: str, head: str) -> list[str]:
    """The commits reachable from ``head`` and not from ``since``, oldest first."""
    out = git(repo, "rev-list", "--reverse", "--topo-order", f"{since}..{head}", "--")
    return [line for line in out.split() if line]


def describe_commits(repo: str, branch: str, shas: list[str]) -> list[tuple[str, dict, datetime]]:
    """(sha, payload, committed at) of each commit, in the order given."""
    if not shas:
        return []
    fmt = _FIELD_SEP.join(["%H", "%an", "%ae", "%cI", "%B"]) + _RECORD_SEP
    out = git(repo, "log", "--no-walk=unsorted", f"--format={fmt}", *shas, "--")
    found = []
    for record in out.split(_RECORD_SEP):
        record = record.lstrip("\n")
        if not record:
            continue
        sha, name, email, committed, message = record.split(_FIELD_SEP, 4)
        message = message.rstrip("\n")
        if len(message) > MAX_MESSAGE_CHARS:
            message = message[:MAX_MESSAGE_CHARS]
        payload = {"ref": f"refs/heads/{branch}", "branch": branch, "sha": sha, "author": f"{name} <{email}>",
                   "author_name": name, "author_email": email, "message": message, "committed_at": committed}
        found.append((sha, payload, datetime.fromisoformat(committed)))
    return found


class Feeders:
    """The feeder duty: ``poll(work)`` every ``interval`` seconds."""

    def __init__(self, interval: float, log: EventLog, totals: Counter, engine_id: str | None = None):
        self.interval = interval
        self.next_at = 0.0
        self.engine_id = engine_id
        self._log = log
        self._totals = totals
        self._errors: dict[Any, str] = {}  # trigger id -> the error last logged for it (logged once until it changes)

    def due(self, now: float) -> bool:
        return now >= self.next_at

    def poll(self, work: WorkSession, stopping=lambda: False) -> int:
        """Poll every feeder trigger of the organizations this daemon serves; the number of firings made."""
        try:
            triggers = work.api.feeder_triggers(self.engine_id)
            work.commit()
        except errors.FlowForgeError as exc:
            work.failed("feeder_triggers", exc)
            return 0
        finally:
            self.next_at = time.monotonic() + self.interval
        fired = 0
        for trigger in triggers:
            if stopping():
                break
            try:
                if trigger["trigger_type"] == "filesystem":
                    n = self._poll_directory(work, trigger)
                else:
                    n = self._poll_git(work, trigger)
            except FeederError as exc:
                self._error(trigger, str(exc))
                continue
            except _SessionGone:
                return fired
            self._errors.pop(trigger["trigger_id"], None)
            if n:
                fired += n
                self._log("feeder_fired", trigger=f"{trigger['organization']}/{trigger['name']}",
                          type=trigger["trigger_type"], count=n)
        self._totals["feeder_fired"] += fired
        return fired

    def _error(self, trigger: dict, message: str) -> None:
        if self._errors.get(trigger["trigger_id"]) != message:
            self._errors[trigger["trigger_id"]] = message
            self._log("feeder_error", trigger=f"{trigger['organization']}/{trigger['name']}",
                      type=trigger["trigger_type"], error=message)

    # --- the two kinds ---------------------------------------------------------------

    def _poll_directory(self, work: WorkSession, trigger: dict) -> int:
        options = trigger["options"] or {}
        files = scan_directory(options["path"], options.get("pattern") or "*")
        unfired = self._unfired(work, trigger, [delivery for delivery, _, _ in files])
        return self._fire_all(work, trigger, [f for f in files if f[0] in unfired][:MAX_FIRES_PER_POLL])

    def _poll_git(self, work: WorkSession, trigger: dict) -> int:
        options = trigger["options"] or {}
        repo, branch = options["repo"], options.get("branch") or "main"
        head = branch_head(repo, branch)
        if head is None:
            raise FeederError(f"{repo} has no branch {branch}")
        last = (trigger["state"] or {}).get("sha")
        if last == head:
            return 0
        if last is None:
            self._save_state(work, trigger, {"sha": head, "branch": branch})  # the first poll records the head
            return 0
        if has_commit(repo, last):
            shas = new_commits(repo, last, head)
        else:
            shas = [head]  # the recorded commit is gone (history rewritten and collected): the head alone
        unfired = self._unfired(work, trigger, shas)
        todo = [sha for sha in shas if sha in unfired][:MAX_FIRES_PER_POLL]
        fired = self._fire_all(work, trigger, describe_commits(repo, branch, todo))
        capped = len([sha for sha in shas if sha in unfired]) > len(todo)
        self._save_state(work, trigger, {"sha": todo[-1] if capped else head, "branch": branch})
        return fired

    # --- SQL -------------------------------------------------------------------------

    def _unfired(self, work: WorkSession, trigger: dict, delivery_ids: list[str]) -> set[str]:
        unfired: set[str] = set()
        for start in range(0, len(delivery_ids), UNFIRED_PAGE):
            try:
                unfired.update(work.api.feeder_unfired(trigger["trigger_id"],
                                                       delivery_ids[start:start + UNFIRED_PAGE]))
                work.commit()
            except errors.FlowForgeError as exc:
                self._failed(work, "feeder_unfired", exc)
        return unfired

    def _fire_all(self, work: WorkSession, trigger: dict, items: list[tuple[str, dict, datetime]]) -> int:
        fired = 0
        for delivery_id, payload, fired_on in items:
            try:
                answer = work.api.feeder_fire(trigger["trigger_id"], delivery_id, payload, fired_on)
                work.commit()
            except errors.FlowForgeError as exc:
                work.failed("feeder_fire", exc)
                if work.conn.closed or work.conn.broken:
                    raise _SessionGone from None
                self._log("feeder_fire_failed", trigger=f"{trigger['organization']}/{trigger['name']}",
                          delivery=delivery_id, error=str(exc))
                continue
            if not (answer or {}).get("duplicate"):
                fired += 1
        return fired

    def _save_state(self, work: WorkSession, trigger: dict, state: dict) -> None:
        try:
            work.api.feeder_save_state(trigger["trigger_id"], state)
            work.commit()
        except errors.FlowForgeError as exc:
            self._failed(work, "feeder_save_state", exc)

    def _failed(self, work: WorkSession, op: str, exc: errors.FlowForgeError) -> None:
        """A statement of this poll failed: handled as the work session handles it; stop this poll."""
        work.failed(op, exc)
        raise _SessionGone


class _SessionGone(Exception):
    """A statement failed (logged by the work session): this poll stops; the next one starts afresh."""
