"""``flowforge trigger create | list | enable | disable | drop | fire | firings`` (issue 16), run as a user runs it.

Every command is a subprocess of the installed ``flowforge`` against a fresh migrated
database; tables are compared word by word (alignment is render.table's business), and
every bad input is one stderr line with a non-zero exit.
"""

from __future__ import annotations

import json

import pytest

from test_cli import ff, ok  # noqa: F401 - fixture
from test_cli_foundation import assert_one_line_error

SECRET = "a-webhook-secret-of-some-length"


def words(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines()]


def row_of(text: str, first: str) -> list[str]:
    rows = [w for w in words(text) if w and w[0] == first]
    assert len(rows) == 1, text
    return rows[0]


@pytest.fixture
def wf(ff, tmp_path):
    path = tmp_path / "report.json"
    path.write_text(json.dumps({"name": "report", "tasks": [{"key": "render"}]}))
    ok(ff("workflow", "apply", str(path)))
    return "report"


def test_create_each_type_and_list_them(ff, wf, tmp_path):
    created = ok(ff("trigger", "create", "nightly", "--type", "cron", "--cron", "30 2 * * *",
                    "--timezone", "Europe/Berlin", "--start", wf, "--input", '{"full": true}'))
    assert created.startswith("trigger nightly created (cron, starts report); next firing ")
    secret_file = tmp_path / "secret.txt"
    secret_file.write_text(SECRET + "\n")
    ok(ff("trigger", "create", "on-push", "--type", "webhook", "--secret-file", str(secret_file), "--start", wf))
    ok(ff("trigger", "create", "stdin-secret", "--type", "webhook", "--secret-file", "-", "--start", wf,
          input=SECRET))
    ok(ff("trigger", "create", "inbox", "--type", "filesystem", "--path", "/srv/inbox", "--pattern", "*.csv",
          "--start", wf))
    ok(ff("trigger", "create", "commits", "--type", "gitpoll", "--repo", "/srv/git/app", "--start", wf))
    ok(ff("trigger", "create", "paid", "--type", "webhook", "--secret", SECRET, "--signal", "paid",
          "--run-id-path", "$.order"))

    listed = ok(ff("trigger", "list"))
    assert words(listed)[0] == ["NAME", "TYPE", "ACTION", "ENABLED", "NEXT", "LAST", "FIRED", "SOURCE"]
    assert [w[0] for w in words(listed)[1:]] == ["commits", "inbox", "nightly", "on-push", "paid", "stdin-secret"]
    nightly = row_of(listed, "nightly")
    assert nightly[:5] == ["nightly", "cron", "start", "report", "yes"]
    assert nightly[-5:] == ["*", "*", "*", "(Europe/Berlin,", "catchup", "latest)"][-5:]
    assert row_of(listed, "inbox")[-1] == "/srv/inbox/*.csv"
    assert row_of(listed, "commits")[-2:] == ["/srv/git/app", "main"]
    assert row_of(listed, "paid")[:4] == ["paid", "webhook", "signal", "paid"]
    assert SECRET not in listed

    as_json = json.loads(ok(ff("trigger", "list", "--json")))
    by_name = {t["name"]: t for t in as_json}
    assert by_name["nightly"]["options"]["cron"] == "30 2 * * *" and by_name["nightly"]["input"] == {"full": True}
    assert by_name["on-push"]["options"]["secret"] == "(set, never shown)"
    assert SECRET not in json.dumps(as_json)
    assert by_name["paid"]["options"]["run_id_path"] == "$.\"order\""  # canonical jsonpath, as stored


def test_fire_enable_disable_drop_and_the_firing_log(ff, wf):
    ok(ff("trigger", "create", "manual", "--type", "webhook", "--secret", SECRET, "--start", wf))
    started = ff("trigger", "fire", "manual", "--payload", '{"region": "emea"}', "--delivery-id", "d-1")
    out = ok(started)
    assert out.startswith("firing ") and ": started run " in out
    run_id = out.split()[-1]
    replay = ok(ff("trigger", "fire", "manual", "--payload", "{}", "--delivery-id", "d-1"))
    assert replay.split(":")[0] == out.split(":")[0] and "already recorded" in replay and run_id in replay

    assert ok(ff("trigger", "disable", "manual")).startswith("trigger manual disabled")
    refused = ff("trigger", "fire", "manual")
    assert refused.returncode == 1 and "refused: trigger 'manual' is disabled" in refused.stdout
    assert refused.stderr == ""  # an outcome, not an error: it is recorded
    assert ok(ff("trigger", "enable", "manual")) == "trigger manual enabled\n"
    as_json = json.loads(ok(ff("trigger", "fire", "manual", "--json", "--fired-on", "2024-05-01T12:00:00+00:00")))
    assert as_json["outcome"] == "started" and set(as_json) >= {"firing_id", "outcome", "run_id", "error"}

    log = ok(ff("trigger", "firings", "manual"))
    assert words(log)[0] == ["FIRED", "ON", "TRIGGER", "TYPE", "RESULT", "RUN", "DELIVERY", "ERROR"]
    results = [w[4] for w in words(log)[1:]]
    assert results == ["refused", "started", "started"]  # newest fired_on first: the one of 2024 last
    assert row_of(log, "2024-05-01")[4:6] == ["started", as_json["run_id"]]
    refused_only = ok(ff("trigger", "firings", "--outcome", "refused"))
    assert [w[4] for w in words(refused_only)[1:]] == ["refused"]
    assert ["trigger", "'manual'", "is", "disabled"] == words(refused_only)[1][-4:]
    payloads = json.loads(ok(ff("trigger", "firings", "manual", "--json", "--limit", "10")))
    assert {"region": "emea"} in [p["payload"] for p in payloads]  # the operator is an admin: payloads shown
    assert ok(ff("trigger", "firings", "manual", "--limit", "1")).count("\n") == 2

    dropped = ok(ff("trigger", "drop", "manual"))
    assert dropped.startswith("trigger manual dropped")
    assert "manual" not in ok(ff("trigger", "list"))
    assert len(json.loads(ok(ff("trigger", "firings", "manual", "--json")))) == 3  # firings outlive the trigger
    assert ok(ff("trigger", "firings", "nobody")) == "no firings of nobody\n"


