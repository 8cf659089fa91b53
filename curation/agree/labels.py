"""The final label of every judged pair, and where it came from.

A pair's final label is DERIVED, never stored: from each judge's latest judgment of the pair
(judgments are append-only; skips are ignored), the latest adjudication of the pair, and the
project's seed judgments, under a stated policy:

- ``adjudicated`` (default): one judge -> that label (``single``); judges agree -> ``unanimous``;
  judges disagree -> the adjudication (``adjudicated``), else ``unresolved`` (no grade).
- ``majority``: as above, but a disagreement with a strict majority grade takes it (``majority``);
  a tie is ``unresolved`` unless adjudicated.
- ``lead``: as ``adjudicated``, but a judgment by a lead or admin wins over the judges' labels
  (``lead``; the latest lead judgment when several leads judged the pair).

- ``median``: as ``adjudicated``, but a disagreement takes the median of the judges' grades
  (``median``); with an even number of votes whose two middle grades differ it is ``unresolved``.
- ``dawid_skene``: as ``adjudicated``, but a disagreement takes the label of a model of each judge's
  reliability fitted on ALL the project's latest labels (``dawid_skene``): Dawid & Skene (1979), EM
  over each judge's confusion matrix, by crowd-kit's ``crowdkit.aggregation.DawidSkene``
  (:func:`model_estimates`).
- ``mace``: the same with MACE (Hovy et al. 2013, "Learning Whom to Trust with MACE"), each judge's
  competence and spamming pattern, by crowd-kit's ``crowdkit.aggregation.MACE`` (seeded).

Under ``median``, ``dawid_skene`` and ``mace`` (:data:`AGGREGATING`) a pair one judge labelled
stays ``single`` and judges who agree stay ``unanimous``: the model decides the disagreements (it is
fitted on every label, so the agreed pairs teach it each judge's reliability). Each judge's raw
label is kept with the final one (``votes``; the export's ``judgments``).

Under every policy an adjudication is the lead's final word (``adjudicated``), and a pair nobody
judged that rests only on a seed judgment (a ticket or a click) takes the seed's grade (``seed``).

Used by ``curation.export.versions`` (the qrels are the labels with a grade) and the lead's pages.
"""

from __future__ import annotations

import warnings
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import NamedTuple

from sqlalchemy import false, union
from sqlmodel import Session, func, select

from curation.store.direct import micros_to_seconds, utc_micros
from curation.store.lookups import join_pair_text, pair_ids, plain_rows, project_id
from curation.store.models import (
    Adjudication,
    Assignment,
    Document,
    Judgment,
    PoolPair,
    Project,
    Query,
    SeedJudgment,
    User,
    pool_labels,
)
from curation.store.roles import LEAD_ROLES

POLICIES = ("adjudicated", "majority", "lead", "median", "dawid_skene", "mace")
# The policies that aggregate several judges' labels into one (their exports say so on every label,
# curation.export.gather), and those that fit a model of the judges (model_estimates).
AGGREGATING = ("median", "dawid_skene", "mace")
MODEL_POLICIES = ("dawid_skene", "mace")
LABEL_SOURCES = ("single", "unanimous", "majority", "lead", "adjudicated", "seed", "unresolved", "unjudged") \
    + AGGREGATING


class Label(NamedTuple):
    """One label given by one judge to one (qid, docid) pair. ``grade=None`` is a skip (ignored).

    ``answered_at`` and ``shown_at`` are datetimes (naive ones read as UTC) or numbers of seconds;
    they order the labels (the latest of a judge for a pair counts), draw the drift curve and time
    the judges. A NamedTuple: a project's hundreds of thousands of judgments load quickly.
    (The ``Judgment`` table of :mod:`curation.store.models` holds them in the store.)
    """

    qid: str
    docid: str
    judge: str
    grade: int | None
    answered_at: datetime | float | None = None
    shown_at: datetime | float | None = None


def latest_labels(judgments: Iterable[Label]) -> dict[tuple[str, str], dict[str, Label]]:
    """``{(qid, docid): {judge: latest Label}}``, skips ignored.

    The latest is the one with the greatest ``answered_at``; records without a time, or with equal
    times, count in input order (a later record wins). A skip after a label does not erase the
    label: a skip is "no decision", not a decision.
    """
    best: dict[tuple[str, str], dict[str, Label]] = {}
    when: dict[tuple[str, str, str], float] = {}
    minus_inf = float("-inf")
    for j in judgments:
        if j.grade is None:
            continue
        t = as_seconds(j.answered_at)
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


