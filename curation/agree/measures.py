"""Inter-annotator agreement on double-judged pairs: can these judgments be trusted?

Plain functions on plain data. The input is a list of :class:`Judgment` records
(``qid, docid, judge, grade, answered_at, shown_at``); each judge's LATEST record for a pair counts
(judgments are append-only) and skipped records (``grade=None``) are ignored.

What is computed, for each pair of judges and for all judges together:

- ``pairs``: the pairs (query, document) labelled by both judges (by at least two, for all judges);
- ``agreement``: percent agreement, the share of those pairs on which the judges gave the same grade
  (for all judges together: on which every judge who labelled the pair gave the same grade);
- ``kappa``, ``kappa_linear``, ``kappa_quadratic``: Cohen's kappa, unweighted and with linear and
  quadratic weights (graded scales only), computed by scikit-learn's
  :func:`sklearn.metrics.cohen_kappa_score` with ``labels`` = the scale's grades, so the weights are
  grade distances (Cohen 1960; Cohen 1968 for the weighted form). Pairwise only;
- ``alpha_nominal``, ``alpha_ordinal``: Krippendorff's alpha, any number of judges, missing labels
  allowed, computed by the ``krippendorff`` package (Krippendorff 2011, "Computing Krippendorff's
  alpha-reliability"); ordinal on graded scales only;
- a bootstrap interval (95 % by default) for each figure that resamples QUERIES with replacement,
  not pairs, because the pairs of one query are not independent (a cluster bootstrap; Efron &
  Tibshirani 1993, ch. 13 percentile interval). It is seeded and reproducible.

The same figures are also given after collapsing the scale to binary at a cut (``grade >= cut`` is
relevant, as ``trec_eval -l cut``), and a :class:`Verdict` reads the percent agreement against
configurable thresholds. Alongside: the confusion matrix of each pair of judges, each judge's label
distribution, agreement per stratum and over time (rolling, in judging order, to show drift), and
each judge's median seconds per judgment and share of decisions under 2 seconds.

Bootstrap replicates are computed from per-query confusion (pairwise) or coincidence (all judges)
matrices summed with the resampled multiplicities: the same formulas as scikit-learn and
``krippendorff`` use, vectorised, so a thousand replicates take milliseconds. The tests check
replicates against the two libraries on the resampled data.

A figure that the data cannot define (no shared pairs; every label the same grade) is an
:class:`Estimate` with ``value=None`` and the reason in ``undefined``: never NaN, never an exception.
"""

from __future__ import annotations

import statistics
import warnings
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from itertools import combinations
from typing import Iterable, Mapping, NamedTuple, Sequence

import krippendorff
import numpy as np
from sklearn.metrics import cohen_kappa_score

__all__ = [
    "Judgment",
    "Estimate",
    "Comparison",
    "Thresholds",
    "Verdict",
    "StratumAgreement",
    "DriftPoint",
    "Timing",
    "Report",
    "MEASURES",
    "latest_labels",
    "cohen_kappa",
    "krippendorff_alpha",
    "compare_pair",
    "compare_all",
    "verdict",
    "label_distributions",
    "per_stratum",
    "drift",
    "judge_timing",
    "agreement_report",
]


# --------------------------------------------------------------------------------------- records


class Judgment(NamedTuple):
    """One label given by one judge to one (qid, docid) pair. ``grade=None`` is a skip (ignored).

    ``answered_at`` and ``shown_at`` are datetimes (naive ones read as UTC) or numbers of seconds;
    they order the labels (the latest of a judge for a pair counts), draw the drift curve and time
    the judges. A NamedTuple: a project's hundreds of thousands of judgments load quickly.
    """

    qid: str
    docid: str
    judge: str
    grade: int | None
    answered_at: datetime | float | None = None
    shown_at: datetime | float | None = None


@dataclass(frozen=True)
class Estimate:
    """A figure with its bootstrap interval.

    ``value`` is None when the data cannot define the figure, and ``undefined`` says why.
    ``low``/``high`` are None when no interval could be computed, and ``interval_note`` says why.
    ``note`` flags a defined value that means less than it seems (e.g. a judge who gave one grade
    everywhere makes kappa 0 whatever the other judge does).
    """

    value: float | None
    low: float | None = None
    high: float | None = None
    undefined: str | None = None
    note: str | None = None
    interval_note: str | None = None

    @property
    def defined(self) -> bool:
        return self.value is not None

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Measure:
    """An entry of the agreement-measure registry."""

    name: str
    title: str
    pairwise_only: bool  # Cohen's kappa needs exactly two judges
    graded_only: bool  # the same as another measure on a two-grade scale
    reference: str


MEASURES: dict[str, Measure] = {
    m.name: m
    for m in (
        Measure("agreement", "Percent agreement", False, False, "share of pairs with the same grade"),
        Measure("kappa", "Cohen's kappa", True, False, "Cohen 1960; sklearn cohen_kappa_score"),
        Measure("kappa_linear", "Cohen's kappa, linear weights", True, True, "Cohen 1968; sklearn weights='linear'"),
        Measure(
            "kappa_quadratic", "Cohen's kappa, quadratic weights", True, True, "Cohen 1968; sklearn weights='quadratic'"
        ),
        Measure("alpha_nominal", "Krippendorff's alpha, nominal", False, False, "Krippendorff 2011; krippendorff.alpha"),
        Measure("alpha_ordinal", "Krippendorff's alpha, ordinal", False, True, "Krippendorff 2011; krippendorff.alpha"),
    )
}


