"""Per-query metrics against trec_eval's own expected outputs, ranx, ir_measures and hand calculations."""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import pytest

from curation.evaluate.metrics import METRICS, QrelsIndex, evaluate, metric_choices, parse_metric
from curation.formats.qrels import read_qrels
from curation.formats.runs import read_run

# Every golden metric that trec_eval prints in out.test.aq, with the cutoffs it prints.
TREC_CUTS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
TREC_METRICS = (
    ["ap", "mrr"]
    + [f"ap@{k}" for k in TREC_CUTS]
    + [f"p@{k}" for k in TREC_CUTS]
    + [f"recall@{k}" for k in TREC_CUTS]
    + [f"ndcg@{k}" for k in TREC_CUTS]
)


def _expected(path) -> dict[str, dict[str, str]]:
    """trec_eval -q output as {measure: {qid or 'all': printed value}}."""
    out: dict[str, dict[str, str]] = defaultdict(dict)
    for line in open(path):
        parts = line.split()
        if len(parts) == 3:
            out[parts[0]][parts[1]] = parts[2]
    return out


def _check_against(expected, scores, *, qids):
    checked = 0
    for name, s in scores.items():
        te = s.metric.peer_name("trec_eval")
        assert te in expected, f"{name}: trec_eval prints no {te}"
        got = s.as_dict()
        for q in qids:
            assert f"{got[q]:.4f}" == expected[te][q], (name, q, got[q], expected[te][q])
            checked += 1
        assert f"{s.mean:.4f}" == expected[te]["all"], (name, s.mean, expected[te]["all"])
    return checked


def test_every_trec_eval_metric_matches_out_test_aq(shared):
    d = shared("trec_eval_tests")
    run = read_run(d / "results.test")
    scores = evaluate(run, read_qrels(d / "qrels.test"), TREC_METRICS)
    expected = _expected(d / "out.test.aq")
    assert _check_against(expected, scores, qids=["301", "302", "303"]) == 3 * len(TREC_METRICS)
    assert expected["num_rel"]["303"] == str(int(QrelsIndex.build(read_qrels(d / "qrels.test")).num_rel[2]))


def test_rel_level_matches_trec_eval_dash_l2(shared):
    # out.test.aql is `trec_eval -q -l2 qrels.rel_level results.test`: num_rel of 301 is its 12
    # documents graded 2 or 4, so -l2 is the threshold; nDCG still uses every positive grade.
    d = shared("trec_eval_tests")
    qrels = read_qrels(d / "qrels.rel_level")
    expected = _expected(d / "out.test.aql")
    index = QrelsIndex.build(qrels, rel_level=2)
    assert [str(n) for n in index.num_rel] == [expected["num_rel"][q] for q in ("301", "302", "303")]
    scores = evaluate(read_run(d / "results.test"), index, TREC_METRICS, rel_level=2)
    _check_against(expected, scores, qids=["301", "302", "303"])


def test_missing_query_scores_zero_like_trec_eval_dash_c(shared, tmp_path):
    # out.test.aqc is `trec_eval -q -c qrels.test results.trunc`; results.trunc has no line for 302
    # (and trailing junk after the 6th field, which trec_eval ignores, and so does read_run).
    d = shared("trec_eval_tests")
    scores = evaluate(read_run(d / "results.trunc"), read_qrels(d / "qrels.test"), TREC_METRICS)
    for s in scores.values():
        assert s.no_results == ["302"]
        assert s.as_dict()["302"] == 0.0
    _check_against(_expected(d / "out.test.aqc"), scores, qids=["301", "302", "303"])


# ---------------------------------------------------------------------------------------------
# ranx and ir_measures on the 17 robust03 runs


@pytest.fixture(scope="module")
def robust03():
    from tests.conftest import shared_path

    root = shared_path("robust03")
    qrels = read_qrels(root / "qrels" / "robust03_qrels.txt")
    runs = [read_run(p) for p in sorted((root / "runs").glob("input.*.gz"))]
    assert len(runs) == 17
    return qrels, runs


PEER_METRICS = ["ndcg@10", "ndcg@100", "p@10", "recall@100", "recall@1000", "ap", "ap@100", "mrr", "mrr@10",
                "success@10", "judged@10"]


def _rank_scores(run):
    """The run's trec_eval order as strictly decreasing scores, so no tool has a tie to break."""
    return {q: {d: float(len(docs) - i) for i, d in enumerate(docs)} for q, docs in run.rankings.items()}