def as_seconds(t) -> float | None:
    """A label's time as seconds since the epoch: datetimes (naive ones read as UTC) or numbers."""
    if t is None or type(t) is float:
        return t
    if isinstance(t, datetime):
        return (t if t.tzinfo else t.replace(tzinfo=UTC)).timestamp()  # naive = UTC
    return float(t)


@dataclass(frozen=True)
class Vote:
    """A judge's latest label of a pair."""

    judge: str
    grade: int
    is_lead: bool = False
    order: float = 0.0  # larger = later (answered_at as seconds)


class FinalLabel(NamedTuple):
    """The final label of one pair. ``grade`` is None for ``unresolved`` and ``unjudged`` pairs."""

    qid: str
    docid: str
    grade: int | None
    source: str  # one of LABEL_SOURCES
    votes: tuple[tuple[str, int], ...] = ()  # (judge, grade), by judge name
    pair_id: int | None = None
    adjudicated_by: str | None = None
    reason: str | None = None

    def as_dict(self) -> dict:
        return {
            "qid": self.qid,
            "docid": self.docid,
            "grade": self.grade,
            "source": self.source,
            "votes": {j: g for j, g in self.votes},
            "adjudicated_by": self.adjudicated_by,
            "reason": self.reason,
        }


def _check_policy(policy: str) -> str:
    if policy not in POLICIES:
        raise ValueError(f"policy: {policy!r} is not one of {', '.join(POLICIES)}")
    return policy


