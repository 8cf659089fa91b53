"""Paired statistics over queries: did system B really move the metric against system A?

One score per query per system (``curation.evaluate.metrics``), subtract per query, then average: the
delta of means is the mean of the per-query differences ``d_i = B_i - A_i``. Its uncertainty comes
from the query sample, so the interval is a paired bootstrap over queries (Efron & Tibshirani,
"An Introduction to the Bootstrap", 1993; Sakai, "Statistical reform in information retrieval?",
SIGIR Forum 2014; Smucker, Allan & Carterette, "A comparison of statistical significance tests
for information retrieval evaluation", CIKM 2007).

Everything here works on numpy arrays; resampling is vectorised in blocks of replicates, with
``numpy.random.default_rng(seed)``, so one seed gives the same figures byte for byte. The BCa
interval and the exact binomial tests come from scipy (``scipy.stats.bootstrap``,
``scipy.stats.binomtest``).

Weighting (declared up front, printed with the result):

* ``unweighted``: every query counts once.
* ``traffic``: each query counts its ``weight`` from queries.jsonl (what it stands for in the
  search traffic, from ``golden sample``); hand-written queries have weight 0 and so stay out.
  Resampling is within strata, as the sample was drawn.
* ``stratum``: every stratum counts the same, whatever its query count (each query weighs
  ``1 / n_stratum``); resampling is within strata.

A weighted mean is ``sum(w_i d_i) / sum(w_i)``; in a replicate the same ratio is taken over the
resampled queries (or clusters, with ``cluster_col``: queries of one cluster, e.g. one user, are
resampled together, Field & Welsh, "Bootstrapping clustered data", JRSS B 2007).

This module owns the queries file as the statistics read it, the pairing of two arms, the weights,
the verdict and ``compare``. The resampling is in ``curation.evaluate.bootstrap``, the exact tests in
``curation.evaluate.exact_tests``, ``power`` in ``curation.evaluate.power``, ``noise`` and ``sweep`` in
``curation.evaluate.noise``, ``attribute`` in ``curation.evaluate.attribution``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from curation.evaluate.bootstrap import bca_interval, bootstrap_replicates, interval
from curation.evaluate.choices import CI_METHODS, WEIGHTINGS
from curation.evaluate.exact_tests import McNemar, SignTest, mcnemar, sign_test
from curation.evaluate.metrics import MetricSpec, QueryScores
from curation.formats.queries import QueryRecord

__all__ = [
    "WEIGHTINGS",
    "CI_METHODS",
    "stratum_label",
    "Paired",
    "pair_scores",
    "align_scores",
    "query_weights",
    "verdict",
    "compare",
    "Comparison",
]



# ---------------------------------------------------------------------------------------------
# Queries file


def stratum_label(stratum) -> str:
    """``{"market": "us", "shape": "question"}`` -> ``"market=us, shape=question"``; ``{}`` -> ``"(all)"``."""
    if stratum is None or stratum == {}:
        return "(all)"
    if not isinstance(stratum, dict):
        return str(stratum)
    if stratum == {"source": "handwritten"}:
        return "handwritten"
    return ", ".join(f"{k}={v}" for k, v in stratum.items())


# ---------------------------------------------------------------------------------------------
# Pairing two arms


@dataclass
class Paired:
    """Per-query values of two systems on the same queries (``a[i]`` and ``b[i]`` for ``qids[i]``).

    ``dropped``: queries left out of both arms because either arm has no value for them (no
    relevant document, outside the queries file or the split); ``reasons`` counts why.
    """

    metric: str
    name_a: str
    name_b: str
    qids: list[str]
    a: np.ndarray
    b: np.ndarray
    dropped: list[str] = field(default_factory=list)
    reasons: dict[str, int] = field(default_factory=dict)
    no_results_a: list[str] = field(default_factory=list)
    no_results_b: list[str] = field(default_factory=list)
    judged_a: float = math.nan
    judged_b: float = math.nan
    binary: bool = False

    @property
    def diff(self) -> np.ndarray:
        return self.b - self.a

    def __len__(self) -> int:
        return len(self.qids)


def pair_scores(
    a: QueryScores,
    b: QueryScores,
    *,
    queries: Mapping[str, QueryRecord] | None = None,
    split: str | None = None,
) -> Paired:
    """Align two :class:`QueryScores` of one metric on the queries both have a value for.

    A query missing from either arm is dropped from both, so the arms stay paired. With
    ``queries``, only queries listed there are kept; with ``split`` (``holdout``/``tune``), only
    those of that split.
    """
    if str(a.metric) != str(b.metric):
        raise ValueError(f"b: metric {b.metric} differs from a's {a.metric}")
    if split is not None and queries is None:
        raise ValueError("split: needs the queries file (--queries) that says each query's split")
    if split is not None and not any(r.split is not None for r in queries.values()):
        raise ValueError("split: the queries file has no 'split' field; run `golden split` and export again")
    va, vb = a.as_dict(), b.as_dict()
    ja, jb = dict(zip(a.qids, a.judged)), dict(zip(b.qids, b.judged))
    universe = sorted(set(va) | set(vb) | set(a.dropped) | set(b.dropped))
    undefined = a.drop_reason or b.drop_reason or "no value in one arm"
    reasons = {undefined: 0, "not in queries file": 0, "other split": 0}
    keep, dropped = [], []
    for q in universe:
        if queries is not None and q not in queries:
            reasons["not in queries file"] += 1
        elif split is not None and queries[q].split != split:
            reasons["other split"] += 1
        elif q in va and q in vb:
            keep.append(q)
            continue
        else:
            reasons[undefined] += 1
        dropped.append(q)
    if len(keep) < 2:
        raise ValueError(f"only {len(keep)} query has a value in both runs; a comparison needs at least 2")
    kept = set(keep)
    return Paired(
        metric=str(a.metric),
        name_a=a.run,
        name_b=b.run,
        qids=keep,
        a=np.array([va[q] for q in keep]),
        b=np.array([vb[q] for q in keep]),
        dropped=dropped,
        reasons={k: v for k, v in reasons.items() if v},
        no_results_a=[q for q in a.no_results if q in kept],
        no_results_b=[q for q in b.no_results if q in kept],
        judged_a=float(np.mean([ja[q] for q in keep])),
        judged_b=float(np.mean([jb[q] for q in keep])),
        binary=a.metric.binary if isinstance(a.metric, MetricSpec) else False,
    )


def query_weights(
    qids: Sequence[str], queries: Mapping[str, QueryRecord] | None, weighting: str
) -> tuple[np.ndarray, np.ndarray | None, list[str]]:
    """Per-query weights for ``weighting`` and the stratum index of each query.

    Returns ``(weights, strata, labels)``: ``strata[i]`` indexes ``labels`` (None without a
    queries file). ``traffic`` takes queries.jsonl's ``weight`` (0 for hand-written queries);
    ``stratum`` gives each query ``1 / n`` of its stratum; ``unweighted`` gives 1.
    """
    if weighting not in WEIGHTINGS:
        raise ValueError(f"weighting must be one of {', '.join(WEIGHTINGS)}, not {weighting!r}")
    n = len(qids)
    if queries is None:
        if weighting != "unweighted":
            raise ValueError(f"weighting {weighting!r} needs the queries file (--queries) with strata and weights")
        return np.ones(n), None, []
    labels_of = [stratum_label(queries[q].stratum) for q in qids]
    labels = sorted(set(labels_of))
    pos = {lab: i for i, lab in enumerate(labels)}
    strata = np.array([pos[lab] for lab in labels_of], dtype=np.int64)
    if weighting == "unweighted":
        w = np.ones(n)
    elif weighting == "stratum":
        counts = np.bincount(strata, minlength=len(labels)).astype(np.float64)
        w = 1.0 / counts[strata]
    else:
        missing = [q for q in qids if queries[q].weight is None]
        if missing:
            raise ValueError(
                f"weighting 'traffic': {len(missing)} queries have no weight (first {missing[0]!r}); "
                "use queries.jsonl from `golden sample` or choose --weighting unweighted"
            )
        w = np.array([queries[q].weight for q in qids], dtype=np.float64)
    if not (w > 0).any():
        raise ValueError(f"weighting {weighting!r}: every query has weight 0")
    return w, strata, labels


def align_scores(scores: Sequence[QueryScores], qids: Iterable[str] | None = None) -> tuple[list[str], np.ndarray]:
    """Queries that have a value in every arm, and the (queries x arms) value matrix."""
    common = set(scores[0].qids)
    for s in scores[1:]:
        common &= set(s.qids)
    if qids is not None:
        common &= set(qids)
    order = sorted(common)
    maps = [s.as_dict() for s in scores]
    return order, np.array([[m[q] for m in maps] for q in order]).reshape(len(order), len(scores))


# ---------------------------------------------------------------------------------------------
# The verdict


VERDICT_B = "B better"
VERDICT_A = "A better"
VERDICT_UNKNOWN = "cannot distinguish at this query count"


def verdict(low: float, high: float, *, tie: float | None = None) -> str:
    """The verdict from the interval of ``B - A``.

    "equivalent within ±tie" only when the whole interval lies strictly inside ``(-tie, tie)``
    (``tie`` declared before the run); else "B better" when the interval lies above 0, "A better"
    when below, and "cannot distinguish at this query count" when it contains 0.
    """
    if tie is not None:
        if not tie > 0:
            raise ValueError(f"tie must be a positive minimum effect, not {tie!r}")
        if -tie < low and high < tie:
            return f"equivalent within ±{tie:g}"
    if low > 0:
        return VERDICT_B
    if high < 0:
        return VERDICT_A
    return VERDICT_UNKNOWN


# ---------------------------------------------------------------------------------------------
# compare


@dataclass
class StratumDelta:
    label: str
    n: int
    weight: float  # share of the declared weighting this stratum carries
    mean_a: float
    mean_b: float
    delta: float
    low: float
    high: float


@dataclass
class Comparison:
    """Everything ``golden compare`` reports (``as_dict`` for --json)."""

    metric: str
    name_a: str
    name_b: str
    n: int
    weighting: str
    ci_method: str
    level: float
    resamples: int
    seed: int
    mean_a: float
    mean_b: float
    delta: float
    low: float
    high: float
    p_delta_le_0: float
    sign: SignTest
    mcnemar: McNemar | None
    verdict: str
    tie: float | None
    dropped: int
    drop_reasons: dict
    no_results_a: int
    no_results_b: int
    judged_a: float
    judged_b: float
    split: str | None = None
    cluster_col: str | None = None
    clusters: int | None = None
    strata: list[StratumDelta] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    qids: list[str] = field(default_factory=list, repr=False)
    diffs: np.ndarray | None = field(default=None, repr=False)
    replicates: np.ndarray | None = field(default=None, repr=False)

    def as_dict(self, *, per_query: bool = True) -> dict:
        out = {k: v for k, v in asdict(self).items() if k not in ("qids", "diffs", "replicates")}
        if per_query and self.diffs is not None:
            out["per_query"] = [{"qid": q, "delta": float(d)} for q, d in zip(self.qids, self.diffs)]
        return out


def _weighted_mean(x: np.ndarray, w: np.ndarray) -> float:
    return float(np.sum(w * x) / np.sum(w))


def compare(
    paired: Paired,
    *,
    queries: Mapping[str, QueryRecord] | None = None,
    weighting: str = "unweighted",
    cluster_col: str | None = None,
    resamples: int = 10_000,
    seed: int = 0,
    ci: str = "percentile",
    level: float = 0.95,
    tie: float | None = None,
    split: str | None = None,
) -> Comparison:
    """Compare two paired arms: delta of (weighted) means ``B - A``, its bootstrap interval,
    P(delta <= 0) over the bootstrap distribution, queries better/worse/tied with the exact sign
    test, exact McNemar when the metric is binary, per-stratum deltas, and the verdict.

    ``ci``: "percentile" (this module's vectorised bootstrap) or "bca" (scipy.stats.bootstrap,
    not available with stratified resampling, i.e. ``traffic``/``stratum`` weighting).
    Per-stratum intervals use at most 2,000 resamples each (percentile, within the stratum).
    The sign test and McNemar count queries, unweighted, among those with a positive weight.
    """
    if ci not in CI_METHODS:
        raise ValueError(f"ci must be one of {', '.join(CI_METHODS)}, not {ci!r}")
    if tie is not None and not tie > 0:
        raise ValueError(f"tie must be a positive minimum effect, not {tie!r}")
    diff = paired.diff
    w, strata, labels = query_weights(paired.qids, queries, weighting)
    resample_strata = strata if weighting in ("traffic", "stratum") else None
    clusters = None
    notes: list[str] = []
    if cluster_col is not None:
        if queries is None:
            raise ValueError("cluster_col: needs the queries file (--queries) that holds the cluster column")
        clusters = [queries[q].get(cluster_col) for q in paired.qids]
        missing = [q for q, c in zip(paired.qids, clusters) if c is None]
        if missing:
            raise ValueError(
                f"cluster_col {cluster_col!r}: {len(missing)} queries have no such field (first {missing[0]!r})"
            )
        clusters = np.array([json.dumps(c, sort_keys=True) for c in clusters])
        resample_strata = None
        if weighting != "unweighted":
            notes.append("clusters are resampled whole, across strata")
    active = w > 0
    if active.sum() < 2:
        raise ValueError(f"weighting {weighting!r}: fewer than 2 queries carry weight")
    if weighting == "traffic" and not active.all():
        notes.append(f"{int((~active).sum())} queries with weight 0 (hand-written) are out of the "
                     "traffic-weighted mean")
    mean_a = _weighted_mean(paired.a, w)
    mean_b = _weighted_mean(paired.b, w)
    delta = _weighted_mean(diff, w)
    if ci == "bca":
        if resample_strata is not None:
            raise ValueError(
                f"ci 'bca' cannot resample within strata (weighting {weighting!r}); use --ci percentile"
            )
        (low, high), reps = bca_interval(diff, w, clusters, resamples=resamples, seed=seed, level=level)
    else:
        reps = bootstrap_replicates(
            diff, weights=w, strata=resample_strata, clusters=clusters, resamples=resamples, seed=seed
        )
        low, high = interval(reps, level=level)
    sign = sign_test(diff[active])
    mc = mcnemar(paired.a[active], paired.b[active]) if paired.binary else None
    strata_out: list[StratumDelta] = []
    if strata is not None:
        total_w = w.sum()
        for s, label in enumerate(labels):
            sel = strata == s
            ws = w[sel]
            if ws.sum() == 0:
                strata_out.append(StratumDelta(label, int(sel.sum()), 0.0, float(paired.a[sel].mean()),
                                               float(paired.b[sel].mean()), float(diff[sel].mean()),
                                               math.nan, math.nan))
                continue
            if sel.sum() >= 2:
                r = bootstrap_replicates(diff[sel], weights=ws, resamples=min(resamples, 2000), seed=seed)
                lo_s, hi_s = interval(r, level=level)
            else:
                lo_s = hi_s = math.nan
            strata_out.append(StratumDelta(
                label, int(sel.sum()), float(ws.sum() / total_w), _weighted_mean(paired.a[sel], ws),
                _weighted_mean(paired.b[sel], ws), _weighted_mean(diff[sel], ws), lo_s, hi_s))
    v = verdict(low, high, tie=tie)
    if tie is not None and v.startswith("equivalent") and (low > 0 or high < 0):
        notes.append("the interval excludes 0, but the whole of it lies inside the declared tie")
    if tie is not None and v == VERDICT_B and low < tie:
        notes.append(f"B is better, but the interval reaches below the declared minimum effect {tie:g}")
    if tie is not None and v == VERDICT_A and high > -tie:
        notes.append(f"A is better, but the interval reaches below the declared minimum effect {tie:g}")
    if paired.no_results_a or paired.no_results_b:
        notes.append(
            f"queries with no results score 0 (as trec_eval -c): {len(paired.no_results_a)} in A, "
            f"{len(paired.no_results_b)} in B"
        )
    return Comparison(
        metric=paired.metric, name_a=paired.name_a, name_b=paired.name_b, n=len(paired),
        weighting=weighting, ci_method=ci, level=level, resamples=resamples, seed=seed,
        mean_a=mean_a, mean_b=mean_b, delta=delta, low=low, high=high,
        p_delta_le_0=float(np.mean(np.asarray(reps) <= 0)), sign=sign, mcnemar=mc, verdict=v, tie=tie,
        dropped=len(paired.dropped), drop_reasons=dict(paired.reasons),
        no_results_a=len(paired.no_results_a), no_results_b=len(paired.no_results_b),
        judged_a=paired.judged_a, judged_b=paired.judged_b, split=split, cluster_col=cluster_col,
        clusters=None if clusters is None else int(len(np.unique(clusters))), strata=strata_out,
        notes=notes, qids=list(paired.qids), diffs=diff, replicates=np.asarray(reps),
    )
