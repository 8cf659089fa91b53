"""Known-answer ("gold") pairs: keeping the set, mixing it blind into the judges' queues, reading each
judge's answers on it, and holding a judge found below the bar.

The set: :class:`~curation.store.models.KnownAnswer` rows, one per pool pair, with the accepted
grade(s) (checked against the project's scale: :func:`curation.store.scale.check_grade`), the
teaching text (the adjudication's reason when made from one), where the grades came from, and a
retired time. This stage owns those tables and their SQL; choosing pairs from adjudicated labels
or seed judgments is the agreement stage's (:mod:`curation.agree.known_pairs`), which calls
:func:`add_known` here.

Mixing (:func:`mix_known`): a known-answer pair reaches a judge as an assignment row of kind
``"known"`` placed at a random place among the judge's open main rows (seeded per judge), so that
it is shown with the same statements, template, token and progress counter as any main pair; the
answer is recorded as a Judgment with ``purpose = "known"``, which no reader of labels reads
(:func:`curation.store.models.pool_labels`). A judge never gets a pair they already have in their
queue or have answered, and never the same known-answer pair twice (one row per pair and judge);
a known-answer pair goes between two queries' runs of pairs, never inside one.

Accuracy and holds: :func:`known_records` reads each judge's answers in time order for
:func:`curation.judge.known_answer.judge_accuracy`; :func:`accuracy_report` is the one report the
lead's Progress page and ``golden judging progress`` show; :func:`apply_holds` holds the queue of a
flagged judge when the project asks for it, and :func:`release_hold` is the lead's release.
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import bindparam, false, update
from sqlmodel import Session, select

from curation.judge import known_answer
from curation.judge.known_answer import Accuracy, KnownAnswerRecord, judge_accuracy
from curation.judge.qualification import qualification_pairs
from curation.store.audit import record_audit
from curation.store.lookups import join_pair_text, pair_ids
from curation.store.models import (
    JUDGMENT_KNOWN,
    KNOWN_KIND,
    MAIN_BASE,
    Assignment,
    Document,
    Judgment,
    KnownAnswer,
    KnownAnswerHold,
    PoolPair,
    Project,
    Query,
    User,
    utcnow,
)
from curation.store.scale import check_grade, grade_values

SOURCES = ("adjudication", "seed", "lead")


@dataclass(frozen=True)
class KnownEntry:
    """A pair to add to the set: its qid and docid, the accepted grades, and why."""

    qid: str
    docid: str
    grades: tuple[int, ...]
    reason: str | None = None
    adjudication_id: int | None = None


@dataclass(frozen=True)
class KnownPair:
    """A known-answer pair as listed: where it came from, and how often it was answered."""

    qid: str
    docid: str
    grades: tuple[int, ...]
    reason: str | None
    source: str
    created_by: str | None
    created_at: datetime
    retired_at: datetime | None
    answers: int  # answers judges gave on it as a known-answer pair
    exact: int  # of them, an accepted grade


def accepted_grades(ka: KnownAnswer) -> tuple[int, ...]:
    return known_answer.accepted_grades(ka.accepted_json)


def _pair_ids(session: Session, pid: int, keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], int]:
    wanted = set(keys)
    return {k: i for k, i in pair_ids(session, pid).items() if k in wanted}


def add_known(session: Session, project: Project, entries: Sequence[KnownEntry], *, source: str,
              lead: User | None = None, seed: int = 0) -> int:
    """Add ``entries`` to the project's known-answer set (a pair already in it gets the new grades
    and reason, and is no longer retired), audit it, mix the set into the queues at the project's
    rate, and commit; returns how many pairs were added or changed. ValueError naming the entry
    when a pair is not in the pool or a grade is refused by check_grade; nothing is written then."""
    if source not in SOURCES:
        raise ValueError(f"source: {source!r} is not one of {', '.join(SOURCES)}")
    allowed = grade_values(project)
    ids = _pair_ids(session, project.id, ((e.qid, e.docid) for e in entries))
    existing = {ka.pair_id: ka for ka in session.exec(select(KnownAnswer).where(KnownAnswer.project_id == project.id))}
    now = utcnow()
    changed = 0
    for e in entries:
        pair = ids.get((e.qid, e.docid))
        if pair is None:
            raise ValueError(f"pair {e.qid}/{e.docid}: not in the pool of project {project.name}")
        if not e.grades:
            raise ValueError(f"pair {e.qid}/{e.docid}: give at least one accepted grade")
        grades = sorted({check_grade(g, allowed, project.scale) for g in e.grades})
        ka = existing.get(pair) or KnownAnswer(project_id=project.id, pair_id=pair, accepted_json="[]")
        ka.accepted_json, ka.reason, ka.source = json.dumps(grades), (e.reason or "").strip() or None, source
        ka.adjudication_id, ka.created_by_id, ka.created_at = e.adjudication_id, getattr(lead, "id", None), now
        ka.retired_at = ka.retired_by_id = None
        existing[pair] = ka
        session.add(ka)
        changed += 1
    if changed:
        record_audit(session, "known_answer_added", actor=lead, target=project.name, project=project,
                     detail={"pairs": changed, "source": source})
    session.flush()
    mix_known(session, project, seed=seed)
    session.commit()
    return changed


def retire_known(session: Session, project: Project, keys: Sequence[tuple[str, str]], *,
                 lead: User | None = None) -> int:
    """Retire known-answer pairs (no longer mixed into queues; answers given still count): their
    open known-answer rows leave the queues. Commits; returns how many were retired. ValueError for
    a pair that is not in the set."""
    ids = _pair_ids(session, project.id, keys)
    now, n = utcnow(), 0
    for key in keys:
        ka = session.exec(select(KnownAnswer).where(KnownAnswer.pair_id == ids.get(key, -1))).first()
        if ka is None or ka.project_id != project.id:
            raise ValueError(f"pair {key[0]}/{key[1]}: not a known-answer pair of project {project.name}")
        if ka.retired_at is None:
            ka.retired_at, ka.retired_by_id = now, getattr(lead, "id", None)
            session.add(ka)
            n += 1
        for a in session.exec(select(Assignment).where(Assignment.pair_id == ka.pair_id, Assignment.kind == KNOWN_KIND,
                                                       Assignment.done_at.is_(None), Assignment.skipped == false())):
            session.delete(a)
    if n:
        record_audit(session, "known_answer_retired", actor=lead, target=project.name, project=project,
                     detail={"pairs": n})
    session.commit()
    return n


def list_known(session: Session, project: Project, *, include_retired: bool = True) -> list[KnownPair]:
    """The project's known-answer pairs, by qid and docid, with how often judges answered them."""
    tally: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    kas = session.exec(select(KnownAnswer).where(KnownAnswer.project_id == project.id)).all()
    accepted = {ka.pair_id: accepted_grades(ka) for ka in kas}
    for pair_id, grade in session.exec(select(Judgment.pair_id, Judgment.grade).where(
            Judgment.project_id == project.id, Judgment.purpose == JUDGMENT_KNOWN, Judgment.grade.is_not(None),
            Judgment.skipped == false())).all():
        tally[pair_id][0] += 1
        tally[pair_id][1] += int(grade in accepted.get(pair_id, ()))
    keys = dict(((i, (q, d)) for q, d, i in session.exec(join_pair_text(
        select(Query.qid, Document.docid, PoolPair.id)).where(PoolPair.id.in_(list(accepted) or [-1]))).all()))
    names = dict(session.exec(select(User.id, User.name)).all())
    out = [KnownPair(*keys[ka.pair_id], accepted[ka.pair_id], ka.reason, ka.source, names.get(ka.created_by_id),
                     ka.created_at, ka.retired_at, *tally[ka.pair_id])
           for ka in kas if include_retired or ka.retired_at is None]
    return sorted(out, key=lambda k: (k.qid, k.docid))


