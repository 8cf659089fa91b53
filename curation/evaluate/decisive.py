"""The decisive judging order: judge first what can change the compared differences.

Each unjudged pair gets a priority from how much its label can move the per-query differences of
the open comparisons (:class:`curation.evaluate.settle.Bounds` ``weight``: for nDCG@k,
``max_grade * |disc_B(u) - disc_A(u)| / max(IDCG_judged, 1)``, the largest change of the query's
difference its label can make; for AP@k, ``|1/rank_B - 1/rank_A| / max(judged relevant, 1)``; at
least, for any unjudged pair of an open query, its effect through the ideal DCG (or the relevant
count) times ``1/log2(1 + best rank in any run)``, likely relevant pairs first), summed
over the comparisons, each comparison weighted by how close it is to settling
(``1 / max(gap, 0.001)``, ``gap`` the distance of its worst-case interval from deciding) and 0 once
settled (Carterette, Allan & Sitaraman, "Minimal test collections for retrieval evaluation",
SIGIR 2006, choose the documents whose judgment moves the difference most).

Judges get whole queries, the most unsettled weight first; within a query the pairs stay in the
seeded shuffle of ``curation.judge.assignment`` (the displayed order never depends on a rank or a
system), and the overlap (calibration) set is drawn as before.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

MIN_GAP = 1e-3


def comparison_urgency(status: Sequence[str], gap: np.ndarray) -> np.ndarray:
    """Weight of each comparison in the priorities: 0 when settled, else ``1 / max(gap, MIN_GAP)``."""
    gap = np.asarray(gap, dtype=np.float64)
    open_ = np.array([s == "open" for s in status])
    return np.where(open_, 1.0 / np.maximum(gap, MIN_GAP), 0.0)


def pair_priorities(bounds, settlement, comparisons: Sequence[int] | None, n_pairs: int) -> np.ndarray:
    """Priority of every pair: sum over ``comparisons`` (indices into ``bounds``; default all) of
    the comparison's urgency times the pair's weight in it."""
    if comparisons is None:
        comparisons = range(bounds.weight.shape[0])
    comparisons = list(comparisons)
    urg = comparison_urgency(settlement.status, settlement.gap)
    if not comparisons:
        return np.zeros(n_pairs)
    return urg[comparisons] @ bounds.weight[comparisons]


def query_priorities(pair_query: np.ndarray, priority: np.ndarray, n_queries: int) -> np.ndarray:
    """Each query's unsettled weight: the sum of its pairs' priorities."""
    return np.bincount(np.asarray(pair_query), weights=priority, minlength=n_queries)


# ---------------------------------------------------------------------------------------------
# The machine-guided order (the plan: curation/evaluate/plan.py) reads a machine judge's P(relevant)
# calibrated against the human labels so far

CALIBRATION_PRIOR = 5.0  # pseudo-pairs of the machine's own P(relevant) in each calibration class


def calibrated_relevance(raw: np.ndarray, key: np.ndarray | None, judged: np.ndarray, relevant: np.ndarray, *,
                         prior: float = CALIBRATION_PRIOR) -> np.ndarray:
    """The machine's P(relevant) of every pair, calibrated against the human labels so far.

    ``raw`` is what the machine says (its stated P(relevant) when it gave probabilities, else the
    share of its samples that voted relevant; NaN where it has no label); ``key`` a calibration class
    per pair (default: ``raw`` in 11 bins of 0.1; the simulated machine uses its grade). In each
    class, ``(relevant judged + prior * mean raw) / (judged + prior)``: with no human label yet it
    is the machine's own figure (the vote share), with many it is the humans' rate in the class
    (a machine whose labels say nothing tends to the base rate in every class). A pair the machine
    did not label gets the humans' smoothed base rate ``(relevant + 1) / (judged + 2)``."""
    raw = np.asarray(raw, dtype=np.float64)
    has = ~np.isnan(raw)
    judged = np.asarray(judged, dtype=bool)
    relevant = np.asarray(relevant, dtype=bool) & judged
    base = (relevant.sum() + 1.0) / (judged.sum() + 2.0)
    if key is None:
        key = np.rint(np.nan_to_num(raw) * 10).astype(np.int64)
    key = np.where(has, np.asarray(key, dtype=np.int64), -1)
    _, cls = np.unique(key, return_inverse=True)
    m = int(cls.max()) + 1 if len(cls) else 0
    n_j = np.bincount(cls, weights=judged & has, minlength=m)
    n_r = np.bincount(cls, weights=relevant & has, minlength=m)
    n_all = np.bincount(cls, weights=has, minlength=m)
    raw_mean = np.bincount(cls, weights=np.where(has, raw, 0.0), minlength=m) / np.maximum(n_all, 1)
    p = (n_r + prior * raw_mean) / (n_j + prior)
    return np.where(has, p[cls], base)


