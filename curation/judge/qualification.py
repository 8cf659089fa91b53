"""Qualification: a new judge passes a short set of known-answer pairs before any main work.

A project asks for it with ``Project.qualification_pairs`` (N known-answer pairs; 0: none), a pass
mark (``qualification_pass``: the share of exact answers needed) and ``qualification_retries``
(further attempts after a failed one; default 1). Until the judge has passed, the judging page
shows the qualification instead of their queue (the overlap set included): the pairs are labelled
as qualification, the one place known-answer pairs are not blind, and after each answer the judge is
taught: the accepted grade(s) and why (the known-answer pair's reason, else the guidelines'
description of the accepted grade). Main work never teaches.

Who must qualify: every judge of the project who has not passed and has no label of the pool in it.
A judge who was already labelling pairs when the lead switched qualification on carries on (their
known-answer accuracy watches them instead); a judge who has not labelled anything cannot start
without passing, so the rule does not change under them.

Attempts: :class:`~curation.store.models.QualificationAttempt` rows (attempt 1, 2, ...), each with its
N drawn pairs as :class:`~curation.store.models.QualificationAnswer` rows, answered in order. The
draw is seeded by project, judge and attempt, from the live known-answer pairs the judge has no
queue row of and never answered; a retry takes pairs the judge has not seen in an earlier attempt
first, and only when the set is too small reuses earlier ones. An attempt is passed when the share
of exact answers reaches the pass mark. After ``1 + retries`` failed attempts the judge is blocked
and the lead's Progress shows it; a lead may grant one more attempt (audited), which is drawn at
once. Qualification answers live only in these tables: never a Judgment, so never a label of the
pool, never in agreement, exports or the known-answer accuracy of main work; and a pair a judge met
in qualification is never mixed into their main work (:func:`qualification_pairs`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import case, false, func, true
from sqlmodel import Session, select

from curation.judge.known_answer import accepted_grades
from curation.store.audit import record_audit
from curation.store.models import (
    Assignment,
    Document,
    Judgment,
    KnownAnswer,
    PoolPair,
    Project,
    QualificationAnswer,
    QualificationAttempt,
    Query,
    QueryNeed,
    User,
    pool_labels,
    utcnow,
)
from curation.store.scale import check_grade, grade_values, grades

# a judge's qualification state (QualificationState.status)
NOT_REQUIRED = "not required"  # the project asks for no qualification
EXEMPT = "exempt"  # labelled pairs before qualification was asked for
PASSED = "passed"
IN_PROGRESS = "in progress"  # an attempt is open (or about to be drawn)
FAILED = "failed"  # the last attempt failed; another is allowed
BLOCKED = "blocked"  # every allowed attempt failed: a lead must grant another
UNAVAILABLE = "unavailable"  # too few known-answer pairs to draw an attempt
OPEN_STATES = (IN_PROGRESS, FAILED, BLOCKED, UNAVAILABLE)  # main work is blocked in these


@dataclass(frozen=True)
class QualificationState:
    """Where a judge stands in a project's qualification."""

    status: str
    attempt: int  # the latest attempt's number (0: none yet)
    attempts_allowed: int  # 1 + retries + attempts a lead granted
    pairs: int  # the project's N
    answered: int  # in the latest attempt
    correct: int  # exact answers in the latest attempt
    pass_mark: float
    passed_at: datetime | None = None

    @property
    def blocks_work(self) -> bool:
        return self.status in OPEN_STATES

    @property
    def needed(self) -> int:
        """Exact answers an attempt needs to pass."""
        return _needed(self.pairs, self.pass_mark)


@dataclass(frozen=True)
class QualificationItem:
    """A qualification pair as shown to the judge (untrusted text: render escaped)."""

    attempt: int
    position: int  # 1-based
    total: int
    qid: str
    query_text: str
    docid: str
    doc_title: str | None
    doc_text: str
    doc_url: str | None
    need_description: str | None
    need_narrative: str | None


