"""``flowforge serve`` in a real browser (issue 20): headless Chromium driven by Selenium.

The seeded database of ``helpers_serve`` (the demo's runs), one server on a
free port, one browser: sign in through the form, open the run list, a DAG
run, a graph run, a machine run and a fan-out, and check that the drawings and
states are on the page as the browser rendered them (SVG nodes with their
states, the path walked with visit counts, the machine's current state, the
progress bar) and that the page ran no inline script (the CSP would have
refused it: the console says so).  Screenshots go to tests/artifacts/ (git
ignores it); with FLOWFORGE_DOC_SCREENSHOTS=1 they are also written to
docs/img/ for docs/ui.md.  Needs Debian's ``chromium`` and ``chromium-driver``
(``make system-deps`` installs them).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

from helpers_serve import drop_logins, seed, serve

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "tests" / "artifacts"
DOC_IMAGES = REPO / "docs" / "img"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


@pytest.fixture(scope="module")
def site(admin_dsn):
    from conftest import create_database, drop_database

    for tool in (CHROMIUM, CHROMEDRIVER):
        if not os.access(tool, os.X_OK):
            pytest.fail(f"{tool} missing: install Debian's chromium and chromium-driver (make system-deps)",
                        pytrace=False)
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


@pytest.fixture(scope="module")
def browser(site):
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,900",
                "--disable-extensions", "--no-first-run"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    seeded, served = site
    try:
        driver.get(served.url + "/runs")
        WebDriverWait(driver, 10).until(EC.presence_of_element_located((By.ID, "api_key")))
        assert "/login" in driver.current_url, "a page without a key sends the browser to the login form"
        driver.find_element(By.ID, "api_key").send_keys(seeded.key_a)
        driver.find_element(By.CSS_SELECTOR, "main form button[type=submit]").click()
        WebDriverWait(driver, 10).until(EC.presence_of_element_located((By.ID, "runs")))
        yield driver
    finally:
        driver.quit()


def shoot(driver, name: str) -> Path:
    """A screenshot of the whole page (the window grown to its height)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    height = driver.execute_script("return Math.max(document.body.scrollHeight, document.documentElement.scrollHeight)")
    driver.set_window_size(1400, min(max(int(height) + 20, 600), 4000))
    path = ARTIFACTS / f"{name}.png"
    driver.save_screenshot(str(path))
    driver.set_window_size(1400, 900)
    if os.environ.get("FLOWFORGE_DOC_SCREENSHOTS"):
        DOC_IMAGES.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, DOC_IMAGES / f"ui-{name}.png")
    assert path.stat().st_size > 10_000, f"{name}: the screenshot is not blank"
    return path


def open_page(driver, served, path: str, ready: str):
    driver.get(served.url + path)
    WebDriverWait(driver, 10).until(EC.presence_of_element_located((By.CSS_SELECTOR, ready)))


def nodes(driver) -> dict[str, dict]:
    """The drawing's nodes as the browser has them: key -> state, classes, the two lines of text."""
    out = {}
    for g in driver.find_elements(By.CSS_SELECTOR, "#picture svg g.node"):
        texts = g.find_elements(By.CSS_SELECTOR, "text")
        out[g.get_attribute("data-node")] = {"state": g.get_attribute("data-state"),
                                             "classes": set(g.get_attribute("class").split()),
                                             "label": texts[0].text, "sub": texts[1].text,
                                             "shown": g.find_element(By.CSS_SELECTOR, "rect").is_displayed()}
    return out


def no_csp_violations(driver) -> None:
    messages = [entry["message"] for entry in driver.get_log("browser")]
    assert not [m for m in messages if "Content Security Policy" in m], messages


def test_run_list(browser, site):
    seeded, served = site
    open_page(browser, served, "/runs", "#runs tbody tr[data-run]")
    rows = browser.find_elements(By.CSS_SELECTOR, "#runs tbody tr[data-run]")
    kinds = {r.get_attribute("data-kind") for r in rows}
    assert kinds == {"dag", "graph", "statemachine"}
    shown = {r.get_attribute("data-run") for r in rows}
    assert set(seeded.runs_a.values()) <= shown and not set(seeded.runs_b) & shown, "tenant A's runs only"
    states = {r.get_attribute("data-state") for r in rows}
    assert "succeeded" in states
    assert browser.find_element(By.CSS_SELECTOR, "#runs progress").is_displayed(), "a DAG's progress bar"
    shoot(browser, "runs")
    # The engine filter, through the form.
    browser.find_element(By.CSS_SELECTOR, "#run-filters select[name=kind] option[value=graph]").click()
    browser.find_element(By.CSS_SELECTOR, "#run-filters button[type=submit]").click()
    WebDriverWait(browser, 10).until(EC.url_contains("kind=graph"))
    assert {r.get_attribute("data-kind") for r in browser.find_elements(By.CSS_SELECTOR, "#runs tr[data-run]")} == {"graph"}
    # Auto-refresh: the picker sets the page's period (app.js reloads it; not waited for here).
    open_page(browser, served, "/runs?refresh=5", "#runs")
    assert browser.find_element(By.TAG_NAME, "body").get_attribute("data-refresh") == "5"
    no_csp_violations(browser)


