"""Inter-annotator agreement measures on double-judged pairs, with query-bootstrap intervals.

One module because every measure is computed from the same confusion and
coincidence matrices and resampled by the same query bootstrap; split, each part would import the
other's private matrix helpers.

Plain functions on plain data: ``labels`` maps each pair ``(qid, docid)`` to ``{judge: latest label}``
(as :func:`curation.agree.labels.latest_labels` builds it from :class:`curation.agree.labels.Label`
records; each judge's LATEST label of a pair counts, skips are ignored).

What is computed, for two judges (:func:`compare_pair`) and for all judges together
(:func:`compare_all`), as an :class:`Agreement`:

- ``pairs``: the pairs (query, document) labelled by both judges (by at least two, for all judges);
- ``agreement``: percent agreement, the share of those pairs on which the judges gave the same grade
  (for all judges together: on which every judge who labelled the pair gave the same grade);
- ``kappa``, ``kappa_linear``, ``kappa_quadratic``: Cohen's kappa, unweighted and with linear and
  quadratic weights (graded scales only), with the weights the grade distances (Cohen 1960; Cohen
  1968 for the weighted form): the value scikit-learn's :func:`sklearn.metrics.cohen_kappa_score`
  gives with ``labels`` = the scale's grades, computed here in the same floating-point steps so that
  it is the same float (tests/agree/test_agreement.py compares them for equality), without loading
  scikit-learn (about 2 s of imports for ``golden export create``). Pairwise only;
- ``alpha_nominal``, ``alpha_ordinal``, ``alpha_interval``: Krippendorff's alpha, any number of
  judges, missing labels allowed, computed by the ``krippendorff`` package (Krippendorff 2011,
  "Computing Krippendorff's alpha-reliability"); ordinal and interval on graded scales only (on
  two grades both equal the nominal alpha). Interval alpha reads the grades as numbers: the
  disagreement of grades c and k is (c - k) squared, so 0 against 3 weighs nine times 0 against 1;
- ``fleiss_kappa``: Fleiss' kappa (Fleiss 1971), all judges together only (more than two judges),
  on the pairs that have the most common number of labels (Fleiss' kappa needs the same number of
  judges on every pair; a note says how many pairs were left out). Computed here in numpy from the
  per-pair value counts, so that the query bootstrap reuses them; statsmodels'
  ``statsmodels.stats.inter_rater.fleiss_kappa`` is the oracle in tests/agree/test_k_judges.py (equal
  to 1e-9);
- a bootstrap interval (95 % by default) for each figure that resamples QUERIES with replacement,
  not pairs, because the pairs of one query are not independent (a cluster bootstrap; Efron &
  Tibshirani 1993, ch. 13 percentile interval). It is seeded and reproducible;
- the same figures after collapsing the scale to binary at a cut (``grade >= cut`` is relevant, as
  ``trec_eval -l cut``), and each pair of judges' confusion matrix.

Bootstrap replicates are computed from per-query confusion (pairwise) or coincidence (all judges)
matrices summed with the resampled multiplicities: the same formulas as scikit-learn and
``krippendorff`` use, vectorised, so a thousand replicates take milliseconds. The tests check
replicates against the two libraries on the resampled data.

A figure that the data cannot define (no shared pairs; every label the same grade) is an
:class:`Estimate` with ``value=None`` and the reason in ``undefined``: never NaN, never an exception.

The verdict, the per-stratum, drift and timing figures and the whole report are in
:mod:`curation.agree.agreement`; this module keeps the pairwise and
all-judges bootstraps together because they share their helpers.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import krippendorff
import numpy as np

from curation.agree.settings import CONFIDENCE, RESAMPLES, SEED

if TYPE_CHECKING:
    from curation.agree.labels import Label

__all__ = [
    "Estimate",
    "Agreement",
    "MEASURES",
    "cohen_kappa",
    "krippendorff_alpha",
    "fleiss_kappa",
    "compare_pair",
    "compare_all",
    "format_estimate",
]


# --------------------------------------------------------------------------------------- records


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

    def as_dict(self) -> dict:
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
        Measure(
            "alpha_nominal", "Krippendorff's alpha, nominal", False, False, "Krippendorff 2011; krippendorff.alpha"
        ),
        Measure("alpha_ordinal", "Krippendorff's alpha, ordinal", False, True, "Krippendorff 2011; krippendorff.alpha"),
        Measure("alpha_interval", "Krippendorff's alpha, interval", False, True,
                "Krippendorff 2011; krippendorff.alpha level_of_measurement='interval'"),
        Measure("fleiss_kappa", "Fleiss' kappa", False, False,
                "Fleiss 1971; statsmodels.stats.inter_rater.fleiss_kappa (all judges, more than two)"),
    )
}


@dataclass(frozen=True)
class Agreement:
    """Agreement of two judges (``len(judges) == 2``) or of all judges together."""

    judges: tuple[str, ...]
    pairs: int  # pairs labelled by both judges (by at least two judges, for all judges)
    queries: int  # queries those pairs belong to (the bootstrap resamples these)
    measures: dict[str, Estimate]
    binary: dict[str, Estimate]  # the same after collapsing to binary at ``cut``
    confusion: list[list[int]] | None = None  # rows: judges[0]'s grade, columns: judges[1]'s (pairwise only)
    binary_confusion: list[list[int]] | None = None

    def as_dict(self) -> dict:
        return {
            "judges": list(self.judges),
            "pairs": self.pairs,
            "queries": self.queries,
            "measures": {k: v.as_dict() for k, v in self.measures.items()},
            "binary": {k: v.as_dict() for k, v in self.binary.items()},
            "confusion": self.confusion,
            "binary_confusion": self.binary_confusion,
        }


# ------------------------------------------------------------------------------------ small helpers


def check_cut(cut: int, scale: list[int]) -> int:
    """``cut`` as an int; ValueError when ``grade >= cut`` would not split ``scale`` in two."""
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
    # One bincount over (resample, query) cells, numbered in place: the counts np.add.at gave,
    # without its slow path and with two arrays of this size alive at a time, not four.
    draws += np.arange(resamples, dtype=draws.dtype)[:, None] * n_queries
    counts = np.bincount(draws.ravel(), minlength=resamples * n_queries)
    del draws
    return counts.reshape(resamples, n_queries).astype(np.float64)


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


def _alpha_from_coincidence(o: np.ndarray, level: str, values: Sequence[float] | None = None) -> np.ndarray:
    """Krippendorff's alpha of a batch of coincidence matrices (..., V, V); NaN where undefined.
    alpha = 1 - sum(o * d) / sum(e * d), e the coincidences expected by chance. ``values``: the
    grades the V rows stand for (the interval distance is their squared difference)."""
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
        elif level == "interval":
            g = np.asarray(values if values is not None else np.arange(v), dtype=np.float64)
            d = (g[:, None] - g[None, :]) ** 2
        else:
            raise ValueError(f"level: expected 'nominal', 'ordinal' or 'interval', got {level!r}")
        num = (o * d).sum(axis=(-1, -2))
        den = (e * d).sum(axis=(-1, -2))
        out = 1.0 - num / den
    return np.where((den > 0) & (n > 1), out, np.nan)


# ------------------------------------------------------------------------ point estimates (libraries)


def _grade_index(y: np.ndarray, scale: Sequence[int]) -> np.ndarray:
    """Each grade's place in ``scale``, -1 for a grade not on it."""
    grades = np.asarray(scale, dtype=np.int64)
    order = np.argsort(grades, kind="stable")
    at = np.minimum(np.searchsorted(grades[order], y), len(grades) - 1)
    return np.where(grades[order][at] == y, order[at], -1)


