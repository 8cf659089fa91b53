"""Replaying judging with a qrels file as the judges (``golden decisive simulate``, bench/bench_decisive.py).

The pool is every listed run's top ``depth`` over the qrels' queries; the "judges" give each pair its
grade in the qrels (a pair the qrels lack is not relevant). Pairs are judged in batches of
``step`` (a share of the pool) in one of three orders:

* ``shuffled``: a seeded random order of the pairs;
* ``depth``: the pairs by their best rank in the compared runs (all of rank 1 first), ties shuffled;
* ``oracle``: an order that knows the labels (:func:`oracle_sequence`), the reference for what any
  order could save (``mode="each"`` only; the CLI does not offer it);
* ``decisive``: after each batch, the priorities of :mod:`curation.evaluate.decisive` are recomputed
  and whole queries are taken, the most unsettled weight first (as ``golden judging assign --order
  decisive`` hands them to judges; ``granularity="pair"`` takes single pairs instead, the bound of
  what an order could save).

After each batch every open comparison is checked with the guarantee of
:mod:`curation.evaluate.settle`, and (optionally) with the estimate. ``mode="each"`` simulates each
comparison on its own pool (the two runs' top ``depth``), as a team comparing two systems would
pool them; ``mode="all"`` judges the pool of every run once, one order serving every comparison.

A settled verdict that the fully judged pool contradicts is a *wrong call*; for the guarantee there
can be none (same resamples, monotone replicates), and the replay checks it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from curation.evaluate.settle import (
    DEFAULT_LEVEL,
    DEFAULT_RESAMPLES,
    HIGHER,
    LOWER,
    OPEN,
    PoolMatrix,
    metric_form,
    percentile_ends,
    query_bounds,
    resample_counts,
    settle,
    verdict_of,
)

ORDERS = ("decisive", "shuffled", "depth", "oracle")  # oracle: knows the labels (a reference, not for users)
GRANULARITIES = ("block", "query", "pair")


@dataclass
class ComparisonResult:
    """One comparison's replay: its pool, the fully judged verdict, and when it settled."""

    a: str
    b: str
    pool_pairs: int
    full_verdict: str
    full_mean: float
    full_low: float
    full_high: float
    settled_share: float | None = None  # share of the pool judged when the guarantee settled it
    settled_verdict: str | None = None
    wrong: bool = False
    estimate_share: float | None = None  # share judged when the estimate said 95% sure
    estimate_verdict: str | None = None
    estimate_wrong: bool = False
    full_p: float | None = None  # two-sided p of the fully judged verdict: 2 min(P(rep <= 0), P(rep >= 0))
    full_p_adjusted: float | None = None  # corrected over the simulated comparisons (SimulationResult.correction)
    full_significant_corrected: bool = False


@dataclass
class SimulationResult:
    metric: str
    order: str
    mode: str
    granularity: str
    depth: int
    queries: int
    pool_pairs: int
    step: float
    comparisons: list[ComparisonResult] = field(default_factory=list)
    seconds_per_check: float = 0.0
    checks: int = 0
    correction: str = "holm"  # how "significant" is corrected for the number of comparisons


    def summary(self) -> dict:
        # "significant" counts the fully judged verdicts that survive the correction for the number
        # of comparisons (Holm by default, as golden stats compare of many runs); each is also
        # significant on its own, which is what the guarantee settles
        sig = [c for c in self.comparisons if c.full_verdict in (HIGHER, LOWER) and c.full_significant_corrected]
        shares = [c.settled_share if c.settled_share is not None else 1.0 for c in sig]
        est = [c.estimate_share if c.estimate_share is not None else 1.0 for c in sig]
        settled = [c for c in self.comparisons if c.settled_share is not None]
        est_stopped = [c for c in self.comparisons if c.estimate_share is not None]
        return {
            "comparisons": len(self.comparisons),
            "significant": len(sig),
            "significant_uncorrected": sum(c.full_verdict in (HIGHER, LOWER) for c in self.comparisons),
            "correction": self.correction,
            "settled": len(settled),
            "settled_of_significant": sum(1 for c in sig if c.settled_share is not None),
            "median_share_significant": float(np.median(shares)) if shares else None,
            "wrong_calls": sum(c.wrong for c in self.comparisons),
            "estimate_stopped": len(est_stopped),
            "median_estimate_share_significant": float(np.median(est)) if est else None,
            "estimate_wrong_calls": sum(c.estimate_wrong for c in self.comparisons),
        }

    def as_dict(self) -> dict:
        out = {k: v for k, v in asdict(self).items() if k != "comparisons"}
        out["summary"] = self.summary()
        out["comparisons"] = [asdict(c) for c in self.comparisons]
        return out


