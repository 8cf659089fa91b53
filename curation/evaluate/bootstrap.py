"""The bootstrap over queries: vectorised replicates of a (weighted, stratified or clustered) mean,
the percentile interval, and the BCa interval through ``scipy.stats.bootstrap``.

Resampling runs in blocks of replicates, one ``numpy.random`` generator per block spawned from the
seed, so one seed gives the same figures byte for byte whatever the number of threads.
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from scipy import stats as sps


def _block(units: int, columns: int) -> int:
    """Replicates per block: about a million gathered values per block (fast, bounded memory)."""
    return max(1, 1_250_000 // max(1, units * columns))


def bootstrap_replicates(
    values: np.ndarray,
    *,
    weights: np.ndarray | None = None,
    strata: np.ndarray | None = None,
    clusters: np.ndarray | None = None,
    resamples: int = 10_000,
    seed: int = 0,
    total: float | None = None,
) -> np.ndarray:
    """Bootstrap replicates of the (weighted) mean of ``values``: shape ``(resamples,)`` or
    ``(resamples, m)`` when ``values`` is ``(n, m)`` (all columns resampled together).

    Each replicate draws ``n`` queries with replacement (within each stratum when ``strata`` is
    given, keeping each stratum's count) and returns ``sum(w * v) / sum(w)`` over the draw. With
    ``clusters`` (an id per query), whole clusters are drawn instead of queries. With ``total``
    (a known total of the weights, as in a Horvitz-Thompson mean), each replicate is
    ``sum(w * v) / total`` instead.
    """
    values = np.asarray(values, dtype=np.float64)
    one = values.ndim == 1
    v = values[:, None] if one else values
    n, m = v.shape
    if n < 2:
        raise ValueError("values: the bootstrap needs at least 2 queries")
    if not isinstance(resamples, (int, np.integer)) or resamples < 100:
        raise ValueError(f"resamples must be an integer >= 100, not {resamples!r}")
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    if w.shape != (n,) or (w < 0).any() or not np.isfinite(w).all():
        raise ValueError("weights: one non-negative weight per query")
    unit_s, unit_w, groups = _resampled_units(v, w, strata, clusters)
    if total is not None and not (math.isfinite(total) and total > 0):
        raise ValueError(f"total must be a positive number, not {total!r}")
    constant_den = total is not None or (len(groups) == 1 and np.all(unit_w == unit_w[0]))
    out = np.empty((resamples, m))
    units = len(unit_w)
    block = _block(units, m)
    starts = list(range(0, resamples, block))
    # One generator per block, spawned from the seed: the figures do not depend on how many
    # threads ran the blocks, or in which order.
    seeds = np.random.SeedSequence(seed).spawn(len(starts))
    single = unit_s[:, 0] if m == 1 else None

    def run_block(b: int) -> None:
        start = starts[b]
        c = min(block, resamples - start)
        rng = np.random.default_rng(seeds[b])
        num = np.zeros((c, m))
        den = np.zeros(c)
        for members in groups:
            idx = rng.integers(0, len(members), size=(c, len(members)))
            if len(groups) > 1:
                idx = members[idx]
            if single is not None:
                num[:, 0] += single[idx].sum(axis=1)
            else:
                num += unit_s[idx].sum(axis=1)
            if not constant_den:
                den += unit_w[idx].sum(axis=1)
        if constant_den:
            den[:] = total if total is not None else unit_w[0] * units
        with np.errstate(invalid="ignore", divide="ignore"):
            out[start : start + c] = num / den[:, None]

    workers = min(len(starts), os.cpu_count() or 1, 8)
    if workers > 1 and resamples * units * m >= 4_000_000:
        # numpy releases the GIL while drawing, gathering and summing, so threads overlap.
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(run_block, range(len(starts))))
    else:
        for b in range(len(starts)):
            run_block(b)
    return out[:, 0] if one else out


def _resampled_units(v: np.ndarray, w: np.ndarray, strata, clusters) -> tuple[np.ndarray, np.ndarray, list]:
    """What the bootstrap draws: each unit's weighted sums ``(units, m)`` and weight, and the groups
    of units drawn from separately. A unit is a query, or with ``clusters`` a whole cluster (one
    group); queries are grouped by ``strata`` when given."""
    n, m = v.shape
    if clusters is not None:
        _, cl = np.unique(np.asarray(clusters), return_inverse=True)
        unit_s = np.zeros((cl.max() + 1, m))
        np.add.at(unit_s, cl, v * w[:, None])
        unit_w = np.bincount(cl, weights=w)
        if len(unit_w) < 2:
            raise ValueError("clusters: the cluster bootstrap needs at least 2 clusters")
        return unit_s, unit_w, [np.arange(len(unit_w))]
    if strata is None:
        return v * w[:, None], w, [np.arange(n)]
    strata = np.asarray(strata)
    return v * w[:, None], w, [np.flatnonzero(strata == s) for s in np.unique(strata)]


def t_variance(z: np.ndarray, *, strata: np.ndarray | None = None,
               fpc: np.ndarray | None = None) -> tuple[float, int]:
    """The linearised variance of ``sum(z)`` and its degrees of freedom: ``sum_h n_h / (n_h - 1) *
    sum_(i in h) (z_i - mean_h z)^2`` with ``n - H`` degrees of freedom, the with-replacement
    (Hansen-Hurwitz) variance estimator within strata (Lohr, *Sampling: Design and Analysis*, 2nd
    ed., sec. 6.4 and 9.1). Strata with a single unit add no variance and no degree of freedom.

    ``fpc``: per unit ``1 - pi_i`` (its inclusion probability) for a draw without replacement with
    unequal probabilities: then ``n_h / (n_h - 1) sum_(i in h) (1 - pi_i) (z_i - B_h)^2`` with
    ``B_h = sum (1 - pi_i) z_i / sum (1 - pi_i)``, Hajek's approximation (Hajek, "Asymptotic
    theory of rejective sampling", Ann. Math. Statist. 35, 1964; Berger, J. Appl. Statist. 31,
    2004): a unit drawn with probability near 1 adds almost no variance."""
    z = np.asarray(z, dtype=np.float64)
    f = np.ones(len(z)) if fpc is None else np.clip(np.asarray(fpc, dtype=np.float64), 0.0, 1.0)
    groups = [np.arange(len(z))] if strata is None else [np.flatnonzero(strata == s) for s in np.unique(strata)]
    var, df = 0.0, 0
    for members in groups:
        m = len(members)
        if m >= 2:
            zs, fs = z[members], f[members]
            centre = float(np.sum(fs * zs) / fs.sum()) if fs.sum() > 0 else float(zs.mean())
            var += m / (m - 1) * float(np.sum(fs * (zs - centre) ** 2))
            df += m - 1
    return var, df


def t_interval(z: np.ndarray, estimate: float, *, strata: np.ndarray | None = None,
               level: float = 0.95) -> tuple[float, float, int]:
    """A t interval for an estimate that is the sum of per-unit contributions ``z`` (Taylor
    linearisation; Lohr, *Sampling: Design and Analysis*, 2nd ed., sec. 9.1): the variance of
    :func:`t_variance` with ``n - H`` degrees of freedom (one stratum when ``strata`` is None).
    For an unweighted mean, ``z_i = (d_i - mean d) / n`` and this is the paired t interval
    ``mean +- t_(n-1) * s / sqrt(n)`` exactly. Returns (low, high, df); NaN bounds when there is
    no degree of freedom.
    """
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1, not {level!r}")
    var, df = t_variance(z, strata=strata)
    if df < 1:
        return math.nan, math.nan, 0
    half = float(sps.t.ppf(0.5 + level / 2, df)) * math.sqrt(var)
    return estimate - half, estimate + half, df


def rescaled_replicates(
    values: np.ndarray,
    *,
    weights: np.ndarray,
    strata: np.ndarray | None = None,
    fixed: np.ndarray | None = None,
    resamples: int = 10_000,
    seed: int = 0,
    total: float | None = None,
) -> np.ndarray:
    """Replicates of a weighted mean by the Rao-Wu rescaling bootstrap (Rao & Wu, "Resampling
    inference with complex survey data", JASA 83, 1988; Rao, Wu & Yue, Survey Methodology 18, 1992):
    in each stratum ``h`` with ``n_h >= 2`` units that were not ``fixed``, draw ``n_h - 1`` of them
    with replacement and give unit ``i`` the weight ``w_i * n_h / (n_h - 1) * r_i`` (``r_i``: the
    times it was drawn); ``fixed`` units (taken with certainty, inclusion probability 1) and
    strata with one free unit keep their weights. A replicate is ``sum(w* v) / total`` (a
    Horvitz-Thompson mean over a known total) or ``sum(w* v) / sum(w*)`` (the ratio mean).

    Its variance is the with-replacement variance of :func:`t_variance` on average, so certainty
    units add none, and a stratum's resampled weights sum to its own on average.
    """
    v = np.asarray(values, dtype=np.float64)
    n = len(v)
    if not isinstance(resamples, (int, np.integer)) or resamples < 100:
        raise ValueError(f"resamples must be an integer >= 100, not {resamples!r}")
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (n,) or (w < 0).any() or not np.isfinite(w).all():
        raise ValueError("weights: one non-negative weight per query")
    free = np.ones(n, dtype=bool) if fixed is None else ~np.asarray(fixed, dtype=bool)
    st = np.zeros(n, dtype=np.int64) if strata is None else np.asarray(strata)
    groups = [g for g in (np.flatnonzero(free & (st == s)) for s in np.unique(st)) if len(g) >= 2]
    still = np.ones(n, dtype=bool)
    for g in groups:
        still[g] = False
    base_num, base_den = float(np.sum(w[still] * v[still])), float(np.sum(w[still]))
    ws, wv = w, w * v
    out = np.empty(resamples)
    block = _block(max(1, n), 1)
    starts = list(range(0, resamples, block))
    seeds = np.random.SeedSequence(seed).spawn(len(starts))
    for b, start in enumerate(starts):
        c = min(block, resamples - start)
        rng = np.random.default_rng(seeds[b])
        num = np.full(c, base_num)
        den = np.full(c, base_den)
        for g in groups:
            k = len(g)
            idx = g[rng.integers(0, k, size=(c, k - 1))]
            scale = k / (k - 1)
            num += scale * wv[idx].sum(axis=1)
            den += scale * ws[idx].sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[start : start + c] = num / (total if total is not None else den)
    return out


def interval(replicates: np.ndarray, *, level: float = 0.95) -> tuple[float, float]:
    """Percentile interval of bootstrap replicates (linear interpolation between order statistics)."""
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1, not {level!r}")
    lo, hi = np.nanpercentile(replicates, [50 * (1 - level), 50 * (1 + level)], axis=0)
    return float(lo), float(hi)


def bca_interval(diff, w, clusters, *, resamples, seed, level):
    """BCa interval and replicates through scipy.stats.bootstrap (unstratified)."""
    rng = np.random.default_rng(seed)
    if clusters is None and np.all(w == w[0]):
        data = (diff,)

        def statistic(x, axis=-1):
            return np.mean(x, axis=axis)
    else:
        if clusters is not None:
            _, cl = np.unique(np.asarray(clusters), return_inverse=True)
            s = np.bincount(cl, weights=diff * w)
            ww = np.bincount(cl, weights=w)
        else:
            s, ww = diff * w, w
        data = (s, ww)

        def statistic(x, y, axis=-1):
            return np.sum(x, axis=axis) / np.sum(y, axis=axis)
    res = sps.bootstrap(
        data, statistic, paired=len(data) > 1, vectorized=True, n_resamples=resamples,
        confidence_level=level, method="BCa", random_state=rng,
    )
    return (float(res.confidence_interval.low), float(res.confidence_interval.high)), res.bootstrap_distribution
