"""The lead's leak page in a real Chromium against `golden serve`: a decision swaps the query's
section in place (htmx, CSRF header), untrusted chunk ids and chunk text show as text, every
finding starts undecided, each match is shown in its chunk's text with the span marked, the
counts match the CLI's, a decision for a whole query or a selection at once, filters and paging."""

from __future__ import annotations

import json
import re

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
HOSTILE = '<script>window.__leak = 2</script><b onmouseover="window.__leak = 3">bold</b>'


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    require_chromium()
    folder = tmp_path_factory.mktemp("leaks-browser")
    with sqlite_store(folder) as (url, engine):
        setup = assigned_project(engine, folder / "p", n_queries=3, docs_per_query=2)
        corpus = folder / "corpus.jsonl"
        rows = [{"id": WEB, "text": "How to cook dish 2"},
                {"id": "d001_01", "text": "Our FAQ: how to cook dish 1, step by step."}]
        # q000 is quoted by three pages, one with hostile markup around the match.
        rows += [{"id": f"howto-{i}", "text": f"Intro {i}. {HOSTILE if i == 0 else ''} How to cook dish 0? "
                                              f"Boil water, add salt, wait {i + 5} minutes."} for i in range(3)]
        corpus.write_text("".join(json.dumps(r) + "\n" for r in rows))
        res = CliRunner().invoke(golden, ["leakcheck", "--queries", str(folder / "p" / "queries.jsonl"), "--corpus",
                                          str(corpus), "--out", str(folder / "leaks.jsonl"), "--project", "recipes",
                                          "--db", url, "--workers", "1"])
        assert res.exit_code == 0, res.output
        with golden_serve(url, folder, secret="leaks-secret") as base:
            yield {"base": base, "engine": engine, "project_id": setup.project_id, "cli": res.output}


def test_lead_drops_a_leaking_query_in_place(server, page):
    from playwright.sync_api import expect

    log_in(page, server["base"], "lena")
    page.goto(f"{server['base']}/lead/{server['project_id']}/leaks")
    page.wait_for_load_state("load")
    expect(page.get_by_test_id("count-leak")).to_have_text("3")
    section = page.locator('[data-testid="leak-query"][data-qid="q002"]')
    expect(section.locator(".leak-head code")).to_have_text(WEB)  # the id is text: no image, no handler ran
    assert page.evaluate("window.__leak") is None
    page.evaluate("window.__sameDocument = true")
    section.locator(".leak-decide select[name=decision]").select_option("drop_query")
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


def test_findings_start_undecided_in_context_with_counts_as_the_cli(server, page):
    from playwright.sync_api import expect

    base, pid = server["base"], server["project_id"]
    log_in(page, base, "lena")
    page.goto(f"{base}/lead/{pid}/leaks")
    page.wait_for_load_state("load")
    cli_findings = int(re.search(r"(\d+) findings to review", server["cli"]).group(1))
    expect(page.get_by_test_id("count-findings")).to_have_text(str(cli_findings))
    expect(page.get_by_test_id("words")).to_contain_text(f"{cli_findings} findings to review")
    q0 = page.locator('[data-testid="leak-query"][data-qid="q000"]')
    expect(q0.locator("[data-testid=leak-chunk]")).to_have_count(3)
    # Every chunk nobody decided starts undecided: no decision pre-selected (q002 was decided above).
    values = page.locator('[data-testid="leak-query"]:not([data-qid="q002"]) select[name=decision]').evaluate_all(
        "ss => ss.map(s => s.value)")
    assert len(values) >= 5 and set(values) == {""}
    expect(page.locator("[data-testid=undecided]")).to_have_count(len(values) - 2)  # minus the bulk forms' selects
    first = q0.locator('[data-chunk="howto-0"] [data-testid=context]')
    expect(first.locator("mark")).to_have_text("how to cook dish 0")  # the span, marked
    expect(first).to_contain_text("boil water, add salt, wait 5 minutes")  # the text after it
    expect(first).to_contain_text("<script>window.__leak = 2</script>")  # hostile text shown as text
    first.hover()
    assert page.evaluate("window.__leak") is None and first.locator("b, script").count() == 0
    # The section's counts: chunks and findings (modes) of the query, as stored.
    with new_session(server["engine"]) as db:
        q = db.exec(select(Query).where(Query.qid == "q000")).one()
        rows = db.exec(select(LeakFinding).where(LeakFinding.query_id == q.id)).all()
    expect(q0.get_by_test_id("query-findings")).to_have_text(str(len(rows)))
    expect(q0.get_by_test_id("query-chunks")).to_have_text(str(len({r.chunk_id for r in rows})))