def _correct_full_verdicts(result: SimulationResult, counts: np.ndarray, d: np.ndarray, level: float) -> None:
    """Each fully judged verdict's two-sided p-value from the same bootstrap replicates as its
    interval (``2 min(P(rep <= 0), P(rep >= 0))``, below ``1 - level`` exactly when the percentile
    interval excludes 0, up to interpolation), and whether it survives the correction over the
    simulated comparisons (:func:`curation.evaluate.multiple.adjust`)."""
    from curation.evaluate.multiple import adjust

    reps = counts @ (np.atleast_2d(d).T / counts.shape[1])  # (R, C), as percentile_ends
    p = np.minimum(1.0, 2 * np.minimum((reps <= 0).mean(axis=0), (reps >= 0).mean(axis=0)))
    adjusted = adjust(p, result.correction)
    for c, pi, pa in zip(result.comparisons, p, adjusted):
        c.full_p, c.full_p_adjusted = float(pi), float(pa)
        c.full_significant_corrected = bool(c.full_verdict in (HIGHER, LOWER) and pa < 1 - level)


def pool_from_runs(rankings: Mapping[str, Mapping[str, Sequence[str]]], qrels: Mapping[str, Mapping[str, int]],
                   depth: int) -> tuple[PoolMatrix, np.ndarray]:
    """The pool of ``rankings`` at ``depth`` over the qrels' queries that some run answers, and the
    judges' grade of each pair (0 when the qrels lack it)."""
    answered = {q for r in rankings.values() for q in r}
    qids = sorted(q for q in qrels if q in answered)
    if len(qids) < 2:
        raise ValueError("the runs and the qrels share fewer than 2 queries; nothing to compare")
    pm = PoolMatrix.from_rankings(rankings, depth, qids=qids)
    truth = np.array([qrels[pm.qids[q]].get(d, 0) for q, d in zip(pm.pair_query.tolist(), pm.docids)],
                     dtype=np.float64)
    return pm, np.clip(truth, 0, None)


def all_pairs(n_runs: int) -> list[tuple[int, int]]:
    return [(a, b) for a in range(n_runs) for b in range(a + 1, n_runs)]


def simulate(
    pm: PoolMatrix,
    truth: np.ndarray,
    comparisons: Sequence[tuple[int, int]],
    metric: str,
    *,
    order: str = "decisive",
    mode: str = "each",
    granularity: str = "block",
    step: float = 0.01,
    max_grade: int | None = None,
    rel_level: int = 1,
    resamples: int = DEFAULT_RESAMPLES,
    level: float = DEFAULT_LEVEL,
    tie: float = 0.0,
    seed: int = 0,
    estimate: bool = False,
    estimate_level: float = 0.95,
    estimate_until: float = 0.5,
    progress: Callable[[float], None] | None = None,
    trace: dict | None = None,
    correction: str = "holm",
    machine: np.ndarray | None = None,
    machine_key: np.ndarray | None = None,
    machine_top: np.ndarray | None = None,
    check: str = "batch",
) -> SimulationResult:
    """Replay judging ``truth`` (grade per pair of ``pm``) in ``order`` and record, for each comparison (run index
    pairs ``(a, b)``: is b higher than a?), the share of its pool judged when it settled. See the module docstring.
    With ``estimate``, also the share at which the estimate first put P(flip) at most ``1 - estimate_level`` on a
    significant verdict (checked up to ``estimate_until`` of the pool, then given up: counted as the whole pool).
    ``trace`` (a dict) receives ``judged_at`` (rows x pairs: the number of checks before the pair was judged; -1
    outside the row's pool) and ``shares`` (per check, each row's share judged). ``correction``
    (:data:`curation.evaluate.choices.CORRECTIONS` but tukey): the summary's "significant" counts the fully judged
    verdicts that survive it over the ``comparisons``. ``machine``, ``machine_top`` and ``machine_key``: a machine
    judge guiding the decisive order and feeding the estimate (:func:`_machine_guide`); the settlement reads only
    the judged labels. ``check``: the guarantee checked after each "batch" or every "pair" (:func:`_settled_within`)."""
    comps = _check_options(order=order, mode=mode, granularity=granularity, step=step, check=check,
                           comparisons=comparisons)
    G = int(max_grade if max_grade is not None else max(1, int(truth.max())))
    C, P, n = len(comps), pm.n_pairs, len(pm.qids)
    guide = _machine_guide(pm, comps, metric_form(metric, pm.depth)[1], machine, machine_key, machine_top, seed)
    counts, rng = resample_counts(n, resamples=resamples, seed=seed), np.random.default_rng(seed)
    member = np.stack([pm.members(c) for c in comps]) if mode == "each" else np.ones((1, P), dtype=bool)
    rows, pool_size = member.shape[0], member.sum(axis=1)  # each comparison's own pool (C, P), or one row for all
    result, full = _fully_judged(pm, truth, comps, metric, member, counts, G, order=order, mode=mode,
                                 granularity=granularity, step=step, rel_level=rel_level, level=level, tie=tie,
                                 correction=correction)
    fixed = _fixed_orders(pm, truth, comps, metric, member, counts, full, G, rng, order=order, mode=mode, level=level)
    judged = ~member.copy()  # pairs outside a comparison's pool are known (not relevant) from the start
    if trace is not None:  # for studies of a stopping rule: the check after which each pair was judged
        trace.update(judged_at=np.where(member, np.iinfo(np.int16).max, -1).astype(np.int16), shares=[])
    done = np.zeros(rows, dtype=np.int64)
    open_c, est_open = np.ones(C, dtype=bool), np.full(C, bool(estimate))
    share, model_cache, t_checks, checks, batches = 0.0, {}, 0.0, 0, ({} if check == "pair" else None)
    while True:
        grades, bounds, st, seconds = _check(pm, truth, judged, member, comps, metric, counts, G=G,
                                             rel_level=rel_level, level=level, tie=tie)
        t_checks, checks = t_checks + seconds, checks + 1
        shares = done / np.maximum(pool_size, 1)
        if trace is not None:
            trace["shares"].append(shares)
        _settled_within(pm, truth, judged, member, comps, metric, counts, st, open_c, batches, done, pool_size,
                        result, G=G, rel_level=rel_level, level=level, tie=tie)
        _record_settled(st, shares, open_c, result)
        if est_open.any():  # only with ``estimate``
            _estimate_check(pm, grades, comps, metric, counts, member, st, shares, est_open, result, model_cache, G=G,
                            rel_level=rel_level, level=level, tie=tie, seed=seed, estimate_level=estimate_level,
                            estimate_until=estimate_until, extra=None if guide is None else guide["extra"])
        if progress is not None:
            progress(float(shares.min()))
        active = open_c | est_open
        if _finished(active, member, judged):
            break
        share = min(1.0, share + step)
        _judge_batch(pm, member, judged, done, pool_size, active, fixed, bounds, st, rng, share=share,
                     granularity=granularity, trace=trace, checks=checks, batches=batches,
                     guided=_guided(pm, guide, grades, judged, member, comps, metric, counts, G, rel_level, level))
    result.seconds_per_check, result.checks = t_checks / max(checks, 1), checks
    return result


