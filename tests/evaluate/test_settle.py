"""The settlement's bounds against brute force (every labelling of the unjudged pairs, each scored by
curation.evaluate.metrics, the trec_eval-checked implementation), and the guarantee's logic."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from curation.evaluate.metrics import evaluate
from curation.evaluate.settle import (
    HIGHER,
    LOWER,
    OPEN,
    TIE,
    PoolMatrix,
    percentile_ends,
    query_bounds,
    resample_counts,
    settle,
)


def _random_pool(rng, n_queries=3, depth=5, vocab=7):
    rankings = {}
    for run in ("A", "B"):
        rankings[run] = {}
        for q in range(n_queries):
            docs = [f"d{i}" for i in rng.permutation(vocab)[: rng.integers(1, depth + 1)]]
            rankings[run][f"q{q}"] = docs
    return rankings


def _diff_by_metrics(rankings, labels, metric):
    """Per-query B - A by metrics.evaluate; a query without a relevant pair counts 0 (both 0)."""
    qrels = {q: dict(v) for q, v in labels.items()}
    out = {}
    name_a, name_b = list(rankings)
    a = evaluate(rankings[name_a], qrels, [metric])[metric]
    b = evaluate(rankings[name_b], qrels, [metric])[metric]
    va, vb = a.as_dict(), b.as_dict()
    for q in qrels:
        out[q] = vb.get(q, 0.0) - va.get(q, 0.0)
    return out


def _brute_force(rankings, pm, grades, qi, max_grade, metric):
    """Every labelling of query ``qi``'s unjudged pairs, each scored by metrics.evaluate."""
    qid = pm.qids[qi]
    pairs = np.flatnonzero(pm.pair_query == qi)
    unknown = [p for p in pairs if np.isnan(grades[p])]
    values = []
    for combo in itertools.product(range(max_grade + 1), repeat=len(unknown)):
        g = grades.copy()
        g[unknown] = combo
        labels = {qid: {pm.docids[p]: int(g[p]) for p in pairs}}
        values.append(_diff_by_metrics({r: {qid: rankings[r].get(qid, [])} for r in rankings}, labels, metric)[qid])
    return values, unknown


@pytest.mark.parametrize("metric", ["ndcg@3", "ap@3", "ap"])
@pytest.mark.parametrize("max_grade", [1, 2])
def test_bounds_contain_every_completion(metric, max_grade):
    rng = np.random.default_rng(7 + max_grade + len(metric))
    checked = 0
    for trial in range(12):
        rankings = _random_pool(rng)
        pm = PoolMatrix.from_rankings(rankings, depth=5)
        grades = rng.integers(0, max_grade + 1, size=pm.n_pairs).astype(float)
        hidden = rng.random(pm.n_pairs) < 0.5
        grades[hidden] = np.nan
        b = query_bounds(pm, grades, [(0, 1)], metric, max_grade=max_grade)
        for qi, qid in enumerate(pm.qids):
            values, unknown = _brute_force(rankings, pm, grades, qi, max_grade, metric)
            lo, hi = b.lo[0, qi], b.hi[0, qi]
            assert lo <= min(values) + 1e-12, (trial, qid, lo, min(values))
            assert hi >= max(values) - 1e-12, (trial, qid, hi, max(values))
            checked += 1
            if metric.startswith("ndcg"):  # the nDCG bound is exact: a completion reaches each end
                assert math.isclose(hi, max(values), abs_tol=1e-12), (trial, qid, hi, max(values))
                assert math.isclose(lo, min(values), abs_tol=1e-12), (trial, qid, lo, min(values))
            if not unknown:
                assert math.isclose(lo, hi, abs_tol=1e-12) and math.isclose(lo, values[0], abs_tol=1e-12)
    assert checked == 36


@pytest.mark.parametrize("max_grade", [1, 2, 3])
def test_ndcg_bound_is_exact_when_the_sign_is_known(max_grade):
    """Most pairs judged, so that many queries' differences have one sign over every completion:
    there the minimum (for a positive difference) trades the unjudged pairs that favour B, which
    raise both the DCG difference and the ideal DCG; the bound must still be reached by a labelling
    (the largest and smallest over brute force), also with a cutoff below the pool depth and with
    intermediate grades possible."""
    rng = np.random.default_rng(100 + max_grade)
    one_sign = checked = 0
    for trial in range(40):
        rankings = _random_pool(rng, n_queries=2, depth=6, vocab=9)
        pm = PoolMatrix.from_rankings(rankings, depth=6)
        grades = rng.choice(max_grade + 1, size=pm.n_pairs, p=[0.4] + [0.6 / max_grade] * max_grade).astype(float)
        n_hidden = 4 if max_grade < 3 else 3
        hidden = rng.permutation(pm.n_pairs)[:n_hidden]
        grades[hidden] = np.nan
        metric = "ndcg@4" if trial % 2 else "ndcg@6"
        b = query_bounds(pm, grades, [(0, 1)], metric, max_grade=max_grade)
        for qi in range(len(pm.qids)):
            values, unknown = _brute_force(rankings, pm, grades, qi, max_grade, metric)
            assert math.isclose(b.lo[0, qi], min(values), abs_tol=1e-12), (trial, qi, b.lo[0, qi], min(values))
            assert math.isclose(b.hi[0, qi], max(values), abs_tol=1e-12), (trial, qi, b.hi[0, qi], max(values))
            checked += 1
            one_sign += unknown != [] and (min(values) > 1e-12 or max(values) < -1e-12)
    assert checked == 80 and one_sign >= 10, one_sign


