"""The judging page's aids for judges through Flask's test client, on SQLite and PostgreSQL: one
definition of the grades on every page, the query's words marked in escaped text, the unsure form
with grade buttons, ids shown as they are."""

from __future__ import annotations

import html
import re

import pytest

from curation.demo import GUIDELINES as DEMO_GUIDELINES
from curation.judge import assignment
from curation.store import projects
from curation.store.engine import session as new_session
from tests.support.client import login
from tests.support.projects import add_users, create_from_files, write_project_files

HOSTILE = ('Reset <script>window.__xss = "reset"</script> your <b onmouseover="x()">passwords</b> '
           '<img src=x onerror="reset()"> & passwords\u2019 rules')


@pytest.fixture
def setup(engine, tmp_path):
    """One query "How do I reset my Password?" (qid "Qa-mixedCase") with a hostile document and a
    plain one, judge alice, lead lena; the demo's guidelines as version 2."""
    queries = [{"qid": "Qa-mixedCase", "text": "How do I reset my Password?"}]
    corpus = [{"id": "d1", "title": "Reset a <i>password</i>", "text": HOSTILE},
              {"id": "d2", "title": "Billing", "text": "Invoices are sent monthly."}]
    pool = [{"qid": "Qa-mixedCase", "docid": d, "order": i, "systems": {"r": i + 1}}
            for i, d in enumerate(("d1", "d2"))]
    create_from_files(engine, "ux", write_project_files(tmp_path, queries, pool, corpus))
    add_users(engine, alice="judge", lena="lead")
    with new_session(engine) as db:
        project = projects.get_project(db, "ux")
        projects.set_guidelines(db, project, DEMO_GUIDELINES)
        assignment.assign(db, project, ["alice"], overlap=0, seed=1, hold=False)
        return project.id


def _page(app, pid):
    client = app.test_client()
    login(client, "alice")
    return client, client.get(f"/projects/{pid}/judge").data.decode()


def test_one_definition_of_each_grade_on_the_judge_page_and_the_guidelines_page(app, setup):
    client, body = _page(app, setup)
    names = ["Not useful", "Related, partly useful", "Answers it"]
    buttons = re.findall(r'<button type="submit" name="grade" value="(\d)".*?<span class="name">([^<]*)</span>', body,
                         re.S)
    assert [(int(g), html.unescape(n)) for g, n in buttons] == list(enumerate(names))
    for default in ("Not relevant", "Partially relevant", "Highly relevant"):
        assert default not in body
    guidelines = client.get(f"/projects/{setup}/guidelines").data.decode()
    for name in names:  # the scale table only: the guidelines' Grades section is not printed again
        assert html.unescape(guidelines).count(name) == 1
    assert "Rules of thumb" in guidelines and "Press U" in guidelines
    # the guidelines dialog on the judging page: the same table, once
    dialog = body[body.index('<dialog id="guidelines"'):]
    for name in names:
        assert html.unescape(dialog).count(name) == 1


def _field(body: str, name: str) -> str:
    return html.unescape(re.search(rf'name="{name}" value="([^"]*)"', body).group(1))


def test_query_words_are_marked_in_escaped_text(app, setup):
    client, body = _page(app, setup)
    doc = re.search(r'id="doc-text">(.*?)</div>', body, re.S).group(1)
    if "Invoices" in doc:  # the plain document first: nothing of the query in it; answer it, go on
        assert "<mark" not in doc
        body = client.post(f"/projects/{setup}/judge", data={
            "token": _field(body, "token"), "csrf_token": _field(body, "csrf_token"), "grade": "0"},
            follow_redirects=True).data.decode()
        doc = re.search(r'id="doc-text">(.*?)</div>', body, re.S).group(1)
    marks = re.findall(r'<mark class="q">([^<]*)</mark>', doc)
    assert marks == ["Reset", "reset", "passwords", "reset", "passwords"]
    assert "<script" not in doc and "<img" not in doc and "<b " not in doc
    assert html.unescape(re.sub(r"</?mark[^>]*>", "", doc)).replace("&#34;", '"') == HOSTILE
    title = re.search(r'id="doc-title">(.*?)</h2>', body, re.S).group(1)
    assert title == '<mark class="q">Reset</mark> a &lt;i&gt;<mark class="q">password</mark>&lt;/i&gt;'