@dataclass(frozen=True)
class Teaching:
    """What the judge is shown after answering a qualification pair."""

    attempt: int
    position: int
    total: int
    grade: int  # the judge's answer
    accepted: tuple[int, ...]
    exact: bool
    reason: str  # the pair's reason, else the guidelines' description of the accepted grade(s)
    reason_from: str  # "pair" or "guidelines"
    names: dict[int, str]  # grade -> its name on the scale


def _needed(pairs: int, pass_mark: float) -> int:
    """The fewest exact answers of ``pairs`` whose share reaches ``pass_mark`` (a small tolerance so
    that 0.8 of 10 is 8, not 9, whatever the float)."""
    need = 0
    while need < pairs and need / pairs < pass_mark - 1e-9:
        need += 1
    return need


def required(project) -> bool:
    return int(getattr(project, "qualification_pairs", 0) or 0) > 0


def _attempts(session: Session, pid: int, jid: int) -> list[QualificationAttempt]:
    return list(session.exec(select(QualificationAttempt).where(
        QualificationAttempt.project_id == pid, QualificationAttempt.judge_id == jid)
        .order_by(QualificationAttempt.attempt)))


def _has_pool_labels(session: Session, pid: int, jid: int) -> bool:
    return session.exec(select(Judgment.id).where(Judgment.judge_id == jid, Judgment.project_id == pid,
                                                  pool_labels()).limit(1)).first() is not None


def _answered_count(session: Session, attempt_id: int) -> tuple[int, int]:
    """(answered, exact) in an attempt."""
    answered, exact = session.exec(select(func.count(QualificationAnswer.grade),
                                          func.sum(case((QualificationAnswer.exact == true(), 1), else_=0)))
                                   .where(QualificationAnswer.attempt_id == attempt_id)).one()
    return int(answered or 0), int(exact or 0)


def qualification_state(session: Session, project: Project, judge: User | int) -> QualificationState:
    """The judge's qualification state in ``project`` (read only)."""
    jid = getattr(judge, "id", judge)
    pairs, mark = int(project.qualification_pairs or 0), float(project.qualification_pass)
    attempts = _attempts(session, project.id, jid) if pairs else []
    granted = sum(1 for a in attempts if a.granted_by_id is not None)
    allowed = 1 + int(project.qualification_retries or 0) + granted
    passed = next((a for a in attempts if a.passed), None)
    last = attempts[-1] if attempts else None
    answered, correct = _answered_count(session, last.id) if last else (0, 0)
    n = last.attempt if last else 0

    def state(status: str) -> QualificationState:
        return QualificationState(status, n, allowed, pairs, answered, correct, mark,
                                  passed.finished_at if passed else None)

    if passed is not None:
        return state(PASSED)
    if not pairs:
        return state(NOT_REQUIRED)
    if not attempts and _has_pool_labels(session, project.id, jid):
        return state(EXEMPT)
    if last is None or last.finished_at is None:
        if last is None and len(_candidates(session, project, jid, set())) < pairs:
            return state(UNAVAILABLE)
        return state(IN_PROGRESS)
    return state(FAILED if len(attempts) < allowed else BLOCKED)


def blocks_work(session: Session, project, judge: User | int) -> bool:
    """Whether the judge must (still) qualify before main work: none of the cost when the project
    asks for no qualification (the judging page's check on every visit)."""
    if not required(project):
        return False
    full = project if isinstance(project, Project) else session.get(Project, project.id)
    return qualification_state(session, full, judge).blocks_work