@dataclass(frozen=True)
class Comparison:
    """Agreement of two judges (``len(judges) == 2``) or of all judges together."""

    judges: tuple[str, ...]
    pairs: int  # pairs labelled by both judges (by at least two judges, for all judges)
    queries: int  # queries those pairs belong to (the bootstrap resamples these)
    measures: dict[str, Estimate]
    binary: dict[str, Estimate]  # the same after collapsing to binary at ``cut``
    confusion: list[list[int]] | None = None  # rows: judges[0]'s grade, columns: judges[1]'s (pairwise only)
    binary_confusion: list[list[int]] | None = None

    def to_dict(self) -> dict:
        return {
            "judges": list(self.judges),
            "pairs": self.pairs,
            "queries": self.queries,
            "measures": {k: v.to_dict() for k, v in self.measures.items()},
            "binary": {k: v.to_dict() for k, v in self.binary.items()},
            "confusion": self.confusion,
            "binary_confusion": self.binary_confusion,
        }


@dataclass(frozen=True)
class Thresholds:
    """Verdict bands on percent agreement: ``>= usable`` usable for a paired comparison,
    ``[marginal, usable)`` marginal, ``< marginal`` the definition of relevance is not usable
    (more queries will not fix it). Fewer than ``min_pairs`` shared pairs: too early to say.
    A usable or marginal percent agreement with Krippendorff's alpha under ``chance_alpha`` gets a
    caveat: the agreement is then mostly the prevalence of one grade, not shared judgment."""

    usable: float = 0.70
    marginal: float = 0.60
    min_pairs: int = 30
    chance_alpha: float = 0.20  # below this Krippendorff's alpha, a high percent agreement gets a caveat

    def __post_init__(self):
        if not -1.0 <= self.chance_alpha <= 1.0:
            raise ValueError(f"thresholds: chance_alpha must be in [-1, 1], got {self.chance_alpha}")
        if not 0.0 <= self.marginal <= self.usable <= 1.0:
            raise ValueError(
                f"thresholds: need 0 <= marginal <= usable <= 1, got marginal={self.marginal}, usable={self.usable}"
            )
        if self.min_pairs < 1:
            raise ValueError(f"thresholds: min_pairs must be at least 1, got {self.min_pairs}")


@dataclass(frozen=True)
class Verdict:
    band: str  # "usable", "marginal", "not usable", "too few pairs", "undefined"
    message: str
    value: float | None  # the percent agreement read
    on: str  # which agreement was read, e.g. "binary (grade >= 1 relevant)"
    pairs: int
    thresholds: Thresholds
    caveat: str | None = None  # e.g. a high percent agreement that chance explains

    def to_dict(self) -> dict:
        d = asdict(self)
        d["thresholds"] = asdict(self.thresholds)
        return d


@dataclass(frozen=True)
class StratumAgreement:
    stratum: str
    pairs: int
    queries: int
    agreement: Estimate
    alpha_nominal: Estimate
    binary_agreement: Estimate

    def to_dict(self) -> dict:
        return {
            "stratum": self.stratum,
            "pairs": self.pairs,
            "queries": self.queries,
            "agreement": self.agreement.to_dict(),
            "alpha_nominal": self.alpha_nominal.to_dict(),
            "binary_agreement": self.binary_agreement.to_dict(),
        }


@dataclass(frozen=True)
class DriftPoint:
    """Agreement over the ``window`` pairs completed last, after ``index`` pairs were completed
    (a pair is completed when its second judge answers)."""

    index: int
    window: int
    agreement: float
    cumulative: float
    at: str | None = None  # ISO time of the index-th completion, when known


@dataclass(frozen=True)
class Timing:
    judge: str
    judgments: int  # decisions with both a shown and an answered time
    median_seconds: float | None
    share_under_2s: float | None


@dataclass
class Report:
    """Everything a lead reads before trusting the judgments; ``to_dict()`` is the JSON form."""

    scale: list[int]
    cut: int
    judges: list[str]
    pairwise: list[Comparison]
    overall: Comparison
    verdict: Verdict
    distributions: dict[str, dict[int, int]]
    strata: list[StratumAgreement]
    drift: list[DriftPoint]
    timing: list[Timing]
    resamples: int
    seed: int
    confidence: float
    notes: list[str] = field(default_factory=list)

    @property
    def graded(self) -> bool:
        return len(self.scale) > 2

    def to_dict(self) -> dict:
        return {
            "scale": self.scale,
            "graded": self.graded,
            "cut": self.cut,
            "judges": self.judges,
            "verdict": self.verdict.to_dict(),
            "overall": self.overall.to_dict(),
            "pairwise": [c.to_dict() for c in self.pairwise],
            "distributions": {j: {str(g): n for g, n in d.items()} for j, d in self.distributions.items()},
            "strata": [s.to_dict() for s in self.strata],
            "drift": [asdict(p) for p in self.drift],
            "timing": [asdict(t) for t in self.timing],
            "bootstrap": {"resamples": self.resamples, "seed": self.seed, "confidence": self.confidence,
                          "unit": "query"},
            "notes": self.notes,
        }


# ------------------------------------------------------------------------------------ small helpers


def _seconds(t) -> float | None:
    if t is None or type(t) is float:
        return t
    if isinstance(t, datetime):
        return (t if t.tzinfo else t.replace(tzinfo=timezone.utc)).timestamp()  # naive = UTC
    return float(t)


