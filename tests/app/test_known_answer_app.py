"""Known-answer pairs in the app (Flask's test client, SQLite and PostgreSQL): answered through the
judging page like any pair (the answer marked, not a label), each judge's accuracy on the lead's
Progress page with the known-answer items apart, a held judge told why, the lead's release (CSRF,
audited), and an adjudicated pair made a known-answer pair from the adjudication page."""

from __future__ import annotations

import re

from sqlmodel import select

from curation.judge import gold
from curation.judge.known_answer import MIN_ANSWERS
from curation.store import users
from curation.store.engine import session as new_session
from curation.store.models import AuditEvent, Judgment, KnownAnswer, KnownAnswerHold, Project
from tests.support.client import csrf, login
from tests.support.known_answer import known_answer_project


def _answer_everything(client, pid: int, grade: int = 0) -> int:
    page = client.get(f"/projects/{pid}/judge")
    n = 0
    while b'name="token"' in page.data:
        token = re.search(rb'name="token" value="([^"]+)"', page.data).group(1).decode()
        page = client.post(f"/projects/{pid}/judge", data={"token": token, "grade": str(grade),
                                                          "csrf_token": csrf(page.data)},
                           headers={"HX-Request": "true"})
        assert page.status_code == 200, page.data[:300]
        page.close()  # as a WSGI server does once the response is sent (its call_on_close functions run)
        n += 1
    return n


def test_known_answer_answers_accuracy_hold_and_release(app, engine, tmp_path):
    pid, known = known_answer_project(engine, tmp_path / "p", rate=2)
    carol = login(app.test_client(), "carol")
    n = _answer_everything(carol, pid)
    with new_session(engine) as s:
        cid = users.get_user(s, "carol").id
        marked = s.exec(select(Judgment).where(Judgment.judge_id == cid, Judgment.purpose == "known")).all()
        assert len(marked) == len(known) and n > len(known)
        # four answers are too few to flag; hold carol by hand to see the page and the release
        s.add(KnownAnswerHold(project_id=pid, judge_id=cid, answers=4, exact=0.0))
        s.commit()
    lead = login(app.test_client(), "lena")
    body = lead.get(f"/lead/{pid}/progress").data.decode()
    assert 'data-testid="accuracy-table"' in body and '<tr data-judge="carol" data-state="too few">' in body
    assert f'<span data-testid="known-done">{len(known)}</span>' in body
    assert 'data-testid="release-hold"' in body

    held = carol.get(f"/projects/{pid}/judge").data.decode()
    assert "Your work is paused" in held and "A lead will review your recent answers" in held
    assert 'name="token"' not in held

    page = lead.get(f"/lead/{pid}/progress")
    refused = lead.post(f"/lead/{pid}/progress/release-hold", data={"judge": str(cid)})
    assert refused.status_code == 400  # no CSRF token
    released = lead.post(f"/lead/{pid}/progress/release-hold", data={"judge": str(cid), "csrf_token": csrf(page.data)})
    assert released.status_code == 303
    with new_session(engine) as s:
        hold = s.exec(select(KnownAnswerHold).where(KnownAnswerHold.judge_id == cid)).one()
        assert hold.released_at is not None and hold.released_by_id == users.get_user(s, "lena").id
        assert s.exec(select(AuditEvent).where(AuditEvent.action == "hold_released")).first() is not None
    assert 'data-testid="held"' not in carol.get(f"/projects/{pid}/judge").data.decode()


def test_a_judge_cannot_release_a_hold(app, engine, tmp_path):
    pid, _ = known_answer_project(engine, tmp_path / "p")
    carol = login(app.test_client(), "carol")
    page = carol.get(f"/projects/{pid}/judge")
    assert carol.post(f"/lead/{pid}/progress/release-hold",
                      data={"judge": "1", "csrf_token": csrf(page.data)}).status_code == 403


def test_the_adjudication_page_makes_a_known_answer_pair(app, engine, tmp_path):
    pid, _ = known_answer_project(engine, tmp_path / "p")
    with new_session(engine) as s:
        # a disagreement: alice and carol label a pair differently (carol through the import path)
        from curation.judge.judging import next_task, submit

        alice, carol = users.get_user(s, "alice"), users.get_user(s, "carol")
        task = next_task(s, pid, alice)
        submit(s, alice, task.token, grade=0)
        from curation.store.lookups import pair_ids

        pair_id = pair_ids(s, pid)[task.qid, task.docid]
        s.add(Judgment(project_id=pid, pair_id=pair_id, judge_id=carol.id, grade=2, source="import"))
        s.commit()
    lead = login(app.test_client(), "lena")
    page = lead.get(f"/lead/{pid}/adjudicate?pair={pair_id}")
    assert b'name="known_answer"' in page.data
    r = lead.post(f"/lead/{pid}/adjudicate", data={"pair_id": str(pair_id), "grade": "1", "reason": "partly answers",
                                                    "known_answer": "yes", "csrf_token": csrf(page.data)})
    assert r.status_code in (200, 302, 303)
    with new_session(engine) as s:
        ka = s.exec(select(KnownAnswer).where(KnownAnswer.pair_id == pair_id)).one()
        assert gold.accepted_grades(ka) == (1,) and ka.reason == "partly answers" and ka.source == "adjudication"
        assert ka.adjudication_id is not None
        assert s.get(Project, pid).known_answer_rate == 3


def test_a_judge_is_held_after_their_answers_show_them_below_the_bar(app, engine, tmp_path):
    pid, known = known_answer_project(engine, tmp_path / "p", rate=2, known=MIN_ANSWERS + 1, n_queries=20)
    carol = login(app.test_client(), "carol")
    _answer_everything(carol, pid, grade=0)  # never an accepted grade
    with new_session(engine) as s:
        cid = users.get_user(s, "carol").id
        answered = len(s.exec(select(Judgment).where(Judgment.judge_id == cid, Judgment.purpose == "known")).all())
        assert answered >= MIN_ANSWERS
        # checked once each answer's response was out, without a lead opening Progress
        hold = s.exec(select(KnownAnswerHold).where(KnownAnswerHold.judge_id == cid)).one()
        assert hold.released_at is None and hold.exact == 0.0
    assert "Your work is paused" in carol.get(f"/projects/{pid}/judge").data.decode()
