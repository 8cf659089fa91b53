"""The clairvoyant references of the decisive order: each query's curve of the best worst-case end
j judged pairs can give is exact (every subset of small pools tried), the upper curve is a proof
where it is not, the settling set found really settles, and the lower bound never exceeds the
least settling set (every subset of small pools tried)."""

from __future__ import annotations

import itertools

import numpy as np

from curation.evaluate.clairvoyant import (
    _knapsack,
    clairvoyant_settling_set,
    query_curve,
    query_curves,
    settlement_lower_bound_of,
)
from curation.evaluate.settle import HIGHER, LOWER, PoolMatrix, percentile_ends, query_bounds, resample_counts, settle
from curation.evaluate.simulate import settlement_lower_bound


def _every_subset_best(pm, truth, G, k):
    """The best worst-case end (B higher) over every subset of each size, by brute force."""
    subsets = np.array(list(itertools.product([False, True], repeat=pm.n_pairs)))
    rows = np.where(subsets, truth[None, :], np.nan)
    lo = query_bounds(pm, rows, [(0, 1)] * len(rows), f"ndcg@{k}", max_grade=G).lo[:, 0]
    best = np.full(pm.n_pairs + 1, -np.inf)
    np.maximum.at(best, subsets.sum(axis=1), lo)
    return best


def test_query_curves_against_every_subset():
    rng = np.random.default_rng(1)
    inexact = 0
    for _ in range(60):
        k = int(rng.integers(2, 5))
        depth = k + int(rng.integers(0, 3))
        docs = [f"d{i}" for i in range(int(rng.integers(4, 9)))]
        A, B = list(rng.permutation(docs))[:depth], list(rng.permutation(docs))[:depth]
        pm = PoolMatrix.from_rankings({"A": {"q": A}, "B": {"q": B}}, depth=depth)
        G = int(rng.integers(1, 4))
        truth = rng.integers(0, G + 1, size=pm.n_pairs).astype(float)
        if rng.random() < 0.5:
            truth = np.where(rng.random(pm.n_pairs) < 0.6, 0.0, truth)
        best = _every_subset_best(pm, truth, G, k)
        for limit in (10 ** 9, 4):
            cv = query_curve(pm, truth, (0, 1), np.arange(pm.n_pairs), G, k, limit=limit)
            assert np.all(cv.upper >= best - 1e-12)  # a proof in every case
            assert np.all(cv.achievable <= best + 1e-12)
            if cv.exact:
                np.testing.assert_allclose(cv.achievable, best, atol=1e-12)
                np.testing.assert_allclose(cv.upper, best, atol=1e-12)
            else:
                inexact += 1
            for j, s in enumerate(cv.sets):  # each achievable end is the end of a real set of <= j pairs
                assert len(s) <= j
                g = np.full(pm.n_pairs, np.nan)
                g[s] = truth[s]
                got = query_bounds(pm, g, [(0, 1)], f"ndcg@{k}", max_grade=G).lo[0, 0]
                assert got == cv.achievable[j]
    assert inexact >= 5  # the small limit exercised the upper curve's free groups


def test_the_earlier_per_query_relaxation_was_not_an_upper_bound():
    """B ranks X (grade 2) first, then two non-relevant pairs; A ranks three non-relevant pairs.
    Judging X and A's three leaves B's two as the worst case's to grade: their best choice keeps the
    end at 0.92. The earlier curve divided the best DCG difference (2.0) by an ideal DCG with every
    unjudged pair at the top grade (3.26): 0.61, below what this set reaches."""
    pm = PoolMatrix.from_rankings({"A": {"q": ["W", "V", "U"]}, "B": {"q": ["X", "Y", "Z"]}}, depth=3)
    grade = {"X": 2, "Y": 0, "Z": 0, "W": 0, "V": 0, "U": 0}
    truth = np.array([grade[d] for d in pm.docids], dtype=float)
    g = truth.copy()
    g[[pm.docids.index("Y"), pm.docids.index("Z")]] = np.nan
    reached = query_bounds(pm, g, [(0, 1)], "ndcg@3", max_grade=2).lo[0, 0]
    assert 0.9 < reached < 0.93
    cv = query_curve(pm, truth, (0, 1), np.arange(pm.n_pairs), 2, 3)
    assert cv.exact and cv.upper[4] >= reached
    assert cv.upper[4] == _every_subset_best(pm, truth, 2, 3)[4]