# ---------------------------------------------------------------------------------------------
# The project's comparisons in the store, the settlement report (CLI and dashboard), the release

RESAMPLES = 10_000  # the settlement's bootstrap: one fixed set of resamples (seed 0) for every report
SEED = 0


def parse_pairs(compare) -> list[tuple[str, str]]:
    """``["A,B", ...]`` (or tuples) -> [("A", "B"), ...]; ValueError naming a malformed entry."""
    out = []
    for c in compare or ():
        parts = [p.strip() for p in c.split(",")] if isinstance(c, str) else [str(p).strip() for p in c]
        if len(parts) != 2 or not all(parts):
            raise ValueError(f"compare: {c!r} is not of the form A,B (two run names)")
        if parts[0] == parts[1]:
            raise ValueError(f"compare: {c!r} compares a run with itself")
        if tuple(parts) not in out:
            out.append(tuple(parts))
    return out


def load_pool(session, project):
    """The project's pool as a :class:`~curation.evaluate.settle.PoolMatrix` (active queries; the
    runs' ranks from the pool's provenance, :mod:`curation.store.provenance`), each pair's final
    label (NaN when it has none yet) and the store ids of the pairs, in the matrix's order."""

    import numpy as np
    from sqlmodel import select

    from curation.agree.labels import final_labels
    from curation.evaluate.settle import PoolMatrix
    from curation.store.lookups import join_pair_text
    from curation.store.models import Document, PoolPair, Query
    from curation.store.provenance import RANKS, decode_ranks

    rows = session.exec(
        join_pair_text(select(PoolPair.id, Query.qid, Document.docid, RANKS, Query.stratum_key))
        .where(PoolPair.project_id == project.id, Query.status != "dropped")
        .order_by(Query.qid, PoolPair.id)
    ).all()
    qids = sorted({r[1] for r in rows})
    qindex = {q: i for i, q in enumerate(qids)}
    systems = [decode_ranks(r[3]) for r in rows]
    runs = sorted({name for s in systems for name in s})
    rindex = {r: i for i, r in enumerate(runs)}
    ranks = np.zeros((len(runs), len(rows)), dtype=np.int32)
    for p, s in enumerate(systems):
        for name, rank in s.items():
            ranks[rindex[name], p] = int(rank)
    depth = project.pool_depth or int(ranks.max(initial=1))
    strata = {r[1]: r[4] or "" for r in rows}
    pm = PoolMatrix(qids=qids, runs=runs, pair_query=np.array([qindex[r[1]] for r in rows], dtype=np.int64),
                    docids=[r[2] for r in rows], ranks=ranks, depth=int(depth),
                    strata=[strata[q] for q in qids])
    labels = {(f.qid, f.docid): f.grade for f in final_labels(session, project) if f.grade is not None}
    grades = np.array([labels.get((r[1], r[2]), np.nan) for r in rows], dtype=np.float64)
    return pm, grades, [r[0] for r in rows]


def max_grade(project) -> int:
    from curation.store.projects import grades

    return max(1, max(g.grade for g in grades(project)))


