"""Qualification in a real Chromium against `golden serve`: a new judge is sent to the qualification
instead of their queue, fails once (seeing the teaching after each answer), retries with fresh
pairs, passes, and only then gets their main pairs."""

from __future__ import annotations

import pytest

from tests.support.browser import golden_serve, log_in, require_chromium
from tests.support.projects import assigned_project, sqlite_store
from tests.support.qualified import add_known_pairs, expected_grade, require_qualification

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    require_chromium()
    folder = tmp_path_factory.mktemp("qualification")
    with sqlite_store(folder) as (url, engine):
        setup = assigned_project(engine, folder / "recipes", n_queries=6, docs_per_query=5, overlap=3,
                                 judges=("alice", "bob", "nina"))
        add_known_pairs(engine, setup.project_id, avoid_judge="nina", n=12)
        require_qualification(engine, setup.project_name, pairs=4, pass_mark=0.75, retries=1)
        with golden_serve(url, folder, secret="browser-qualification-secret") as base:
            yield {"base": base, "setup": setup}


def _answer_all(page, *, right: int, total: int = 4) -> list[str]:
    """Answer the open attempt's ``total`` pairs (the first ``right`` as expected), reading each
    teaching. Every step waits on what the next page must show: a count() taken right after a click
    can still read the page before, where no pair is shown, and end the attempt early."""
    from playwright.sync_api import expect

    seen = []
    for position in range(1, total + 1):
        heading = page.locator(".qualification-pair .eyebrow").first
        expect(heading).to_contain_text(f"Qualification pair {position} of {total}")
        docid = page.locator("#doc-title").inner_text().removeprefix("Recipe ")
        seen.append(docid)
        grade = expected_grade(docid) if position <= right else (expected_grade(docid) + 1) % 3
        if position == 1:
            page.keyboard.press(str(grade))  # the digit keys answer, as on the judging page
        else:
            page.click(f"button[data-grade='{grade}']")
        teaching = page.locator("[data-testid=teaching]")
        expect(teaching).to_be_visible()
        expect(teaching).to_contain_text(f"Qualification pair {position} of {total}")
        expect(teaching).to_have_attribute("data-exact", "yes" if position <= right else "no")
        expect(page.locator("[data-testid=expected-grades]")).to_contain_text(str(expected_grade(docid)))
        expect(page.locator("[data-testid=teaching-reason]")).not_to_be_empty()
        nxt = page.locator("[data-testid=next-qualification]")
        if position < total:
            nxt.click()
        else:
            expect(nxt).to_have_count(0)  # the last answer ends the attempt
            expect(page.locator("[data-testid=qualification-pair]")).to_have_count(0)
    return seen


def test_qualification_blocks_main_work_until_passed(server, page):
    from playwright.sync_api import expect

    base, setup = server["base"], server["setup"]
    log_in(page, base, "nina", path=f"/login?next=/projects/{setup.project_id}/judge")
    expect(page).to_have_url(f"{base}/projects/{setup.project_id}/qualify")
    expect(page.locator("#progress-counts")).to_have_count(0)  # no pair of the queue
    first = _answer_all(page, right=1)
    expect(page.locator("[data-testid=qualification-result]")).to_contain_text("Not passed")
    # the judging page still sends her back
    page.goto(f"{base}/projects/{setup.project_id}/judge")
    expect(page).to_have_url(f"{base}/projects/{setup.project_id}/qualify")
    page.click("[data-testid=retry]")
    second = _answer_all(page, right=3)
    assert len(first) == len(second) == 4 and not set(first) & set(second)  # fresh pairs
    expect(page.locator("[data-testid=qualification-result]")).to_contain_text("You passed")
    page.click("[data-testid=start-judging]")
    expect(page.locator("#pair")).to_be_visible()
    expect(page.locator("#progress-counts")).to_contain_text("0 / ")
    docid = page.locator("#doc-title").inner_text().removeprefix("Recipe ")
    assert docid not in first + second  # a main (or overlap) pair, not a qualification one
    page.keyboard.press("1")
    expect(page.locator("#progress-counts")).to_contain_text("1 / ")
