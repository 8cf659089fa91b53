"""Settlement of a comparison while the pool is still being judged: a guarantee and an estimate.

A *comparison* asks whether run B scores higher than run A on a metric (nDCG@k or AP@k) over the
project's queries: the per-query difference is ``d_q = M_B(q) - M_A(q)`` and the verdict is the
paired bootstrap interval of the mean difference (the same percentile interval as
``curation.evaluate.bootstrap.interval``, over one fixed set of resamples of the queries).

**The guarantee.** Some pairs of the pool are not judged yet; each could take any grade of the
scale. For every query, :func:`query_bounds` gives ``lo_q <= d_q <= hi_q`` over *every* labelling
of the unjudged pairs (exactly for nDCG, a valid bound for AP, see below). Each bootstrap
replicate is a mean ``sum_q n_q d_q / n`` with
non-negative resample counts ``n_q``, so it is monotone (non-decreasing) in every ``d_q``; a
percentile of the replicates (an order statistic, or a linear interpolation between two) is then
monotone too. Hence for any completion, its interval's low end is at least the low end computed
from the ``lo`` vector, and its high end at most the one computed from ``hi``. So:

* if the interval of the worst case ``lo`` excludes 0 from below (its low end > 0), *every*
  completion of the judging gives a significant "B higher": the comparison is **settled**;
* symmetrically with ``hi`` for "B lower";
* with a tie margin ``t > 0``: when the low end of ``lo``'s interval is above ``-t`` and the high
  end of ``hi``'s interval below ``t``, every completion's interval lies inside ``(-t, t)``:
  settled as "no difference larger than the margin".

The resamples are drawn once (:func:`resample_counts`, one seed) and reused for every check and for
the final, fully judged verdict, so a settled verdict can never be contradicted by the full pool
(the benchmark counts such "wrong calls": there must be none). A tiny margin (:data:`EPS`) guards the
strict inequalities against floating-point summation order.

A query whose pool has no relevant document has no nDCG or AP (0/0); here it counts as a difference
of 0 (both systems score 0, as trec_eval averages such a query), so the set of queries, and with it
the resampling, never depends on the labels.

**nDCG@k bound.** With the ideal DCG ``I`` fixed, ``d_q = N / I`` where ``N = sum_u g_u c_u`` is
linear in the gains: ``c_u = disc_B(u) - disc_A(u)``, ``disc(r) = 1/log2(r+1)`` for ``r <= k``, else 0.
``I`` depends on the unknown gains too (the ideal ranking holds every relevant pair of the pool).
For the maximum: if some completion gives ``d_q >= 0`` then zeroing any unjudged pair with
``c_u <= 0`` raises ``N`` and lowers ``I``, so the maximum is over the pairs with ``c_u > 0`` only; for
given counts of each grade among them ``I`` is fixed (it depends only on the multiset of gains), and
``N`` is largest when the highest grades go to the largest ``c_u`` (rearrangement inequality). So the
exact maximum is the best of a small enumeration of grade counts (:func:`_ratio_ext`). If every
completion gives ``N < 0``, the maximum is minus the minimum of ``-N / I > 0``: now every unjudged
pair with ``c_u >= 0`` (and every unjudged pair outside both top k) takes the top grade (that lowers
``-N`` and raises ``I``), and the pairs with ``c_u < 0`` are enumerated the same way, their grades
going to the SMALLEST ``|c_u|`` first. Intermediate grades can be optimal; the enumeration covers
them. So the bound is exact in every case (a completion reaches it; tests/evaluate/test_settle.py
checks it against brute force). The minimum is the same with ``-c``. ``I`` counts the pool's pairs
only: the golden set's qrels are the pool, so "every labelling" means every labelling of the pool.

**AP@k bound.** ``AP = S / R``, ``S = sum over relevant ranks r <= k of precision@r``, ``R`` the
relevant pairs of the query's pool. ``S`` only grows when an unjudged pair becomes relevant or a
relevant pair moves up, so with ``m`` of B's unjudged pairs relevant ``S_B`` is at most its value
with B's ``m`` highest unjudged pairs relevant, ``S_A`` at least its judged value, and ``R`` at least
the judged relevant count plus ``m``: the maximum over ``m`` bounds the difference (a negative one is
divided by the largest ``R``). Valid, looser than the nDCG bound (shared pairs count for B only).

**The estimate** (:func:`estimate`), labelled as such wherever it is shown: a logistic regression
(scikit-learn, calibrated with ``CalibratedClassifierCV``) of P(relevant) from the ranks of a pair
in each run, the number of runs that retrieved it and its query's stratum, fitted on the judged
pairs, scaled per query by the query's own rate of relevant pairs so far; the expected difference
and its variance per query (labels, the query's rate, the model's coefficients, a common error)
give the probability that the fully judged verdict differs from the verdict the estimate expects
(P(flip)).

One module (about 750 lines): the bounds, the settlement rule that reads them and the estimate that
stands beside them share the per-query arrays and must stay consistent with each other.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations_with_replacement

import numpy as np

from curation.evaluate.metrics import MetricSpec, parse_metric

EPS = 1e-12  # strict inequalities of the guarantee hold by more than rounding
DEFAULT_RESAMPLES = 10_000
DEFAULT_LEVEL = 0.95
SHIFT = 0.25  # sd of a common multiplier of every unjudged pair's P(relevant) (see estimate)
QUERY_PRIOR = 1.0  # pseudo-counts of the Gamma prior of a query's own rate of relevant pairs
IDEAL_BY_RANK = True  # weigh a pair's ideal-DCG effect by 1/log2(1 + its best rank in any run)

HIGHER, LOWER, TIE, OPEN, NOT_SIGNIFICANT = "B higher", "B lower", "tie", "open", "no significant difference"


# ---------------------------------------------------------------------------------------------
# The pool as matrices


@dataclass
class PoolMatrix:
    """A pool laid out for the bounds: pair ``p`` belongs to query ``pair_query[p]``; ``ranks[r, p]``
    is the pair's rank (1-based) in run ``r``, 0 when that run did not retrieve it within ``depth``.
    ``strata[q]`` names query ``q``'s stratum (for the estimate)."""

    qids: list[str]
    runs: list[str]
    pair_query: np.ndarray
    docids: list[str]
    ranks: np.ndarray
    depth: int
    strata: list[str] = field(default_factory=list)
    _tops: dict = field(default_factory=dict, repr=False)

    @property
    def n_pairs(self) -> int:
        return len(self.pair_query)

    @classmethod
    def from_rankings(
        cls, rankings: Mapping[str, Mapping[str, Sequence[str]]], depth: int, *,
        qids: Sequence[str] | None = None, strata: Mapping[str, str] | None = None,
    ) -> PoolMatrix:
        """The union of every run's top ``depth`` (``rankings``: run name -> {qid: [docid...]} in
        trec_eval order) over ``qids`` (default: every query any run answers), queries sorted."""
        runs = list(rankings)
        if qids is None:
            qids = sorted({q for r in rankings.values() for q in r})
        else:
            qids = sorted({str(q) for q in qids})
        index: dict[tuple[int, str], int] = {}
        pair_query, docids = [], []
        rows = [[] for _ in runs]
        for qi, qid in enumerate(qids):
            for ri, run in enumerate(runs):
                for rank, doc in enumerate(list(rankings[run].get(qid, ()))[:depth], start=1):
                    key = (qi, doc)
                    p = index.get(key)
                    if p is None:
                        p = index[key] = len(docids)
                        docids.append(doc)
                        pair_query.append(qi)
                    rows[ri].append((p, rank))
        ranks = np.zeros((len(runs), len(docids)), dtype=np.int32)
        for ri, row in enumerate(rows):
            if row:
                arr = np.asarray(row, dtype=np.int64)
                ranks[ri, arr[:, 0]] = arr[:, 1]
        strata_list = [str((strata or {}).get(q, "")) for q in qids]
        return cls(qids=list(qids), runs=runs, pair_query=np.asarray(pair_query, dtype=np.int64), docids=docids,
                   ranks=ranks, depth=int(depth), strata=strata_list)

    def run_index(self, name: str) -> int:
        try:
            return self.runs.index(name)
        except ValueError:
            raise ValueError(f"compare: no run named {name!r}; the pool's runs are {', '.join(self.runs)}") from None

    def top(self, run: int, k: int) -> np.ndarray:
        """(queries x k) pair indices of run ``run``'s top ``k`` (-1 where it has fewer)."""
        key = (run, k)
        if key not in self._tops:
            out = np.full((len(self.qids), k), -1, dtype=np.int64)
            r = self.ranks[run]
            sel = np.flatnonzero((r >= 1) & (r <= k))
            out[self.pair_query[sel], r[sel] - 1] = sel
            self._tops[key] = out
        return self._tops[key]

    def members(self, runs: Sequence[int]) -> np.ndarray:
        """Boolean mask of the pairs retrieved (within ``depth``) by any of ``runs``."""
        return (self.ranks[list(runs)] > 0).any(axis=0)