def record_comparisons(session, project, compare, *, metric: str = "ndcg@10", tie: float = 0.0):
    """Store the comparisons the decisive order serves (existing ones are kept); ValueError when a
    run is not in the project's pool or the metric is not ndcg@k / ap[@k]. Does not commit."""
    from sqlmodel import select

    from curation.evaluate.settle import metric_form
    from curation.store.models import DecisiveComparison

    pairs = parse_pairs(compare)
    if not pairs:
        raise ValueError("compare: the decisive order needs at least one comparison, e.g. --compare bm25,dense")
    pm, _, _ = load_pool(session, project)
    metric_form(metric, pm.depth)
    if not 0 <= tie < 1:
        raise ValueError(f"tie must be a margin in [0, 1), not {tie!r}")
    out = []
    for a, b in pairs:
        for r in (a, b):
            pm.run_index(r)
        row = session.exec(select(DecisiveComparison).where(
            DecisiveComparison.project_id == project.id, DecisiveComparison.run_a == a,
            DecisiveComparison.run_b == b, DecisiveComparison.metric == str(metric))).first()
        if row is None:
            row = DecisiveComparison(project_id=project.id, run_a=a, run_b=b, metric=str(metric), tie=float(tie))
            session.add(row)
        out.append(row)
    return out


def stored_comparisons(session, project) -> list:
    from sqlmodel import select

    from curation.store.models import DecisiveComparison

    return list(session.exec(select(DecisiveComparison).where(DecisiveComparison.project_id == project.id)
                             .order_by(DecisiveComparison.id)).all())


def _evaluate(pm, grades, comps, metric, tie, G):
    from curation.evaluate.settle import query_bounds, resample_counts, settle

    counts = resample_counts(len(pm.qids), resamples=RESAMPLES, seed=SEED)
    b = query_bounds(pm, grades, comps, metric, max_grade=G)
    return b, settle(b, counts, tie=tie), counts


def pair_priority_map(session, project, machine=None) -> dict[int, float]:
    """Priority of every unjudged pair of ``project`` (store pair id -> priority) for its stored
    comparisons, grouped by metric and summed. ``machine`` (a function of the pool matrix giving
    the machine's P(grade >= 1), P(top grade) and class per pair, e.g.
    :func:`curation.machine.guide.project_figures`) guides them: the plan of
    :mod:`curation.evaluate.plan` for each open comparison, blended with the blind priorities by the
    machine's trust (:func:`_guided_priorities`); without it, the blind priorities
    (:func:`pair_priorities`), exactly as before."""
    import numpy as np

    comps = stored_comparisons(session, project)
    if not comps:
        return {}
    pm, grades, ids = load_pool(session, project)
    G = max_grade(project)
    total, planned = np.zeros(pm.n_pairs), np.zeros(pm.n_pairs, dtype=bool)
    figures = None if machine is None else machine(pm)
    for metric in sorted({c.metric for c in comps}):
        mine = [c for c in comps if c.metric == metric]
        idx = [(pm.run_index(c.run_a), pm.run_index(c.run_b)) for c in mine]
        for tie in sorted({c.tie for c in mine}):
            sel = [idx[i] for i, c in enumerate(mine) if c.tie == tie]
            b, st, counts = _evaluate(pm, grades, sel, metric, tie, G)
            if figures is None:
                total += pair_priorities(b, st, None, pm.n_pairs)
            else:
                guided, plan = _guided_priorities(pm, grades, sel, metric, b, st, counts, figures, G)
                total += guided
                planned |= plan > 0
    if figures is None:
        return {pid: float(p) for pid, p in zip(ids, total)}
    from curation.judge.assignment import Priorities

    return Priorities({pid: float(p) for pid, p in zip(ids, total)},
                      planned=[pid for pid, m in zip(ids, planned) if m])