def _machine_guide(pm: PoolMatrix, comps, k: int, machine, machine_key, machine_top, seed: int = 0) -> dict | None:
    """What a machine judge's figures give the replay once (None without one). ``machine``: per
    pair, a machine judge's P(relevant) or vote share, NaN where it has no label; ``machine_top`` its
    P(top grade) (default ``machine``); ``machine_key`` its calibration class, e.g. its grade. It
    guides the decisive order (:mod:`curation.evaluate.plan`, calibrated after
    each batch against the pairs judged so far: :func:`_guided`) and its columns
    (:func:`curation.evaluate.decisive.machine_features`) join the estimate's model."""
    from curation.evaluate.decisive import machine_features
    from curation.evaluate.plan import plan_draws

    if machine is None:
        return None
    machine = np.asarray(machine, dtype=np.float64)
    if machine.shape != (pm.n_pairs,):
        raise ValueError(f"machine: one P(relevant) per pair of the pool ({pm.n_pairs}), not shape {machine.shape}")
    top = machine if machine_top is None else np.asarray(machine_top, dtype=np.float64)
    key = np.rint(np.nan_to_num(machine) * 10) if machine_key is None else machine_key
    return dict(rel=machine, top=top, key=machine_key, extra=machine_features(machine, top, key), caches={},
                draws=plan_draws(pm.n_pairs, seed))


def _guided(pm: PoolMatrix, guide: dict | None, grades, judged, member, comps, metric, counts, G: int,
            rel_level: int, level: float):
    """A function of (bounds, settlement, the row's comparisons) giving the machine-guided
    priorities and the pairs the plan asks for: the plan of :mod:`curation.evaluate.plan` for each
    open comparison of the row (the machine calibrated against the row's labels judged so far),
    blended with the blind priorities by the machine's trust
    (:func:`curation.evaluate.plan.machine_trust`, from the same labels), and a mask of the planned
    pairs (None when the machine is not trusted); None without a machine (``guide`` None: the
    blind order)."""
    if guide is None:
        return None
    from curation.evaluate.decisive import calibrated_relevance, pair_priorities
    from curation.evaluate.plan import blend, machine_trust, open_plans

    def priorities(bounds, st, rows_comps):
        r = rows_comps[0] if member.shape[0] > 1 else 0
        seen = judged[r] & member[r]
        relevant = np.nan_to_num(grades[r]) >= rel_level
        blind = pair_priorities(bounds, st, rows_comps, pm.n_pairs)
        trust = machine_trust(guide["rel"], seen, relevant)
        if trust <= 0:
            return blend(np.zeros(pm.n_pairs), blind, trust), None
        p_rel = calibrated_relevance(guide["rel"], guide["key"], seen, relevant)
        p_top = calibrated_relevance(guide["top"], guide["key"], seen, np.nan_to_num(grades[r]) >= G)
        plan = open_plans(pm, grades[r], member[r], [comps[c] for c in rows_comps if st.status[c] == OPEN], metric,
                          counts, p_rel, p_top, G=G, draws=guide["draws"], level=level,
                          cache=guide["caches"].setdefault(r, {}))
        return blend(plan, blind, trust), plan > 0

    return priorities


