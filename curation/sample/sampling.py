"""Stratified sampling of queries from a search log (``golden sample queries``).

The population is the log's searches. Distinct normalised queries (see
:func:`curation.sample.logs.collapse_log`) are grouped into strata by the values of chosen columns and,
optionally, by the query's shape (question or keyword). ``size`` queries are allocated over the
strata in proportion to their traffic with a floor per stratum (:func:`allocate`), then drawn
within each stratum without replacement (:func:`draw_stratum`). Every sampled query carries the
weight it stands for in a traffic-weighted mean, so a metric averaged with these weights estimates
the mean over searches, not over distinct queries.

Library entry points::

    from curation.formats.queries import write_queries
    from curation.sample.sampling import sample_queries

    result = sample_queries("log.csv.gz", query_col="query", user_col="user",
                            strata=["market"], shape=True, size=300, floor=20, seed=7)
    for s in result.strata:          # one StratumSummary per stratum, table order
        print(s.label, s.distinct, s.share, s.allocated, s.floor_applied)
    write_queries(result.rows, "queries.jsonl")   # whole file or nothing

Each row of ``result.rows`` is a dict with, in this order: ``qid`` (``"q"`` + 12 hex digits of
the SHA-256 of the normalised text, so the same query has the same qid in every sample),
``text`` (normalised), ``stratum`` (dict dimension -> value; ``{"source": "handwritten"}`` for
hand-written queries), ``traffic`` (searches), ``users`` (distinct users, ``None`` without a user
column), ``stratum_share`` (the stratum's share of all logged traffic; 0 for hand-written),
``inclusion`` (the probability the design gave the query of being drawn), ``weight`` (what the
query stands for in a traffic-weighted mean; the weights of logged queries sum to 1; 0 for
hand-written), ``pii`` (sorted list of flags such as ``"email"``, empty when none) and, for
logged queries, ``stratum_traffic``, ``stratum_size`` and ``stratum_drawn`` (the stratum's known
totals, which an unbiased mean divides by) and, with a user column, ``user_weight`` and
``stratum_user_share`` (the same for a user-weighted mean; see :func:`sample_queries`).

One module on purpose: shapes, allocation, the draw within a stratum,
:class:`LogPool` (what the draw reads; its Dask twin must match it) and :func:`sample_queries`
are the steps of one sampling design, and the weights each row carries are
only right when they are read together; its reader and writer of query files are on their way to
``curation/formats/``.
"""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import pandas as pd

from curation.sample.draw import (
    DEFAULT_DRAW_KEY,
    DRAW_KEY_RULES,
    Drawn,
    PoolFacts,
    certain_units,
    check_draw_key,
    draw_keys,
    head_units,
    is_question,
    stratum_key,
    stratum_rng,
    systematic_points,
    traffic_counts,
    traffic_moments,
)

SAMPLE_WEIGHTINGS = ("traffic", "uniform")
UNIFORM_HEADS = ("certain", "drawn")
HANDWRITTEN_STRATUM = {"source": "handwritten"}


@dataclass(frozen=True)
class StratumSummary:
    """One line of the per-stratum table."""

    label: str  # "market=us, shape=question"; "(all)" without strata; "handwritten"
    values: dict  # dimension -> value (the row's ``stratum``)
    distinct: int  # distinct queries available (after --exclude and hand-written ones)
    traffic: int  # searches
    share: float  # share of all logged traffic
    floor: int  # the floor that applied: min(floor, distinct)
    quota: float  # exact (fractional) allocation before rounding
    allocated: int  # queries drawn
    floor_applied: bool  # True when the floor (not the traffic share) set the allocation
    short: bool  # True when the stratum had fewer distinct queries than the floor


@dataclass
class SampleResult:
    """What :func:`sample_queries` returns."""

    rows: list[dict]
    strata: list[StratumSummary]
    warnings: list[str] = field(default_factory=list)
    stats: dict = field(default_factory=dict)


# --------------------------------------------------------------------------------------------
# Allocation


@dataclass(frozen=True)
class Allocation:
    """The result of :func:`allocate`: per stratum, in the order given."""

    counts: list[int]  # queries to draw; sums to ``size``
    quotas: list[Fraction]  # exact allocation before rounding, clip(lam * traffic, floor, available)
    floors: list[int]  # min(floor, available)
    lam: Fraction  # queries per search for strata between their floor and their size