def _cohen_kappa_value(y1: np.ndarray, y2: np.ndarray, scale: Sequence[int], weights: str | None) -> float:
    """Cohen's kappa of two grade vectors on ``scale`` (pairs with a grade off the scale left out),
    NaN where undefined: 1 - sum(w * observed) / sum(w * expected), expected = the outer product of
    the column and row totals over their sum, w = 1 off the diagonal or the grade-index distance
    (linear) or its square (quadratic). Each step is the one sklearn's ``cohen_kappa_score`` takes
    (float64 confusion matrix, ``np.outer``, ``np.sum``), so the result is bitwise the same."""
    k = len(scale)
    i1, i2 = _grade_index(y1, scale), _grade_index(y2, scale)
    keep = (i1 >= 0) & (i2 >= 0)
    if not (i1 >= 0).any():
        raise ValueError("y1: none of its grades is on the scale")
    confusion = np.bincount(i1[keep] * k + i2[keep], minlength=k * k).reshape(k, k).astype(np.float64)
    sum0 = np.sum(confusion, axis=0)
    sum1 = np.sum(confusion, axis=1)
    total = np.sum(sum0)
    if total == 0:
        return float("nan")
    expected = np.outer(sum0, sum1) / total
    if weights is None:
        w_mat = np.ones((k, k), dtype=np.float64)
        np.fill_diagonal(w_mat, 0)
    else:
        w_mat = np.zeros((k, k), dtype=np.float64)
        w_mat += np.arange(k)
        w_mat = np.abs(w_mat - w_mat.T) if weights == "linear" else (w_mat - w_mat.T) ** 2
    numerator = np.sum(w_mat * confusion)
    denominator = np.sum(w_mat * expected)
    if denominator == 0:
        return float("nan")
    return float(1 - numerator / denominator)