def _check(pm: PoolMatrix, truth: np.ndarray, judged: np.ndarray, member: np.ndarray, comps, metric: str,
           counts: np.ndarray, *, G: int, rel_level: int, level: float, tie: float):
    """One check of the replay: the grades known so far (NaN: not judged yet; 0 outside a row's
    pool), the bounds and the settling they give, and the CPU seconds the bounds and settling took."""
    grades = np.where(judged, np.where(member, truth[None, :], 0.0), np.nan)
    t0 = time.process_time()
    bounds = query_bounds(pm, grades, comps, metric, max_grade=G, rel_level=rel_level)
    st = settle(bounds, counts, level=level, tie=tie)
    return grades, bounds, st, time.process_time() - t0


def _finished(active: np.ndarray, member: np.ndarray, judged: np.ndarray) -> bool:
    """Whether the replay stops: no comparison is still open, or the open ones' pools (the one pool
    when all share it) are judged to the end."""
    rows = member.shape[0]
    left = (member & ~judged).any(axis=1)
    return not active.any() or not (left if rows > 1 else left & True)[active if rows > 1 else [0]].any()


def _check_options(*, order: str, mode: str, granularity: str, step: float, check: str = "batch",
                   comparisons=()) -> list[tuple]:
    """The options checked (ValueError naming the bad one); the comparisons as tuples."""
    if order not in ORDERS:
        raise ValueError(f"order must be one of {', '.join(ORDERS)}, not {order!r}")
    if mode not in ("each", "all"):
        raise ValueError(f"mode must be 'each' or 'all', not {mode!r}")
    if granularity not in GRANULARITIES:
        raise ValueError(f"granularity must be one of {', '.join(GRANULARITIES)}, not {granularity!r}")
    if not 0 < step <= 1:
        raise ValueError(f"step must be a share of the pool in (0, 1], not {step!r}")
    if check not in ("batch", "pair"):
        raise ValueError(f"check must be 'batch' or 'pair', not {check!r}")
    comps = [tuple(c) for c in comparisons]
    if not comps:
        raise ValueError("compare: no comparison to simulate")
    return comps


def _settled_within(pm: PoolMatrix, truth, judged, member, comps, metric, counts, st, open_c, batches, done,
                    pool_size, result: SimulationResult, *, G: int, rel_level: int, level: float, tie: float) -> None:
    """For each comparison that settled at this check: the first pair of the row's last batch (in
    the queue's order) after which the guarantee had settled it, found by bisection (settlement only
    grows with the labels: the bounds narrow), recorded in ``result`` and closed in ``open_c``. With
    ``batches`` None or empty (the guarantee checked after each batch only), nothing. The panel and
    ``golden decisive settle`` read the labels as they come, so they see it settle at that pair; the
    order is still recomputed after each batch only."""
    if not batches:
        return
    rows = member.shape[0]
    for i in np.flatnonzero(open_c & (np.array(st.status) != OPEN)):
        r = i if rows > 1 else 0
        batch = batches.get(r)
        if batch is None or len(batch) < 2:
            continue
        before = judged[r].copy()
        before[batch] = False

        def status(m, i=i, r=r, batch=batch, before=before):
            seen = before.copy()
            seen[batch[:m]] = True
            g = np.where(seen, np.where(member[r], truth, 0.0), np.nan)
            b = query_bounds(pm, g, [comps[i]], metric, max_grade=G, rel_level=rel_level)
            return settle(b, counts, level=level, tie=tie).status[0]

        lo, hi = 1, len(batch)  # settled after the whole batch; the first m that settles
        while lo < hi:
            mid = (lo + hi) // 2
            if status(mid) != OPEN:
                hi = mid
            else:
                lo = mid + 1
        res = result.comparisons[i]
        res.settled_share = float((done[r] - len(batch) + lo) / max(pool_size[r], 1))
        res.settled_verdict = status(lo)
        res.wrong = res.settled_verdict != res.full_verdict
        open_c[i] = False