def resolve(
    votes: Sequence[Vote],
    *,
    policy: str = "adjudicated",
    adjudication: int | None = None,
    seed: int | None = None,
    estimate: int | None = None,
) -> tuple[int | None, str]:
    """``(grade, source)`` of one pair from its judges' latest ``votes``, its latest
    ``adjudication`` grade and a ``seed`` grade, under ``policy`` (see the module's docstring);
    ``estimate``: the pair's label by the policy's model (``dawid_skene``, ``mace``:
    :func:`model_estimates`). ``(None, "unjudged")`` when there is no evidence at all.

    >>> resolve([Vote("a", 2), Vote("b", 2), Vote("c", 0)], policy="majority")
    (2, 'majority')
    >>> resolve([Vote("a", 2), Vote("b", 0)])
    (None, 'unresolved')
    >>> resolve([Vote("a", 0), Vote("b", 1), Vote("c", 3)], policy="median")
    (1, 'median')
    """
    _check_policy(policy)
    if adjudication is not None:
        return int(adjudication), "adjudicated"
    if not votes:
        if seed is not None:
            return int(seed), "seed"
        return None, "unjudged"
    if policy == "lead":
        leads = [v for v in votes if v.is_lead]
        if leads:
            return int(max(leads, key=lambda v: v.order).grade), "lead"
    if len(votes) == 1:
        return int(votes[0].grade), "single"
    grades = Counter(int(v.grade) for v in votes)
    if len(grades) == 1:
        return next(iter(grades)), "unanimous"
    if policy == "majority":
        (top, n), *_ = grades.most_common()
        if n * 2 > len(votes):
            return top, "majority"
    elif policy == "median":
        ordered = sorted(int(v.grade) for v in votes)
        low, high = ordered[(len(ordered) - 1) // 2], ordered[len(ordered) // 2]
        if low == high:
            return low, "median"
    elif policy in MODEL_POLICIES and estimate is not None:
        return int(estimate), policy
    return None, "unresolved"


class ModelEstimate(NamedTuple):
    """A model's label of one pair and its posterior probability of each grade."""

    grade: int
    probabilities: dict[int, float]


def model_estimates(votes: Mapping[tuple[str, str], Mapping[str, int]], policy: str, *,
                    seed: int = 0) -> dict[tuple[str, str], ModelEstimate]:
    """The label of every pair of ``votes`` (``{(qid, docid): {judge: grade}}``, each judge's latest)
    by the model of ``policy``, fitted on all of them: ``dawid_skene`` (Dawid & Skene 1979, EM over
    each judge's confusion matrix, initialised by majority vote; crowd-kit's
    ``crowdkit.aggregation.DawidSkene`` with its defaults, 100 iterations) or ``mace`` (Hovy et al.
    2013; crowd-kit's ``crowdkit.aggregation.MACE``, variational Bayes, 10 restarts, ``random_state``
    ``seed``). crowd-kit (with pandas) is imported here, only when a model policy is used. A tie of
    probabilities goes to the lowest grade (crowd-kit's ``idxmax``)."""
    if policy not in MODEL_POLICIES:
        raise ValueError(f"policy: {policy!r} is not one of {', '.join(MODEL_POLICIES)}")
    units = sorted(u for u, d in votes.items() if d)
    if not units:
        return {}
    import pandas as pd

    try:
        from crowdkit.aggregation import MACE, DawidSkene
    except ImportError:  # an optional extra: it brings transformers, which nothing else needs
        raise ValueError(f"policy: {policy!r} needs crowd-kit; install it with pip install 'golden[crowd]'") from None

    rows = [(i, judge, int(g)) for i, u in enumerate(units) for judge, g in sorted(votes[u].items())]
    frame = pd.DataFrame(rows, columns=["task", "worker", "label"])
    model = DawidSkene(n_iter=100) if policy == "dawid_skene" else MACE(random_state=seed)
    with warnings.catch_warnings():  # crowd-kit 1.4.2 calls pandas methods that pandas 3 deprecates
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", FutureWarning)
        warnings.filterwarnings("ignore", message=".*inplace.*")
        model.fit(frame)
    probas = model.probas_.sort_index()
    grades = [int(g) for g in probas.columns]
    labels = model.labels_
    return {units[i]: ModelEstimate(int(labels.loc[i]), dict(zip(grades, map(float, row), strict=True)))
            for i, row in zip(probas.index.tolist(), probas.to_numpy(), strict=True)}


def _resolve_all(
    votes: Mapping[tuple[str, str], Mapping[str, tuple[int, float]]],
    *,
    policy: str,
    adjudications: Mapping[tuple[str, str], object],
    seeds: Mapping[tuple[str, str], int],
    leads: set[str],
    pair_of: Mapping[tuple[str, str], int] | None = None,
    estimates: Mapping[tuple[str, str], ModelEstimate] | None = None,
) -> list[FinalLabel]:
    """:func:`resolve` over every unit, with a fast path for the common cases (one judge, or
    judges who agree, and no adjudication). ``adjudications`` map to a grade, or to a tuple
    (grade, reason, lead name) whose reason and lead are kept on the label; ``estimates``: the
    model's labels under a model policy (:func:`model_estimates`)."""
    pair_of = pair_of or {}
    estimates = estimates or {}
    out = []
    for unit in sorted(set(votes) | set(adjudications) | set(seeds)):
        by_judge = votes.get(unit) or {}
        adj = adjudications.get(unit)
        pid = pair_of.get(unit)
        items = sorted(by_judge.items()) if len(by_judge) > 1 else list(by_judge.items())
        pairs = tuple((j, g) for j, (g, _) in items)
        if adj is None and pairs and not (policy == "lead" and any(j in leads for j, _ in pairs)):
            first = pairs[0][1]
            if len(pairs) == 1:
                out.append(FinalLabel(unit[0], unit[1], first, "single", pairs, pid))
                continue
            if all(g == first for _, g in pairs):
                out.append(FinalLabel(unit[0], unit[1], first, "unanimous", pairs, pid))
                continue
        adj_grade, reason, lead = (adj if isinstance(adj, tuple) else (adj, None, None))
        vs = [Vote(j, g, j in leads, t) for j, (g, t) in items]
        est = estimates.get(unit)
        grade, source = resolve(vs, policy=policy, adjudication=adj_grade, seed=seeds.get(unit),
                                estimate=None if est is None else est.grade)
        if source != "adjudicated":
            reason = lead = None
        out.append(FinalLabel(unit[0], unit[1], grade, source, pairs, pid, lead, reason))
    return out


def load_judgments(
    session: Session,
    project: Project | int,
    *,
    overlap_only: bool = False,
    include_skips: bool = False,
    seconds: bool = False,
) -> list[Label]:
    """Every judgment row of the project as :class:`Label` records (judge =
    user name), oldest first; ``overlap_only``: only pairs in the overlap set or labelled by two or
    more judges (the pairs agreement is measured on). Skips (grade None) only with ``include_skips``.
    ``seconds``: the times as float seconds since the epoch (:func:`as_seconds`), as the agreement
    report uses them, read without building a datetime per row (the export's path)."""
    pid = project_id(project)
    stmt = (
        join_pair_text(
            select(Query.qid, Document.docid, User.name, Judgment.grade, Judgment.answered_at, Judgment.shown_at,
                   Judgment.pair_id, Judgment.skipped)
            .join(PoolPair, PoolPair.id == Judgment.pair_id)
        )
        .join(User, User.id == Judgment.judge_id)
        .where(Judgment.project_id == pid, pool_labels())
        .order_by(Judgment.answered_at, Judgment.id)
    )
    if overlap_only:  # the filter runs in the database: a project's other judgments are never read
        stmt = stmt.where(Judgment.pair_id.in_(_overlap_pairs(pid)))
    if not include_skips:
        stmt = stmt.where(Judgment.grade.is_not(None), Judgment.skipped == false())
    if not seconds:
        return [Label(qid, docid, judge, None if skipped else grade, answered, shown)
                for qid, docid, judge, grade, answered, shown, _pair_id, skipped in session.exec(stmt).all()]
    # The driver's rows as they come (SQLite gives the times as text), the times of all rows
    # converted at once (utc_micros, micros_to_seconds: what datetime.timestamp() gives).
    rows = plain_rows(session, stmt)
    if not rows:
        return []
    answered, shown = (_seconds([r[at] for r in rows]) for at in (4, 5))
    return [Label(qid, docid, judge, None if skipped else grade, a, s)
            for (qid, docid, judge, grade, _a, _s, _pair_id, skipped), a, s in zip(rows, answered, shown)]


def _seconds(values: list) -> list[float | None]:
    """Driver datetimes as :func:`as_seconds` gives them (None kept), converted together."""
    micros, missing = utc_micros(values)
    seconds = micros_to_seconds(micros)
    if missing.any():
        for i in missing.nonzero()[0].tolist():
            seconds[i] = None
    return seconds


def _overlap_pairs(pid: int):
    """The ids of the pairs agreement is measured on, as a subquery: the overlap set's pairs and the
    pairs labelled (not skipped) by two or more judges."""
    multi = (
        select(Judgment.pair_id)
        .where(Judgment.project_id == pid, Judgment.grade.is_not(None), Judgment.skipped == false(), pool_labels())
        .group_by(Judgment.pair_id)
        .having(func.count(func.distinct(Judgment.judge_id)) >= 2)
    )
    overlap = select(Assignment.pair_id).where(Assignment.project_id == pid, Assignment.kind == "overlap")
    return union(multi, overlap)


def overlap_only(session: Session, project: Project | int, judgments: Iterable[Label]) -> list[Label]:
    """The records of ``judgments`` (as from :func:`load_judgments`) on the pairs agreement is
    measured on: the overlap set's pairs and any pair labelled by two or more judges. Saves a
    second load when a page needs both all judgments (timing) and the overlap ones."""
    pid = project_id(project)
    judges_of: dict[tuple[str, str], set[str]] = defaultdict(set)
    judgments = list(judgments)
    for j in judgments:
        if j.grade is not None:
            judges_of[(j.qid, j.docid)].add(j.judge)
    keep = {u for u, js in judges_of.items() if len(js) >= 2}
    keep |= set(session.exec(
        join_pair_text(
            select(Query.qid, Document.docid).select_from(Assignment).join(PoolPair, PoolPair.id == Assignment.pair_id)
        )
        .where(Assignment.project_id == pid, Assignment.kind == "overlap")
    ).all())
    return [j for j in judgments if (j.qid, j.docid) in keep]


def query_strata(session: Session, project: Project | int) -> dict[str, str]:
    """``{qid: stratum key}`` of the project's queries (``"(none)"`` for a query without one): the
    strata the agreement report's per-stratum table groups the pairs by."""
    rows = session.exec(select(Query.qid, Query.stratum_key).where(Query.project_id == project_id(project)))
    return {qid: key or "(none)" for qid, key in rows.all()}


def latest_adjudications(session: Session, pid: int) -> dict[int, tuple[int, str, str, int | None]]:
    """Pair id -> (grade, reason, the lead's name, guidelines version id) of each pair's latest
    adjudication: the one that counts (:func:`final_labels`, and the export's vectorised pass)."""
    out = {}
    for pair_id, grade, reason, lead, gv_id in session.exec(
        select(Adjudication.pair_id, Adjudication.grade, Adjudication.reason, User.name,
               Adjudication.guidelines_version_id)
        .join(User, User.id == Adjudication.lead_id)
        .where(Adjudication.project_id == pid)
        .order_by(Adjudication.created_at, Adjudication.id)
    ).all():
        out[pair_id] = (int(grade), reason, lead, gv_id)  # the latest wins
    return out


def latest_seed_grades(session: Session, pid: int) -> dict[tuple[str, str], int]:
    """(qid, docid) -> the grade of the pair's latest seed judgment: the grade a pair nobody judged
    takes (:func:`final_labels`, and the export's vectorised pass)."""
    latest: dict[tuple[str, str], int] = {}
    for qid, docid, grade in session.exec(
        select(SeedJudgment.qid, SeedJudgment.docid, SeedJudgment.grade)
        .where(SeedJudgment.project_id == pid)
        .order_by(SeedJudgment.imported_at, SeedJudgment.id)
    ).all():
        latest[(str(qid), str(docid))] = int(grade)
    return latest


def _latest_votes(session: Session, pid: int, unit_of: Mapping[int, tuple[str, str]],
                  names: Mapping[int, str]) -> dict[tuple[str, str], dict[str, tuple[int, float]]]:
    """``{(qid, docid): {judge name: (grade, order)}}``: each judge's latest label of each pair
    (skips ignored), ``order`` the label's place among the project's judgments (larger = later)."""
    # Rows in the order they were answered: the last row of a (pair, judge) is its latest label.
    # Only integers are read (no datetime parsing): this is the export's hot path.
    votes: dict[tuple[str, str], dict[str, tuple[int, float]]] = defaultdict(dict)
    for n, (pair_id, judge_id, grade) in enumerate(session.exec(
        select(Judgment.pair_id, Judgment.judge_id, Judgment.grade)
        .where(Judgment.project_id == pid, Judgment.skipped == false(), Judgment.grade.is_not(None), pool_labels())
        .order_by(Judgment.answered_at, Judgment.id)
    ).all()):
        votes[unit_of[pair_id]][names[judge_id]] = (int(grade), float(n))
    return votes


def _estimates_for(votes: Mapping[tuple[str, str], Mapping[str, tuple[int, float]]],
                   policy: str) -> dict[tuple[str, str], ModelEstimate]:
    """The model's labels under a model policy, when some pair has a disagreement (else none are
    needed, and crowd-kit is not loaded)."""
    if policy not in MODEL_POLICIES or not any(len({g for g, _ in d.values()}) > 1 for d in votes.values()):
        return {}
    return model_estimates({u: {j: g for j, (g, _) in d.items()} for u, d in votes.items()}, policy)


def policy_estimates(session: Session, project: Project | int, policy: str) -> dict[tuple[str, str], ModelEstimate]:
    """``{(qid, docid): ModelEstimate}`` of the project's pairs under ``policy``'s model, fitted on
    every judge's latest labels as :func:`final_labels` fits it (empty for a policy without a
    model): what the export's per-chunk pass reads the model's labels from."""
    _check_policy(policy)
    if policy not in MODEL_POLICIES:
        return {}
    pid = project_id(project)
    unit_of = {i: u for u, i in pair_ids(session, pid).items()}
    names = dict(session.exec(select(User.id, User.name)).all())
    return _estimates_for(_latest_votes(session, pid, unit_of, names), policy)


def final_labels(
    session: Session,
    project: Project | int,
    *,
    policy: str = "adjudicated",
    include_unjudged: bool = False,
) -> list[FinalLabel]:
    """The final label of every judged pair of ``project`` (and every pair resting only on a seed
    judgment), sorted by qid then docid, under ``policy`` (``adjudicated``, ``majority`` or
    ``lead``; see the module docstring). ``include_unjudged`` adds the pool's pairs with no evidence
    at all (source ``unjudged``, grade None), for coverage reports.

    Each judge's LATEST judgment of a pair counts, skips ignored; the latest adjudication of a pair
    counts. Imported judgments (``golden judging import``) count as the importing judge's.
    Dropped queries are not filtered here: the export decides what to leave out.
    """
    _check_policy(policy)
    pid = project_id(project)
    ids = pair_ids(session, pid)
    unit_of = {i: u for u, i in ids.items()}
    names = dict(session.exec(select(User.id, User.name)).all())
    leads = {names[i] for i in session.exec(select(User.id).where(User.role.in_(LEAD_ROLES))).all()}
    votes = _latest_votes(session, pid, unit_of, names)
    adjudications = {unit_of[pair_id]: (grade, reason, lead)
                     for pair_id, (grade, reason, lead, _) in latest_adjudications(session, pid).items()}
    seeds = latest_seed_grades(session, pid)
    out = _resolve_all(votes, policy=policy, adjudications=adjudications, seeds=seeds, leads=leads,
                       pair_of=ids, estimates=_estimates_for(votes, policy))
    if include_unjudged:
        seen = {(f.qid, f.docid) for f in out}
        out.extend(FinalLabel(q, d, None, "unjudged", (), i) for (q, d), i in ids.items() if (q, d) not in seen)
        out.sort(key=lambda f: (f.qid, f.docid))
    return out

