"""The machine-guided decisive order: plan with the machine, judge first what the plan needs.

A machine judge's calibrated probabilities are a belief over the labels not judged yet. For each
open comparison the plan asks what the clairvoyant order (:mod:`curation.evaluate.clairvoyant`)
asks, but under that belief instead of the true labels: which pairs, once judged, raise the end
of the interval that has to cross 0 the most per pair. It is recomputed after every batch from the
human labels so far (they always replace the machine's), so a wrong belief costs pairs, never the
guarantee: settlement reads only human labels, and it holds for any order.

THE RULE, for one open comparison (:func:`plan_priorities`):

1. **Belief.** Each unjudged pair's calibrated P(grade >= 1) ``p`` and P(top grade) ``t``
   (:func:`curation.evaluate.decisive.calibrated_relevance`): its expected grade
   ``e = p + (G - 1) t`` and its most likely grade ``g`` (0, an intermediate grade or the top).
2. **Verdict to plan for.** The sign of the mean difference with every unjudged pair at ``g``
   ("B higher": the low end of the worst-case interval must rise above 0; "B lower": the high end
   must fall below 0, read as "A higher").
3. **What a label can move.** That end's worst case gives B's unjudged pairs grade 0 and A's (and
   those in neither run's top k, through the ideal DCG or the relevant count) the top grade ``w``.
   A pair moves the end when its label differs from ``w``; its expected effect is ``|c| |e - w|``,
   ``c`` its weight in the query's difference (nDCG: ``disc_B - disc_A``; AP: ``1/rank_B -
   1/rank_A``). Each query's unjudged pairs are taken in order of that effect (the pairs with
   ``c = 0`` after, the likeliest non-relevant first).
4. **Each query's curve.** The end of the query's difference with its first ``j`` pairs judged at
   ``g`` (exact bounds, :func:`curation.evaluate.settle.query_bounds`), for every ``j``.
5. **Across queries.** The upper concave hull of each curve cut into segments (a threshold that
   only pays after many pairs, as the ideal DCG's, becomes one long segment of its mean slope); a
   segment's value is its gain per pair times the query's weight in the bootstrap's end (the mean
   resample count of the replicates around the percentile, where the planned judging settles:
   twice refined). A pair's priority is the value of its segment, for the segments the plan takes,
   by value, up to where it expects the comparison to settle (:func:`_settling_prefix`); pairs no
   such segment holds get 0, so a query's planned pairs are the few it needs (and its first block,
   :func:`curation.judge.assignment.first_block`).

The plan's priorities are blended with the blind ones (:func:`machine_trust`): ``trust * plan +
(1 - trust) * blind``, each scaled to a largest value of 1, ``trust`` from how well the machine's
relevant calls agree with the human labels so far beyond chance (Cohen's kappa at a lower bound).
A machine that says nothing, or too little to beat the blind order (about 70% exact agreement or
less), gets trust 0 (the blind order); a machine the humans confirm as good gets 1 (the plan).
"""

from __future__ import annotations

import numpy as np

from curation.evaluate.settle import HIGHER, LOWER, PoolMatrix, _disc, metric_form, query_bounds

TRUST_FROM, TRUST_FULL = 0.55, 0.62  # Cohen's kappa (lower bound) on the judged pairs: no trust below, full trust above
TRUST_Z = 1.0  # standard errors off kappa for its lower bound (about 84% one-sided)
MIN_TRUST_PAIRS = 20  # judged pairs (machine-labelled) before any trust
LIMIT = 400  # prefix combinations tried per query
SAMPLES = 0  # labellings drawn from the belief per plan (:func:`sampled_plan_priorities`); 0: the most likely one alone
TIE_BREAK = 1e-6  # the blind priorities' share under full trust: they order the pairs the plan leaves out
PLAN_RESAMPLES = 2000  # the bootstrap resamples the plan reads (its weights and where it expects to settle)
NEEDED_ONLY = True  # only the segments the plan takes before it expects to settle get a priority (rule, step 5)


