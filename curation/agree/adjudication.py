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

from sqlalchemy import false
from sqlmodel import Session, select

from curation.agree.labels import LEAD_ROLES
from curation.store.lookups import join_pair_text, project_id
from curation.store.models import Adjudication, Document, GuidelinesVersion, Judgment, PoolPair, Project, Query, User
from curation.store.projects import current_guidelines, grades, set_guidelines


@dataclass(frozen=True)
class JudgeLabel:
    """One judge's latest label of a pair, as a lead sees it."""

    judge: str
    grade: int
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
    """``{pair_id: grade distance}`` of the pairs whose judges' latest labels differ, from a light
    pass over the judgments (integers only, in answering order: the last row of a judge counts)."""
    latest: dict[tuple[int, int], int] = {}
    for pair_id, judge_id, grade in session.exec(
        select(Judgment.pair_id, Judgment.judge_id, Judgment.grade)
        .where(Judgment.project_id == pid, Judgment.skipped == false(), Judgment.grade.is_not(None))
        .order_by(Judgment.answered_at, Judgment.id)
    ).all():
        latest[(pair_id, judge_id)] = grade
    lo: dict[int, int] = {}
    hi: dict[int, int] = {}
    for (pair_id, _), grade in latest.items():
        if pair_id in lo:
            lo[pair_id] = min(lo[pair_id], grade)
            hi[pair_id] = max(hi[pair_id], grade)
        else:
            lo[pair_id] = hi[pair_id] = grade
    return {p: hi[p] - lo[p] for p in lo if hi[p] != lo[p]}


def _latest_labels(session: Session, pid: int, pair_ids: list[int]) -> dict[int, dict[str, JudgeLabel]]:
    out: dict[int, dict[str, JudgeLabel]] = defaultdict(dict)
    for start in range(0, len(pair_ids), 1000):
        for pair_id, judge, grade, note, unsure, version, source, at in session.exec(
            select(Judgment.pair_id, User.name, Judgment.grade, Judgment.note, Judgment.unsure,
                   GuidelinesVersion.version, Judgment.source, Judgment.answered_at)
            .join(User, User.id == Judgment.judge_id)
            .outerjoin(GuidelinesVersion, GuidelinesVersion.id == Judgment.guidelines_version_id)
            .where(Judgment.project_id == pid, Judgment.skipped == false(), Judgment.grade.is_not(None),
                   Judgment.pair_id.in_(pair_ids[start:start + 1000]))
            .order_by(Judgment.answered_at, Judgment.id)
        ).all():
            out[pair_id][judge] = JudgeLabel(judge, int(grade), note, bool(unsure), version, source, at)  # latest wins
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
    keys = {}
    ids = sorted(split)
    for start in range(0, len(ids), 1000):
        for pair_id, qid, docid in session.exec(
            join_pair_text(select(PoolPair.id, Query.qid, Document.docid))
            .where(PoolPair.id.in_(ids[start:start + 1000]))
        ).all():
            keys[pair_id] = (-split[pair_id], qid, docid)
    ids = sorted(ids, key=keys.__getitem__)
    if limit is not None:
        ids = ids[:limit]
    return _entries(session, pid, ids, split)


def _entries(session: Session, pid: int, ids: list[int], split: dict[int, int]) -> list[Disagreement]:
    labels = _latest_labels(session, pid, ids)
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
    pid = project_id(project)
    split = _split_pairs(session, pid)
    done = _adjudicated(session, pid)
    resolved = sum(1 for p in split if p in done)
    return QueueCounts(len(split) - resolved, resolved)


def disagreement(session: Session, project: Project | int, pair_id: int) -> Disagreement | None:
    """The queue entry of one pair (resolved or not), or None when its judges agree."""
    pid = project_id(project)
    split = _split_pairs(session, pid)
    if pair_id not in split:
        return None
    return _entries(session, pid, [pair_id], split)[0]


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
    if lead is None or lead.role not in LEAD_ROLES:
        role = getattr(lead, "role", None)
        raise ValueError(f"lead: only a lead or admin can adjudicate (this user is a {role})")
    scale = [g.grade for g in grades(proj)]
    try:
        grade = int(grade)
    except (TypeError, ValueError):
        raise ValueError(f"grade: {grade!r} is not a number of the scale {scale}") from None
    if grade not in scale:
        raise ValueError(f"grade: {grade} is not on the project's scale {scale}")
    reason = (reason or "").strip()  # optional: a lead deciding by keyboard may give none (issue 14)
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
    if lead is None or lead.role not in LEAD_ROLES:
        raise ValueError("lead: only a lead or admin can change the guidelines")
    proj = session.get(Project, project_id(project))
    if proj is None:
        raise ValueError("project: unknown project")
    return set_guidelines(session, proj, text, created_by=lead, note=note)
