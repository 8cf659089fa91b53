"""The leak review a lead can trust: each match in its chunk's text, decisions on a
selection or a whole query at once (all or nothing), filters and paging, counts of findings and
chunks that match the CLI, and an export that says when findings are undecided. SQLite and
PostgreSQL, findings recorded by `golden leakcheck --project`."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from click.testing import CliRunner
from sqlmodel import select

from curation.cli import main
from curation.leak.findings import LeakFilter, decide_many, decide_query, leak_overview
from curation.leak.report import context
from curation.store.engine import session as new_session
from curation.store.models import Document, LeakFinding, Query, User
from tests.leak.test_leak_review import WEB, setup  # noqa: F401 - the fixture: a project with its findings
from tests.support.judgments import judge_queue


def test_context_is_cut_at_words_and_marked_where_the_chunk_goes_on():
    text = "alpha beta gamma delta epsilon how to cook dish zeta eta theta iota kappa"
    start = text.index("how to cook dish")
    end = start + len("how to cook dish")
    assert context(text, start, end, width=1000) == ("alpha beta gamma delta epsilon ", " zeta eta theta iota kappa")
    before, after = context(text, start, end, width=12)  # "ta epsilon " and " zeta eta th"
    assert (before, after) == ("…epsilon ", " zeta eta…")
    assert context("how to cook dish", 0, 16) == ("", "")


def _lena(db):
    return db.exec(select(User).where(User.name == "lena")).one()


def test_findings_are_recorded_with_their_context_and_start_undecided(engine, setup):  # noqa: F811
    with new_session(engine) as db:
        rows = db.exec(select(LeakFinding).where(LeakFinding.project_id == setup.project_id)).all()
        assert rows and all(r.decision is None for r in rows)
        q1 = [r for r in rows if r.chunk_id == "d001_02"]
        # "FAQ: How to cook dish 1? <script>..." normalised: the span, and the text on either side.
        assert {r.span for r in q1} == {"how to cook dish 1"}
        assert all(r.context_before == "faq: " and r.context_after.startswith("? <script>window.__leak") for r in q1)
        ov = leak_overview(db, setup.project_id)
    assert (ov.findings, ov.decided + ov.undecided, ov.findings_undecided) == (len(rows), 2, len(rows))
    assert ov.findings == 5  # as the CLI said: "5 findings to review" (tests/leak/test_leak_review.py)


def test_decide_a_selection_and_a_whole_query_at_once(engine, setup):  # noqa: F811
    with new_session(engine) as db:
        lena = _lena(db)
        ov = leak_overview(db, setup.project_id)
        q1 = next(q for q in ov.queries if q.qid == "q001")
        q2 = next(q for q in ov.queries if q.qid == "q002")
        # A selection naming another query's chunk is refused whole: nothing recorded.
        with pytest.raises(LookupError):
            decide_many(db, setup.project_id, [q1.chunks[0].finding_id, q2.chunks[0].finding_id], "keep", lena,
                        query_id=q1.query_id)
        assert all(f.decision is None for f in db.exec(select(LeakFinding)).all())
        touched = decide_many(db, setup.project_id, [q1.chunks[0].finding_id, q2.chunks[0].finding_id],
                              "exclude_chunk", lena)
        assert [q.qid for q in touched] == ["q001", "q002"]
        assert all(c.decision == "exclude_chunk" for q in touched for c in q.chunks)
        assert db.exec(select(Document).where(Document.docid == "d001_02")).one().excluded
        # The whole query: every finding of every chunk (three modes of the WEB chunk) at once.
        q = decide_query(db, setup.project_id, q2.query_id, "drop_query", lena)
        assert q.status == "dropped" and {c.decision for c in q.chunks} == {"drop_query"}
        rows = db.exec(select(LeakFinding).where(LeakFinding.chunk_id == WEB)).all()
        assert len(rows) == 3 and {(r.decision, r.decided_by_id) for r in rows} == {("drop_query", lena.id)}
        with pytest.raises(LookupError):
            decide_query(db, setup.project_id, 999999, "keep", lena)
        with pytest.raises(ValueError, match="decision"):
            decide_query(db, setup.project_id, q2.query_id, "", lena)
        assert db.exec(select(Query).where(Query.qid == "q002")).one().status == "dropped"


def test_filter_by_mode_score_decided_and_pages(engine, setup):  # noqa: F811
    with new_session(engine) as db:
        def shown(**kw):
            ov = leak_overview(db, setup.project_id, LeakFilter(**kw))
            return [(q.qid, [c.chunk_id for c in q.chunks], q.hidden) for q in ov.queries], ov

        assert shown()[0] == [("q001", ["d001_02"], 0), ("q002", [WEB], 0)]
        assert shown(mode="jaccard")[0] == [("q002", [WEB], 0)]  # q001's Jaccard is 3/8, under the threshold
        assert shown(mode="containment", min_score=0.5)[0] == [("q001", ["d001_02"], 0), ("q002", [WEB], 0)]
        rows, ov = shown(per_page=1, page=2)
        assert rows == [("q002", [WEB], 0)] and ov.pages == 2 and ov.matching_queries == 2
        decide_query(db, setup.project_id, ov.queries[0].query_id, "keep", _lena(db))
        assert shown(show="undecided")[0] == [("q001", ["d001_02"], 0)]
        assert shown(show="decided")[0] == [("q002", [WEB], 0)]
        for bad in (dict(mode="fuzzy"), dict(min_score=2), dict(show="some"), dict(page=0)):
            with pytest.raises(ValueError):
                LeakFilter(**bad)


def test_an_export_with_undecided_findings_says_so(engine, setup, tmp_path):  # noqa: F811
    for judge_name in setup.judges:  # every pooled pair labelled, so the export is not blocked
        judge_queue(engine, setup.project_id, judge_name, lambda d: 1, start=datetime(2026, 3, 2, tzinfo=UTC))
    url = engine.url.render_as_string(hide_password=False)
    args = ["export", "create", "--project", setup.project_name, "--out", str(tmp_path / "out"), "--allow-incomplete",
            "--db", url]
    res = CliRunner().invoke(main, [*args, "--version", "v1"])
    assert res.exit_code == 0, res.output
    assert "LEAK CHECK UNDECIDED: 5 findings on 2 chunks of 2 queries" in res.output
    manifest = json.loads((tmp_path / "out" / "v1" / "manifest.json").read_text())
    assert manifest["leak_check"]["undecided"] == {"findings": 5, "chunks": 2, "queries": 2}
    with new_session(engine) as db:
        for q in leak_overview(db, setup.project_id).queries:
            decide_query(db, setup.project_id, q.query_id, "keep", _lena(db))
    res = CliRunner().invoke(main, [*args, "--version", "v2"])
    assert res.exit_code == 0, res.output
    assert "UNDECIDED" not in res.output
    manifest = json.loads((tmp_path / "out" / "v2" / "manifest.json").read_text())
    assert "undecided" not in manifest["leak_check"] and manifest["leak_check"]["decisions"] == {"keep": 5}
