"""Adjudication: the queue of pairs on which judges disagree, and the lead's final word on them.

The queue holds every pair whose judges' latest labels differ (skips ignored), largest grade
distance first (a 0 against a 2 before a 1 against a 2), then by query so a lead reads one query's
disagreements together. Each entry shows every judge's label, note and "unsure" flag, and the
guidelines version the label was given under.

An adjudication is appended (the latest one of a pair counts, as for judgments) with the lead,
the grade, a reason and whether the disagreement came from the guidelines; from the same screen a
lead can write a new guidelines version (``curation.store.projects.set_guidelines``). The final labels
(:mod:`curation.agree.labels`) read the adjudications.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

from sqlalchemy import false, true
from sqlmodel import Session, select

from curation.store.audit import record_audit
from curation.store.lookups import join_pair_text, pair_keys, plain_rows, project_id
from curation.store.models import (
    Adjudication,
    Document,
    GuidelinesVersion,
    Judgment,
    PoolPair,
    Project,
    Query,
    User,
    pool_labels,
)
from curation.store.projects import current_guidelines, grades, set_guidelines
from curation.store.roles import is_lead
from curation.store.scale import check_grade


@dataclass(frozen=True)
class JudgeLabel:
    """One judge's latest label of a pair, as a lead sees it."""

    judge: str
    grade: int | None  # None only for an "unsure" answer recorded without a grade (stores before 0014)
    note: str | None
    unsure: bool
    guidelines_version: int | None
    source: str  # "human" or "import"
    answered_at: datetime | None


@dataclass(frozen=True)
class AdjudicationView:
    lead: str
    grade: int
    reason: str
    guidelines_issue: bool
    guidelines_version: int | None
    created_at: datetime | None


@dataclass(frozen=True)
class Disagreement:
    """A pair whose judges disagree (or, with ``include_resolved``, once disagreed)."""

    pair_id: int
    qid: str
    query: str  # untrusted text: render escaped
    docid: str
    title: str | None
    text: str  # untrusted text: render escaped
    labels: tuple[JudgeLabel, ...]  # by judge name
    distance: int  # highest minus lowest grade
    adjudication: AdjudicationView | None

    @property
    def resolved(self) -> bool:
        return self.adjudication is not None


class QueueCounts(NamedTuple):
    open: int
    resolved: int


def _split_pairs(session: Session, pid: int) -> dict[int, int]:
    """``{pair_id: grade distance}`` of the pairs whose judges' latest labels differ."""
    return _latest_passes(session, pid)[0]


def _latest_passes(session: Session, pid: int) -> tuple[dict[int, int], dict[int, int]]:
    """The two queues' pairs from one light pass over the judgments (integers and flags only, in
    answering order: the last row of a judge counts; skips ignored):

    * ``{pair_id: grade distance}`` of the pairs whose judges' latest labels (graded answers) differ;
    * ``{pair_id: grade distance}`` of the pairs where some judge's latest answer (graded, or an
      ungraded "unsure") is marked unsure, the distance over those answers' grades."""
    latest: dict[tuple[int, int], int] = {}
    answer: dict[tuple[int, int], tuple[int | None, bool]] = {}
    for pair_id, judge_id, grade, unsure in plain_rows(session,
        select(Judgment.pair_id, Judgment.judge_id, Judgment.grade, Judgment.unsure)
        .where(Judgment.project_id == pid, Judgment.skipped == false(), pool_labels(),
               Judgment.grade.is_not(None) | (Judgment.unsure == true()))
        .order_by(Judgment.answered_at, Judgment.id)
    ):
        key = (pair_id, judge_id)
        answer[key] = (grade, bool(unsure))
        if grade is not None:
            latest[key] = grade
    return _spread(latest.items()), _unsure_spread(answer)


def _spread(labels) -> dict[int, int]:
    """``{pair_id: highest minus lowest grade}`` of the pairs whose ``((pair_id, judge), grade)``
    labels differ."""
    lo: dict[int, int] = {}
    hi: dict[int, int] = {}
    for (pair_id, _), grade in labels:
        if pair_id in lo:
            lo[pair_id] = min(lo[pair_id], grade)
            hi[pair_id] = max(hi[pair_id], grade)
        else:
            lo[pair_id] = hi[pair_id] = grade
    return {p: hi[p] - lo[p] for p in lo if hi[p] != lo[p]}


