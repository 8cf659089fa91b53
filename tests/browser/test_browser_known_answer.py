"""Known-answer pairs in a real Chromium against `golden serve`: a known-answer pair and a pool pair
render the same HTML shape (the #pair fragment, its text and token masked), and a judge whose queue
is held sees why."""

from __future__ import annotations

import pytest
from sqlmodel import select

from curation.store.engine import session as new_session
from curation.store.models import Assignment, KnownAnswerHold, PairView, User
from tests.support.browser import golden_serve, log_in, require_chromium
from tests.support.known_answer import known_answer_project
from tests.support.projects import sqlite_store

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# The #pair fragment's shape: every element's tag, its attribute names and its classes, in document
# order; text, attribute values (the token, the judgment id, positions in links) and the <mark>s
# around the query's words in the text (part of the text) left out.
SHAPE = """() => {
  const cls = (v) => v.split(' ').filter(c => c && !c.startsWith('htmx-')).join(' ');  // not htmx's swap-time classes
  const walk = (el) => [el.tagName, [...el.attributes].filter(a => a.name !== 'class' || cls(a.value))
                        .map(a => a.name === 'class' ? 'class=' + cls(a.value) : a.name).sort()
                        .join(' '), [...el.children].filter(c => c.tagName !== 'MARK').map(walk)];
  return JSON.stringify(walk(document.querySelector('#pair')));
}"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    require_chromium()
    folder = tmp_path_factory.mktemp("known")
    with sqlite_store(folder) as (url, engine):
        pid, known = known_answer_project(engine, folder / "recipes", rate=2, hold=True)
        with golden_serve(url, folder, secret="browser-test-secret", threads=2) as base:
            yield {"base": base, "engine": engine, "pid": pid, "known": known}


def _kind_on_screen(engine, page) -> str:
    token = page.get_attribute("#pair input[name=token]", "value")
    with new_session(engine) as db:
        return db.exec(select(Assignment.kind).join(PairView, PairView.assignment_id == Assignment.id)
                       .where(PairView.token == token)).one()


def test_a_known_answer_pair_looks_like_any_other(server, page):
    from playwright.sync_api import expect

    log_in(page, server["base"], "carol", path="/")
    page.wait_for_selector("#pair")
    page.wait_for_load_state("load")
    page.keyboard.press("1")  # from here on every page carries the same "Last:" line
    expect(page.locator("#progress-counts")).to_contain_text("1 / ")
    shapes: dict[str, set[str]] = {"known": set(), "main": set()}
    for i in range(2, 12):
        shapes[_kind_on_screen(server["engine"], page)].add(page.evaluate(SHAPE))
        page.keyboard.press("1")
        expect(page.locator("#progress-counts")).to_contain_text(f"{i} / ")  # the counter moves on both kinds
    assert shapes["known"] and shapes["main"], "the first pairs should hold both kinds (rate 2)"
    assert shapes["known"] == shapes["main"] and len(shapes["main"]) == 1


def test_a_held_judge_sees_why(server, page):
    from playwright.sync_api import expect

    with new_session(server["engine"]) as db:
        alice = db.exec(select(User).where(User.name == "alice")).one()
        db.add(KnownAnswerHold(project_id=server["pid"], judge_id=alice.id, answers=12, exact=0.2))
        db.commit()
    log_in(page, server["base"], "alice", path="/")
    expect(page.locator("[data-testid=held]")).to_have_text("Your work is paused")
    expect(page.locator("#pair")).to_contain_text("A lead will review your recent answers")
    expect(page.locator("#doc-text")).to_have_count(0)
