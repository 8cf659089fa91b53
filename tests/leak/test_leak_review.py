"""Leak findings in a project: `golden leakcheck --project`, the lead's leak page, decisions with
who and when, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner
from sqlmodel import select

from curation.cli import main
from curation.leak.findings import decide, leak_overview, record_findings
from curation.store.engine import session as new_session
from curation.store.models import Document, LeakFinding, Query, User
from tests.support.client import csrf, login
from tests.support.projects import assigned_project

HTMX = {"HX-Request": "true"}
SCRIPT = "<script>window.__leak = 1</script>"
WEB = "web-<i>9</i>"  # ids are untrusted too


@pytest.fixture
def setup(engine, tmp_path):
    s = assigned_project(engine, tmp_path / "project", n_queries=4, docs_per_query=3)
    # The corpus the leak check reads: a pooled document quoting query q001 (with markup in it),
    # and a page outside the pool that is exactly query q002.
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        json.dumps({"id": "d001_02", "text": f"FAQ: How to cook dish 1? {SCRIPT}"}) + "\n"
        + json.dumps({"id": WEB, "text": "How to cook dish 2"}) + "\n"
        + json.dumps({"id": "web-10", "text": "Nothing to see here, only dishes."}) + "\n"
    )
    url = engine.url.render_as_string(hide_password=False)
    out = tmp_path / "leaks.jsonl"
    res = CliRunner().invoke(main, [
        "leakcheck", "--queries", str(tmp_path / "project" / "queries.jsonl"), "--corpus", str(corpus),
        "--workers", "1", "--out", str(out), "--project", s.project_name, "--db", url])
    assert res.exit_code == 0, res.output
    # q001: exact + containment (3 of 3 trigrams; Jaccard 3/8); q002: exact, jaccard, containment.
    assert "recorded in project 'recipes': 4 queries' leak status, 5 findings to review" in res.output
    s.out = out
    return s


def _status(engine, pid):
    with new_session(engine) as db:
        return {q.qid: (q.leak_status, q.status) for q in db.exec(select(Query).where(Query.project_id == pid))}


def test_findings_recorded_and_rerun_keeps_decisions(engine, setup):
    assert _status(engine, setup.project_id) == {
        "q000": ("clean", "active"), "q001": ("leak", "active"), "q002": ("leak", "active"),
        "q003": ("clean", "active")}
    with new_session(engine) as db:
        overview = leak_overview(db, setup.project_id)
        assert overview.counts == {"leak": 2, "too_short": 0, "clean": 2, "unchecked": 0}
        q1 = next(q for q in overview.queries if q.qid == "q001")
        assert [(c.chunk_id, c.scores, c.in_pool) for c in q1.chunks] == [
            ("d001_02", {"exact": 1.0, "containment": 1.0}, True)]
        lena = db.exec(select(User).where(User.name == "lena")).one()
        decide(db, setup.project_id, q1.chunks[0].finding_id, "keep", lena)
        from curation.leak.report import read_report

        again = record_findings(db, setup.project_id, read_report(setup.out))
        assert (again.findings, again.kept_decided) == (3, 2)  # q002's replaced, q001's decided kept
        assert db.exec(select(LeakFinding).where(LeakFinding.project_id == setup.project_id)).all().__len__() == 5


def test_decisions_apply_and_record_who_and_when(engine, setup):
    with new_session(engine) as db:
        lena = db.exec(select(User).where(User.name == "lena")).one()
        ov = leak_overview(db, setup.project_id)
        f1 = next(q for q in ov.queries if q.qid == "q001").chunks[0].finding_id
        f2 = next(q for q in ov.queries if q.qid == "q002").chunks[0].finding_id
        q = decide(db, setup.project_id, f1, "exclude_chunk", lena)
        assert q.chunks[0].excluded and q.chunks[0].decided_by == "lena" and q.chunks[0].decided_at is not None
        doc = db.exec(select(Document).where(Document.docid == "d001_02")).one()
        assert doc.excluded
        decide(db, setup.project_id, f1, "keep", lena)  # taken back: the document is in again
        db.refresh(doc)
        assert not doc.excluded
        decide(db, setup.project_id, f2, "drop_query", lena)
        assert _status(engine, setup.project_id)["q002"] == ("leak", "dropped")
        decide(db, setup.project_id, f2, "rejudge", lena)
        assert _status(engine, setup.project_id)["q002"] == ("leak", "rejudge")
        decide(db, setup.project_id, f2, "keep", lena)
        assert _status(engine, setup.project_id)["q002"] == ("leak", "active")
        rows = db.exec(select(LeakFinding).where(LeakFinding.chunk_id == WEB)).all()
        assert {(r.decision, r.decided_by_id) for r in rows} == {("keep", lena.id)} and len(rows) == 3
        with pytest.raises(ValueError, match="decision"):
            decide(db, setup.project_id, f2, "delete", lena)
        with pytest.raises(LookupError):
            decide(db, setup.project_id + 1, f2, "keep", lena)


# ------------------------------------------------------------------------------------------ the page


def test_only_leads_see_the_page(app, setup):
    url = f"/lead/{setup.project_id}/leaks"
    anon = app.test_client().get(url)
    assert anon.status_code == 302 and "/login" in anon.headers["Location"]
    judge = login(app.test_client(), "alice")
    assert judge.get(url).status_code == 403
    token = csrf(judge.get(f"/projects/{setup.project_id}/judge").data)
    assert judge.post(f"{url}/1", data={"csrf_token": token, "decision": "keep"}).status_code == 403


def test_page_lists_status_and_chunks_escaped(app, setup):
    lead = login(app.test_client(), "lena")
    r = lead.get(f"/lead/{setup.project_id}/leaks")
    assert r.status_code == 200
    body = r.data.decode()
    assert re.search(r'data-testid="count-leak">2<', body) and re.search(r'data-testid="count-clean">2<', body)
    assert body.count('data-testid="leak-query"') == 2
    assert WEB not in body and "web-&lt;i&gt;9&lt;/i&gt;" in body
    assert "how to cook dish 1" in body  # the matched span, from the normalised chunk
    assert "exact 1.000" in body and "not in the pool" in body  # web-9 is not a pooled document


def test_decision_by_form_and_by_htmx(app, engine, setup):
    lead = login(app.test_client(), "lena")
    page = lead.get(f"/lead/{setup.project_id}/leaks")
    token = csrf(page.data)
    with new_session(engine) as db:
        ov = leak_overview(db, setup.project_id)
    f1 = next(q for q in ov.queries if q.qid == "q001").chunks[0].finding_id
    f2 = next(q for q in ov.queries if q.qid == "q002").chunks[0].finding_id
    url = f"/lead/{setup.project_id}/leaks/{f1}"
    assert lead.post(url, data={"decision": "exclude_chunk"}).status_code == 400  # no CSRF token
    r = lead.post(url, data={"decision": "exclude_chunk", "csrf_token": token})
    assert r.status_code == 302 and r.headers["Location"].endswith(f"/lead/{setup.project_id}/leaks#leakq-"
                                                                   + str(ov.queries[0].query_id))
    with new_session(engine) as db:
        assert db.exec(select(Document).where(Document.docid == "d001_02")).one().excluded
    r = lead.post(f"/lead/{setup.project_id}/leaks/{f2}", data={"decision": "drop_query", "csrf_token": token},
                  headers=HTMX)
    assert r.status_code == 200
    part = r.data.decode()
    assert part.startswith('<section class="card leakq leak" id="leakq-')
    assert 'data-testid="query-status">dropped' in part
    assert "Drop the query — lena," in part
    assert _status(engine, setup.project_id)["q002"] == ("leak", "dropped")
    assert lead.post(f"/lead/{setup.project_id}/leaks/{f2}", data={"decision": "nuke", "csrf_token": token}
                     ).status_code == 400
    assert lead.post(f"/lead/{setup.project_id}/leaks/99999", data={"decision": "keep", "csrf_token": token}
                     ).status_code == 404


def test_dropping_the_query_on_one_chunk_decides_every_undecided_chunk(engine, setup):
    """A query with three matching chunks: one kept, then "drop the query" on another; the third,
    undecided, is decided with it (nothing of a dropped query is left for review or counted undecided
    by the export), and the kept chunk keeps its decision."""
    records = [{"qid": "q003", "status": "leak", "matches": [
        {"chunk_id": c, "mode": "exact", "score": 1.0} for c in ("web-a", "web-b", "web-c")]}]
    with new_session(engine) as db:
        record_findings(db, setup.project_id, records)
        lena = db.exec(select(User).where(User.name == "lena")).one()
        ids = {f.chunk_id: f.id for f in db.exec(select(LeakFinding).where(LeakFinding.chunk_id.like("web-_")))}
        decide(db, setup.project_id, ids["web-a"], "keep", lena)
        q = decide(db, setup.project_id, ids["web-b"], "drop_query", lena)
        assert {c.chunk_id: c.decision for c in q.chunks} == {"web-a": "keep", "web-b": "drop_query",
                                                               "web-c": "drop_query"}
        undecided = db.exec(select(LeakFinding).where(LeakFinding.query_id == q.query_id,
                                                      LeakFinding.decision.is_(None))).all()
        assert undecided == []
    assert _status(engine, setup.project_id)["q003"] == ("leak", "dropped")


def test_the_marked_span_covers_whole_words():
    from curation.leak.report import whole_words

    # An aligned span that starts inside "admins" and ends inside "users" is widened to both words.
    assert whole_words("only a", "dmins can create us", "ers here") == ("only ", "admins can create users", " here")
    # Already on word boundaries, or next to punctuation: unchanged.
    assert whole_words("only ", "admins", ", here") == ("only ", "admins", ", here")
    assert whole_words("…(", "x", ")") == ("…(", "x", ")")
    assert whole_words(None, None, None) == (None, None, None)
    assert whole_words(None, "abc", None) == ("", "abc", "")


def test_top_chunks_show_all_and_counters_in_place(app, engine, setup):
    """A query with five matching chunks shows its three best with "show all"; the htmx "show all"
    brings the five; a decision sends the page's counters back out of band, updated."""
    records = [{"qid": "q003", "status": "leak", "matches": [
        {"chunk_id": f"web-{i}", "mode": "exact", "score": 1.0 - i / 10} for i in range(5)]}]
    with new_session(engine) as db:
        record_findings(db, setup.project_id, records)
        q3 = db.exec(select(Query).where(Query.qid == "q003")).one().id
        first = db.exec(select(LeakFinding).where(LeakFinding.chunk_id == "web-0")).one().id
    lead = login(app.test_client(), "lena")
    page = lead.get(f"/lead/{setup.project_id}/leaks")
    body = page.data.decode()
    section = body[body.index(f'id="leakq-{q3}"'):]
    section = section[:section.index("</section>")]
    assert re.findall(r'data-chunk="(web-\d)"', section) == ["web-0", "web-1", "web-2"]
    assert 'data-testid="show-all"' in section and "Show all 5 chunks" in section
    every = lead.get(f"/lead/{setup.project_id}/leaks/query/{q3}", headers=HTMX).data.decode()
    assert re.findall(r'data-chunk="(web-\d)"', every) == [f"web-{i}" for i in range(5)]
    decided = re.search(r'data-testid="chunks-decided">(\d+) / (\d+)<', body).groups()
    r = lead.post(f"/lead/{setup.project_id}/leaks/{first}", headers=HTMX,
                  data={"decision": "keep", "csrf_token": csrf(page.data)})
    assert r.status_code == 200
    swapped = r.data.decode()
    assert 'id="leak-counters" hx-swap-oob="true"' in swapped
    now = re.search(r'data-testid="chunks-decided">(\d+) / (\d+)<', swapped).groups()
    assert (int(now[0]), now[1]) == (int(decided[0]) + 1, decided[1])
