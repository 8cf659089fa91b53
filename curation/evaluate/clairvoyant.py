"""What any judging order could save: the fewest pairs whose labels settle a comparison.

A reference for the decisive order (``bench/bench_decisive.py --lower-bound``), not a feature:
everything here KNOWS the labels (``truth``). For one comparison with a significant fully judged
verdict (nDCG@k, oriented so that the verdict is "B higher"; "B lower" swaps the runs), the
guarantee of :mod:`curation.evaluate.settle` settles once the bootstrap's low end of the per-query
worst cases ``lo_q(S_q)`` is above 0, ``S_q`` the judged pairs of query q. Two questions:

* **the least judged set that settles** (from above: :func:`clairvoyant_settling_set`, a concrete
  set, checked with the real bounds and settlement), and
* **a proof that no smaller set can** (from below: :func:`settlement_lower_bound_of`).

Both rest on each query's curve ``f_q(j) = max over sets S of j of its pairs of lo_q(S)``: the
percentile is monotone in every query's end, so a set settles only if ``sum_q j_q`` pairs with ends
``f_q(j_q)`` do, and a settling set can be built from the maximisers of each query.

**Per query, exactly** (:func:`query_curves`). ``lo_q(S)`` only rises as pairs are judged. Exchange
lemma: let pairs u and v of one query have the same true grade t, S judge u but not v, and S' = S
- u + v. Map each completion of S' (u gets grade g) to the completion of S giving v the grade g:
the multiset of grades, hence the ideal DCG, is the same, and the DCG difference changes by
``(c_u - c_v) (t - g)`` (``c`` = disc_B - disc_A, the pair's weight in the difference). When that
is <= 0 for every g, each completion of S' has a completion of S no higher, so
``lo_q(S) <= lo_q(S')``. For t = 0 it holds whenever ``c_v <= c_u``, for t = max grade whenever
``c_v >= c_u``, for an intermediate grade when ``c_u = c_v``. So some maximiser of ``f_q(j)``
judges, of the pairs of grade 0, those of lowest ``c`` (the ones A ranks highest) first; of the
top grade, those of highest ``c`` first; and of an intermediate grade any number of each group of
equal ``c``. Enumerating those sets (prefix lengths per grade, counts per group) and computing
``lo_q`` of each with :func:`~curation.evaluate.settle.query_bounds` gives ``f_q`` exactly (tested
against every subset of small pools). When a query has more such sets than ``limit``, the
intermediate-grade groups of smallest ``|c|`` are judged *for free*: that can only raise the end
(an upper curve, still a proof) and the query is flagged inexact; the achievable curve then judges
a prefix of those groups (largest ``|c|`` first), or the sets the upper curve uses with free
pairs dropped one at a time (the one whose loss lowers the end least), and pays for it.

**Across queries, a set** (:func:`clairvoyant_settling_set`): a multiple-choice knapsack (one
choice of ``j_q`` per query) maximising ``sum_q w_q f_q(j_q)`` for every budget, ``w`` the mean
resample counts of the replicates around the percentile's position (the bootstrap's gradient,
refined a few times), the least budget whose choice settles found by bisection; then a local search
(drop pairs from a query, or move them between queries, while it still settles).

**Across queries, a proof** (:func:`settlement_lower_bound_of`): when the low end is > 0 at most
``low = floor((R - 1) (1 - level) / 2) + 1`` of the R replicates are <= 0, so for any set T of
replicates the ``|T| - low`` largest replicates of T sum to more than 0; that sum is at most
``sum_q phi_q(u_q)``, ``phi_q(x) = x W+_q`` for ``x >= 0`` (the sum of the ``|T| - low`` largest
resample counts of q in T), else ``x W-_q`` (the smallest), and ``u_q`` at most the upper curve at
``j_q``. The least ``sum_q j_q`` with ``sum_q phi_q > 0`` (a multiple-choice knapsack, exact by
dynamic programming over the number of pairs) bounds the judging of ANY order from below; T is
taken as the replicates lowest at the fully judged differences, of several sizes, the largest
bound kept. The relaxation (the largest counts of each query chosen apart) is what separates the
proof from the set found: the per-query parts are exact.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from curation.evaluate.settle import EPS, PoolMatrix, _disc, metric_form, percentile_ends, query_bounds

LIMIT = 3000  # sets enumerated per query (beyond: intermediate-grade groups judged for free in the upper curve)


@dataclass
class QueryCurve:
    """One query of one comparison: ``upper[j]`` >= the highest worst-case end any ``j`` of its
    pairs can give (a proof); ``achievable[j]`` the end of ``sets[j]`` (pair indices of the pool,
    at most ``j`` of them); ``exact`` when the two curves are the same (every candidate set tried)."""

    pairs: np.ndarray
    upper: np.ndarray
    achievable: np.ndarray
    sets: list
    exact: bool


def oriented(comp: tuple[int, int], verdict: str) -> tuple[int, int]:
    """The comparison with its runs ordered so that ``verdict`` reads "B higher"."""
    from curation.evaluate.settle import HIGHER, LOWER

    a, b = comp
    if verdict == LOWER:
        return b, a
    if verdict != HIGHER:
        raise ValueError("a settling set is for a significant verdict (B higher or B lower)")
    return a, b


def _sub_pool(pm: PoolMatrix, ps: np.ndarray) -> PoolMatrix:
    return PoolMatrix(qids=["q"], runs=pm.runs, pair_query=np.zeros(len(ps), dtype=np.int64),
                      docids=[pm.docids[p] for p in ps], ranks=pm.ranks[:, ps], depth=pm.depth)


def _candidate_groups(t: np.ndarray, c: np.ndarray, G: int, limit: int) -> tuple[list, list]:
    """The exchange lemma's groups of a query's pairs (true grades ``t``, effects ``c``): grade 0
    lowest ``c`` first, the top grade highest ``c`` first, each intermediate (grade, ``c``) its own
    group; and the intermediate groups judged for free in the upper curve (smallest ``|c|`` first)
    until at most ``limit`` candidate sets are left."""
    zero = np.flatnonzero(t == 0)
    zero = zero[np.argsort(c[zero], kind="stable")]  # grade 0: lowest c first
    top = np.flatnonzero(t == G)
    top = top[np.argsort(-c[top], kind="stable")]  # top grade: highest c first
    mids = []  # intermediate grades: groups of equal (grade, c), any count of each
    for g in range(1, G):
        idx = np.flatnonzero(t == g)
        cr = np.round(c[idx], 9)
        mids += [(abs(v), idx[cr == v]) for v in np.unique(cr)]
    mids.sort(key=lambda m: m[0])
    size = (len(zero) + 1) * (len(top) + 1) * int(np.prod([len(m) + 1 for _, m in mids]))
    free = []  # judged for free in the upper curve, smallest |c| first
    while size > limit and mids:
        _, m = mids.pop(0)
        free.append(m)
        size //= len(m) + 1
    return [zero, top] + [m for _, m in mids], free


def query_curve(pm: PoolMatrix, truth: np.ndarray, comp: tuple[int, int], ps: np.ndarray, G: int, k: int, *,
                limit: int = LIMIT) -> QueryCurve:
    """The curves of one query (pairs ``ps`` of the pool), comparison ``comp`` read as "B higher"
    (the module docstring: the exchange lemma's candidate sets, exact up to ``limit`` of them)."""
    a, b = comp
    disc = _disc(k)
    rA, rB = pm.ranks[a, ps], pm.ranks[b, ps]
    c = (np.where((rB >= 1) & (rB <= k), disc[np.clip(rB, 0, k)], 0.0)
         - np.where((rA >= 1) & (rA <= k), disc[np.clip(rA, 0, k)], 0.0))
    t = truth[ps]
    n = len(ps)
    groups, free = _candidate_groups(t, c, G, limit)
    combos = np.array(list(itertools.product(*[range(len(g) + 1) for g in groups])), dtype=np.int64)
    base = np.zeros((len(combos), n), dtype=bool)
    for gi, g in enumerate(groups):
        for m in range(1, len(g) + 1):
            base[combos[:, gi] >= m, g[m - 1]] = True
    prefixes = [np.zeros(0, dtype=np.int64)]  # the free groups, largest |c| first
    for g in free[::-1]:
        prefixes.append(np.concatenate([prefixes[-1], g]))
    mask = np.concatenate([base | np.isin(np.arange(n), p)[None, :] for p in prefixes])
    paid = np.tile(combos.sum(axis=1), len(prefixes))  # pairs outside the free groups
    which = np.repeat(np.arange(len(prefixes)), len(combos))
    cost = paid + np.array([len(p) for p in prefixes])[which]
    sub = _sub_pool(pm, ps)

    def ends(m):
        return query_bounds(sub, np.where(m, t[None, :], np.nan), [comp] * len(m), f"ndcg@{k}", max_grade=G).lo[:, 0]

    lo = ends(mask)
    upper = np.full(n + 1, -np.inf)
    every = which == len(prefixes) - 1  # all free groups judged, paid for the others only
    np.maximum.at(upper, paid[every], lo[every])
    upper = np.maximum.accumulate(upper)
    if free:  # more achievable sets: from each set the upper curve uses, drop free pairs one by one,
        # each time the one whose loss lowers the end least
        free_pairs = prefixes[-1]
        rows_every = np.flatnonzero(every)
        starts = np.unique([rows_every[np.argmax(np.where(paid[every] <= j, lo[every], -np.inf))]
                            for j in range(n + 1)])
        extra_m, extra_lo = [], []
        for r in starts:
            cur, left = mask[r].copy(), list(free_pairs)
            while left:
                trial = np.repeat(cur[None, :], len(left), axis=0)
                trial[np.arange(len(left)), left] = False
                e = ends(trial)
                b = int(np.argmax(e))
                cur = trial[b]
                extra_m.append(cur)
                extra_lo.append(e[b])
                left.pop(b)
        if extra_m:
            mask = np.concatenate([mask, np.array(extra_m)])
            lo = np.concatenate([lo, extra_lo])
            cost = mask.sum(axis=1)
    achievable = np.full(n + 1, -np.inf)
    arg = np.full(n + 1, -1)
    for r in np.lexsort((-lo, cost)):
        if lo[r] > achievable[cost[r]]:
            achievable[cost[r]], arg[cost[r]] = lo[r], r
    for j in range(1, n + 1):  # at most j pairs: the best of the smaller sets too
        if achievable[j - 1] >= achievable[j]:
            achievable[j], arg[j] = achievable[j - 1], arg[j - 1]
    sets = [ps[mask[r]] for r in arg]
    return QueryCurve(pairs=ps, upper=upper, achievable=achievable, sets=sets, exact=not free)


def query_curves(pm: PoolMatrix, truth: np.ndarray, comp: tuple[int, int], member: np.ndarray, G: int, *,
                 metric: str = "ndcg@10", limit: int = LIMIT) -> list[QueryCurve]:
    """:func:`query_curve` of every query of the pool ``member`` (comparison read as "B higher")."""
    name, k = metric_form(metric, pm.depth)
    if name != "ndcg":
        raise ValueError("the per-query curves are for ndcg@k")
    return [query_curve(pm, truth, comp, np.flatnonzero(member & (pm.pair_query == q)), G, k, limit=limit)
            for q in range(len(pm.qids))]


def _knapsack(values: list[np.ndarray], budget: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """``best[B]`` = the largest ``sum_q values[q][j_q]`` with ``sum_q j_q = B`` (-inf if none),
    and the choice of each query for each budget (for :func:`_backtrack`)."""
    best = np.full(budget + 1, -np.inf)
    best[0] = 0.0
    choices = []
    for val in values:
        new = np.full(budget + 1, -np.inf)
        arg = np.zeros(budget + 1, dtype=np.int64)
        for j in range(min(len(val), budget + 1)):
            cand = np.full(budget + 1, -np.inf)
            cand[j:] = best[:budget + 1 - j] + val[j]
            better = cand > new
            new[better], arg[better] = cand[better], j
        best = new
        choices.append(arg)
    return best, choices


def _backtrack(choices: list[np.ndarray], budget: int) -> np.ndarray:
    js = np.zeros(len(choices), dtype=np.int64)
    for q in range(len(choices) - 1, -1, -1):
        js[q] = choices[q][budget]
        budget -= js[q]
    return js


class _Choice:
    """A choice of ``j_q`` per query along the curves, with its replicates kept up to date."""

    def __init__(self, counts: np.ndarray, curves: list[np.ndarray], js, level: float):
        self.counts, self.curves, self.n = counts, curves, len(curves)
        self.js = np.asarray(js, dtype=np.int64).copy()
        self.x = np.array([c[j] for c, j in zip(curves, self.js)])
        self.v = counts @ self.x
        pos = (counts.shape[0] - 1) * (1 - level) / 2
        self.i, self.frac = int(np.floor(pos)), pos - np.floor(pos)

    def low(self, v=None) -> float:
        v = self.v if v is None else v
        part = np.partition(v, [self.i, self.i + 1])
        return float(part[self.i] + self.frac * (part[self.i + 1] - part[self.i])) / self.n

    def settles(self, v=None) -> bool:
        return self.low(v) > 10 * EPS

    def try_moves(self, moves) -> bool:
        v = self.v.copy()
        for q, j in moves:
            v += self.counts[:, q] * (self.curves[q][j] - self.x[q])
        if not self.settles(v):
            return False
        for q, j in moves:
            self.js[q], self.x[q] = j, self.curves[q][j]
        self.v = v
        return True

    def gradient(self, width: int = 201) -> np.ndarray:
        """Mean resample counts of the ``width`` replicates around the percentile's position."""
        order = np.argsort(self.v, kind="stable")
        return self.counts[order[max(0, self.i - width // 2): self.i + width // 2 + 1]].mean(axis=0)


def _plateau_starts(curve: np.ndarray) -> np.ndarray:
    """For each j, the least j' with ``curve[j'] == curve[j]`` (judging fewer costs nothing)."""
    out = np.arange(len(curve))
    for j in range(1, len(curve)):
        if curve[j] <= curve[j - 1]:
            out[j] = out[j - 1]
    return out


def least_settling_choice(curves: list[np.ndarray], counts: np.ndarray, *, level: float = 0.95,
                          widths=(51, 201, 801), rounds: int = 5) -> np.ndarray | None:
    """A choice of ``j_q`` per query (few pairs in all) whose ends ``curves[q][j_q]`` settle the
    comparison, or None if judging everything does not: the knapsack against the bootstrap's
    gradient (refined ``rounds`` times from each ``width``), then the local search."""
    budget = sum(len(c) - 1 for c in curves)
    if not _Choice(counts, curves, [len(c) - 1 for c in curves], level).settles():
        return None
    best = None
    for width in widths:
        w = np.ones(len(curves))
        for _ in range(rounds):
            _, choices = _knapsack([w[q] * c for q, c in enumerate(curves)], budget)
            if not _Choice(counts, curves, _backtrack(choices, budget), level).settles():
                break
            lo_b, hi_b = 0, budget
            while lo_b < hi_b:
                mid = (lo_b + hi_b) // 2
                if _Choice(counts, curves, _backtrack(choices, mid), level).settles():
                    hi_b = mid
                else:
                    lo_b = mid + 1
            ch = _Choice(counts, curves, _backtrack(choices, hi_b), level)
            if best is None or ch.js.sum() < best.js.sum():
                best = ch
            w = ch.gradient(width)
    if best is None:  # the knapsack's weights never led anywhere: start from everything judged
        best = _Choice(counts, curves, [len(c) - 1 for c in curves], level)
    return _local_search(best).js


def _local_search(ch: _Choice, rounds: int = 50, tries: int = 400) -> _Choice:
    """Drop pairs from a query while the choice still settles (largest savings first); then move
    pairs between queries (fewer in all), the moves the bootstrap's gradient favours tried first."""
    starts = [_plateau_starts(c) for c in ch.curves]
    for q in range(ch.n):
        ch.js[q] = starts[q][ch.js[q]]

    def lower(q):
        j = ch.js[q] - 1
        while j >= 0:
            j = starts[q][j]
            yield j
            j -= 1

    for _ in range(rounds):
        improved = False
        drops = sorted(((ch.js[q] - j, q, j) for q in range(ch.n) for j in lower(q)), reverse=True)
        for _s, q, j in drops:
            if ch.js[q] > j and ch.try_moves([(q, j)]):
                improved = True
        w = ch.gradient()
        downs = [(q, j, ch.js[q] - j, w[q] * (ch.x[q] - ch.curves[q][j])) for q in range(ch.n) for j in lower(q)]
        ups = sorted(((q, j, j - ch.js[q], w[q] * (c[j] - ch.x[q])) for q, c in enumerate(ch.curves)
                      for j in range(ch.js[q] + 1, len(c)) if c[j] > c[j - 1]), key=lambda u: u[2])
        swaps = []
        for q, j, saved, loss in downs:
            for p, i, spent, gain in ups:
                if spent >= saved:
                    break
                if p != q and gain >= 0.7 * loss:
                    swaps.append((saved - spent, gain - loss, q, j, p, i))
        swaps.sort(key=lambda s: (-s[0], -s[1]))
        moved = set()
        for _gain, _net, q, j, p, i in swaps[:tries]:
            if q in moved or p in moved or ch.js[q] <= j:
                continue
            if ch.try_moves([(q, j), (p, i)]):
                improved = True
                moved |= {q, p}
        if not improved:
            break
    return ch


def clairvoyant_settling_set(pm: PoolMatrix, truth: np.ndarray, comp: tuple[int, int], metric: str,
                             counts: np.ndarray, verdict: str, member: np.ndarray, G: int, *,
                             level: float = 0.95, limit: int = LIMIT,
                             curves: list[QueryCurve] | None = None) -> np.ndarray:
    """A set of pairs whose labels settle the comparison on ``verdict`` (nDCG@k), as small as the
    search finds (the module docstring), checked with :func:`query_bounds` and the percentile
    (AssertionError otherwise). Pass ``curves`` (:func:`query_curves` of the oriented comparison)
    to reuse them."""
    comp_o = oriented(comp, verdict)
    if curves is None:
        curves = query_curves(pm, truth, comp_o, member, G, metric=metric, limit=limit)
    js = least_settling_choice([c.achievable for c in curves], counts, level=level)
    if js is None:
        raise ValueError("the fully judged pool does not settle this comparison")
    chosen = np.concatenate([c.sets[j] for c, j in zip(curves, js)]).astype(np.int64)
    grades = np.where(member, np.nan, 0.0)
    grades[chosen] = truth[chosen]
    lo, _ = percentile_ends(counts, query_bounds(pm, grades, [comp_o], metric, max_grade=G).lo, level, ends="low")
    assert lo[0] > EPS, "the clairvoyant set does not settle the comparison"
    return np.sort(chosen)


def settlement_lower_bound_of(upper: list[np.ndarray], counts: np.ndarray, full: np.ndarray, *,
                              level: float = 0.95, factors=(2, 4, 8, 16)) -> int:
    """The proven least number of pairs (module docstring) given each query's upper curve
    ``upper[q][j]`` and the fully judged differences ``full`` (which choose the sets T)."""
    R = counts.shape[0]
    low_count = int(np.floor((R - 1) * (1 - level) / 2)) + 1  # at most this many replicates <= 0
    budget = sum(len(u) - 1 for u in upper)
    by_value = np.argsort(counts @ full, kind="stable")
    out = 0
    for size in sorted({min(R, low_count * f) for f in factors} | {R}):
        keep = size - low_count
        srt = np.sort(counts[by_value[:size]], axis=0)
        w_plus, w_minus = srt[-keep:].sum(axis=0), srt[:keep].sum(axis=0)
        phi = [np.where(u >= 0, u * w_plus[q], u * w_minus[q]) for q, u in enumerate(upper)]
        best, _ = _knapsack(phi, budget)
        ok = np.flatnonzero(best > -1e-9)  # a margin against rounding: it can only lower the bound
        out = max(out, int(ok[0]) if len(ok) else budget)
    return out