def metric_form(metric: str | MetricSpec, depth: int) -> tuple[str, int]:
    """(``"ndcg"`` or ``"ap"``, cutoff) for a metric the settlement supports; AP without a cutoff
    is AP at the pool depth (nothing deeper is in the pool). A deeper cutoff than the pool is
    allowed: the ranks past the pool depth count as not relevant, as in the export's evaluation."""
    spec = parse_metric(metric)
    if spec.metric.name not in ("ndcg", "ap"):
        raise ValueError(f"metric {spec}: settlement supports ndcg@k and ap[@k]")
    # a cutoff deeper than the pool: ranks past the pool depth hold nothing judged, as in the
    # evaluation of the exported qrels (they count as not relevant)
    k = spec.k if spec.k is not None else depth
    return spec.metric.name, int(k)


def _disc(k: int) -> np.ndarray:
    """Discount of ranks 0..k (index 0 unused, 0): 1/log2(r+1), as trec_eval's ndcg_cut."""
    out = np.zeros(k + 1)
    out[1:] = 1.0 / np.log2(np.arange(2, k + 2, dtype=np.float64))
    return out


def _as_grades(grades: np.ndarray, n_comp: int) -> np.ndarray:
    g = np.asarray(grades, dtype=np.float64)
    if g.ndim == 1:
        g = g[None, :]
    if g.shape[0] not in (1, n_comp):
        raise ValueError("grades: one row, or one row per comparison")
    return g


# ---------------------------------------------------------------------------------------------
# Bounds of the per-query difference over every completion


@dataclass
class Bounds:
    """``lo[c, q] <= d_q <= hi[c, q]`` for comparison ``c`` over every completion; ``weight[c, p]``
    is pair ``p``'s largest possible effect on comparison ``c``'s per-query difference (0 when
    judged or outside both top k); ``movers[c]`` counts unjudged pairs that can still move it;
    ``so_far[c, q]`` is the difference with the unjudged pairs counted as not relevant."""

    lo: np.ndarray
    hi: np.ndarray
    so_far: np.ndarray
    weight: np.ndarray
    movers: np.ndarray