def _record_settled(st, shares, open_c, result: SimulationResult) -> None:
    """The share judged when each open comparison settled, and its verdict, recorded in ``result``."""
    for i in np.flatnonzero(open_c):
        if st.status[i] != OPEN:
            res = result.comparisons[i]
            res.settled_share = float(shares[0 if len(shares) == 1 else i])
            res.settled_verdict = st.status[i]
            res.wrong = st.status[i] != res.full_verdict
            open_c[i] = False


def _fully_judged(pm: PoolMatrix, truth, comps, metric, member, counts, G: int, *, order, mode, granularity, step,
                  rel_level, level, tie, correction) -> tuple[SimulationResult, list[str]]:
    """The result to fill, with each comparison's fully judged verdict (the same resamples)."""
    rows = member.shape[0]
    pool_size = member.sum(axis=1)
    full_grades = np.where(member, truth[None, :], 0.0)
    fb = query_bounds(pm, full_grades, comps, metric, max_grade=G, rel_level=rel_level)
    flo, fhi = percentile_ends(counts, fb.lo, level)
    full = [verdict_of(a, b, tie) for a, b in zip(flo, fhi)]
    result = SimulationResult(metric=str(metric), order=order, mode=mode, granularity=granularity, depth=pm.depth,
                              queries=len(pm.qids), pool_pairs=int(member.any(axis=0).sum()), step=step,
                              correction=correction)
    for i, (a, b) in enumerate(comps):
        result.comparisons.append(ComparisonResult(
            a=pm.runs[a], b=pm.runs[b], pool_pairs=int(pool_size[0 if rows == 1 else i]), full_verdict=full[i],
            full_mean=float(fb.lo[i].mean()), full_low=float(flo[i]), full_high=float(fhi[i])))
    _correct_full_verdicts(result, counts, fb.lo, level)
    return result, full


def _fixed_orders(pm: PoolMatrix, truth, comps, metric, member, counts, full, G: int, rng, *, order, mode, level):
    """For the orders fixed in advance (oracle, shuffled, depth), each row's pairs in judging order;
    None for the decisive order (recomputed after every batch)."""
    rows = member.shape[0]
    fixed = None
    if order == "oracle":
        if mode != "each":
            raise ValueError("the oracle order is a reference for one comparison at a time: mode 'each'")
        fixed = [oracle_sequence(pm, truth, comps[r], metric, counts, full[r], member[r], G, rng, level=level)
                 for r in range(rows)]
    if order in ("shuffled", "depth"):
        fixed = []
        for r in range(rows):
            idx = np.flatnonzero(member[r])
            noise = rng.random(len(idx))
            if order == "shuffled":
                key = np.argsort(noise, kind="stable")
            else:
                runs = list(comps[r]) if mode == "each" else list(range(len(pm.runs)))
                rk = pm.ranks[runs][:, idx].astype(np.float64)
                best = np.where(rk > 0, rk, np.inf).min(axis=0)
                key = np.lexsort((noise, best))
            fixed.append(idx[key])
    return fixed


def _estimate_check(pm: PoolMatrix, grades, comps, metric, counts, member, st, shares, est_open, result, model_cache,
                    *, G, rel_level, level, tie, seed, estimate_level, estimate_until, extra=None) -> None:
    """Where the estimate first called a significant verdict with P(flip) small enough (or the
    guarantee came first), recorded in ``result``; those comparisons leave ``est_open``. ``extra``:
    a machine judge's columns for the estimate's model (:func:`curation.evaluate.decisive.machine_features`)."""
    from curation.evaluate.settle import estimate as run_estimate

    rows = member.shape[0]
    for i in np.flatnonzero(est_open & (np.array(st.status) != OPEN)):  # the guarantee came first
        res = result.comparisons[i]
        res.estimate_share, res.estimate_verdict = float(shares[0 if rows == 1 else i]), st.status[i]
        res.estimate_wrong = res.estimate_verdict != res.full_verdict
        est_open[i] = False
    ask = np.flatnonzero(est_open & (shares <= estimate_until if rows > 1 else shares[0] <= estimate_until))
    if len(ask):
        est = run_estimate(pm, grades, comps, metric, counts, max_grade=G, rel_level=rel_level, level=level,
                           tie=tie, only=ask, members=member, cache=model_cache, samples=8,
                           seed=seed, extra_features=extra)
        for i, e in est.items():
            if e["p_flip"] <= 1 - estimate_level and e["verdict"] in (HIGHER, LOWER):
                res = result.comparisons[i]
                res.estimate_share = float(shares[0 if rows == 1 else i])
                res.estimate_verdict = e["verdict"]
                res.estimate_wrong = res.estimate_verdict != res.full_verdict
                est_open[i] = False