def test_a_decision_for_a_whole_query_and_for_a_selection(server, page):
    from playwright.sync_api import expect

    base, pid = server["base"], server["project_id"]
    log_in(page, base, "lena")
    page.goto(f"{base}/lead/{pid}/leaks")
    page.wait_for_load_state("load")
    page.evaluate("window.__sameDocument = true")
    q0 = page.locator('[data-testid="leak-query"][data-qid="q000"]')
    # A selection: two of the three chunks are kept as false alarms.
    q0.locator('[data-chunk="howto-1"] input[name=finding]').check()
    q0.locator('[data-chunk="howto-2"] input[name=finding]').check()
    q0.locator(".leak-bulk select[name=decision]").select_option("keep")
    q0.get_by_role("button", name="for the ticked chunks").click()
    expect(q0.locator('[data-chunk="howto-1"]')).to_have_attribute("data-decision", "keep")
    expect(q0.locator('[data-chunk="howto-2"]')).to_have_attribute("data-decision", "keep")
    expect(q0.locator('[data-chunk="howto-0"]')).to_have_attribute("data-decision", "")
    # The whole query: every chunk excluded at once.
    q0.locator(".leak-bulk select[name=decision]").select_option("exclude_chunk")
    q0.get_by_role("button", name="for all 3 chunks of this query").click()
    expect(q0.locator("[data-decision=exclude_chunk]")).to_have_count(3)
    expect(q0.get_by_test_id("query-undecided")).to_have_text("0")
    assert page.evaluate("window.__sameDocument") is True
    with new_session(server["engine"]) as db:
        q = db.exec(select(Query).where(Query.qid == "q000")).one()
        lena = db.exec(select(User).where(User.name == "lena")).one()
        rows = db.exec(select(LeakFinding).where(LeakFinding.query_id == q.id)).all()
    assert rows and {(r.decision, r.decided_by_id) for r in rows} == {("exclude_chunk", lena.id)}


def test_filter_by_mode_and_score_and_page(server, page):
    from playwright.sync_api import expect

    base, pid = server["base"], server["project_id"]
    log_in(page, base, "lena")
    page.goto(f"{base}/lead/{pid}/leaks?per_page=1")
    page.wait_for_load_state("load")
    expect(page.locator("[data-testid=leak-query]")).to_have_count(1)
    expect(page.get_by_test_id("pager")).to_contain_text("page 1 of")
    first = page.locator("[data-testid=leak-query]").get_attribute("data-qid")
    page.click("text=next →")
    expect(page.get_by_test_id("pager")).to_contain_text("page 2 of")
    assert page.locator("[data-testid=leak-query]").get_attribute("data-qid") != first
    # Only jaccard matches scoring at least 0.99: the page that is exactly query q002.
    page.goto(f"{base}/lead/{pid}/leaks")
    page.select_option("[data-testid=leak-filter] select[name=mode]", "jaccard")
    page.fill("[data-testid=leak-filter] input[name=min_score]", "0.99")
    page.click("[data-testid=leak-filter] button")
    expect(page.locator("[data-testid=leak-query]")).to_have_count(1)
    expect(page.locator("[data-testid=leak-query]")).to_have_attribute("data-qid", "q002")
    expect(page.get_by_test_id("matching")).to_have_text("1 chunk of 1 query match")


def test_review_by_keyboard(server, page):
    """j / k move between chunks, a letter decides the current chunk (htmx, in place), x ticks it and
    the decision then goes to the ticked chunks; the page's counters change in place."""
    from playwright.sync_api import expect

    base, pid = server["base"], server["project_id"]
    log_in(page, base, "lena")
    page.goto(f"{base}/lead/{pid}/leaks")
    page.wait_for_load_state("load")
    page.evaluate("window.__sameDocument = true")
    page.locator("h1").click()  # focus on the page, not in a field
    page.keyboard.press("j")
    first = page.locator("li.leak-chunk.current")
    expect(first).to_have_count(1)
    chunk = first.get_attribute("data-chunk")
    page.keyboard.press("j")
    expect(page.locator("li.leak-chunk.current")).not_to_have_attribute("data-chunk", chunk)
    page.keyboard.press("k")
    expect(page.locator("li.leak-chunk.current")).to_have_attribute("data-chunk", chunk)
    page.keyboard.press("r")
    current = page.locator("li.leak-chunk.current")
    expect(current).to_have_attribute("data-decision", "rejudge")
    expect(current).to_have_attribute("data-chunk", chunk)  # the same chunk stays current after the swap
    page.keyboard.press("x")
    expect(current.locator("input[name=finding]")).to_be_checked()
    page.keyboard.press("Shift+N")  # Shift and Caps Lock work too
    expect(page.locator("li.leak-chunk.current")).to_have_attribute("data-decision", "keep")
    assert page.evaluate("window.__sameDocument") is True  # decided in place, no reload
    with new_session(server["engine"]) as db:
        rows = db.exec(select(LeakFinding).where(LeakFinding.chunk_id == chunk)).all()
    assert rows and any(r.decision == "keep" for r in rows)
