"""The lead's pages through Flask's test client, on SQLite and PostgreSQL: the numbers shown are the
agreement report's, judges get 403, every form needs its CSRF token, adjudication changes the final
label, and releasing records who released at what agreement."""

from __future__ import annotations

import html
import re
from datetime import datetime, timezone

import pytest

from tests.support.judgments import judge_queue, write_qrels
from tests.support.client import app_on, csrf, login
from curation.agree.agreement import agreement_report
from curation.judge.importing import import_judgments
from curation.agree.labels import final_labels, load_judgments
from curation.store.models import Project, User
from curation.store.projects import current_guidelines
from curation.store.engine import session as new_session
from tests.support.projects import assigned_project

HTMX = {"HX-Request": "true"}
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)


def alice_grade(docid: str) -> int:
    return int(docid[-1]) % 3


def bob_grade(docid: str) -> int:  # bob calls every "...1" document not relevant: a disagreement
    return 0 if docid.endswith("1") else alice_grade(docid)


@pytest.fixture
def setup(engine, tmp_path):
    s = assigned_project(engine, tmp_path / "project", n_queries=6, docs_per_query=5, overlap=12, hold=True)
    judge_queue(engine, s.project_id, "alice", alice_grade, start=T0, seconds=6.0)
    judge_queue(engine, s.project_id, "bob", bob_grade, start=T0, seconds=1.5)
    return s


def text_of(body: bytes) -> str:
    s = re.sub(r"<[^>]+>", " ", body.decode())
    return re.sub(r"\s+", " ", html.unescape(s))


def test_judges_get_403_and_anonymous_visitors_the_login(app, setup):
    anon = app.test_client()
    r = anon.get(f"/lead/{setup.project_id}")
    assert r.status_code == 302 and "/login" in r.headers["Location"]
    judge = login(app.test_client(), "alice")
    for url in ("/lead/", f"/lead/{setup.project_id}", f"/lead/{setup.project_id}/adjudicate"):
        r = judge.get(url)
        assert r.status_code == 403, url
        assert b"alice" not in r.data.split(b"</header>")[1]  # nothing of the page leaks
        assert b"kappa" not in r.data
    token = csrf(judge.get(f"/projects/{setup.project_id}/judge").data)
    r = judge.post(f"/lead/{setup.project_id}/release", data={"csrf_token": token, "confirm": "yes"})
    assert r.status_code == 403
    r = judge.post(f"/lead/{setup.project_id}/adjudicate", data={"csrf_token": token, "pair_id": 1, "grade": 2,
                                                                  "reason": "x"})
    assert r.status_code == 403


def test_dashboard_shows_the_reports_numbers_and_a_heatmap(app, engine, setup):
    lead = login(app.test_client(), "lena")
    r = lead.get(f"/lead/{setup.project_id}")
    assert r.status_code == 200
    with new_session(engine) as s:
        project = s.get(Project, setup.project_id)
        report = agreement_report(load_judgments(s, project, overlap_only=True), scale=[0, 1, 2], cut=1, seed=0)
    pair = report.pairwise[0]
    page = text_of(r.data)
    assert f"{100 * pair.measures['agreement'].value:.1f}%" in page
    for name in ("kappa", "kappa_linear", "kappa_quadratic", "alpha_nominal", "alpha_ordinal"):
        est = pair.measures[name]
        assert f"{est.value:.3f} [{est.low:.3f}, {est.high:.3f}]" in page, name
    assert "too few pairs" in page  # 12 shared pairs < 30
    assert "≥ 70%" in page and "< 60%" in page  # the thresholds beside the verdict
    svg = re.search(rb'<svg class="heatmap".*?</svg>', r.data, re.S).group(0)
    # The heatmap's cells carry the confusion counts (rows alice, columns bob).
    counts = [int(n) for n in re.findall(rb'<text [^>]*font-size="12"[^>]*>(\d+)</text>', svg)]
    assert counts == [n for row in pair.confusion for n in row]
    assert b"nan" not in r.data.lower().replace(b"nanoseconds", b"")
    assert "bob 1.5 100%" in page and "alice 6.0 0%" in page  # timing: median seconds, share under 2 s
    assert b'data-chart="drift"' in r.data and b'data-chart="distribution"' in r.data
    assert "freq=head" in page  # per stratum
    # Thresholds and the cut are configurable from the page.
    r = lead.get(f"/lead/{setup.project_id}", query_string={"usable": "90", "marginal": "85", "cut": "2"})
    page = text_of(r.data)
    assert "≥ 90%" in page and "85–90%" in page and "grade ≥ 2 is relevant" in page
    r = lead.get(f"/lead/{setup.project_id}", query_string={"usable": "50", "marginal": "60"})
    assert r.status_code == 400