def test_ir_measures_agrees_on_robust03_with_its_own_ordering(robust03):
    # nDCG, P, R, AP, RR come from pytrec_eval (trec_eval's C code), which sorts as trec_eval does:
    # score descending, docid descending, on scores held as 32-bit floats (InexpC2 and
    # oce03noXbmD have scores equal only at that precision). read_run keeps that precision, so
    # its ranking must be the one pytrec_eval makes from the same scores.
    import ir_measures

    qrels, runs = robust03
    specs = [parse_metric(m) for m in ["ndcg@10", "ndcg@100", "p@10", "recall@100", "ap", "ap@100", "mrr"]]
    names = {s.peer_name("ir_measures"): str(s) for s in specs}
    index = QrelsIndex.build(qrels)
    evaluator = ir_measures.evaluator([ir_measures.parse_measure(n) for n in names], qrels)
    compared = 0
    for run in runs:
        raw = {q: dict(zip(run.rankings[q], run.scores[q])) for q in run.rankings}
        ours = evaluate(run.rankings, index, specs)
        for m in evaluator.iter_calc(raw):
            assert ours[names[str(m.measure)]].as_dict()[m.query_id] == pytest.approx(m.value, abs=1e-9)
            compared += 1
    assert compared == 17 * 100 * len(specs)


@pytest.mark.slow
def test_ir_measures_and_ranx_agree_on_robust03_definitions(robust03):
    import ir_measures
    import ranx

    qrels, runs = robust03
    specs = [parse_metric(m) for m in PEER_METRICS]
    irm = {s.peer_name("ir_measures"): str(s) for s in specs}
    rx = {s.peer_name("ranx"): str(s) for s in specs if s.peer_name("ranx")}
    assert len(rx) >= 8
    rq = ranx.Qrels.from_dict(qrels)
    index = QrelsIndex.build(qrels)
    evaluator = ir_measures.evaluator([ir_measures.parse_measure(n) for n in irm], qrels)
    for run in runs:
        ours = evaluate(run, index, specs)
        scores = _rank_scores(run)
        seen = set()
        for m in evaluator.iter_calc(scores):
            name = irm[str(m.measure)]
            assert ours[name].as_dict()[m.query_id] == pytest.approx(m.value, abs=1e-9), (run.name, name)
            seen.add(name)
        assert seen == set(PEER_METRICS)
        rr = ranx.Run.from_dict(scores)
        ranx.evaluate(rq, rr, list(rx), return_mean=False)
        for rname, name in rx.items():
            got = ours[name].as_dict()
            for q, v in rr.scores[rname].items():
                assert got[q] == pytest.approx(float(v), abs=1e-9), (run.name, name, q)


# ---------------------------------------------------------------------------------------------
# Small cases computed by hand

QRELS = {"q1": {"a": 2, "b": 1, "c": 0, "d": 1}, "q2": {"x": 0}, "q3": {"m": 1}}


def test_hand_computed_values():
    # q1 ranking: c(0) a(2) z(unjudged) b(1); relevant {a, b, d}, 3 relevant.
    run = {"q1": ["c", "a", "z", "b"], "q2": ["x", "y"], "q3": ["n", "m"]}
    s = evaluate(run, QRELS, ["p@2", "recall@2", "recall_capped@2", "mrr", "mrr@1", "ap", "ndcg@4",
                              "success@1", "success@2", "judged@4", "judged@10", "ap@2"])
    q1 = {name: v.as_dict()["q1"] for name, v in s.items()}
    assert q1["p@2"] == 0.5
    assert q1["recall@2"] == pytest.approx(1 / 3)
    assert q1["recall_capped@2"] == pytest.approx(1 / 2)  # min(3, 2) = 2
    assert q1["mrr"] == 0.5 and q1["mrr@1"] == 0.0
    assert q1["ap"] == pytest.approx((1 / 2 + 2 / 4) / 3)  # relevant at ranks 2 and 4
    assert q1["ap@2"] == pytest.approx((1 / 2) / 3)
    dcg = 2 / math.log2(3) + 1 / math.log2(5)
    idcg = 2 + 1 / math.log2(3) + 1 / math.log2(4)
    assert q1["ndcg@4"] == pytest.approx(dcg / idcg)
    assert q1["success@1"] == 0.0 and q1["success@2"] == 1.0
    assert q1["judged@4"] == 0.75
    assert q1["judged@10"] == 0.75  # 3 of the 4 retrieved: the denominator is what was retrieved
    # q2 has no relevant document: out of recall, AP, nDCG; kept (as 0) for P, MRR, success.
    assert s["recall@2"].dropped == ["q2"] and "q2" not in s["recall@2"].qids
    assert s["ap"].dropped == ["q2"] and s["ndcg@4"].dropped == ["q2"]
    assert s["p@2"].dropped == [] and s["p@2"].as_dict()["q2"] == 0.0
    assert s["mrr"].as_dict()["q3"] == 0.5