def _idcg_counts(cnt: np.ndarray, dc: np.ndarray, k: int) -> np.ndarray:
    """Ideal DCG@k from counts of each grade (``cnt[..., g-1]`` pairs of grade g): the grades sorted
    best first, cut at k. ``dc`` is the cumulative discount, ``dc[j]`` = sum of the first j."""
    G = cnt.shape[-1]
    start = np.zeros(cnt.shape[:-1], dtype=np.int64)
    total = np.zeros(cnt.shape[:-1])
    for g in range(G, 0, -1):
        end = start + cnt[..., g - 1]
        total += g * (dc[np.minimum(end, k)] - dc[np.minimum(start, k)])
        start = end
    return total


def _combos(width: int, G: int) -> np.ndarray:
    """Every (E_G <= ... <= E_1 <= width): E_g = how many of the sorted pairs get grade >= g."""
    rows = [tuple(sorted(c)) for c in combinations_with_replacement(range(width + 1), G)]
    return np.asarray(rows, dtype=np.int64).reshape(-1, G)  # column j holds E_{G-j}


def _ratio_ext(J, w, cnt, dc, k, G, *, minimum: bool = False):
    """Exact extreme of ``(J + sum g_u w_u) / I`` over the grades ``g_u`` of the unjudged pairs with
    weights ``w`` (> 0 each; zeros pad), ``I`` the ideal DCG of ``cnt`` plus those grades, 0 where
    ``I`` is 0. For given counts of each grade among the pairs, ``I`` is fixed (it depends only on
    the multiset of grades, not on which pairs hold them), so the extreme is the best of a small
    enumeration of counts (:func:`_combos`, never more graded pairs than the query has), each with
    the grades placed by the rearrangement inequality:

    * ``minimum=False``: the maximum; the highest grades go to the largest ``w``;
    * ``minimum=True``: the minimum when ``J > 0`` (every completion positive); the highest grades
      go to the SMALLEST ``w``.

    ``J``: (C, n); ``w``: (C, n, W); ``cnt``: (C or 1, n, G) counts per grade of the query's other
    pairs (judged, or fixed at their extreme grade)."""
    C, n, W = w.shape
    if W == 0:
        I0 = _idcg_counts(cnt, dc, k)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(I0 > 0, J / np.where(I0 > 0, I0, 1.0), 0.0)
    have = (w > 0).sum(axis=2)  # (C, n) pairs each query really has (the rest is padding)
    if minimum:  # ascending, padding last
        srt = np.sort(np.where(w > 0, w, np.inf), axis=2)
        srt = np.where(np.isfinite(srt), srt, 0.0)
    else:
        srt = -np.sort(-w, axis=2)
    cs = np.concatenate([np.zeros((C, n, 1)), np.cumsum(srt, axis=2)], axis=2)
    combos = _combos(W, G)  # (K, G) ascending: combos[:, 0] = E_G (fewest), ..., combos[:, G-1] = E_1
    best = np.full((C, n), np.inf if minimum else -np.inf)
    # counts added per grade: grade g gets E_g - E_{g+1} (E_{G+1} = 0)
    E = combos[:, ::-1]  # column g-1 = E_g
    add = E - np.concatenate([E[:, 1:], np.zeros((len(E), 1), dtype=np.int64)], axis=1)  # (K, G)
    chunk = max(1, 4_000_000 // max(1, C * n))
    for s in range(0, len(combos), chunk):
        e = E[s:s + chunk]
        N = J[:, :, None] + cs[:, :, e].sum(axis=3)  # (C, n, K)
        ideal = _idcg_counts(cnt[:, :, None, :] + add[s:s + chunk][None, None, :, :], dc, k)  # (C|1, n, K)
        with np.errstate(divide="ignore", invalid="ignore"):
            d = np.where(ideal > 0, N / np.where(ideal > 0, ideal, 1.0), 0.0)
        ok = e[None, None, :, 0] <= have[:, :, None]  # no more graded pairs than the query has
        if minimum:
            np.minimum(best, np.where(ok, d, np.inf).min(axis=2), out=best)
        else:
            np.maximum(best, np.where(ok, d, -np.inf).max(axis=2), out=best)
    return best


def _candidates(pm: PoolMatrix, comps: np.ndarray, k: int):
    """(C, n, 2k) pair indices of B's top k then A's top k (-1 padding), the valid mask and
    the indices made safe for gathering."""
    TA = np.stack([pm.top(a, k) for a in comps[:, 0]])
    TB = np.stack([pm.top(b, k) for b in comps[:, 1]])
    cand = np.concatenate([TB, TA], axis=2)
    valid = cand >= 0
    return cand, valid, np.where(valid, cand, 0)


def _ndcg_weights(pm: PoolMatrix, comps: np.ndarray, safe: np.ndarray, valid: np.ndarray, k: int) -> np.ndarray:
    """``c = disc_B - disc_A`` of each candidate; a pair in both top k counts once (B's column)."""
    disc = _disc(k)
    rA = pm.ranks[comps[:, 0][:, None, None], safe]
    rB = pm.ranks[comps[:, 1][:, None, None], safe]
    dA = np.where((rA >= 1) & (rA <= k), disc[np.clip(rA, 0, k)], 0.0)
    dB = np.where((rB >= 1) & (rB <= k), disc[np.clip(rB, 0, k)], 0.0)
    c = dB - dA
    inB = (rB >= 1) & (rB <= k)
    c[:, :, k:] = np.where(inB[:, :, k:], 0.0, c[:, :, k:])
    return np.where(valid, c, 0.0)


def query_bounds(pm: PoolMatrix, grades: np.ndarray, comparisons: Sequence[tuple[int, int]],
                 metric: str | MetricSpec, *, max_grade: int, rel_level: int = 1) -> Bounds:
    """Bounds of every query's difference ``M_B - M_A`` for each comparison ``(a, b)`` (run
    indices), over every labelling of the unjudged pairs (``grades[p]`` NaN) with grades
    ``0..max_grade``. ``grades`` is one row for all comparisons or one row per comparison (the
    simulation judges each comparison's own pool; pairs outside it are given grade 0)."""
    name, k = metric_form(metric, pm.depth)
    comps = np.asarray(comparisons, dtype=np.int64).reshape(-1, 2)
    C, n, P = len(comps), len(pm.qids), pm.n_pairs
    g = _as_grades(grades, C)
    G = int(max_grade)
    if G < 1:
        raise ValueError("max_grade must be at least 1")
    unj = np.isnan(g)
    pq = pm.pair_query
    # query-level counts (per grade row): judged pairs of each positive grade, unjudged pairs
    rows = g.shape[0]
    gi = np.where(unj, 0, np.clip(np.nan_to_num(g), 0, G)).astype(np.int64)
    cnt = np.zeros((rows, n, G), dtype=np.int64)
    for gg in range(1, G + 1):
        cnt[:, :, gg - 1] = np.stack([np.bincount(pq, weights=(gi[r] == gg), minlength=n) for r in range(rows)])
    n_unj = np.stack([np.bincount(pq, weights=unj[r], minlength=n) for r in range(rows)]).astype(np.int64)

    cand, valid, safe = _candidates(pm, comps, k)  # (C, n, 2k)
    crow = np.arange(C)[:, None, None]
    grow = crow if rows == C else np.zeros_like(crow)
    gv = g[grow, safe]
    u = valid & np.isnan(gv)

    weight = np.zeros((C, P))
    if name == "ndcg":
        disc = _disc(k)
        dc = np.concatenate([[0.0], np.cumsum(disc[1:])])
        c = _ndcg_weights(pm, comps, safe, valid, k)
        gain = np.where(u | ~valid, 0.0, np.clip(np.nan_to_num(gv), 0, None))
        J = (gain * c).sum(axis=2)
        cp = np.where(u & (c > 0), c, 0.0)
        cn = np.where(u & (c < 0), -c, 0.0)
        Nmax = J + G * cp.sum(axis=2)
        Nmin = J - G * cn.sum(axis=2)
        cntc = cnt if rows == C else np.broadcast_to(cnt, (C, n, G))
        Ij = _idcg_counts(cntc, dc, k)
        nu = n_unj if rows == C else np.broadcast_to(n_unj, (C, n))
        n_cp, n_cn = (cp > 0).sum(axis=2), (cn > 0).sum(axis=2)

        def trim(a):
            w = int((a > 0).sum(axis=2).max()) if a.size else 0
            return -np.sort(-a, axis=2)[:, :, :w]

        def at_top(extra):  # the judged counts plus ``extra`` unjudged pairs at the top grade
            out = cntc.copy()
            out[:, :, G - 1] += extra
            return out

        # the maximum: if some completion is >= 0, the unjudged pairs with c <= 0 are 0 (that raises
        # N and lowers I) and those with c > 0 are enumerated; else (every completion < 0) it is
        # minus the minimum of -N / I > 0, where every unjudged pair but those with c < 0 takes the
        # top grade (lowering -N and raising I) and those with c < 0 are enumerated. The minimum
        # is the mirror image. Exact in every case (the module docstring; tests/evaluate/test_settle.py)
        caseA = (Nmax >= 0) | (Ij == 0)
        hi = np.where(caseA, _ratio_ext(J, trim(cp), cntc, dc, k, G),
                      -_ratio_ext(-Nmax, trim(cn), at_top(nu - n_cn), dc, k, G, minimum=True))
        caseB = (Nmin <= 0) | (Ij == 0)
        lo = np.where(caseB, -_ratio_ext(-J, trim(cn), cntc, dc, k, G),
                      _ratio_ext(Nmin, trim(cp), at_top(nu - n_cp), dc, k, G, minimum=True))
        w = G * np.abs(c) / np.maximum(Ij, 1.0)[:, :, None]
        moving = u & (c != 0)
        so_far = np.where(Ij > 0, J / np.where(Ij > 0, Ij, 1.0), 0.0)
        # an unjudged pair of an open query can also raise the ideal DCG: at most by G at the
        # discount after the judged top-grade pairs, shrinking the difference in proportion
        step_up = G * disc[np.clip(cntc[:, :, G - 1] + 1, 0, k)] * (cntc[:, :, G - 1] < k)
        idcg_w = np.abs(so_far) * step_up / (np.maximum(Ij, 1.0) + step_up)
    else:  # ap
        rel = np.where(u | ~valid, 0.0, (np.nan_to_num(gv, nan=0.0) >= rel_level).astype(np.float64))
        ranks_k = np.arange(1, k + 1, dtype=np.float64)
        um = (u & valid).astype(np.float64)

        def s_of(x):  # x: (..., k) relevance along a run's top k -> sum of precision at relevant ranks
            return (x * np.cumsum(x, axis=-1) / ranks_k).sum(axis=-1)

        def s_best(relj, unj_m):
            """S with m' = 0..k of the run's unjudged pairs relevant, the highest-ranked ones (the
            most S can be with m' of them: a relevant pair moved up never lowers S)."""
            cum = np.cumsum(unj_m, axis=2)
            ms = np.arange(k + 1, dtype=np.float64)[None, None, :, None]
            x = relj[:, :, None, :] + unj_m[:, :, None, :] * (cum[:, :, None, :] <= ms)
            return s_of(x)  # (C, n, k + 1)

        sB_lo, sA_lo = s_of(rel[:, :, :k]), s_of(rel[:, :, k:])
        relq = np.stack([np.bincount(pq, weights=(np.nan_to_num(g[r], nan=-1.0) >= rel_level), minlength=n)
                         for r in range(rows)])
        Rj = relq if rows == C else np.broadcast_to(relq, (C, n))
        nu = n_unj if rows == C else np.broadcast_to(n_unj, (C, n))
        Rmax = np.maximum(Rj + nu, 1.0)[:, :, None]
        den = Rj[:, :, None] + np.arange(k + 1)[None, None, :]

        def best_ratio(s_hi, s_other_lo):
            # m' of the run's unjudged pairs relevant: R >= Rj + m'; a negative difference is divided
            # by the largest R instead
            num = s_hi - s_other_lo[:, :, None]
            with np.errstate(divide="ignore", invalid="ignore"):
                r = np.where(num >= 0, np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0), num / Rmax)
            return np.minimum(1.0, r.max(axis=2))

        hi = best_ratio(s_best(rel[:, :, :k], um[:, :, :k]), sA_lo)
        lo = -best_ratio(s_best(rel[:, :, k:], um[:, :, k:]), sB_lo)
        rk = np.concatenate([np.tile(ranks_k, 2)])[None, None, :]
        inboth = np.zeros_like(valid)
        rB = pm.ranks[comps[:, 1][:, None, None], safe]
        rA = pm.ranks[comps[:, 0][:, None, None], safe]
        inboth[:, :, k:] = (rB[:, :, k:] >= 1) & (rB[:, :, k:] <= k)
        recip = np.where(valid & ~inboth, 1.0 / rk, 0.0)
        other = np.where((rA >= 1) & (rA <= k), 1.0 / np.maximum(rA, 1), 0.0)
        c = np.where(np.arange(2 * k)[None, None, :] < k, recip - other, -recip)
        c = np.where(inboth, 0.0, c)
        w = np.abs(c) / np.maximum(Rj, 1.0)[:, :, None]
        moving = u & ~inboth & valid
        so_far = np.where(Rj > 0, (sB_lo - sA_lo) / np.maximum(Rj, 1.0), 0.0)
        idcg_w = np.abs(so_far) / (np.maximum(Rj, 1.0) + 1.0)  # one more relevant pair dilutes the difference
    open_q = hi - lo > EPS
    wq = np.where(u & open_q[:, :, None], w, 0.0)
    np.maximum.at(weight, (np.broadcast_to(crow, cand.shape)[valid], cand[valid]), wq[valid])
    # every unjudged pair of an open query weighs at least its effect through the ideal DCG (or R)
    unj_rows = unj if rows == C else np.broadcast_to(unj, (C, P))
    qw = np.where(open_q, idcg_w, 0.0)[:, pq]
    if IDEAL_BY_RANK:  # likely relevant first: a relevant pair judged tightens the ideal DCG bound most
        # (an unjudged pair is bounded at the top grade; judged relevant ones fill the ideal ranking)
        best = np.where(pm.ranks > 0, pm.ranks, np.iinfo(np.int32).max).min(axis=0)
        qw = qw * (1.0 / np.log2(1.0 + np.minimum(best, 10 ** 6)))[None, :]
    np.maximum(weight, np.where(unj_rows, qw, 0.0), out=weight)
    movers = (moving & open_q[:, :, None]).sum(axis=(1, 2))
    return Bounds(lo=lo, hi=hi, so_far=so_far, weight=weight, movers=movers)