def test_knapsack_against_every_choice():
    rng = np.random.default_rng(3)
    for _ in range(20):
        vals = [np.sort(rng.normal(size=int(rng.integers(1, 5)))) for _ in range(3)]
        budget = sum(len(v) - 1 for v in vals)
        best, choices = _knapsack(vals, budget)
        for B in range(budget + 1):
            combos = [c for c in itertools.product(*[range(len(v)) for v in vals]) if sum(c) == B]
            assert best[B] == max(sum(v[j] for v, j in zip(vals, c)) for c in combos)


def test_settling_set_and_lower_bound_against_every_subset():
    """On small pools: the least settling set by trying every subset; the proven bound is at most its
    size, and the clairvoyant set settles (checked with the real settlement) and is no smaller."""
    rng = np.random.default_rng(5)
    tried = 0
    for trial in range(40):
        docs = [f"d{i}" for i in range(3)]
        rankings = {"A": {}, "B": {}}
        for q in range(4):
            order = list(rng.permutation(docs))
            rankings["A"][f"q{q}"] = order
            rankings["B"][f"q{q}"] = order[::-1] if rng.random() < 0.8 else order
        pm = PoolMatrix.from_rankings(rankings, depth=3)
        truth = rng.integers(0, 3, size=pm.n_pairs).astype(float)
        counts = resample_counts(4, resamples=200, seed=trial)
        full = query_bounds(pm, truth, [(0, 1)], "ndcg@3", max_grade=2)
        low, high = percentile_ends(counts, full.lo)
        verdict = HIGHER if low[0] > 0 else LOWER if high[0] < 0 else None
        if verdict is None:
            continue
        subsets = np.array(list(itertools.product([False, True], repeat=pm.n_pairs)))
        b = query_bounds(pm, np.where(subsets, truth[None, :], np.nan), [(0, 1)] * len(subsets), "ndcg@3", max_grade=2)
        st = settle(b, counts)
        least = min(int(s) for s, v in zip(subsets.sum(axis=1), st.status) if v == verdict)
        member = np.ones(pm.n_pairs, dtype=bool)
        bound = settlement_lower_bound(pm, truth, (0, 1), "ndcg@3", counts, verdict, member, 2)
        chosen = clairvoyant_settling_set(pm, truth, (0, 1), "ndcg@3", counts, verdict, member, 2)
        g = np.full(pm.n_pairs, np.nan)
        g[chosen] = truth[chosen]
        assert settle(query_bounds(pm, g, [(0, 1)], "ndcg@3", max_grade=2), counts).status[0] == verdict
        assert 0 < bound <= least <= len(chosen), (trial, bound, least, len(chosen))
        tried += 1
    assert tried >= 3


def test_lower_bound_reuses_curves_and_tighter_sets_only_raise_it():
    rng = np.random.default_rng(7)
    rankings = {"A": {}, "B": {}}
    docs = [f"d{i}" for i in range(6)]
    for q in range(12):
        order = list(rng.permutation(docs))
        rankings["A"][f"q{q}"] = order
        rankings["B"][f"q{q}"] = order[::-1] if q % 3 else order
    pm = PoolMatrix.from_rankings(rankings, depth=6)
    truth = np.where(rng.random(pm.n_pairs) < 0.35, rng.integers(1, 3, size=pm.n_pairs), 0).astype(float)
    B_first = np.array([pm.ranks[1, p] in (1, 2) for p in range(pm.n_pairs)])
    truth = np.where(B_first, 2.0, truth)  # B's top two relevant: B higher
    counts = resample_counts(12, resamples=500, seed=1)
    member = np.ones(pm.n_pairs, dtype=bool)
    full = query_bounds(pm, truth, [(0, 1)], "ndcg@4", max_grade=2)
    low, _ = percentile_ends(counts, full.lo)
    assert low[0] > 0
    cv = query_curves(pm, truth, (0, 1), member, 2, metric="ndcg@4")
    a = settlement_lower_bound(pm, truth, (0, 1), "ndcg@4", counts, HIGHER, member, 2)
    assert a == settlement_lower_bound(pm, truth, (0, 1), "ndcg@4", counts, HIGHER, member, 2, curves=cv)
    upper = [c.upper for c in cv]
    assert settlement_lower_bound_of(upper, counts, full.lo[0], factors=(2,)) <= a
    chosen = clairvoyant_settling_set(pm, truth, (0, 1), "ndcg@4", counts, HIGHER, member, 2, curves=cv)
    assert a <= len(chosen) < pm.n_pairs