def _in_seconds(judgments: Iterable[Judgment], memo: dict | None = None) -> list[Judgment]:
    """The records with both times as float seconds, converted once for everything downstream
    (``memo``, by record identity, shares the work between two lists holding the same records)."""
    out = []
    cache: dict = {}
    memo = {} if memo is None else memo
    for j in judgments:
        done = memo.get(id(j))
        if done is not None:
            out.append(done)
            continue
        a, s = j.answered_at, j.shown_at
        if (a is None or type(a) is float) and (s is None or type(s) is float):
            new = j
        else:
            if a is not None and type(a) is not float:
                a = cache[a] if a in cache else cache.setdefault(a, _seconds(a))
            if s is not None and type(s) is not float:
                s = cache[s] if s in cache else cache.setdefault(s, _seconds(s))
            new = Judgment(j.qid, j.docid, j.judge, j.grade, a, s)
        memo[id(j)] = new
        out.append(new)
    return out


def _iso(t) -> str | None:
    if t is None:
        return None
    if isinstance(t, datetime):
        return t.isoformat(timespec="seconds")
    if isinstance(t, float) and t > 1e8:  # seconds since the epoch
        return datetime.fromtimestamp(t, timezone.utc).isoformat(timespec="seconds")
    return str(t)


def latest_labels(judgments: Iterable[Judgment]) -> dict[tuple[str, str], dict[str, Judgment]]:
    """``{(qid, docid): {judge: latest Judgment}}``, skips ignored.

    The latest is the one with the greatest ``answered_at``; records without a time, or with equal
    times, count in input order (a later record wins). A skip after a label does not erase the
    label: a skip is "no decision", not a decision.
    """
    best: dict[tuple[str, str], dict[str, Judgment]] = {}
    when: dict[tuple[str, str, str], float] = {}
    minus_inf = float("-inf")
    for j in judgments:
        if j.grade is None:
            continue
        t = _seconds(j.answered_at)
        if t is None:
            t = minus_inf
        unit = (j.qid, j.docid)
        d = best.get(unit)
        if d is None:
            best[unit] = d = {}
        key = (j.qid, j.docid, j.judge)
        if j.judge not in d or t >= when[key]:  # equal times: the later record wins
            d[j.judge] = j
            when[key] = t
    return best


def _check_scale(scale: Sequence[int] | None, grades: Iterable[int], cut: int) -> list[int]:
    """The scale given, or every integer from the lowest to the highest grade seen, widened so
    that ``cut`` splits it."""
    grades = {int(g) for g in grades}
    if scale is None:
        lo = min(grades | {int(cut) - 1})
        hi = max(grades | {int(cut)})
        return list(range(lo, hi + 1))
    scale = sorted({int(g) for g in scale})
    if len(scale) < 2:
        raise ValueError(f"scale: needs at least two grades, got {scale}")
    outside = sorted(grades - set(scale))
    if outside:
        raise ValueError(f"judgments: grades {outside} are not on the scale {scale}")
    return scale


def default_cut(scale: Sequence[int]) -> int:
    """The cut when none is given: grade 1 when it splits the scale (TREC's ``grade >= 1`` is relevant:
    0-1, 0-2, 0-3), else the scale's second grade (a scale without 0, e.g. 1-3: its lowest grade is the
    "not relevant" one)."""
    scale = sorted(scale)
    return 1 if scale[0] < 1 <= scale[-1] else scale[1]


def _check_cut(cut: int, scale: list[int]) -> int:
    cut = int(cut)
    if not (scale[0] < cut <= scale[-1]):
        raise ValueError(
            f"cut: {cut} would put every grade of the scale {scale} on one side; "
            f"choose a grade in {scale[1:]} (grade >= cut counts as relevant)"
        )
    return cut


def _percentile_interval(reps: np.ndarray, confidence: float, resamples: int) -> tuple:
    """(low, high, note) from replicate values, NaN meaning an undefined replicate."""
    ok = reps[~np.isnan(reps)]
    if ok.size == 0:
        return None, None, "undefined in every resample"
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(ok, [tail, 1.0 - tail])
    note = None
    if ok.size < reps.size:
        note = f"{reps.size - ok.size} of {resamples} resamples undefined and left out"
    return float(low), float(high), note


def _resample_counts(n_queries: int, resamples: int, seed: int) -> np.ndarray:
    """(resamples, n_queries) multiplicities of each query when drawing n_queries queries with
    replacement; numpy's PCG64 seeded with ``seed`` (the same seed gives the same intervals)."""
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n_queries, size=(resamples, n_queries))
    counts = np.zeros((resamples, n_queries), dtype=np.float64)
    np.add.at(counts, (np.repeat(np.arange(resamples), n_queries), draws.ravel()), 1.0)
    return counts


def _kappa_weights(k: int, weights: str | None) -> np.ndarray:
    idx = np.arange(k, dtype=np.float64)
    diff = idx[:, None] - idx[None, :]
    if weights is None:
        return (diff != 0).astype(np.float64)
    if weights == "linear":
        return np.abs(diff)
    if weights == "quadratic":
        return diff**2
    raise ValueError(f"weights: expected None, 'linear' or 'quadratic', got {weights!r}")