def belief(p_rel: np.ndarray, p_top: np.ndarray, G: int) -> tuple[np.ndarray, np.ndarray]:
    """Expected grade and most likely grade of every pair from its P(grade >= 1) and P(top grade)
    (rule, step 1; the intermediate grades lumped at 1)."""
    p = np.clip(np.asarray(p_rel, dtype=np.float64), 0, 1)
    t = np.minimum(np.clip(np.asarray(p_top, dtype=np.float64), 0, 1), p)
    if G == 1:
        return p, (p >= 0.5).astype(np.float64)
    expected = p + (G - 1) * t
    probs = np.stack([1 - p, p - t, t])  # grade 0, an intermediate grade, the top grade
    likely = np.array([0.0, 1.0, float(G)])[np.argmax(probs, axis=0)]
    return expected, likely


def machine_trust(machine_rel: np.ndarray, judged: np.ndarray, relevant: np.ndarray) -> float:
    """How much the plan is trusted, from the human labels so far: an effect size, how well the
    machine's relevant calls (P >= 0.5) agree with the humans' beyond chance (Cohen's kappa on the
    judged pairs the machine labelled), taken at a lower confidence bound (kappa minus
    :data:`TRUST_Z` standard errors, so a few lucky labels are not trusted) and mapped linearly from
    0 at :data:`TRUST_FROM` to 1 at :data:`TRUST_FULL`. 0 with fewer than :data:`MIN_TRUST_PAIRS`
    such pairs or when either side calls every pair the same. Unlike a significance, the bound does
    not grow with the number of labels: a mediocre machine stays untrusted however many are judged.
    On robust03 (lenient machine from the qrels) kappa is about 0 for a random machine, 0.27 at
    60% exact agreement, 0.38 at 70%, 0.52 at 80%, 0.72 at 90% over the whole pool, but higher on
    the pairs the decisive order judges (more of them relevant): about 0.54 at 70% and 0.63 at 80%
    once a few hundred are judged; the thresholds sit between those two."""
    k = machine_kappa(machine_rel, judged, relevant)
    if k is None or k[2] < MIN_TRUST_PAIRS:
        return 0.0
    low = k[0] - TRUST_Z * k[1]
    return float(np.clip((low - TRUST_FROM) / (TRUST_FULL - TRUST_FROM), 0.0, 1.0))


def machine_kappa(machine_rel: np.ndarray, judged: np.ndarray, relevant: np.ndarray) -> tuple | None:
    """Cohen's kappa of the machine's relevant calls (P >= 0.5) against the human binary labels on
    the judged pairs the machine labelled, its standard error (the large-sample approximation
    ``sqrt(po (1 - po) / n) / (1 - pe)``) and that number of pairs; None when there are none or
    both sides call every pair the same (kappa undefined)."""
    raw = np.asarray(machine_rel, dtype=np.float64)
    j = np.asarray(judged, dtype=bool) & ~np.isnan(raw)
    n = int(j.sum())
    if n == 0:
        return None
    says = raw[j] >= 0.5
    rel = np.asarray(relevant, dtype=bool)[j]
    m, h = says.mean(), rel.mean()
    chance = m * h + (1 - m) * (1 - h)  # agreement expected from the two sides' rates alone
    if chance >= 1:
        return None
    seen = float((says == rel).mean())
    return (seen - chance) / (1 - chance), float(np.sqrt(seen * (1 - seen) / n) / (1 - chance)), n


def _effects(pm: PoolMatrix, comp: tuple[int, int], metric: str, sign: float) -> np.ndarray:
    """Each pair's weight ``c`` in the comparison's per-query difference, oriented by ``sign``."""
    a, b = comp
    name, k = metric_form(metric, pm.depth)
    rA, rB = pm.ranks[a], pm.ranks[b]
    if name == "ndcg":
        disc = _disc(k)
        c = (np.where((rB >= 1) & (rB <= k), disc[np.clip(rB, 0, k)], 0.0)
             - np.where((rA >= 1) & (rA <= k), disc[np.clip(rA, 0, k)], 0.0))
    else:
        c = (np.where((rB >= 1) & (rB <= k), 1.0 / np.maximum(rB, 1), 0.0)
             - np.where((rA >= 1) & (rA <= k), 1.0 / np.maximum(rA, 1), 0.0))
    return sign * c