def cohen_kappa(y1: Sequence[int], y2: Sequence[int], *, scale: Sequence[int], weights: str | None = None,
                judges: tuple[str, str] = ("judge 1", "judge 2"),
                grade_names: Mapping[int, str] | None = None) -> Estimate:
    """Cohen's kappa of two judges' grades on the same pairs, as scikit-learn's
    ``cohen_kappa_score(y1, y2, labels=scale, weights=weights)`` gives it (:func:`_cohen_kappa_value`);
    an undefined :class:`Estimate`
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
    value = _cohen_kappa_value(y1, y2, list(scale), weights)
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
    if level not in ("nominal", "ordinal", "interval"):
        raise ValueError(f"level: expected 'nominal', 'ordinal' or 'interval', got {level!r}")
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


def _fleiss_units(value_counts: np.ndarray) -> tuple[np.ndarray, int, str | None]:
    """Which units Fleiss' kappa is computed on (a mask over the rows of ``value_counts``): those
    with the most common number of labels among the units with at least two (the larger number on a
    tie), that number, and a note when other units were left out."""
    m = value_counts.sum(axis=1).astype(np.int64)
    if not m.size:
        return np.zeros(0, dtype=bool), 0, None
    sizes, n = np.unique(m, return_counts=True)
    raters = int(sizes[np.flatnonzero(n == n.max())[-1]])
    keep = m == raters
    note = None
    if not keep.all():
        note = (f"on the {int(keep.sum())} pairs with {raters} judges; {int((~keep).sum())} pairs with another "
                "number of judges left out (Fleiss' kappa needs the same number on every pair)")
    return keep, raters, note


def _fleiss_from_sums(agree_sum, n_units, totals, raters: int):
    """Fleiss' kappa from the sum over units of P_i = (sum_j n_ij^2 - m) / (m (m - 1)), the number of
    units and the category totals (arrays with a leading replicate axis, or scalars); NaN where
    undefined."""
    with np.errstate(divide="ignore", invalid="ignore"):
        p_bar = agree_sum / n_units
        p_j = totals / (np.asarray(n_units, dtype=np.float64)[..., None] * raters)
        p_e = (p_j ** 2).sum(axis=-1)
        return (p_bar - p_e) / (1.0 - p_e)


def _unit_agreement(vc: np.ndarray, raters: int) -> np.ndarray:
    return ((vc ** 2).sum(axis=1) - raters) / (raters * (raters - 1.0))


def fleiss_kappa(value_counts: np.ndarray) -> Estimate:
    """Fleiss' kappa (Fleiss 1971, "Measuring nominal scale agreement among many raters") of a
    units x categories matrix of label counts, on the units with the most common number of labels
    (:func:`_fleiss_units`); undefined (never NaN) without such units or when every label is one
    grade. The same value as ``statsmodels.stats.inter_rater.fleiss_kappa(table, method='fleiss')``
    on those rows.

    >>> round(fleiss_kappa(np.array([[2, 0], [0, 2], [1, 1]])).value, 4)
    0.3333
    """
    vc = np.asarray(value_counts, dtype=np.float64)
    keep, raters, note = _fleiss_units(vc)
    if raters < 2 or not keep.any():
        return Estimate(None, undefined="no pairs labelled by two judges")
    sub = vc[keep]
    value = _fleiss_from_sums(_unit_agreement(sub, raters).sum(), float(len(sub)), sub.sum(axis=0), raters)
    if not np.isfinite(value):
        return Estimate(None, undefined="every label is the same grade: expected agreement is 1, kappa is undefined")
    return Estimate(float(value), note=note)


def _fleiss_replicates(vc: np.ndarray, qi: np.ndarray, nq: int, counts: np.ndarray) -> np.ndarray:
    """Fleiss' kappa of each bootstrap replicate (``counts``: resample x query multiplicities)."""
    keep, raters, _ = _fleiss_units(vc)
    if raters < 2 or not keep.any():
        return np.full(counts.shape[0], np.nan)
    sub, q = vc[keep], qi[keep]
    per_q_p = np.bincount(q, weights=_unit_agreement(sub, raters), minlength=nq)
    per_q_n = np.bincount(q, minlength=nq).astype(np.float64)
    per_q_tot = np.zeros((nq, vc.shape[1]))
    np.add.at(per_q_tot, q, sub)
    return _fleiss_from_sums(counts @ per_q_p, counts @ per_q_n, counts @ per_q_tot, raters)


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