def _guided_priorities(pm, grades, comps, metric, bounds, st, counts, figures, G) -> tuple[np.ndarray, np.ndarray]:
    """The machine-guided priorities of one group of comparisons (one metric, one tie margin): each
    open comparison's plan (:func:`curation.evaluate.plan.plan_priorities`, scaled to a largest
    value of 1) summed, blended with the blind priorities by the machine's trust; the machine's
    figures calibrated against the human labels so far. Also the plan itself (0 everywhere under
    trust 0): the pairs it asks for make their query's first block (``Priorities.planned``)."""
    from curation.evaluate.plan import blend, machine_trust, open_plans, plan_draws

    raw_rel, raw_top, key = figures
    judged = ~np.isnan(grades)
    relevant = np.nan_to_num(grades) >= 1
    blind = pair_priorities(bounds, st, None, pm.n_pairs)
    trust = machine_trust(raw_rel, judged, relevant)
    plan = np.zeros(pm.n_pairs)
    if trust > 0:
        p_rel = calibrated_relevance(raw_rel, key, judged, relevant)
        p_top = calibrated_relevance(raw_top, key, judged, np.nan_to_num(grades) >= G)
        member = np.ones(pm.n_pairs, dtype=bool)
        open_comps = [comp for i, comp in enumerate(comps) if st.status[i] == "open"]
        plan = open_plans(pm, grades, member, open_comps, metric, counts, p_rel, p_top, G=G,
                          draws=plan_draws(pm.n_pairs))
    return blend(plan, blind, trust), plan


def machine_features(raw_rel: np.ndarray, raw_top: np.ndarray, key: np.ndarray) -> np.ndarray:
    """A machine judge's columns for the estimate's model of P(relevant) (which calibrates them on the
    judged pairs): its P(grade >= 1) and P(top grade) (0 where it has no label), whether it has one,
    and its grade one-hot."""
    has = ~np.isnan(raw_rel)
    key = np.where(has, np.asarray(key, dtype=np.int64), -1)
    onehot = (key[:, None] == np.unique(key)[None, :]).astype(np.float64)
    return np.hstack([np.nan_to_num(raw_rel)[:, None], np.nan_to_num(raw_top)[:, None],
                      has[:, None].astype(np.float64), onehot])


# The estimate's measured wrong-call rate (a significant verdict the fully judged pool contradicts,
# over all comparisons), shown beside it. Blind: bench/bench_decisive.py, robust03 nDCG@10, 136
# comparisons, 5 of 136. Machine-fed: bench/bench_decisive_machine.py --estimate --every 6
# --resamples 2000 --seeds 1 --agreements 0.8, 0 of 23 (a reduced run; the blind estimate in the same
# run: 1 of 23).
ESTIMATE_WRONG_RATE = {"blind": 0.037, "machine": 0.0}


def _pace_seconds(session, project) -> float | None:
    """The judges' median seconds per label (shown to answered), human labels of the last 500."""
    import statistics

    from sqlmodel import select

    from curation.agree.labels import as_seconds
    from curation.store.models import Judgment

    rows = session.exec(select(Judgment.shown_at, Judgment.answered_at).where(
        Judgment.project_id == project.id, Judgment.source == "human", Judgment.shown_at.is_not(None))
        .order_by(Judgment.id.desc()).limit(500)).all()
    secs = [as_seconds(a) - as_seconds(s) for s, a in rows if a is not None]
    secs = [s for s in secs if 0 < s < 3600]
    return statistics.median(secs) if secs else None


def _pairs_left_estimate(pm, grades, comp, metric, tie, G, prio, counts, probs) -> int | None:
    """ESTIMATE of the pairs still to judge until the guarantee settles: the unjudged pairs in
    priority order, filled with their most likely label (the estimate's P(relevant) >= 0.5 -> the
    most common positive grade, else 0), the shortest prefix that settles (bisection)."""
    import numpy as np

    from curation.evaluate.settle import OPEN, query_bounds, settle

    unj = np.flatnonzero(np.isnan(grades))
    if len(unj) == 0:
        return None
    order = unj[np.argsort(-prio[unj], kind="stable")]
    guess = np.where(probs[order] >= 0.5, float(G), 0.0)

    def settled(t):
        g = grades.copy()
        g[order[:t]] = guess[:t]
        return settle(query_bounds(pm, g, [comp], metric, max_grade=G), counts, tie=tie).status[0] != OPEN

    if not settled(len(order)):
        return None
    lo, hi = 0, len(order)
    while lo < hi:
        mid = (lo + hi) // 2
        if settled(mid):
            hi = mid
        else:
            lo = mid + 1
    return int(lo)


