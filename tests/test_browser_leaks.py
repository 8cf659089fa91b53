"""The lead's leak page in a real Chromium against `golden serve`: a decision swaps the query's
section in place (htmx, CSRF header), and untrusted chunk ids show as text."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlmodel import select

from curation.cli import main as golden
from curation.migrate import upgrade
from curation.models import LeakFinding, Query, User
from curation.store import make_engine, session as new_session
from judging_setup import PASSWORD, build_project
from test_browser_judging import CHROMIUM, CHROMIUM_ARGS, free_port, wait_until_up

pytestmark = pytest.mark.browser

WEB = "web-<img src=x onerror=\"window.__leak=1\">"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed")
    folder = tmp_path_factory.mktemp("leaks-browser")
    url = f"sqlite:///{folder / 'golden.db'}"
    engine = make_engine(url)
    upgrade(engine)
    setup = build_project(engine, folder / "p", n_queries=3, docs_per_query=2)
    corpus = folder / "corpus.jsonl"
    corpus.write_text(json.dumps({"id": WEB, "text": "How to cook dish 2"}) + "\n"
                      + json.dumps({"id": "d001_01", "text": "Our FAQ: how to cook dish 1, step by step."}) + "\n")
    res = CliRunner().invoke(golden, ["leakcheck", "--queries", str(folder / "p" / "queries.jsonl"), "--corpus",
                                      str(corpus), "--out", str(folder / "leaks.jsonl"), "--project", "recipes",
                                      "--db", url, "--workers", "1"])
    assert res.exit_code == 0, res.output
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-c", "from curation.cli import main; main()", "serve", "--db", url, "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "GOLDEN_SECRET_KEY": "leaks-secret"},
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(base + "/login", proc)
        yield {"base": base, "engine": engine, "project_id": setup.project_id}
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        engine.dispose()


@pytest.fixture
def page():
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.set_default_timeout(10_000)
        yield page
        browser.close()


def test_lead_drops_a_leaking_query_in_place(server, page):
    from playwright.sync_api import expect

    page.goto(server["base"] + "/login")
    page.fill("#username", "lena")
    page.fill("#password", PASSWORD)
    page.press("#password", "Enter")
    page.wait_for_load_state("load")
    page.goto(f"{server['base']}/lead/{server['project_id']}/leaks")
    page.wait_for_load_state("load")
    expect(page.get_by_test_id("count-leak")).to_have_text("2")
    section = page.locator('[data-testid="leak-query"][data-qid="q002"]')
    expect(section.locator("code")).to_have_text(WEB)  # the id is text: no image, no handler ran
    assert page.evaluate("window.__leak") is None
    page.evaluate("window.__sameDocument = true")
    section.locator("select[name=decision]").select_option("drop_query")
    section.get_by_role("button", name="Record").click()
    expect(section.get_by_test_id("query-status")).to_have_text("dropped")
    expect(section.get_by_test_id("decided")).to_contain_text("Drop the query — lena")
    assert page.evaluate("window.__sameDocument") is True  # swapped by htmx, no page load
    with new_session(server["engine"]) as db:
        q = db.exec(select(Query).where(Query.qid == "q002")).one()
        lena = db.exec(select(User).where(User.name == "lena")).one()
        rows = db.exec(select(LeakFinding).where(LeakFinding.query_id == q.id)).all()
    assert q.status == "dropped"
    assert rows and all(r.decision == "drop_query" and r.decided_by_id == lena.id and r.decided_at for r in rows)
