"""``flowforge serve`` over real HTTP (issue 20): the JSON API, /metrics, /healthz, /readyz, login, headers.

One seeded database (``helpers_serve.seed``: the demo's runs in the default
organization, org-b's own runs through its key) and one server under uvicorn
on a free port, as a gateway login.  Every JSON endpoint needs a key; tenant A
never sees B's runs by id or in a list; pages stay stable while runs are
added; a bad cursor is a 400 with its reason; /metrics parses with
prometheus_client's parser and its figures are the database's.
"""

from __future__ import annotations

import time

import httpx
import psycopg
import pytest
from prometheus_client.parser import text_string_to_metric_families

from flowforge.serve import ServeSettings
from helpers_serve import Served, drop_logins, seed, serve

ENDPOINTS = ["/api/v1/runs", "/api/v1/definitions", "/api/v1/definitions/nightly-report", "/api/v1/queues",
             "/api/v1/agents", "/api/v1/triggers", "/api/v1/firings"]


@pytest.fixture(scope="module")
def env(admin_dsn):
    from conftest import create_database, drop_database

    name, dsn = create_database(admin_dsn)
    seeded = None
    try:
        seeded = seed(dsn)
        with serve(seeded) as served:
            yield seeded, served
    finally:
        drop_database(admin_dsn, name)
        if seeded is not None:
            drop_logins(admin_dsn, seeded)


