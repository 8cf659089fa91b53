"""The guarantee: bounds of every query's difference over every labelling of the unjudged pairs,
and the bootstrap verdicts they settle (see :mod:`curation.evaluate.settle`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations_with_replacement

import numpy as np

from curation.evaluate.metrics import MetricSpec
from curation.evaluate.settle._matrix import EPS, PoolMatrix, _as_grades, _disc, metric_form

DEFAULT_RESAMPLES = 10_000
DEFAULT_LEVEL = 0.95
IDEAL_BY_RANK = True  # weigh a pair's ideal-DCG effect by 1/log2(1 + its best rank in any run)

HIGHER, LOWER, TIE, OPEN, NOT_SIGNIFICANT = "B higher", "B lower", "tie", "open", "no significant difference"


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
    simulation judges each comparison's own pool; pairs outside it are given grade 0).

    One function on purpose: a single vectorised pass over (comparison, query, pair) arrays that the
    nDCG and AP bounds share; split, the arrays would be built or passed around once per step."""
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
