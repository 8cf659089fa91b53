"""The judge's hands in a real Chromium against `golden serve` with the real minimum time between
showing a pair and its answer (250 ms): a double press labels one pair, not the next one unseen;
Unsure keeps the pair in view and its note, on a wide screen and on a phone."""

from __future__ import annotations

import pytest
from sqlmodel import select

from curation.store.engine import session as new_session
from curation.store.models import Judgment, User
from tests.support.browser import golden_serve, log_in, new_page, require_chromium
from tests.support.projects import assigned_project, sqlite_store

pytestmark = [pytest.mark.browser, pytest.mark.slow]

JUDGES = ("dan", "una", "pho", "key", "zed")
QUIET_MS = 600  # a little over the page's quiet time after a pair is painted (2 x 250 ms)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    require_chromium()
    folder = tmp_path_factory.mktemp("keys")
    with sqlite_store(folder) as (url, engine):
        setup = assigned_project(engine, folder / "recipes", name="recipes", n_queries=10, docs_per_query=5,
                                 judges=JUDGES, overlap=0)
        held = assigned_project(engine, folder / "held", name="held", n_queries=2, docs_per_query=2,
                                judges=("hal", "hil"), overlap=1, hold=True)
        with golden_serve(url, folder, secret="judge-keys-secret", threads=4, min_answer_ms=250) as base:
            yield {"base": base, "engine": engine, "project": setup.project_id, "held": held.project_id}


def judged(engine, name: str) -> list[Judgment]:
    with new_session(engine) as db:
        return list(db.exec(
            select(Judgment).join(User, User.id == Judgment.judge_id).where(User.name == name).order_by(Judgment.id)
        ))


def first_pair(page, base: str, name: str) -> None:
    log_in(page, base, name, path="/")
    page.wait_for_selector("#pair")
    page.wait_for_load_state("load")
    page.wait_for_timeout(QUIET_MS)


def in_viewport(page, selector: str) -> bool:
    return page.evaluate(
        """s => { const e = document.querySelector(s); if (!e) return false; const r = e.getBoundingClientRect();
             return r.width > 0 && r.height > 0 && r.top >= 0 && r.bottom <= innerHeight; }""", selector)


def test_a_double_press_labels_one_pair(server, page):
    """Press 1 twice, 30, 100 and 400 ms apart: one judgment each time, for the pair on screen; a
    key held down (auto-repeat) answers once too."""
    first_pair(page, server["base"], "dan")
    count = 0
    for gap in (30, 100, 400):
        token = page.locator("form.grade-bar input[name=token]").get_attribute("value")
        page.keyboard.press("1")
        page.wait_for_timeout(gap)
        page.keyboard.press("1")
        page.wait_for_timeout(1000)  # both presses answered or ignored by now
        count += 1
        rows = judged(server["engine"], "dan")
        assert len(rows) == count, f"{gap} ms apart: {len(rows) - count + 1} judgments"
        assert rows[-1].client_token == token and rows[-1].grade == 1
    page.keyboard.down("2")
    page.wait_for_timeout(QUIET_MS)
    page.keyboard.down("2")  # auto-repeat of the held key
    page.keyboard.up("2")
    page.wait_for_timeout(800)
    rows = judged(server["engine"], "dan")
    assert len(rows) == count + 1 and rows[-1].grade == 2
    assert all((r.answered_at - r.shown_at).total_seconds() >= 0.25 for r in rows)


def test_shift_and_caps_lock_letters_and_shifted_digits_work(server, page):
    from playwright.sync_api import expect

    first_pair(page, server["base"], "key")
    page.keyboard.press("Shift+G")
    expect(page.locator("dialog#guidelines")).to_be_visible()
    page.keyboard.press("Shift+G")
    expect(page.locator("dialog#guidelines")).to_be_hidden()
    page.keyboard.press("Shift+Digit1")  # "!" on this layout: grade 1
    expect(page.locator("#progress-counts")).to_contain_text("1 / ")
    page.wait_for_timeout(QUIET_MS)
    page.keyboard.press("CapsLock")
    page.keyboard.press("S")  # Caps Lock: skip
    expect(page.locator("#progress-counts")).to_contain_text("1 / ")
    page.wait_for_timeout(QUIET_MS)
    page.keyboard.press("Shift+U")
    expect(page.locator("#note")).to_be_focused()
    rows = judged(server["engine"], "key")
    assert [(r.grade, r.skipped) for r in rows] == [(1, False), (None, True)]