def _sub_pool(pm: PoolMatrix, comp: tuple[int, int], queries) -> tuple[PoolMatrix, np.ndarray]:
    """The pool restricted to ``queries`` and the comparison's two runs (compared as (0, 1)), and the
    pair indices it keeps: a query's bounds depend on its own pairs only."""
    ps = np.flatnonzero(np.isin(pm.pair_query, np.asarray(list(queries), dtype=np.int64)))
    local = np.searchsorted(np.asarray(sorted(queries), dtype=np.int64), pm.pair_query[ps])
    sub = PoolMatrix(qids=[pm.qids[q] for q in sorted(queries)], runs=[pm.runs[comp[0]], pm.runs[comp[1]]],
                     pair_query=local, docids=[pm.docids[p] for p in ps], ranks=pm.ranks[list(comp)][:, ps],
                     depth=pm.depth)
    return sub, ps


def _cached(cache: dict, keys: dict, compute) -> dict:
    """``keys`` (query -> cache key): the cached value of each, the missing ones from ``compute``
    (a function of the queries missing, giving query -> value) and stored."""
    missing = [q for q, key in keys.items() if key not in cache]
    if missing:
        for q, v in compute(missing).items():
            cache[keys[q]] = v
    return {q: cache[key] for q, key in keys.items()}


def planned_verdict(pm: PoolMatrix, grades: np.ndarray, likely: np.ndarray, comp, metric: str, G: int,
                    cache: dict | None = None) -> str:
    """The verdict the plan is for (rule, step 2): "B higher" or "B lower", by the sign of the mean
    difference with every unjudged pair at its most likely grade ("B higher" at 0)."""
    filled = np.where(np.isnan(grades), likely, grades)
    by_q = _query_pairs(pm)
    keys = {q: ("d", comp, metric, filled[ps].tobytes()) for q, ps in enumerate(by_q)}

    def compute(queries):
        sub, ps = _sub_pool(pm, comp, queries)
        d = query_bounds(sub, filled[ps], [(0, 1)], metric, max_grade=G).lo[0]
        return dict(zip(sorted(queries), d))

    d = _cached({} if cache is None else cache, keys, compute)
    return LOWER if sum(d.values()) < 0 else HIGHER


def _query_pairs(pm: PoolMatrix) -> list[np.ndarray]:
    order = np.argsort(pm.pair_query, kind="stable")
    cuts = np.searchsorted(pm.pair_query[order], np.arange(len(pm.qids) + 1))
    return [order[cuts[q]:cuts[q + 1]] for q in range(len(pm.qids))]


def _query_groups(pm: PoolMatrix, todo: np.ndarray, c: np.ndarray, likely: np.ndarray, G: int) -> list:
    """Each query's unjudged pairs in three lists by planned grade (rule, step 3): grade 0 by ``c``
    ascending (A's first), the intermediate grades by ``|c|`` descending, the top grade by ``c``
    descending (B's first): the exchange lemma of :mod:`curation.evaluate.clairvoyant` says a best
    set of a query takes a prefix of the first and of the last."""
    out = []
    for ps in _query_pairs(pm):
        ps = ps[todo[ps]]
        t = likely[ps]
        zero, top = ps[t == 0], ps[t >= G]
        mid = ps[(t > 0) & (t < G)]
        out.append((zero[np.argsort(c[zero], kind="stable")], mid[np.argsort(-np.abs(c[mid]), kind="stable")],
                    top[np.argsort(-c[top], kind="stable")]))
    return out


def _combos(groups, limit: int) -> np.ndarray:
    """Prefix lengths (rows) of the three lists to try: every combination, or when there are more
    than ``limit`` the lists' lengths thinned to evenly spaced steps."""
    sizes = [len(g) for g in groups]
    steps = [np.arange(s + 1) for s in sizes]
    while np.prod([len(x) for x in steps]) > limit:
        i = int(np.argmax([len(x) for x in steps]))
        x = steps[i]
        steps[i] = np.unique(np.concatenate([x[::2], x[-1:]]))
    grids = np.meshgrid(*steps, indexing="ij")
    return np.stack([g.ravel() for g in grids], axis=1)


