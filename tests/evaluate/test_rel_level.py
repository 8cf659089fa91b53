"""``--rel-level`` above 1: binary measures follow the level, nDCG does not.

Checked against pytrec_eval (trec_eval's C code) per query, on trec_eval's ``qrels.rel_level`` at
levels 1-4 and on every robust03 run at levels 1 and 2.
"""

from __future__ import annotations

import json

import pytest

from curation.evaluate.metrics import QrelsIndex, evaluate, parse_metric
from curation.formats.qrels import read_qrels
from curation.formats.runs import read_run

# golden name -> pytrec_eval measure and its key in pytrec_eval's output
PEERS = {
    "ndcg@5": ("ndcg_cut.5", "ndcg_cut_5"),
    "ndcg@10": ("ndcg_cut.10", "ndcg_cut_10"),
    "ndcg@100": ("ndcg_cut.100", "ndcg_cut_100"),
    "recall@10": ("recall.10", "recall_10"),
    "recall@100": ("recall.100", "recall_100"),
    "ap": ("map", "map"),
    "p@10": ("P.10", "P_10"),
    "mrr": ("recip_rank", "recip_rank"),
}


def _pytrec(qrels, run, level):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    ev = pytrec_eval.RelevanceEvaluator(qrels, {m for m, _ in PEERS.values()}, relevance_level=level)
    return ev.evaluate({q: dict(zip(run.rankings[q], run.scores[q])) for q in run.rankings})


def _check(qrels, run, level):
    """Every query golden keeps equals pytrec_eval; the ones it leaves out are exactly the 0/0 ones."""
    peer = _pytrec(qrels, run, level)
    index = QrelsIndex.build(qrels, rel_level=level)
    ours = evaluate(run, index, list(PEERS), rel_level=level)
    no_rel = {q for q in qrels if not any(g >= level for g in qrels[q].values())}
    no_gain = {q for q in qrels if not any(g > 0 for g in qrels[q].values())}
    checked = 0
    for name, (_, key) in PEERS.items():
        s = ours[name]
        spec = parse_metric(name)
        expected_drop = no_gain if spec.metric.needs_gain else no_rel if spec.metric.needs_relevant else set()
        assert set(s.dropped) == expected_drop, (name, level)
        for q, v in s.as_dict().items():
            assert v == pytest.approx(peer[q][key], abs=1e-12), (run.name, name, level, q)
            checked += 1
    return ours, checked


@pytest.mark.parametrize("level", [1, 2, 3, 4])
def test_qrels_rel_level_every_level_matches_pytrec_eval(shared, level):
    d = shared("trec_eval_tests")
    qrels = read_qrels(d / "qrels.rel_level")
    ours, checked = _check(qrels, read_run(d / "results.test"), level)
    # nDCG keeps all three queries at every level: each has a positively graded document.
    assert ours["ndcg@10"].qids == ["301", "302", "303"] and not ours["ndcg@10"].dropped
    assert checked >= 3 * 4
    if level >= 3:  # 303 has nothing graded >= 3: recall and AP leave it out, and say why
        assert "303" in ours["recall@10"].dropped
        assert ours["recall@10"].drop_reason == f"no relevant document (grade >= {level})"
        assert ours["ndcg@10"].drop_reason == ""


def test_ndcg_without_any_positive_grade_is_left_out_and_says_why():
    qrels = {"a": {"d1": 2, "d2": 0}, "b": {"d3": 0, "d4": -1}}
    s = evaluate({"a": ["d1"], "b": ["d3"]}, qrels, ["ndcg@5", "recall@5"], rel_level=3)
    assert s["ndcg@5"].qids == ["a"] and s["ndcg@5"].dropped == ["b"]
    assert s["ndcg@5"].drop_reason == "no positively graded document"
    assert s["recall@5"].qids == [] and s["recall@5"].dropped == ["a", "b"]


@pytest.fixture(scope="module")
def robust03():
    from tests.conftest import shared_path

    root = shared_path("robust03")
    qrels = read_qrels(root / "qrels" / "robust03_qrels.txt")
    return qrels, {p.name.removeprefix("input.").removesuffix(".gz"): read_run(p)
                   for p in sorted((root / "runs").glob("input.*.gz"))}


def test_robust03_level_2_keeps_every_query_for_ndcg_and_the_order_of_two_runs(robust03):
    # The case: at level 2, 57 of 100 queries have no document graded 2. nDCG@5 must
    # still average over all 100 (trec_eval: uic0301 0.4276 > NLPR03vb10 0.4116).
    qrels, runs = robust03
    index = QrelsIndex.build(qrels, rel_level=2)
    a = evaluate(runs["uic0301"], index, ["ndcg@5", "recall@100"], rel_level=2)
    b = evaluate(runs["NLPR03vb10"], index, ["ndcg@5"], rel_level=2)
    assert len(a["ndcg@5"].qids) == 100 and len(b["ndcg@5"].qids) == 100
    assert len(a["recall@100"].dropped) == 57
    peer_a = _pytrec(qrels, runs["uic0301"], 2)
    peer_b = _pytrec(qrels, runs["NLPR03vb10"], 2)
    assert a["ndcg@5"].mean == pytest.approx(sum(v["ndcg_cut_5"] for v in peer_a.values()) / 100, abs=1e-12)
    assert b["ndcg@5"].mean == pytest.approx(sum(v["ndcg_cut_5"] for v in peer_b.values()) / 100, abs=1e-12)
    assert a["ndcg@5"].mean > b["ndcg@5"].mean


@pytest.mark.slow
@pytest.mark.parametrize("level", [1, 2])
def test_every_robust03_run_matches_pytrec_eval_per_query(robust03, level):
    qrels, runs = robust03
    total = 0
    for run in runs.values():
        total += _check(qrels, run, level)[1]
    assert total >= 17 * 100 * 4


def test_compare_at_level_2_pairs_every_query_for_ndcg(robust03, tmp_path):
    from click.testing import CliRunner

    from curation.cli import main
    from tests.conftest import shared_path

    root = shared_path("robust03")
    res = CliRunner().invoke(main, [
        "stats", "compare", str(root / "runs" / "input.NLPR03vb10.gz"), str(root / "runs" / "input.uic0301.gz"),
        "--qrels", str(root / "qrels" / "robust03_qrels.txt"), "--metric", "ndcg@5", "--rel-level", "2",
        "--resamples", "200", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["n"] == 100 and out["dropped"] == 0
    res = CliRunner().invoke(main, [
        "stats", "metrics", str(root / "runs" / "input.uic0301.gz"),
        "--qrels", str(root / "qrels" / "robust03_qrels.txt"),
        "-m", "ndcg@5", "-m", "recall@100", "--rel-level", "2"])
    assert res.exit_code == 0, res.output
    assert "recall@100: 57 queries with no relevant document (grade >= 2) left out (mean over 43)" in res.output
    assert "ndcg@5:" not in res.output.split("\n", 2)[2].split("recall@100:")[0]