def set_known_settings(session: Session, project: Project, *, lead: User | None = None, rate: int | None = None,
                       bar: float | None = None, hold: bool | None = None) -> Project:
    """Change the project's known-answer rate (one in ``rate`` items a judge is shown; 0: none), the
    accuracy bar and whether a judge found below it is held; audit, mix at the new rate, commit."""
    changes = {}
    if rate is not None:
        if isinstance(rate, bool) or not isinstance(rate, int) or rate < 0 or rate == 1:
            raise ValueError(f"rate: {rate!r}; give N >= 2 (one known-answer pair in every N pairs) or 0 (none)")
        changes["known_answer_rate"] = rate
    if bar is not None:
        if not 0.0 < float(bar) < 1.0:
            raise ValueError(f"bar: {bar!r}; an exact accuracy between 0 and 1, e.g. 0.6")
        changes["known_answer_bar"] = float(bar)
    if hold is not None:
        changes["known_answer_hold"] = bool(hold)
    for key, value in changes.items():
        setattr(project, key, value)
    session.add(project)
    if changes:
        record_audit(session, "known_answer_settings", actor=lead, target=project.name, project=project,
                     detail=changes)
    session.flush()
    mix_known(session, project)
    session.commit()
    return project


# ---------------------------------------------------------------------------------------------
# Mixing into the queues