def _query_curve(pm: PoolMatrix, grades, likely, groups, comp, metric: str, G: int, verdict: str, q: int,
                 limit: int) -> tuple[np.ndarray, list]:
    """One query's curve and sets (:func:`_curves`), on the pool of that query alone."""
    sub, ps = _sub_pool(pm, comp, [q])
    where = np.full(pm.n_pairs, -1, dtype=np.int64)
    where[ps] = np.arange(len(ps))
    combos = _combos(groups, limit)
    rows = np.repeat(grades[ps][None, :], len(combos), axis=0)
    picks = []
    for i, row in enumerate(combos):
        chosen = np.concatenate([g[:m] for g, m in zip(groups, row)]).astype(np.int64)
        rows[i, where[chosen]] = likely[chosen]
        picks.append(chosen)
    b = query_bounds(sub, rows, [(0, 1)] * len(rows), metric, max_grade=G)
    end = (b.lo if verdict == HIGHER else -b.hi)[:, 0]
    n = sum(len(g) for g in groups)
    curve, sets = np.full(n + 1, -np.inf), [None] * (n + 1)
    for i, chosen in enumerate(picks):
        j = len(chosen)
        if end[i] > curve[j]:
            curve[j], sets[j] = end[i], chosen
    for j in range(1, n + 1):  # at most j pairs: a smaller set may be better
        if curve[j - 1] >= curve[j]:
            curve[j], sets[j] = curve[j - 1], sets[j - 1]
    return curve, sets


def _curves(pm: PoolMatrix, grades: np.ndarray, likely: np.ndarray, groups: list, comp, metric: str, G: int,
            verdict: str, cache: dict | None = None, limit: int = LIMIT) -> list[tuple[np.ndarray, list]]:
    """Each query's curve (rule, step 4): for ``j`` of its unjudged pairs judged at their planned
    grade, the best settling end (oriented: larger is better) over the prefixes of its three lists
    (:func:`_query_groups`) of ``j`` pairs in all, and that set of pairs. Cached under the query's
    labels and plan (only the queries judged since, or replanned, are computed)."""
    by_q = _query_pairs(pm)
    keys = {q: ("c", comp, metric, verdict, grades[by_q[q]].tobytes(),
                *(g.tobytes() for g in groups[q]), likely[by_q[q]].tobytes()) for q in range(len(pm.qids))}

    def compute(queries):
        return {q: _query_curve(pm, grades, likely, groups[q], comp, metric, G, verdict, q, limit) for q in queries}

    got = _cached({} if cache is None else cache, keys, compute)
    return [got[q] for q in range(len(pm.qids))]


def _hull_segments(curves: list[np.ndarray]) -> list[tuple[float, int, int, int]]:
    """(slope, query, j, j2) along each query's upper concave hull from ``j = 0``, rising parts only."""
    segments = []
    for q, curve in enumerate(curves):
        m, j = len(curve) - 1, 0
        while j < m:
            gains = (curve[j + 1:m + 1] - curve[j]) / np.arange(1, m - j + 1)
            s = len(gains) - 1 - int(np.argmax(gains[::-1]))  # the longest step of the best slope
            if gains[s] <= 1e-12:
                break
            segments.append((float(gains[s]), q, j, j + s + 1))
            j += s + 1
    return segments


def _bootstrap_weights(counts: np.ndarray, curves: list[np.ndarray], segments: list, level: float,
                       rounds: int = 2, width: int = 101, resamples: int = PLAN_RESAMPLES) -> np.ndarray:
    """Each query's weight in the bootstrap's end where the planned judging settles (rule, step 5):
    the mean resample counts of the ``width`` replicates around the percentile's position, at the
    first prefix of the segments (largest value first) whose low end is above 0 (found by
    bisection, :func:`_settling_prefix`; the whole plan when none is), over the first ``resamples``
    resamples."""
    counts = counts[:resamples]
    R, n = counts.shape
    pos = int((R - 1) * (1 - level) / 2)
    weight = np.ones(n)
    if not segments:
        return weight
    for _ in range(rounds):
        _t, reps = _settling_prefix(counts, curves, segments, weight, level)
        near = np.argsort(np.abs(np.argsort(np.argsort(reps)) - pos))[:width]
        weight = counts[near].mean(axis=0)
    return weight


