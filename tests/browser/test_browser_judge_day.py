"""The judge's side in a real Chromium against `golden serve`: an unsure answer sent
with the judge's best grade reaches the lead's "Unsure answers" queue and does not block the export;
skip after back keeps the answer; one definition of the grades on every page; the query stays in
view on a long document, its words marked, nothing running from a hostile document; the judge's
pages at 375 px wide; ids shown as they are."""

from __future__ import annotations

import json

import pytest
from sqlmodel import select

from curation.agree.labels import final_labels
from curation.demo import GUIDELINES as DEMO_GUIDELINES
from curation.export.versions import export_version
from curation.judge import assignment
from curation.store import projects
from curation.store.engine import session as new_session
from curation.store.models import Judgment, User
from curation.store.projects import get_project
from tests.support.browser import golden_serve, log_in, new_page, require_chromium
from tests.support.projects import add_users, assigned_project, create_from_files, sqlite_store, write_project_files

DEMO_NAMES = ["Not useful", "Related, partly useful", "Answers it"]
HOSTILE = ('Reset <script>window.__xss = 1</script> your <img src=x onerror="window.__xss = 2"> password '
           '<a href="javascript:window.__xss = 3">reset link</a> & <b onclick="window.__xss=4">passwords</b>. ')


def ux_project(engine, folder):
    """Query "How do I reset my password?" (qid Qa-mixedCase) with three long hostile documents,
    judge erin, lead lena (already there); the demo's guidelines (and so the demo's grade names)."""
    queries = [{"qid": "Qa-mixedCase", "text": "How do I reset my password?"}]
    corpus = [{"id": f"long{i}", "title": f"Reset <i>password</i> {i}",
               "text": HOSTILE + "\n\n".join(f"Paragraph {n}: unrelated words about billing and invoices."
                                              for n in range(80)) + "\n\nThe end: reset it."} for i in range(3)]
    pool = [{"qid": "Qa-mixedCase", "docid": d["id"], "order": i, "systems": {"r": i + 1}}
            for i, d in enumerate(corpus)]
    create_from_files(engine, "ux", write_project_files(folder, queries, pool, corpus))
    add_users(engine, erin="judge", fay="judge")
    with new_session(engine) as db:
        project = get_project(db, "ux")
        projects.set_guidelines(db, project, DEMO_GUIDELINES)
        assignment.assign(db, project, ["erin", "fay"], overlap=3, seed=1, hold=False)
        return project.id

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
        ux = ux_project(engine, folder / "ux")
        needs = needs_project(engine, folder / "needs")
        race = assigned_project(engine, folder / "race", name="race", n_queries=1, docs_per_query=3,
                                judges=("ivy",), overlap=0)
        with golden_serve(url, folder, secret="judge-day-secret", threads=4) as base:
            yield {"base": base, "engine": engine, "solo": solo, "pairs": pairs, "folder": folder, "ux": ux,
                   "needs": needs, "race": race}


def needs_project(engine, folder):
    """Query "reset" with a description and a narrative, three documents, judge gil."""
    queries = [{"qid": "qReset", "text": "reset", "description": "How to reset a forgotten password",
                "narrative": "Resetting a router or a <b>device</b> is not relevant."}]
    corpus = [{"id": f"n{i}", "text": f"Passage {i} about passwords."} for i in range(3)]
    pool = [{"qid": "qReset", "docid": d["id"], "order": i, "systems": {"r": i + 1}} for i, d in enumerate(corpus)]
    create_from_files(engine, "needs", write_project_files(folder, queries, pool, corpus))
    add_users(engine, gil="judge")
    with new_session(engine) as db:
        project = get_project(db, "needs")
        assignment.assign(db, project, ["gil"], overlap=0, seed=1, hold=False)
        return project.id


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
    expect(page.locator(".revisit")).to_have_count(0)  # moved on, to the pair the judge was at
    expect(page.locator("#doc-text")).to_have_text(second)
    expect(page.locator("#progress-counts")).to_contain_text("1 / 9")  # the counter does not drop
    seen = []
    for i in range(8):
        seen.append(page.inner_text("#doc-text"))
        page.keyboard.press("0")
        expect(page.locator("#progress-counts")).to_contain_text(f"{i + 2} / 9")
    assert first not in seen  # the answered pair did not come back
    expect(page.locator(".done")).to_contain_text("All done")
    grades = [(r.grade, r.skipped) for r in labels_of(server["engine"], "dave")]
    assert grades[:2] == [(2, False), (None, True)] and grades[2:] == [(0, False)] * 8