def _live_known(session: Session, pid: int) -> list[int]:
    """The pair ids of the project's known-answer pairs that may be mixed in: not retired, live."""
    return sorted(session.exec(
        select(KnownAnswer.pair_id).join(PoolPair, PoolPair.id == KnownAnswer.pair_id)
        .join(Query, Query.id == PoolPair.query_id).join(Document, Document.id == PoolPair.document_id)
        .where(KnownAnswer.project_id == pid, KnownAnswer.retired_at.is_(None), Query.status != "dropped",
               Document.excluded == false())).all())


def known_target(main_rows: int, rate: int) -> int:
    """How many known-answer rows go with ``main_rows`` main rows at one in ``rate``: so that one item
    in ``rate`` a judge is shown is a known-answer pair."""
    return main_rows // (rate - 1) if rate >= 2 else 0


def mix_known(session: Session, project: Project, *, seed: int = 0) -> dict[int, int]:
    """Top up each judge's known-answer rows to the project's rate (:func:`known_target` of their
    main rows), at random places among their open main work; returns {judge id: rows added}. Does
    not commit. Only pairs the judge has no row of, never answered and never met in their
    qualification (:mod:`curation.judge.qualification`) are used, in a seeded order."""
    rate = int(project.known_answer_rate or 0)
    pool = _live_known(session, project.id) if rate >= 2 else []
    if not pool:
        return {}
    rows = session.exec(select(Assignment.id, Assignment.judge_id, Assignment.pair_id, Assignment.kind,
                               Assignment.position, Assignment.done_at).where(
        Assignment.project_id == project.id)).all()
    answered = set(session.exec(select(Judgment.judge_id, Judgment.pair_id).where(
        Judgment.project_id == project.id).distinct()).all())
    answered |= qualification_pairs(session, project.id)
    by_judge = defaultdict(list)
    for row in rows:
        by_judge[row[1]].append(row)
    added = {}
    for jid, mine in sorted(by_judge.items()):
        n = _mix_judge(session, project.id, jid, mine, pool, answered, rate, seed)
        if n:
            added[jid] = n
    return added


def _query_of(session: Session, pair_id: int) -> int:
    cache = session.info.setdefault("golden_query_of", {})
    if pair_id not in cache:
        pp = session.get(PoolPair, pair_id)
        cache.update(dict(session.exec(select(PoolPair.id, PoolPair.query_id).where(
            PoolPair.project_id == pp.project_id)).all()))
    return cache[pair_id]


