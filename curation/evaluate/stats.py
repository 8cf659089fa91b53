"""Paired statistics over queries: did system B really move the metric against system A?

One score per query per system (``curation.evaluate.metrics``), subtract per query, then average: the
delta of means is the mean of the per-query differences ``d_i = B_i - A_i``. Its uncertainty comes
from the query sample. The default interval is the t interval at every query count, with a variance
that follows the sampling design (certainty units add none; Hajek's without-replacement factor),
and P(delta <= 0) from the same t distribution; the bootstrap over queries (Rao-Wu rescaling under
a sampling design) gives the replicates shown and ``--ci percentile`` (Efron & Tibshirani, "An
Introduction to the Bootstrap", 1993; Rao & Wu, JASA 1988; Sakai, "Statistical reform in
information retrieval?", SIGIR Forum 2014; Smucker, Allan & Carterette, "A comparison of
statistical significance tests for information retrieval evaluation", CIKM 2007). The methods and
their references: docs/guide/statistics-methods.md.

Everything here works on numpy arrays; resampling is vectorised in blocks of replicates, with
``numpy.random.default_rng(seed)``, so one seed gives the same figures byte for byte. The BCa
interval and the exact binomial tests come from scipy (``scipy.stats.bootstrap``,
``scipy.stats.binomtest``).

Weighting (declared up front, printed with the result):

* ``unweighted``: every query counts once.
* ``traffic``: each query counts its ``weight`` from queries.jsonl (what it stands for in the
  search traffic, from ``golden sample queries``); hand-written queries have weight 0 and so stay out.
  Resampling is within strata, as the sample was drawn; queries taken with certainty stay fixed.
* ``stratum``: every stratum counts the same, whatever its query count (each query weighs
  ``1 / n_stratum``); resampling is within strata.

A weighted mean is ``sum(w_i d_i) / sum(w_i)``; in a replicate the same ratio is taken over the
resampled queries (or clusters, with ``cluster_col``: queries of one cluster, e.g. one user, are
resampled together, Field & Welsh, "Bootstrapping clustered data", JRSS B 2007).

This module owns the queries file as the statistics read it, the pairing of two arms, the weights,
the verdict and ``compare``. The resampling is in ``curation.evaluate.bootstrap``, the exact tests in
``curation.evaluate.exact_tests``, ``power`` in ``curation.evaluate.power``, ``noise`` and ``sweep`` in
``curation.evaluate.noise``, ``attribute`` in ``curation.evaluate.attribution``.

One module because the weighting design (:func:`design`), the interval choice and
the comparison they feed are one method: splitting them would scatter the estimator's rules.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
from scipy import stats as sps

from curation.evaluate.bootstrap import (
    bca_interval,
    bootstrap_replicates,
    interval,
    rescaled_replicates,
    t_variance,
)
from curation.evaluate.choices import CI_METHODS, FEW_QUERIES, UNITS, WEIGHTINGS
from curation.evaluate.exact_tests import McNemar, SignTest, mcnemar, sign_test
from curation.evaluate.metrics import MetricSpec, QueryScores
from curation.evaluate.prediction import Prediction, prediction_trouble, prediction_variance, uniform_weights
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
    "Design",
    "design",
    "parse_mix",
    "FEW_QUERIES",
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
        raise ValueError("split: the queries file has no 'split' field; run `golden export split` and export again")
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
                "use queries.jsonl from `golden sample queries` or choose --weighting unweighted"
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
VERDICT_UNTRUSTED = "no trustworthy interval: the traffic weights are too unequal"
MAX_DEFF = 3.0  # Kish's design effect of unequal weights above which no interval is trusted
MAX_TOTAL_GAP = 0.2  # the drawn weights may miss the known traffic they stand for by at most this share


def weight_trouble(weights: np.ndarray, free: np.ndarray, *, total: float | None, strata: np.ndarray | None = None,
                   fixed_weight: float = 0.0) -> str | None:
    """Why no interval of a traffic-weighted mean can be trusted, or None.

    Two signs of a draw whose weights are too unequal for any interval (a uniform draw of a
    Zipf-shaped log, where whether a head query was drawn decides the estimate): Kish's design
    effect of unequal weighting among the queries drawn at random, ``n_h sum(w^2) / (sum w)^2``
    within each stratum (Kish, *Survey Sampling*, 1965, sec. 11.7; within strata, because weights
    that differ between strata by design cost a stratified estimate nothing), averaged over the
    strata by their weight, above :data:`MAX_DEFF`; or, with a Horvitz-Thompson mean, the drawn
    weights summing to a share of the known traffic off by more than :data:`MAX_TOTAL_GAP` (under
    traffic sampling they sum to it exactly). Intervals on such draws cover the truth about half the
    time whatever their method (bench/bench_intervals.py).
    """
    st = np.zeros(len(weights), dtype=np.int64) if strata is None else np.asarray(strata)
    wf_all = weights[free]
    if len(wf_all) < 2 or wf_all.sum() <= 0:
        return None
    deff, mass, count = 0.0, 0.0, 0
    for s in np.unique(st[free]):
        wf = weights[free & (st == s)]
        if len(wf) >= 2 and wf.sum() > 0:
            deff += float(wf.sum()) * len(wf) * float(np.sum(wf**2)) / float(wf.sum()) ** 2
            mass += float(wf.sum())
            count += len(wf)
    deff = deff / mass if mass > 0 else 1.0
    if deff > MAX_DEFF:
        return (f"the weights of the queries drawn at random are so unequal within their strata that they "
                f"count as about {count / deff:.0f} of {count} (Kish's design effect {deff:.1f} > {MAX_DEFF:g})")
    if total is not None:
        ratio = (float(wf_all.sum()) + fixed_weight) / total
        if abs(ratio - 1) > MAX_TOTAL_GAP:
            return (f"the drawn queries' weights add up to {ratio:.0%} of the traffic they stand for "
                    "(a draw by traffic gives 100%)")
    return None


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
    """Everything ``golden stats compare`` reports (``as_dict`` for --json)."""

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
    ci_requested: str = "auto"  # what was asked; ci_method is what ran ("t" for auto)
    unit: str = "query"
    mix: dict[str, float] | None = None
    estimator: str = ""
    strata: list[StratumDelta] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    qids: list[str] = field(default_factory=list, repr=False)
    diffs: np.ndarray | None = field(default=None, repr=False)
    replicates: np.ndarray | None = field(default=None, repr=False)

    @property
    def interval_text(self) -> str:
        """How the interval was made, as the CLI and the HTML report say it."""
        level = f"{round(self.level * 100)}%"
        if self.ci_method == "t":
            return (f"{level} t interval (linearised, design-based variance); P(delta <= 0) and the verdict "
                    f"from the same t distribution; {self.resamples} bootstrap resamples (seed {self.seed}) for the "
                    "report's histogram")
        return f"{level} {self.ci_method} bootstrap, {self.resamples} resamples, seed {self.seed}"

    def as_dict(self, *, per_query: bool = True) -> dict:
        out = {k: v for k, v in asdict(self).items() if k not in ("qids", "diffs", "replicates")}
        out["interval"] = self.interval_text
        if per_query and self.diffs is not None:
            out["per_query"] = [{"qid": q, "delta": float(d)} for q, d in zip(self.qids, self.diffs)]
        return out


def _point_mass_p(delta: float) -> float:
    """P(delta <= 0) when the estimate has no spread: 1 or 0, and 1/2 at exactly 0 (the interval
    [0, 0] contains 0, and so must this, between the interval's tails)."""
    return 0.5 if delta == 0 else 1.0 if delta < 0 else 0.0


def _weighted_mean(x: np.ndarray, w: np.ndarray) -> float:
    return float(np.sum(w * x) / np.sum(w))


# ---------------------------------------------------------------------------------------------
# The design: how queries count in the mean (weighting, unit, mix) and what the mean divides by


@dataclass
class Design:
    """Per-query weights and the estimator they form.

    ``total`` is None for a ratio mean ``sum(w x) / sum(w)``; a number for a Horvitz-Thompson
    mean ``sum(w x) / total`` over the strata's KNOWN shares. ``shares[s]`` is stratum ``s``'s
    known share (HT) or the sum of its weights (ratio). ``resample_strata``: strata to resample
    within (None: resample all queries together).
    """

    weights: np.ndarray
    strata: np.ndarray | None
    labels: list[str]
    total: float | None
    shares: dict[int, float]
    resample_strata: np.ndarray | None
    estimator: str
    unit: str = "query"
    mix: dict[str, float] | None = None
    notes: list[str] = field(default_factory=list)
    certain: np.ndarray | None = None  # per query: taken with certainty (inclusion 1), no sampling variance
    inclusion: np.ndarray | None = None  # per query: its inclusion probability, when the rows state it
    prediction: Prediction | None = None  # a uniform draw's traffic-weighted mean: its prediction variance
    row_weights: np.ndarray | None = None  # with a prediction: the rows' own (non-negative) weights

    def mean(self, x: np.ndarray) -> float:
        if self.total is None:
            return _weighted_mean(x, self.weights)
        return float(np.sum(self.weights * x) / self.total)

    def contributions(self, x: np.ndarray) -> np.ndarray:
        """Each query's part of the estimate's deviation (Taylor linearisation), for the t interval."""
        if self.total is None:
            return self.weights * (x - self.mean(x)) / self.weights.sum()
        return self.weights * x / self.total


def parse_mix(text: str | Mapping[str, float] | None) -> dict[str, float] | None:
    """``"market=us=0.6,market=uk=0.4"`` or ``"us=0.6,uk=0.4"`` -> ``{"market=us": 0.6, ...}``
    (a stratum named by its label or by its values joined with ``/``; the share after the last
    ``=``). Shares must be positive and sum to 1."""
    if text is None:
        return None
    if isinstance(text, Mapping):
        mix = {str(k): float(v) for k, v in text.items()}
    else:
        mix = {}
        for part in str(text).replace(";", ",").split(","):
            if not part.strip():
                continue
            label, eq, share = part.rpartition("=")
            try:
                value = float(share)
            except ValueError:
                value = math.nan
            if not eq or not label.strip() or not math.isfinite(value):
                raise ValueError(f"mix: {part.strip()!r} is not STRATUM=SHARE (e.g. market=us=0.6,market=uk=0.4)")
            mix[label.strip()] = value
    if not mix:
        raise ValueError("mix: give at least one STRATUM=SHARE")
    bad = [k for k, v in mix.items() if not v > 0]
    if bad:
        raise ValueError(f"mix: the share of {bad[0]!r} must be positive")
    total = sum(mix.values())
    if abs(total - 1) > 1e-6:
        raise ValueError(f"mix: the shares sum to {total:g}, not 1")
    return mix


def _known_shares(qids, queries, strata, labels, unit) -> dict[int, tuple[float, int]] | None:
    """Per stratum: (known share, queries drawn) when every query's row states them, else None."""
    key = "stratum_share" if unit == "query" else "stratum_user_share"
    out: dict[int, tuple[float, int]] = {}
    drawn_count: dict[str, int] = {}
    for r in queries.values():
        lab = stratum_label(r.stratum)
        drawn_count[lab] = drawn_count.get(lab, 0) + 1
    for q, s in zip(qids, strata):
        r = queries[q]
        share = r.stratum_share if key == "stratum_share" else r.get(key)
        if share is None and r.stratum == {"source": "handwritten"}:
            share = 0.0  # hand-written queries stand for no traffic and no user
        if share is None:
            return None
        drawn = r.get("stratum_drawn")
        out[int(s)] = (float(share), int(drawn) if drawn else drawn_count[labels[s]])
    return out


def design(
    qids: Sequence[str],
    queries: Mapping[str, QueryRecord] | None,
    weighting: str,
    *,
    unit: str = "query",
    cluster_col: str | None = None,
    mix: str | Mapping[str, float] | None = None,
) -> Design:
    """How each query counts in the mean, and what the mean divides by.

    ``weighting``: ``unweighted`` (each query once), ``traffic`` (what the query stands for in the
    log: queries.jsonl's ``weight``, or ``user_weight`` with ``unit="user"``), ``stratum``
    (every stratum alike). ``unit="user"``: a user-weighted mean, every user counting once and
    their queries together: with ``traffic`` from the sample's ``user_weight`` (needs a user column
    at sampling), unweighted from ``cluster_col`` (each user's queries share one unit of weight).
    ``mix``: a target share per stratum (``parse_mix``), replacing the strata's own shares.

    With ``traffic`` and rows that state their stratum's known share (``golden sample queries`` writes
    ``stratum_share``, ``stratum_drawn``), the mean is Horvitz-Thompson: ``sum(w x) / sum of the
    strata's known shares``, each stratum's weights scaled by ``drawn / kept`` when some of its
    queries are not in the comparison; unbiased under both sampling designs. Otherwise it is the
    ratio ``sum(w x) / sum(w)``. A uniform draw (rows with ``stratum_traffic_sq``) instead gets the
    ratio estimator within strata, calibrated to their known traffic, whose interval is the ratio
    model's prediction variance (:mod:`curation.evaluate.prediction`).
    """
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {', '.join(UNITS)}, not {unit!r}")
    mix_shares = parse_mix(mix)
    if mix_shares is not None and queries is None:
        raise ValueError("mix: needs the queries file (--queries) that says each query's stratum")
    notes: list[str] = []
    w, strata, labels = query_weights(qids, queries, weighting)
    total = None
    estimator = {"unweighted": "mean over queries", "stratum": "equal weight per stratum",
                 "traffic": "ratio: sum(weight x value) / sum(weight)"}[weighting]
    if unit == "user":
        w, estimator = _user_weights(qids, queries, weighting, cluster_col, estimator)
    shares: dict[int, float] = {}
    if strata is not None:
        for s in range(len(labels)):
            shares[s] = float(w[strata == s].sum())
    if weighting == "traffic" and strata is not None:
        known = _known_shares(qids, queries, strata, labels, unit)
        if known is None:
            notes.append("the queries file does not state its strata's shares: the traffic-weighted mean is the "
                         "ratio sum(w x) / sum(w), biased when the sample was drawn uniformly (sample again)")
        else:
            w, shares, total, estimator = _horvitz_thompson(w, strata, labels, known, unit, notes)
    pred = None
    row_w = w
    if weighting == "traffic" and total is not None and unit == "query":
        w, pred, estimator = _uniform_calibrated(qids, queries, w, strata, total, estimator, notes)
    if mix_shares is not None:
        base = shares if total is not None else {s: float(w[strata == s].sum()) for s in range(len(labels))}
        target = _mix_targets(mix_shares, base, qids, queries, w, strata, labels)
        w, row_w = w.copy(), row_w.copy()
        for s in range(len(labels)):
            sel = strata == s
            g = target[s] / base[s] if s in target and base.get(s, 0) > 0 else 0.0
            w[sel], row_w[sel] = w[sel] * g, row_w[sel] * g
            if pred is not None and s in pred.parts:
                pred.parts[s].scale *= g * g
        shares = dict(target)
        total = 1.0 if total is not None else None
        estimator += "; strata re-weighted to the stated mix " + ", ".join(
            f"{name} {v:g}" for name, v in mix_shares.items())
    resample = strata if (weighting in ("traffic", "stratum") or mix_shares is not None) else None
    certain = pi = None
    if weighting == "traffic" and queries is not None:
        certain, pi = _inclusion(qids, queries, w)
    return Design(weights=w, strata=strata, labels=labels, total=total, shares=shares, resample_strata=resample,
                  estimator=estimator, unit=unit, mix=mix_shares, notes=notes, certain=certain, inclusion=pi,
                  prediction=pred, row_weights=None if pred is None else row_w)


def _uniform_calibrated(qids, queries, w: np.ndarray, strata: np.ndarray, total: float, estimator: str,
                        notes: list[str]) -> tuple[np.ndarray, Prediction | None, str]:
    """For a uniform draw (every weighted row states ``stratum_traffic_sq``, ``stratum_traffic``,
    ``stratum_share`` and ``inclusion``): the calibrated weights, the prediction facts and the
    estimator's description; else ``w``, None and ``estimator`` as given."""
    found = _uniform_facts(qids, queries, w, strata)
    if found is None:
        return w, None, estimator
    notes[:] = [n for n in notes if not n.startswith("the largest weight")]
    return found[0], found[1], (
        "uniform draw: the head's own part plus the tail predicted from the queries drawn by a regression on log "
        f"traffic, to its known traffic (within strata), over the strata's known share of searches ({total:.4g})")


def _uniform_facts(qids, queries, w: np.ndarray, strata: np.ndarray) -> tuple[np.ndarray, Prediction] | None:
    rows = [queries[q] for q in qids]
    weighted = [i for i, r in enumerate(rows) if w[i] > 0]
    if not weighted or any(rows[i].get("stratum_traffic_sq") is None or rows[i].get("stratum_traffic_log") is None
                           for i in weighted):
        return None
    facts: dict[int, tuple] = {}
    for i in weighted:
        r = rows[i]
        share, t_h, inclusion = r.stratum_share, r.get("stratum_traffic"), r.get("inclusion")
        if not share or not t_h or not isinstance(inclusion, (int, float)) or r.get("traffic") is None:
            return None
        facts.setdefault(int(strata[i]), (float(t_h) / float(share), float(t_h), float(r.get("stratum_traffic_sq")),
                                          float(r.get("stratum_traffic_log"))))
    active = w > 0
    traffic = np.array([float(r.get("traffic") or 0) if a else 0.0 for r, a in zip(rows, active)])
    certain = np.array([a and r.get("inclusion") >= 1 - 1e-9 for r, a in zip(rows, active)], dtype=bool)
    return uniform_weights(traffic, certain, np.where(active, strata, -1), facts)


def _user_weights(qids, queries, weighting: str, cluster_col: str | None, estimator: str) -> tuple[np.ndarray, str]:
    """The weights of a user-weighted mean (``unit="user"``) and its estimator's description: the
    sample's ``user_weight`` with ``traffic``, else each user's queries sharing one unit."""
    if weighting == "traffic":
        uw = [queries[q].get("user_weight") for q in qids]
        missing = [q for q, v in zip(qids, uw) if v is None and queries[q].stratum != {"source": "handwritten"}]
        if missing:
            raise ValueError(
                f"unit 'user': {len(missing)} queries have no user_weight (first {missing[0]!r}); "
                "sample with a user column (golden sample queries --user-col) or use --unit query"
            )
        return np.array([0.0 if v is None else float(v) for v in uw]), estimator
    if weighting == "unweighted":
        if cluster_col is None:
            raise ValueError("unit 'user' without traffic weights needs --cluster-col (the user column)")
        ids = [json.dumps(queries[q].get(cluster_col), sort_keys=True) for q in qids]
        size: dict[str, int] = {}
        for c in ids:
            size[c] = size.get(c, 0) + 1
        return (np.array([1.0 / size[c] for c in ids]),
                f"mean over users ({cluster_col}): each user's queries share one unit")
    raise ValueError("unit 'user' goes with --weighting traffic or unweighted, not stratum")


def _horvitz_thompson(w: np.ndarray, strata: np.ndarray, labels, known: dict, unit: str, notes: list[str]
                      ) -> tuple[np.ndarray, dict[int, float], float, str]:
    """The weights, strata shares, total and estimator of the Horvitz-Thompson mean from the strata's
    ``known`` ``(share, drawn)``: a stratum's weights scaled by ``drawn / kept`` when some of its
    queries are not compared. Notes very unequal weights."""
    kept = np.bincount(strata, minlength=len(labels))
    w = w.copy()
    for s, (share, drawn) in known.items():
        if share > 0 and kept[s] < drawn:
            w[strata == s] *= drawn / kept[s]
    shares = {s: share for s, (share, _) in known.items() if share > 0}
    total = sum(shares.values())
    positive = w[w > 0]
    if len(positive) and positive.max() > 20 * np.median(positive):
        notes.append(
            f"the largest weight is {positive.max() / np.median(positive):.0f} times the median (queries "
            "drawn alike but with very unequal traffic): the traffic-weighted mean is unbiased but noisy; "
            "a sample drawn by traffic (the default of golden sample queries) estimates it far more precisely")
    who = "searches" if unit == "query" else "users"
    return w, shares, total, f"Horvitz-Thompson: sum(weight x value) / the strata's known share of {who} ({total:.4g})"


def _mix_targets(mix_shares: Mapping[str, float], base: dict[int, float], qids, queries, w: np.ndarray,
                 strata: np.ndarray, labels) -> dict[int, float]:
    """Each compared stratum's share under the stated ``mix``: a mix key's share goes to the strata it
    names in proportion to their ``base`` shares. ValueError for a key naming no stratum, a stratum
    named by none or by two."""
    stratum_of = {int(s): queries[q].stratum for q, s in zip(qids, strata)}
    present = sorted({int(s) for s in np.unique(strata[w > 0])})

    def matches(name: str, s: int) -> bool:
        """A mix key names a stratum (its label, or its values joined by /) or a group of
        strata by some of their dimensions (``surface=web`` covers every surface=web stratum)."""
        st = stratum_of.get(s)
        if name == labels[s] or (isinstance(st, dict) and name == "/".join(str(v) for v in st.values())):
            return True
        if not isinstance(st, dict):
            return False
        parts = [p.strip().partition("=") for p in name.split(",")]
        return all(eq and str(st.get(k.strip())) == v.strip() for k, eq, v in parts)

    members = {name: [s for s in present if matches(name, s)] for name in mix_shares}
    for name, ms in members.items():
        if not ms:
            raise ValueError(f"mix: no stratum {name!r} among the compared queries; strata: "
                             f"{', '.join(labels[s] for s in present)}")
    target: dict[int, float] = {}
    for s in present:
        keys = [name for name, ms in members.items() if s in ms]
        if not keys:
            raise ValueError(f"mix: give a share for every stratum; missing {labels[s]}")
        if len(keys) > 1:
            raise ValueError(f"mix: stratum {labels[s]} is named by {keys[0]!r} and {keys[1]!r}")
    for name, ms in members.items():
        # a group's share goes to its strata in proportion to their own shares
        group = sum(base.get(s, 0.0) for s in ms)
        for s in ms:
            target[s] = mix_shares[name] * (base.get(s, 0.0) / group if group > 0 else 1 / len(ms))
    return target


def _inclusion(qids, queries, w: np.ndarray) -> tuple[np.ndarray | None, np.ndarray | None]:
    """From queries.jsonl's ``inclusion``: which queries were taken with certainty, and every
    query's inclusion probability when each weighted query states one (else None)."""
    certain = pi = None
    inclusion = [queries[q].get("inclusion") for q in qids]
    if any(isinstance(x, (int, float)) for x in inclusion):
        certain = np.array([isinstance(x, (int, float)) and x >= 1 - 1e-9 for x in inclusion])
        if all(isinstance(x, (int, float)) and 0 < x <= 1 for x, wi in zip(inclusion, w) if wi > 0):
            pi = np.array([float(x) if isinstance(x, (int, float)) and 0 < x <= 1 else 0.0 for x in inclusion])
    return certain, pi


def compare(
    paired: Paired,
    *,
    queries: Mapping[str, QueryRecord] | None = None,
    weighting: str = "unweighted",
    cluster_col: str | None = None,
    resamples: int = 10_000,
    seed: int = 0,
    ci: str = "auto",
    level: float = 0.95,
    tie: float | None = None,
    split: str | None = None,
    unit: str = "query",
    mix: str | Mapping[str, float] | None = None,
) -> Comparison:
    """Compare two paired arms: delta of (weighted) means ``B - A``, its interval,
    P(delta <= 0) over the bootstrap distribution, queries better/worse/tied with the exact sign
    test, exact McNemar when the metric is binary, per-stratum deltas, and the verdict.

    The weights and the estimator come from :func:`design` (``weighting``, ``unit``, ``mix``).
    ``ci``: "auto" (the default, from 2 queries up: the t interval of
    :func:`curation.evaluate.bootstrap.t_interval` over the design's linearised contributions, the
    paired t interval for an unweighted mean; P(delta <= 0) is ``F_t(-delta / se)`` of the same t
    distribution, so the interval excludes 0 exactly when P(delta <= 0) is outside
    ``[(1 - level) / 2, (1 + level) / 2]``), "t" (the same), "percentile" (the bootstrap's
    percentile interval, P(delta <= 0) from the same replicates) or "bca" (scipy.stats.bootstrap,
    not available with stratified resampling).

    The variance follows the sampling design: with traffic weighting, queries taken with certainty
    (``inclusion`` 1 in queries.jsonl) add none, and the others vary within their strata (the
    with-replacement variance; the bootstrap replicates, for the histogram and ``--ci percentile``,
    come from the Rao-Wu rescaling bootstrap, :func:`curation.evaluate.bootstrap.rescaled_replicates`).
    Per-stratum intervals follow the same rule (a t interval on the stratum's own contributions).
    The sign test and McNemar count queries, unweighted, among those with a positive weight.
    """
    if ci not in CI_METHODS:
        raise ValueError(f"ci must be one of {', '.join(CI_METHODS)}, not {ci!r}")
    if tie is not None and not tie > 0:
        raise ValueError(f"tie must be a positive minimum effect, not {tie!r}")
    diff = paired.diff
    des = design(paired.qids, queries, weighting, unit=unit, cluster_col=cluster_col, mix=mix)
    w, strata = des.weights, des.strata
    notes: list[str] = list(des.notes)
    clusters = _cluster_ids(paired.qids, queries, cluster_col)
    resample_strata = des.resample_strata if clusters is None else None
    active = _active_noted(des, clusters, weighting, mix, notes)
    total = des.total if clusters is None else None
    mean_a = des.mean(paired.a)
    mean_b = des.mean(paired.b)
    delta = des.mean(diff)
    method = "t" if ci == "auto" else ci
    certain = des.certain if (des.certain is not None and clusters is None) else np.zeros(len(diff), dtype=bool)
    free = active & ~certain
    _sampling_notes(certain, active, clusters, method, notes, des.prediction is not None and clusters is None)
    low, high, p_le_0, reps = _delta_interval(
        des, diff, delta, method=method, clusters=clusters, resample_strata=resample_strata, certain=certain,
        active=active, total=total, weighting=weighting, resamples=resamples, seed=seed, level=level, notes=notes)
    trouble = None
    if weighting == "traffic" and clusters is None and des.prediction is not None:
        trouble = prediction_trouble(des.prediction, des.shares)
    elif weighting == "traffic" and clusters is None and mix is None:
        trouble = weight_trouble(w, free, total=total, strata=strata,
                                 fixed_weight=float(w[active & certain].sum()))
    sign = sign_test(diff[active])
    mc = mcnemar(paired.a[active], paired.b[active]) if paired.binary else None
    strata_out = _strata_deltas(paired, des, free, clusters, level)
    v = _verdict_noted(low, high, tie, trouble, paired, notes)
    return Comparison(
        metric=paired.metric, name_a=paired.name_a, name_b=paired.name_b, n=len(paired),
        weighting=weighting, ci_method=method, level=level, resamples=resamples, seed=seed,
        mean_a=mean_a, mean_b=mean_b, delta=delta, low=low, high=high,
        p_delta_le_0=p_le_0, sign=sign, mcnemar=mc, verdict=v, tie=tie,
        dropped=len(paired.dropped), drop_reasons=dict(paired.reasons),
        no_results_a=len(paired.no_results_a), no_results_b=len(paired.no_results_b),
        judged_a=paired.judged_a, judged_b=paired.judged_b, split=split, cluster_col=cluster_col,
        clusters=None if clusters is None else int(len(np.unique(clusters))), strata=strata_out,
        notes=notes, qids=list(paired.qids), diffs=diff, replicates=np.asarray(reps),
        ci_requested=ci, unit=unit, mix=des.mix, estimator=des.estimator,
    )


def _cluster_ids(qids, queries, cluster_col: str | None) -> np.ndarray | None:
    """Each query's cluster (its ``cluster_col`` value, as JSON), or None without ``cluster_col``."""
    if cluster_col is None:
        return None
    if queries is None:
        raise ValueError("cluster_col: needs the queries file (--queries) that holds the cluster column")
    clusters = [queries[q].get(cluster_col) for q in qids]
    missing = [q for q, c in zip(qids, clusters) if c is None]
    if missing:
        raise ValueError(
            f"cluster_col {cluster_col!r}: {len(missing)} queries have no such field (first {missing[0]!r})"
        )
    return np.array([json.dumps(c, sort_keys=True) for c in clusters])


def _active_noted(des: Design, clusters, weighting: str, mix, notes: list[str]) -> np.ndarray:
    """The queries with a positive weight (at least 2, else ValueError), noting those left out and
    what clusters change in the design."""
    if clusters is not None and (weighting != "unweighted" or mix is not None):
        notes.append("clusters are resampled whole, across strata")
    active = (des.weights if des.row_weights is None else des.row_weights) > 0
    if active.sum() < 2:
        raise ValueError(f"weighting {weighting!r}: fewer than 2 queries carry weight")
    if weighting == "traffic" and not active.all():
        notes.append(f"{int((~active).sum())} queries with weight 0 (hand-written) are out of the "
                     "traffic-weighted mean")
    if des.total is not None and clusters is not None:
        notes.append("with clusters the Horvitz-Thompson total is not fixed per replicate: the interval "
                     "divides by the weights drawn")
    return active


def _sampling_notes(certain: np.ndarray, active: np.ndarray, clusters, method: str, notes: list[str],
                    predicted: bool = False) -> None:
    """Notes on queries taken with certainty and on too few queries (or clusters) for the interval."""
    units = int(len(np.unique(clusters[active]))) if clusters is not None else int(active.sum())
    if certain[active].any():
        rest = ("the tail not drawn is predicted from the others (a line in log traffic), and the histogram shows the "
                "interval's t distribution" if predicted else "the interval resamples only the others (Rao-Wu)")
        notes.append(f"{int(certain[active].sum())} queries were taken with certainty (inclusion probability 1): "
                     f"they add no sampling variance; {rest}")
    if units < FEW_QUERIES:
        what = "clusters" if clusters is not None else "queries"
        notes.append(f"only {units} {what}: estimates from so few are rough")
        if method == "percentile":
            notes.append(f"the percentile bootstrap covers less often than it says below {FEW_QUERIES} "
                         "(about 93% for a nominal 95% at 20 queries): --ci auto gives a t interval")


def _delta_interval(des: Design, diff: np.ndarray, delta: float, *, method: str, clusters, resample_strata,
                    certain: np.ndarray, active: np.ndarray, total, weighting: str, resamples: int, seed: int,
                    level: float, notes: list[str]) -> tuple[float, float, float, np.ndarray]:
    """The interval of ``delta`` by ``method``, P(delta <= 0) and the bootstrap replicates (for the
    histogram): BCa, or the replicates of the design (Rao-Wu) or of the plain bootstrap."""
    w = des.weights
    design_based = clusters is None and (resample_strata is not None or certain.any())
    if method == "bca":
        if resample_strata is not None:
            raise ValueError(
                f"ci 'bca' cannot resample within strata (weighting {weighting!r}); use --ci percentile"
            )
        (low, high), reps = bca_interval(diff, w, clusters, resamples=resamples, seed=seed, level=level)
        notes.append("with --ci bca, P(delta <= 0) is the share of bootstrap replicates at or below 0, which "
                     "the BCa interval's bias correction can disagree with near its ends; --ci auto (t) or "
                     "percentile keep the two the same")
    elif des.prediction is not None and clusters is None:
        reps = _t_replicates(des, diff, delta, resamples, seed)
    elif design_based:
        reps = rescaled_replicates(diff, weights=w, strata=resample_strata, fixed=certain, resamples=resamples,
                                   seed=seed, total=total)
    else:
        reps = bootstrap_replicates(
            diff, weights=w, strata=resample_strata, clusters=clusters, resamples=resamples, seed=seed,
            total=total,
        )
    if method == "t":
        low, high, p_le_0 = _t_delta(des, diff, delta, active & ~certain, active, clusters, resample_strata, level,
                                     notes)
    else:
        if method == "percentile":
            low, high = interval(reps, level=level)
        p_le_0 = float(np.mean(np.asarray(reps) <= 0))
    return low, high, p_le_0, reps


def _t_replicates(des: Design, diff: np.ndarray, delta: float, resamples: int, seed: int) -> np.ndarray:
    """Replicates of a uniform draw's estimate: draws from the t distribution of its prediction
    variance (its weights may be negative, which no bootstrap of weights reproduces)."""
    parts, dfs = prediction_variance(diff, des.prediction)
    df = sum(dfs.values())
    if df < 1:
        return np.full(resamples, math.nan)
    se = math.sqrt(sum(parts.values())) / des.total
    return delta + se * np.random.default_rng(seed).standard_t(df, resamples)


def _t_delta(des: Design, diff: np.ndarray, delta: float, free: np.ndarray, active: np.ndarray, clusters,
             resample_strata, level: float, notes: list[str]) -> tuple[float, float, float]:
    """The t interval of ``delta`` over the design's linearised contributions, and P(delta <= 0)
    from the same t distribution."""
    z = des.contributions(diff)[free]
    t_strata = None if resample_strata is None else resample_strata[free]
    if clusters is not None:
        _, cl = np.unique(clusters[active], return_inverse=True)
        z, t_strata = np.bincount(cl, weights=des.contributions(diff)[active]), None
    if des.prediction is not None and clusters is None:
        parts, dfs = prediction_variance(diff, des.prediction)
        var, df = sum(parts.values()) / des.total**2, sum(dfs.values())
    else:
        fpc = None if (des.inclusion is None or clusters is not None) else 1.0 - des.inclusion[free]
        var, df = t_variance(z, strata=t_strata, fpc=fpc)
    if not free.any():
        notes.append("every query was taken with certainty: the estimate has no sampling variance")
        return delta, delta, _point_mass_p(delta)
    if df < 1:
        notes.append("no stratum has two queries drawn at random: there is no interval")
        return math.nan, math.nan, math.nan
    se = math.sqrt(var)
    crit = float(sps.t.ppf(0.5 + level / 2, df))
    p_le_0 = float(sps.t.cdf(-delta / se, df)) if se > 0 else _point_mass_p(delta)
    return delta - crit * se, delta + crit * se, p_le_0


def _strata_deltas(paired: Paired, des: Design, free: np.ndarray, clusters, level: float) -> list[StratumDelta]:
    """Each stratum's means and delta, with a t interval by the same rule as the overall one."""
    strata_out: list[StratumDelta] = []
    if des.strata is None:
        return strata_out
    w, strata, diff = des.weights, des.strata, paired.diff
    total_w = sum(des.shares.values()) if des.total is not None else w.sum()
    pred_var = pred_df = None
    if des.prediction is not None and clusters is None:
        pred_var, pred_df = prediction_variance(diff, des.prediction)
    for s, label in enumerate(des.labels):
        sel = strata == s
        ws = w[sel]
        if ws.sum() == 0:
            strata_out.append(StratumDelta(label, int(sel.sum()), 0.0, float(paired.a[sel].mean()),
                                           float(paired.b[sel].mean()), float(diff[sel].mean()),
                                           math.nan, math.nan))
            continue
        known = des.shares.get(s) if des.total is not None else None

        def smean(x, ws=ws, known=known):
            return float(np.sum(ws * x) / known) if known else _weighted_mean(x, ws)

        # the same rule as the overall interval: a t interval on the stratum's linearised
        # contributions, its certainty units adding no variance (Hajek's factor when known)
        ds = diff[sel]
        est_s = smean(ds)
        z_s = ws * ds / known if known else ws * (ds - est_s) / ws.sum()
        free_s = free[sel] if clusters is None else np.ones(int(sel.sum()), dtype=bool)
        fpc_s = None if (des.inclusion is None or clusters is not None) else 1.0 - des.inclusion[sel][free_s]
        if not free_s.any():
            lo_s = hi_s = est_s
        else:
            var_s, df_s = t_variance(z_s[free_s], fpc=fpc_s)
            if pred_var is not None and known:
                var_s, df_s = pred_var.get(s, 0.0) / known**2, pred_df.get(s, 0)
            if df_s < 1:
                lo_s = hi_s = math.nan
            else:
                half_s = float(sps.t.ppf(0.5 + level / 2, df_s)) * math.sqrt(var_s)
                lo_s, hi_s = est_s - half_s, est_s + half_s
        share = (known if known else ws.sum()) / total_w
        strata_out.append(StratumDelta(
            label, int(sel.sum()), float(share), smean(paired.a[sel]), smean(paired.b[sel]), smean(diff[sel]),
            lo_s, hi_s))
    return strata_out


def _verdict_noted(low: float, high: float, tie: float | None, trouble: str | None, paired: Paired,
                   notes: list[str]) -> str:
    """The verdict of the interval (untrusted when the weights are), with the notes that qualify it."""
    v = verdict(low, high, tie=tie)
    if trouble is not None:
        v = VERDICT_UNTRUSTED
        notes.append(f"no trustworthy interval: {trouble}; the interval shown would cover the truth far less "
                     "often than it says. Sample by traffic (the default of golden sample queries) to estimate a "
                     "traffic-weighted mean, or compare --weighting unweighted")
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
    return v
