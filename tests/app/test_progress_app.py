"""The lead's progress page through Flask's test client (SQLite and PostgreSQL): leads only, the
figures of build_progress, server-drawn charts, the idle setting checked."""

from __future__ import annotations

from datetime import timedelta

import pytest

from curation.store.models import utcnow
from tests.support.client import login
from tests.support.judgments import judge_queue
from tests.support.projects import assigned_project


@pytest.fixture
def setup(engine, tmp_path):
    s = assigned_project(engine, tmp_path / "project", n_queries=4, docs_per_query=4, overlap=6, hold=True)
    judge_queue(engine, s.project_id, "alice", lambda d: int(d[-1]) % 3, start=utcnow() - timedelta(minutes=10),
                seconds=20.0, limit=5)
    return s


def test_progress_page_for_leads_only(app, setup):
    url = f"/lead/{setup.project_id}/progress"
    judge = login(app.test_client(), "alice")
    assert judge.get(url).status_code == 403
    lead = login(app.test_client(), "lena")
    r = lead.get(url)
    assert r.status_code == 200
    body = r.data.decode()
    assert '<tr data-judge="alice"' in body and '<td data-col="done">5</td>' in body
    assert 'data-testid="idle"' in body  # bob never answered
    assert 'data-chart="progress"' in body and 'data-chart="hourly"' in body
    assert "<script" not in body.split("</head>")[1]  # charts are server-drawn SVG, no script
    assert lead.get(url + "?idle=0").status_code == 400
    assert lead.get(url + "?idle=5").status_code == 200
    assert lead.get("/lead/9999/progress").status_code == 404