BAD_INPUT = [
    (["create", "t", "--type", "cron", "--cron", "0 25 * * *", "--start", "report"], 'hour field "25"'),
    (["create", "t", "--type", "cron", "--cron", "@daily", "--timezone", "Mars/Olympus", "--start", "report"],
     "Mars/Olympus"),
    (["create", "t", "--type", "cron", "--start", "report"], "needs options.cron"),
    (["create", "t", "--type", "hourly", "--start", "report"], "trigger_type must be cron, webhook"),
    (["create", "t", "--type", "cron", "--cron", "@daily"], "exactly one of --start WORKFLOW or --signal EVENT"),
    (["create", "t", "--type", "cron", "--cron", "@daily", "--start", "report", "--signal", "x"], "exactly one"),
    (["create", "t", "--type", "cron", "--cron", "@daily", "--start", "nope"], "flowforge workflow list"),
    (["create", "t", "--type", "webhook", "--secret", "short", "--start", "report"], "16 to 1024 characters"),
    (["create", "t", "--type", "webhook", "--secret", SECRET, "--secret-file", "-", "--start", "report"],
     "not both"),
    (["create", "t", "--type", "webhook", "--secret-file", "/no/such/file", "--start", "report"], "cannot read"),
    (["create", "t", "--type", "filesystem", "--path", "relative/dir", "--start", "report"], "absolute path"),
    (["create", "t", "--type", "cron", "--cron", "@daily", "--start", "report", "--options", "{oops"],
     "--options is not valid JSON"),
    (["create", "t", "--type", "cron", "--cron", "@daily", "--start", "report", "--options", "[1]"],
     "--options must be a JSON object"),
    (["create", "t", "--type", "cron", "--cron", "@daily", "--start", "report", "--max-catchup", "0"],
     "max_catchup must be an integer from 1 to 1000"),
    (["enable", "nobody"], "flowforge trigger list"),
    (["disable", "nobody"], "trigger 'nobody' not found"),
    (["drop", "nobody"], "trigger 'nobody' not found"),
    (["firings", "--outcome", "maybe"], "outcome must be started, signalled, refused or failed"),
    (["firings", "--limit", "0"], "max_rows must be between 1 and 10000"),
    (["fire", "existing", "--payload", "{nope"], "--payload is not valid JSON"),
    (["fire", "existing", "--fired-on", "yesterday"], "--fired-on must be an ISO 8601 time"),
    (["fire", "existing", "--delivery-id", "x" * 201], "delivery"),
]


def test_bad_input_is_one_line_and_writes_nothing(ff, wf):
    ok(ff("trigger", "create", "existing", "--type", "webhook", "--secret", SECRET, "--start", wf))
    for args, expected in BAD_INPUT:  # one database for all: each case is a subprocess, not a migration
        proc = ff("trigger", *args)
        assert_one_line_error(proc)
        assert expected in proc.stderr, (args, proc.stderr)
    assert [t["name"] for t in json.loads(ok(ff("trigger", "list", "--json")))] == ["existing"]
    assert json.loads(ok(ff("trigger", "firings", "--json"))) == []


def test_a_second_trigger_of_a_name_is_refused_until_the_first_is_dropped(ff, wf):
    args = ("trigger", "create", "dup", "--type", "cron", "--cron", "@hourly", "--start", wf)
    ok(ff(*args))
    again = ff(*args)
    assert_one_line_error(again)
    assert "trigger 'dup' already exists" in again.stderr
    ok(ff("trigger", "drop", "dup"))
    ok(ff(*args))  # the dropped one freed its name


def test_an_empty_organization_says_how_to_begin(ff):
    assert "no triggers yet" in ok(ff("trigger", "list"))
    assert ok(ff("trigger", "firings")) == "no firings\n"
    assert json.loads(ok(ff("trigger", "list", "--json"))) == []


def test_serve_without_a_database_or_with_a_bad_dsn_is_one_line(tmp_path):
    from test_cli_foundation import run

    nowhere = run("serve", "--port", "1", cwd=tmp_path)  # no DSN, no embedded database in this folder
    assert_one_line_error(nowhere)
    assert "no database" in nowhere.stderr
    bad = run("--dsn", "not-a-dsn", "serve", "--port", "1")
    assert_one_line_error(bad)
    bad_hooks = run("--dsn", "host=127.0.0.1", "serve", "--port", "1", "--hooks-dsn", "not-a-dsn")
    assert_one_line_error(bad_hooks)
    assert "invalid DSN" in bad_hooks.stderr


def test_list_shows_every_trigger_past_one_page(migrated_dsn, ff, wf):
    # list_triggers pages by 1,000 (keyset); the CLI and Client.list_triggers read every page.
    import psycopg
    with psycopg.connect(migrated_dsn, autocommit=True) as conn:
        conn.execute("SELECT flowforge.create_trigger('repo-' || lpad(g::text, 4, '0'), 'gitpoll', 'start', 'report', "
                     "jsonb_build_object('repo', '/srv/git/r' || g)) FROM generate_series(1, 1001) g")
    names = [t["name"] for t in json.loads(ok(ff("trigger", "list", "--json")))]
    assert len(names) == 1001 and len(set(names)) == 1001
    assert names == sorted(names) and names[-1] == "repo-1001"
