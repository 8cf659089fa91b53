"""The server's rules for a judge's answers, through Flask's test client on SQLite and PostgreSQL:
an answer is for the pair the judge saw (one that comes sooner after its pair was shown than the
minimum is refused and records nothing)."""

from __future__ import annotations

import re
import time

import pytest
from sqlmodel import select

from curation.store.engine import session as new_session
from tests.app.test_app_judging import HTMX, answer, doc_text, field, judge_page, judgments
from tests.support.client import app_on, login


@pytest.fixture
def guarded(engine):
    """The app with a minimum time between showing a pair and its answer: the default is 250 ms; 2 s
    here, so that a loaded test machine cannot take longer than that between the page and the
    answer sent right after it."""
    with app_on(engine, MIN_ANSWER_MS=2000) as flask_app:
        yield flask_app


@pytest.mark.parametrize("htmx", [True, False])
def test_an_answer_sooner_than_the_minimum_after_its_pair_is_refused(guarded, project, engine, htmx):
    client = login(guarded.test_client(), "alice")
    page = judge_page(client, project)
    token = field(page.data, "token")
    headers = HTMX if htmx else {}
    refused = answer(client, project, page.data, headers=headers, grade="1")
    assert refused.status_code == 409
    assert b"ms after the pair appeared" in refused.data and b"not recorded" in refused.data
    assert judgments(engine) == []
    time.sleep(2.1)  # the pair has now been on screen longer than the minimum
    accepted = answer(client, project, page.data, headers=headers, grade="1")
    assert accepted.status_code in (200, 303)
    rows = judgments(engine, "alice")
    assert [(r.grade, r.client_token) for r in rows] == [(1, token)]
    assert (rows[0].answered_at - rows[0].shown_at).total_seconds() >= 2


def test_the_minimum_comes_from_the_environment(engine, monkeypatch):
    from judging_app import create_app

    url = engine.url.render_as_string(hide_password=False)
    monkeypatch.delenv("GOLDEN_MIN_ANSWER_MS", raising=False)
    app = create_app({"DATABASE_URL": url, "SECRET_KEY": "t", "TESTING": True})
    try:
        assert app.config["MIN_ANSWER_MS"] == 250  # the default
    finally:
        app.extensions["golden_engine"].dispose()
    monkeypatch.setenv("GOLDEN_MIN_ANSWER_MS", "400")
    app = create_app({"DATABASE_URL": url, "SECRET_KEY": "t", "TESTING": True})
    try:
        assert app.config["MIN_ANSWER_MS"] == 400
    finally:
        app.extensions["golden_engine"].dispose()
    monkeypatch.setenv("GOLDEN_MIN_ANSWER_MS", "a lot")
    with pytest.raises(ValueError, match="GOLDEN_MIN_ANSWER_MS"):
        create_app({"DATABASE_URL": url, "SECRET_KEY": "t", "TESTING": True})


def list_audit_rows(engine, list_audit):
    with new_session(engine) as db:
        return list_audit(db)


