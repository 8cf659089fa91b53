"""The minimum answer time is a project setting: a lead sets it on the project's Settings page (CSRF,
audited) or with `golden project settings`; the judging server applies the project's own value over
its GOLDEN_MIN_ANSWER_MS (the default of a project without one), on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import re
import time

from click.testing import CliRunner
from sqlmodel import select

from curation.cli import main
from curation.store.audit import list_audit
from curation.store.engine import session as new_session
from curation.store.models import Project
from tests.app.test_app_judging import HTMX, answer, judge_page, judgments
from tests.support.client import app_on, csrf, login


def _settings(client, project_id):
    return client.get(f"/lead/{project_id}/settings")


def _save(client, project_id, value: str, *, token: bool = True):
    data = {"min_answer_ms": value}
    if token:
        data["csrf_token"] = csrf(_settings(client, project_id).data)
    return client.post(f"/lead/{project_id}/settings", data=data)


def _stored(engine) -> int | None:
    with new_session(engine) as db:
        return db.exec(select(Project.min_answer_ms)).one()


def _events(engine):
    with new_session(engine) as db:
        return [(e.action, e.actor, json.loads(e.detail)) for e in list_audit(db) if e.action == "project_settings"]


def test_a_lead_sets_the_projects_minimum_and_the_server_applies_it(project, engine):
    pid = project.project_id
    with app_on(engine, MIN_ANSWER_MS=0) as app:  # the server's default: no minimum
        lead = login(app.test_client(), "lena")
        page = _settings(lead, pid)
        assert page.status_code == 200
        body = page.data.decode()
        assert 'data-testid="min-answer-in-force">0 ms' in body and "the server's default" in body
        assert 'aria-current="page">Settings' in body  # in the lead navigation
        # a judge cannot open or change it; a form without its CSRF token changes nothing
        judge = login(app.test_client(), "alice")
        assert _settings(judge, pid).status_code == 403
        own_token = csrf(judge.get(f"/projects/{pid}/judge").data)
        refused = judge.post(f"/lead/{pid}/settings", data={"min_answer_ms": "5", "csrf_token": own_token})
        assert refused.status_code == 403
        assert _save(lead, pid, "2000", token=False).status_code == 400
        assert _stored(engine) is None
        for bad in ("-1", "60001", "1.5", "soon", "٣"):
            r = _save(lead, pid, bad)
            assert r.status_code == 400 and b"whole number of milliseconds" in r.data, bad
        assert _stored(engine) is None

        r = _save(lead, pid, "2000")
        assert r.status_code == 303
        assert _stored(engine) == 2000
        assert 'data-testid="min-answer-in-force">2000 ms' in _settings(lead, pid).data.decode()
        assert _events(engine) == [("project_settings", "lena", {"min_answer_ms": {"from": None, "to": 2000}})]

        # the project's 2 s, not the server's 0: an answer right after its pair is refused, both ways
        page = judge_page(judge, project)
        assert b'data-min-ms="2000"' in page.data
        for headers in (HTMX, {}):
            refused = answer(judge, project, page.data, headers=headers, grade="1")
            assert refused.status_code == 409 and b"not recorded" in refused.data
        assert judgments(engine) == []

        # back to the server's default (empty): accepted at once
        assert _save(lead, pid, "").status_code == 303
        assert _stored(engine) is None
        page = judge_page(judge, project)
        assert b'data-min-ms="0"' in page.data
        assert answer(judge, project, page.data, headers=HTMX, grade="1").status_code == 200
        assert len(judgments(engine, "alice")) == 1
        assert _events(engine)[0][2] == {"min_answer_ms": {"from": 2000, "to": None}}  # newest first
        assert _save(lead, pid, "").status_code == 303  # unchanged: nothing more recorded
        assert len(_events(engine)) == 2


def test_the_projects_own_zero_wins_over_the_servers_default(project, engine):
    with new_session(engine) as db:
        db.exec(select(Project)).one().min_answer_ms = 0
        db.commit()
    with app_on(engine, MIN_ANSWER_MS=5000) as app:
        judge = login(app.test_client(), "alice")
        page = judge_page(judge, project)
        assert b'data-min-ms="0"' in page.data
        assert answer(judge, project, page.data, headers=HTMX, grade="2").status_code == 200
        page = judge_page(judge, project)
        assert answer(judge, project, page.data, grade="1").status_code == 303  # without htmx too
    assert [j.grade for j in judgments(engine, "alice")] == [2, 1]


def test_the_server_default_applies_while_the_project_has_none(project, engine):
    with app_on(engine, MIN_ANSWER_MS=1500) as app:
        judge = login(app.test_client(), "alice")
        page = judge_page(judge, project)
        assert b'data-min-ms="1500"' in page.data
        assert answer(judge, project, page.data, headers=HTMX, grade="1").status_code == 409
        time.sleep(1.6)
        assert answer(judge, project, page.data, headers=HTMX, grade="1").status_code == 200


def test_golden_project_settings_shows_and_sets_the_minimum(project, engine, db_url):
    run = CliRunner().invoke
    out = run(main, ["project", "settings", "recipes", "--db", db_url])
    assert out.exit_code == 0, out.output
    assert "min-answer-ms: default (the server's GOLDEN_MIN_ANSWER_MS" in out.output
    out = run(main, ["project", "settings", "recipes", "--min-answer-ms", "400", "--db", db_url])
    assert out.exit_code == 0, out.output
    assert "changed" in out.output and "min-answer-ms: 400" in out.output
    assert _stored(engine) == 400
    for bad in ("-5", "60001", "soon", "4e2"):
        out = run(main, ["project", "settings", "recipes", "--min-answer-ms", bad, "--db", db_url])
        assert out.exit_code == 2 and "--min-answer-ms" in out.output, bad
    assert _stored(engine) == 400
    out = run(main, ["project", "settings", "recipes", "--min-answer-ms", "default", "--db", db_url])
    assert out.exit_code == 0 and "min-answer-ms: default" in out.output
    assert _stored(engine) is None
    (last, _, detail), (first, _, first_detail) = _events(engine)
    assert (first_detail, detail) == ({"min_answer_ms": {"from": None, "to": 400}},
                                      {"min_answer_ms": {"from": 400, "to": None}})
    out = run(main, ["project", "settings", "nosuch", "--db", db_url])
    assert out.exit_code != 0 and re.search(r"no project 'nosuch'", out.output)