def _unsure_spread(answer: dict[tuple[int, int], tuple[int | None, bool]]) -> dict[int, int]:
    flagged = {p for (p, _), (_, unsure) in answer.items() if unsure}
    grades_of: dict[int, list[int]] = defaultdict(list)
    for (p, _), (grade, _) in answer.items():
        if p in flagged and grade is not None:
            grades_of[p].append(grade)
    return {p: (max(grades_of[p]) - min(grades_of[p])) if grades_of[p] else 0 for p in flagged}


def _latest_labels(session: Session, pid: int, pair_ids: list[int], *, ungraded_unsure: bool = False
                   ) -> dict[int, dict[str, JudgeLabel]]:
    """Each judge's latest label of the pairs; ``ungraded_unsure``: an "unsure" answer without a
    grade counts as a label too (the unsure queue shows it; stores from before grades were asked)."""
    out: dict[int, dict[str, JudgeLabel]] = defaultdict(dict)
    graded = Judgment.grade.is_not(None)
    if ungraded_unsure:
        graded = graded | (Judgment.unsure == true())
    for start in range(0, len(pair_ids), 1000):
        for pair_id, judge, grade, note, unsure, version, source, at in session.exec(
            select(Judgment.pair_id, User.name, Judgment.grade, Judgment.note, Judgment.unsure,
                   GuidelinesVersion.version, Judgment.source, Judgment.answered_at)
            .join(User, User.id == Judgment.judge_id)
            .outerjoin(GuidelinesVersion, GuidelinesVersion.id == Judgment.guidelines_version_id)
            .where(Judgment.project_id == pid, Judgment.skipped == false(), graded, pool_labels(),
                   Judgment.pair_id.in_(pair_ids[start:start + 1000]))
            .order_by(Judgment.answered_at, Judgment.id)
        ).all():
            out[pair_id][judge] = JudgeLabel(judge, None if grade is None else int(grade), note, bool(unsure),
                                             version, source, at)  # latest wins
    return out


def _latest_adjudications(session: Session, pid: int, pair_ids: list[int]) -> dict[int, AdjudicationView]:
    out = {}
    for start in range(0, len(pair_ids), 1000):
        for pair_id, lead, grade, reason, issue, version, at in session.exec(
            select(Adjudication.pair_id, User.name, Adjudication.grade, Adjudication.reason,
                   Adjudication.guidelines_issue, GuidelinesVersion.version, Adjudication.created_at)
            .join(User, User.id == Adjudication.lead_id)
            .outerjoin(GuidelinesVersion, GuidelinesVersion.id == Adjudication.guidelines_version_id)
            .where(Adjudication.project_id == pid, Adjudication.pair_id.in_(pair_ids[start:start + 1000]))
            .order_by(Adjudication.created_at, Adjudication.id)
        ).all():
            out[pair_id] = AdjudicationView(lead, int(grade), reason, bool(issue), version, at)  # latest wins
    return out


def disagreements(
    session: Session,
    project: Project | int,
    *,
    include_resolved: bool = False,
    limit: int | None = None,
) -> list[Disagreement]:
    """The adjudication queue of ``project``: pairs whose judges' latest labels differ and that no
    lead has adjudicated (``include_resolved``: adjudicated ones too), largest grade distance
    first, then by qid and docid. ``limit`` caps the list (after sorting)."""
    if limit is not None and limit < 0:
        raise ValueError(f"limit: must be >= 0, got {limit}")
    pid = project_id(project)
    split = _split_pairs(session, pid)
    adjs = _adjudicated(session, pid)
    if not include_resolved:
        split = {p: dist for p, dist in split.items() if p not in adjs}
    if not split:
        return []
    # Details only for the pairs shown: the largest distances first, then by query and document.
    keys = pair_keys(session, sorted(split))
    ids = sorted(split, key=lambda p: (-split[p], *keys[p]))
    if limit is not None:
        ids = ids[:limit]
    return _entries(session, pid, ids, split)


