"""Many systems at once: adjusted p-values for a family of paired comparisons.

Comparing every pair of five equal systems at 5% each calls at least one of the ten pairs
different about a third of the time. A family of comparisons is corrected as a whole:

* ``holm`` (the default): Holm's step-down Bonferroni (Holm, "A simple sequentially rejective
  multiple test procedure", Scand. J. Statist. 6, 1979); controls the family-wise error rate under
  any dependence and never rejects less than Bonferroni.
* ``bonferroni``: each p-value times the number of comparisons (capped at 1).
* ``bh``: Benjamini-Hochberg step-up (Benjamini & Hochberg, JRSS B 57, 1995): controls the false
  discovery rate, not the family-wise rate, for exploratory sweeps of many configurations.
* ``tukey``: the paired randomised Tukey HSD (Carterette, "Multiple testing in statistical
  analysis of systems-based information retrieval experiments", ACM TOIS 30(1), 2012; Sakai,
  *Laboratory Experiments in Information Retrieval*, Springer 2018, sec. 4.4): in each of ``B``
  randomisations the systems' scores are shuffled within every query (the pairing kept), and a
  pair's adjusted p-value is the share of randomisations whose largest difference between any two
  systems' means reaches the pair's observed difference. It uses every system's scores, so it
  needs the queries every system has a value for.
* ``none``: no correction (each comparison's own p-value).

Holm, Bonferroni and BH are written here with numpy (a few lines each) and tested against
statsmodels' ``multipletests``, which golden does not depend on at run time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from curation.evaluate.choices import CORRECTIONS

__all__ = ["CORRECTIONS", "adjust", "tukey_hsd", "correction_name", "compare_many", "Family", "FamilyRow"]

_NAMES = {
    "holm": "Holm step-down (family-wise error)",
    "bonferroni": "Bonferroni (family-wise error)",
    "bh": "Benjamini-Hochberg (false discovery rate)",
    "tukey": "paired randomised Tukey HSD (family-wise error)",
    "none": "none: each comparison at its own level",
}


def correction_name(method: str) -> str:
    """How a report names the correction."""
    return _NAMES[method]


def adjust(pvalues, method: str = "holm") -> np.ndarray:
    """Adjusted p-values of a family (``holm``, ``bonferroni``, ``bh`` or ``none``), in the input order.

    >>> adjust([0.01, 0.04, 0.03], "holm").round(4).tolist()
    [0.03, 0.06, 0.06]
    """
    if method not in CORRECTIONS or method == "tukey":
        raise ValueError(f"method must be one of holm, bonferroni, bh, none, not {method!r}")
    p = np.asarray(pvalues, dtype=np.float64)
    if p.ndim != 1 or ((p < 0) | (p > 1)).any() or np.isnan(p).any():
        raise ValueError("pvalues: one p-value in [0, 1] per comparison")
    m = len(p)
    if m == 0 or method == "none":
        return p.copy()
    if method == "bonferroni":
        return np.minimum(1.0, p * m)
    order = np.argsort(p, kind="stable")
    ranked = p[order]
    if method == "holm":
        # step down: the i-th smallest (from 0) times (m - i), made non-decreasing
        adj = np.maximum.accumulate(np.minimum(1.0, ranked * (m - np.arange(m))))
    else:
        # step up: the i-th smallest (from 1) times m / i, made non-increasing from the largest
        adj = np.minimum.accumulate((ranked * m / np.arange(1, m + 1))[::-1])[::-1]
        adj = np.minimum(1.0, adj)
    out = np.empty(m)
    out[order] = adj
    return out


def tukey_hsd(scores, pairs, *, weights=None, randomisations: int = 10_000, seed: int = 0) -> np.ndarray:
    """Adjusted p-values of the paired randomised Tukey HSD for ``pairs`` of systems.

    ``scores``: (queries x systems) values, one row per query every system has a value for;
    ``pairs``: (i, j) column indices; ``weights``: per-query weights of the mean (None: equal).
    The p-value of (i, j) is ``(1 + #{b: max_k mean_k - min_k mean_k >= |mean_j - mean_i|}) /
    (1 + B)`` over ``B`` randomisations that shuffle each query's row (Carterette 2012; Sakai 2018).
    """
    x = np.asarray(scores, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] < 2 or x.shape[0] < 2:
        raise ValueError("scores: a (queries x systems) array with at least 2 of each")
    if not isinstance(randomisations, (int, np.integer)) or randomisations < 100:
        raise ValueError(f"randomisations must be an integer >= 100, not {randomisations!r}")
    n, k = x.shape
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    if w.shape != (n,) or (w < 0).any() or not w.sum() > 0:
        raise ValueError("weights: one non-negative weight per query, not all 0")
    w = w / w.sum()
    means = w @ x
    observed = np.array([abs(means[j] - means[i]) for i, j in pairs])
    exceed = np.zeros(len(pairs), dtype=np.int64)
    rng = np.random.default_rng(seed)
    block = max(1, 2_000_000 // (n * k))
    rows = np.arange(n)[None, :, None]
    done = 0
    while done < randomisations:
        c = min(block, randomisations - done)
        perm = np.argsort(rng.random((c, n, k)), axis=2)  # a random order of the systems per query
        shuffled = x[rows, perm]  # (c, n, k)
        pm = np.einsum("q,cqk->ck", w, shuffled)
        spread = pm.max(axis=1) - pm.min(axis=1)
        # a small tolerance so that ties in floating point count as reaching the observed difference
        exceed += (spread[:, None] >= observed[None, :] - 1e-12).sum(axis=0)
        done += c
    return (1 + exceed) / (1 + randomisations)


# ---------------------------------------------------------------------------------------------
# a family of paired comparisons


@dataclass
class FamilyRow:
    """One comparison of a family: its own result, its p-value and the corrected one."""

    comparison: object  # curation.evaluate.stats.Comparison
    p: float  # two-sided p-value of the comparison's own method (2 min(P, 1 - P) of P(delta <= 0))
    p_adjusted: float
    verdict: str  # the verdict after the correction


@dataclass
class Family:
    """``golden stats compare`` of N runs: every pair, or each against a baseline, corrected as a family."""

    metric: str
    runs: list[str]
    baseline: str | None
    correction: str
    level: float
    rows: list[FamilyRow]
    randomisations: int | None = None
    tukey_queries: int | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def correction_text(self) -> str:
        extra = (f", {self.randomisations} randomisations on the {self.tukey_queries} queries every run has"
                 if self.correction == "tukey" else "")
        return f"{correction_name(self.correction)}{extra}"

    def as_dict(self, *, per_query: bool = False) -> dict:
        return {
            "metric": self.metric, "runs": self.runs, "baseline": self.baseline, "correction": self.correction,
            "correction_text": self.correction_text, "level": self.level, "notes": self.notes,
            "comparisons": [dict(r.comparison.as_dict(per_query=per_query), p=r.p, p_adjusted=r.p_adjusted,
                                 verdict_uncorrected=r.comparison.verdict, verdict=r.verdict) for r in self.rows],
        }


def family_pairs(k: int, baseline: int | None = None) -> list[tuple[int, int]]:
    """Every pair ``(i, j)`` with ``i < j``, or ``(baseline, j)`` for every other ``j``."""
    if baseline is None:
        return [(i, j) for i in range(k) for j in range(i + 1, k)]
    return [(baseline, j) for j in range(k) if j != baseline]


def two_sided_p(comparison) -> float:
    """The comparison's two-sided p-value from its own P(delta <= 0): ``2 min(P, 1 - P)`` (for the
    t interval, the paired t-test's p-value; its interval excludes 0 exactly when this is below
    ``1 - level``)."""
    p = float(comparison.p_delta_le_0)
    return float(min(1.0, 2 * min(p, 1 - p))) if p == p else 1.0


def compare_many(scores, *, baseline: int | None = None, correction: str = "holm", queries=None,
                 randomisations: int = 10_000, **options) -> Family:
    """Compare N arms (``scores``: one :class:`QueryScores` each, same metric) pair by pair, or each
    against ``scores[baseline]``, with :func:`curation.evaluate.stats.compare` and ``options``
    (weighting, split, seed, level, ...), and correct the family with ``correction``.

    A pair's corrected verdict is its direction ("B better"/"A better") only when its adjusted
    p-value is below ``1 - level``; else "cannot distinguish at this query count" (an "equivalent"
    or "no trustworthy interval" verdict is kept as it is). The intervals stay at ``level`` each.
    """
    from curation.evaluate.stats import (
        VERDICT_A,
        VERDICT_B,
        VERDICT_UNKNOWN,
        VERDICT_UNTRUSTED,
        compare,
        design,
        pair_scores,
    )

    if correction not in CORRECTIONS:
        raise ValueError(f"correction must be one of {', '.join(CORRECTIONS)}, not {correction!r}")
    k = len(scores)
    if k < 2:
        raise ValueError("scores: a comparison needs at least 2 runs")
    names = [s.run for s in scores]
    if len(set(names)) < k:
        raise ValueError(f"runs: two runs share a name ({', '.join(names)}); each run needs its own")
    if baseline is not None and not 0 <= baseline < k:
        raise ValueError(f"baseline: {baseline!r} is not one of the {k} runs")
    split = options.get("split")
    level = options.get("level", 0.95)
    alpha = 1 - level
    rows, paireds = [], []
    pairs = family_pairs(k, baseline)
    for i, j in pairs:
        paired = pair_scores(scores[i], scores[j], queries=queries, split=split)
        paireds.append(paired)
        c = compare(paired, queries=queries, **options)
        rows.append(FamilyRow(c, two_sided_p(c), math.nan, c.verdict))
    notes: list[str] = []
    family = Family(metric=str(scores[0].metric), runs=names, baseline=None if baseline is None else names[baseline],
                    correction=correction, level=level, rows=rows, notes=notes)
    if correction == "tukey":
        common = set(paireds[0].qids)
        for p in paireds[1:]:
            common &= set(p.qids)
        qids = sorted(common)
        if len(qids) < 2:
            raise ValueError("correction 'tukey': fewer than 2 queries have a value in every run")
        maps = [s.as_dict() for s in scores]
        x = np.array([[m[q] for m in maps] for q in qids])
        des = design(qids, queries, options.get("weighting", "unweighted"), unit=options.get("unit", "query"),
                     cluster_col=options.get("cluster_col"), mix=options.get("mix"))
        weights = des.weights if des.row_weights is None else des.row_weights
        adjusted = tukey_hsd(x, pairs, weights=weights, randomisations=randomisations,
                             seed=options.get("seed", 0))
        family.randomisations, family.tukey_queries = randomisations, len(qids)
        if any(len(p) != len(qids) for p in paireds):
            notes.append(f"the Tukey HSD uses the {len(qids)} queries every run has a value for; each pair's "
                         "interval uses the queries both of its runs have")
    else:
        adjusted = adjust([r.p for r in rows], correction)
    for r, pa in zip(rows, adjusted):
        r.p_adjusted = float(pa)
        c = r.comparison
        if c.verdict == VERDICT_UNTRUSTED or c.verdict.startswith("equivalent"):
            r.verdict = c.verdict
        elif r.p_adjusted < alpha and c.delta != 0:
            r.verdict = VERDICT_B if c.delta > 0 else VERDICT_A
        else:
            r.verdict = VERDICT_UNKNOWN
    if len(rows) > 1 and correction != "none":
        notes.append(f"{len(rows)} comparisons corrected as one family ({correction_name(correction)}): a "
                     f"verdict says B or A better only when its adjusted p-value is below {alpha:g}; each "
                     f"interval is at {level:.0%} on its own")
    return family


def family_table(sims: int = 1000, *, systems: int = 5, queries: int = 50, seed: int = 28,
                 randomisations: int = 1000) -> dict[str, float]:
    """Family-wise false-positive rate of each correction for ``systems`` equal systems on
    ``queries`` queries (per-query difficulty plus independent noise), every pair compared with the
    default interval, over ``sims`` simulated data sets (bench/bench_intervals.py family)."""
    from curation.evaluate.metrics import QueryScores, parse_metric

    spec = parse_metric("ndcg@10")
    rng = np.random.default_rng(seed)
    qids = [f"q{i:03d}" for i in range(queries)]
    hits = {c: 0 for c in ("none", "bonferroni", "holm", "bh", "tukey")}
    for s in range(sims):
        base = rng.beta(2, 3, queries)
        x = np.clip(base[:, None] + rng.normal(0, 0.15, (queries, systems)), 0, 1)
        arms = [QueryScores(metric=spec, run=f"s{k}", qids=qids, values=x[:, k], judged=np.ones(queries))
                for k in range(systems)]
        fam = compare_many(arms, correction="holm", resamples=100, seed=s)
        p = np.array([r.p for r in fam.rows])
        for c in ("none", "bonferroni", "holm", "bh"):
            hits[c] += bool((adjust(p, c) < 0.05).any())
        hits["tukey"] += bool((tukey_hsd(x, family_pairs(systems), randomisations=randomisations, seed=s)
                               < 0.05).any())
    return {c: h / sims for c, h in hits.items()}
