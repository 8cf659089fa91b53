"""The lean answer path (judging_app.lean) against Flask's normal path for the same requests: the
same fragment and headers for an answer, and exactly the same refusals (bad or missing CSRF token,
no session, an ended session, another judge's pair, an answer too soon, a grade that is not a
number, the same key twice), each sent once through each path on SQLite and PostgreSQL."""

from __future__ import annotations

import re

import pytest
from sqlmodel import select

from curation.store.engine import session as new_session
from curation.store.models import Judgment
from judging_app.lean import LeanAnswer
from tests.support.client import csrf, login

HTMX = {"HX-Request": "true"}
TOKEN = re.compile(r'name="(token|judgment|csrf_token)" value="[^"]*"')


def field(body: bytes, name: str) -> str:
    return re.search(rf'name="{name}" value="([^"]*)"', body.decode()).group(1)


@pytest.fixture
def spy(monkeypatch):
    """How often the lean path got past its checks (``respond``) and rendered a pair itself."""
    seen = {"respond": 0, "render": 0}
    respond, render = LeanAnswer.respond, LeanAnswer.render

    def counted_respond(self, *a, **k):
        seen["respond"] += 1
        return respond(self, *a, **k)

    def counted_render(self, *a, **k):
        seen["render"] += 1
        return render(self, *a, **k)

    monkeypatch.setattr(LeanAnswer, "respond", counted_respond)
    monkeypatch.setattr(LeanAnswer, "render", counted_render)
    return seen


def judge_in(app, project, name="alice"):
    """A logged-in judge with the page open and one answer sent (Flask's path verifies its CSRF
    token; the lean path takes the next ones). Returns (client, last response body)."""
    client = app.test_client()
    login(client, name)
    path = f"/projects/{project.project_id}/judge"
    body = client.get(path, headers=HTMX).data
    r = client.post(path, data={"csrf_token": csrf(body), "token": field(body, "token"), "grade": "1"}, headers=HTMX)
    assert r.status_code == 200
    return client, r.data


def post(app, client, project, body, *, lean: bool, **data):
    saved = app.lean
    app.lean = saved if lean else None
    try:
        data.setdefault("csrf_token", csrf(body))
        data.setdefault("token", field(body, "token"))
        return client.post(f"/projects/{project.project_id}/judge", data=data, headers=HTMX)
    finally:
        app.lean = saved


def shape(response) -> tuple:
    """Status, headers (but the length) and body with the one-time tokens, judgment ids, CSRF
    tokens (signed to the second), milliseconds and the time-left estimate (from the judge's pace,
    read from the clock) taken out: what must be equal between the two paths."""
    body = TOKEN.sub(r'name="\1" value=""', response.get_data(as_text=True))
    body = re.sub(r"[0-9]+ ms", "N ms", body)
    body = re.sub(r" · [^<]* left at your pace", "", body)
    return response.status_code, [(k, v) for k, v in response.headers if k != "Content-Length"], body


def judgments(engine) -> list[Judgment]:
    with new_session(engine) as db:
        return list(db.exec(select(Judgment).order_by(Judgment.id)))


def test_the_lean_answer_is_the_normal_answer(app, project, engine, spy):
    client, body = judge_in(app, project)
    assert spy["respond"] == 0  # the first answer's CSRF token was not yet verified: Flask's path
    lean = post(app, client, project, body, lean=True, grade="2")
    assert lean.status_code == 200 and spy["render"] == 1
    assert csrf(lean.data) == csrf(body)  # the token it was sent, kept for the next pair (as the view keeps it)
    undo = client.post(f"/projects/{project.project_id}/judge/undo",
                       data={"csrf_token": csrf(lean.data), "judgment": field(lean.data, "judgment")}, headers=HTMX)
    assert undo.status_code == 200
    normal = post(app, client, project, undo.data, lean=False, grade="2")
    assert spy["render"] == 1
    assert shape(lean) == shape(normal)  # the same pair next, the same page, the same headers
    assert "Content-Security-Policy" in lean.headers and lean.headers["Vary"] == "Cookie"
    rows = judgments(engine)
    assert [j.grade for j in rows] == [1, 2]  # the undone answer is gone; the two others are stored