def _judge_batch(pm: PoolMatrix, member, judged, done, pool_size, active, fixed, bounds, st, rng, *, share: float,
                 granularity: str, trace: dict | None, checks: int, guided=None, batches: dict | None = None) -> None:
    """The next batch, per row of the judged state: each active row judged up to ``share`` of its
    pool, in its fixed order or the decisive one (``judged``, ``done`` and ``trace`` updated);
    ``guided`` (:func:`_guided`): the decisive priorities guided by a machine judge."""
    from curation.evaluate.decisive import pair_priorities
    from curation.judge.assignment import BLOCK  # the judges' queue: a query's pairs in blocks

    rows, P = member.shape[0], pm.n_pairs
    for r in range(rows):
        rows_comps = [r] if rows > 1 else list(np.flatnonzero(active))
        if rows > 1 and not active[r]:
            continue
        target = int(np.ceil(share * pool_size[r]))
        need = target - int(done[r])
        if need <= 0:
            continue
        if fixed is not None:
            take = fixed[r][done[r]:done[r] + need]
        else:
            # planned: the plan's pairs, which make a guided query's first block
            prio, planned = ((pair_priorities(bounds, st, rows_comps, P), None) if guided is None
                             else guided(bounds, st, rows_comps))
            todo = member[r] & ~judged[r]
            take = _decisive_batch(pm, prio, todo, need, granularity, rng, BLOCK, planned=planned)
        judged[r, take] = True
        if batches is not None:
            batches[r] = take
        if trace is not None:
            trace["judged_at"][r, take] = checks
        done[r] += len(take)


def machine_from_qrels(truth: np.ndarray, agreement: float, *, lean: float = 0.2, max_grade: int | None = None,
                       seed: int = 0, random: bool = False) -> np.ndarray:
    """A simulated machine judge's grade of every pair, built from the judges' ``truth``: each grade
    kept with probability ``agreement`` (the exact agreement), else moved to a neighbouring grade,
    up with probability ``0.5 + lean`` (the machine more lenient, the humans stricter, as the TREC
    2024 RAG assessment study found of LLM judges), down otherwise; a grade at the end of the
    scale moves to its only neighbour. ``random``: grades that say nothing, the truth's grades
    shuffled across the pool (the same distribution, no relation to the pair). Seeded."""
    if not 0 <= agreement <= 1:
        raise ValueError(f"agreement must be a share in [0, 1], not {agreement!r}")
    if not -0.5 <= lean <= 0.5:
        raise ValueError(f"lean must be in [-0.5, 0.5] (the share of flips upward minus one half), not {lean!r}")
    rng = np.random.default_rng(seed)
    t = np.clip(np.rint(truth), 0, None).astype(np.int64)
    G = int(max_grade if max_grade is not None else max(1, int(t.max(initial=1))))
    if random:
        return rng.permutation(t).astype(np.float64)
    flip = rng.random(len(t)) >= agreement
    up = rng.random(len(t)) < 0.5 + lean
    step = np.where(t == 0, 1, np.where(t >= G, -1, np.where(up, 1, -1)))
    return np.where(flip, t + step, t).astype(np.float64)


def _decisive_batch(pm: PoolMatrix, prio: np.ndarray, todo: np.ndarray, need: int, granularity: str,
                    rng: np.random.Generator, block: int = 10, planned=None) -> np.ndarray:
    """At least ``need`` unjudged pairs, the highest priority first: single pairs
    (``granularity="pair"``), whole queries (``"query"``) or blocks of each query's ``block`` most
    decisive pairs (``"block"``, as ``golden judging assign --order decisive`` queues them); ties in a
    seeded order. ``planned`` (the pairs a machine-guided plan asks for, when it asks for any): a
    query's block is its planned pairs (:func:`curation.judge.assignment.first_block`) and blocks go
    by their mean priority, as the queue does. The pairs come in the queue's order."""
    idx = np.flatnonzero(todo)
    if len(idx) == 0:
        return idx
    noise = rng.random(len(idx))
    if granularity == "pair":
        key = np.lexsort((noise, -prio[idx]))
        return idx[key[:need]]
    q = pm.pair_query[idx]
    if granularity == "block":  # each query offers its `block` most decisive pairs as one block
        key = np.lexsort((noise, -prio[idx], q))  # by query, then priority
        q_sorted, idx_sorted = q[key], idx[key]
        first = np.searchsorted(q_sorted, q_sorted, side="left")
        size = np.full(len(pm.qids), block)
        if planned is not None and planned[idx].any():  # a guided query's first block: its planned pairs
            from curation.judge.assignment import first_block

            n_plan = np.bincount(q, weights=planned[idx], minlength=len(pm.qids)).astype(np.int64)
            size = np.array([first_block(int(x)) for x in n_plan])
        in_block = (np.arange(len(q_sorted)) - first) < size[q_sorted]
        q_sorted, idx_sorted = q_sorted[in_block], idx_sorted[in_block]
        q, idx, noise = q_sorted, idx_sorted, noise[key][in_block]
    qprio = np.bincount(q, weights=prio[idx], minlength=len(pm.qids))
    if planned is not None and planned[idx].any():
        qprio = qprio / np.maximum(np.bincount(q, minlength=len(pm.qids)), 1)
    qnoise = rng.random(len(pm.qids))
    present = np.unique(q)
    qorder = present[np.lexsort((qnoise[present], -qprio[present]))]
    sizes = np.bincount(q, minlength=len(pm.qids))[qorder]
    upto = int(np.searchsorted(np.cumsum(sizes), need)) + 1
    chosen = np.isin(q, qorder[:upto])
    rank = np.empty(len(pm.qids), dtype=np.int64)
    rank[qorder] = np.arange(len(qorder))
    queue = np.lexsort((noise[chosen], rank[q[chosen]]))  # the queue's order: blocks in turn, shuffled within
    return idx[chosen][queue]