# ---------------------------------------------------------------------------------------------
# The bootstrap and the verdicts


def resample_counts(n: int, *, resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> np.ndarray:
    """(resamples x n) counts of each query in each bootstrap resample (n draws with replacement,
    ``numpy.random.default_rng(seed)``); a replicate mean is ``counts @ d / n``."""
    if n < 2:
        raise ValueError("the bootstrap needs at least 2 queries")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(resamples, n)) + (np.arange(resamples) * n)[:, None]
    return np.bincount(idx.ravel(), minlength=resamples * n).reshape(resamples, n).astype(np.float64)


def percentile_ends(counts: np.ndarray, d: np.ndarray, level: float = DEFAULT_LEVEL,
                    ends: str = "both") -> tuple[np.ndarray | None, np.ndarray | None]:
    """Low and high ends of the percentile interval of the mean of each row of ``d`` (C x n), as
    ``numpy.percentile`` computes them (linear interpolation between order statistics), through a
    partial sort; ``ends`` "low" or "high" computes one end only."""
    reps = counts @ (np.atleast_2d(d).T / counts.shape[1])  # (R, C)
    R = reps.shape[0]

    def end(q):
        pos = (R - 1) * q / 100.0
        i = int(np.floor(pos))
        j = min(i + 1, R - 1)
        part = np.partition(reps, [i, j], axis=0)
        return part[i] + (pos - i) * (part[j] - part[i])

    lo = end(50 * (1 - level)) if ends in ("both", "low") else None
    hi = end(50 * (1 + level)) if ends in ("both", "high") else None
    return lo, hi