def _mix_judge(session: Session, pid: int, jid: int, mine: list, pool: list[int], answered: set, rate: int,
               seed: int) -> int:
    main = [r for r in mine if r[3] in ("main", KNOWN_KIND)]
    need = known_target(sum(1 for r in main if r[3] == "main"), rate) - sum(1 for r in main if r[3] == KNOWN_KIND)
    have = {r[2] for r in mine}
    free = [p for p in pool if p not in have and (jid, p) not in answered]
    if need <= 0 or not free:
        return 0
    rng = random.Random(f"known:{seed}:{pid}:{jid}")
    rng.shuffle(free)
    open_rows = sorted((r for r in main if r[5] is None), key=lambda r: (r[4], r[0]))
    order: list = [r[0] for r in open_rows]
    query_of = {r[0]: _query_of(session, r[2]) for r in open_rows}
    runs: dict[int, list[int]] = defaultdict(list)  # query -> the places of its open pairs in the queue
    for i, aid in enumerate(order):
        runs[query_of[aid]].append(i)
    # Pairs of a query the judge is working on first: such a pair goes among that query's own pairs
    # (and counts in its "document i of n"), so it looks like the rest of the query's documents; a
    # lone pair of a query met nowhere else would, over time, tell the checks apart.
    free.sort(key=lambda p: _query_of(session, p) not in runs)
    chosen = free[:need]
    # Otherwise between two queries' runs of pairs (or at either end), never inside another query's.
    ends = [i for i in range(len(order) + 1)
            if i in (0, len(order)) or query_of[order[i - 1]] != query_of[order[i]]]
    between, inside = defaultdict(list), defaultdict(list)  # new rows to go before order[i]
    for p in chosen:
        run = runs.get(_query_of(session, p))
        if run:  # just before one of its query's pairs: next to it whatever else goes there
            inside[rng.choice(run)].append(("new", p))
        else:
            between[rng.choice(ends)].append(("new", p))
    order = [x for i, item in enumerate(order) for x in (*between[i], *inside[i], item)] + between[len(order)]
    top = max([r[4] for r in main] + [MAIN_BASE - 1])
    positions = sorted(r[4] for r in open_rows) + list(range(top + 1, top + 1 + len(chosen)))
    now = utcnow()
    moves = []
    old_pos = {r[0]: r[4] for r in open_rows}
    for item, pos in zip(order, positions, strict=True):
        if isinstance(item, tuple):
            session.add(Assignment(project_id=pid, pair_id=item[1], judge_id=jid, kind=KNOWN_KIND, position=pos,
                                   created_at=now, skipped=False))
        elif old_pos[item] != pos:
            moves.append({"aid": item, "pos": pos})
    if moves:
        a = Assignment.__table__
        stmt = update(a).where(a.c.id == bindparam("aid")).values(position=bindparam("pos"))
        session.connection().execute(stmt, moves)
    session.flush()
    return len(chosen)


# ---------------------------------------------------------------------------------------------
# Accuracy and holds


def known_records(session: Session, project: Project | int, *, judge_id: int | None = None
                  ) -> dict[int, list[KnownAnswerRecord]]:
    """Each judge's answers on known-answer pairs, oldest first: {judge id: records}. A pair answered
    again (the judge went back) counts once, with its latest grade, at its first answer's place;
    skips are not answers."""
    pid = getattr(project, "id", project)
    accepted = {ka.pair_id: accepted_grades(ka)
                for ka in session.exec(select(KnownAnswer).where(KnownAnswer.project_id == pid))}
    stmt = select(Judgment.judge_id, Judgment.pair_id, Judgment.grade, Judgment.answered_at).where(
        Judgment.project_id == pid, Judgment.purpose == JUDGMENT_KNOWN, Judgment.skipped == false(),
        Judgment.grade.is_not(None)).order_by(Judgment.answered_at, Judgment.id)
    if judge_id is not None:
        stmt = stmt.where(Judgment.judge_id == judge_id)
    latest: dict[int, dict[int, tuple[int, datetime]]] = defaultdict(dict)
    for jid, pair_id, grade, at in session.exec(stmt).all():
        first_at = latest[jid].get(pair_id, (None, at))[1]
        latest[jid][pair_id] = (int(grade), first_at)  # dicts keep the first insertion's place
    return {jid: [KnownAnswerRecord(g, accepted.get(p, ()), at) for p, (g, at) in pairs.items()]
            for jid, pairs in latest.items()}


@dataclass(frozen=True)
class JudgeAccuracy:
    """One judge's line of the known-answer report."""

    judge: str
    judge_id: int
    accuracy: Accuracy
    held: bool  # the judge's queue is held now
    held_at: datetime | None


def _open_holds(session: Session, pid: int) -> dict[int, KnownAnswerHold]:
    return {h.judge_id: h for h in session.exec(select(KnownAnswerHold).where(
        KnownAnswerHold.project_id == pid, KnownAnswerHold.released_at.is_(None)))}