def _kappa_from_confusion(conf: np.ndarray, weights: str | None) -> np.ndarray:
    """Cohen's kappa of a batch of confusion matrices (..., K, K); NaN where undefined. The formula
    of sklearn's cohen_kappa_score: 1 - sum(w * observed) / sum(w * expected)."""
    conf = np.asarray(conf, dtype=np.float64)
    w = _kappa_weights(conf.shape[-1], weights)
    n = conf.sum(axis=(-1, -2))
    rows = conf.sum(axis=-1)
    cols = conf.sum(axis=-2)
    with np.errstate(invalid="ignore", divide="ignore"):
        expected = rows[..., :, None] * cols[..., None, :] / n[..., None, None]
        num = (w * conf).sum(axis=(-1, -2))
        den = (w * expected).sum(axis=(-1, -2))
        out = 1.0 - num / den
    return np.where(den > 0, out, np.nan)


def _ordinal_distances(n_v: np.ndarray) -> np.ndarray:
    """Krippendorff's ordinal distance for value frequencies n_v (..., V): for grades c <= k,
    (sum of n_g for g from c to k, minus (n_c + n_k) / 2) squared (as the krippendorff package)."""
    v = n_v.shape[-1]
    idx = np.arange(v)
    lo = np.minimum(idx[:, None], idx[None, :])
    hi = np.maximum(idx[:, None], idx[None, :])
    cs = np.cumsum(n_v, axis=-1)
    between = cs[..., hi] - cs[..., lo] + n_v[..., lo]
    return (between - (n_v[..., lo] + n_v[..., hi]) / 2.0) ** 2


def _alpha_from_coincidence(o: np.ndarray, level: str) -> np.ndarray:
    """Krippendorff's alpha of a batch of coincidence matrices (..., V, V); NaN where undefined.
    alpha = 1 - sum(o * d) / sum(e * d), e the coincidences expected by chance."""
    o = np.asarray(o, dtype=np.float64)
    n_v = o.sum(axis=-2)
    n = n_v.sum(axis=-1)
    v = o.shape[-1]
    eye = np.eye(v)
    with np.errstate(invalid="ignore", divide="ignore"):
        e = (n_v[..., :, None] * n_v[..., None, :] - eye * n_v[..., None, :]) / (n[..., None, None] - 1.0)
        if level == "nominal":
            d = 1.0 - eye
        elif level == "ordinal":
            d = _ordinal_distances(n_v)
        else:
            raise ValueError(f"level: expected 'nominal' or 'ordinal', got {level!r}")
        num = (o * d).sum(axis=(-1, -2))
        den = (e * d).sum(axis=(-1, -2))
        out = 1.0 - num / den
    return np.where((den > 0) & (n > 1), out, np.nan)


# ------------------------------------------------------------------------ point estimates (libraries)