def test_the_lead_screens_added_here_are_for_leads_only_and_escape_what_a_lead_writes(app, setup):
    judge = app.test_client()
    login(judge, "alice")
    body = judge.get(f"/projects/{setup}/judge").data.decode()
    token = _field(body, "csrf_token")
    assert judge.get(f"/lead/{setup}/unsure").status_code == 403
    assert judge.post(f"/lead/{setup}/need", data={"csrf_token": token, "qid": "Qa-mixedCase",
                                                   "description": "x"}).status_code == 403
    lead = app.test_client()
    login(lead, "lena")
    page = lead.get(f"/lead/{setup}/unsure").data.decode()
    assert "No unsure answer waits for a lead." in page
    # alice answers unsure (with her best grade); the lead's queue shows it with the form for the need
    judge.post(f"/projects/{setup}/judge", data={"csrf_token": token, "token": _field(body, "token"),
                                                 "action": "unsure", "grade": "1", "note": "<i>which</i> reset?"})
    page = lead.get(f"/lead/{setup}/unsure").data.decode()
    assert "&lt;i&gt;which&lt;/i&gt; reset?" in page and "<i>which" not in page
    assert 'value="1" required checked' in page  # the judge's grade, pre-selected
    res = lead.post(f"/lead/{setup}/need", data={"csrf_token": _field(page, "csrf_token"), "qid": "Qa-mixedCase",
                                                 "description": "<script>alert(1)</script> reset", "back": "unsure",
                                                 "pair": _field(page, "pair_id")}, follow_redirects=True)
    assert res.status_code == 200 and "version 1 is in force" in res.data.decode()
    page = res.data.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt; reset" in page and "<script>alert" not in page
    # the judge's next page shows it under the query, escaped
    nxt = judge.get(f"/projects/{setup}/judge").data.decode()
    assert '<p id="need-description">&lt;script&gt;alert(1)&lt;/script&gt; reset</p>' in nxt


def test_the_lead_pages_count_the_unsure_answers_and_the_export_shows_the_guidelines_grades(app, setup, engine,
                                                                                            tmp_path):
    from curation.export.gather import gather_state

    judge = app.test_client()
    login(judge, "alice")
    body = judge.get(f"/projects/{setup}/judge").data.decode()
    lead = app.test_client()
    login(lead, "lena")
    count = re.compile(r'data-testid="unsure-count">(\d+)<')
    assert count.search(lead.get(f"/lead/{setup}").data.decode()).group(1) == "0"
    judge.post(f"/projects/{setup}/judge", data={"csrf_token": _field(body, "csrf_token"),
                                                 "token": _field(body, "token"), "action": "unsure", "grade": "2"})
    for path in (f"/lead/{setup}", f"/lead/{setup}/adjudicate"):
        assert count.search(lead.get(path).data.decode()).group(1) == "1", path
    with new_session(engine) as db:
        state = gather_state(db, projects.get_project(db, "ux"), policy="adjudicated", spool=tmp_path / "spool")
    assert [g["name"] for g in state.body["label_scale"]["grades"]] == [
        "Not useful", "Related, partly useful", "Answers it"]


def _grade_classes(body: str) -> dict[int, str]:
    """The answer bar's grade buttons: grade -> their class attribute."""
    return {int(g): c for g, c in re.findall(
        r'<button type="submit" name="grade" value="(\d)" data-key="\d"\s+class="([^"]*)">', body)}


def test_a_revisited_pair_marks_the_earlier_grade_and_a_new_pair_marks_none(app, setup):
    # The grade buttons are rendered once per scale and kept (judging_app.judge.grade_buttons): the
    # earlier grade must still be marked on the pair it belongs to, and on no other pair.
    client, body = _page(app, setup)
    assert _grade_classes(body) == {0: "grade", 1: "grade", 2: "grade"}
    assert re.findall(r'data-unsure-key="(\d)"', body) == ["0", "1", "2"]
    position = re.search(r'\?before=(\d+)"', body).group(1)
    sent = client.post(f"/projects/{setup}/judge", data={"token": _field(body, "token"), "grade": "2",
                                                         "csrf_token": _field(body, "csrf_token")})
    assert sent.status_code == 303
    second = client.get(f"/projects/{setup}/judge").data.decode()
    assert _grade_classes(second) == {0: "grade", 1: "grade", 2: "grade"}
    back = client.get(f"/projects/{setup}/judge?before={int(position) + 1}").data.decode()
    assert "You answered this pair before" in back
    assert _grade_classes(back) == {0: "grade", 1: "grade", 2: "grade current"}
    assert re.findall(r'data-unsure-key="(\d)"', back) == ["0", "1", "2"]
    again = client.get(f"/projects/{setup}/judge").data.decode()
    assert _grade_classes(again) == {0: "grade", 1: "grade", 2: "grade"}
