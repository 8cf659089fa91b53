"""The lead's leak page in a real Chromium against `golden serve`: a decision swaps the query's
section in place (htmx, CSRF header), and untrusted chunk ids show as text."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from sqlmodel import select

from curation.cli import main as golden
from curation.store.engine import session as new_session
from curation.store.models import LeakFinding, Query, User
from tests.support.browser import golden_serve, log_in, require_chromium
from tests.support.projects import assigned_project, sqlite_store

pytestmark = [pytest.mark.browser, pytest.mark.slow]  # each module starts golden serve and Chromium

WEB = "web-<img src=x onerror=\"window.__leak=1\">"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    require_chromium()
    folder = tmp_path_factory.mktemp("leaks-browser")
    with sqlite_store(folder) as (url, engine):
        setup = assigned_project(engine, folder / "p", n_queries=3, docs_per_query=2)
        corpus = folder / "corpus.jsonl"
        corpus.write_text(json.dumps({"id": WEB, "text": "How to cook dish 2"}) + "\n"
                          + json.dumps({"id": "d001_01", "text": "Our FAQ: how to cook dish 1, step by step."}) + "\n")
        res = CliRunner().invoke(golden, ["leakcheck", "--queries", str(folder / "p" / "queries.jsonl"), "--corpus",
                                          str(corpus), "--out", str(folder / "leaks.jsonl"), "--project", "recipes",
                                          "--db", url, "--workers", "1"])
        assert res.exit_code == 0, res.output
        with golden_serve(url, folder, secret="leaks-secret") as base:
            yield {"base": base, "engine": engine, "project_id": setup.project_id}


def test_lead_drops_a_leaking_query_in_place(server, page):
    from playwright.sync_api import expect

    log_in(page, server["base"], "lena")
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
