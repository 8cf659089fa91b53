"""The judge's side of issue 14 in a real Chromium against `golden serve`: an unsure answer sent
with the judge's best grade reaches the lead's "Unsure answers" queue and does not block the export;
skip after back keeps the answer."""

from __future__ import annotations

import json

import pytest
from sqlmodel import select

from curation.agree.labels import final_labels
from curation.export.versions import export_version
from curation.store.engine import session as new_session
from curation.store.models import Judgment, User
from curation.store.projects import get_project
from tests.support.browser import golden_serve, log_in, new_page, require_chromium
from tests.support.projects import assigned_project, sqlite_store

pytestmark = [pytest.mark.browser, pytest.mark.slow]  # each module starts golden serve and Chromium


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    require_chromium()
    folder = tmp_path_factory.mktemp("judgeday")
    with sqlite_store(folder) as (url, engine):
        solo = assigned_project(engine, folder / "solo", name="solo", n_queries=1, docs_per_query=3,
                                judges=("carol",), overlap=0)
        pairs = assigned_project(engine, folder / "pairs", name="pairs", n_queries=3, docs_per_query=3,
                                 judges=("dave",), overlap=0, lead="lena")
        with golden_serve(url, folder, secret="judge-day-secret", threads=4) as base:
            yield {"base": base, "engine": engine, "solo": solo, "pairs": pairs, "folder": folder}


def labels_of(engine, name: str) -> list[Judgment]:
    with new_session(engine) as db:
        return list(db.exec(
            select(Judgment).join(User, User.id == Judgment.judge_id).where(User.name == name).order_by(Judgment.id)
        ))


def test_unsure_with_a_grade_reaches_the_lead_and_the_export_is_not_blocked(server, page, browser):
    from playwright.sync_api import expect

    base, engine = server["base"], server["engine"]
    log_in(page, base, "carol", path="/")
    page.wait_for_selector("#pair")
    page.wait_for_load_state("load")
    unsure_doc = page.inner_text("#doc-text")
    page.keyboard.press("u")
    expect(page.locator("#note")).to_be_focused()
    page.keyboard.type("a recipe or a blog post? 2 readings")  # digits in the note stay in the note
    page.keyboard.press("Enter")  # ends the note
    expect(page.locator("#unsure")).to_have_attribute("open", "")
    page.keyboard.press("1")  # the best grade sends it
    expect(page.locator("#progress-counts")).to_contain_text("1 / 3")
    for n in (2, 3):
        page.keyboard.press("2")
        expect(page.locator("#progress-counts")).to_contain_text(f"{n} / 3")
    rows = labels_of(engine, "carol")
    assert [(r.grade, r.unsure, r.note) for r in rows] == [
        (1, True, "a recipe or a blog post? 2 readings"), (2, False, None), (2, False, None)]

    # every pair has a grade: the export goes through, flagging the unsure label
    with new_session(engine) as db:
        res = export_version(db, get_project(db, "solo"), "v1", out_dir=server["folder"] / "exports")
    assert res.manifest["counts"]["unsure"] == {"labels": 1, "decided_by_lead": 0}
    records = [json.loads(x) for x in (server["folder"] / "exports" / "v1" / "qrels.jsonl").read_text().splitlines()]
    assert [r["grade"] for r in records if r.get("unsure")] == [1]

    # the lead finds it in "Unsure answers", with the note, and changes the grade by keyboard
    with new_page(browser) as lead:
        log_in(lead, base, "lena", path=f"/lead/{server['solo'].project_id}/unsure")
        expect(lead.locator("[data-testid=document]")).to_have_text(unsure_doc)
        expect(lead.locator("[data-testid=labels]")).to_contain_text("a recipe or a blog post? 2 readings")
        expect(lead.locator("input[name=grade][value='1']")).to_be_checked()  # the judge's best guess
        lead.keyboard.press("2")
        lead.keyboard.press("Enter")
        expect(lead.locator("[data-testid=unsure-empty]")).to_be_visible()
    with new_session(engine) as db:
        labels = final_labels(db, get_project(db, "solo"))
    changed = [f for f in labels if f.source == "adjudicated"]
    assert [(f.grade, f.reason) for f in changed] == [(2, "unsure answer (grade 1) changed to 2 by the lead")]


def test_skip_after_back_keeps_the_answer(server, page):
    from playwright.sync_api import expect

    log_in(page, server["base"], "dave", path="/")
    page.wait_for_selector("#pair")
    page.wait_for_load_state("load")
    first = page.inner_text("#doc-text")
    page.keyboard.press("2")
    expect(page.locator("#progress-counts")).to_contain_text("1 / 9")
    second = page.inner_text("#doc-text")
    page.keyboard.press("b")
    expect(page.locator(".revisit")).to_contain_text("You answered this pair before")
    assert page.inner_text("#doc-text") == first
    page.keyboard.press("s")
    expect(page.locator("#progress-counts")).to_contain_text("1 / 9")  # the counter does not drop
    assert page.inner_text("#doc-text") == second
    seen = []
    for i in range(8):
        seen.append(page.inner_text("#doc-text"))
        page.keyboard.press("0")
        expect(page.locator("#progress-counts")).to_contain_text(f"{i + 2} / 9")
    assert first not in seen  # the answered pair did not come back
    expect(page.locator(".done")).to_contain_text("All done")
    grades = [(r.grade, r.skipped) for r in labels_of(server["engine"], "dave")]
    assert grades[:2] == [(2, False), (None, True)] and grades[2:] == [(0, False)] * 8