def _candidates(session: Session, project: Project, jid: int, seen: set[int]) -> list[tuple[int, int]]:
    """(known-answer id, pair id) of the live known-answer pairs the judge may be given: not retired,
    of a query not dropped and a document not excluded, not in the judge's queue, never answered by
    them; pairs in ``seen`` (earlier attempts) last. Ordered by pair id (the draw shuffles)."""
    rows = session.exec(
        select(KnownAnswer.id, KnownAnswer.pair_id).join(PoolPair, PoolPair.id == KnownAnswer.pair_id)
        .join(Query, Query.id == PoolPair.query_id).join(Document, Document.id == PoolPair.document_id)
        .where(KnownAnswer.project_id == project.id, KnownAnswer.retired_at.is_(None), Query.status != "dropped",
               Document.excluded == false())
        .order_by(KnownAnswer.pair_id)).all()
    mine = set(session.exec(select(Assignment.pair_id).where(Assignment.project_id == project.id,
                                                             Assignment.judge_id == jid)).all())
    mine |= set(session.exec(select(Judgment.pair_id).where(Judgment.project_id == project.id,
                                                            Judgment.judge_id == jid).distinct()).all())
    return [(kid, pid) for kid, pid in rows if pid not in mine]


def start_attempt(session: Session, project: Project, judge: User, *, granted_by: User | None = None
                  ) -> QualificationAttempt:
    """Draw the judge's next attempt (seeded by project, judge and attempt number): fresh pairs first.
    ValueError when there are too few known-answer pairs, or when the judge may not start one
    (passed, an attempt open, or blocked without a lead's grant). Does not commit."""
    pairs = int(project.qualification_pairs or 0)
    if pairs <= 0:
        raise ValueError(f"project {project.name} asks for no qualification")
    state = qualification_state(session, project, judge)
    if granted_by is None and state.status not in (IN_PROGRESS, FAILED):
        raise ValueError(f"judge {judge.name}: cannot start a qualification attempt ({state.status})")
    if granted_by is not None and state.status != BLOCKED:
        raise ValueError(f"judge {judge.name}: only a blocked judge is granted another attempt ({state.status})")
    attempts = _attempts(session, project.id, judge.id)
    if attempts and attempts[-1].finished_at is None:
        return attempts[-1]
    seen = set(session.exec(select(QualificationAnswer.pair_id).join(
        QualificationAttempt, QualificationAttempt.id == QualificationAnswer.attempt_id).where(
        QualificationAttempt.project_id == project.id, QualificationAttempt.judge_id == judge.id)).all())
    cands = _candidates(session, project, judge.id, seen)
    if len(cands) < pairs:
        raise ValueError(f"project {project.name}: {len(cands)} known-answer pairs can be given to {judge.name}, "
                         f"fewer than the {pairs} a qualification attempt needs (golden judging gold add)")
    number = (attempts[-1].attempt if attempts else 0) + 1
    rng = random.Random(f"qualification:{project.id}:{judge.id}:{number}")
    fresh = [c for c in cands if c[1] not in seen]
    used = [c for c in cands if c[1] in seen]
    rng.shuffle(fresh)
    rng.shuffle(used)
    drawn = (fresh + used)[:pairs]
    rng.shuffle(drawn)
    attempt = QualificationAttempt(project_id=project.id, judge_id=judge.id, attempt=number, pairs=pairs,
                                   pass_mark=float(project.qualification_pass), started_at=utcnow(),
                                   granted_by_id=getattr(granted_by, "id", None))
    session.add(attempt)
    session.flush()
    for position, (kid, pid) in enumerate(drawn, start=1):
        session.add(QualificationAnswer(attempt_id=attempt.id, position=position, known_answer_id=kid, pair_id=pid))
    session.flush()
    return attempt


def _open_attempt(session: Session, project: Project, judge: User) -> QualificationAttempt | None:
    attempts = _attempts(session, project.id, judge.id)
    return attempts[-1] if attempts and attempts[-1].finished_at is None else None