@dataclass
class Settlement:
    """Per comparison: ``status`` (HIGHER / LOWER / TIE when settled, else OPEN), the verdict the
    judged pairs point to so far (``current``: the interval of the midpoints), the worst-case
    interval ends ``guarantee_low`` (low end over the ``lo`` completion) and ``guarantee_high``."""

    status: list[str]
    current: list[str]
    mean_low: np.ndarray
    mean_high: np.ndarray
    guarantee_low: np.ndarray
    guarantee_high: np.ndarray
    gap: np.ndarray  # how far the worst-case interval still is from settling (0 when settled)


def verdict_of(lo_end: float, hi_end: float, tie: float = 0.0) -> str:
    """The verdict of one interval: B higher / B lower / tie (inside the margin) / not significant."""
    if lo_end > EPS:
        return HIGHER
    if hi_end < -EPS:
        return LOWER
    if tie > 0 and lo_end > -tie + EPS and hi_end < tie - EPS:
        return TIE
    return NOT_SIGNIFICANT


def settle(bounds: Bounds, counts: np.ndarray, *, level: float = DEFAULT_LEVEL, tie: float = 0.0) -> Settlement:
    """Apply the guarantee to every comparison of ``bounds`` (see the module docstring)."""
    lo_end, _ = percentile_ends(counts, bounds.lo, level, ends="low")
    _, hi_end = percentile_ends(counts, bounds.hi, level, ends="high")
    cur_lo, cur_hi = percentile_ends(counts, bounds.so_far, level)
    status, current = [], []
    gap = np.zeros(len(lo_end))
    for i, (a, b) in enumerate(zip(lo_end, hi_end)):
        if a > EPS:
            s = HIGHER
        elif b < -EPS:
            s = LOWER
        elif tie > 0 and a > -tie + EPS and b < tie - EPS:
            s = TIE
        else:
            s = OPEN
            gap[i] = min(-a, b)
            if tie > 0:  # distance to the tie settlement
                gap[i] = min(gap[i], max(0.0, -tie - a) + max(0.0, b - tie))
        status.append(s)
        current.append(s if s != OPEN else verdict_of(cur_lo[i], cur_hi[i], tie))
    return Settlement(status=status, current=current, mean_low=np.asarray(bounds.lo.mean(axis=1)),
                      mean_high=np.asarray(bounds.hi.mean(axis=1)), guarantee_low=lo_end, guarantee_high=hi_end,
                      gap=np.maximum(gap, 0.0))


