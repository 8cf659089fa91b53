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


@pytest.mark.parametrize("metric", ["ndcg@3", "ap@3", "ap"])
@pytest.mark.parametrize("max_grade", [1, 2])
def test_bounds_contain_every_completion(metric, max_grade):
    rng = np.random.default_rng(7 + max_grade + len(metric))
    exact_hits = checked = 0
    for trial in range(12):
        rankings = _random_pool(rng)
        pm = PoolMatrix.from_rankings(rankings, depth=5)
        grades = rng.integers(0, max_grade + 1, size=pm.n_pairs).astype(float)
        hidden = rng.random(pm.n_pairs) < 0.5
        grades[hidden] = np.nan
        b = query_bounds(pm, grades, [(0, 1)], metric, max_grade=max_grade)
        for qi, qid in enumerate(pm.qids):
            pairs = np.flatnonzero(pm.pair_query == qi)
            unknown = [p for p in pairs if np.isnan(grades[p])]
            values = []
            for combo in itertools.product(range(max_grade + 1), repeat=len(unknown)):
                g = grades.copy()
                g[unknown] = combo
                labels = {qid: {pm.docids[p]: int(g[p]) for p in pairs}}
                values.append(_diff_by_metrics({r: {qid: rankings[r].get(qid, [])} for r in rankings}, labels,
                                               metric)[qid])
            lo, hi = b.lo[0, qi], b.hi[0, qi]
            assert lo <= min(values) + 1e-12, (trial, qid, lo, min(values))
            assert hi >= max(values) - 1e-12, (trial, qid, hi, max(values))
            checked += 1
            if metric.startswith("ndcg") and min(values) <= 0 <= max(values):
                # the enumeration is exact whenever the interval holds both signs
                assert math.isclose(hi, max(values), abs_tol=1e-12)
                assert math.isclose(lo, min(values), abs_tol=1e-12)
                exact_hits += 1
            if not unknown:
                assert math.isclose(lo, hi, abs_tol=1e-12) and math.isclose(lo, values[0], abs_tol=1e-12)
    assert checked == 36
    if metric.startswith("ndcg"):
        assert exact_hits > 5


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
