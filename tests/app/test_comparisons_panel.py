"""The lead dashboard's Comparisons panel: the same figures as `golden decisive settle --json` (one report,
curation.evaluate.decisive.settlement_report), for leads only, and the release form is CSRF-protected
and recorded."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from click.testing import CliRunner
from sqlmodel import select

from curation.cli import main
from curation.evaluate import decisive
from curation.store.engine import session as new_session
from curation.store.models import DecisiveComparison
from curation.store.projects import get_project
from tests.support.client import csrf, login
from tests.support.judgments import judge_queue
from tests.support.projects import RUN_NAMES, assigned_project

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def test_panel_shows_the_settle_report(app, engine, tmp_path):
    s = assigned_project(engine, tmp_path / "project", n_queries=6, docs_per_query=5, overlap=0, hold=False)
    a, b = RUN_NAMES[0], RUN_NAMES[1]
    with new_session(engine) as db:
        proj = get_project(db, "recipes")
        decisive.record_comparisons(db, proj, [f"{a},{b}"])
        db.commit()
    judge_queue(engine, s.project_id, "alice", lambda docid: int(docid[-1]) % 3, start=T0, seconds=6.0)
    out = CliRunner().invoke(main, ["decisive", "settle", "--project", "recipes", "--db",
                                    engine.url.render_as_string(False),
                                    "--json"])
    assert out.exit_code == 0, out.output
    want = json.loads(out.output)["comparisons"][0]

    judge = login(app.test_client(), "alice")
    assert judge.get(f"/lead/{s.project_id}/comparisons").status_code == 403
    lead = login(app.test_client(), "lena")
    page = lead.get(f"/lead/{s.project_id}")
    assert b'data-testid="comparisons"' in page.data
    r = lead.get(f"/lead/{s.project_id}/comparisons", headers={"HX-Request": "true"})
    assert r.status_code == 200
    body = r.data.decode()
    assert f'data-a="{a}" data-b="{b}"' in body
    assert f'<td data-testid="status">{want["status"]}</td>' in body
    assert f'<td data-testid="can-change">{want["pairs_can_change"]}</td>' in body
    assert f'{round(100 * want["share_judged"])}%' in body
    assert f'({want["judged_pairs"]} / {want["pool_pairs"]})' in body
    if want["status"] == "open":
        assert f'{want["estimate"]["p_flip"]:.2f}' in body
        assert "not a guarantee" in body
    # the release form: no token -> refused; an open comparison cannot be released
    r = lead.post(f"/lead/{s.project_id}/comparisons/release", data={"compare": f"{a},{b}"})
    assert r.status_code == 400
    token = csrf(page.data)
    r = lead.post(f"/lead/{s.project_id}/comparisons/release", data={"compare": f"{a},{b}", "csrf_token": token})
    if want["status"] == "open":
        assert r.status_code == 400 and b"still open" in r.data
    with new_session(engine) as db:
        row = db.exec(select(DecisiveComparison)).one()
        assert (row.released_at is None) == (want["status"] == "open")