def check_bootstrap(confidence: float, resamples: int):
    """ValueError naming the parameter for a confidence outside (0, 1) or a negative resamples."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence: must be between 0 and 1, got {confidence}")
    if resamples < 0:
        raise ValueError(f"resamples: must be >= 0, got {resamples}")


def compare_pair(
    labels: Mapping[tuple[str, str], Mapping[str, Label]],
    a: str,
    b: str,
    *,
    scale: Sequence[int],
    cut: int,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
) -> Agreement:
    """Agreement of judges ``a`` and ``b`` on the pairs both labelled (``labels`` as from
    :func:`curation.agree.labels.latest_labels`). Bootstrap intervals resample the queries of those pairs."""
    check_bootstrap(confidence, resamples)
    scale = list(scale)
    cut = check_cut(cut, scale)
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
        if MEASURES[name].graded_only and not graded:
            continue
        measures[name] = cohen_kappa(y1, y2, scale=scale, weights=w, judges=(a, b))
    rel_data = np.vstack([y1, y2]).astype(np.float64) if units else np.zeros((2, 0))
    measures["alpha_nominal"] = krippendorff_alpha(rel_data, scale=scale, level="nominal")
    if graded:
        measures["alpha_ordinal"] = krippendorff_alpha(rel_data, scale=scale, level="ordinal")
        measures["alpha_interval"] = krippendorff_alpha(rel_data, scale=scale, level="interval")
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
        reps = _pair_replicates(c, graded, scale)
        breps = _pair_replicates(bc, False, [0, 1])
        breps = {n: breps[n] for n in binary}
    measures = {n: _few(_with_interval(e, reps.get(n), confidence, resamples, why_not), len(qids))
                for n, e in measures.items()}
    binary = {n: _few(_with_interval(e, breps.get(n), confidence, resamples, why_not), len(qids))
              for n, e in binary.items()}
    return Agreement((a, b), len(units), len(qids), measures, binary, conf.tolist(), bconf.tolist())


def _pair_replicates(c: np.ndarray, graded: bool, scale: Sequence[int]) -> dict[str, np.ndarray]:
    n = c.sum(axis=(1, 2))
    out = {"agreement": np.trace(c, axis1=1, axis2=2) / n, "kappa": _kappa_from_confusion(c, None)}
    o = c + np.swapaxes(c, 1, 2)  # two judges per pair: o = confusion + its transpose
    out["alpha_nominal"] = _alpha_from_coincidence(o, "nominal")
    if graded:
        out["kappa_linear"] = _kappa_from_confusion(c, "linear")
        out["kappa_quadratic"] = _kappa_from_confusion(c, "quadratic")
        out["alpha_ordinal"] = _alpha_from_coincidence(o, "ordinal")
        out["alpha_interval"] = _alpha_from_coincidence(o, "interval", scale)
    return out


def _coincidences(value_counts: np.ndarray) -> np.ndarray:
    """Per-unit coincidence matrices (U, V, V) from value counts (U, V), units with >= 2 labels."""
    m = value_counts.sum(axis=1)
    outer = value_counts[:, :, None] * value_counts[:, None, :]
    diag = value_counts[:, None, :] * np.eye(value_counts.shape[1])[None]
    return (outer - diag) / (m - 1.0)[:, None, None]


def compare_all(
    labels: Mapping[tuple[str, str], Mapping[str, Label]],
    judges: Sequence[str],
    *,
    scale: Sequence[int],
    cut: int,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
) -> Agreement:
    """Agreement of all ``judges`` together on the pairs at least two of them labelled: percent
    agreement (every judge who labelled the pair gave the same grade) and Krippendorff's alpha with
    missing labels. Cohen's kappa is for two judges: with exactly two judges it is theirs, with more
    it is undefined (read alpha, or the pairwise kappas)."""
    check_bootstrap(confidence, resamples)
    scale = list(scale)
    cut = check_cut(cut, scale)
    judges = list(judges)
    units = sorted(u for u, d in labels.items() if sum(1 for j in judges if j in d) >= 2)
    if len(judges) == 2:
        pc = compare_pair(labels, judges[0], judges[1], scale=scale, cut=cut, resamples=resamples, seed=seed,
                          confidence=confidence)
        return Agreement(tuple(judges), pc.pairs, pc.queries, pc.measures, pc.binary)
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
        if graded or not MEASURES[name].graded_only:
            measures[name] = Estimate(None, undefined=pairwise_only)
    measures["alpha_nominal"] = krippendorff_alpha(data, scale=scale, level="nominal")
    if graded:
        measures["alpha_ordinal"] = krippendorff_alpha(data, scale=scale, level="ordinal")
        measures["alpha_interval"] = krippendorff_alpha(data, scale=scale, level="interval")
    measures["fleiss_kappa"] = fleiss_kappa(vc)
    binary = {
        "agreement": _percent(int(bunanimous.sum()), len(units)),
        "kappa": Estimate(None, undefined=pairwise_only),
        "alpha_nominal": krippendorff_alpha(bdata, scale=[0, 1], level="nominal"),
        "fleiss_kappa": fleiss_kappa(bvc),
    }
    why_not = _bootstrap_reason(len(qids), resamples)
    reps: dict[str, np.ndarray] = {}
    breps: dict[str, np.ndarray] = {}
    if why_not is None and units:
        reps, breps = _all_judges_replicates(units, qids, vc, collapse, unanimous, bunanimous, scale,
                                             resamples=resamples, seed=seed)
    measures = {n: _few(_with_interval(e, reps.get(n), confidence, resamples, why_not), len(qids))
                for n, e in measures.items()}
    binary = {n: _few(_with_interval(e, breps.get(n), confidence, resamples, why_not), len(qids))
              for n, e in binary.items()}
    return Agreement(tuple(judges), len(units), len(qids), measures, binary)


def _all_judges_replicates(units, qids, vc, collapse, unanimous, bunanimous, scale, *, resamples: int, seed: int):
    """The bootstrap replicates (queries resampled) of :func:`compare_all`'s measures, graded and
    binary, from each query's coincidence matrix and counts."""
    k = len(scale)
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
    if k > 2:
        reps["alpha_ordinal"] = _alpha_from_coincidence(o, "ordinal")
        reps["alpha_interval"] = _alpha_from_coincidence(o, "interval", scale)
    breps = {"agreement": (counts @ per_q_bu) / n, "alpha_nominal": _alpha_from_coincidence(bo, "nominal")}
    reps["fleiss_kappa"] = _fleiss_replicates(vc, qi, nq, counts)
    breps["fleiss_kappa"] = _fleiss_replicates(vc @ collapse, qi, nq, counts)
    return reps, breps


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