def _in_viewport(page, selector: str) -> bool:
    return page.evaluate(
        """s => [...document.querySelectorAll(s)].every(e => { const r = e.getBoundingClientRect();
             return r.width > 0 && r.height > 0 && r.top >= 0 && r.left >= 0 && r.bottom <= innerHeight
                    && r.right <= innerWidth; })""", selector)


def test_the_query_stays_in_view_its_words_are_marked_and_a_hostile_document_runs_nothing(server, page):
    from playwright.sync_api import expect

    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    log_in(page, server["base"], "erin", path="/")
    page.wait_for_selector("#pair")
    page.wait_for_load_state("load")
    for reload in (False, True):
        if reload:
            page.reload()
            page.wait_for_load_state("load")
        text = page.inner_text("#doc-text")
        assert '<script>window.__xss = 1</script>' in text and 'onerror="window.__xss = 2"' in text
        marks = page.eval_on_selector_all("#doc-text mark.q, #doc-title mark.q", "ms => ms.map(m => m.textContent)")
        assert sorted(set(marks)) == ["Reset", "password", "passwords", "reset"]
        assert page.locator("#doc-text script, #doc-text img, #doc-text a, #doc-text b").count() == 0
        page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
        page.wait_for_function("() => window.scrollY > 1000")
        assert _in_viewport(page, "#query-text")  # still on screen at the end of a long document
        assert page.evaluate("typeof window.__xss") == "undefined"
    # H turns the marks off and on; the choice survives a reload
    colour = "getComputedStyle(document.querySelector('#doc-text mark.q')).backgroundColor"
    marked = page.evaluate(colour)
    assert marked != "rgba(0, 0, 0, 0)"
    page.keyboard.press("h")
    assert page.evaluate(colour) == "rgba(0, 0, 0, 0)"
    page.reload()
    page.wait_for_load_state("load")
    assert page.evaluate(colour) == "rgba(0, 0, 0, 0)"
    page.keyboard.press("h")
    assert page.evaluate(colour) == marked
    assert dialogs == [] and page.evaluate("typeof window.__xss") == "undefined"

    # one definition of each grade: the buttons, the guidelines dialog and the guidelines page
    names = page.eval_on_selector_all("form.grade-bar .grade .name", "ns => ns.map(n => n.textContent)")
    assert names == DEMO_NAMES
    page.keyboard.press("g")
    # the dialog opens at its top: the title and the grade table in view, not scrolled to Close
    assert page.evaluate("document.querySelector('dialog#guidelines').scrollTop") == 0
    assert _in_viewport(page, "#guidelines-title")
    dialog = page.inner_text("dialog#guidelines")
    assert all(dialog.count(name) == 1 for name in DEMO_NAMES) and "Highly relevant" not in dialog
    page.keyboard.press("Escape")
    page.goto(f"{server['base']}/projects/{server['ux']}/guidelines")
    body = page.inner_text("main")
    assert all(body.count(name) == 1 for name in DEMO_NAMES) and "Not relevant" not in body

    # an unsure answer in the lead's queue shows the qid as it is (no upper-casing)
    page.goto(f"{server['base']}/projects/{server['ux']}/judge")
    page.wait_for_load_state("load")
    page.keyboard.press("u")
    page.keyboard.press("Escape")
    page.keyboard.press("u")
    page.keyboard.press("Enter")
    page.keyboard.press("0")
    expect(page.locator("#progress-counts")).to_contain_text("1 / 3")
    with new_page(page.context.browser) as lead:
        log_in(lead, server["base"], "lena", path=f"/lead/{server['ux']}/unsure")
        expect(lead.locator("#adjudication .query .eyebrow")).to_have_text("Query Qa-mixedCase")
        assert "Qa-mixedCase" in lead.locator("#adjudication .query .eyebrow").inner_text()  # innerText applies CSS


