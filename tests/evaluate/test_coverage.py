"""Unjudged share of runs' top-k: hand-made files, robust03 against ir_measures, a project's store."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from sqlmodel import select

from curation.cli import main
from curation.evaluate.coverage import judged_from_qrels, judged_from_store, unjudged
from curation.formats.runs import read_run

QRELS = """\
1 0 a 1
1 0 b 0
1 0 c 2
2 0 x 0
3 0 z 1
"""
# Query 1 has a score tie (d, b): trec_eval ranks d before b (docid descending), so the top 2 are
# a, d and one of them (d) is unjudged; ranking ties by docid ascending would give a, b and none.
RUN = """\
1 Q0 a 1 3.0 sys
1 Q0 b 2 2.0 sys
1 Q0 d 3 2.0 sys
1 Q0 e 4 1.0 sys
2 Q0 y 1 5.0 sys
9 Q0 q 1 1.0 sys
"""
COVERED = """\
1 Q0 a 1 3.0 old
1 Q0 c 2 2.0 old
2 Q0 x 1 1.0 old
3 Q0 z 1 1.0 old
"""


@pytest.fixture
def files(tmp_path):
    (tmp_path / "qrels.txt").write_text(QRELS)
    (tmp_path / "new.run").write_text(RUN)
    (tmp_path / "old.run").write_text(COVERED)
    return tmp_path


def test_hand_made_run_at_depth_2(files):
    cov = unjudged(read_run(files / "new.run"), judged_from_qrels(files / "qrels.txt"), depth=2)
    assert [(q.qid, q.retrieved, q.unjudged) for q in cov.queries] == [("1", 2, 1), ("2", 1, 1)]
    assert (cov.retrieved, cov.unjudged) == (3, 2)
    assert cov.share == pytest.approx(2 / 3)
    assert cov.mean_share == pytest.approx((1 / 2 + 1 / 1) / 2)
    assert cov.not_judged_queries == ["9"]
    assert cov.unanswered_queries == ["3"]
    assert cov.holes and "measured on holes" in cov.verdict()


def test_deeper_cut_and_a_covered_run(files):
    judged = judged_from_qrels(files / "qrels.txt")
    cov = unjudged(read_run(files / "new.run"), judged, depth=10)
    # query 1: a d b e -> d, e unjudged; query 2: y unjudged
    assert [(q.qid, q.retrieved, q.unjudged) for q in cov.queries] == [("1", 4, 2), ("2", 1, 1)]
    old = unjudged(read_run(files / "old.run"), judged, depth=10)
    assert (old.unjudged, old.share, old.holes) == (0, 0.0, False)
    assert "covered" in old.verdict()


def test_parameters_are_checked(files):
    run = read_run(files / "new.run")
    with pytest.raises(ValueError, match="depth"):
        unjudged(run, {}, depth=0)
    with pytest.raises(ValueError, match="holes_at"):
        unjudged(run, {}, holes_at=0)


def test_cli_table_says_plainly_which_run_is_on_holes(files):
    res = CliRunner().invoke(
        main, ["stats", "coverage", str(files / "new.run"), str(files / "old.run"), "--qrels", str(files / "qrels.txt"),
               "--depth", "2"])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[1].split()[:6] == ["sys", "2", "3", "2", "66.7%", "75.0%"]  # worst run first
    assert lines[2].split()[:5] == ["old", "3", "4", "0", "0.0%"]
    assert "sys is measured on holes: 66.7% of its top-2 has no judgment" in res.output
    assert "sys: 1 of its queries have no judgments and were not measured (9)" in res.output


def test_cli_json_and_errors(files):
    runner = CliRunner()
    res = runner.invoke(main, ["stats", "coverage", str(files / "new.run"), "--qrels", str(files / "qrels.txt"),
                               "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data[0]["per_query"]["1"] == {"retrieved": 4, "unjudged": 2}
    assert data[0]["holes"] is True
    res = runner.invoke(main, ["stats", "coverage", str(files / "new.run")])
    assert res.exit_code == 2 and "exactly one of --qrels" in res.output
    bad = files / "bad.run"
    bad.write_text("1 Q0 a 1 3.0\n")
    res = runner.invoke(main, ["stats", "coverage", str(bad), "--qrels", str(files / "qrels.txt")])
    assert res.exit_code == 1 and "bad.run:1: has 5 fields, expected 6" in res.output
    res = runner.invoke(main, ["stats", "coverage", "--help"])
    assert "Example:" in res.output


def test_robust03_runs_against_ir_measures_judged(shared):
    """1 - Judged@10 from ir_measures, per query, wherever a score tie does not straddle rank 10
    (ir_measures breaks ties by docid ascending, trec_eval and golden by docid descending)."""
    ir_measures = pytest.importorskip("ir_measures")
    qrels_path = shared("robust03", "qrels", "robust03_qrels.txt")
    judged = judged_from_qrels(qrels_path)
    qrels = list(ir_measures.read_trec_qrels(str(qrels_path)))
    compared = 0
    for name in ("input.NLPR03vb10.gz", "input.humR03dc.gz", "input.uic0301.gz"):
        path = shared("robust03", "runs", name)
        run = read_run(path)
        cov = unjudged(run, judged, depth=10)
        theirs = {
            m.query_id: m.value
            for m in ir_measures.iter_calc([ir_measures.Judged @ 10], qrels, ir_measures.read_trec_run(str(path)))
        }
        for q in cov.queries:
            scores = run.scores[q.qid]
            if len(scores) > 10 and scores[9] == scores[10]:
                continue  # a tie across the cut: the two orders legitimately differ
            assert q.share == pytest.approx(1 - theirs[q.qid]), (name, q.qid)
            compared += 1
    assert compared > 250


def test_against_a_projects_judgments(engine, tmp_path):
    from curation.store.engine import session as new_session
    from curation.store.models import Document, Judgment, PoolPair, Query, User
    from tests.support.projects import assigned_project

    setup = assigned_project(engine, tmp_path / "p", n_queries=2, docs_per_query=4)
    with new_session(engine) as db:
        alice = db.exec(select(User).where(User.name == "alice")).one()
        pairs = db.exec(
            select(PoolPair.id, Query.qid, Document.docid)
            .join(Query, Query.id == PoolPair.query_id)
            .join(Document, Document.id == PoolPair.document_id)
            .where(PoolPair.project_id == setup.project_id)
        ).all()
        judged_pairs = {("q000", "d000_00"), ("q000", "d000_01"), ("q001", "d001_03")}
        for pair_id, qid, docid in pairs:
            if (qid, docid) in judged_pairs:
                db.add(Judgment(project_id=setup.project_id, pair_id=pair_id, judge_id=alice.id, grade=1))
        db.commit()
        judged = judged_from_store(db, setup.project_id)
    assert judged == {"q000": {"d000_00", "d000_01"}, "q001": {"d001_03"}}
    run = tmp_path / "dense.run"
    run.write_text(
        "q000 Q0 d000_00 1 9 dense\nq000 Q0 d000_02 2 8 dense\nq000 Q0 elsewhere 3 7 dense\n"
        "q001 Q0 d001_03 1 9 dense\n"
    )
    cov = unjudged(read_run(run), judged, depth=10)
    assert [(q.qid, q.retrieved, q.unjudged) for q in cov.queries] == [("q000", 3, 2), ("q001", 1, 0)]
    res = CliRunner().invoke(main, ["stats", "coverage", str(run), "--project", setup.project_name, "--db",
                                    str(engine.url)])
    assert res.exit_code == 0, res.output
    assert "dense is measured on holes: 50.0% of its top-10" in res.output
