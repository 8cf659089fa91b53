"""Qualification in the app (Flask's test client, SQLite and PostgreSQL): the judging page sends a
judge who must qualify to the qualification and shows no pair of the queue, answers are taught,
forms need CSRF, a judge reaches only their own teaching, the lead's Progress shows a blocked judge
and grants another attempt (audited), a judge cannot."""

from __future__ import annotations

import re

import pytest
from sqlmodel import func, select

from curation.store.audit import list_audit
from curation.store.engine import session as new_session
from curation.store.models import Judgment, PairView
from tests.support.client import csrf, login
from tests.support.projects import assigned_project
from tests.support.qualified import add_known_pairs, expected_grade, require_qualification


@pytest.fixture
def setup(engine, tmp_path):
    s = assigned_project(engine, tmp_path / "p", n_queries=6, docs_per_query=5, overlap=3,
                         judges=("alice", "bob", "nina"))
    add_known_pairs(engine, s.project_id, avoid_judge="nina", n=12)
    require_qualification(engine, s.project_name, pairs=4, pass_mark=0.75, retries=0)
    return s


def _docid(body: str) -> str:
    return re.search(r'id="doc-title">Recipe (d\d{3}_\d{2})<', body).group(1)


def _answer(client, url, body: str, *, right: bool):
    attempt = re.search(r'name="attempt" value="(\d+)"', body).group(1)
    position = re.search(r'name="position" value="(\d+)"', body).group(1)
    grade = expected_grade(_docid(body))
    r = client.post(url, data={"csrf_token": csrf(body.encode()), "attempt": attempt, "position": position,
                               "grade": grade if right else (grade + 1) % 3})
    assert r.status_code == 303, r.data[:300]
    return client.get(r.headers["Location"])


def test_qualification_blocks_the_queue_and_teaches(app, engine, setup):
    pid = setup.project_id
    nina = login(app.test_client(), "nina")
    r = nina.get(f"/projects/{pid}/judge")
    assert r.status_code == 303 and r.headers["Location"].endswith(f"/projects/{pid}/qualify")
    with new_session(engine) as s:  # no pair of the queue was shown: no token issued
        assert s.exec(select(func.count()).select_from(PairView)).one() == 0
    url = f"/projects/{pid}/qualify"
    body = nina.get(url).data.decode()
    assert "Qualification pair 1 of 4" in body and 'data-testid="qualification-pair"' in body
    assert "runSecret" not in body and "<script>window.__xss" not in body
    # no CSRF token: refused
    assert nina.post(url, data={"attempt": 1, "position": 1, "grade": 1}).status_code == 400
    taught = _answer(nina, url, body, right=False).data.decode()
    assert 'data-testid="teaching"' in taught and 'data-exact="no"' in taught
    assert "Expected:" in taught and 'data-testid="teaching-reason"' in taught
    # a reason is untrusted text: escaped
    assert "&lt;b&gt;read the steps&lt;/b&gt;" in taught or "(from the guidelines' grades)" in taught
    # another judge cannot see nina's teaching
    bob = login(app.test_client(), "bob")
    assert bob.get(url + "?attempt=1&position=1").status_code == 404
    # three more, right: 3 of 4 passes (0.75)
    for _ in range(3):
        body = nina.get(url).data.decode()
        taught = _answer(nina, url, body, right=True).data.decode()
    assert 'data-testid="start-judging"' in taught
    r = nina.get(f"/projects/{pid}/judge")
    assert r.status_code == 200 and 'id="pair"' in r.data.decode()
    with new_session(engine) as s:
        assert s.exec(select(func.count()).select_from(Judgment)).one() == 0


def test_blocked_judge_shown_to_the_lead_who_grants_another_attempt(app, engine, setup):
    pid = setup.project_id
    nina = login(app.test_client(), "nina")
    url = f"/projects/{pid}/qualify"
    for _ in range(4):
        body = nina.get(url).data.decode()
        last = _answer(nina, url, body, right=False).data.decode()
    assert 'data-testid="blocked"' in last and 'data-testid="retry"' not in last
    assert nina.get(f"/projects/{pid}/judge").status_code == 303
    # a judge cannot grant
    grant = f"/lead/{pid}/qualification/grant"
    assert nina.post(grant, data={"csrf_token": csrf(last.encode()), "judge": "nina"}).status_code == 403
    lena = login(app.test_client(), "lena")
    progress = lena.get(f"/lead/{pid}/progress").data.decode()
    assert 'data-qualification="blocked"' in progress and 'data-testid="grant-attempt"' in progress
    assert lena.post(grant, data={"judge": "nina"}).status_code == 400  # CSRF
    r = lena.post(grant, data={"csrf_token": csrf(progress.encode()), "judge": "nina"})
    assert r.status_code == 303
    with new_session(engine) as s:
        assert list_audit(s, action="qualification_granted")[0].target == "nina"
    body = nina.get(url).data.decode()
    assert "Attempt 2 of 2" in body and "Qualification pair 1 of 4" in body
    assert lena.post(grant, data={"csrf_token": csrf(progress.encode()), "judge": "nobody"}).status_code == 404


def test_judges_of_projects_without_qualification_see_nothing_of_it(app, engine, tmp_path):
    s = assigned_project(engine, tmp_path / "plain")
    alice = login(app.test_client(), "alice")
    r = alice.get(f"/projects/{s.project_id}/judge")
    assert r.status_code == 200 and "Qualification" not in r.data.decode()
    r = alice.get(f"/projects/{s.project_id}/qualify")
    assert r.status_code == 303 and r.headers["Location"].endswith(f"/projects/{s.project_id}/judge")
    assert alice.get("/projects/9999/qualify").status_code == 404