def _entries(session: Session, pid: int, ids: list[int], split: dict[int, int], *, ungraded_unsure: bool = False
             ) -> list[Disagreement]:
    labels = _latest_labels(session, pid, ids, ungraded_unsure=ungraded_unsure)
    views = _latest_adjudications(session, pid, ids)
    info = {}
    for start in range(0, len(ids), 1000):
        for pair_id, qid, qtext, docid, title, text in session.exec(
            join_pair_text(select(PoolPair.id, Query.qid, Query.text, Document.docid, Document.title, Document.text))
            .where(PoolPair.id.in_(ids[start:start + 1000]))
        ).all():
            info[pair_id] = (qid, qtext, docid, title, text)
    out = []
    for pair_id in ids:
        qid, qtext, docid, title, text = info[pair_id]
        by_judge = labels[pair_id]
        out.append(Disagreement(pair_id, qid, qtext, docid, title, text,
                                tuple(by_judge[j] for j in sorted(by_judge)), split[pair_id], views.get(pair_id)))
    return out


def _adjudicated(session: Session, pid: int) -> set[int]:
    return set(session.exec(select(Adjudication.pair_id).where(Adjudication.project_id == pid)).all())


def queue_counts(session: Session, project: Project | int) -> QueueCounts:
    """How many disagreements wait for a lead, and how many were adjudicated (one light pass)."""
    return open_queues(session, project)[0]


def disagreement(session: Session, project: Project | int, pair_id: int) -> Disagreement | None:
    """The queue entry of one pair (resolved or not), or None when its judges agree."""
    pid = project_id(project)
    split = _split_pairs(session, pid)
    if pair_id not in split:
        return None
    return _entries(session, pid, [pair_id], split)[0]


# ------------------------------------------------------------------------------ unsure answers


def _unsure_pairs(session: Session, pid: int) -> dict[int, int]:
    """``{pair_id: grade distance}`` of the pairs where some judge's latest answer (skips ignored) is
    marked unsure."""
    return _latest_passes(session, pid)[1]


def unsure_answers(
    session: Session,
    project: Project | int,
    *,
    include_resolved: bool = False,
    limit: int | None = None,
) -> list[Disagreement]:
    """The "Unsure answers" queue of ``project``: pairs where a judge's latest answer is marked
    unsure (with the judge's best grade and note) and that no lead has adjudicated
    (``include_resolved``: adjudicated ones too), by qid then docid so a lead reads a query's
    pairs together. A lead confirms or changes the grade with :func:`resolve_unsure`. The entries
    are :class:`Disagreement` records (``distance`` is 0 when the judges agree)."""
    if limit is not None and limit < 0:
        raise ValueError(f"limit: must be >= 0, got {limit}")
    pid = project_id(project)
    flagged = _unsure_pairs(session, pid)
    if not include_resolved:
        adjs = _adjudicated(session, pid)
        flagged = {p: d for p, d in flagged.items() if p not in adjs}
    if not flagged:
        return []
    keys = pair_keys(session, sorted(flagged))
    ids = sorted(flagged, key=keys.__getitem__)
    if limit is not None:
        ids = ids[:limit]
    return _entries(session, pid, ids, flagged, ungraded_unsure=True)


def unsure_answer(session: Session, project: Project | int, pair_id: int) -> Disagreement | None:
    """The unsure-queue entry of one pair (resolved or not), or None when no judge is unsure of it."""
    pid = project_id(project)
    flagged = _unsure_pairs(session, pid)
    if pair_id not in flagged:
        return None
    return _entries(session, pid, [pair_id], flagged, ungraded_unsure=True)[0]


def unsure_counts(session: Session, project: Project | int) -> QueueCounts:
    """How many unsure answers wait for a lead, and how many a lead has confirmed or changed."""
    return open_queues(session, project)[1]


def open_queues(session: Session, project: Project | int) -> tuple[QueueCounts, QueueCounts]:
    """:func:`queue_counts` and :func:`unsure_counts` together, from one pass over the judgments
    (the lead pages' navigation shows both on every page)."""
    pid = project_id(project)
    split, flagged = _latest_passes(session, pid)
    done = _adjudicated(session, pid)
    counts = []
    for pairs in (split, flagged):
        resolved = sum(1 for p in pairs if p in done)
        counts.append(QueueCounts(len(pairs) - resolved, resolved))
    return counts[0], counts[1]