REFUSALS = {
    # name: (form changes, expected status, whether the lean path gets past its own checks)
    "bad csrf": ({"csrf_token": "forged"}, 400, False),
    "no csrf": ({"csrf_token": ""}, 400, False),
    "grade not a number": ({"grade": "two"}, 400, True),
    "grade off the scale": ({"grade": "9"}, 400, True),
    "another judge's pair": ({"token": "other"}, 404, True),
    "unknown token": ({"token": "nope"}, 404, True),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_the_lean_path_refuses_what_the_normal_path_refuses(app, project, engine, spy, case):
    changes, status, past_checks = REFUSALS[case]
    client, body = judge_in(app, project)
    if changes.get("token") == "other":
        _, bob_body = judge_in(app, project, "bob")
        changes = dict(changes, token=field(bob_body, "token"))
    before = len(judgments(engine))
    form = {"grade": "1", **changes}
    lean = post(app, client, project, body, lean=True, **form)
    assert spy["respond"] == int(past_checks) and spy["render"] == 0
    normal = post(app, client, project, body, lean=False, **form)
    assert lean.status_code == status and shape(lean) == shape(normal)
    assert len(judgments(engine)) == before  # nothing recorded by either


def test_too_soon_is_refused_the_same(app, project, engine, spy):
    client, body = judge_in(app, project)
    app.config["MIN_ANSWER_MS"] = 60_000
    lean = post(app, client, project, body, lean=True, grade="1")
    normal = post(app, client, project, body, lean=False, grade="1")
    assert spy["respond"] == 1 and spy["render"] == 0
    assert lean.status_code == 409 and "too soon" in lean.get_data(as_text=True)
    assert shape(lean) == shape(normal)
    assert len(judgments(engine)) == 1


def test_no_session_and_an_ended_session_are_refused_the_same(app, project, engine, spy):
    client, body = judge_in(app, project)
    twin, twin_body = judge_in(app, project)  # alice again, in a second browser
    anonymous = app.test_client()
    lean = post(app, anonymous, project, body, lean=True, grade="1")
    normal = post(app, anonymous, project, body, lean=False, grade="1")
    # no session cookie: the form's token belongs to no session of this browser (flask-wtf's 400)
    assert lean.status_code == 400 and shape(lean) == shape(normal)
    other = app.test_client()
    login(other, "alice")
    page = other.get(f"/projects/{project.project_id}/judge").data
    other.post("/logout", data={"csrf_token": csrf(page)})  # ends every session of alice
    lean = post(app, client, project, body, lean=True, grade="1")
    normal = post(app, twin, project, twin_body, lean=False, grade="1")
    assert spy["respond"] == 0  # the store said the session ended: the normal path answered
    for response in (lean, normal):  # the login redirect, and the session's id dropped from the cookie
        assert response.status_code == 401 and response.headers["HX-Redirect"] == "/login"
        assert "Set-Cookie" in response.headers and response.data == b""
    assert [k for k, _ in lean.headers] == [k for k, _ in normal.headers]
    assert len(judgments(engine)) == 2


def test_the_same_key_twice_records_one_answer(app, project, engine, spy):
    client, body = judge_in(app, project)
    first = post(app, client, project, body, lean=True, grade="2")
    again = post(app, client, project, body, lean=True, grade="0")  # the same pair's token again
    assert first.status_code == again.status_code == 200
    assert spy["respond"] == 2
    rows = judgments(engine)
    assert [j.grade for j in rows] == [1, 2]
    assert field(again.data, "judgment") == field(first.data, "judgment")  # the recorded answer, again


def test_a_script_in_a_document_stays_inert_on_both_paths(app, project, spy):
    """The document text is untrusted: the fragment of either path prints it escaped, with only the
    query words' ``<mark>`` as markup (the marked HTML is cached per text: the second showing, by
    the normal path, comes from that cache and must be the same escaped HTML)."""
    client, body = judge_in(app, project)
    for _ in range(16):  # answer until the document carrying the <script> is the next pair
        lean = post(app, client, project, body, lean=True, grade="1")
        assert lean.status_code == 200
        if b"Cooking tips." in lean.data:
            break
        body = lean.data
    else:
        pytest.fail("the document with a <script> was never shown")
    undo = client.post(f"/projects/{project.project_id}/judge/undo",
                       data={"csrf_token": csrf(lean.data), "judgment": field(lean.data, "judgment")}, headers=HTMX)
    normal = post(app, client, project, undo.data, lean=False, grade="1")
    assert spy["render"] >= 1 and b"Cooking tips." in normal.data
    for response in (lean, normal):
        text = response.get_data(as_text=True)
        assert "<script>" not in text and "<img src=x" not in text
        assert "&lt;script&gt;window.__xss = 1;" in text and "&lt;img src=x onerror=" in text
    assert shape(lean) == shape(normal)