def client(served, key: str | None = None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.Client(base_url=served.url, headers=headers, timeout=30, follow_redirects=False)


def all_pages(c: httpx.Client, path: str, **params) -> list[dict]:
    items, cursor = [], None
    for _ in range(100):
        r = c.get(path, params={**params, **({"cursor": cursor} if cursor else {})})
        assert r.status_code == 200, r.text
        body = r.json()
        items += body["items"]
        cursor = body["next"]
        if cursor is None:
            return items
    raise AssertionError("more than 100 pages")


def db_rows(dsn: str, query: str, params=()) -> list[tuple]:
    with psycopg.connect(dsn) as conn:
        return conn.execute(query, params).fetchall()


# --- authentication ---------------------------------------------------------------------------

def test_every_endpoint_needs_an_api_key(env):
    seeded, served = env
    run = seeded.runs_a["dag"]
    paths = ENDPOINTS + [f"/api/v1/runs/{run}", f"/api/v1/runs/{run}/events", "/metrics"]
    with client(served) as anonymous, client(served, "ffk_nope_" + "0" * 64) as wrong:
        for path in paths:
            for c, what in ((anonymous, "no key"), (wrong, "a wrong key")):
                r = c.get(path)
                assert r.status_code == 401, (path, what, r.text)
                assert r.json()["error"]["code"] == "FF008", (path, what)
                assert r.headers["www-authenticate"].startswith("Bearer"), path
    with client(served) as c:
        r = c.get("/api/v1/runs", headers={"Authorization": "Basic Zm9vOmJhcg=="})
        assert r.status_code == 401 and r.json()["error"]["code"] == "FF008"


def test_every_endpoint_answers_json_with_a_key(env):
    seeded, served = env
    run = seeded.runs_a["dag"]
    with client(served, seeded.key_a) as c:
        for path in ENDPOINTS:
            r = c.get(path)
            assert r.status_code == 200, (path, r.text)
            assert r.headers["content-type"].startswith("application/json")
            body = r.json()
            if path != "/api/v1/definitions/nightly-report":
                assert set(body) >= {"items", "next"}, path
                assert body["items"], f"{path}: the seeded database has rows for it"
        assert c.get(f"/api/v1/runs/{run}").json()["kind"] == "dag"
        events = c.get(f"/api/v1/runs/{run}/events").json()
        assert [e["kind"] for e in events["items"]].count("retry_scheduled") == 1, "fetch_rates failed once"
        definition = c.get("/api/v1/definitions/nightly-report").json()
        assert definition["name"] == "nightly-report" and [v["version"] for v in definition["all_versions"]] == [1]
        kinds = {r["kind"] for r in c.get("/api/v1/runs", params={"limit": 200}).json()["items"]}
        assert kinds == {"dag", "graph", "statemachine"}
        r = c.get("/api/v1/nothing-here")
        assert r.status_code == 404 and r.json()["error"]["code"] == "FF001"


def test_filters(env):
    seeded, served = env
    with client(served, seeded.key_a) as c:
        graphs = all_pages(c, "/api/v1/runs", kind="graph")
        assert [r["id"] for r in graphs] == [seeded.runs_a["graph"]]
        machines = all_pages(c, "/api/v1/runs", workflow="order-delivery")
        assert [r["id"] for r in machines] == [seeded.runs_a["statemachine"]]
        triggered = all_pages(c, "/api/v1/runs", trigger="nightly")
        assert len(triggered) == 1 and triggered[0]["triggered_by"] == "nightly"
        assert triggered[0]["state"] in ("pending", "running"), "no worker serves it any more"
        assert all_pages(c, "/api/v1/runs", creator="nobody-at-all") == []
        mine = c.get(f"/api/v1/runs/{seeded.by_key_a}").json()["created_by"]
        # Since 0030 a key is the caller: its creator is the key's public prefix (ffk_<12 hex>), whatever login carried it.
        assert mine == "_".join(seeded.key_a.split("_")[:2])
        assert [r["id"] for r in all_pages(c, "/api/v1/runs", creator=mine, limit=2)] == [seeded.by_key_a]
        by_postgres = all_pages(c, "/api/v1/runs", creator="postgres", limit=3)
        assert len(by_postgres) == len(all_pages(c, "/api/v1/runs")) - 1 and seeded.by_key_a not in {
            r["id"] for r in by_postgres}
        assert {f["result"] for f in all_pages(c, "/api/v1/firings")} == {"started", "refused"}
        assert [f["name"] for f in all_pages(c, "/api/v1/firings", outcome="refused")] == ["nobody"]
        r = c.get("/api/v1/runs", params={"kind": "cron"})
        assert r.status_code == 400 and r.json()["error"]["code"] == "FF003"
        r = c.get("/api/v1/runs", params={"workflow": "no-such"})
        assert r.status_code == 404 and r.json()["error"]["code"] == "FF001"


def test_agents_say_what_they_hold(env):
    seeded, served = env
    with client(served, seeded.key_a) as c:
        agents = {a["name"]: a for a in all_pages(c, "/api/v1/agents")}
    assert agents["render-farm-1"]["holding"] == 1 and agents["render-farm-1"]["metrics"] == {"cpu": 0.42, "rss_mb": 312}
    (held,) = agents["render-farm-1"]["holds"]
    assert held["what"] == "task_run" and held["queue"] == "demo" and held["lease_expires_at"]
    assert agents["render-farm-2"]["status"] == "drained" and agents["render-farm-2"]["holds"] == []


def test_payloads_only_for_admins(env):
    seeded, served = env
    with client(served, seeded.key_a) as admin, client(served, seeded.key_a_viewer) as viewer:
        assert any(f["payload"] is not None for f in all_pages(admin, "/api/v1/firings"))
        assert all(f["payload"] is None for f in all_pages(viewer, "/api/v1/firings"))


# --- tenants ----------------------------------------------------------------------------------

def test_tenant_a_never_sees_b(env):
    seeded, served = env
    with client(served, seeded.key_a) as a, client(served, seeded.key_b) as b:
        a_ids = {r["id"] for r in all_pages(a, "/api/v1/runs", limit=7)}
        b_ids = {r["id"] for r in all_pages(b, "/api/v1/runs", limit=7)}
        assert set(seeded.runs_b) <= b_ids and not (a_ids & b_ids)
        assert set(seeded.runs_a.values()) <= a_ids
        for run in seeded.runs_b:
            for path in (f"/api/v1/runs/{run}", f"/api/v1/runs/{run}/events"):
                r = a.get(path)
                assert r.status_code == 404 and r.json()["error"]["code"] == "FF001", path
        for run in seeded.runs_a.values():
            r = b.get(f"/api/v1/runs/{run}")
            assert r.status_code == 404 and r.json()["error"]["code"] == "FF001"
            # The same answer as a run that does not exist at all.
            assert r.json()["error"]["message"].replace(run, "X") == \
                b.get("/api/v1/runs/00000000-0000-7000-8000-000000000000").json()["error"]["message"].replace(
                    "00000000-0000-7000-8000-000000000000", "X")
        assert {d["name"] for d in all_pages(b, "/api/v1/definitions")} == {"b-job", "b-fail"}
        assert not {"b-job", "b-fail"} & {d["name"] for d in all_pages(a, "/api/v1/definitions")}
        assert b.get("/api/v1/definitions/nightly-report").status_code == 404
        assert all_pages(b, "/api/v1/firings") == [] and all_pages(b, "/api/v1/triggers") == []
        assert {q["queue"] for q in all_pages(b, "/api/v1/queues")} <= {"b", "b-fail"}
        r = b.get("/api/v1/runs", params={"creator": "postgres"})
        assert r.json()["items"] == [], "a filter on A's creator finds nothing of A's"


# --- pagination -------------------------------------------------------------------------------

def test_pages_are_stable_while_runs_are_added(env):
    seeded, served = env
    before = seeded.start_b(7)
    with client(served, seeded.key_b) as c:
        expected = [r["id"] for r in all_pages(c, "/api/v1/runs", limit=200)]
        assert set(expected[:7]) == set(before), "newest first"
        seen, cursor, added = [], None, []
        while True:
            body = c.get("/api/v1/runs", params={"limit": 3, **({"cursor": cursor} if cursor else {})}).json()
            seen += [r["id"] for r in body["items"]]
            added += seeded.start_b(2)  # newer runs arrive between every two pages
            cursor = body["next"]
            if cursor is None:
                break
        assert seen == expected, "no run skipped, none twice, none of those added meanwhile"
        assert not set(added) & set(seen)
        newest = [r["id"] for r in c.get("/api/v1/runs", params={"limit": 2}).json()["items"]]
        assert set(newest) == set(added[-2:]), "a first page asked again shows the new runs"


def test_every_listing_pages(env):
    seeded, served = env
    with client(served, seeded.key_a) as c:
        for path in ["/api/v1/runs", "/api/v1/firings", "/api/v1/definitions", "/api/v1/queues",
                     f"/api/v1/runs/{seeded.runs_a['map']}/events"]:
            def ident(row: dict) -> tuple:
                return tuple(row.get(k) for k in ("id", "seq", "name", "queue", "unit_kind"))
            whole = [ident(r) for r in c.get(path, params={"limit": 200}).json()["items"]]
            paged = [ident(r) for r in all_pages(c, path, limit=1)]
            assert paged == whole and len(whole) >= 2, path


def test_bad_cursors_are_400_with_a_reason(env):
    seeded, served = env
    with client(served, seeded.key_a) as c:
        firings_cursor = c.get("/api/v1/firings", params={"limit": 1}).json()["next"]
        runs_cursor = c.get("/api/v1/runs", params={"limit": 1}).json()["next"]
        cases = {
            "not base64 json": ({"cursor": "not-a-cursor!"}, "not a cursor of this server"),
            "json, not ours": ({"cursor": "eyJmb28iOiAxfQ"}, "not a cursor of this server"),
            "another listing's": ({"cursor": firings_cursor}, "for the 'firings' listing"),
            "other filters": ({"cursor": runs_cursor, "kind": "dag"}, "other filters"),
        }
        for what, (params, reason) in cases.items():
            r = c.get("/api/v1/runs", params=params)
            assert r.status_code == 400, what
            error = r.json()["error"]
            assert error["code"] == "FF003" and reason in error["message"], (what, error)
            assert error["hint"], what
        for params in ({"limit": "0"}, {"limit": "201"}, {"limit": "ten"}, {"limt": "5"}):
            r = c.get("/api/v1/runs", params=params)
            assert r.status_code == 400 and r.json()["error"]["code"] == "FF003", params
        r = c.get("/api/v1/runs/not-a-uuid")
        assert r.status_code == 400 and r.json()["error"]["code"] == "FF003"


# --- /metrics ---------------------------------------------------------------------------------

def parse(text: str) -> dict[str, list]:
    return {f.name: f.samples for f in text_string_to_metric_families(text)}


def samples(families: dict, name: str, **labels) -> dict[tuple, float]:
    out = {}
    for s in families.get(name, []):
        if s.name.endswith("_created"):
            continue
        if all(s.labels.get(k) == v for k, v in labels.items()):
            out[tuple(sorted(s.labels.items()))] = s.value
    return out


RUN_COUNTS = """
SELECT o.slug, x.engine, x.state, count(*)
  FROM (SELECT organization_id, 'dag' AS engine, state::text FROM flowforge.workflow_run
        UNION ALL SELECT organization_id, 'graph', status::text FROM flowforge.graph_run
        UNION ALL SELECT organization_id, 'statemachine', status::text FROM flowforge.machine_run) x
  JOIN flowforge.organization o ON o.id = x.organization_id
 GROUP BY 1, 2, 3
"""

READY_COUNTS = """
SELECT o.slug, t.queue, count(*) FROM flowforge.task_run t JOIN flowforge.organization o ON o.id = t.organization_id
 WHERE t.state = 'ready' AND t.ready_at <= flowforge.now() GROUP BY 1, 2
"""


def test_metrics_tenant_figures_are_the_databases(env):
    seeded, served = env
    with client(served, seeded.key_a) as c:
        r = c.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    families = parse(r.text)
    runs = {(dict(k)["engine"], dict(k)["state"]): v for k, v in samples(families, "flowforge_runs").items()}
    assert {dict(k)["organization"] for k in samples(families, "flowforge_runs")} == {"default"}
    expected = {(e, s): float(n) for org, e, s, n in db_rows(seeded.dsn, RUN_COUNTS) if org == "default"}
    assert runs == expected
    ready = {dict(k)["queue"]: v for k, v in samples(families, "flowforge_queue_ready", unit="task_run").items()}
    assert {q: n for q, n in ready.items() if n} == {q: float(n) for org, q, n in db_rows(seeded.dsn, READY_COUNTS)
                                                   if org == "default"}
    assert ready.get("demo", 0) >= 1, "the triggered run's first task waits in queue demo"
    agents = samples(families, "flowforge_agents")
    assert sum(agents.values()) == db_rows(seeded.dsn, "SELECT count(*) FROM flowforge.agent WHERE organization_id = "
                                           "'00000000-0000-0000-0000-000000000001' AND deleted_at IS NULL")[0][0]
    for name in ("flowforge_claims", "flowforge_completions", "flowforge_failures", "flowforge_retries",
                 "flowforge_trigger_firings"):
        assert name in families, f"{name} is declared (a counter, _total) even before it counts"


def test_metrics_operator_token_labels_every_organization(env):
    seeded, served = env
    with client(served, seeded.token) as c:
        r = c.get("/metrics")
    assert r.status_code == 200, r.text
    families = parse(r.text)
    runs = {(dict(k)["organization"], dict(k)["engine"], dict(k)["state"]): v
            for k, v in samples(families, "flowforge_runs").items()}
    expected = {(org, e, s): float(n) for org, e, s, n in db_rows(seeded.dsn, RUN_COUNTS)}
    assert runs == expected and {k[0] for k in runs} >= {"default", "org-b"}
    with client(served, seeded.token[:-1] + ("x" if seeded.token[-1] != "x" else "y")) as c:
        assert c.get("/metrics").status_code == 401, "a token one character off is just a wrong key"


def test_metrics_counters_count_what_happened_since_the_last_scrape(env):
    seeded, served = env
    with client(served, seeded.key_b) as c:
        first = parse(c.get("/metrics").text)
        base = {name: sum(samples(first, name, queue="b").values())
                for name in ("flowforge_claims", "flowforge_completions", "flowforge_retries", "flowforge_failures")}
        with psycopg.connect(seeded.gateway_dsn, autocommit=False) as conn:
            conn.execute("SELECT flowforge.authenticate(%s)", (seeded.key_b,))
            claimed = conn.execute("SELECT task_run_id, fencing_token FROM flowforge.claim(ARRAY['b'], 'm-worker', "
                                   "'30 seconds', 3)").fetchall()
            assert len(claimed) == 3
            conn.execute("SELECT flowforge.complete(%s, %s, '{}')", claimed[0])
            conn.execute("SELECT flowforge.complete(%s, %s, '{}')", claimed[1])
            conn.execute("SELECT flowforge.fail(%s, %s, 'again', true)", claimed[2])
            conn.commit()
        want = {"flowforge_claims": 3, "flowforge_completions": 2, "flowforge_retries": 1, "flowforge_failures": 0}
        deadline = time.monotonic() + 30  # the window closes 5 s behind the clock (a wait, not an assertion)
        while True:
            time.sleep(1)
            now = parse(c.get("/metrics").text)
            got = {name: sum(samples(now, name, queue="b").values()) - base[name] for name in want}
            if got == want or time.monotonic() > deadline:
                break
        assert got == want
        again = parse(c.get("/metrics").text)
        assert {name: sum(samples(again, name, queue="b").values()) - base[name] for name in want} == want, \
            "a scrape with nothing new adds nothing (no window is counted twice)"


# --- health, login, headers, escaping -------------------------------------------------------

def test_healthz_and_readyz(env):
    seeded, served = env
    with client(served) as c:
        assert c.get("/healthz").json() == {"status": "ok", "database": "ok"}
        ready = c.get("/readyz")
        assert ready.status_code == 200 and ready.json()["status"] == "ok"
        assert ready.json()["schema_version"] == ready.json()["expected_schema_version"]


def test_serve_never_reads_as_a_superuser(env):
    seeded, _ = env
    with Served(ServeSettings(dsn=seeded.dsn)) as superuser_served, client(superuser_served, seeded.key_a) as c:
        for path in ("/api/v1/runs", "/metrics"):
            r = c.get(path)
            assert r.status_code == 503, (path, r.text)
            assert "never as a superuser" in r.json()["error"]["message"]
        assert c.get("/runs").status_code == 503
        assert c.get("/readyz").status_code == 503


def test_security_headers_on_every_response(env):
    seeded, served = env
    with client(served, seeded.key_a) as c:
        for path in ["/runs", "/login", "/api/v1/runs", "/metrics", "/healthz", "/static/app.css", "/nope"]:
            r = c.get(path)
            csp = r.headers.get("content-security-policy", "")
            assert "frame-ancestors 'none'" in csp and "script-src 'self'" in csp, path
            assert "unsafe-inline" not in csp and "unsafe-eval" not in csp, path
            assert r.headers.get("x-frame-options") == "DENY", path
            assert r.headers.get("x-content-type-options") == "nosniff", path
        html = c.get("/runs").text
        assert "<script>" not in html and "style=" not in html, "no inline script or style in a page"


def test_login_sets_an_httponly_cookie_and_pages_need_it(env):
    seeded, served = env
    with client(served) as c:
        r = c.get("/runs")
        assert r.status_code == 303 and r.headers["location"].startswith("/login")
        bad = c.post("/login", data={"api_key": "ffk_wrong_" + "1" * 64, "next": "/runs"})
        assert bad.status_code == 401 and "invalid API key" in bad.text and "set-cookie" not in bad.headers
        ok = c.post("/login", data={"api_key": seeded.key_a, "next": "//evil.example/x"})
        assert ok.status_code == 303 and ok.headers["location"] == "/runs", "never an open redirect"
        cookie = ok.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie and "path=/" in cookie
        page = c.get("/runs")
        assert page.status_code == 200 and seeded.runs_a["graph"][:8] in page.text
        cross = c.post("/login", data={"api_key": seeded.key_a}, headers={"Sec-Fetch-Site": "cross-site"})
        assert cross.status_code == 403
        out = c.post("/logout")
        assert out.status_code == 303 and 'ff_key=""' in out.headers["set-cookie"]


def test_pages_escape_what_they_show(env):
    seeded, served = env
    with client(served, seeded.key_b) as c:
        html = c.get(f"/runs/{seeded.failed_b}").text
    assert "boom &lt;b&gt;not bold&lt;/b&gt;" in html and "<b>not bold</b>" not in html


def test_every_page_renders(env):
    seeded, served = env
    with client(served, seeded.key_a) as c:
        paths = ["/runs", "/runs?kind=graph", "/definitions", "/queues", "/agents", "/firings",
                 "/firings?outcome=refused", *[f"/definitions/{n}" for n in
                                               ("nightly-report", "article-review", "order-delivery",
                                                "photo-thumbnails")],
                 *[f"/runs/{r}" for r in seeded.runs_a.values()]]
        for path in paths:
            r = c.get(path)
            assert r.status_code == 200, (path, r.text[:300])
            assert r.headers["content-type"].startswith("text/html")
        missing = c.get("/runs/00000000-0000-7000-8000-000000000000")
        assert missing.status_code == 404 and "FF001" in missing.text