def resolve_unsure(
    session: Session,
    project: Project | int,
    *,
    pair_id: int,
    lead: User,
    grade: int,
    reason: str | None = None,
) -> Adjudication:
    """A lead's answer to an unsure pair: confirm the judge's grade or change it, recorded as an
    adjudication (the lead's final word, :mod:`curation.agree.labels`). The reason is optional
    here; without one it says what the lead did ("confirmed the unsure grade 1" or "changed the
    unsure grade 1 to 2"). ValueError when no judge was unsure of the pair, or as :func:`adjudicate`."""
    entry = unsure_answer(session, project, int(pair_id))
    if entry is None:
        raise ValueError(f"pair_id: no judge marked pair {pair_id} unsure")
    reason = (reason or "").strip()
    if not reason:
        try:
            grade_n = int(grade)
        except (TypeError, ValueError):
            grade_n = None
        theirs = sorted({lab.grade for lab in entry.labels if lab.unsure and lab.grade is not None})
        said = "/".join(str(g) for g in theirs) or "none"
        verb = "confirmed" if theirs == [grade_n] else f"changed to {grade}"
        reason = f"unsure answer (grade {said}) {verb} by the lead"
    return adjudicate(session, project, pair_id=int(pair_id), lead=lead, grade=grade, reason=reason)


def pair_id_of(session: Session, project: Project | int, qid: str, docid: str) -> int | None:
    """The id of the pair (``qid``, ``docid``) in ``project``'s pool, or None when it is not there."""
    return session.exec(
        join_pair_text(select(PoolPair.id))
        .where(PoolPair.project_id == project_id(project), Query.qid == qid, Document.docid == docid)
    ).first()


def adjudicate(
    session: Session,
    project: Project | int,
    *,
    pair_id: int,
    lead: User,
    grade: int,
    reason: str,
    guidelines_issue: bool = False,
) -> Adjudication:
    """Record ``lead``'s final ``grade`` for the pair, with an optional ``reason``, and commit. The row notes
    the guidelines version in force and whether the disagreement came from the guidelines.
    Submitting the same decision twice in a row (a double click) records it once.
    ValueError naming the parameter when the lead is not a lead or admin, the grade is not on the
    project's scale or the pair is not the project's."""
    pid = project_id(project)
    proj = session.get(Project, pid)
    if proj is None:
        raise ValueError(f"project: no project with id {pid}")
    if not is_lead(lead):
        role = getattr(lead, "role", None)
        raise ValueError(f"lead: only a lead or admin can adjudicate (this user is a {role})")
    grade = check_grade(grade, [g.grade for g in grades(proj)], proj.scale)
    reason = (reason or "").strip()  # optional: a lead deciding by keyboard may give none
    from curation.formats.limits import check_size

    check_size(reason, "GOLDEN_MAX_REASON_BYTES", "reason", None, "the reason")
    pair = session.get(PoolPair, int(pair_id))
    if pair is None or pair.project_id != pid:
        raise ValueError(f"pair_id: {pair_id} is not a pair of project {proj.name}")
    last = session.exec(
        select(Adjudication).where(Adjudication.pair_id == pair.id)
        .order_by(Adjudication.created_at.desc(), Adjudication.id.desc())
    ).first()
    if (last is not None and last.lead_id == lead.id and last.grade == grade and last.reason == reason
            and bool(last.guidelines_issue) == bool(guidelines_issue)):
        return last
    gv = current_guidelines(session, pid)
    row = Adjudication(project_id=pid, pair_id=pair.id, lead_id=lead.id, grade=grade, reason=reason,
                       guidelines_issue=bool(guidelines_issue), guidelines_version_id=gv.id if gv else None)
    session.add(row)
    record_audit(session, "adjudicate", actor=lead, target=f"pair {pair.id}", project=pid, detail={"grade": grade})
    try:
        session.commit()
    except Exception:
        session.rollback()
        raise
    session.refresh(row)
    return row


def open_guidelines_version(
    session: Session,
    project: Project | int,
    *,
    lead: User,
    text: str,
    note: str | None = None,
) -> tuple[GuidelinesVersion, bool]:
    """Write a new guidelines version from the adjudication screen (a text equal to the current one
    keeps it); judgments made from now on record the new version. Returns (version, is_new)."""
    if not is_lead(lead):
        raise ValueError("lead: only a lead or admin can change the guidelines")
    proj = session.get(Project, project_id(project))
    if proj is None:
        raise ValueError("project: unknown project")
    return set_guidelines(session, proj, text, created_by=lead, note=note)