def oracle_sequence(pm: PoolMatrix, truth: np.ndarray, comp: tuple[int, int], metric: str, counts: np.ndarray,
                    verdict: str, member: np.ndarray, G: int, rng: np.random.Generator, *,
                    level: float = DEFAULT_LEVEL) -> np.ndarray:
    """A judging order that KNOWS the labels (``truth``), a reference for what any order could
    save. For nDCG and a significant ``verdict``: first the pairs of
    :func:`curation.evaluate.clairvoyant.clairvoyant_settling_set` (a set whose labels settle the
    comparison, built from each query's exact best sets), then the rest of the pool, shuffled; the
    comparison settles at the first check once that set is judged. For AP:
    :func:`_oracle_hull_sequence`. For a comparison that is not significant: a shuffled order."""
    idx = np.flatnonzero(member)
    name, _k = metric_form(metric, pm.depth)
    if verdict not in (HIGHER, LOWER) or name != "ndcg":
        return _oracle_hull_sequence(pm, truth, comp, metric, counts, verdict, member, G, rng, level=level)
    from curation.evaluate.clairvoyant import clairvoyant_settling_set

    first = clairvoyant_settling_set(pm, truth, comp, metric, counts, verdict, member, G, level=level)
    first = first[rng.permutation(len(first))]
    rest = np.setdiff1d(idx, first)
    return np.concatenate([first, rest[rng.permutation(len(rest))]])


