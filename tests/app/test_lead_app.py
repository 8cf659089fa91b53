"""The lead's pages through Flask's test client, on SQLite and PostgreSQL: the numbers shown are the
agreement report's, judges get 403, every form needs its CSRF token, adjudication changes the final
label, and releasing records who released at what agreement."""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime

import pytest

from curation.agree.agreement import agreement_report
from curation.agree.labels import final_labels, load_judgments
from curation.judge.importing import import_judgments
from curation.store.engine import session as new_session
from curation.store.models import Project, User
from curation.store.projects import current_guidelines
from tests.support.client import app_on, csrf, login
from tests.support.judgments import judge_queue, write_qrels
from tests.support.projects import assigned_project

HTMX = {"HX-Request": "true"}
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


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
    for name in ("kappa", "kappa_linear", "kappa_quadratic", "alpha_nominal", "alpha_ordinal", "alpha_interval"):
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


def test_every_staff_page_has_the_one_role_guard_and_an_unknown_project_is_404(app, setup):
    """Lead, leak, versions and report pages: a judge gets the same 403, a lead gets in; a project id
    that does not exist is a 404 on the lead and leak pages alike."""
    pid = setup.project_id
    staff = (f"/lead/{pid}", f"/lead/{pid}/adjudicate", f"/lead/{pid}/leaks", "/versions/", "/reports/x/v1")
    judge = login(app.test_client(), "alice")
    for url in staff:
        r = judge.get(url)
        assert r.status_code == 403 and "Only leads and admins can open this page." in text_of(r.data), url
    lead = login(app.test_client(), "lena")
    assert lead.get("/versions/").status_code == 200
    for url in ("/lead/9999", "/lead/9999/adjudicate", "/lead/9999/leaks"):
        assert lead.get(url).status_code == 404, url
    assert judge.get("/projects/9999/judge").status_code == 404  # the judging page's own lookup


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
    # The document comes first; the information need, empty, follows it collapsed.
    body = page.data.decode()
    assert body.index('data-testid="document"') < body.index('id="need-form"')
    assert re.search(r'<details class="need-form" id="need-form">', body)
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
    # A missing grade is refused with the form kept; a missing reason is not (a lead may decide by keyboard alone).
    nxt = int(re.search(rb'name="pair_id" value="(\d+)"', r.data).group(1))
    r = lead.post(f"/lead/{setup.project_id}/adjudicate",
                  data={"pair_id": nxt, "grade": "", "reason": "x", "csrf_token": csrf(page.data)}, headers=HTMX)
    assert r.status_code == 422 and b"choose the final grade" in r.data
    assert f'name="pair_id" value="{nxt}"'.encode() in r.data
    r = lead.post(f"/lead/{setup.project_id}/adjudicate",
                  data={"pair_id": nxt, "grade": "2", "reason": " ", "csrf_token": csrf(page.data)}, headers=HTMX)
    assert r.status_code == 200 and f'name="pair_id" value="{nxt}"'.encode() not in r.data
    with new_session(engine) as s:
        after = {f.pair_id: f for f in final_labels(s, setup.project_id)}
    assert (after[nxt].grade, after[nxt].source, after[nxt].reason) == (2, "adjudicated", "")


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
                  follow_redirects=True)  # forced without saying why: refused
    assert "Not released" in text_of(r.data) and "say why" in text_of(r.data)
    r = lead.post(f"/lead/{setup.project_id}/release",
                  data={"csrf_token": token, "confirm": "yes", "reason": "pilot <b>week</b>"}, follow_redirects=True)
    assert "Released 18 main pairs" in text_of(r.data)
    with new_session(engine) as s:
        project = s.get(Project, setup.project_id)
        assert project.released_at is not None
        assert s.get(User, project.released_by_id).name == "lena"
        assert abs(project.released_agreement - report.verdict.value) < 1e-12
    page = lead.get(f"/lead/{setup.project_id}").data
    assert "Released by lena" in text_of(page)
    assert b"pilot &lt;b&gt;week&lt;/b&gt;" in page  # the recorded reason, escaped
    with new_session(engine) as s:
        assert s.get(Project, setup.project_id).released_reason == "pilot <b>week</b>"


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
        for _i, judge in enumerate(("ann", "ben", "cat")):
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
        # Fleiss' kappa over all judges, from the same report (pairwise rows show a dash in its column).
        assert "Fleiss' kappa" in page
        assert f"{report.overall.measures['fleiss_kappa'].value:.3f}" in page
        assert _row_cells(r.data.decode(), "agreement-table", "ann + ben")[-1][0] == "–"


def _row_cells(body: str, testid: str, who: str) -> list[tuple[str, str]]:
    """(value, interval) of each figure cell in the row of ``who`` in the table ``testid``."""
    table = re.search(rf'<table[^>]*data-testid="{testid}".*?</table>', body, re.S).group(0)
    row = re.search(rf"<tr><th>{re.escape(who)}</th>(.*?)</tr>", table, re.S).group(1)
    out = []
    for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S):
        value = re.search(r'<span class="value">([^<]*)</span>', cell)
        ci = re.search(r'<span class="ci">([^<]*)</span>', cell)
        out.append((value.group(1) if value else text_of(cell.encode()).strip(), ci.group(1) if ci else ""))
    return out


