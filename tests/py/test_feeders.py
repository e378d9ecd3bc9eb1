"""The daemon's feeders (issue 16) with a real directory and a real local git repository.

``flowforge daemon`` runs as a process (no broker: its periodic duties only) with a short
``--feed-interval``; files are written and commits made while it runs and while it is
stopped. Progress is in SQL, so a restarted daemon fires only what is new: the feeders
fire in order (oldest file, oldest commit first), so once the newest thing has fired
after a restart, anything that was going to be fired again would have been already.
Waits are on the database or the daemon's log, never a sleep.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import psycopg
import pytest
from psycopg.types.json import Jsonb

from flowforge.daemon.feeders import MAX_DELIVERY_ID, delivery_id_for, scan_directory
from helpers_runtime import daemons, wait_until  # noqa: F401 - fixture
from helpers_triggers import firings, runs_triggered_by

FEED = ("--feed-interval", "0.2")


def setup(dsn: str, name: str, trigger_type: str, options: dict) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT flowforge.define_workflow(spec => %s::jsonb)",
                     (Jsonb({"name": f"wf-{name}", "tasks": [{"key": "work"}]}),))
        conn.execute("SELECT flowforge.create_trigger(name => %s::text, trigger_type => %s::text, action => 'start', "
                     "target => %s::text, options => %s::jsonb)", (name, trigger_type, f"wf-{name}", Jsonb(options)))


def fired(dsn: str, name: str, n: int, timeout: float = 30) -> list[dict]:
    """Wait until ``name`` has at least ``n`` firings; all of them."""
    return wait_until(lambda: (rows := firings(dsn, name)) and len(rows) >= n and rows, timeout,
                      f"{n} firings of {name}")


def feeder_state(dsn: str, name: str):
    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute("SELECT feeder_state FROM flowforge.scheduled_trigger WHERE name = %s",
                            (name,)).fetchone()[0]


def write(path: Path, text: str, mtime_ns: int) -> Path:
    path.write_text(text)
    os.utime(path, ns=(mtime_ns, mtime_ns))
    return path


T0 = 1_700_000_000_000_000_000  # mtimes steered, so "oldest first" is the test's and not the file system's


def test_each_new_file_fires_once_and_a_restart_refires_nothing(migrated_dsn, daemons, tmp_path):
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    setup(migrated_dsn, "inbox", "filesystem", {"path": str(inbox), "pattern": "*.csv"})
    a = write(inbox / "a.csv", "1,2\n", T0)
    b = write(inbox / "b.csv", "3,4,5\n", T0 + 1_000_000_000)
    write(inbox / "notes.txt", "not matched", T0)
    write(inbox / ".partial.csv", "hidden: being written", T0)
    (inbox / "dir.csv").mkdir()  # not a regular file

    first = daemons(migrated_dsn, None, *FEED, "--engine-id", "feeders-fs")
    rows = fired(migrated_dsn, "inbox", 2)
    first.wait_for_event("feeder_fired")
    assert [r["payload"]["name"] for r in rows] == ["a.csv", "b.csv"]
    assert rows[0]["payload"] == {"path": str(a), "name": "a.csv", "size": 4, "mtime_ns": T0,
                                  "mtime": "2023-11-14T22:13:20+00:00"}
    assert rows[1]["payload"]["size"] == 6
    assert [r["delivery_id"] for r in rows] == [f"{a}@{T0}", f"{b}@{T0 + 1_000_000_000}"]
    assert rows[0]["fired_on"].timestamp() == T0 / 1e9  # the source's time: the file's mtime
    assert all(r["outcome"] == "started" for r in rows)
    assert {str(r["trigger_firing_id"]) for r in runs_triggered_by(migrated_dsn, "inbox")} == \
        {str(r["id"]) for r in rows}
    assert first.stop() == 0

    # While no daemon runs: one new file, one old file rewritten (a new mtime is a new delivery).
    write(inbox / "c.csv", "6\n", T0 + 2_000_000_000)
    write(a, "1,2,3\n", T0 + 3_000_000_000)
    second = daemons(migrated_dsn, None, *FEED, "--engine-id", "feeders-fs")
    rows = fired(migrated_dsn, "inbox", 4)
    assert [r["delivery_id"] for r in rows] == [f"{a}@{T0}", f"{b}@{T0 + 1_000_000_000}",
                                                f"{inbox / 'c.csv'}@{T0 + 2_000_000_000}", f"{a}@{T0 + 3_000_000_000}"]
    write(inbox / "d.csv", "7\n", T0 + 4_000_000_000)  # and one while it runs
    rows = fired(migrated_dsn, "inbox", 5)
    assert len(rows) == 5 and len({r["delivery_id"] for r in rows}) == 5
    assert len(runs_triggered_by(migrated_dsn, "inbox")) == 5
    assert second.stop() == 0
    assert len(firings(migrated_dsn, "inbox")) == 5


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "Ada Lovelace", "GIT_AUTHOR_EMAIL": "ada@example.org",
           "GIT_COMMITTER_NAME": "Ada Lovelace", "GIT_COMMITTER_EMAIL": "ada@example.org"}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


def commit(repo: Path, message: str, file: str = "log.txt") -> str:
    with (repo / file).open("a") as f:
        f.write(message + "\n")
    git(repo, "add", file)
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def test_each_new_commit_fires_once_and_the_first_poll_records_the_head(migrated_dsn, daemons, tmp_path):
    repo = tmp_path / "app"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    c1 = commit(repo, "first")
    setup(migrated_dsn, "commits", "gitpoll", {"repo": str(repo), "branch": "main"})

    first = daemons(migrated_dsn, None, *FEED, "--engine-id", "feeders-git")
    wait_until(lambda: (feeder_state(migrated_dsn, "commits") or {}).get("sha") == c1, 30, "the head recorded")
    assert firings(migrated_dsn, "commits") == []  # what was there before the trigger is not news

    c2 = commit(repo, "second\n\nwith a body")
    c3 = commit(repo, "third")
    rows = fired(migrated_dsn, "commits", 2)
    assert [r["delivery_id"] for r in rows] == [c2, c3]  # oldest first, each its own delivery
    assert rows[0]["payload"] == {"ref": "refs/heads/main", "branch": "main", "sha": c2,
                                  "author": "Ada Lovelace <ada@example.org>", "author_name": "Ada Lovelace",
                                  "author_email": "ada@example.org", "message": "second\n\nwith a body",
                                  "committed_at": rows[0]["payload"]["committed_at"]}
    assert all(r["outcome"] == "started" for r in rows)
    wait_until(lambda: feeder_state(migrated_dsn, "commits")["sha"] == c3, 30, "the state at c3")
    assert first.stop() == 0

    # Stopped: two commits on main and one on a side branch that main never gets.
    c4 = commit(repo, "fourth")
    git(repo, "checkout", "-q", "-b", "feature")
    side = commit(repo, "side work", "side.txt")
    git(repo, "checkout", "-q", "main")
    c5 = commit(repo, "fifth")
    second = daemons(migrated_dsn, None, *FEED, "--engine-id", "feeders-git")
    rows = fired(migrated_dsn, "commits", 4)
    wait_until(lambda: feeder_state(migrated_dsn, "commits")["sha"] == c5, 30, "the state at c5")
    assert [r["delivery_id"] for r in rows] == [c2, c3, c4, c5]
    assert side not in {r["delivery_id"] for r in rows}
    # A merge brings the side branch's commit in: it fires once, and so does the merge.
    git(repo, "merge", "-q", "--no-ff", "-m", "merge feature", "feature")
    merge = git(repo, "rev-parse", "HEAD")
    rows = fired(migrated_dsn, "commits", 6)
    assert [r["delivery_id"] for r in rows][4:] == [side, merge]
    assert second.stop() == 0
    assert len(firings(migrated_dsn, "commits")) == 6
    assert len(runs_triggered_by(migrated_dsn, "commits")) == 6


def test_an_unreadable_source_is_logged_once_and_the_others_still_fire(migrated_dsn, daemons, tmp_path):
    setup(migrated_dsn, "gone", "filesystem", {"path": str(tmp_path / "does-not-exist")})
    setup(migrated_dsn, "norepo", "gitpoll", {"repo": str(tmp_path), "branch": "main"})
    inbox = tmp_path / "ok"
    inbox.mkdir()
    setup(migrated_dsn, "fine", "filesystem", {"path": str(inbox)})
    write(inbox / "x", "x", T0)
    daemon = daemons(migrated_dsn, None, *FEED, "--engine-id", "feeders-err")
    fired(migrated_dsn, "fine", 1)
    write(inbox / "y", "y", T0 + 1)
    fired(migrated_dsn, "fine", 2)  # several polls later
    errors = daemon.events("feeder_error")
    assert sorted(e["trigger"] for e in errors) == ["default/gone", "default/norepo"]  # once each, not per poll
    assert "cannot list" in daemon.log and "not a git repository" in daemon.log
    assert firings(migrated_dsn, "gone") == [] and firings(migrated_dsn, "norepo") == []
    assert daemon.stop() == 0


def test_a_path_too_long_for_a_delivery_id_is_hashed_and_still_fires_once(tmp_path):
    deep = tmp_path / ("d" * 120) / ("e" * 100)
    deep.mkdir(parents=True)
    write(deep / "f.csv", "x", T0)
    [(delivery, payload, _)] = scan_directory(str(deep), "*")
    assert len(f"{deep / 'f.csv'}@{T0}") > MAX_DELIVERY_ID
    assert delivery.startswith("sha256:") and len(delivery) == 71 and payload["path"] == str(deep / "f.csv")
    assert delivery == delivery_id_for(str(deep / "f.csv"), T0)  # stable: the same file is the same delivery
    assert delivery_id_for("/short", 5) == "/short@5"


@pytest.mark.parametrize("pattern, names", [("*", ["a.csv", "b.txt"]), ("*.csv", ["a.csv"]),
                                            (".*", [".hidden"])])
def test_patterns_are_globs_and_dot_files_need_a_dot_pattern(tmp_path, pattern, names):
    for name in ("a.csv", "b.txt", ".hidden"):
        write(tmp_path / name, name, T0)
    assert sorted(p["name"] for _, p, _ in scan_directory(str(tmp_path), pattern)) == names