def _accuracy_since_release(session: Session, pid: int, jid: int, records: list, bar: float) -> Accuracy:
    """The judge's accuracy on the answers given since a lead last released them (all when never)."""
    last = session.exec(select(KnownAnswerHold.released_answers).where(
        KnownAnswerHold.project_id == pid, KnownAnswerHold.judge_id == jid, KnownAnswerHold.released_at.is_not(None))
        .order_by(KnownAnswerHold.released_at.desc()).limit(1)).first()
    return judge_accuracy(records[int(last or 0):], bar=bar)


def accuracy_report(session: Session, project: Project) -> list[JudgeAccuracy]:
    """Every judge with known-answer work in the project, by name: answered, exact and within-one
    accuracy with intervals, the recent window, the state against the project's bar, and whether
    their queue is held. The one report of the lead's Progress page and ``golden judging progress``."""
    records = known_records(session, project)
    with_rows = set(session.exec(select(Assignment.judge_id).where(
        Assignment.project_id == project.id, Assignment.kind == KNOWN_KIND).distinct()).all())
    holds = _open_holds(session, project.id)
    ids = list(with_rows | set(records))
    names = dict(session.exec(select(User.id, User.name).where(User.id.in_(ids or [-1]))).all())
    bar = float(project.known_answer_bar)
    out = [JudgeAccuracy(names[jid], jid, judge_accuracy(records.get(jid, []), bar=bar), jid in holds,
                         holds[jid].held_at if jid in holds else None) for jid in with_rows | set(records)]
    return sorted(out, key=lambda r: r.judge)


def apply_holds(session: Session, project: Project, *, judge_id: int | None = None) -> list[int]:
    """With the project's hold-below-bar on, hold the queue of every judge (or only ``judge_id``)
    whose known-answer accuracy is below the bar, counting only the answers given since a lead last
    released them; audit and commit. Returns the judges held now."""
    if not project.known_answer_hold:
        return []
    records = known_records(session, project, judge_id=judge_id)
    holds = _open_holds(session, project.id)
    held = []
    for jid, recs in sorted(records.items()):
        if jid in holds:
            continue
        acc = _accuracy_since_release(session, project.id, jid, recs, float(project.known_answer_bar))
        if acc.flagged:
            session.add(KnownAnswerHold(project_id=project.id, judge_id=jid, answers=len(recs),
                                        exact=acc.exact.value, held_at=utcnow()))
            record_audit(session, "judge_held", actor=None, target=f"judge {jid}", project=project,
                         detail={"answers": len(recs), "exact": acc.exact.value, "bar": acc.bar})
            held.append(jid)
    if held:
        session.commit()
    return held


def release_hold(session: Session, project: Project, judge: User, lead: User) -> KnownAnswerHold:
    """A lead releases ``judge``'s held queue: records who and when, and how many known-answer
    answers the judge had (they are not held again until enough answers after these show them below
    the bar). Audits and commits; ValueError when the judge is not held."""
    hold = _open_holds(session, project.id).get(judge.id)
    if hold is None:
        raise ValueError(f"judge {judge.name!r} is not held in project {project.name}")
    hold.released_at, hold.released_by_id = utcnow(), lead.id
    hold.released_answers = len(known_records(session, project, judge_id=judge.id).get(judge.id, []))
    session.add(hold)
    record_audit(session, "hold_released", actor=lead, target=judge.name, project=project,
                 detail={"answers": hold.released_answers})
    session.commit()
    return hold


def is_held(session: Session, project_id: int, judge_id: int) -> bool:
    return session.exec(select(KnownAnswerHold.id).where(
        KnownAnswerHold.project_id == project_id, KnownAnswerHold.judge_id == judge_id,
        KnownAnswerHold.released_at.is_(None)).limit(1)).first() is not None


def set_summary(session: Session, project: Project) -> dict:
    """The known-answer set for an export's manifest: its size (pairs not retired, and in all) and
    a sha256 of its content (pairs and accepted grades, sorted)."""
    import hashlib

    pairs = list_known(session, project)
    lines = "".join(f"{k.qid}\t{k.docid}\t{','.join(map(str, k.grades))}\t{'retired' if k.retired_at else ''}\n"
                    for k in pairs)
    return {"pairs": sum(1 for k in pairs if k.retired_at is None), "pairs_all": len(pairs),
            "sha256": hashlib.sha256(lines.encode()).hexdigest()}
