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
"""

from __future__ import annotations

import json
import math
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Iterable, Mapping, Sequence

import numpy as np
from scipy import stats as sps

from curation.formats.queries import QueryRecord, iter_queries
from curation.formats.queries import parse_queries as formats_parse_queries
from curation.evaluate.metrics import MetricSpec, QueryScores

__all__ = [
    "WEIGHTINGS",
    "CI_METHODS",
    "QueryRow",
    "read_queries",
    "parse_queries",
    "stratum_label",
    "Paired",
    "pair_scores",
    "query_weights",
    "bootstrap_replicates",
    "interval",
    "sign_test",
    "mcnemar",
    "verdict",
    "compare",
    "Comparison",
    "power",
    "Power",
    "noise",
    "Noise",
    "sweep",
    "Sweep",
    "attribute",
    "Attribution",
]

WEIGHTINGS = ("unweighted", "traffic", "stratum")
CI_METHODS = ("percentile", "bca")
TIED = 1e-12  # |B_i - A_i| at or below this is a tie (float noise of equal rankings)
Z_80_POWER_5PCT = float(sps.norm.ppf(0.975) + sps.norm.ppf(0.80))  # 2.8016


# ---------------------------------------------------------------------------------------------
# Queries file


#: One line of queries.jsonl: the record of curation.formats.queries (the only reader of that format).
QueryRow = QueryRecord


def stratum_label(stratum) -> str:
    """``{"market": "us", "shape": "question"}`` -> ``"market=us, shape=question"``; ``{}`` -> ``"(all)"``."""
    if stratum is None or stratum == {}:
        return "(all)"
    if not isinstance(stratum, dict):
        return str(stratum)
    if stratum == {"source": "handwritten"}:
        return "handwritten"
    return ", ".join(f"{k}={v}" for k, v in stratum.items())


def read_queries(path: str | os.PathLike) -> dict[str, QueryRow]:
    """Read queries.jsonl into ``{qid: QueryRow}`` (gzip allowed); errors name the file and line."""
    return {q.qid: q for q in iter_queries(path)}


def parse_queries(lines: Iterable[str], *, path: str = "queries.jsonl") -> dict[str, QueryRow]:
    """Parse queries.jsonl lines (``path`` names them in errors) into ``{qid: QueryRow}``."""
    return {q.qid: q for q in formats_parse_queries(lines, path)}


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
    queries: Mapping[str, QueryRow] | None = None,
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
    reasons = {"no relevant document": 0, "not in queries file": 0, "other split": 0}
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
            reasons["no relevant document"] += 1
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
    qids: Sequence[str], queries: Mapping[str, QueryRow] | None, weighting: str
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


# ---------------------------------------------------------------------------------------------
# Bootstrap


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
) -> np.ndarray:
    """Bootstrap replicates of the (weighted) mean of ``values``: shape ``(resamples,)`` or
    ``(resamples, m)`` when ``values`` is ``(n, m)`` (all columns resampled together).

    Each replicate draws ``n`` queries with replacement (within each stratum when ``strata`` is
    given, keeping each stratum's count) and returns ``sum(w * v) / sum(w)`` over the draw. With
    ``clusters`` (an id per query), whole clusters are drawn instead of queries.
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
    if clusters is not None:
        _, cl = np.unique(np.asarray(clusters), return_inverse=True)
        unit_s = np.zeros((cl.max() + 1, m))
        np.add.at(unit_s, cl, v * w[:, None])
        unit_w = np.bincount(cl, weights=w)
        groups = [np.arange(len(unit_w))]
        if len(unit_w) < 2:
            raise ValueError("clusters: the cluster bootstrap needs at least 2 clusters")
    else:
        unit_s, unit_w = v * w[:, None], w
        if strata is None:
            groups = [np.arange(n)]
        else:
            strata = np.asarray(strata)
            groups = [np.flatnonzero(strata == s) for s in np.unique(strata)]
    constant_den = len(groups) == 1 and np.all(unit_w == unit_w[0])
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
            den[:] = unit_w[0] * units
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


def interval(replicates: np.ndarray, *, level: float = 0.95) -> tuple[float, float]:
    """Percentile interval of bootstrap replicates (linear interpolation between order statistics)."""
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1, not {level!r}")
    lo, hi = np.nanpercentile(replicates, [50 * (1 - level), 50 * (1 + level)], axis=0)
    return float(lo), float(hi)


def _bca(diff, w, clusters, *, resamples, seed, level):
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


# ---------------------------------------------------------------------------------------------
# Exact tests and the verdict


@dataclass(frozen=True)
class SignTest:
    """Queries where B beat A, lost, tied; exact two-sided binomial p on the non-tied ones."""

    better: int
    worse: int
    tied: int
    pvalue: float


def sign_test(diff: np.ndarray) -> SignTest:
    """Exact two-sided sign test on the non-zero differences (scipy.stats.binomtest, p = 1/2)."""
    diff = np.asarray(diff, dtype=np.float64)
    better = int((diff > TIED).sum())
    worse = int((diff < -TIED).sum())
    tied = len(diff) - better - worse
    p = 1.0 if better + worse == 0 else float(sps.binomtest(better, better + worse, 0.5).pvalue)
    return SignTest(better, worse, tied, p)


@dataclass(frozen=True)
class McNemar:
    """2x2 table of a binary metric (1 = success) and the exact McNemar p-value."""

    both: int
    a_only: int
    b_only: int
    neither: int
    pvalue: float


def mcnemar(a: np.ndarray, b: np.ndarray) -> McNemar:
    """Exact McNemar test for paired binary outcomes: a binomial test on the discordant pairs
    (``a_only`` vs ``b_only``, p = 1/2), two-sided (McNemar 1947; scipy.stats.binomtest)."""
    a = np.asarray(a)
    b = np.asarray(b)
    if not (np.isin(a, (0, 1)).all() and np.isin(b, (0, 1)).all()):
        raise ValueError("a, b: McNemar's test needs binary (0/1) values")
    a, b = a.astype(bool), b.astype(bool)
    a_only, b_only = int((a & ~b).sum()), int((b & ~a).sum())
    n = a_only + b_only
    p = 1.0 if n == 0 else float(sps.binomtest(b_only, n, 0.5).pvalue)
    return McNemar(int((a & b).sum()), a_only, b_only, int((~a & ~b).sum()), p)


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
    queries: Mapping[str, QueryRow] | None = None,
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
        notes.append(f"{int((~active).sum())} queries with weight 0 (hand-written) are out of the traffic-weighted mean")
    mean_a = _weighted_mean(paired.a, w)
    mean_b = _weighted_mean(paired.b, w)
    delta = _weighted_mean(diff, w)
    if ci == "bca":
        if resample_strata is not None:
            raise ValueError(
                f"ci 'bca' cannot resample within strata (weighting {weighting!r}); use --ci percentile"
            )
        (low, high), reps = _bca(diff, w, clusters, resamples=resamples, seed=seed, level=level)
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


# ---------------------------------------------------------------------------------------------
# power


@dataclass
class Power:
    """How much a query set can resolve (normal approximation, paired design)."""

    n: int
    sd: float
    se: float
    mdd: float  # minimum detectable difference at the given power and level
    alpha: float
    power: float
    multiplier: float  # z_(1-alpha/2) + z_power, 2.80 for 5% / 80%
    delta: float | None = None
    needed: int | None = None
    observed: float | None = None
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def power(
    diff: np.ndarray | None = None,
    *,
    sd: float | None = None,
    n: int | None = None,
    delta: float | None = None,
    alpha: float = 0.05,
    power: float = 0.80,
) -> Power:
    """Paired standard deviation ``s`` of per-query differences, ``se = s / sqrt(n)``, the minimum
    detectable difference ``(z_(1-alpha/2) + z_power) * se`` and, for a target ``delta``, the
    queries needed: ``n >= ((z_(1-alpha/2) + z_power) * s / delta)^2`` (2.80 at 5% / 80%).

    Give either the differences ``diff`` (from two runs) or ``sd`` and ``n``.
    Reference: Sakai, "Topic set size design", Information Retrieval Journal 19, 2016.
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1, not {alpha!r}")
    if not 0 < power < 1:
        raise ValueError(f"power must be between 0 and 1, not {power!r}")
    observed = None
    if diff is not None:
        diff = np.asarray(diff, dtype=np.float64)
        if len(diff) < 2:
            raise ValueError("diff: needs at least 2 paired queries")
        sd = float(np.std(diff, ddof=1))
        n = len(diff) if n is None else n
        observed = float(np.mean(diff))
    if sd is None or n is None:
        raise ValueError("sd, n: give two runs, or both --sd-diff and --queries")
    if sd < 0 or not math.isfinite(sd):
        raise ValueError(f"sd must be a non-negative number, not {sd!r}")
    if n < 2:
        raise ValueError(f"n must be at least 2, not {n!r}")
    z = float(sps.norm.ppf(1 - alpha / 2) + sps.norm.ppf(power))
    se = sd / math.sqrt(n)
    out = Power(n=int(n), sd=sd, se=se, mdd=z * se, alpha=alpha, power=power, multiplier=z, observed=observed)
    target = delta if delta is not None else (abs(observed) if observed else None)
    if delta is not None and not delta > 0:
        raise ValueError(f"delta must be positive, not {delta!r}")
    if target:
        out.delta = float(target)
        out.needed = max(2, math.ceil((z * sd / target) ** 2))
    out.notes.append(
        "winner's curse: a delta that only just reached (or just missed) significance is likely an "
        "overestimate of the true effect; plan the query count for a smaller delta"
    )
    return out


# ---------------------------------------------------------------------------------------------
# noise floor


@dataclass
class Noise:
    """Repeated runs of one configuration."""

    metric: str
    runs: list[str]
    means: list[float]
    sd: float
    range: float
    threshold: float
    null_low: float
    null_high: float
    null_delta: float
    null_ok: bool
    n: int
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def _align(scores: Sequence[QueryScores], qids: Iterable[str] | None = None) -> tuple[list[str], np.ndarray]:
    """Queries that have a value in every arm, and the (queries x arms) value matrix."""
    common = set(scores[0].qids)
    for s in scores[1:]:
        common &= set(s.qids)
    if qids is not None:
        common &= set(qids)
    order = sorted(common)
    maps = [s.as_dict() for s in scores]
    return order, np.array([[m[q] for m in maps] for q in order]).reshape(len(order), len(scores))


def noise(scores: Sequence[QueryScores], *, resamples: int = 10_000, seed: int = 0, level: float = 0.95) -> Noise:
    """Noise floor of repeated runs of one configuration.

    ``sd`` and ``range`` of the runs' means; ``threshold = 1.96 * sqrt(2) * sd``, the difference two
    single runs of one configuration stay within 95% of the time: a change whose delta is below it
    has not been shown to move the metric. The null arm (the first two runs, paired bootstrap)
    must have an interval containing 0; ``null_ok`` is False, with a note, when it does not.
    """
    if len(scores) < 2:
        raise ValueError("scores: the noise floor needs at least 2 repeated runs")
    metric = str(scores[0].metric)
    if any(str(s.metric) != metric for s in scores):
        raise ValueError("scores: every run must be scored with the same metric")
    qids, x = _align(scores)
    if len(qids) < 2:
        raise ValueError("scores: the runs share fewer than 2 scored queries")
    means = x.mean(axis=0)
    sd = float(np.std(means, ddof=1))
    rng_ = float(means.max() - means.min())
    threshold = float(sps.norm.ppf(0.5 + level / 2) * math.sqrt(2) * sd)
    d = x[:, 1] - x[:, 0]
    reps = bootstrap_replicates(d, resamples=resamples, seed=seed)
    lo, hi = interval(reps, level=level)
    ok = lo <= 0 <= hi
    notes = []
    if not ok:
        notes.append(
            f"NULL ARM FAILED: two runs of one configuration ({scores[0].run}, {scores[1].run}) differ "
            f"beyond chance (interval [{lo:+.4f}, {hi:+.4f}] excludes 0). Comparisons of this system "
            "are not trustworthy until the cause (non-determinism, index rebuilds, caching) is found."
        )
    return Noise(metric=metric, runs=[s.run for s in scores], means=means.tolist(), sd=sd, range=rng_,
                 threshold=threshold, null_low=lo, null_high=hi, null_delta=float(d.mean()), null_ok=ok,
                 n=len(qids), notes=notes)


# ---------------------------------------------------------------------------------------------
# sweep


@dataclass
class SweepRow:
    run: str
    rank: int
    tune: float
    holdout: float | None = None
    gap: float | None = None


@dataclass
class Sweep:
    metric: str
    n_tune: int
    n_holdout: int
    configs: int
    noise_se: float  # standard error of one configuration's tune mean around the others
    optimism: float  # expected excess of the best-of-N tune mean over its true value
    rows: list[SweepRow]
    simulations: int
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def sweep(
    scores: Sequence[QueryScores],
    *,
    queries: Mapping[str, QueryRow],
    tune: str = "tune",
    holdout: str = "holdout",
    top: int = 3,
    simulations: int = 2_000,
    seed: int = 0,
) -> Sweep:
    """Rank configurations by their mean on the ``tune`` split, estimate the optimism of picking
    the best of N, and re-measure only the ``top`` best on the ``holdout`` split.

    Optimism: under the null that all N configurations are equally good, the tune means scatter
    around their true values by query sampling alone. Each configuration's per-query values are
    centred on its own mean; bootstrap resamples of the tune queries (keeping the configurations'
    correlation) give N noisy means, of which the largest is taken; the average of that maximum
    over ``simulations`` is the expected optimism of the winner (Cawley & Talbot, "On over-fitting
    in model selection", JMLR 2010, for the phenomenon).
    """
    if len(scores) < 2:
        raise ValueError("scores: a sweep needs at least 2 configurations")
    if not any(r.split for r in queries.values()):
        raise ValueError("queries: the queries file has no 'split' field; run `golden split` and export again")
    tune_q = [q for q, r in queries.items() if r.split == tune]
    hold_q = [q for q, r in queries.items() if r.split == holdout]
    qt, xt = _align(scores, tune_q)
    qh, xh = _align(scores, hold_q)
    if len(qt) < 2:
        raise ValueError(f"queries: fewer than 2 scored queries in the {tune!r} split")
    if len(qh) < 2:
        raise ValueError(f"queries: fewer than 2 scored queries in the {holdout!r} split")
    means = xt.mean(axis=0)
    order = np.argsort(-means, kind="stable")
    centred = xt - means
    se = float(np.sqrt(np.mean(np.var(centred - centred.mean(axis=1, keepdims=True), axis=0, ddof=1)) / len(qt)))
    reps = bootstrap_replicates(centred, resamples=max(100, simulations), seed=seed)
    optimism = float(reps.max(axis=1).mean())
    hmeans = xh.mean(axis=0)
    rows = []
    for rank, i in enumerate(order, 1):
        row = SweepRow(run=scores[i].run, rank=rank, tune=float(means[i]))
        if rank <= top:
            row.holdout = float(hmeans[i])
            row.gap = row.tune - row.holdout
        rows.append(row)
    notes = [
        f"the best of {len(scores)} configurations is expected to look {optimism:.4f} better on the tune "
        "split than it is, from query noise alone"
    ]
    return Sweep(metric=str(scores[0].metric), n_tune=len(qt), n_holdout=len(qh), configs=len(scores),
                 noise_se=se, optimism=optimism, rows=rows, simulations=max(100, simulations), notes=notes)


# ---------------------------------------------------------------------------------------------
# 2x2 attribution


@dataclass
class Effect:
    name: str
    delta: float
    low: float
    high: float


@dataclass
class Attribution:
    metric: str
    names: dict  # cell -> run name, cells "00", "10", "01", "11"
    means: dict  # cell -> mean
    n: int
    effects: list[Effect]
    level: float
    resamples: int
    seed: int

    def as_dict(self) -> dict:
        return asdict(self)


def attribute(
    base: QueryScores,
    a_only: QueryScores,
    b_only: QueryScores,
    both: QueryScores,
    *,
    a_name: str = "A",
    b_name: str = "B",
    resamples: int = 10_000,
    seed: int = 0,
    level: float = 0.95,
) -> Attribution:
    """A 2x2 of two changes on the same queries: each main effect under each state of the other,
    and the interaction computed both ways (they agree: both equal x11 - x10 - x01 + x00), each
    with a paired bootstrap interval (one set of resamples for all effects)."""
    qids, x = _align([base, a_only, b_only, both])
    if len(qids) < 2:
        raise ValueError("the four runs share fewer than 2 scored queries")
    x00, x10, x01, x11 = x.T
    cols = {
        f"{a_name} with {b_name} off": x10 - x00,
        f"{a_name} with {b_name} on": x11 - x01,
        f"{b_name} with {a_name} off": x01 - x00,
        f"{b_name} with {a_name} on": x11 - x10,
        f"interaction ({a_name} on minus {a_name} off, of {b_name}'s effect)": (x11 - x10) - (x01 - x00),
        f"interaction ({b_name} on minus {b_name} off, of {a_name}'s effect)": (x11 - x01) - (x10 - x00),
    }
    mat = np.column_stack(list(cols.values()))
    reps = bootstrap_replicates(mat, resamples=resamples, seed=seed)
    effects = []
    for j, name in enumerate(cols):
        lo, hi = np.percentile(reps[:, j], [50 * (1 - level), 50 * (1 + level)])
        effects.append(Effect(name, float(mat[:, j].mean()), float(lo), float(hi)))
    cells = {"00": base, "10": a_only, "01": b_only, "11": both}
    return Attribution(
        metric=str(base.metric), names={c: s.run for c, s in cells.items()},
        means={c: float(x[:, i].mean()) for i, c in enumerate(cells)}, n=len(qids), effects=effects,
        level=level, resamples=resamples, seed=seed,
    )