def test_fully_judged_bounds_equal_metrics_module(shared):
    """At 100% judged the interval is a point, the difference metrics.evaluate gives (robust03)."""
    from curation.formats.qrels import read_qrels
    from curation.formats.runs import read_run

    root = shared("robust03")
    runs = [read_run(p, depth=20) for p in sorted((root / "runs").glob("input.*"))[:2]]
    qrels = read_qrels(root / "qrels" / "robust03_qrels.txt")
    rankings = {r.name: r.rankings for r in runs}
    pm = PoolMatrix.from_rankings(rankings, 20, qids=sorted(qrels))
    grades = np.array([qrels[pm.qids[q]].get(d, 0) for q, d in zip(pm.pair_query, pm.docids)], dtype=float)
    for metric in ("ndcg@10", "ap@20"):
        b = query_bounds(pm, grades, [(0, 1)], metric, max_grade=2)
        pool_qrels = {q: {} for q in pm.qids}
        for q, d, g in zip(pm.pair_query, pm.docids, grades):
            pool_qrels[pm.qids[q]][d] = int(g)
        want = _diff_by_metrics({r.name: {q: r.rankings.get(q, [])[:20] for q in pm.qids} for r in runs},
                                pool_qrels, metric)
        np.testing.assert_allclose(b.lo[0], b.hi[0], atol=1e-12)
        np.testing.assert_allclose(b.lo[0], [want[q] for q in pm.qids], atol=1e-12)


def test_monotone_guarantee_and_verdicts():
    """The worst-case interval bounds every completion's interval (same resamples)."""
    rng = np.random.default_rng(3)
    n = 40
    counts = resample_counts(n, resamples=2000, seed=1)
    lo = rng.normal(0.05, 0.1, n)
    hi = lo + rng.random(n) * 0.05
    for _ in range(20):
        d = lo + rng.random(n) * (hi - lo)
        a, b = percentile_ends(counts, d)
        la, _ = percentile_ends(counts, lo)
        _, hb = percentile_ends(counts, hi)
        assert la[0] <= a[0] + 1e-15 and b[0] <= hb[0] + 1e-15

    class B:  # a Bounds-like holder
        pass

    for shift, want in ((0.3, HIGHER), (-0.3, LOWER), (0.0, OPEN)):
        bb = B()
        bb.lo = (np.full(n, shift) - 0.01 + rng.normal(0, 0.05, n))[None]
        bb.hi = bb.lo + 0.02
        bb.so_far = bb.lo
        assert settle(bb, counts).status == [want]
    bb = B()
    bb.lo = rng.normal(0, 0.001, n)[None]
    bb.hi = bb.lo + 0.001
    bb.so_far = bb.lo
    assert settle(bb, counts, tie=0.01).status == [TIE]
    assert settle(bb, counts, tie=0.0).status == [OPEN]


def test_estimate_counts_each_source_of_error_and_is_exact_when_judged():
    """The estimate (not a guarantee): fully judged, its interval is the full one and nothing is
    uncertain; half judged, the labels, the queries' own rates, the model's coefficients and the
    common error each add to the spread."""
    from curation.evaluate.settle import estimate

    rng = np.random.default_rng(11)
    docs = [f"d{i}" for i in range(12)]
    rankings = {"A": {}, "B": {}}
    for q in range(40):
        rankings["A"][f"q{q:02d}"] = list(rng.permutation(docs)[:8])
        rankings["B"][f"q{q:02d}"] = list(rng.permutation(docs)[:8])
    pm = PoolMatrix.from_rankings(rankings, depth=8)
    easy = pm.pair_query < 20  # the first 20 queries have many relevant pairs
    truth = (rng.random(pm.n_pairs) < np.where(easy, 0.6, 0.1)).astype(float)
    counts = resample_counts(40, resamples=2000, seed=0)
    full = estimate(pm, truth, [(0, 1)], "ndcg@8", counts, max_grade=1)[0]
    b = query_bounds(pm, truth, [(0, 1)], "ndcg@8", max_grade=1)
    lo, hi = percentile_ends(counts, b.lo)
    assert full["interval"] == pytest.approx([lo[0], hi[0]], abs=1e-12)
    assert full["sd"] == {"labels": 0.0, "queries": 0.0, "model": 0.0, "common": 0.0}
    half = np.where(rng.random(pm.n_pairs) < 0.5, truth, np.nan)
    part = estimate(pm, half, [(0, 1)], "ndcg@8", counts, max_grade=1)[0]
    assert all(v > 0 for v in part["sd"].values()), part["sd"]
    assert 0.0 <= part["p_flip"] <= 1.0