def allocate(traffic: Sequence[int], available: Sequence[int], *, size: int, floor: int = 0) -> Allocation:
    """Allocate ``size`` draws over strata in proportion to traffic, with a floor per stratum.

    Stratum *h* with traffic *T_h* and *N_h* distinct queries gets the exact quota
    ``q_h = clip(lam * T_h, min(floor, N_h), N_h)``, where ``lam`` is the one rate that makes the
    quotas sum to ``size`` (computed exactly with fractions). So a stratum above its floor gets a
    share proportional to its traffic; a stratum whose proportional share is below the floor gets
    the floor; a stratum with fewer queries than the floor gives all it has, and what it cannot
    give goes to the others in proportion to their traffic. The quotas are then rounded by the
    largest-remainder (Hamilton) method: each stratum gets ``floor(q_h)`` and the seats left go to
    the largest fractional parts (ties: more traffic first, then the earlier stratum), so the
    counts sum to exactly ``size`` and each differs from its quota by less than one
    (Balinski & Young, *Fair Representation*, 2001, ch. 2 on Hamilton's method).

    >>> allocate([900, 90, 10], [500, 50, 40], size=10, floor=2).counts
    [6, 2, 2]
    >>> allocate([5, 3, 2], [9, 9, 9], size=4).counts
    [2, 1, 1]

    Raises ValueError when the floors alone need more than ``size`` or the strata hold fewer
    than ``size`` distinct queries.
    """
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise ValueError(f"size must be a whole number >= 0, got {size!r}")
    if isinstance(floor, bool) or not isinstance(floor, int) or floor < 0:
        raise ValueError(f"floor must be a whole number >= 0, got {floor!r}")
    if len(traffic) != len(available):
        raise ValueError("traffic and available must have one entry per stratum")
    traffic = [int(t) for t in traffic]
    available = [int(a) for a in available]
    if any(t <= 0 for t in traffic):
        raise ValueError("traffic: every stratum needs traffic > 0")
    if any(a <= 0 for a in available):
        raise ValueError("available: every stratum needs at least one query")
    lows = [min(floor, a) for a in available]
    need, have = sum(lows), sum(available)
    if need > size:
        best = max((f for f in range(floor + 1) if sum(min(f, a) for a in available) <= size), default=0)
        raise ValueError(
            f"floors alone need {need} queries ({len(available)} strata with floor {floor}, or all the "
            f"queries of a smaller stratum), more than size {size}: raise size to at least {need}, lower "
            f"floor to at most {best}, or use fewer strata"
        )
    if size > have:
        raise ValueError(
            f"size {size} is more than the {have} distinct queries the strata hold: lower size to at most {have}"
        )

    def total(lam: Fraction) -> Fraction:
        return sum((min(max(lam * t, lo), hi) for t, lo, hi in zip(traffic, lows, available)), Fraction(0))

    # total() is continuous, piecewise linear and non-decreasing in lam; its kinks are where a
    # stratum leaves its floor (lo/T) or reaches its size (hi/T). Find the segment holding size.
    points = sorted(
        {Fraction(lo, t) for lo, t in zip(lows, traffic)} | {Fraction(hi, t) for hi, t in zip(available, traffic)}
    )
    lo_i, hi_i = 0, len(points) - 1
    if total(points[0]) >= size:
        lam = points[0]
    else:
        while hi_i - lo_i > 1:  # invariant: total(points[lo_i]) < size <= total(points[hi_i])
            mid = (lo_i + hi_i) // 2
            if total(points[mid]) < size:
                lo_i = mid
            else:
                hi_i = mid
        a, b = points[lo_i], points[hi_i]
        ta, tb = total(a), total(b)
        lam = a + (b - a) * (size - ta) / (tb - ta)
    quotas = [min(max(lam * t, lo), Fraction(hi)) for t, lo, hi in zip(traffic, lows, available)]
    counts = [q.numerator // q.denominator for q in quotas]
    left = size - sum(counts)
    order = sorted(range(len(quotas)), key=lambda h: (-(quotas[h] - counts[h]), -traffic[h], h))
    for h in order[:left]:
        counts[h] += 1
    return Allocation(counts=counts, quotas=quotas, floors=lows, lam=lam)


# --------------------------------------------------------------------------------------------
# Drawing within a stratum


def draw_stratum(
    traffic: Sequence[int], k: int, *, weighting: str, rng: np.random.Generator, keys: Sequence[int] | None = None,
    head: str = "certain", ranks: np.ndarray | None = None, by_key: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Draw ``k`` of a stratum's queries without replacement; return (indices, inclusion probabilities).

    ``keys`` (:func:`draw_keys` of the queries) set the order of the draw: the queries sorted by
    key, ties by text; without ``keys``, a random order from ``rng``. Ties (of keys, and of traffic
    among the largest) go in text order: the queries are given in text order, or ``ranks``
    (:func:`tie_ranks`) orders them as their texts wherever a tie is broken; ``by_key``, when
    given, is ``numpy.argsort(keys, kind="stable")`` already computed (:func:`tie_ranks` needs it too).
    ``weighting="traffic"``: a probability-proportional-to-size design. A query whose traffic
    alone is worth a draw (``k' * t_i >= T'`` over the queries not yet taken for certain,
    :func:`certain_units`) is taken with certainty; the other draws are made by systematic PPS
    sampling over the rest in key order (:func:`systematic_points`, one random start from
    ``rng``), which gives each query the inclusion probability ``pi_i = k' t_i / T'`` exactly
    whatever the order (Sarndal, Swensson & Wretman, *Model Assisted Survey Sampling*, 1992, sec.
    3.6); the random order only spreads the joint draws. ``weighting="uniform"``: with
    ``head="certain"`` (the default) the stratum's head is taken whole first (:func:`head_units`:
    a query whose traffic is at least half a draw's share, ``2 k' t_i >= T'``, while two draws are
    left), then the ``k'`` first of the others in key order, a simple random sample without
    replacement, ``pi_i = k' / N'``; with ``head="drawn"`` no head, ``pi_i = k / N``.
    Indices come back sorted.
    """
    t = np.asarray(traffic, dtype=np.int64)
    n = len(t)
    if weighting not in SAMPLE_WEIGHTINGS:
        raise ValueError(f"weighting must be one of {', '.join(SAMPLE_WEIGHTINGS)}, got {weighting!r}")
    if not 0 <= k <= n:
        raise ValueError(f"k must be between 0 and {n}, got {k}")
    if k == n:
        return np.arange(n), np.ones(n)
    if keys is None:
        keys = rng.integers(0, np.iinfo(np.int64).max, size=n, dtype=np.int64)
    keys = np.asarray(keys)
    if by_key is None:
        by_key = np.argsort(keys, kind="stable")
    tie = np.arange(n) if ranks is None else np.asarray(ranks)
    if ranks is not None and (keys[by_key][1:] == keys[by_key][:-1]).any():
        by_key = np.lexsort((tie, keys))
    if head not in UNIFORM_HEADS:
        raise ValueError(f"head must be one of {', '.join(UNIFORM_HEADS)}, got {head!r}")
    # Certainty units, largest first (ties by text): only queries with at least the k-th largest
    # traffic can be among them, so only those are sorted (the same k as sorting all).
    top = _largest(t, tie, k)
    if weighting == "uniform":
        certain = head_units(t[top], k, int(t.sum()))[0] if head == "certain" else 0
        sure = top[:certain]
        is_rest = np.ones(n, dtype=bool)
        is_rest[sure] = False
        idx = np.concatenate([sure, by_key[is_rest[by_key]][: k - certain]]).astype(np.int64)
        probs = np.concatenate([np.ones(certain), np.full(k - certain, (k - certain) / (n - certain))])
        order_out = np.argsort(idx, kind="stable")
        return idx[order_out], probs[order_out]
    certain, rest_total = certain_units(t[top], k, int(t.sum()))
    sure = top[:certain]
    m = k - certain
    chosen_rest = np.zeros(0, dtype=np.int64)
    probs_rest = np.zeros(0)
    if m:
        is_rest = np.ones(n, dtype=bool)
        is_rest[sure] = False
        rest = by_key[is_rest[by_key]]
        cum = np.cumsum(t[rest])  # integers: exact
        picks = np.searchsorted(cum, systematic_points(m, rest_total, rng), side="right")
        chosen_rest = rest[picks]
        if len(np.unique(chosen_rest)) != m:  # impossible when every t_i * m < rest_total
            raise AssertionError("systematic sampling drew a query twice")
        probs_rest = t[chosen_rest] * m / rest_total
    idx = np.concatenate([sure, chosen_rest]).astype(np.int64)
    probs = np.concatenate([np.ones(certain), probs_rest])
    order_out = np.argsort(idx, kind="stable")
    return idx[order_out], probs[order_out]


def _largest(t: np.ndarray, tie: np.ndarray, k: int) -> np.ndarray:
    """The indices of the ``k`` largest of ``t``, largest first, ties by ``tie`` (ascending): what
    ``np.lexsort((tie, -t))[:k]`` gives, sorting only the queries with at least the k-th largest."""
    n = len(t)
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    if 4 * k >= n:
        return np.lexsort((tie, -t))[:k]
    lead = np.flatnonzero(t >= _kth_largest(t, k))
    return lead[np.lexsort((tie[lead], -t[lead]))][:k]


def _kth_largest(t: np.ndarray, k: int):
    """The ``k``-th largest of ``t`` (1 <= k <= len(t)). By a full sort, not ``numpy.partition``:
    a stratum's traffic is mostly ones, and numpy's selection slows down on so many equal values
    (0.18 s against the sort's 0.008 s for a million, numpy 2.4)."""
    return np.sort(t)[len(t) - k]


def tie_ranks(texts, traffic: np.ndarray, keys: np.ndarray, k: int, by_key: np.ndarray | None = None,
              at: np.ndarray | None = None) -> np.ndarray:
    """A rank for each of a stratum's queries (``texts``, a pyarrow string array, in any order)
    that orders them as their texts do wherever :func:`draw_stratum` breaks a tie by text: among
    the queries whose traffic is at least the ``k``-th largest (the only ones among which the
    certain units and their order are chosen) and among queries of equal ``keys``. Only those are
    sorted by text (code point order, as Python's: UTF-8 bytes compare in that order); the others
    rank after them in the order given, where no tie involves them. So a stratum's draw needs no
    sort of all its texts, and gives what it gives with the texts in text order. ``by_key``: the
    keys' stable argsort, if already computed. ``at``: the queries' positions in ``texts`` when
    ``texts`` holds more than the stratum (the whole pool: no copy of the stratum's texts)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    t = np.asarray(traffic)
    n = len(t)
    lead = t >= _kth_largest(t, k) if 0 < k <= n else np.ones(n, dtype=bool)
    if by_key is None:
        by_key = np.argsort(keys, kind="stable")
    same = np.flatnonzero(keys[by_key][1:] == keys[by_key][:-1])
    lead[by_key[same]] = lead[by_key[same + 1]] = True
    first = np.flatnonzero(lead)
    order = pc.sort_indices(texts.take(pa.array(first if at is None else at[first]))).to_numpy(zero_copy_only=False)
    ranks = np.empty(n, dtype=np.int64)
    ranks[first[order]] = np.arange(len(first))
    ranks[~lead] = np.arange(len(first), n)
    return ranks


# --------------------------------------------------------------------------------------------
# Query lists (--handwritten, --exclude) and the output file


def qid_for(text: str) -> str:
    """The stable qid of a normalised query: ``"q"`` + the first 12 hex digits of its SHA-256.

    >>> qid_for("weather")
    'qe5e72beb4e3c'
    """
    return "q" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


# --------------------------------------------------------------------------------------------
# The whole command


def _label(values: Mapping) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items()) or "(all)"


def sample_queries(
    log: str | os.PathLike | Sequence[str | os.PathLike],
    *,
    query_col: str,
    size: int,
    count_col: str | None = None,
    user_col: str | None = None,
    strata: Sequence[str] = (),
    shape: bool = False,
    floor: int = 20,
    seed: int = 0,
    weighting: str = "traffic",
    head: str = "certain",
    handwritten: str | os.PathLike | None = None,
    exclude: str | os.PathLike | Sequence[str | os.PathLike] | None = None,
    progress: bool = False,
    dask=None,
    draw_key: str = DEFAULT_DRAW_KEY,
) -> SampleResult:
    """Draw a stratified sample of ``size`` distinct queries from a search log.

    Reads ``log`` (one file or several, read as one; see :func:`curation.sample.logs.collapse_log`),
    drops queries listed in ``exclude`` files and queries given in ``handwritten``, groups the
    rest into strata by ``strata`` columns and, with ``shape=True``, by :func:`query_shapes`,
    allocates ``size`` draws over the strata with :func:`allocate` (proportional to traffic,
    ``floor`` per stratum, exact total) and draws within each stratum with :func:`draw_stratum`
    (``weighting`` "traffic": probability proportional to searches; "uniform": every distinct
    query alike, after the stratum's head is taken whole unless ``head="drawn"``), seeded by
    ``seed`` and the stratum's name. Hand-written queries are added as
    their own stratum ``{"source": "handwritten"}`` with weight 0, outside ``size``.

    The weight of a logged query estimates a mean over searches: it is ``(t_i / T) / pi_i``
    (Horvitz-Thompson) under both designs. With traffic weighting that is ``stratum_share / k_h``
    for every query not taken with certainty, and a stratum's weights sum to its share exactly;
    with uniform weighting (``pi_i = k'_h / N'_h`` outside the head taken whole) it is
    ``t_i * N'_h / (k'_h * T)``, whose sum over a stratum is its share only on average (dividing
    by the traffic drawn with the head left to chance, golden's earlier uniform weight, is biased on
    Zipf-shaped traffic). So a mean must use the stratum's KNOWN share; every row carries it:
    ``stratum_traffic`` (T_h), ``stratum_size`` (N_h), ``stratum_drawn`` (k_h) and, for a uniform
    draw, ``stratum_traffic_sq`` and ``stratum_traffic_log`` (sums of t^2 and t ln t, for the
    interval: :mod:`curation.evaluate.prediction`). With a user column, ``user_weight`` is the same for a
    user-weighted mean (every user counts once, their queries sharing that unit: ``(m_i / M) /
    pi_i``, ``m_i`` the user mass from :func:`curation.sample.logs.collapse_log`), and
    ``stratum_user_share`` the stratum's share of it. ``stratum_share``: the stratum's share of the
    traffic of the queries sampled from (after ``exclude``).

    Rows come stratum by stratum (strata ordered by their values), within a stratum by traffic
    (descending) then text, hand-written last in file order. Same inputs and seed, same rows.

    ``log`` may name files, folders (every log file under them: a partitioned dataset) and glob
    patterns. ``dask`` (a scheduler address, ``local`` or ``local:N``, or a ``distributed.Client``)
    reads and groups the log on a Dask cluster (:mod:`curation.sample.distributed`): the same rows.
    ``draw_key`` names the rule of the seeded draw keys (:data:`curation.sample.draw.DRAW_KEY_RULES`):
    ``"v2"`` (the default) or ``"v1"``, the rule of golden releases before it, to reproduce their
    samples; the result's ``stats["draw_key"]`` records it.
    """
    from curation.sample.logs import collapse_log

    _check_design(weighting=weighting, head=head, seed=seed, size=size, floor=floor, draw_key=draw_key)
    strata = tuple(strata)
    if shape and "shape" in strata:
        raise ValueError("strata: a column named 'shape' clashes with shape=True; rename one")
    warnings: list[str] = []

    if dask is None:
        source = nullcontext(LogPool(collapse_log(log, query_col=query_col, count_col=count_col, user_col=user_col,
                                                  strata=strata, progress=progress, ordered=False),
                                     draw_key=draw_key))
    else:  # read, grouped and drawn on a Dask cluster, to the same rows (curation.sample.distributed)
        from curation.sample.distributed import DaskPool

        source = DaskPool(log, query_col=query_col, count_col=count_col, user_col=user_col, strata=strata,
                          seed=seed, dask=dask, draw_key=draw_key)
    with source as population:
        return _sample(population, strata=strata, shape=shape, size=size, floor=floor, seed=seed,
                       weighting=weighting, head=head, handwritten=handwritten, exclude=exclude, warnings=warnings)


def _check_design(*, weighting: str, head: str, seed, size, floor, draw_key: str) -> None:
    """The checks of :func:`sample_queries`' design arguments (a ValueError naming the argument)."""
    if weighting not in SAMPLE_WEIGHTINGS:
        raise ValueError(f"weighting must be one of {', '.join(SAMPLE_WEIGHTINGS)}, got {weighting!r}")
    if head not in UNIFORM_HEADS:
        raise ValueError(f"head must be one of {', '.join(UNIFORM_HEADS)}, got {head!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a whole number >= 0, got {seed!r}")
    check_draw_key(draw_key)
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"size must be a whole number >= 1, got {size!r}")
    if isinstance(floor, bool) or not isinstance(floor, int) or floor < 0:
        raise ValueError(f"floor must be a whole number >= 0, got {floor!r}")


class LogPool:
    """The queries of a log collapsed in this process, as :func:`sample_queries` samples them:
    :meth:`select` the pool and its strata, then :meth:`draw` in chosen strata with
    :func:`draw_stratum`. :class:`curation.sample.distributed.DaskPool` does the same on a Dask
    cluster, where the queries stay on the workers; both must give the same facts and draws."""

    def __init__(self, collapsed, draw_key: str = DEFAULT_DRAW_KEY):
        self.collapsed = collapsed
        self.draw_key = check_draw_key(draw_key)
        self.stats = collapsed.stats
        self.has_users = collapsed.has_users

    def select(self, *, excluded: set[str], hand: list[str], dims: tuple[str, ...], shape: bool) -> PoolFacts:
        q = self.collapsed.queries
        in_hand = q["text"].isin(hand).to_numpy() if hand else np.zeros(len(q), dtype=bool)
        in_excluded = q["text"].isin(list(excluded)).to_numpy() if excluded else np.zeros(len(q), dtype=bool)
        found = q.loc[in_hand]
        hand_found = dict(zip(found["text"].tolist(), zip(found["traffic"].tolist(), (
            found["users"].tolist() if self.has_users else [None] * len(found)))))
        keep = ~(in_hand | in_excluded)
        pool = q if keep.all() else q.loc[keep].reset_index(drop=True)  # no copy when nothing is left out
        # The texts stay in Arrow (no Python string per query: a log of millions of distinct
        # queries would hold ~80 bytes more a query); only the drawn ones become Python strings.
        self.texts = _arrow_strings(pool["text"])
        question = is_question(self.texts).astype(np.int8) if shape else None
        if dims:
            keys, self.members = _strata_members(pool, dims, question)
        else:
            keys, self.members = [()], [np.arange(len(pool))]
        self.traffic = pool["traffic"].to_numpy(dtype=np.int64)
        self.users = pool["users"].to_numpy(dtype=np.int64) if self.has_users else None
        self.mass = None if self.collapsed.user_mass is None else self.collapsed.user_mass[keep]
        mass = None if self.mass is None else [math.fsum(self.mass[m].tolist()) for m in self.members]
        return PoolFacts(
            distinct=len(q), logged_traffic=int(q["traffic"].sum()), excluded=int(in_excluded.sum()),
            excluded_traffic=int(q.loc[in_excluded, "traffic"].sum()), hand_in_log=int((in_hand & ~in_excluded).sum()),
            hand_found=hand_found, size=len(pool), traffic=int(self.traffic.sum()),
            mass=None if self.mass is None else math.fsum(self.mass.tolist()),
            strata=[(key, len(m), int(self.traffic[m].sum()), None if mass is None else mass[h])
                    for h, (key, m) in enumerate(zip(keys, self.members))])

    def draw(self, plans: Sequence[tuple[int, str, int]], *, weighting: str, seed: int,
             head: str = "certain") -> list[Drawn]:
        """For each (stratum, label, k) of ``plans``: its ``k`` queries drawn by :func:`draw_stratum`,
        seeded by ``seed`` and the label, in the order of :func:`draw_keys` (rule ``draw_key``)."""
        import pyarrow as pa

        out = []
        pool_keys = None  # the draw keys of the whole pool, computed once (a key needs no other query)
        for h, label, k in plans:
            idx = self.members[h]  # in any order: ties go by text (tie_ranks), never by the log's row order
            keys = ranks = by_key = None
            if k < len(idx):
                if pool_keys is None:
                    pool_keys = draw_keys(seed, self.texts, self.draw_key)
                keys = pool_keys[idx]
                by_key = np.argsort(keys, kind="stable")  # sorted once, for the ranks and the draw
                ranks = tie_ranks(self.texts, self.traffic[idx], keys, k, by_key, at=idx)
            chosen, probs = draw_stratum(self.traffic[idx], k, weighting=weighting, rng=stratum_rng(seed, label),
                                         keys=keys, head=head, ranks=ranks, by_key=by_key)
            picked = idx[chosen]
            out.append(Drawn(texts=self.texts.take(pa.array(picked)).to_numpy(zero_copy_only=False),
                             traffic=self.traffic[picked],
                             users=None if self.users is None else self.users[picked],
                             mass=None if self.mass is None else self.mass[picked], inclusion=probs,
                             moments=traffic_moments(traffic_counts(self.traffic[idx])) if weighting == "uniform"
                             else None))
        return out


def _strata_members(pool: pd.DataFrame, dims: tuple[str, ...], question: np.ndarray | None):
    """The strata of ``pool`` by its ``dims`` columns (``"shape"`` from ``question``, 1 for a
    question, when given), ordered by :func:`stratum_key`: (their keys, the positions of their
    queries, ascending), as pandas' ``groupby(dims).indices`` gives them. Each column is numbered
    by pyarrow's ``dictionary_encode`` (a few values), the numbers are combined into one small
    integer and sorted by a stable radix sort: no grouping of string columns by pandas, nor a
    string column of shapes (a second hash pass over millions of rows)."""
    import pyarrow.compute as pc

    code, levels = np.zeros(len(pool), dtype=np.int64), []
    for dim in dims:
        if dim == "shape" and question is not None:
            values, codes = ["keyword", "question"], question
        else:
            enc = pc.dictionary_encode(_arrow_strings(pool[dim]))
            if enc.indices.null_count:  # a missing value (pandas leaves such rows out): pandas' way
                return _strata_by_pandas(pool, dims, question)
            values, codes = enc.dictionary.to_pylist(), enc.indices.to_numpy(zero_copy_only=False)
        levels.append(values)
        if math.prod(len(v) for v in levels) > 1 << 16:  # too many combinations for the small integer
            return _strata_by_pandas(pool, dims, question)
        code = code * len(values) + codes
    counts = np.bincount(code, minlength=math.prod(len(v) for v in levels))
    order = np.argsort(code.astype(np.uint16), kind="stable")  # positions ascending within a code
    ends = np.cumsum(counts)
    groups = []
    for c in np.flatnonzero(counts).tolist():
        key, rest = [], c
        for values in reversed(levels):
            rest, i = divmod(rest, len(values))
            key.append(values[i])
        groups.append((stratum_key(tuple(reversed(key))), order[ends[c] - counts[c]:ends[c]]))
    groups.sort(key=lambda kv: kv[0])
    return [k for k, _ in groups], [m for _, m in groups]


def _strata_by_pandas(pool: pd.DataFrame, dims: tuple[str, ...], question: np.ndarray | None):
    """What :func:`_strata_members` gives, by pandas' ``groupby`` (many combinations, or missing values)."""
    import pyarrow as pa

    if question is not None:
        shapes = pa.DictionaryArray.from_arrays(pa.array(question), pa.array(["keyword", "question"]))
        pool = pool.assign(shape=pd.array(shapes.cast(pa.string()), dtype="string"))
    groups = sorted(pool.groupby(list(dims), sort=False).indices.items(), key=lambda kv: stratum_key(kv[0]))
    return [stratum_key(k) for k, _ in groups], [idx for _, idx in groups]


def _arrow_strings(column: pd.Series):
    """A pandas string column as one pyarrow ``string`` array (zero-copy when pandas keeps it in Arrow)."""
    import pyarrow as pa

    arr = pa.array(column.array, pa.string()) if len(column) else pa.array([], pa.string())
    return arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr


def _sample(population, *, strata, shape, size, floor, seed, weighting, handwritten, exclude, warnings,
            head="certain") -> SampleResult:
    """The rest of :func:`sample_queries`, given the log's queries (a :class:`LogPool` or a DaskPool)."""
    from curation.sample.pii import pii_flags

    st = population.stats
    _log_warnings(st, warnings)
    excluded, hand, hand_needs = _excluded_and_handwritten(exclude, handwritten, warnings)
    dims = strata + (("shape",) if shape else ())
    pf = population.select(excluded=excluded, hand=hand, dims=dims, shape=shape)
    if pf.excluded:
        warnings.append(
            f"{pf.excluded} logged queries ({pf.excluded_traffic / max(pf.logged_traffic, 1):.1%} of traffic) "
            "are in the --exclude set and were left out"
        )
    if pf.hand_in_log:
        warnings.append(f"{pf.hand_in_log} hand-written queries also occur in the log; they are sampled "
                        "only as hand-written")
    if (pool_traffic := pf.traffic) == 0:
        raise ValueError("log: no queries with traffic are left to sample from")

    values = [dict(zip(dims, key)) for key, _, _, _ in pf.strata]
    t_h = [t for _, _, t, _ in pf.strata]
    n_h = [n for _, n, _, _ in pf.strata]
    alloc = allocate(t_h, n_h, size=size, floor=floor)
    summaries, plans = _stratum_plans(values, t_h, n_h, alloc, pool_traffic, floor, warnings)

    rows: list[dict] = []
    flag_counts: dict[str, int] = {}
    mass_total = pf.mass or 0.0
    for (h, _, k), drawn in zip(plans, population.draw(plans, weighting=weighting, seed=seed, head=head)):
        vals, share, probs = values[h], t_h[h] / pool_traffic, drawn.inclusion
        t_pick = drawn.traffic
        weights = _draw_weights(t_pick, probs, t_h[h], n_h[h], k, pool_traffic, weighting)
        user_weights = user_share = None
        if drawn.mass is not None and mass_total > 0:
            user_weights = drawn.mass / mass_total / probs
            user_share = float(pf.strata[h][3] / mass_total)
        order = np.lexsort((drawn.texts, -t_pick))
        totals = _stratum_totals(t_h[h], n_h[h], k, drawn.moments)
        for j in order:
            text = drawn.texts[j]
            flags = pii_flags(text)
            for f in flags:
                flag_counts[f] = flag_counts.get(f, 0) + 1
            rows.append({
                "qid": qid_for(text), "text": text, "stratum": dict(vals), "traffic": int(t_pick[j]),
                "users": None if drawn.users is None else int(drawn.users[j]), "stratum_share": share,
                "inclusion": float(probs[j]), "weight": float(weights[j]), "pii": flags,
                **totals,
                **({} if user_weights is None else {"user_weight": float(user_weights[j]),
                                                    "stratum_user_share": user_share}),
            })
    if hand:
        summaries.append(StratumSummary(label="handwritten", values=dict(HANDWRITTEN_STRATUM), distinct=len(hand),
                                        traffic=0, share=0.0, floor=0, quota=0.0, allocated=len(hand),
                                        floor_applied=False, short=False))
        for text in hand:
            flags = pii_flags(text)
            for f in flags:
                flag_counts[f] = flag_counts.get(f, 0) + 1
            traffic, users = pf.hand_found.get(text, (0, 0))
            rows.append({
                "qid": qid_for(text), "text": text, "stratum": dict(HANDWRITTEN_STRATUM),
                "traffic": int(traffic), "users": None if not population.has_users else int(users),
                "stratum_share": 0.0, "inclusion": 1.0, "weight": 0.0, "pii": flags,
                **hand_needs.get(text, {}),  # description / narrative from a .jsonl list, passed on
            })
    qids = [r["qid"] for r in rows]
    if len(set(qids)) != len(qids):  # 48-bit hashes: would need ~16 million queries to be likely
        raise ValueError("two sampled queries share a qid prefix; please report this")
    _pii_warning(rows, flag_counts, warnings)
    stats = {
        "log_rows": st.rows, "searches": st.searches, "distinct_raw": st.distinct_raw, "distinct": pf.distinct,
        "empty_rows": st.empty_rows, "excluded": pf.excluded, "excluded_traffic": pf.excluded_traffic,
        "sampled_from": pf.size, "traffic": pool_traffic, "size": size, "handwritten": len(hand),
        "pii": dict(sorted(flag_counts.items())), "lambda": float(alloc.lam),
        "draw_key": DRAW_KEY_RULES[population.draw_key],
    }
    return SampleResult(rows=rows, strata=summaries, warnings=warnings, stats=stats)


def _stratum_totals(traffic: int, size: int, drawn: int, moments) -> dict:
    """The stratum's known totals each of its rows carries (and, for a uniform draw, its moments)."""
    out = {"stratum_traffic": traffic, "stratum_size": size, "stratum_drawn": drawn}
    if moments is not None:
        out["stratum_traffic_sq"], out["stratum_traffic_log"] = moments
    return out


def _log_warnings(st, warnings: list[str]) -> None:
    """What reading the log left out or moved, said as warnings."""
    if st.empty_rows:
        warnings.append(f"{st.empty_rows} log rows with an empty query were skipped")
    if st.zero_traffic:
        warnings.append(f"{st.zero_traffic} queries with a count of 0 searches were dropped")
    if st.multi_stratum:
        warnings.append(
            f"{st.multi_stratum} queries occur in more than one stratum; each belongs to the stratum where it "
            f"has most traffic, which moves {st.moved_searches / max(st.searches, 1):.1%} of searches out of "
            "their row's stratum (strata describe queries; a dimension that varies per search, such as device, "
            "is better left out)"
        )


def _excluded_and_handwritten(exclude, handwritten, warnings: list[str]) -> tuple[set[str], list[str], dict]:
    """The texts of the --exclude lists, the hand-written queries not excluded (each once, in file
    order) and the information needs a .jsonl list gives them; repeats and exclusions warned of."""
    from curation.formats.query_list import read_query_list, read_query_needs

    excluded: set[str] = set()
    for path in ([exclude] if isinstance(exclude, (str, os.PathLike)) else list(exclude or [])):
        texts = [text for _, text in read_query_list(path)]
        if len(set(texts)) < len(texts):
            warnings.append(f"{path}: {len(texts) - len(set(texts))} duplicate line(s) (after normalisation); "
                            "read once")
        excluded.update(texts)
    hand: list[str] = []
    hand_needs = read_query_needs(handwritten) if handwritten is not None else {}
    if handwritten is not None:
        seen: set[str] = set()
        dupes = dropped = 0
        for _, text in read_query_list(handwritten):
            if text in seen:
                dupes += 1
                continue
            seen.add(text)
            if text in excluded:
                dropped += 1
            else:
                hand.append(text)
        if dupes:
            warnings.append(f"{dupes} hand-written queries are duplicates of an earlier line (after normalisation); "
                            "kept once")
        if dropped:
            warnings.append(f"{dropped} hand-written queries are in the --exclude set and were left out")
    return excluded, hand, hand_needs


def _stratum_plans(values: list[dict], t_h: list, n_h: list, alloc: Allocation, pool_traffic: int, floor: int,
                   warnings: list[str]) -> tuple[list[StratumSummary], list[tuple]]:
    """Each stratum's summary, and the draws to make: (stratum, label, count) of those allocated any."""
    summaries: list[StratumSummary] = []
    plans = []
    for h, vals in enumerate(values):
        label = _label(vals)
        share = t_h[h] / pool_traffic
        short = n_h[h] < floor
        floor_applied = alloc.lam * t_h[h] < alloc.floors[h]
        summaries.append(StratumSummary(label=label, values=vals, distinct=n_h[h], traffic=t_h[h], share=share,
                                        floor=alloc.floors[h], quota=float(alloc.quotas[h]),
                                        allocated=alloc.counts[h], floor_applied=bool(floor_applied), short=short))
        if short:
            warnings.append(
                f"stratum {label} has only {n_h[h]} distinct queries, fewer than the floor of {floor}: all "
                f"{n_h[h]} are taken and the rest of its floor goes to the other strata"
            )
        if alloc.counts[h]:
            plans.append((h, label, alloc.counts[h]))
        elif t_h[h]:
            warnings.append(f"stratum {label} gets no queries ({share:.2%} of traffic): the weights do not cover it")
    return summaries, plans


def _draw_weights(t_pick, probs, stratum_traffic: int, stratum_size: int, k: int, pool_traffic: int,
                  weighting: str):
    """The Horvitz-Thompson weight of each query drawn in a stratum."""
    if weighting == "traffic":
        # Horvitz-Thompson (t_i / T) / pi_i: t_i / T for certainty draws, and the same
        # (T_h - certain traffic) / (T * draws left) for every other draw, computed once.
        sure = probs == 1.0
        weights = t_pick / pool_traffic
        if not sure.all():
            rest = (stratum_traffic - int(t_pick[sure].sum())) / (pool_traffic * int((~sure).sum()))
            weights = np.where(sure, weights, rest)
        return weights
    # Horvitz-Thompson (t_i / T) / pi_i: t_i / T for the head taken whole, and pi_i = k' / N'_h
    # for the others (simple random sampling of the rest).
    return t_pick / (pool_traffic * probs)


def _pii_warning(rows: list[dict], flag_counts: dict[str, int], warnings: list[str]) -> None:
    """How many sampled queries look like personal data, and of which kinds."""
    if flag_counts:
        total_flagged = sum(1 for r in rows if r["pii"])
        detail = ", ".join(f"{n} {f}" for f, n in sorted(flag_counts.items()))
        warnings.append(f"{total_flagged} sampled queries look like personal data ({detail}): check the \"pii\" field")
