"""The judging page in a real Chromium (Playwright driving Debian's /usr/bin/chromium) against
`golden serve` (granian) on a free port: keyboard-only labelling that survives a reload, and
untrusted documents shown as text that runs nothing."""

from __future__ import annotations

import pytest
from sqlmodel import select

from curation.store.engine import session as new_session
from curation.store.models import Judgment, User
from tests.support.browser import golden_serve, log_in, require_chromium
from tests.support.projects import assigned_project, sqlite_store

pytestmark = [pytest.mark.browser, pytest.mark.slow]  # each module starts golden serve and Chromium


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    require_chromium()
    folder = tmp_path_factory.mktemp("browser")
    with sqlite_store(folder) as (url, engine):
        main = assigned_project(engine, folder / "recipes", name="recipes", n_queries=8, docs_per_query=4, overlap=3)
        untrusted = assigned_project(engine, folder / "untrusted", name="untrusted", n_queries=1, docs_per_query=3,
                                     judges=("carol",), overlap=0)
        with golden_serve(url, folder, secret="browser-test-secret", threads=4) as base:
            yield {"base": base, "engine": engine, "main": main, "untrusted": untrusted}


def log_in_to_first_pair(page, base: str, name: str) -> None:
    """Log in from the start page and wait for the first pair."""
    log_in(page, base, name, path="/")
    page.wait_for_selector("#pair")
    page.wait_for_load_state("load")  # htmx and the key handler are in place


def counts(page) -> str:
    return page.inner_text("#progress-counts")


def judged(engine, name: str) -> list[Judgment]:
    with new_session(engine) as db:
        return list(db.exec(
            select(Judgment).join(User, User.id == Judgment.judge_id).where(User.name == name).order_by(Judgment.id)
        ))


def test_ten_pairs_by_keyboard_alone_survive_a_reload(server, page):
    from playwright.sync_api import expect

    log_in_to_first_pair(page, server["base"], "alice")
    expect(page.locator("#progress-counts")).to_contain_text("0 / ")
    page.evaluate("window.__sameDocument = true")  # gone if any key caused a full page load
    shown = []
    for i in range(10):
        shown.append(page.inner_text("#doc-text"))
        page.keyboard.press(str(i % 3))
        expect(page.locator("#progress-counts")).to_contain_text(f"{i + 1} / ")
    assert page.evaluate("window.__sameDocument") is True
    assert len(set(shown)) == 10  # ten different pairs

    # the guidelines are one key away, and Escape closes them
    page.keyboard.press("g")
    expect(page.locator("dialog#guidelines")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator("dialog#guidelines")).to_be_hidden()

    # back: the last pair again, with alice's own answer marked; a new digit relabels it
    page.keyboard.press("b")
    expect(page.locator(".revisit")).to_contain_text("You answered this pair before")
    assert page.inner_text("#doc-text") == shown[-1]
    page.keyboard.press("2")
    expect(page.locator(".revisit")).to_have_count(0)

    # unsure with a note, from the keyboard. A person types a note over seconds; the test waits
    # until no request is in flight and nothing settles (htmx's classes), as a person's pace would.
    busy = page.locator(".htmx-request, .htmx-settling, .htmx-swapping")
    expect(busy).to_have_count(0)
    page.keyboard.press("u")
    expect(page.locator("#note")).to_be_focused()
    page.keyboard.type("two readings of the query")
    page.keyboard.press("Enter")  # ends the note; the digit of the best grade sends it
    expect(page.locator("#note")).not_to_be_focused()
    expect(busy).to_have_count(0)
    page.keyboard.press("1")
    expect(page.locator("#progress-counts")).to_contain_text("11 / ")
    assert page.evaluate("window.__sameDocument") is True

    page.reload()
    expect(page.locator("#progress-counts")).to_contain_text("11 / ")
    assert page.evaluate("window.__sameDocument") is None  # it really was a reload
    assert page.inner_text("#doc-text") not in shown  # the next unanswered pair, not an old one

    rows = judged(server["engine"], "alice")
    assert [r.grade for r in rows] == [i % 3 for i in range(10)] + [2, 1]
    assert rows[-1].unsure and rows[-1].note == "two readings of the query"


def test_a_document_with_script_is_shown_as_text_and_runs_nothing(server, page):
    from playwright.sync_api import expect

    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    log_in_to_first_pair(page, server["base"], "carol")
    for _ in range(3):  # skip (S) until the hostile document is on screen (the order is shuffled)
        if "Cooking tips." in page.inner_text("#doc-text"):
            break
        before = counts(page)
        page.keyboard.press("s")
        page.wait_for_function("b => document.querySelector('#progress-counts').innerText !== b || "
                               "document.querySelector('#doc-text').innerText.includes('Cooking tips.')", arg=before)
    for reload in (False, True):  # as swapped in by htmx, then as a full page
        if reload:
            page.reload()
        text = page.inner_text("#doc-text")
        assert "<script>window.__xss = 1;" in text and '<img src=x onerror="window.__xss = 2">' in text
        assert page.evaluate("typeof window.__xss") == "undefined"
        assert page.title() != "pwned"
        assert page.locator("#doc-text img").count() == 0 and page.locator("#doc-text script").count() == 0
    page.keyboard.press("g")
    expect(page.locator("dialog#guidelines")).to_contain_text("<script>window.__xss = 3</script>")
    assert page.locator("dialog#guidelines a[href^='javascript']").count() == 0
    assert page.evaluate("typeof window.__xss") == "undefined"
    assert dialogs == []