def _oracle_hull_sequence(pm: PoolMatrix, truth: np.ndarray, comp: tuple[int, int], metric: str,
                          counts: np.ndarray, verdict: str, member: np.ndarray, G: int, rng: np.random.Generator, *,
                          level: float = DEFAULT_LEVEL) -> np.ndarray:
    """The earlier oracle order (still the one for AP): for a significant
    ``verdict`` it raises the worst-case end that must cross 0 (``lo`` for "B higher", ``hi`` for
    "B lower") as fast as it can: within each query, the pairs whose label differs from the worst
    case's label for them come first (those that change the DCG difference, by their effect
    ``|c| * |label - worst|``, then those that only lower the ideal DCG); each query's curve of its
    worst-case end after its first ``j`` pairs is computed with the exact bounds, and queries advance
    along the upper concave hull of their curves, the largest gain per pair first (the greedy
    solution of the knapsack of pairs against the mean worst-case difference). Pairs that cannot
    help come last, shuffled. For a comparison that is not significant: a shuffled order."""
    idx = np.flatnonzero(member)
    if verdict not in (HIGHER, LOWER):
        return idx[rng.permutation(len(idx))]
    a, b = comp
    sign = 1.0 if verdict == HIGHER else -1.0
    name, k = metric_form(metric, pm.depth)
    n = len(pm.qids)
    rA, rB = pm.ranks[a], pm.ranks[b]
    if name == "ndcg":
        from curation.evaluate.settle import _disc

        disc = _disc(k)
        c = sign * (np.where((rB >= 1) & (rB <= k), disc[np.clip(rB, 0, k)], 0.0)
                    - np.where((rA >= 1) & (rA <= k), disc[np.clip(rA, 0, k)], 0.0))
    else:  # ap: 1/rank in the top k, as a proxy of the effect
        inv = np.where((rB >= 1) & (rB <= k), 1.0 / np.maximum(rB, 1), 0.0) - \
            np.where((rA >= 1) & (rA <= k), 1.0 / np.maximum(rA, 1), 0.0)
        c = sign * inv
    worst = np.where(c > 0, 0.0, float(G))  # the worst case's label of an unjudged pair (mostly)
    t = np.where(member, truth, 0.0)
    n_eff = np.abs(c) * np.abs(t - worst)
    useful = member & (t != worst)
    key = np.where(useful, np.where(n_eff > 0, 2.0 + n_eff, 1.0), 0.0) + 1e-3 * rng.random(pm.n_pairs)
    pq = pm.pair_query
    per_q = [idx_q[np.argsort(-key[idx_q], kind="stable")] for idx_q in
             (idx[pq[idx] == q] for q in range(n))]
    useful_q = [int(useful[o].sum()) for o in per_q]
    width = max(useful_q) if useful_q else 0
    # rows j = 0..width: each query's first j (useful) pairs judged, the rest of the pool unjudged
    base = np.where(member, np.nan, 0.0)
    rows = np.repeat(base[None], width + 1, axis=0)
    for q, o in enumerate(per_q):
        for j in range(1, useful_q[q] + 1):
            rows[j:, o[j - 1]] = t[o[j - 1]]
    bnd = query_bounds(pm, rows, [comp] * (width + 1), metric, max_grade=G)
    curve = (bnd.lo if verdict == HIGHER else -bnd.hi)  # (width + 1, n): the end to raise, per query
    segments = []  # (slope, q, j, j2) along each query's upper concave hull, from j = 0
    for q in range(n):
        j = 0
        while j < useful_q[q]:
            gains = (curve[j + 1:useful_q[q] + 1, q] - curve[j, q]) / np.arange(1, useful_q[q] - j + 1)
            m = len(gains) - 1 - int(np.argmax(gains[::-1]))  # the longest step of the best slope
            if gains[m] <= 1e-15:
                break
            segments.append((-gains[m], q, j, j + m + 1))
            j += m + 1
    # steepest first (a query's segments stay in its own order: slopes fall along a hull), each
    # query's slope weighted by how much its bound moves the bootstrap's end where the order
    # settles (the resample counts of the replicates around the end; twice refined)
    weight = np.ones(n)
    for _ in range(3):
        segs = sorted(segments, key=lambda x: (x[0] * weight[x[1]], x[1], x[2]))
        state = np.repeat(curve[:1], len(segs) + 1, axis=0)
        for t, (_, q, _j, j2) in enumerate(segs, start=1):
            state[t:, q] = curve[j2, q]
        low, _ = percentile_ends(counts, state, level, ends="low")
        ok = np.flatnonzero(low > 0)
        at = state[ok[0]] if len(ok) else state[-1]
        reps = counts @ at / n
        pos = int((len(reps) - 1) * (1 - level) / 2)
        near = np.argsort(np.abs(np.argsort(np.argsort(reps)) - pos))[:101]
        weight = counts[near].mean(axis=0)
    seq = [p for _, q, j, j2 in segs for p in per_q[q][j:j2].tolist()]
    rest = np.setdiff1d(idx, np.asarray(seq, dtype=np.int64))
    return np.concatenate([np.asarray(seq, dtype=np.int64), rest[rng.permutation(len(rest))]])


def settlement_lower_bound(pm: PoolMatrix, truth: np.ndarray, comp: tuple[int, int], metric: str,
                           counts: np.ndarray, verdict: str, member: np.ndarray, G: int, *,
                           level: float = DEFAULT_LEVEL, curves=None, limit: int | None = None) -> int:
    """A proven lower bound on the pairs ANY order (even one knowing the labels) must judge before
    the guarantee can settle the comparison on ``verdict`` (nDCG@k; "B higher" or "B lower"):
    each query's exact curve of the best worst-case end ``j`` of its pairs can give (an upper
    curve where a query has too many candidate sets), and the percentile relaxed to sums over sets
    of replicates, solved exactly as a knapsack (:mod:`curation.evaluate.clairvoyant`, where the
    proof is written out). ``curves``: :func:`~curation.evaluate.clairvoyant.query_curves` of the
    comparison oriented to ``verdict``, to reuse them. Valid for checks after every pair.

    (An earlier version bounded each query's end by the DCG difference and the ideal DCG optimised
    apart, with every unjudged pair at the top grade in the ideal DCG; but the worst completion
    sets B's unjudged pairs to 0, so its ideal DCG can be smaller and its end higher: that curve
    was not an upper bound. tests/evaluate/test_simulate.py has a query where it fails.)"""
    from curation.evaluate.clairvoyant import LIMIT, oriented, query_curves, settlement_lower_bound_of

    name, _k = metric_form(metric, pm.depth)
    if name != "ndcg":
        raise ValueError("the lower bound is for ndcg@k")
    comp_o = oriented(comp, verdict)
    if curves is None:
        curves = query_curves(pm, truth, comp_o, member, G, metric=metric, limit=limit or LIMIT)
    full = query_bounds(pm, np.where(member, truth, 0.0), [comp_o], metric, max_grade=G).lo[0]
    return settlement_lower_bound_of([c.upper for c in curves], counts, full, level=level)