def test_ties_are_broken_by_docid_descending(tmp_path):
    path = tmp_path / "run.trec"
    path.write_text("q 0 a 1 1.0 s\nq 0 b 2 1.0 s\nq 0 c 3 0.5 s\n")  # rank column ignored
    s = evaluate(read_run(path), {"q": {"a": 1}}, ["mrr", "p@1"])
    assert s["mrr"].as_dict()["q"] == 0.5  # b before a at equal score
    assert s["p@1"].as_dict()["q"] == 0.0


def test_run_without_a_query_scores_zero_and_says_so():
    s = evaluate({"q1": ["a"]}, QRELS, ["ndcg@10", "p@5"])
    assert s["ndcg@10"].no_results == ["q3"]  # q2 is dropped for nDCG, not listed twice
    assert s["ndcg@10"].as_dict()["q3"] == 0.0
    assert s["p@5"].no_results == ["q2", "q3"]


def test_rel_level_changes_binary_metrics_but_not_ndcg():
    run = {"q1": ["b", "a"]}
    one = evaluate(run, QRELS, ["p@1", "ndcg@2"], qids=["q1"])
    two = evaluate(run, QRELS, ["p@1", "ndcg@2"], qids=["q1"], rel_level=2)
    assert one["p@1"].values[0] == 1.0 and two["p@1"].values[0] == 0.0
    assert one["ndcg@2"].values[0] == two["ndcg@2"].values[0]


def test_unjudged_documents_count_as_not_relevant_and_show_in_judged():
    s = evaluate({"q3": ["u1", "u2", "m"]}, QRELS, ["p@3", "judged@3"], qids=["q3"])
    assert s["p@3"].values[0] == pytest.approx(1 / 3)
    assert s["judged@3"].values[0] == pytest.approx(1 / 3)
    assert s["p@3"].judged[0] == pytest.approx(1 / 3)


def test_parse_metric_registry():
    assert str(parse_metric("nDCG@10")) == "ndcg@10"
    assert str(parse_metric("map")) == "ap" and str(parse_metric("rcap@5")) == "recall_capped@5"
    assert parse_metric("success@3").binary and parse_metric("p@1").binary and not parse_metric("p@5").binary
    for bad, word in [("ndcg", "needs a cutoff"), ("ndcg@0", "between 1 and"), ("foo@3", "not known"), ("p@x", "form")]:
        with pytest.raises(ValueError, match=word):
            parse_metric(bad)
    assert len(metric_choices()) == len(METRICS)


def test_bad_arguments_name_the_parameter():
    with pytest.raises(ValueError, match="metrics"):
        evaluate({}, QRELS, [])
    with pytest.raises(ValueError, match="qids"):
        evaluate({}, QRELS, ["p@1"], qids=["nope"])
    with pytest.raises(ValueError, match="rel_level"):
        QrelsIndex.build(QRELS, rel_level=1.5)


def test_vectorised_values_match_a_plain_loop():
    rng = np.random.default_rng(3)
    qrels = {f"q{i}": {f"d{j}": int(rng.integers(0, 3)) for j in rng.choice(60, 25, replace=False)} for i in range(40)}
    run = {q: [f"d{j}" for j in rng.permutation(60)[: int(rng.integers(0, 30))]] for q in qrels}
    s = evaluate(run, qrels, ["ap", "ndcg@10"])
    for q, docs in run.items():
        rel = [qrels[q].get(d, 0) >= 1 for d in docs]
        nrel = sum(g >= 1 for g in qrels[q].values())
        if nrel == 0:
            continue
        hits, ap = 0, 0.0
        for i, r in enumerate(rel, 1):
            if r:
                hits += 1
                ap += hits / i
        assert s["ap"].as_dict()[q] == pytest.approx(ap / nrel)
        gains = [max(qrels[q].get(d, 0), 0) for d in docs[:10]]
        ideal = sorted((g for g in qrels[q].values() if g > 0), reverse=True)[:10]
        dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains))
        idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
        assert s["ndcg@10"].as_dict()[q] == pytest.approx(dcg / idcg if idcg else 0.0)