def _relevance_probabilities(pm, grades, extra):
    """P(relevant) of every pair from the estimate's model over every run's ranks (and a machine
    judge's columns ``extra``, when one guides the order), fitted on the judged pairs."""
    from curation.evaluate.settle import _features, relevance_probability

    feats = _features(pm, list(range(len(pm.runs))))
    return relevance_probability(feats if extra is None else np.hstack([feats, extra]), ~np.isnan(grades),
                                 np.nan_to_num(grades) >= 1)


def settlement_report(session, project, compare=None, *, metric: str | None = None, tie: float | None = None,
                      record: bool = True, machine: str | None = None, machine_figures=None) -> dict:
    """The settlement of the project's comparisons (the stored ones, or ``compare``): the one
    report behind ``golden decisive settle`` (text and ``--json``) and the lead dashboard's Comparisons
    panel. Per comparison: the verdict so far, settled (with the guarantee) or open, the share of
    the pool judged, the pairs that can still change it, and the ESTIMATE (P(flip), pairs left and
    time left at the judges' pace). With ``record``, a comparison found settled for the first
    time gets its settlement recorded (``DecisiveComparison.settled_*``) and committed.
    ``machine`` names the machine judge guiding the order (shown as such); its ``machine_figures``
    (:func:`curation.machine.guide.project_figures`) join the estimate's model of P(relevant), and
    the estimate's wrong-call rate measured for a machine-fed estimate is reported beside it
    (:data:`ESTIMATE_WRONG_RATE`). The guarantee reads only human labels."""
    import numpy as np

    from curation.evaluate.settle import OPEN, estimate
    from curation.store.models import DecisiveComparison, utcnow

    stored = stored_comparisons(session, project)
    if compare:
        wanted = parse_pairs(compare)
        keyed = {(c.run_a, c.run_b): c for c in stored if metric is None or c.metric == metric}
        chosen = [keyed.get(p) or DecisiveComparison(project_id=project.id, run_a=p[0], run_b=p[1],
                                                     metric=metric or "ndcg@10", tie=tie or 0.0)
                  for p in wanted]
    else:
        chosen = stored
    if not chosen:
        raise ValueError(f"project {project.name!r}: no comparison to settle; give --compare A,B, or assign with "
                         "`golden judging assign --order decisive --compare A,B`")
    pm, grades, _ids = load_pool(session, project)
    G = max_grade(project)
    pace = _pace_seconds(session, project)
    judged = int((~np.isnan(grades)).sum())
    extra = None if machine_figures is None else machine_features(*machine_figures(pm))
    probs = _relevance_probabilities(pm, grades, extra)
    out = []
    changed = False
    for c in chosen:
        m = c.metric if metric is None else metric
        t = c.tie if tie is None else tie
        comp = (pm.run_index(c.run_a), pm.run_index(c.run_b))
        b, st, counts = _evaluate(pm, grades, [comp], m, t, G)
        member = pm.members(comp)
        pool = int(member.sum())
        mine_judged = int((member & ~np.isnan(grades)).sum())
        share = mine_judged / pool if pool else 1.0
        status = st.status[0]
        est = estimate(pm, grades, [comp], m, counts, max_grade=G, tie=t, extra_features=extra)[0]
        prio = pair_priorities(b, st, None, pm.n_pairs)
        left = None if status != OPEN else _pairs_left_estimate(pm, grades, comp, m, t, G, prio, counts, probs)
        if record and status != OPEN and c.id is not None and c.settled_at is None:
            c.settled_at, c.settled_verdict, c.settled_share = utcnow(), status, share
            session.add(c)
            changed = True
        out.append({
            "a": c.run_a, "b": c.run_b, "metric": m, "tie": t,
            "status": "settled" if status != OPEN else "open",
            "verdict": status if status != OPEN else st.current[0],
            "mean_so_far": float(b.so_far[0].mean()),
            "guarantee_low": float(st.guarantee_low[0]), "guarantee_high": float(st.guarantee_high[0]),
            "pool_pairs": pool, "judged_pairs": mine_judged, "share_judged": share,
            "pairs_can_change": int(b.movers[0]),
            "estimate": {
                "verdict": est["verdict"], "p_flip": est["p_flip"], "pairs_left": left,
                "seconds_left": None if left is None or pace is None else left * pace,
                "note": "an estimate from a model of P(relevant), not a guarantee",
                "wrong_call_rate": ESTIMATE_WRONG_RATE["machine" if extra is not None else "blind"],
            },
            "settled_at": c.settled_at.isoformat() if c.settled_at else None,
            "settled_share": c.settled_share,
            "released_at": c.released_at.isoformat() if c.released_at else None,
            "released_pairs": c.released_pairs,
        })
    if changed:
        session.commit()
    return {"project": project.name, "queries": len(pm.qids), "pool_pairs": pm.n_pairs, "judged_pairs": judged,
            "seconds_per_label": pace, "resamples": RESAMPLES, "level": 0.95, "machine": machine,
            "comparisons": out}