# ---------------------------------------------------------------------------------------------
# The estimate (labelled as such wherever it is shown)


def _features(pm: PoolMatrix, runs: Sequence[int]) -> np.ndarray:
    """Per pair: 1/rank in each of ``runs`` (0 when absent), 1/best rank, the share of ``runs``
    that retrieved it, and its query's stratum (one-hot)."""
    r = pm.ranks[list(runs)].astype(np.float64)
    inv = np.where(r > 0, 1.0 / np.maximum(r, 1.0), 0.0)
    cols = [inv.T, inv.max(axis=0)[:, None], (r > 0).mean(axis=0)[:, None]]
    strata = sorted(set(pm.strata))
    if len(strata) > 1:
        code = np.array([strata.index(s) for s in pm.strata])[pm.pair_query]
        cols.append(np.eye(len(strata))[code][:, 1:])
    return np.hstack(cols)


def relevance_probability(features: np.ndarray, judged: np.ndarray, relevant: np.ndarray, *, seed: int = 0):
    """P(relevant) of every pair: a logistic regression on the judged pairs (scikit-learn),
    calibrated by ``CalibratedClassifierCV`` (Platt scaling, 3 folds). With fewer than 5 judged
    pairs of either class, the smoothed base rate ((relevant + 1) / (judged + 2)) for every pair."""
    y = relevant[judged].astype(int)
    pos, neg = int(y.sum()), int(len(y) - y.sum())
    if pos < 5 or neg < 5:
        return np.full(len(features), (pos + 1) / (len(y) + 2))
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.linear_model import LogisticRegression

    model = CalibratedClassifierCV(LogisticRegression(max_iter=500), method="sigmoid", cv=3)
    model.fit(features[judged], y)
    return model.predict_proba(features)[:, 1]


def _coefficient_spread(features: np.ndarray, judged: np.ndarray, relevant: np.ndarray, *, C: float = 1.0):
    """The uncertainty of a logistic regression of relevance on ``features`` fitted on the judged
    pairs (scikit-learn, L2 penalty ``1/C`` on the slopes): ``(X1, p, cov)``, the features with an
    intercept column, the fitted P(relevant) of every pair and the Laplace approximation of the
    coefficients' covariance, the inverse of ``X1' W X1 + penalty`` over the judged pairs. With
    fewer than 5 judged pairs of either class: the intercept alone, its variance that of a
    smoothed base rate on the logit scale."""
    X1 = np.hstack([np.ones((len(features), 1)), features])
    y = relevant[judged].astype(int)
    pos, neg = int(y.sum()), int(len(y) - y.sum())
    if pos < 5 or neg < 5:
        rate = (pos + 1) / (len(y) + 2)
        cov = np.zeros((X1.shape[1], X1.shape[1]))
        cov[0, 0] = 1.0 / ((len(y) + 2) * rate * (1 - rate))
        return X1, np.full(len(features), rate), cov
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=C, max_iter=500).fit(features[judged], y)
    p = model.predict_proba(features)[:, 1]
    Xj, pj = X1[judged], p[judged]
    penalty = np.eye(X1.shape[1]) / C
    penalty[0, 0] = 0.0  # scikit-learn does not penalise the intercept
    H = (Xj * (pj * (1 - pj))[:, None]).T @ Xj + penalty
    return X1, p, np.linalg.pinv(H)