def next_item(session: Session, project: Project, judge: User) -> QualificationItem | None:
    """The judge's next unanswered qualification pair, drawing the attempt when none is open and one
    is allowed (committed); None when there is nothing to answer (passed, failed, blocked)."""
    state = qualification_state(session, project, judge)
    if state.status not in (IN_PROGRESS,):
        return None
    attempt = _open_attempt(session, project, judge) or start_attempt(session, project, judge)
    session.commit()
    row = session.exec(
        select(QualificationAnswer.position, QualificationAnswer.pair_id)
        .where(QualificationAnswer.attempt_id == attempt.id, QualificationAnswer.grade.is_(None))
        .order_by(QualificationAnswer.position)).first()
    if row is None:
        return None
    position, pair_id = row
    return _item(session, attempt, position, pair_id)


def _item(session: Session, attempt: QualificationAttempt, position: int, pair_id: int) -> QualificationItem:
    qid, qtext, query_pk, docid, title, text, url = session.exec(
        select(Query.qid, Query.text, Query.id, Document.docid, Document.title, Document.text, Document.url)
        .select_from(PoolPair).join(Query, Query.id == PoolPair.query_id)
        .join(Document, Document.id == PoolPair.document_id).where(PoolPair.id == pair_id)).one()
    need = session.exec(select(QueryNeed.description, QueryNeed.narrative).where(QueryNeed.query_id == query_pk)
                        .order_by(QueryNeed.version.desc())).first()
    return QualificationItem(attempt.attempt, position, attempt.pairs, qid, qtext, docid, title, text, url,
                             need[0] if need else None, need[1] if need else None)


def answer(session: Session, project: Project, judge: User, *, attempt: int, position: int, grade) -> Teaching:
    """Record the judge's ``grade`` for the pair at ``position`` of their open attempt ``attempt`` and
    return the teaching; the attempt is finished (passed or not) with its last answer. Answering a
    pair already answered changes nothing and returns its teaching again (a resubmitted form).
    LookupError when the pair is not the judge's; ValueError for a grade off the scale. Commits."""
    value = check_grade(grade, grade_values(project), project.scale)
    row = session.exec(select(QualificationAttempt).where(
        QualificationAttempt.project_id == project.id, QualificationAttempt.judge_id == judge.id,
        QualificationAttempt.attempt == attempt)).first()
    item = row and session.exec(select(QualificationAnswer).where(
        QualificationAnswer.attempt_id == row.id, QualificationAnswer.position == position)).first()
    if not item:
        raise LookupError("not a qualification pair of this judge")
    if item.grade is None and row.finished_at is None:
        known = session.get(KnownAnswer, item.known_answer_id)
        item.grade, item.answered_at = value, utcnow()
        item.exact = value in accepted_grades(known.accepted_json)
        session.add(item)
        session.flush()
        answered, exact = _answered_count(session, row.id)
        if answered >= row.pairs:
            row.finished_at, row.correct = utcnow(), exact
            row.passed = exact >= _needed(row.pairs, row.pass_mark)
            session.add(row)
        session.commit()
    return teaching(session, project, judge, attempt=attempt, position=position)


def teaching(session: Session, project: Project, judge: User, *, attempt: int, position: int) -> Teaching:
    """The teaching for an answered qualification pair of the judge (LookupError otherwise)."""
    row = session.exec(
        select(QualificationAnswer, QualificationAttempt.pairs).join(
            QualificationAttempt, QualificationAttempt.id == QualificationAnswer.attempt_id)
        .where(QualificationAttempt.project_id == project.id, QualificationAttempt.judge_id == judge.id,
               QualificationAttempt.attempt == attempt, QualificationAnswer.position == position)).first()
    if row is None or row[0].grade is None:
        raise LookupError("not an answered qualification pair of this judge")
    item, total = row
    known = session.get(KnownAnswer, item.known_answer_id)
    accepted = accepted_grades(known.accepted_json)
    scale = {g.grade: g for g in grades(project)}
    if known.reason:
        reason, source = known.reason, "pair"
    else:
        reason = " ".join(f"{scale[g].name}: {scale[g].description}" for g in accepted if g in scale)
        source = "guidelines"
    return Teaching(attempt, position, total, int(item.grade), accepted, bool(item.exact), reason, source,
                    {g: s.name for g, s in scale.items()})


