"""A key pressed while a request is in flight, in a real Chromium against `golden serve`, with the
request held by Playwright (``page.route``) until the test lets it go:

- while a request that is not an answer is in flight (the "come back later" screen's release poll),
  a key is for the pair on screen: it is kept and applied once the request has settled, and the
  unsure note and its digit that follow record one judgment, for that pair, with the note;
- opening Unsure, typing the note, ending it with Enter and the compact toggle send no request at
  all, so nothing can be in flight between the note's Enter and its digit;
- while an answer is in flight, a key is for a pair not yet on screen: it is dropped, and the page
  says so for a moment.
"""

from __future__ import annotations

import time

import pytest
from sqlmodel import select

from curation.store.engine import session as new_session
from curation.store.models import Judgment, PoolPair, User
from tests.support.browser import golden_serve, log_in, require_chromium
from tests.support.judgments import judge_queue
from tests.support.projects import assigned_project, sqlite_store

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    require_chromium()
    from datetime import UTC, datetime

    folder = tmp_path_factory.mktemp("in-flight")
    with sqlite_store(folder) as (url, engine):
        held = assigned_project(engine, folder / "held", name="held", n_queries=2, docs_per_query=2,
                                judges=("hal", "hil"), overlap=2, hold=True)
        # hal has answered his calibration pairs: his page says to come back, and polls for the release
        assert judge_queue(engine, held.project_id, "hal", lambda d: 0, start=datetime(2026, 3, 2, tzinfo=UTC)) == 2
        flow = assigned_project(engine, folder / "flow", name="flow", n_queries=3, docs_per_query=3,
                                judges=("fay",), overlap=0)
        with golden_serve(url, folder, secret="in-flight-secret", threads=4) as base:
            yield {"base": base, "engine": engine, "held": held.project_id, "flow": flow.project_id}


def judged(engine, name: str) -> list[tuple]:
    with new_session(engine) as db:
        return list(db.exec(
            select(Judgment.client_token, Judgment.pair_id, Judgment.grade, Judgment.unsure, Judgment.note)
            .join(User, User.id == Judgment.judge_id).where(User.name == name).order_by(Judgment.id)
        ))


def hold(page, pattern: str, method: str) -> list:
    """Hold the first ``method`` request to ``pattern`` until the test continues it (any later one
    goes through); the list of held routes."""
    held = []

    def handle(route):
        if route.request.method == method and not held:
            held.append(route)
        else:
            route.continue_()

    page.route(pattern, handle)
    return held


def wait_for(page, condition, what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"waited {timeout} s for {what}"
        page.wait_for_timeout(20)


def test_a_key_during_another_request_is_kept_for_the_pair_on_screen(server, page):
    from playwright.sync_api import expect

    base, engine = server["base"], server["engine"]
    log_in(page, base, "hal", path="/")
    page.wait_for_selector("#release-notice", state="attached")
    page.wait_for_load_state("load")
    before = judged(engine, "hal")
    last_pair = before[-1][1]

    # The release poll (a judge coming back to the tab) is held in flight; B is pressed meanwhile.
    polls = hold(page, "**/judge/released", "GET")
    page.evaluate("window.dispatchEvent(new Event('focus'))")
    wait_for(page, lambda: len(polls) == 1, "the release poll")
    page.keyboard.press("b")
    page.wait_for_timeout(300)
    polls[0].continue_()  # still held: 204, nothing to swap
    expect(page.locator(".revisit")).to_contain_text("You answered this pair before")
    token = page.locator("#unsure input[name=token]").get_attribute("value")

    # Unsure, the note, its Enter and the compact toggle send nothing: no request can be in flight.
    sent = []
    page.on("request", lambda r: sent.append(r.method + " " + r.url))
    page.keyboard.press("u")
    expect(page.locator("#note")).to_be_focused()
    page.keyboard.type("two readings of the query")
    page.keyboard.press("Enter")
    expect(page.locator("#note")).not_to_be_focused()
    page.keyboard.press("c")
    page.keyboard.press("c")
    assert sent == []
    page.keyboard.press("1")
    wait_for(page, lambda: len(judged(engine, "hal")) == len(before) + 1, "the unsure answer")
    page.wait_for_timeout(300)
    rows = judged(engine, "hal")
    assert rows[len(before):] == [(token, last_pair, 1, True, "two readings of the query")]
    with new_session(engine) as db:
        assert db.get(PoolPair, last_pair).project_id == server["held"]


def test_a_key_during_an_answer_is_dropped_with_a_cue(server, page):
    from playwright.sync_api import expect

    base, engine = server["base"], server["engine"]
    log_in(page, base, "fay", path="/")
    page.wait_for_selector("#pair")
    page.wait_for_load_state("load")
    cue = page.get_by_test_id("key-wait")
    expect(cue).to_be_hidden()
    token = page.locator("form.grade-bar input[name=token]").get_attribute("value")
    doc = page.inner_text("#doc-text")

    answers = hold(page, f"**/projects/{server['flow']}/judge", "POST")
    page.keyboard.press("1")
    wait_for(page, lambda: len(answers) == 1, "the answer")
    page.keyboard.press("2")  # for the next pair, which is not on screen yet
    expect(cue).to_be_visible()
    expect(cue).to_contain_text("Key not used")
    answers[0].continue_()
    expect(page.locator("#progress-counts")).to_contain_text("1 / ")
    assert page.inner_text("#doc-text") != doc
    page.wait_for_timeout(500)  # a second answer, had the key been used, would be in by now
    assert [(t, g) for t, _, g, _, _ in judged(engine, "fay")] == [(token, 1)]
    expect(cue).to_be_hidden(timeout=3000)  # the cue goes by itself
    assert page.locator(".message.error").count() == 0