def _settling_prefix(counts: np.ndarray, curves: list[np.ndarray], segments: list, weight: np.ndarray,
                     level: float) -> tuple[int, np.ndarray]:
    """How many of the segments, by value (slope times the query's ``weight``) first, the planned
    judging takes before the bootstrap's low end is above 0 (bisection; all of them when it never
    is), and the replicates there."""
    R, n = counts.shape
    pos = int((R - 1) * (1 - level) / 2)
    width_q = max(len(c) for c in curves)
    table = np.array([np.pad(c, (0, width_q - len(c)), mode="edge") for c in curves])  # (n, width)
    seg = np.array([(q, j2) for _s, q, _j, j2 in segments], dtype=np.int64)
    slope = np.array([s for s, *_ in segments])
    order = np.argsort(-slope * weight[seg[:, 0]], kind="stable")

    def reps_at(t):
        jj = np.zeros(n, dtype=np.int64)
        np.maximum.at(jj, seg[order[:t], 0], seg[order[:t], 1])
        return counts @ table[np.arange(n), jj] / n

    lo_t, hi_t = 0, len(order)
    while lo_t < hi_t:
        mid = (lo_t + hi_t) // 2
        if np.partition(reps_at(mid), pos)[pos] > 0:
            hi_t = mid
        else:
            lo_t = mid + 1
    return lo_t, reps_at(lo_t)


def sampled_grades(p_rel: np.ndarray, p_top: np.ndarray, draws: np.ndarray, G: int) -> np.ndarray:
    """One labelling drawn from the belief: grade 0 where the pair's uniform draw (``draws``, in
    [0, 1)) is at least P(grade >= 1), the top grade where it is below P(top grade), an intermediate
    grade (1) between. The draws are fixed per pair for a whole replay or queue (common random
    numbers), so a small change of the calibrated figures changes few planned grades and the
    cached curves of the other queries still serve."""
    p = np.clip(np.asarray(p_rel, dtype=np.float64), 0, 1)
    t = np.minimum(np.clip(np.asarray(p_top, dtype=np.float64), 0, 1), p)
    if G == 1:
        return (draws < p).astype(np.float64)
    return np.where(draws < t, float(G), np.where(draws < p, 1.0, 0.0))


def plan_draws(n_pairs: int, seed: int = 0, samples: int | None = None) -> np.ndarray:
    """The fixed uniform draws (``samples`` x ``n_pairs``, default :data:`SAMPLES`) of
    :func:`sampled_grades`, seeded. No rows: the plan for the most likely labelling alone."""
    return np.random.default_rng([seed, 31]).random((SAMPLES if samples is None else samples, n_pairs))


def sampled_plan_priorities(pm: PoolMatrix, grades: np.ndarray, member: np.ndarray, comp: tuple[int, int],
                            metric: str, counts: np.ndarray, p_rel: np.ndarray, p_top: np.ndarray, *, G: int,
                            draws: np.ndarray, level: float = 0.95, cache: dict | None = None) -> np.ndarray:
    """The plan over labellings drawn from the machine's belief (rule, step 1 with samples): the
    mean over the rows of ``draws`` of :func:`plan_priorities` planned on that row's labelling
    (:func:`sampled_grades`), each scaled to a largest value of 1. A pair the plan needs in a share
    ``s`` of the labellings gets about ``s`` times its value: a relevant-looking pair of B's that the
    machine calls relevant one time in three is asked for, where the most likely labelling (grade 0)
    would never plan it."""
    if len(draws) == 0:
        return plan_priorities(pm, grades, member, comp, metric, counts, p_rel, p_top, G=G, level=level, cache=cache)
    rows = np.atleast_2d(draws)
    out = np.zeros(pm.n_pairs)
    for row in rows:
        out += _unit(plan_priorities(pm, grades, member, comp, metric, counts, p_rel, p_top, G=G, level=level,
                                     cache=cache, planned=sampled_grades(p_rel, p_top, row, G)))
    return out / max(len(rows), 1)