def test_dag_run(browser, site):
    seeded, served = site
    open_page(browser, served, f"/runs/{seeded.runs_a['dag']}", "#picture svg")
    drawn = nodes(browser)
    assert set(drawn) == {"extract", "clean_orders", "clean_customers", "fetch_rates", "join", "render_pdf",
                          "update_dashboard", "email"}
    assert {n["state"] for n in drawn.values()} == {"succeeded"} and all(n["shown"] for n in drawn.values())
    assert "attempt 2" in drawn["fetch_rates"]["sub"], "the retried task shows its attempt"
    edges = browser.find_elements(By.CSS_SELECTOR, "#picture svg g.edge")
    assert len(edges) == 10
    assert browser.find_element(By.ID, "run-facts").get_attribute("data-state") == "succeeded"
    tasks = {r.get_attribute("data-task"): r.get_attribute("data-state")
             for r in browser.find_elements(By.CSS_SELECTOR, "#tasks tr[data-task]")}
    assert tasks == {k: "succeeded" for k in drawn}
    kinds = [r.get_attribute("data-kind") for r in browser.find_elements(By.CSS_SELECTOR, "#events tr[data-kind]")]
    assert "retry_scheduled" in kinds
    shoot(browser, "dag-run")
    no_csp_violations(browser)


def test_graph_run(browser, site):
    seeded, served = site
    open_page(browser, served, f"/runs/{seeded.runs_a['graph']}", "#picture svg")
    drawn = nodes(browser)
    assert set(drawn) == {"draft", "review", "publish", "done"}
    assert drawn["draft"]["sub"] == "visited ×3" and drawn["review"]["sub"] == "visited ×3"
    assert "current" in drawn["done"]["classes"] and "final" in drawn["done"]["classes"]
    walked = {(e.get_attribute("data-from"), e.get_attribute("data-to")): e.get_attribute("data-walked")
              for e in browser.find_elements(By.CSS_SELECTOR, "#picture svg g.edge.walked")}
    assert walked == {("draft", "review"): "3", ("review", "draft"): "2", ("review", "publish"): "1",
                      ("publish", "done"): "1"}, "the path's edges, each with how often it was taken"
    path = [s.text for s in browser.find_elements(By.CSS_SELECTOR, "#graph-path .step")]
    assert path == ["draft", "review", "draft", "review", "draft", "review", "publish", "done"]
    shoot(browser, "graph-run")
    no_csp_violations(browser)


def test_machine_run(browser, site):
    seeded, served = site
    open_page(browser, served, f"/runs/{seeded.runs_a['statemachine']}", "#picture svg")
    drawn = nodes(browser)
    assert set(drawn) >= {"awaiting_payment", "shipping", "needs_attention", "delivered", "cancelled", "expired"}
    current = [k for k, n in drawn.items() if "current" in n["classes"]]
    assert current == ["delivered"] and "current" in drawn["delivered"]["sub"]
    assert drawn["shipping"]["state"] == "visited" and drawn["needs_attention"]["state"] == "unvisited"
    assert browser.find_element(By.ID, "current-state").text == "delivered"
    context = browser.find_element(By.ID, "machine-context").text
    assert '"paid_amount": 120' in context and '"tracking": "TRK-' in context
    history = [r.get_attribute("data-outcome") for r in browser.find_elements(By.CSS_SELECTOR, "#history tr")]
    assert history.count("entered") == 3
    shoot(browser, "machine-run")
    no_csp_violations(browser)


def test_fan_out_and_other_pages(browser, site):
    seeded, served = site
    open_page(browser, served, f"/runs/{seeded.runs_a['map']}", "#fanouts .fanout")
    bar = browser.find_element(By.CSS_SELECTOR, "#fanouts .fanout[data-fanout=resize] progress")
    assert (bar.get_attribute("value"), bar.get_attribute("max")) == ("24", "24")
    assert "24/24" in nodes(browser)["resize"]["sub"]
    shoot(browser, "fan-out-run")
    for path, ready, name in (("/definitions/order-delivery", "#picture svg", "definition"),
                              ("/queues", "#queues tr[data-queue]", "queues"),
                              ("/agents", "#agents tr[data-agent]", "agents"),
                              ("/firings", "#firings tr[data-outcome]", "triggers")):
        open_page(browser, served, path, ready)
        shoot(browser, name)
    outcomes = {r.get_attribute("data-outcome") for r in browser.find_elements(By.CSS_SELECTOR, "#firings tr[data-outcome]")}
    open_page(browser, served, "/agents", "#agents tr[data-agent]")
    statuses = {r.get_attribute("data-agent"): r.get_attribute("data-status")
                for r in browser.find_elements(By.CSS_SELECTOR, "#agents tr[data-agent]")}
    assert statuses["render-farm-1"] == "active" and statuses["render-farm-2"] == "drained"
    held = [(r.get_attribute("data-agent"), r.get_attribute("data-what"))
            for r in browser.find_elements(By.CSS_SELECTOR, "#holdings tr[data-what]")]
    assert held == [("render-farm-1", "task_run")]
    assert outcomes == {"started", "refused"}
    no_csp_violations(browser)