def grant_attempt(session: Session, project: Project, judge: User, lead: User) -> QualificationAttempt:
    """A lead gives a blocked judge one more attempt, drawn at once; audited; commits."""
    attempt = start_attempt(session, project, judge, granted_by=lead)
    record_audit(session, "qualification_granted", actor=lead, target=judge.name, project=project,
                 detail={"attempt": attempt.attempt})
    session.commit()
    return attempt


def set_qualification(session: Session, project: Project, *, lead: User | None = None, pairs: int | None = None,
                      pass_mark: float | None = None, retries: int | None = None) -> dict:
    """Change the project's qualification settings (N pairs, 0: none; the pass mark, a share in
    (0, 1]; the retries after a failed attempt); audited; commits. Returns what changed."""
    changes = {}
    if pairs is not None:
        if isinstance(pairs, bool) or not isinstance(pairs, int) or pairs < 0:
            raise ValueError(f"qualification pairs: {pairs!r}; give a number of pairs, or 0 for no qualification")
        changes["qualification_pairs"] = pairs
    if pass_mark is not None:
        if not 0.0 < float(pass_mark) <= 1.0:
            raise ValueError(f"pass mark: {pass_mark!r}; a share of exact answers above 0 and at most 1, e.g. 0.8")
        changes["qualification_pass"] = float(pass_mark)
    if retries is not None:
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise ValueError(f"retries: {retries!r}; give 0 or more")
        changes["qualification_retries"] = retries
    changes = {k: v for k, v in changes.items() if getattr(project, k) != v}
    for key, value in changes.items():
        setattr(project, key, value)
    if changes:
        session.add(project)
        record_audit(session, "qualification_settings", actor=lead, target=project.name, project=project,
                     detail=changes)
    session.commit()
    return changes


def qualification_pairs(session: Session, project_id: int) -> set[tuple[int, int]]:
    """(judge id, pair id) of every pair drawn into a judge's qualification: never mixed into that
    judge's main work."""
    return set(session.exec(select(QualificationAttempt.judge_id, QualificationAnswer.pair_id).join(
        QualificationAttempt, QualificationAttempt.id == QualificationAnswer.attempt_id).where(
        QualificationAttempt.project_id == project_id)).all())


def met_in_qualification(session: Session, project_id: int, judge_id: int) -> set[int]:
    """The pair ids drawn into ``judge_id``'s qualification attempts in the project: taught to them,
    so never moved into their main work (:func:`curation.judge.judging.release_stale`)."""
    return set(session.exec(select(QualificationAnswer.pair_id).join(
        QualificationAttempt, QualificationAttempt.id == QualificationAnswer.attempt_id).where(
        QualificationAttempt.project_id == project_id, QualificationAttempt.judge_id == judge_id)).all())


@dataclass(frozen=True)
class QualificationRow:
    """A judge's qualification, as Progress shows it."""

    judge: str
    status: str
    attempt: int
    attempts_allowed: int
    answered: int
    correct: int
    pairs: int
    needed: int


def qualification_report(session: Session, project: Project, judge_ids: list[int]) -> list[QualificationRow]:
    """The qualification state of each of ``judge_ids`` (empty when the project asks for none and no
    judge ever qualified), for ``golden judging progress`` and the lead's Progress page."""
    if not required(project) and not session.exec(select(QualificationAttempt.id).where(
            QualificationAttempt.project_id == project.id).limit(1)).first():
        return []
    names = dict(session.exec(select(User.id, User.name).where(User.id.in_(judge_ids))).all()) if judge_ids else {}
    out = []
    for jid in judge_ids:
        s = qualification_state(session, project, jid)
        out.append(QualificationRow(names.get(jid, str(jid)), s.status, s.attempt, s.attempts_allowed, s.answered,
                                    s.correct, s.pairs, s.needed))
    return out