def test_the_judge_pages_fit_a_phone(server, browser):
    from playwright.sync_api import expect

    with new_page(browser, viewport={"width": 375, "height": 667}, is_mobile=True, has_touch=True) as phone:
        log_in(phone, server["base"], "fay", path="/")
        phone.wait_for_selector("#pair")
        phone.wait_for_load_state("load")
        for step in range(3):
            phone.wait_for_function("() => window.scrollY === 0")  # each new pair is shown from its top
            assert phone.evaluate("document.documentElement.scrollWidth") <= 375
            assert _in_viewport(phone, "#progress-counts") and _in_viewport(phone, ".progress progress")
            assert _in_viewport(phone, "form.grade-bar .grade")  # every grade button, without scrolling
            phone.evaluate("window.scrollTo(0, document.body.scrollHeight / 2)")
            assert _in_viewport(phone, "form.grade-bar .grade") and _in_viewport(phone, "#query-text")
            phone.locator("form.grade-bar .grade").nth(step % 3).tap()
            expect(phone.locator("#progress-counts")).to_contain_text(f"{step + 1} / 3")
        assert phone.evaluate("document.documentElement.scrollWidth") <= 375  # the all-done screen
        for path in (f"/projects/{server['ux']}/guidelines", "/"):
            phone.goto(server["base"] + path)
            phone.wait_for_load_state("load")
            assert phone.evaluate("document.documentElement.scrollWidth") <= 375, path


def test_the_information_need_is_under_the_query_and_a_lead_rewrites_it(server, page, browser):
    from playwright.sync_api import expect

    log_in(page, server["base"], "gil", path="/")
    page.wait_for_selector("#pair")
    page.wait_for_load_state("load")
    expect(page.locator("#need-description")).to_have_text("How to reset a forgotten password")
    expect(page.locator("#need-narrative")).to_have_text("Resetting a router or a <b>device</b> is not relevant.")
    page.keyboard.press("n")  # hide it; the judge's choice is remembered on the next pair and a reload
    expect(page.locator("#need-description")).to_be_hidden()
    page.keyboard.press("u")
    page.keyboard.press("Enter")
    page.keyboard.press("1")
    expect(page.locator("#progress-counts")).to_contain_text("1 / 3")
    expect(page.locator("#need-description")).to_be_hidden()
    page.reload()
    page.wait_for_load_state("load")
    expect(page.locator("#need-description")).to_be_hidden()
    page.keyboard.press("n")
    expect(page.locator("#need-description")).to_be_visible()

    # the lead writes version 2 from the queue screen; the judge's next pair shows it
    with new_page(browser) as lead:
        log_in(lead, server["base"], "lena", path=f"/lead/{server['needs']}/unsure")
        expect(lead.locator("#need-form > summary")).to_contain_text("version 1")
        lead.click("#need-form .need-edit summary")
        lead.fill("#need-description", "Reset the password of a Nimbus account")
        lead.fill("#need-note", "judges read it as a router reset")
        lead.click("#need-form button[type=submit]")
        expect(lead.locator("#need-form > summary")).to_contain_text("version 2 by lena")
        expect(lead.locator("[data-testid=need]")).to_contain_text("Reset the password of a Nimbus account")
    page.keyboard.press("2")  # the pair shown before the lead's edit records version 1
    expect(page.locator("#progress-counts")).to_contain_text("2 / 3")
    expect(page.locator("#need-description")).to_have_text("Reset the password of a Nimbus account")
    page.keyboard.press("0")
    expect(page.locator("#progress-counts")).to_contain_text("3 / 3")
    from curation.store.models import QueryNeed

    with new_session(server["engine"]) as db:
        versions = db.exec(select(QueryNeed.version).join(Judgment, Judgment.need_version_id == QueryNeed.id)
                           .join(User, User.id == Judgment.judge_id).where(User.name == "gil")
                           .order_by(Judgment.id)).all()
    assert list(versions) == [1, 1, 2]


def test_unsure_ended_before_its_box_says_it_opened_still_sends_the_next_digit(server, page):
    """"u" then Enter handled before the box's toggle event fires (it comes in a later task: keys
    typed fast, or a busy machine): the digit after them sends the unsure answer, and is not typed
    into the note because the late toggle event took the focus back to it."""
    from playwright.sync_api import expect

    log_in(page, server["base"], "ivy", path="/")
    page.wait_for_selector("#pair")
    page.wait_for_load_state("load")
    # both keys in one task, as the page's own handler receives them: the toggle event comes after
    page.evaluate("""() => {
        const key = (target, k) => target.dispatchEvent(new KeyboardEvent("keydown", {key: k, bubbles: true,
                                                                                    cancelable: true}));
        key(document.body, "u");
        key(document.activeElement, "Enter");
    }""")
    page.evaluate("() => new Promise(done => setTimeout(done, 100))")  # the toggle event has fired
    expect(page.locator("#unsure")).to_have_attribute("open", "")
    assert page.evaluate("document.activeElement.tagName") != "TEXTAREA"
    page.keyboard.press("1")
    expect(page.locator("#progress-counts")).to_contain_text("1 / 3")
    assert [(r.grade, r.unsure, r.note) for r in labels_of(server["engine"], "ivy")] == [(1, True, None)]