def test_adjudication_with_csrf_changes_the_final_label(app, engine, setup, tmp_path):
    # Earlier labels of the document holding <script>: 0 against 2, the largest distance, first.
    with new_session(engine) as s:
        for judge, grade in (("alice", 0), ("bob", 2)):
            path = write_qrels(tmp_path / f"{judge}.qrels", [("q000", 0, "d000_00", grade)])
            import_judgments(s, path, judge=judge)
    lead = login(app.test_client(), "lena")
    page = lead.get(f"/lead/{setup.project_id}/adjudicate")
    assert page.status_code == 200
    pair_id = int(re.search(rb'name="pair_id" value="(\d+)"', page.data).group(1))
    # The largest grade distance comes first: the untrusted document, shown as text.
    assert b"d000_00" in page.data and b"<script>window.__xss" not in page.data
    assert b"&lt;script&gt;window.__xss" in page.data and b"<img src=x" not in page.data
    with new_session(engine) as s:
        before = {f.pair_id: f for f in final_labels(s, setup.project_id)}
    assert before[pair_id].source == "unresolved"
    data = {"pair_id": pair_id, "grade": "1", "reason": "partly answers"}
    assert lead.post(f"/lead/{setup.project_id}/adjudicate", data=data).status_code == 400  # no CSRF token
    r = lead.post(f"/lead/{setup.project_id}/adjudicate", data={**data, "csrf_token": csrf(page.data)}, headers=HTMX)
    assert r.status_code == 200
    assert r.data.lstrip().startswith(b'<section id="adjudication"')  # the partial, for htmx to swap
    assert f'name="pair_id" value="{pair_id}"'.encode() not in r.data  # the next disagreement
    with new_session(engine) as s:
        after = {f.pair_id: f for f in final_labels(s, setup.project_id)}
    assert (after[pair_id].grade, after[pair_id].source, after[pair_id].adjudicated_by) == (1, "adjudicated", "lena")
    # A missing reason is refused with the form kept.
    nxt = int(re.search(rb'name="pair_id" value="(\d+)"', r.data).group(1))
    r = lead.post(f"/lead/{setup.project_id}/adjudicate",
                  data={"pair_id": nxt, "grade": "2", "reason": " ", "csrf_token": csrf(page.data)}, headers=HTMX)
    assert r.status_code == 422 and b"say why" in r.data and f'name="pair_id" value="{nxt}"'.encode() in r.data


def test_release_records_the_lead_and_the_agreement(app, engine, setup):
    lead = login(app.test_client(), "lena")
    page = lead.get(f"/lead/{setup.project_id}")
    token = csrf(page.data)
    assert lead.post(f"/lead/{setup.project_id}/release", data={}).status_code == 400  # no CSRF token
    r = lead.post(f"/lead/{setup.project_id}/release", data={"csrf_token": token}, follow_redirects=True)
    assert "Not released: the verdict is too few pairs" in text_of(r.data)
    with new_session(engine) as s:
        assert s.get(Project, setup.project_id).released_at is None
        report = agreement_report(load_judgments(s, setup.project_id, overlap_only=True), scale=[0, 1, 2], cut=1)
    r = lead.post(f"/lead/{setup.project_id}/release", data={"csrf_token": token, "confirm": "yes"},
                  follow_redirects=True)
    assert "Released 18 main pairs" in text_of(r.data)
    with new_session(engine) as s:
        project = s.get(Project, setup.project_id)
        assert project.released_at is not None
        assert s.get(User, project.released_by_id).name == "lena"
        assert abs(project.released_agreement - report.verdict.value) < 1e-12
    assert "Released by lena" in text_of(lead.get(f"/lead/{setup.project_id}").data)


def test_new_guidelines_version_from_the_adjudication_screen(app, engine, setup):
    lead = login(app.test_client(), "lena")
    page = lead.get(f"/lead/{setup.project_id}/adjudicate")
    r = lead.post(f"/lead/{setup.project_id}/guidelines",
                  data={"csrf_token": csrf(page.data), "text": "# New\n\nPartial answers are 1.", "note": "after q1"},
                  follow_redirects=True)
    assert r.status_code == 200 and "Guidelines version 2 is in force" in text_of(r.data)
    with new_session(engine) as s:
        gv = current_guidelines(s, setup.project_id)
        assert (gv.version, gv.note, s.get(User, gv.created_by_id).name) == (2, "after q1", "lena")


def test_a_project_without_judgments_shows_undefined_not_nan(engine, tmp_path):
    s = assigned_project(engine, tmp_path / "empty", name="empty", n_queries=2, docs_per_query=2, overlap=2)
    with app_on(engine) as app:
        lead = login(app.test_client(), "lena")
        r = lead.get(f"/lead/{s.project_id}")
        assert r.status_code == 200
        page = text_of(r.data)
        assert "undefined" in page and "no labels yet" in page
        assert "nan" not in page.lower().split()
        r = lead.get(f"/lead/{s.project_id}/adjudicate")
        assert r.status_code == 200 and "No disagreement waits" in text_of(r.data)


def test_three_judges_get_an_all_judges_row_and_a_heatmap_per_pair(engine, tmp_path):
    from tests.support.projects import add_users, pairs_project

    pairs = [(f"q{q}", f"d{q}{d}") for q in range(4) for d in range(3)]
    pid = pairs_project(engine, tmp_path / "three", pairs, name="three").id
    add_users(engine, ann="judge", ben="judge", cat="judge", lena="lead")
    with new_session(engine) as s:
        for i, judge in enumerate(("ann", "ben", "cat")):
            rows = [(q, 0, d, (int(d[-1]) + (1 if (judge == "cat" and d.endswith("2")) else 0)) % 3) for q, d in pairs]
            import_judgments(s, write_qrels(tmp_path / f"{judge}.qrels", rows), judge=judge)
    with app_on(engine) as app:
        r = login(app.test_client(), "lena").get(f"/lead/{pid}")
        page = text_of(r.data)
        assert r.status_code == 200 and "all 3 judges" in page
        assert len(re.findall(rb'<svg class="heatmap"', r.data)) == 3  # ann x ben, ann x cat, ben x cat
        assert "Cohen's kappa is for two judges" in page  # the all-judges kappa cell says why it is empty
        with new_session(engine) as s:
            report = agreement_report(load_judgments(s, pid, overlap_only=True), scale=[0, 1, 2], cut=1)
        assert f"{report.overall.measures['alpha_nominal'].value:.3f}" in page
