"""The estimate of where each open comparison is heading (labelled as such wherever it is shown;
see :mod:`curation.evaluate.settle`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from curation.evaluate.metrics import MetricSpec
from curation.evaluate.settle._bounds import (
    DEFAULT_LEVEL,
    HIGHER,
    LOWER,
    NOT_SIGNIFICANT,
    TIE,
    _candidates,
    _ndcg_weights,
    percentile_ends,
)
from curation.evaluate.settle._matrix import EPS, PoolMatrix, _as_grades, _disc, metric_form

SHIFT = 0.25  # sd of a common multiplier of every unjudged pair's P(relevant) (see estimate)
QUERY_PRIOR = 1.0  # pseudo-counts of the Gamma prior of a query's own rate of relevant pairs


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
    ``extra_features`` (pairs x columns, e.g. a machine judge's labels) join the model's features.

    One function on purpose: one pass per comparison over the model's per-query arrays, which each
    of its error terms reads; split, every step would take and return the same dozen arrays."""
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