def _as_shown(est: dict, percent: bool) -> tuple[str, str]:
    """A figure of the CLI's JSON as the page rounds it."""
    if est["value"] is None:
        return "undefined", ""
    f = (lambda x: f"{100 * x:.1f}") if percent else (lambda x: f"{x:.3f}")
    ci = f"[{f(est['low'])}, {f(est['high'])}]" if est["low"] is not None else ""
    return f(est["value"]) + ("%" if percent else ""), ci


def test_cli_json_and_dashboard_show_the_same_figures_on_a_1_to_3_scale(engine, tmp_path):
    """One agreement report: on a scale without grade 0 (1-3) the CLI's default cut is the dashboard's
    (grade >= 2 relevant, as 1 would make every grade relevant) and every figure is the same."""
    import json

    from click.testing import CliRunner

    from curation.cli import main

    s = assigned_project(engine, tmp_path / "p13", name="one3", n_queries=6, docs_per_query=5, overlap=12)
    grades13 = [{"grade": g, "name": n, "description": f"grade {g}"}
                for g, n in ((1, "Not relevant"), (2, "Relevant"), (3, "Highly relevant"))]
    with new_session(engine) as db:  # a 1-3 scale (imported from a store that labels 1, 2, 3)
        project = db.get(Project, s.project_id)
        project.scale = "1-3"
        project.grades_json = json.dumps(grades13)
        db.add(project)
        db.commit()

    def alice(docid: str) -> int:
        return int(docid[-1]) % 3 + 1

    def bob(docid: str) -> int:  # bob calls every "...1" document not relevant (alice: 2)
        return 1 if docid.endswith("1") else alice(docid)

    judge_queue(engine, s.project_id, "alice", alice, start=T0, seconds=6.0)
    judge_queue(engine, s.project_id, "bob", bob, start=T0, seconds=1.5)
    url = engine.url.render_as_string(hide_password=False)
    result = CliRunner().invoke(main, ["labels", "agreement", "--project", "one3", "--json", "--db", url])
    assert result.exit_code == 0, result.output
    cli = json.loads(result.output)
    with app_on(engine) as app:
        r = login(app.test_client(), "lena").get(f"/lead/{s.project_id}")
    assert r.status_code == 200
    body, page = r.data.decode(), text_of(r.data)

    # The cut both read: 1 does not split 1-3, so grade >= 2 is relevant.
    assert cli["scale"] == [1, 2, 3] and cli["cut"] == 2
    assert re.search(r'<option value="(\d+)" selected>', body).group(1) == "2"
    assert "Binary: grade ≥ 2 is relevant" in page
    # Binary percent agreement by hand from the labels: alice and bob differ on relevance only where
    # alice's grade is >= 2 and bob's is 1, i.e. on the "...1" documents.
    with new_session(engine) as db:
        by_pair: dict = {}
        for rec in load_judgments(db, s.project_id, overlap_only=True):
            by_pair.setdefault((rec.qid, rec.docid), {})[rec.judge] = rec.grade
    both = [g for g in by_pair.values() if len(g) == 2]
    same = sum((g["alice"] >= 2) == (g["bob"] >= 2) for g in both)
    pair = cli["pairwise"][0]
    assert pair["pairs"] == len(both) == 12
    assert abs(pair["binary"]["agreement"]["value"] - same / len(both)) < 1e-12

    # Every figure of the agreement and binary tables is the CLI's, as the page rounds it.
    cells = _row_cells(body, "agreement-table", "alice + bob")
    assert cells[:2] == [(str(pair["pairs"]), ""), (str(pair["queries"]), "")]
    want = [_as_shown(est, name == "agreement") for name, est in pair["measures"].items()]
    assert cells[2:] == want and len(want) == 7  # with Krippendorff's interval alpha
    cells = _row_cells(body, "binary-table", "alice + bob")
    want = [_as_shown(est, name == "agreement") for name, est in pair["binary"].items()]
    assert cells[1:] == want and len(want) == 3
    # The verdict, its thresholds and the bootstrap settings.
    v = cli["verdict"]
    assert (v["band"], v["thresholds"]["usable"], v["thresholds"]["marginal"]) == ("too few pairs", 0.70, 0.60)
    assert v["message"] in page and f"Read on percent agreement, {v['on']}" in page
    assert cli["bootstrap"]["resamples"] == 1000 and "from 1000 bootstrap resamples" in page
    # The disagreements waiting for a lead: the ...1 documents of the overlap set.
    assert cli["disagreements"] == {"open": len(both) - same, "resolved": 0}
    assert re.search(r'data-testid="open-count">(\d+)<', body).group(1) == str(cli["disagreements"]["open"])
    # Per stratum.
    for st in cli["strata"]:
        cells = _row_cells(body, "strata-table", st["stratum"])
        assert cells == [(str(st["pairs"]), ""), (str(st["queries"]), ""), _as_shown(st["agreement"], True),
                         _as_shown(st["binary_agreement"], True), _as_shown(st["alpha_nominal"], False)]