def release_settled(session, project, lead, compare) -> int:
    """The lead's decision, recorded: release the judges from the open main pairs that no OPEN
    comparison of the project still needs (priority 0 for all of them), once the comparison
    ``compare`` ("A,B") is settled. Returns how many queued pairs were released; ValueError when
    the comparison is unknown or still open, or ``lead`` is not a lead or admin."""
    from sqlalchemy import delete
    from sqlmodel import select

    from curation.store.models import Assignment, PairView, utcnow
    from curation.store.roles import is_lead

    if not is_lead(lead):
        raise ValueError(f"lead: {lead.name!r} is a {lead.role}; only a lead or admin can release judges")
    (a, b), = parse_pairs([compare])
    report = settlement_report(session, project, record=True)
    mine = [c for c in report["comparisons"] if (c["a"], c["b"]) == (a, b)]
    if not mine:
        raise ValueError(f"compare: {a},{b} is not one of project {project.name!r}'s comparisons")
    if mine[0]["status"] != "settled":
        raise ValueError(f"compare: {a},{b} is still open; only a settled comparison releases its pairs")
    prio = pair_priority_map(session, project)
    open_rows = session.exec(select(Assignment.id, Assignment.pair_id).where(
        Assignment.project_id == project.id, Assignment.kind == "main", Assignment.done_at.is_(None))).all()
    release = [aid for aid, pid in open_rows if prio.get(pid, 0.0) <= 0.0]
    if release:
        session.execute(delete(PairView).where(PairView.assignment_id.in_(release)))
        session.execute(delete(Assignment).where(Assignment.id.in_(release)))
    row = next(c for c in stored_comparisons(session, project) if (c.run_a, c.run_b) == (a, b))
    row.released_at, row.released_by_id, row.released_pairs = utcnow(), lead.id, len(release)
    session.add(row)
    session.commit()
    return len(release)


def assign_decisive(session, project, judges, *, compare, metric: str = "ndcg@10", tie: float = 0.0,
                    machine_figures=None, **options):
    """:func:`curation.judge.assignment.assign` in the decisive order: records the comparisons
    ``compare`` (["A,B", ...]: is B higher than A on ``metric``?) under the project's lock and queues
    the judges' main pairs by their priority in them (:func:`pair_priority_map`). ``machine_figures``
    (:func:`curation.machine.guide.project_figures`) guides the priorities by a machine judge's
    calibrated probabilities (:mod:`curation.evaluate.plan`); the judges see nothing of it.
    ``options``: those of ``assign`` (``overlap``, ``seed``, ``hold``, ``withhold``)."""
    from curation.judge.assignment import assign

    def prioritise(session, project):
        record_comparisons(session, project, compare, metric=metric, tie=tie)
        session.flush()
        return pair_priority_map(session, project, machine=machine_figures)

    return assign(session, project, judges, prioritise=prioritise, **options)