def open_plans(pm: PoolMatrix, grades: np.ndarray, member: np.ndarray, comps, metric: str, counts: np.ndarray,
               p_rel: np.ndarray, p_top: np.ndarray, *, G: int, draws: np.ndarray, level: float = 0.95,
               cache: dict | None = None) -> np.ndarray:
    """The plan of a queue or a replay: :func:`sampled_plan_priorities` of each open comparison of
    ``comps``, each scaled to a largest value of 1, summed (the ``plan`` that :func:`blend` takes)."""
    plan = np.zeros(pm.n_pairs)
    for comp in comps:
        plan += _unit(sampled_plan_priorities(pm, grades, member, comp, metric, counts, p_rel, p_top, G=G,
                                              draws=draws, level=level, cache=cache))
    return plan


def _unit(x: np.ndarray) -> np.ndarray:
    """``x`` scaled to a largest value of 1 (non-negative priorities; all 0 stays 0)."""
    return x / max(float(x.max()), 1e-300)


def plan_priorities(pm: PoolMatrix, grades: np.ndarray, member: np.ndarray, comp: tuple[int, int], metric: str,
                    counts: np.ndarray, p_rel: np.ndarray, p_top: np.ndarray, *, G: int,
                    level: float = 0.95, cache: dict | None = None, planned: np.ndarray | None = None) -> np.ndarray:
    """The plan's priority of every pair for one open comparison (the module docstring's rule):
    ``grades`` the human labels so far (NaN unjudged; pairs outside ``member``, the comparison's
    pool, count as judged non-relevant), ``p_rel`` / ``p_top`` the machine's calibrated
    probabilities. Judged pairs and pairs the plan does not need get 0. ``cache`` (a dict kept
    between calls for the same pool) keeps each query's figures under its labels and plan.
    ``planned``: the grades to plan for (default the most likely, :func:`belief`)."""
    grades = np.where(member, grades, 0.0)
    likely = belief(p_rel, p_top, G)[1] if planned is None else planned
    verdict = planned_verdict(pm, grades, likely, comp, metric, G, cache)
    c = _effects(pm, comp, metric, 1.0 if verdict == HIGHER else -1.0)
    groups = _query_groups(pm, member & np.isnan(grades), c, likely, G)
    got = _curves(pm, grades, likely, groups, comp, metric, G, verdict, cache)
    curves = [cv for cv, _ in got]
    segments = _hull_segments(curves)
    weight = _bootstrap_weights(counts, curves, segments, level)
    out = np.zeros(pm.n_pairs)
    ranked = sorted(segments, key=lambda x: -x[0] * weight[x[1]])
    if NEEDED_ONLY and segments:
        ranked = ranked[:max(1, _settling_prefix(counts[:PLAN_RESAMPLES], curves, segments, weight, level)[0])]
    for slope, q, _j, j2 in ranked:
        new = got[q][1][j2]
        new = new[out[new] == 0]
        out[new] = slope * weight[q]
    return out


def blend(plan: np.ndarray, blind: np.ndarray, trust: float) -> np.ndarray:
    """``trust * plan + (1 - trust) * blind``, each scaled to a largest value of 1 (a part that is 0
    everywhere stays 0); under full trust the blind part keeps :data:`TIE_BREAK` to order the pairs the
    plan leaves out. Trust 0 is the blind order exactly (its priorities scaled)."""
    def scaled(x):
        m = float(np.max(x)) if len(x) else 0.0
        return x / m if m > 0 else np.zeros_like(x)

    b = scaled(blind)
    if trust <= 0:
        return b
    return trust * scaled(plan) + (1 - trust + TIE_BREAK) * b