def test_unsure_keeps_the_pair_in_view_and_its_note_on_a_wide_screen(server, browser):
    from playwright.sync_api import expect

    with new_page(browser, viewport={"width": 1280, "height": 800}) as page:
        first_pair(page, server["base"], "una")
        page.evaluate("window.scrollTo(0, 40)")
        before = page.evaluate("window.scrollY")
        page.keyboard.press("u")
        expect(page.locator("#note")).to_be_focused()
        page.wait_for_timeout(200)
        assert page.evaluate("window.scrollY") == before
        assert in_viewport(page, "#query-text") and in_viewport(page, "#note")
        page.keyboard.type("two readings")
        page.locator("form.grade-bar button[name=grade][value='1']").click()  # the grade bar, by pointer
        expect(page.locator("#progress-counts")).to_contain_text("1 / ")
        page.wait_for_timeout(QUIET_MS)
        # by key: the note, Enter, then the digit
        page.keyboard.press("u")
        page.keyboard.type("a second doubt")
        page.keyboard.press("Enter")
        page.keyboard.press("2")
        expect(page.locator("#progress-counts")).to_contain_text("2 / ")
    rows = judged(server["engine"], "una")
    assert [(r.grade, r.unsure, r.note) for r in rows] == [(1, True, "two readings"), (2, True, "a second doubt")]


def test_on_a_phone_the_bottom_bar_becomes_the_unsure_grades(server, browser):
    from playwright.sync_api import expect

    with new_page(browser, viewport={"width": 375, "height": 812}, is_mobile=True, has_touch=True) as phone:
        first_pair(phone, server["base"], "pho")
        assert phone.locator("form.grade-bar").is_visible()
        phone.locator("#unsure summary").tap()
        expect(phone.locator("form.grade-bar")).to_be_hidden()
        bar = phone.locator("#unsure .unsure-grades")
        expect(bar).to_be_visible()
        assert in_viewport(phone, "#note") and in_viewport(phone, "#unsure .unsure-grades")
        assert phone.evaluate("document.querySelector('#unsure form').getBoundingClientRect().bottom") == 812
        assert phone.evaluate("document.documentElement.scrollWidth") <= 375
        phone.locator("#note").fill("is a stew a soup?")
        bar.locator("[data-unsure-key='1']").tap()
        expect(phone.locator("#progress-counts")).to_contain_text("1 / ")
        expect(phone.locator("form.grade-bar")).to_be_visible()  # the next pair: the grade bar again
    rows = judged(server["engine"], "pho")
    assert [(r.grade, r.unsure, r.note) for r in rows] == [(1, True, "is a stew a soup?")]


def test_the_last_answer_is_shown_and_z_undoes_it(server, page):
    from playwright.sync_api import expect

    first_pair(page, server["base"], "zed")
    shown = page.inner_text("#doc-text")
    page.keyboard.press("1")
    expect(page.locator("#last-answer")).to_contain_text("Last: 1 Partially relevant")
    expect(page.locator("#last-answer")).to_contain_text("B to change")
    assert len(judged(server["engine"], "zed")) == 1
    page.wait_for_timeout(QUIET_MS)
    page.keyboard.press("Shift+Z")
    expect(page.locator("#pair .message.info")).to_contain_text("undone")
    assert page.inner_text("#doc-text") == shown
    assert judged(server["engine"], "zed") == []
    expect(page.locator("#progress-counts")).to_contain_text("0 / ")
    page.wait_for_timeout(QUIET_MS)
    page.keyboard.press("2")
    expect(page.locator("#last-answer")).to_contain_text("Last: 2 Highly relevant")
    assert [r.grade for r in judged(server["engine"], "zed")] == [2]


def test_compact_grades_are_remembered_for_the_judge(server, browser):
    from playwright.sync_api import expect

    with new_page(browser, viewport={"width": 1280, "height": 800}) as page:
        first_pair(page, server["base"], "key")
        description = page.locator("form.grade-bar .grade .desc").first
        expect(description).to_be_visible()
        tall = page.evaluate("document.querySelector('form.grade-bar').offsetHeight")
        page.keyboard.press("c")
        expect(description).to_be_hidden()
        assert page.evaluate("document.querySelector('form.grade-bar').offsetHeight") < tall
        expect(page.locator("[data-toggle-compact]")).to_have_attribute("aria-pressed", "true")
        page.keyboard.press("g")  # the descriptions are behind G
        expect(page.locator("dialog#guidelines .scale dd").first).to_be_visible()
        page.keyboard.press("g")
        page.reload()
        page.wait_for_load_state("load")
        expect(description).to_be_hidden()  # remembered
        page.locator("[data-toggle-compact]").click()
        expect(description).to_be_visible()


def test_a_judge_waiting_for_held_work_sees_a_notice_when_it_is_released(server, page):
    from playwright.sync_api import expect

    from curation.judge import assignment
    from curation.store import projects

    first_pair(page, server["base"], "hal")
    page.keyboard.press("1")
    expect(page.locator(".done")).to_contain_text("Calibration done")
    page.evaluate("window.dispatchEvent(new Event('focus'))")  # back to the tab: it asks, still held
    page.wait_for_timeout(500)
    expect(page.locator("#release-notice")).to_have_text("")
    with new_session(server["engine"]) as db:
        lead = db.exec(select(User).where(User.name == "lena")).one()
        assignment.release(db, projects.get_project(db, "held"), lead, agreement=0.8)
    page.evaluate("window.dispatchEvent(new Event('focus'))")
    expect(page.locator("#release-notice")).to_contain_text("released the rest of your pairs")
    page.locator("#release-notice a").click()
    expect(page.locator("#doc-text")).to_be_visible()