def estimate(pm: PoolMatrix, grades: np.ndarray, comparisons: Sequence[tuple[int, int]], metric: str | MetricSpec,
             counts: np.ndarray, *, max_grade: int, rel_level: int = 1, level: float = DEFAULT_LEVEL,
             tie: float = 0.0, only: Sequence[int] | None = None, members: np.ndarray | None = None,
             samples: int = 16, seed: int = 0, cache: dict | None = None,
             extra_features: np.ndarray | None = None) -> dict[int, dict]:
    """An ESTIMATE of where each comparison is heading: per comparison index (``only``, default
    all) the verdict the fully judged pool most likely gives, its probability ``1 - p_flip``, and
    the expected mean difference. P(relevant) per unjudged pair by :func:`relevance_probability`
    (fitted per row of ``grades``: the comparison's own pool when ``grades`` has one row per
    comparison), the grade of a relevant pair drawn from the judged grades; per query the expected
    difference and its variance given the model (labels independent, the ideal DCG averaged over
    ``samples`` draws), and three shared errors on top: each query's own rate of relevant pairs
    (a Gamma(QUERY_PRIOR + relevant judged, QUERY_PRIOR + expected) multiplier of its unjudged
    pairs' P(relevant): its mean moves them, its variance counts), the model's coefficients (the
    Laplace covariance of :func:`_coefficient_spread`, through the delta method: a model fitted on
    few pairs may favour one run's ranks for every query at once) and a common multiplier of every
    unjudged P(relevant) of sd :data:`SHIFT`; for the mean a normal law around the interval the
    fully judged pool is expected to give: the interval of the expected differences, widened by
    the queries' own variances (``sd`` in the answer: each part's share, on the mean difference;
    ``interval``: the widened one).
    It is not a guarantee: only :func:`settle` says "settled". ``cache`` (a dict kept between
    calls) reuses a row's fitted probabilities until its judged pairs grow by a quarter.
    ``extra_features`` (pairs x columns, e.g. a machine judge's labels) join the model's features."""
    from scipy.stats import norm

    name, k = metric_form(metric, pm.depth)
    comps = np.asarray(comparisons, dtype=np.int64).reshape(-1, 2)
    C, n, P = len(comps), len(pm.qids), pm.n_pairs
    g = _as_grades(grades, C)
    rows = g.shape[0]
    G = int(max_grade)
    members = np.ones((rows, P), dtype=bool) if members is None else np.atleast_2d(members)
    want = list(range(C)) if only is None else [int(i) for i in only]
    rng = np.random.default_rng(seed)
    cand, valid, safe = _candidates(pm, comps[want], k)
    out: dict[int, dict] = {}
    prob = {}
    for j, i in enumerate(want):
        r = i if rows == C else 0
        if r not in prob:
            runs = list(comps[i]) if rows == C else list(range(len(pm.runs)))
            feats = _features(pm, runs)
            if extra_features is not None:
                feats = np.hstack([feats, extra_features])
            judged = ~np.isnan(g[r]) & members[r]
            rel = np.nan_to_num(g[r], nan=0.0) >= rel_level
            n_j = int(judged.sum())
            hit = None if cache is None else cache.get(r)
            if hit is not None and n_j <= hit[0] * 1.25 + 20:
                p, lap = hit[1], hit[2]
            else:
                p = relevance_probability(feats, judged, rel, seed=seed)
                lap = _coefficient_spread(feats, judged, rel)
                if cache is not None:
                    cache[r] = (n_j, p, lap)
            pos_grades = g[r][judged & rel & (np.nan_to_num(g[r]) > 0)]
            dist = np.bincount(np.clip(pos_grades.astype(int), 1, G), minlength=G + 1)[1:] + 1.0
            dist = dist / dist.sum()
            # the query's own rate: relevant pairs judged in the query against the model's
            # expectation for them, a Gamma(QUERY_PRIOR + seen, QUERY_PRIOR + expected) multiplier of the
            # query's unjudged P(relevant) (labels within a query go together: an easy query has
            # many relevant pairs)
            seen = np.bincount(pm.pair_query, weights=judged & rel, minlength=n)
            expected = np.bincount(pm.pair_query, weights=np.where(judged, p, 0.0), minlength=n)
            lam = (QUERY_PRIOR + seen) / (QUERY_PRIOR + expected)
            var_lam = (QUERY_PRIOR + seen) / (QUERY_PRIOR + expected) ** 2
            open_r = np.isnan(g[r]) & members[r]
            base = np.where(open_r, p, 0.0)
            prob[r] = (np.clip(base * lam[pm.pair_query], 0.0, 0.99), dist, None, base, lam, var_lam, lap)
        p, dist, ideal, base, lam, var_lam, lap = prob[r]
        unj = np.isnan(g[r]) & members[r]
        grades_r = np.where(np.isnan(g[r]), 0.0, np.clip(g[r], 0, None))
        vals = np.arange(1, G + 1, dtype=np.float64)
        mu_g, m2_g = float(dist @ vals), float(dist @ vals ** 2)
        vs, cmask = valid[j], safe[j]
        pu = np.where(vs, p[cmask], 0.0)
        bu = np.where(vs & unj[cmask], base[cmask], 0.0)
        if name == "ndcg":
            c = _ndcg_weights(pm, comps[[i]], safe[j][None], valid[j][None], k)[0]
            mean_gain = np.where(unj[cmask], pu * mu_g, grades_r[cmask])
            var_gain = np.where(unj[cmask], pu * m2_g - (pu * mu_g) ** 2, 0.0)
            num = (mean_gain * c).sum(axis=1)
            var = (var_gain * c * c).sum(axis=1)
            if ideal is None:  # the same for every comparison of the row
                ideal = _sampled_idcg(pm, grades_r, unj, p, dist, k, samples, rng)
                prob[r] = (p, dist, ideal, base, lam, var_lam, lap)
            safe_i = np.where(ideal > 0, ideal, 1.0)
            m = np.where(ideal > 0, num / safe_i, 0.0)
            v = np.where(ideal > 0, var / safe_i ** 2, 0.0)
            sens = np.where(ideal > 0, (bu * mu_g * c).sum(axis=1) / safe_i, 0.0)  # d m_q / d lam_q
            effect = np.where(unj[cmask] & vs, mu_g * c / safe_i[:, None], 0.0)  # d m_q / d P(rel of u)
        else:
            relp = np.where(unj[cmask], pu, (grades_r[cmask] >= rel_level).astype(float))
            relp = np.where(vs, relp, 0.0)
            ranks_k = np.arange(1, k + 1, dtype=np.float64)

            def exp_s(x, ranks_k=ranks_k):
                before = np.cumsum(x, axis=1) - x
                return (x * (1.0 + before) / ranks_k).sum(axis=1)

            rB = pm.ranks[comps[i, 1], cmask]
            dup = np.zeros_like(vs)
            dup[:, k:] = (rB[:, k:] >= 1) & (rB[:, k:] <= k)
            s_diff = exp_s(relp[:, :k]) - exp_s(relp[:, k:])
            R = np.bincount(pm.pair_query, weights=np.where(unj, p, (grades_r >= rel_level) & members[r]),
                            minlength=n)
            m = np.where(R > 0, s_diff / np.maximum(R, 1e-9), 0.0)
            w = np.where(np.arange(2 * k) < k, 1.0 / np.tile(ranks_k, 2), -1.0 / np.tile(ranks_k, 2))
            w = np.where(dup | ~vs, 0.0, w)
            var = (np.where(unj[cmask] & vs, pu * (1 - pu), 0.0) * w * w).sum(axis=1)
            v = np.where(R > 0, var / np.maximum(R, 1e-9) ** 2, 0.0)
            sens = np.where(R > 0, (bu * w).sum(axis=1) / np.maximum(R, 1e-9), 0.0)
            effect = np.where(unj[cmask] & vs, w / np.maximum(R, 1e-9)[:, None], 0.0)
        # the uncertainty of each query's own rate, and a common error of the model for every
        # unjudged pair at once (a multiplier of sd SHIFT), on the mean difference
        v_query = sens ** 2 * var_lam
        common = SHIFT * abs(float((lam * sens).sum())) / n
        # the model's own uncertainty (its coefficients, fitted on the judged pairs), shared by every
        # unjudged pair: the delta method on the mean difference (Laplace approximation)
        X1, p_lr, cov = lap
        dp = (p_lr * (1.0 - p_lr))[cmask] * lam[:, None]  # d P(rel) / d (linear predictor)
        grad = np.einsum("qk,qkd->d", effect * dp, X1[cmask]) / n
        var_coef = float(grad @ cov @ grad)
        wabs = np.where(vs, np.abs(_ndcg_weights(pm, comps[[i]], safe[j][None], valid[j][None], k)[0]), 0.0)
        unj_share = np.where(wabs.sum(axis=1) > 0,
                             (wabs * unj[cmask]).sum(axis=1) / np.maximum(wabs.sum(axis=1), 1e-12), 0.0)
        known = (unj_share < 0.1) & (wabs.sum(axis=1) > 0)
        lo_m, hi_m = percentile_ends(counts, m[None], level)
        sd = float(np.sqrt((v.sum() + v_query.sum()) / n ** 2 + var_coef + common ** 2))
        # the fully judged interval is wider than the interval of the expected differences: the
        # differences themselves vary across queries by Var(m) plus each query's own variance (law
        # of total variance), so its half-widths grow by sqrt(1 + mean variance / Var(m))
        mid = float(m.mean())
        widen = float(np.sqrt(1.0 + (v + v_query).mean() / max(float(np.var(m)), 1e-12)))
        lo_m, hi_m = mid - (mid - float(lo_m[0])) * widen, mid + (float(hi_m[0]) - mid) * widen
        if sd > 0:
            p_hi, p_lo = float(norm.cdf(lo_m / sd)), float(norm.cdf(-hi_m / sd))
            p_tie = max(0.0, float(norm.cdf((tie - hi_m) / sd) - norm.cdf((-tie - lo_m) / sd))) if tie > 0 else 0.0
        else:
            p_hi, p_lo = float(lo_m > EPS), float(hi_m < -EPS)
            p_tie = float(tie > 0 and lo_m > -tie and hi_m < tie)
        p_ns = max(0.0, 1.0 - p_hi - p_lo - p_tie)
        probs = {HIGHER: p_hi, LOWER: p_lo, TIE: p_tie, NOT_SIGNIFICANT: p_ns}
        verdict = max(probs, key=probs.get)
        p_flip = 1.0 - probs[verdict]
        out[i] = {"verdict": verdict, "p_flip": p_flip, "probabilities": probs, "known_queries": int(known.sum()),
                  "mean": float(m.mean()), "interval": [lo_m, hi_m],
                  "sd": {"labels": float(np.sqrt(v.sum()) / n), "queries": float(np.sqrt(v_query.sum()) / n),
                         "model": float(np.sqrt(var_coef)), "common": common}}
    return out


def _sampled_idcg(pm, grades_r, unj, p, dist, k, samples, rng) -> np.ndarray:
    """Mean ideal DCG@k of each query over ``samples`` draws of the unjudged pairs' grades."""
    n = len(pm.qids)
    order = np.argsort(pm.pair_query, kind="stable")
    q_sorted = pm.pair_query[order]
    starts = np.searchsorted(q_sorted, np.arange(n))
    width = int(np.bincount(pm.pair_query, minlength=n).max())
    pos = np.arange(len(order)) - starts[q_sorted]
    disc = _disc(k)[1:]
    total = np.zeros(n)
    G = len(dist)
    for _ in range(samples):
        draw = rng.random(len(p)) < p
        grade = rng.choice(np.arange(1, G + 1), size=len(p), p=dist)
        gains = np.where(unj, np.where(draw, grade, 0.0), grades_r)
        mat = np.zeros((n, width))
        mat[q_sorted, pos] = gains[order]
        top = -np.sort(-mat, axis=1)[:, :k]
        total += top @ disc[: top.shape[1]]
    return total / samples