def cohen_kappa(y1: Sequence[int], y2: Sequence[int], *, scale: Sequence[int], weights: str | None = None,
                judges: tuple[str, str] = ("judge 1", "judge 2"),
                grade_names: Mapping[int, str] | None = None) -> Estimate:
    """Cohen's kappa of two judges' grades on the same pairs, by scikit-learn's
    ``cohen_kappa_score(y1, y2, labels=scale, weights=weights)``; an undefined :class:`Estimate`
    (never NaN) when the pairs are none or both judges gave one and the same grade everywhere.

    >>> cohen_kappa([0, 1, 1, 0], [0, 1, 0, 0], scale=[0, 1]).value  # po=.75, pe=.5 -> .5
    0.5
    """
    _kappa_weights(2, weights)  # validates ``weights``
    y1 = np.asarray(y1, dtype=np.int64)
    y2 = np.asarray(y2, dtype=np.int64)
    if y1.shape != y2.shape:
        raise ValueError(f"y2: has {y2.size} grades, y1 has {y1.size}")
    if y1.size == 0:
        return Estimate(None, undefined="no pairs labelled by both judges")
    g1, g2 = np.unique(y1), np.unique(y2)
    if g1.size == 1 and g2.size == 1 and g1[0] == g2[0]:
        return Estimate(None, undefined=(
            f"both judges gave grade {int(g1[0])} to every shared pair: chance agreement is 1, kappa is undefined"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value = cohen_kappa_score(y1, y2, labels=list(scale), weights=weights, replace_undefined_by=np.nan)
    if value is None or not np.isfinite(value):
        return Estimate(None, undefined="chance agreement is 1: kappa is undefined")
    note = None
    for name, g in zip(judges, (g1, g2)):
        if g.size == 1:
            what = grade_names[int(g[0])] if grade_names else f"grade {int(g[0])}"
            note = f"{name} gave {what} to every shared pair: kappa is 0 whatever the other judge does"
    return Estimate(float(value), note=note)


def krippendorff_alpha(reliability: np.ndarray, *, scale: Sequence[int], level: str) -> Estimate:
    """Krippendorff's alpha by the ``krippendorff`` package, for a judges x pairs matrix of grades
    with NaN where a judge did not label a pair; ``value_domain`` is the scale. Undefined (never NaN)
    when no pair has two labels or every paired label is the same grade."""
    if level not in ("nominal", "ordinal"):
        raise ValueError(f"level: expected 'nominal' or 'ordinal', got {level!r}")
    data = np.asarray(reliability, dtype=np.float64)
    if data.ndim != 2 or data.size == 0:
        return Estimate(None, undefined="no pairs labelled by two judges")
    counts = (~np.isnan(data)).sum(axis=0)
    pairable = data[:, counts >= 2]
    if pairable.shape[1] == 0:
        return Estimate(None, undefined="no pairs labelled by two judges")
    values = np.unique(pairable[~np.isnan(pairable)])
    if values.size < 2:
        return Estimate(None, undefined=(
            f"every label on the shared pairs is grade {int(values[0])}: no variation, alpha is undefined"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value = krippendorff.alpha(reliability_data=data, value_domain=list(scale), level_of_measurement=level)
    if not np.isfinite(value):
        return Estimate(None, undefined="expected disagreement is 0: alpha is undefined")
    return Estimate(float(value))


def _percent(agree: int, total: int) -> Estimate:
    if total == 0:
        return Estimate(None, undefined="no pairs labelled by two judges")
    return Estimate(agree / total)


def _with_interval(est: Estimate, reps: np.ndarray | None, confidence: float, resamples: int,
                   why_not: str | None) -> Estimate:
    if not est.defined:
        return est
    if reps is None:
        return Estimate(est.value, undefined=est.undefined, note=est.note, interval_note=why_not)
    low, high, note = _percentile_interval(reps, confidence, resamples)
    return Estimate(est.value, low, high, undefined=None, note=est.note, interval_note=note)


def _bootstrap_reason(n_queries: int, resamples: int) -> str | None:
    if resamples <= 0:
        return "bootstrap not requested"
    if n_queries < 2:
        return "one query only: resampling queries cannot estimate the spread"
    return None


BINARY_NAMES = {0: "'not relevant'", 1: "'relevant'"}
FEW_QUERIES = 10  # below this many queries a query bootstrap interval is rough


def _few(est: Estimate, n_queries: int) -> Estimate:
    if est.low is None or n_queries >= FEW_QUERIES:
        return est
    note = f"only {n_queries} queries: the interval is rough"
    return Estimate(est.value, est.low, est.high, est.undefined, est.note,
                    f"{est.interval_note}; {note}" if est.interval_note else note)


# ------------------------------------------------------------------------------------- comparisons


def _validate(confidence: float, resamples: int):
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence: must be between 0 and 1, got {confidence}")
    if resamples < 0:
        raise ValueError(f"resamples: must be >= 0, got {resamples}")


def compare_pair(
    labels: Mapping[tuple[str, str], Mapping[str, Judgment]],
    a: str,
    b: str,
    *,
    scale: Sequence[int],
    cut: int,
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> Comparison:
    """Agreement of judges ``a`` and ``b`` on the pairs both labelled (``labels`` as from
    :func:`latest_labels`). Bootstrap intervals resample the queries of those pairs."""
    _validate(confidence, resamples)
    scale = list(scale)
    cut = _check_cut(cut, scale)
    units = sorted(u for u, d in labels.items() if a in d and b in d)
    y1 = np.array([labels[u][a].grade for u in units], dtype=np.int64)
    y2 = np.array([labels[u][b].grade for u in units], dtype=np.int64)
    qids = sorted({u[0] for u in units})
    k = len(scale)
    index = {g: i for i, g in enumerate(scale)}
    i1 = np.array([index[int(g)] for g in y1], dtype=np.int64)
    i2 = np.array([index[int(g)] for g in y2], dtype=np.int64)
    conf = np.zeros((k, k), dtype=np.int64)
    np.add.at(conf, (i1, i2), 1)
    rel = (np.asarray(scale) >= cut).astype(np.int64)  # grade index -> 0/1
    collapse = np.zeros((k, 2))
    collapse[np.arange(k), rel] = 1.0
    bconf = (collapse.T @ conf @ collapse).astype(np.int64)
    b1, b2 = rel[i1], rel[i2]

    graded = k > 2
    measures: dict[str, Estimate] = {"agreement": _percent(int((y1 == y2).sum()), len(units))}
    for name, w in (("kappa", None), ("kappa_linear", "linear"), ("kappa_quadratic", "quadratic")):
        if name != "kappa" and not graded:
            continue
        measures[name] = cohen_kappa(y1, y2, scale=scale, weights=w, judges=(a, b))
    rel_data = np.vstack([y1, y2]).astype(np.float64) if units else np.zeros((2, 0))
    measures["alpha_nominal"] = krippendorff_alpha(rel_data, scale=scale, level="nominal")
    if graded:
        measures["alpha_ordinal"] = krippendorff_alpha(rel_data, scale=scale, level="ordinal")
    binary = {
        "agreement": _percent(int((b1 == b2).sum()), len(units)),
        "kappa": cohen_kappa(b1, b2, scale=[0, 1], judges=(a, b), grade_names=BINARY_NAMES),
        "alpha_nominal": krippendorff_alpha(
            np.vstack([b1, b2]).astype(np.float64) if units else np.zeros((2, 0)), scale=[0, 1], level="nominal"),
    }

    why_not = _bootstrap_reason(len(qids), resamples)
    reps: dict[str, np.ndarray] = {}
    breps: dict[str, np.ndarray] = {}
    if why_not is None and units:
        qindex = {q: i for i, q in enumerate(qids)}
        qi = np.array([qindex[u[0]] for u in units], dtype=np.int64)
        per_q = np.zeros((len(qids), k, k))
        np.add.at(per_q, (qi, i1, i2), 1.0)
        counts = _resample_counts(len(qids), resamples, seed)
        c = np.einsum("bq,qij->bij", counts, per_q)
        bc = np.einsum("ik,bij,jl->bkl", collapse, c, collapse)
        reps = _pair_replicates(c, graded)
        breps = _pair_replicates(bc, False)
        breps = {n: breps[n] for n in binary}
    measures = {n: _few(_with_interval(e, reps.get(n), confidence, resamples, why_not), len(qids))
                for n, e in measures.items()}
    binary = {n: _few(_with_interval(e, breps.get(n), confidence, resamples, why_not), len(qids))
              for n, e in binary.items()}
    return Comparison((a, b), len(units), len(qids), measures, binary, conf.tolist(), bconf.tolist())


def _pair_replicates(c: np.ndarray, graded: bool) -> dict[str, np.ndarray]:
    n = c.sum(axis=(1, 2))
    out = {"agreement": np.trace(c, axis1=1, axis2=2) / n, "kappa": _kappa_from_confusion(c, None)}
    o = c + np.swapaxes(c, 1, 2)  # two judges per pair: o = confusion + its transpose
    out["alpha_nominal"] = _alpha_from_coincidence(o, "nominal")
    if graded:
        out["kappa_linear"] = _kappa_from_confusion(c, "linear")
        out["kappa_quadratic"] = _kappa_from_confusion(c, "quadratic")
        out["alpha_ordinal"] = _alpha_from_coincidence(o, "ordinal")
    return out


def _coincidences(value_counts: np.ndarray) -> np.ndarray:
    """Per-unit coincidence matrices (U, V, V) from value counts (U, V), units with >= 2 labels."""
    m = value_counts.sum(axis=1)
    outer = value_counts[:, :, None] * value_counts[:, None, :]
    diag = value_counts[:, None, :] * np.eye(value_counts.shape[1])[None]
    return (outer - diag) / (m - 1.0)[:, None, None]


def compare_all(
    labels: Mapping[tuple[str, str], Mapping[str, Judgment]],
    judges: Sequence[str],
    *,
    scale: Sequence[int],
    cut: int,
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> Comparison:
    """Agreement of all ``judges`` together on the pairs at least two of them labelled: percent
    agreement (every judge who labelled the pair gave the same grade) and Krippendorff's alpha with
    missing labels. Cohen's kappa is for two judges: with exactly two judges it is theirs, with more
    it is undefined (read alpha, or the pairwise kappas)."""
    _validate(confidence, resamples)
    scale = list(scale)
    cut = _check_cut(cut, scale)
    judges = list(judges)
    units = sorted(u for u, d in labels.items() if sum(1 for j in judges if j in d) >= 2)
    if len(judges) == 2:
        pc = compare_pair(labels, judges[0], judges[1], scale=scale, cut=cut, resamples=resamples, seed=seed,
                          confidence=confidence)
        return Comparison(tuple(judges), pc.pairs, pc.queries, pc.measures, pc.binary)
    k = len(scale)
    graded = k > 2
    index = {g: i for i, g in enumerate(scale)}
    rel = (np.asarray(scale) >= cut).astype(np.int64)
    data = np.full((len(judges), len(units)), np.nan)
    for col, u in enumerate(units):
        for row, j in enumerate(judges):
            if j in labels[u]:
                data[row, col] = labels[u][j].grade
    qids = sorted({u[0] for u in units})
    vc = np.zeros((len(units), k))
    for row in range(len(judges)):
        have = ~np.isnan(data[row])
        cols = np.nonzero(have)[0]
        np.add.at(vc, (cols, [index[int(g)] for g in data[row, have]]), 1.0)
    collapse = np.zeros((k, 2))
    collapse[np.arange(k), rel] = 1.0
    bvc = vc @ collapse
    unanimous = (vc > 0).sum(axis=1) == 1
    bunanimous = (bvc > 0).sum(axis=1) == 1
    bdata = np.where(np.isnan(data), np.nan, (data >= cut).astype(np.float64))

    pairwise_only = "Cohen's kappa is for two judges: read Krippendorff's alpha, or the kappa of each pair"
    if len(judges) < 2:
        pairwise_only = "agreement needs two judges"
    measures: dict[str, Estimate] = {"agreement": _percent(int(unanimous.sum()), len(units))}
    for name in ("kappa", "kappa_linear", "kappa_quadratic"):
        if name == "kappa" or graded:
            measures[name] = Estimate(None, undefined=pairwise_only)
    measures["alpha_nominal"] = krippendorff_alpha(data, scale=scale, level="nominal")
    if graded:
        measures["alpha_ordinal"] = krippendorff_alpha(data, scale=scale, level="ordinal")
    binary = {
        "agreement": _percent(int(bunanimous.sum()), len(units)),
        "kappa": Estimate(None, undefined=pairwise_only),
        "alpha_nominal": krippendorff_alpha(bdata, scale=[0, 1], level="nominal"),
    }
    why_not = _bootstrap_reason(len(qids), resamples)
    reps: dict[str, np.ndarray] = {}
    breps: dict[str, np.ndarray] = {}
    if why_not is None and units:
        qindex = {q: i for i, q in enumerate(qids)}
        qi = np.array([qindex[u[0]] for u in units], dtype=np.int64)
        nq = len(qids)
        per_q_o = np.zeros((nq, k, k))
        np.add.at(per_q_o, qi, _coincidences(vc))
        per_q_n = np.bincount(qi, minlength=nq).astype(np.float64)
        per_q_u = np.bincount(qi, weights=unanimous.astype(np.float64), minlength=nq)
        per_q_bu = np.bincount(qi, weights=bunanimous.astype(np.float64), minlength=nq)
        counts = _resample_counts(nq, resamples, seed)
        o = np.einsum("bq,qij->bij", counts, per_q_o)
        bo = np.einsum("ik,bij,jl->bkl", collapse, o, collapse)
        n = counts @ per_q_n
        reps = {"agreement": (counts @ per_q_u) / n, "alpha_nominal": _alpha_from_coincidence(o, "nominal")}
        if graded:
            reps["alpha_ordinal"] = _alpha_from_coincidence(o, "ordinal")
        breps = {"agreement": (counts @ per_q_bu) / n, "alpha_nominal": _alpha_from_coincidence(bo, "nominal")}
    measures = {n: _few(_with_interval(e, reps.get(n), confidence, resamples, why_not), len(qids))
                for n, e in measures.items()}
    binary = {n: _few(_with_interval(e, breps.get(n), confidence, resamples, why_not), len(qids))
              for n, e in binary.items()}
    return Comparison(tuple(judges), len(units), len(qids), measures, binary)


# ------------------------------------------------------------------------------------ verdict & co


def verdict(comparison: Comparison, *, thresholds: Thresholds = Thresholds(), on: str = "binary",
            cut: int | None = None) -> Verdict:
    """Read percent agreement (``on="binary"``: after the collapse at the cut, how the qrels are
    usually used; ``on="graded"``: on the scale as labelled) against ``thresholds``.

    Bands: ``>= usable``: usable for a paired comparison of systems; ``marginal`` in between;
    ``< marginal``: the definition of relevance is not usable and more queries will not fix it
    (tighten the guidelines and re-judge the overlap set).
    """
    if on not in ("binary", "graded"):
        raise ValueError(f"on: expected 'binary' or 'graded', got {on!r}")
    est = (comparison.binary if on == "binary" else comparison.measures)["agreement"]
    what = f"binary (grade >= {cut} relevant)" if on == "binary" and cut is not None else on
    if not est.defined:
        return Verdict("undefined", f"no verdict: {est.undefined}", None, what, comparison.pairs, thresholds)
    v = est.value
    pct = f"{100 * v:.1f}%"
    if comparison.pairs < thresholds.min_pairs:
        return Verdict("too few pairs", (
            f"{comparison.pairs} shared pairs, fewer than {thresholds.min_pairs}: agreement {pct} is not yet "
            "a reliable figure; judge more of the overlap set"), v, what, comparison.pairs, thresholds)
    if v >= thresholds.usable:
        band, msg = "usable", f"agreement {pct} >= {100 * thresholds.usable:.0f}%: usable for a paired comparison"
    elif v >= thresholds.marginal:
        band, msg = "marginal", (
            f"agreement {pct} is between {100 * thresholds.marginal:.0f}% and {100 * thresholds.usable:.0f}%: "
            "marginal; read the disagreements and consider clarifying the guidelines")
    else:
        band, msg = "not usable", (
            f"agreement {pct} < {100 * thresholds.marginal:.0f}%: the definition of relevance is not usable; "
            "more queries will not fix it: revise the guidelines and re-judge the overlap set")
    caveat = None
    alpha = (comparison.binary if on == "binary" else comparison.measures).get("alpha_nominal")
    if band != "not usable" and alpha is not None:
        if not alpha.defined:
            caveat = f"Krippendorff's alpha is undefined ({alpha.undefined}): the percent agreement says little"
        elif alpha.value < thresholds.chance_alpha:
            caveat = (f"Krippendorff's alpha is {alpha.value:.2f} (< {thresholds.chance_alpha:.2f}): beyond chance the "
                      "judges hardly agree; the percent agreement mostly reflects how common one grade is")
    return Verdict(band, msg, v, what, comparison.pairs, thresholds, caveat)


def label_distributions(labels: Mapping[tuple[str, str], Mapping[str, Judgment]], judges: Sequence[str],
                        scale: Sequence[int]) -> dict[str, dict[int, int]]:
    """Each judge's count of pairs per grade (latest labels), every grade of the scale present."""
    out = {j: {int(g): 0 for g in scale} for j in judges}
    for d in labels.values():
        for j, rec in d.items():
            if j in out:
                out[j][int(rec.grade)] += 1
    return out


def per_stratum(labels: Mapping[tuple[str, str], Mapping[str, Judgment]], judges: Sequence[str], *,
                strata: Mapping[str, str], scale: Sequence[int], cut: int) -> list[StratumAgreement]:
    """All-judges agreement within each stratum of the queries (``strata``: qid -> stratum key;
    queries not in it fall in ``"(none)"``); no bootstrap here (strata are small)."""
    groups: dict[str, dict] = defaultdict(dict)
    for u, d in labels.items():
        groups[strata.get(u[0], "(none)")][u] = d
    out = []
    for name in sorted(groups):
        c = compare_all(groups[name], judges, scale=scale, cut=cut, resamples=0)
        out.append(StratumAgreement(name, c.pairs, c.queries, c.measures["agreement"], c.measures["alpha_nominal"],
                                    c.binary["agreement"]))
    return out


def drift(labels: Mapping[tuple[str, str], Mapping[str, Judgment]], judges: Sequence[str], *, window: int = 20,
          max_points: int = 200) -> list[DriftPoint]:
    """Rolling percent agreement (all judges) over the last ``window`` pairs, in the order the pairs
    were completed (the time their last label was given), so a drop shows when judges drifted apart.
    At most ``max_points`` evenly spaced points (always including the last)."""
    if window < 1:
        raise ValueError(f"window: must be at least 1, got {window}")
    if max_points < 1:
        raise ValueError(f"max_points: must be at least 1, got {max_points}")
    done = []
    for pos, d in enumerate(labels.values()):
        recs = [d[j] for j in judges if j in d]
        if len(recs) < 2:
            continue
        t, last, unknown = float("-inf"), recs[0], False
        for r in recs:
            x = _seconds(r.answered_at)
            if x is None:
                unknown = True
            elif x >= t:
                t, last = x, r
        done.append((float("inf") if unknown else t, pos, len({r.grade for r in recs}) == 1, last.answered_at))
    if not done:
        return []
    done.sort(key=lambda x: (x[0], x[1]))
    agree = np.array([x[2] for x in done], dtype=np.float64)
    cs = np.concatenate([[0.0], np.cumsum(agree)])
    n = len(done)
    idx = sorted(set(np.linspace(0, n - 1, num=min(n, max_points)).round().astype(int).tolist()))
    points = []
    for i in idx:
        lo = max(0, i + 1 - window)
        size = i + 1 - lo
        points.append(DriftPoint(i + 1, size, float((cs[i + 1] - cs[lo]) / size), float(cs[i + 1] / (i + 1)),
                                 _iso(done[i][3])))
    return points


def judge_timing(judgments: Iterable[Judgment], *, fast: float = 2.0) -> list[Timing]:
    """Each judge's median seconds from showing a pair to answering it, and the share of decisions
    taken in under ``fast`` seconds (every non-skipped record with both times, label changes too)."""
    secs: dict[str, list[float]] = defaultdict(list)
    judges: list[str] = []
    for j in judgments:
        if j.judge not in secs:
            judges.append(j.judge)
            secs[j.judge] = []
        if j.grade is None:
            continue
        a, s = _seconds(j.answered_at), _seconds(j.shown_at)
        if a is None or s is None or a < s:
            continue
        secs[j.judge].append(a - s)
    out = []
    for judge in sorted(judges):
        xs = secs[judge]
        if not xs:
            out.append(Timing(judge, 0, None, None))
        else:
            out.append(Timing(judge, len(xs), float(statistics.median(xs)), sum(x < fast for x in xs) / len(xs)))
    return out


def agreement_report(
    judgments: Iterable[Judgment],
    *,
    scale: Sequence[int] | None = None,
    cut: int | None = None,
    strata: Mapping[str, str] | None = None,
    thresholds: Thresholds = Thresholds(),
    verdict_on: str = "binary",
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    window: int = 20,
    timing_judgments: Iterable[Judgment] | None = None,
) -> Report:
    """The lead's whole agreement picture from judgment records.

    ``scale``: the grades of the label scale (default: every integer from the lowest to the highest
    grade seen); ``cut``: grade >= cut is relevant for the binary figures (as ``trec_eval -l``; default:
    :func:`default_cut` of the scale);
    ``strata``: qid -> stratum for the per-stratum table; ``timing_judgments``: the records to time
    the judges on (default: ``judgments``). Bootstrap: ``resamples`` query resamples, ``seed``.
    """
    memo: dict = {}
    judgments = _in_seconds(judgments, memo)
    labels = latest_labels(judgments)
    scale = _check_scale(scale, (r.grade for d in labels.values() for r in d.values()), 1 if cut is None else cut)
    cut = _check_cut(default_cut(scale) if cut is None else cut, scale)
    _validate(confidence, resamples)
    if verdict_on not in ("binary", "graded"):
        raise ValueError(f"verdict_on: expected 'binary' or 'graded', got {verdict_on!r}")
    judges = sorted({r.judge for d in labels.values() for r in d.values()})
    notes = []
    if len(judges) < 2:
        notes.append("fewer than two judges have labels: agreement needs two" if judges else "no labels yet")
    pairwise = [
        compare_pair(labels, a, b, scale=scale, cut=cut, resamples=resamples, seed=seed, confidence=confidence)
        for a, b in combinations(judges, 2)
    ]
    overall = compare_all(labels, judges, scale=scale, cut=cut, resamples=resamples, seed=seed,
                          confidence=confidence)
    if judges and len(judges) >= 2 and overall.pairs == 0:
        notes.append("no pair was labelled by two judges: assign an overlap set (golden assign --overlap)")
    on = verdict_on if len(scale) > 2 else "graded"
    return Report(
        scale=scale,
        cut=cut,
        judges=judges,
        pairwise=pairwise,
        overall=overall,
        verdict=verdict(overall, thresholds=thresholds, on=on, cut=cut),
        distributions=label_distributions(labels, judges, scale),
        strata=per_stratum(labels, judges, strata=strata or {}, scale=scale, cut=cut) if strata is not None else [],
        drift=drift(labels, judges, window=window),
        timing=judge_timing(judgments if timing_judgments is None else _in_seconds(timing_judgments, memo)),
        resamples=resamples,
        seed=seed,
        confidence=confidence,
        notes=notes,
    )


def format_estimate(est: Estimate, *, percent: bool = False, digits: int = 3) -> str:
    """A short human form: ``0.712 [0.650, 0.770]`` or ``undefined (reason)``."""
    if not est.defined:
        return f"undefined ({est.undefined})"

    def f(x):
        return f"{100 * x:.1f}%" if percent else f"{x:.{digits}f}"

    s = f(est.value)
    if est.low is not None and est.high is not None:
        s += f" [{f(est.low)}, {f(est.high)}]"
    return s