def test_after_an_answer_the_page_says_what_it_was_and_z_undoes_it(app, project, engine):
    from curation.store.audit import list_audit

    client = login(app.test_client(), "alice")
    first = judge_page(client, project)
    shown = doc_text(first.data)
    after = answer(client, project, first.data, headers=HTMX, grade="1")
    body = after.data.decode()
    assert re.search(r"Last: <strong>1 Partially relevant</strong>\s*· <kbd>B</kbd> to change", body)
    judgment = field(after.data, "judgment")
    assert int(judgment) == judgments(engine, "alice")[0].id
    # the undo is a form: without its CSRF token nothing happens
    refused = client.post(f"/projects/{project.project_id}/judge/undo", data={"judgment": judgment})
    assert refused.status_code == 400 and len(judgments(engine, "alice")) == 1
    undone = client.post(f"/projects/{project.project_id}/judge/undo", headers=HTMX,
                         data={"judgment": judgment, "csrf_token": field(after.data, "csrf_token")})
    assert undone.status_code == 200
    assert doc_text(undone.data) == shown and b"answer the pair again" in undone.data
    assert judgments(engine, "alice") == []
    events = [e for e in list_audit_rows(engine, list_audit) if e.action == "answer_undone"]
    assert len(events) == 1 and events[0].actor == "alice" and '"grade": 1' in events[0].detail
    # the pair is open again: a plain page shows it, and the progress counts it as not done
    again = judge_page(client, project)
    assert doc_text(again.data) == shown and b"0 / " in again.data
    # only the last answer, and only one's own
    one = answer(client, project, again.data, headers=HTMX, grade="2")
    two = answer(client, project, one.data, headers=HTMX, grade="0")
    stale = client.post(f"/projects/{project.project_id}/judge/undo", headers=HTMX,
                        data={"judgment": field(one.data, "judgment"), "csrf_token": field(two.data, "csrf_token")})
    assert stale.status_code == 409 and len(judgments(engine, "alice")) == 2
    bob = login(app.test_client(), "bob")
    page = judge_page(bob, project)
    other = bob.post(f"/projects/{project.project_id}/judge/undo", headers=HTMX,
                     data={"judgment": field(two.data, "judgment"), "csrf_token": field(page.data, "csrf_token")})
    assert other.status_code == 404 and len(judgments(engine, "alice")) == 2


def test_undoing_a_changed_answer_keeps_the_earlier_one(app, project, engine):
    client = login(app.test_client(), "alice")
    first = judge_page(client, project)
    answer(client, project, first.data, headers=HTMX, grade="2")
    back = client.get(f"/projects/{project.project_id}/judge", query_string={"before": "999999999"})
    changed = answer(client, project, back.data, headers=HTMX, grade="0")
    client.post(f"/projects/{project.project_id}/judge/undo", headers=HTMX,
                data={"judgment": field(changed.data, "judgment"), "csrf_token": field(changed.data, "csrf_token")})
    assert [r.grade for r in judgments(engine, "alice")] == [2]
    assert b"1 / " in judge_page(client, project).data  # still done, with its first answer


def test_a_judge_waiting_for_held_work_is_told_when_it_is_released(app, engine, tmp_path):
    from curation.judge import assignment
    from curation.store import projects
    from curation.store.models import User
    from tests.support.projects import assigned_project

    setup = assigned_project(engine, tmp_path / "held", name="held", hold=True, overlap=1)
    client = login(app.test_client(), "alice")
    page = judge_page(client, setup)
    done = answer(client, setup, page.data, headers=HTMX, grade="1")
    assert b"Calibration done" in done.data and b"/judge/released" in done.data  # the screen polls
    released_url = f"/projects/{setup.project_id}/judge/released"
    waiting = client.get(released_url, headers=HTMX)
    assert waiting.status_code == 204 and waiting.data == b""
    with new_session(engine) as db:
        lead = db.exec(select(User).where(User.name == "lena")).one()
        assignment.release(db, projects.get_project(db, "held"), lead, agreement=0.9)
    out = client.get(released_url, headers=HTMX)
    assert out.status_code == 200 and b"released the rest of your pairs" in out.data
    assert f'href="/projects/{setup.project_id}/judge"'.encode() in out.data
    assert login(app.test_client(), "bob").get(f"/projects/{setup.project_id + 99}/judge/released").status_code == 404


def test_a_lead_on_a_judge_url_gets_a_page_that_says_where_to_go(app, project):
    lead = login(app.test_client(), "lena")
    response = judge_page(lead, project)
    assert response.status_code == 200
    body = response.data.decode()
    assert "No pairs of yours to judge here" in body and f'href="/lead/{project.project_id}"' in body
    assert "There is nothing here" not in body
    assert lead.get(f"/projects/{project.project_id + 99}/judge").status_code == 404  # no such project
    # a judge still learns nothing about a project that is not theirs
    judge = login(app.test_client(), "alice")
    assert judge.get(f"/projects/{project.project_id + 99}/judge").status_code == 404
