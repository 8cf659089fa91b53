"""The judge's operations, atomic under concurrency: show a pair, record a label, go back.

Every function here takes the judge's identity and only ever reads or writes that judge's own
assignments; what it returns (:class:`Task`, :class:`Progress`, :class:`SubmitResult`) carries no
provenance (which system retrieved a document, its rank) and no other judge's label.

How it stays correct with many judges at once, on SQLite and PostgreSQL alike:

* Showing a pair issues a one-time token (a :class:`~curation.store.models.PairView` row). A judgment is
  recorded with its token under the unique constraint ``(judge_id, client_token)``, so a double
  click or a resubmitted form records one judgment and returns it again.
* Recording a label first updates the judge's own assignment row (``WHERE judge_id = me``); that
  update takes the row's write lock, so it serialises with the compare-and-set that moves a stale
  pair to another judge (``WHERE judge_id = old AND done_at IS NULL``): a main pair is either
  labelled by its owner or moved, never both. A main pair has one assignment row in all
  (``exclusive_pair_id`` unique), so two judges can never both be given it.
* The history is append-only: relabelling adds a row; the latest row of (pair, judge) counts.
* On PostgreSQL an answer and the next pair's token are sent as a pipeline, before the results of
  earlier statements are known (:func:`curation.store.direct.batch`). So every write whose effect
  depends on an earlier outcome is guarded in SQL: the judgment and the token are inserted only
  while the assignment is still the judge's (``INSERT ... SELECT ... WHERE EXISTS``, or on
  PostgreSQL the judgment inserted from the row the answer's UPDATE returns, in one statement), and
  nothing is written for a pair that was moved meanwhile.

One module of about 980 lines on purpose: the prebuilt Core statements and the functions that run
them share the table aliases, the access rules (``_project``, ``_visible``) and the rule of which
pairs are retired (``_RETIRED``), and the argument above holds only for all of them together
(showing, submitting, the progress count and the stale move must agree on the same rows).
"""

from __future__ import annotations

import functools
import secrets
import statistics
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import and_, bindparam, exists, false, func, insert, literal_column, or_, true, union, update
from sqlalchemy import select as core_select
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from curation.judge.assignment import main_visible
from curation.store.direct import Statement, batch, connection_of, dbapi, read_together, to_datetime
from curation.store.lookups import join_pair_text
from curation.store.models import (
    MAIN_BASE,
    Assignment,
    Document,
    GuidelinesVersion,
    Judgment,
    PairView,
    PoolPair,
    Project,
    Query,
    QueryNeed,
    QueueCount,
    User,
    utcnow,
)
from curation.store.scale import SCALE, stored_grade_values

_A_T = Assignment.__table__
_P_T = Project.__table__

DEFAULT_STALE_AFTER = timedelta(minutes=30)
MAX_NOTE = 2000


class AccessDenied(LookupError):
    """The pair or token is not this judge's (the web layer answers 404 and shows nothing)."""


class PairReassigned(RuntimeError):
    """The pair was moved to another judge after this judge left it idle past the timeout."""


@dataclass(frozen=True)
class Task:
    """A pair as shown to its judge. Deliberately free of provenance and of other judges' labels."""

    token: str  # one-time token the answer must carry
    position: int  # the pair's place in this judge's queue (for "back" and direct links)
    qid: str
    query_text: str
    docid: str
    doc_title: str | None
    doc_text: str
    doc_url: str | None
    guidelines_version: int | None  # the version in force when shown (recorded with the answer)
    need_version: int | None  # the query's information need in force when shown (recorded with the answer)
    need_description: str | None  # untrusted text: render escaped
    need_narrative: str | None
    query_pair_index: int  # 1-based place of this pair among the judge's pairs of this query
    query_pair_count: int
    current_grade: int | None  # this judge's own latest label of the pair, when relabelling
    current_unsure: bool
    current_note: str | None
    relabel: bool  # the judge already answered this pair (came back to it)


@dataclass(frozen=True)
class Progress:
    """A judge's progress in a project: done / assigned, and time left at their own median pace."""

    done: int
    assigned: int  # pairs the judge can work on now (overlap, and main once released)
    held: int  # main pairs assigned but held back until a lead releases them
    skipped: int  # pairs whose latest answer is a skip
    median_seconds: float | None  # median time from shown to answered, over recent labels
    seconds_left: float | None  # median_seconds x (assigned - done); None before any label

    @property
    def fraction(self) -> float:
        return self.done / self.assigned if self.assigned else 1.0


@dataclass(frozen=True)
class SubmitResult:
    """The outcome of :func:`submit`: the judgment row's id, and whether the token had already been
    used (a double click / resubmission, so nothing new was recorded)."""

    judgment_id: int
    duplicate: bool
    position: int


@dataclass(frozen=True)
class Answered:
    """The outcome of :func:`submit_and_next`: the answer recorded, the next pair (None when the
    judge's queue is done) and the judge's progress after the answer (None when not read with it)."""

    result: SubmitResult
    task: Task | None
    progress: Progress | None
    project: Project | JudgeProject


@dataclass(frozen=True)
class JudgeProject:
    """What the judging pages need of a project (:func:`judge_project`): read with one Core
    statement, no ORM object. The functions of this module take it where they take a Project."""

    id: int
    name: str
    scale: str
    stored_scale: str  # its grades as stored (curation.store.scale)
    hold_main: bool
    released_at: datetime | None


def _jid(judge: User | int) -> int:
    return judge if isinstance(judge, int) else judge.id


def _project(session: Session, project: Project | JudgeProject | int) -> Project | JudgeProject:
    """The project row; a Project already loaded in this session, or a :class:`JudgeProject` read
    in this request, is used as it is (the web layer loads it once per request), anything else is
    looked up."""
    if isinstance(project, JudgeProject) or (isinstance(project, Project) and project in session):
        return project
    proj = session.get(Project, project if isinstance(project, int) else project.id)
    if proj is None:
        raise AccessDenied("no such project")
    return proj


def _visible(stmt, proj: Project | JudgeProject):
    """Restrict an Assignment query to what judges may see now (main rows only once released)."""
    return stmt if main_visible(proj) else stmt.where(Assignment.kind == "overlap")


def _plain_update(stmt):
    return stmt.execution_options(synchronize_session=False)


def judge_projects(session: Session, judge: User | int) -> list[Project]:
    """The projects in which ``judge`` has assignments, by name."""
    return list(session.exec(_JUDGE_PROJECTS, params={"jid": _jid(judge)}))


def judge_project(session: Session, judge: User | int, project_id: int) -> JudgeProject | None:
    """Project ``project_id`` when ``judge`` has assignments in it, else None (one prebuilt
    statement: the judging page's access check on every request)."""
    rows = _JUDGE_PROJECT_D.read_alone(connection_of(session), {"jid": _jid(judge), "pid": project_id})
    return _judge_project_of(rows[0]) if rows else None


def _judge_project_of(row) -> JudgeProject:
    pid, name, scale, stored_scale, hold_main, released_at = row
    return JudgeProject(pid, name, scale, stored_scale, bool(hold_main), to_datetime(released_at))


# One index probe per project (few) instead of a walk over the judge's whole queue.
_HAS_WORK = exists().where(_A_T.c.project_id == Project.id, _A_T.c.judge_id == bindparam("jid"))
_JUDGE_PROJECTS = select(Project).where(_HAS_WORK).order_by(Project.name)
_JUDGE_PROJECT_D = Statement(
    core_select(_P_T.c.id, _P_T.c.name, _P_T.c.scale, SCALE, _P_T.c.hold_main, _P_T.c.released_at)
    .where(_P_T.c.id == bindparam("pid"), _HAS_WORK),
    prepare=True,
)


# Hot paths are prebuilt SQLAlchemy Core statements with bound parameters: a judge's
# submit-and-next runs a handful of indexed statements and no ORM object loading.
_A = Assignment.__table__
_PV = PairView.__table__
_J = Judgment.__table__
_PP = PoolPair.__table__
_Q = Query.__table__
_D = Document.__table__
_GV = GuidelinesVersion.__table__
_P = Project.__table__
_QN = QueryNeed.__table__
_QC = QueueCount.__table__

# LIMIT 1 written into the hot statements rather than bound: the generic plan PostgreSQL makes for a
# prepared statement then knows that one row is wanted (with a bound LIMIT it plans for many, and
# keeps re-planning the statement for each run instead).
_ONE = literal_column("1")
# Likewise the constants the hot statements compare with: bound, PostgreSQL's generic plan guessed
# that almost no query is "not dropped" and walked all the project's pairs (0.3 s) to find a
# judge's next one; written in, its statistics say almost every query is.
_DROPPED = literal_column("'dropped'")
_OVERLAP = literal_column("'overlap'")

# A pair whose query a lead dropped, or whose document was excluded (leak decisions), is retired:
# no longer shown, and no longer counted as work to do.
_RETIRED = or_(_Q.c.status == _DROPPED, _D.c.excluded == true())
_OPEN_ROWS = (
    _A.join(_PP, _PP.c.id == _A.c.pair_id).join(_Q, _Q.c.id == _PP.c.query_id).join(_D, _D.c.id == _PP.c.document_id)
)


def _first_open_stmt(overlap_only: bool):
    """The judge's first open pair in queue order: one walk down ``ix_assignment_queue``, stopping at
    the first row that is not retired. Whether main pairs count is decided in Python (two
    statements), not by a join to the project, so both planners keep to the index order."""
    where = [_A.c.judge_id == bindparam("jid"), _A.c.project_id == bindparam("pid"), _A.c.done_at.is_(None), ~_RETIRED]
    if overlap_only:
        where.append(_A.c.kind == _OVERLAP)
    return (
        core_select(_A.c.id, _A.c.pair_id, _A.c.position, _A.c.kind, _A.c.skipped, _A.c.done_at)
        .select_from(_OPEN_ROWS)
        .where(*where)
        # done_at is NULL on every row here; naming it lets PostgreSQL see that the index is in
        # this order (an IS NULL condition does not tell its planner so, an equality would).
        .order_by(_A.c.done_at, _A.c.skipped, _A.c.position, _A.c.id)
        .limit(_ONE)
    )


_FIRST_OPEN = {False: _first_open_stmt(False), True: _first_open_stmt(True)}


def _bound(column):
    """A bound parameter named and typed as ``column`` (typed, so that PostgreSQL knows the type of
    a value in a SELECT list)."""
    return bindparam(column.name, type_=column.type)


def _guarded_insert(table, values: dict, guard):
    """``INSERT INTO table (...) SELECT values WHERE guard``: the row is written only while
    ``guard`` holds, in the same statement, so that a statement sent before the result of an
    earlier one is known (:func:`curation.store.direct.batch`) writes nothing when that one
    found the row gone."""
    return insert(table).from_select(list(values), core_select(*values.values()).where(guard))


# The token row is written only while the assignment is still the judge's (a pair moved to another
# judge meanwhile gets no token, and the page read that follows finds nothing), and records the
# guidelines version in force (the project's newest) and the query's information need in force
# (its newest version) in the same statement. Its shown_at is when the pair was shown.
_STILL_MINE = exists().where(_A.c.id == bindparam("aid"), _A.c.judge_id == bindparam("jid"))


def _token_insert(aid, pair_id, guard):
    """The token row of assignment ``aid`` (pair ``pair_id``): bound parameters, or the columns of
    the row a statement found (``_ANSWER_THEN_SHOW``), written only while ``guard`` holds."""
    return _guarded_insert(_PV, {
        "token": bindparam("token", type_=_PV.c.token.type),
        "project_id": bindparam("pid", type_=_PV.c.project_id.type),
        "assignment_id": aid,
        "pair_id": pair_id,
        "judge_id": bindparam("jid", type_=_PV.c.judge_id.type),
        "shown_at": bindparam("now", type_=_PV.c.shown_at.type),
        "guidelines_version_id": core_select(_GV.c.id).where(_GV.c.project_id == bindparam("pid"))
        .order_by(_GV.c.version.desc()).limit(_ONE).scalar_subquery(),
        "need_version_id": core_select(_QN.c.id).where(
            _QN.c.query_id == core_select(_PP.c.query_id).where(_PP.c.id == pair_id).correlate_except(_PP)
            .scalar_subquery()
        ).order_by(_QN.c.version.desc()).limit(_ONE).scalar_subquery(),
    }, guard)


_ISSUE_TOKEN = _token_insert(bindparam("aid", type_=_PV.c.assignment_id.type), _bound(_PV.c.pair_id), _STILL_MINE)
# Everything the page shows of a freshly issued token, in one statement: the query, the document,
# the guidelines version, and where the pair stands among the judge's pairs of the same query.
# The counts go from the query's few pairs through the (pair_id, judge_id) unique index, which is
# much cheaper than a walk over the judge's whole queue.
_MINE = _A.alias("mine")
_QP = _PP.alias("query_pairs")


def _shown_of(view, first=None):
    """The page's read of the token row ``view``: the ``pairview`` table (the row is then picked by
    its token), or the row the token's INSERT returned (PostgreSQL, see ``_ISSUE_AND_SHOW``). The
    pair's kind and queue position are bound parameters, or with ``first`` (the judge's first open
    row, ``_ANSWER_THEN_SHOW``) its columns, returned first, with the page's NULL when no token
    was issued."""
    kind, pos = (bindparam("kind"), bindparam("pos")) if first is None else (first.c.kind, first.c.position)
    same_query = and_(
        _MINE.c.pair_id.in_(core_select(_QP.c.id).where(_QP.c.query_id == _PP.c.query_id).correlate_except(_QP)),
        _MINE.c.judge_id == view.c.judge_id,
        _MINE.c.kind == kind,
    )
    page = (
        view.join(_PP, _PP.c.id == view.c.pair_id)
        .join(_Q, _Q.c.id == _PP.c.query_id)
        .join(_D, _D.c.id == _PP.c.document_id)
        .outerjoin(_GV, _GV.c.id == view.c.guidelines_version_id)
        .outerjoin(_QN, _QN.c.id == view.c.need_version_id)
    )
    stmt = core_select(
        *(first.c if first is not None else ()),
        _Q.c.qid, _Q.c.text, _D.c.docid, _D.c.title, _D.c.text, _D.c.url, _GV.c.version,
        _QN.c.version, _QN.c.description, _QN.c.narrative,
        core_select(func.count()).where(same_query).correlate_except(_MINE).scalar_subquery(),
        core_select(func.count()).where(same_query, _MINE.c.position <= pos).correlate_except(_MINE).scalar_subquery(),
    ).select_from(page if first is None else first.outerjoin(page, true()))
    return stmt.where(view.c.token == bindparam("token")) if view is _PV else stmt


_SHOWN = _shown_of(_PV)
# On PostgreSQL the token is issued and the page read in one statement (a data-modifying WITH): the
# page's joins start from the row the INSERT returns, so the new row is never looked up again by its
# token (one statement less a pair, and no plan that depends on the statistics of a table that
# grows by a row a pair). SQLite has no INSERT inside WITH: there it is the two statements above.
_ISSUE_AND_SHOW = _shown_of(_ISSUE_TOKEN.returning(
    _PV.c.pair_id, _PV.c.judge_id, _PV.c.guidelines_version_id, _PV.c.need_version_id,
).cte("issued"))
_LATEST_OWN = (
    core_select(_J.c.grade, _J.c.unsure, _J.c.note, _J.c.skipped)
    .where(_J.c.judge_id == bindparam("jid"), _J.c.pair_id == bindparam("pair_id"), _J.c.skipped == false())
    .order_by(_J.c.id.desc())
    .limit(_ONE)
)


def _answer_then_show(overlap_only: bool):
    """PostgreSQL's last statement of an answer but the progress: the judge's first open row (as
    ``_FIRST_OPEN``), and when it is a fresh one, its token issued and its page read, in one
    statement. Sent in the answer's transaction right after the judgment (``_submit``), so the
    answer's own row is no longer open, and written only once that judgment is there (nothing is
    issued for an answer that recorded nothing). Returns the open row's columns, then the page's,
    NULL when no token was issued (a skipped pair: ``next_task`` decides); no row when none is open."""
    first = _FIRST_OPEN[overlap_only].cte("open_row")
    answered = exists().where(_J.c.judge_id == bindparam("jid"),
                              _J.c.client_token == bindparam("answered_token", type_=_J.c.client_token.type))
    issued = _token_insert(first.c.id, first.c.pair_id, and_(first.c.skipped == false(), answered)).returning(
        _PV.c.pair_id, _PV.c.judge_id, _PV.c.guidelines_version_id, _PV.c.need_version_id,
    ).cte("issued")
    return Statement(_shown_of(issued, first=first), prepare=True)


_ANSWER_THEN_SHOW_D = {k: _answer_then_show(k) for k in (False, True)}


class _Row(tuple):
    """An assignment row as the statements below return it: (id, pair_id, position, kind, skipped,
    done_at), readable by name like the ORM rows that task_at and previous_task pass."""

    __slots__ = ()
    id = property(lambda r: r[0])
    pair_id = property(lambda r: r[1])
    position = property(lambda r: r[2])
    kind = property(lambda r: r[3])
    skipped = property(lambda r: r[4])
    done_at = property(lambda r: r[5])


_FIRST_OPEN_D = {k: Statement(v, prepare=True) for k, v in _FIRST_OPEN.items()}
_ISSUE_TOKEN_D = Statement(_ISSUE_TOKEN, prepare=True)
_SHOWN_D = Statement(_SHOWN, prepare=True)
_ISSUE_AND_SHOW_D = Statement(_ISSUE_AND_SHOW, prepare=True)
_LATEST_OWN_D = Statement(_LATEST_OWN, prepare=True)


def _commit(session: Session, conn) -> None:
    """Commit the request's transaction on the driver's connection; through the Session when the
    caller left ORM changes in it (SQLAlchemy flushes them first)."""
    if session.new or session.dirty or session.deleted:
        session.commit()
    else:
        dbapi(conn).commit()


def end_reads(session: Session) -> None:
    """End the transaction the last reads of a request opened (the progress counts after a pair
    was shown), so that none is left to roll back when the request's connection is closed. Ending a
    read-only transaction changes nothing; rolling one back would make psycopg drop its prepared
    statements (it forgets them on every ROLLBACK), so PostgreSQL would parse and plan the hot
    statements again on every request."""
    _commit(session, connection_of(session))


def _first_open(session: Session, proj: Project, jid: int):
    rows = _FIRST_OPEN_D[not main_visible(proj)].read_alone(connection_of(session), {"jid": jid, "pid": proj.id})
    return _Row(rows[0]) if rows else None


def _show(session: Session, proj: Project, jid: int, a, now: datetime) -> Task | None:
    """Issue a token for assignment ``a`` (a row with id, pair_id, position, kind) and build its
    Task; None when ``a`` is no longer the judge's (moved to another judge meanwhile). One short
    write transaction, one round trip on PostgreSQL: record the token (only while the row is the
    judge's) and read what the page shows."""
    token = secrets.token_urlsafe(24)
    conn = connection_of(session)
    params = {"token": token, "pid": proj.id, "aid": a.id, "pair_id": a.pair_id, "jid": jid, "now": now,
              "kind": a.kind, "pos": a.position}
    with batch(conn) as tx:
        if conn.dialect.name == "postgresql":
            shown = _ISSUE_AND_SHOW_D.run(conn, params)
        else:
            _ISSUE_TOKEN_D.run(conn, params)
            shown = _SHOWN_D.run(conn, params)
        # An open pair that was never skipped has no answer from this judge (answers set done_at or
        # skipped on the judge's own row), so only a revisited pair needs the look-up.
        fresh = a.done_at is None and not a.skipped
        latest = None if fresh else _LATEST_OWN_D.run(conn, {"jid": jid, "pair_id": a.pair_id})
        tx.commit()
    return _shown_task(a, token, shown.fetchone(), latest)


def _shown_task(a, token: str, row, latest) -> Task | None:
    """The Task of a pair from the page's ``row`` (its read: ``_SHOWN``); None when the pair was
    no longer the judge's (no token was recorded, so the page read found nothing)."""
    if row is None:
        return None
    (qid, qtext, docid, title, text, url, gv_version, need_version, description, narrative, count, place) = row
    latest = latest.fetchone() if latest is not None else None
    if latest is not None:
        latest = dict(zip(("grade", "unsure", "note", "skipped"), latest, strict=True))
    return Task(
        token=token,
        position=a.position,
        qid=qid,
        query_text=qtext,
        docid=docid,
        doc_title=title,
        doc_text=text,
        doc_url=url,
        guidelines_version=gv_version,
        need_version=need_version,
        need_description=description,
        need_narrative=narrative,
        query_pair_index=max(int(place), 1),
        query_pair_count=max(int(count), 1),
        current_grade=latest["grade"] if latest else None,
        current_unsure=bool(latest["unsure"]) if latest else False,
        current_note=latest["note"] if latest else None,
        relabel=latest is not None,
    )


def next_task(
    session: Session,
    project: Project | int,
    judge: User | int,
    *,
    now: datetime | None = None,
    stale_after: timedelta | None = DEFAULT_STALE_AFTER,
    take_stale: bool = True,
) -> Task | None:
    """The next pair for ``judge`` to label, with a fresh one-time token, or None when their queue
    is done. Order: the lowest queue position not yet answered (overlap pairs first, then released
    main pairs), then pairs the judge skipped. When nothing is left and ``take_stale``, main pairs
    of a judge idle for ``stale_after`` are moved to this judge (a query's unanswered pairs at a
    time, atomically) and the first of them is returned."""
    proj = _project(session, project)
    jid = _jid(judge)
    for _attempt in range(5):
        now_ = now or utcnow()
        a = _first_open(session, proj, jid)
        if a is None or a.skipped:
            # Before going back to skipped pairs, take over a walked-away judge's work, if any.
            if take_stale and stale_after is not None and main_visible(proj):
                if release_stale(session, proj, jid, stale_after=stale_after, now=now_):
                    continue
        if a is None:
            return None
        task = _show(session, proj, jid, a, now_)
        if task is not None:
            return task
    return None


def task_at(
    session: Session, project: Project | int, judge: User | int, position: int, *, now: datetime | None = None
) -> Task:
    """The judge's pair at queue ``position`` (to go back or follow a link), with a fresh token.
    :class:`AccessDenied` when the judge has no visible pair there (another judge's pair, a held-back
    pair, or nothing)."""
    proj = _project(session, project)
    jid = _jid(judge)
    if isinstance(position, bool) or not isinstance(position, int):
        raise AccessDenied("no such pair")
    a = session.exec(
        _visible(
            select(Assignment).where(
                Assignment.judge_id == jid, Assignment.project_id == proj.id, Assignment.position == position
            ),
            proj,
        ).order_by(Assignment.id).limit(1)
    ).first()
    if a is None:
        raise AccessDenied("no such pair")
    task = _show(session, proj, jid, a, now or utcnow())
    if task is None:
        raise PairReassigned("this pair was moved to another judge")
    return task


def previous_task(
    session: Session,
    project: Project | int,
    judge: User | int,
    *,
    before: int | None = None,
    now: datetime | None = None,
) -> Task | None:
    """The pair the judge answered just before queue position ``before`` (default: their last
    answered pair in queue order), to relabel it; None when there is none."""
    proj = _project(session, project)
    jid = _jid(judge)
    stmt = select(Assignment).where(
        Assignment.judge_id == jid,
        Assignment.project_id == proj.id,
        (Assignment.done_at.is_not(None)) | (Assignment.skipped == true()),
    )
    if before is not None:
        stmt = stmt.where(Assignment.position < int(before))
    a = session.exec(_visible(stmt, proj).order_by(Assignment.position.desc(), Assignment.id.desc()).limit(1)).first()
    if a is None:
        return None
    return _show(session, proj, jid, a, now or utcnow())


def submit(
    session: Session,
    judge: User | int,
    token: str,
    *,
    grade: int | None = None,
    unsure: bool = False,
    note: str | None = None,
    skip: bool = False,
    now: datetime | None = None,
) -> SubmitResult:
    """Record the judge's answer to the pair shown with ``token``: a grade of the project's scale,
    "unsure" (with the judge's best grade, and an optional note), or a skip; append-only, with the
    guidelines version and time the pair was shown, and the time answered.

    A skip of a pair the judge has already answered (they came back to it) moves on and keeps the
    answer: the skip is recorded in the history, but the pair stays done.

    Idempotent on the token: a second submit with it records nothing and returns the first
    judgment (``duplicate=True``). :class:`AccessDenied` when the token is not one issued to this
    judge; :class:`PairReassigned` when the pair was moved to another judge meanwhile; ValueError
    for a grade outside the scale, a note longer than ``MAX_NOTE``, or no answer at all."""
    _check_token(token)
    view = _VIEW_D.read_alone(connection_of(session), {"token": token})
    return _submit(session, _jid(judge), token, view, grade=grade, unsure=unsure, note=note, skip=skip,
                   now=now).result


def _check_token(token) -> None:
    if not isinstance(token, str) or not token or len(token) > 100:
        raise AccessDenied("no such pair")


def submit_and_next(
    session: Session,
    project: Project | JudgeProject | int,
    judge: User | int,
    token: str,
    *,
    grade: int | None = None,
    unsure: bool = False,
    note: str | None = None,
    skip: bool = False,
    stale_after: timedelta | None = DEFAULT_STALE_AFTER,
    now: datetime | None = None,
) -> Answered:
    """:func:`submit`, then :func:`next_task` in ``project`` and the judge's :func:`progress`: the
    judging page's answer. The same outcome as the three calls, with the answer, the next pair's
    token and the progress read in one transaction on PostgreSQL, sent in one round trip
    (:func:`curation.store.direct.batch`): record the answer; find the next open pair, issue its
    token and read what the page shows (one statement, ``_ANSWER_THEN_SHOW``); read the progress;
    commit. On SQLite the answer is committed first, as :func:`submit` does, and
    :func:`next_task` follows. When the next pair needs more (the queue is done, or only skipped
    pairs are left, so a walked-away judge's work may be taken first; or it was moved meanwhile),
    the answer is committed on its own, :func:`next_task` finds the pair, and the progress is left
    to the caller (None).

    ``project`` may be given by its id: it is then read with the token, in the same round trip,
    and :class:`AccessDenied` raised when it is not one of the judge's (``Answered.project`` is
    what was read)."""
    jid = _jid(judge)
    _check_token(token)
    conn = connection_of(session)
    if isinstance(project, int):
        found, view = read_together(conn, [(_JUDGE_PROJECT_D, {"jid": jid, "pid": project}),
                                           (_VIEW_D, {"token": token})])
        if not found:
            raise AccessDenied("no such project")
        proj = _judge_project_of(found[0])
    else:
        proj, view = _project(session, project), _VIEW_D.read_alone(conn, {"token": token})
    # On SQLite a statement is a function call, and writers take turns: the answer and the next
    # pair's token are two short write transactions there (measured: one longer one held the
    # write lock through the reads, 16% fewer judgments/s at 20 judges).
    answered = _submit(session, jid, token, view, grade=grade, unsure=unsure, note=note, skip=skip, now=now,
                       then_show=proj if conn.dialect.name == "postgresql" else None)
    if answered.task is None:
        return Answered(answered.result, next_task(session, proj, jid, now=now, stale_after=stale_after), None,
                        proj)
    return answered


def _submit(session: Session, jid: int, token: str, rows: list, *, grade, unsure, note, skip, now,
            then_show: Project | JudgeProject | None = None) -> Answered:
    """:func:`submit` of the token whose ``_VIEW`` rows are ``rows``; with ``then_show``, also the
    judge's next open pair there and their progress (see :func:`submit_and_next`) when the pair can
    be shown in the same transaction."""
    conn = connection_of(session)
    if not rows or rows[0][0] != jid:
        raise AccessDenied("no such pair")
    (_, project_id, pair_id, assignment_id, gv_id, need_id, shown_at, position, done_at, existing, stored_scale,
     scale) = rows[0]
    if existing is not None:
        return Answered(SubmitResult(existing, True, position), None, None, then_show)
    grade, note, skip, unsure = _checked_answer(stored_scale, scale, grade=grade, note=note, skip=skip, unsure=unsure)
    keep_answer = skip and done_at is not None  # skipping an answered pair keeps the answer

    now = now or utcnow()
    try:
        with batch(conn) as tx:
            # Write first: this takes the assignment row's lock, which serialises with a stale move.
            # An answered pair is never moved, so skipping one needs no write to the assignment. The
            # judgment is written only while the row is still the judge's (a guarded insert, or on
            # PostgreSQL from the update's own row), so nothing is recorded when the update found it
            # moved, though everything is sent together.
            params = {
                "aid": assignment_id, "jid": jid, "done_at": None if skip else now, "project_id": project_id,
                "pair_id": pair_id, "judge_id": jid, "grade": grade, "unsure": unsure, "skipped": skip, "note": note,
                "guidelines_version_id": gv_id, "need_version_id": need_id, "source": "human", "shown_at": shown_at,
                "answered_at": now, "client_token": token,
            }
            answered = None
            if keep_answer:
                recorded = _RECORD_D.run(conn, params)
            elif conn.dialect.name == "postgresql":
                recorded = _ANSWER_AND_RECORD_D.run(conn, params)  # no row: the update found the pair moved
            else:
                answered = _ANSWER_D.run(conn, params)
                recorded = _RECORD_D.run(conn, params)
            nxt = counts = None
            if then_show is None:
                tx.sync()
                row = recorded.fetchone()
            else:
                # Sent with the answer, one round trip for all (the block commits): the judge's
                # next open pair, its token (issued only once this answer's judgment is there) and
                # page, and the progress.
                next_token = secrets.token_urlsafe(24)
                nxt = _ANSWER_THEN_SHOW_D[not main_visible(then_show)].run(conn, {
                    "jid": jid, "pid": then_show.id, "token": next_token, "now": now, "answered_token": token})
                statement, progress_params = _progress_read(conn, then_show, jid)
                counts = statement.run(conn, progress_params)
        if then_show is not None:
            row = recorded.fetchone()
    except BaseException as exc:
        if not isinstance(exc, (IntegrityError, conn.dialect.loaded_dbapi.IntegrityError)):
            raise
        # The same token committed by a concurrent request (a double click): report that one.
        done = _existing(session, jid, token)
        if done is None:
            raise
        return Answered(SubmitResult(done, True, position), None, None, then_show)
    if row is None or (answered is not None and answered.rowcount != 1):
        # Nothing was written: the judgment and the next token are both guarded by the assignment.
        raise PairReassigned("this pair was moved to another judge while you were away; nothing was recorded")
    result = SubmitResult(row[0], False, position)
    a = nxt.fetchone() if nxt is not None else None
    if a is None or a[6] is None:  # nothing open, or a skipped pair (next_task's work)
        return Answered(result, None, None, then_show)
    task = _shown_task(_Row(a[:6]), next_token, a[6:], None)
    return Answered(result, task, _progress_of(session, then_show, jid, counts.fetchall()), then_show)


def _checked_answer(stored_scale: str, scale: str, *, grade, note, skip, unsure) -> tuple:
    """The answer's grade, note, skip and unsure flags, checked against the project's scale and
    each other (ValueError saying what is wrong)."""
    if grade is not None:
        if isinstance(grade, bool):
            raise ValueError(f"grade must be one of the scale's grades, got {grade!r}")
        try:
            grade = int(grade)
        except (TypeError, ValueError):
            raise ValueError(f"grade must be one of the scale's grades, got {grade!r}") from None
        allowed = stored_grade_values(stored_scale)
        if grade not in allowed:
            raise ValueError(f"grade {grade} is not on this project's scale {scale} (grades {list(allowed)})")
    if note is not None:
        note = str(note).strip() or None
        if note and len(note) > MAX_NOTE:
            raise ValueError(f"note is {len(note)} characters long; keep it under {MAX_NOTE}")
    skip, unsure = bool(skip), bool(unsure)
    if skip and grade is not None:
        raise ValueError("skip: a skipped pair has no grade")
    if not skip and not unsure and grade is None:
        raise ValueError("grade: give a grade, mark the pair unsure, or skip it")
    if unsure and grade is None:
        raise ValueError("grade: an unsure answer needs your best grade too (the lead confirms or changes it)")
    return grade, note, skip, unsure


_VIEW = (
    core_select(
        _PV.c.judge_id, _PV.c.project_id, _PV.c.pair_id, _PV.c.assignment_id, _PV.c.guidelines_version_id,
        _PV.c.need_version_id, _PV.c.shown_at, _A.c.position, _A.c.done_at, _J.c.id.label("existing"),
        SCALE, _P.c.scale,
    )
    .select_from(
        _PV.join(_A, _A.c.id == _PV.c.assignment_id)
        .join(_P, _P.c.id == _PV.c.project_id)
        .outerjoin(_J, and_(_J.c.judge_id == _PV.c.judge_id, _J.c.client_token == _PV.c.token))
    )
    .where(_PV.c.token == bindparam("token"))
)
_ANSWER = (
    update(_A)
    .where(_A.c.id == bindparam("aid"), _A.c.judge_id == bindparam("jid"))
    .values(done_at=bindparam("done_at"), skipped=bindparam("skipped"))
)
_VIEW_D = Statement(_VIEW, prepare=True)
_ANSWER_D = Statement(_ANSWER, prepare=True)
# The judgment row, written only while the assignment is still the judge's, its id returned by the
# INSERT (RETURNING: SQLite 3.35+, PostgreSQL).
_JUDGMENT_VALUES = {c: _bound(_J.c[c]) for c in (
    "project_id", "pair_id", "judge_id", "grade", "unsure", "skipped", "note", "guidelines_version_id",
    "need_version_id", "source", "shown_at", "answered_at", "client_token")}
_RECORD_D = Statement(_guarded_insert(_J, _JUDGMENT_VALUES, exists().where(
    _A.c.id == bindparam("aid"), _A.c.judge_id == bindparam("judge_id"))).returning(_J.c.id), prepare=True)
# On PostgreSQL the answer's update and the judgment are one statement (a data-modifying WITH): the
# judgment is inserted from the row the update returns, so it is written exactly when the update
# found the assignment still the judge's, and a missing row says the pair was moved. SQLite runs
# the two statements above.
_ANSWERED = _ANSWER.returning(_A.c.id).cte("answered")
_ANSWER_AND_RECORD_D = Statement(insert(_J).from_select(
    list(_JUDGMENT_VALUES), core_select(*_JUDGMENT_VALUES.values()).select_from(_ANSWERED)).returning(_J.c.id),
    prepare=True)
_EXISTING = core_select(_J.c.id).where(_J.c.judge_id == bindparam("jid"), _J.c.client_token == bindparam("token"))


def _existing(session: Session, jid: int, token: str) -> int | None:
    return session.connection().execute(_EXISTING, {"jid": jid, "token": token}).scalar()


def _queue_counts(overlap_only: bool):
    """One statement for a judge's queue: rows in all, rows they may work on (all, or the overlap
    set while the main pairs are held back), and of those the open ones, not skipped and skipped.
    Read from ``queuecount`` (one row per kind, kept by the database's triggers on ``assignment``:
    migration 0020) instead of counted over the judge's whole queue on every answer."""
    mine = (_QC.c.judge_id == bindparam("jid"), _QC.c.project_id == bindparam("pid"))
    workable = mine + ((_QC.c.kind == _OVERLAP,) if overlap_only else ())

    def total(column, *where):
        return core_select(func.coalesce(func.sum(column), 0)).where(*where).scalar_subquery()

    return core_select(
        total(_QC.c.total, *mine).label("total"),
        (total(_QC.c.total, *workable) if overlap_only else literal_column("NULL")).label("workable"),
        total(_QC.c.unanswered, *workable).label("open"),
        total(_QC.c.skipped, *workable).label("skipped"),
    )


# Retired pairs of a project, found from the (usually empty) index ranges of dropped queries and
# excluded documents; then the judge's open rows among them through the (pair_id, judge_id) index.
_RETIRED_PAIRS = union(
    core_select(_PP.c.id).join(_Q, _Q.c.id == _PP.c.query_id)
    .where(_Q.c.project_id == bindparam("pid"), _Q.c.status == _DROPPED),
    core_select(_PP.c.id).join(_D, _D.c.id == _PP.c.document_id)
    .where(_D.c.project_id == bindparam("pid"), _D.c.excluded == true()),
)
_COUNT_RETIRED_OPEN = (
    core_select(_A.c.kind, _A.c.skipped, func.count())
    .where(_A.c.pair_id.in_(bindparam("pair_ids", expanding=True)), _A.c.judge_id == bindparam("jid"),
           _A.c.done_at.is_(None))
    .group_by(_A.c.kind, _A.c.skipped)
)


def _seconds_between(dialect: str, start, end):
    """``end - start`` in seconds, computed by the database (no datetime parsing in Python)."""
    if dialect == "sqlite":
        return (func.julianday(end) - func.julianday(start)) * 86400.0
    return func.extract("epoch", end - start)


def _pace(dialect: str, recent):
    return (
        core_select(_seconds_between(dialect, _J.c.shown_at, _J.c.answered_at).label("seconds"))
        .where(_J.c.judge_id == bindparam("jid"), _J.c.project_id == bindparam("pid"), _J.c.skipped == false(),
               _J.c.shown_at.is_not(None))
        .order_by(_J.c.id.desc())
        .limit(recent)
    )


@functools.lru_cache(maxsize=16)
def _progress_statement(dialect: str, overlap_only: bool, recent: int) -> Statement:
    """Everything :func:`progress` reads, in one statement: the queue counts of
    :func:`_queue_counts`, whether the project has any retired pair at all (two probes of
    (usually empty) index ranges), and the judge's ``recent`` latest shown-to-answered times, one
    row each (a single row with NULL before any): the counts ride along on every row. ``recent``
    is written into the statement (see ``_ONE``)."""
    counts = _queue_counts(overlap_only).add_columns(
        or_(exists(_RETIRED_PAIRS.selects[0]), exists(_RETIRED_PAIRS.selects[1])).label("any_retired")
    ).subquery("counts")
    pace = _pace(dialect, literal_column(str(int(recent)))).subquery("pace")
    return Statement(core_select(*counts.c, *pace.c).select_from(counts.outerjoin(pace, true())), prepare=True)


def progress(session: Session, project: Project | int, judge: User | int, *, recent: int = 50) -> Progress:
    """Done / assigned for the judge, and the time left at the median of their last ``recent``
    shown-to-answered times (the median resists the long gaps of a coffee break; the recent ones
    follow the judge's pace as it settles)."""
    proj = _project(session, project)
    jid = _jid(judge)
    conn = connection_of(session)
    statement, params = _progress_read(conn, proj, jid, recent)
    return _progress_of(session, proj, jid, statement.read_alone(conn, params))


def _progress_read(conn, proj: Project | JudgeProject, jid: int, recent: int = 50) -> tuple[Statement, dict]:
    """The one statement :func:`progress` reads, and its parameters."""
    dialect = "sqlite" if conn.dialect.name == "sqlite" else "postgresql"
    return _progress_statement(dialect, not main_visible(proj), int(recent)), {"jid": jid, "pid": proj.id}


def _progress_of(session: Session, proj: Project | JudgeProject, jid: int, rows) -> Progress:
    """:func:`progress` from the rows of its statement (:func:`_progress_read`)."""
    params = {"jid": jid, "pid": proj.id}
    visible = main_visible(proj)
    total, assigned, open_, skipped, any_retired, _ = rows[0]
    secs = [max(float(row[5]), 0.0) for row in rows if row[5] is not None]
    if visible:
        assigned = total
    held = total - assigned
    # Open rows of retired pairs are in the counts above, but they are no longer work to do.
    retired_ids = session.connection().execute(_RETIRED_PAIRS, params).scalars().all() if any_retired else ()
    for i in range(0, len(retired_ids), 5000):
        chunk = {"jid": jid, "pair_ids": retired_ids[i:i + 5000]}
        for kind, was_skipped, n in session.connection().execute(_COUNT_RETIRED_OPEN, chunk).all():
            if visible or kind == "overlap":
                assigned -= n
                if was_skipped:
                    skipped -= n
                else:
                    open_ -= n
    done = assigned - open_ - skipped
    median = statistics.median(secs) if secs else None
    left = None if median is None else median * (assigned - done)
    return Progress(done=done, assigned=assigned, held=held, skipped=skipped, median_seconds=median, seconds_left=left)


_U = User.__table__
_OTHER_USERS = core_select(_U.c.id).where(_U.c.id != bindparam("jid")).order_by(_U.c.id)
_OPEN_MAIN = core_select(func.count(), func.max(_A.c.created_at)).where(
    _A.c.judge_id == bindparam("owner"), _A.c.project_id == bindparam("pid"), _A.c.done_at.is_(None),
    _A.c.kind == "main",
)
_LAST_SHOWN = core_select(func.max(_PV.c.shown_at)).where(
    _PV.c.judge_id == bindparam("owner"), _PV.c.project_id == bindparam("pid")
)
_LAST_ANSWERED = (
    core_select(_J.c.answered_at)
    .where(_J.c.judge_id == bindparam("owner"), _J.c.project_id == bindparam("pid"))
    .order_by(_J.c.id.desc())
    .limit(1)
)


def release_stale(
    session: Session,
    project: Project | int,
    judge: User | int,
    *,
    stale_after: timedelta = DEFAULT_STALE_AFTER,
    now: datetime | None = None,
) -> int:
    """Move to ``judge`` the unanswered released main pairs of one query whose owner has been idle
    (nothing shown or answered, and nothing assigned or released) for ``stale_after``, with one
    compare-and-set update (``WHERE judge_id = owner AND done_at IS NULL``) so no pair can go to two
    judges; returns the number of pairs moved (0 when none is stale). The query taken is the one at
    the end of the idle judge's queue, so a judge who comes back finds their current query intact."""
    proj = _project(session, project)
    jid = _jid(judge)
    if not main_visible(proj):
        return 0
    now = now or utcnow()
    cutoff = now - stale_after
    conn = session.connection()
    # Per other user (few): their open main rows (count, newest assignment) from the queue index,
    # and their latest activity from the indexes on shown pairs and on their judgments.
    owners = []
    for owner in conn.execute(_OTHER_USERS, {"jid": jid}).scalars():
        n, assigned_at = conn.execute(_OPEN_MAIN, {"owner": owner, "pid": proj.id}).one()
        if n:
            owners.append((-n, owner, assigned_at))
    owners.sort()
    for _n, owner, assigned_at in owners:
        conn = session.connection()  # anew: a failed move below ends the transaction
        shown = conn.execute(_LAST_SHOWN, {"owner": owner, "pid": proj.id}).scalar()
        answered = conn.execute(_LAST_ANSWERED, {"owner": owner, "pid": proj.id}).scalar()
        last = max(t for t in (shown, answered, assigned_at, proj.released_at) if t is not None)
        if last >= cutoff:
            continue
        tail = session.exec(
            join_pair_text(select(PoolPair.query_id).join(Assignment, Assignment.pair_id == PoolPair.id))
            .where(Assignment.project_id == proj.id, Assignment.judge_id == owner, Assignment.kind == "main",
                   Assignment.done_at.is_(None), Query.status != "dropped", Document.excluded == false())
            .order_by(Assignment.position.desc())
            .limit(1)
        ).first()
        if tail is None:
            continue
        rows = session.exec(
            select(Assignment.id, Assignment.position)
            .join(PoolPair, PoolPair.id == Assignment.pair_id)
            .where(Assignment.project_id == proj.id, Assignment.judge_id == owner, Assignment.kind == "main",
                   Assignment.done_at.is_(None), PoolPair.query_id == tail)
        ).all()
        if not rows:  # taken by another judge between the two reads
            continue
        mine = session.exec(
            select(func.max(Assignment.position)).where(Assignment.judge_id == jid, Assignment.project_id == proj.id)
        ).one()
        base = max((mine or 0) + 1, MAIN_BASE)
        delta = base - min(pos for _, pos in rows)
        try:
            res = session.execute(
                _plain_update(
                    update(Assignment)
                    .where(Assignment.id.in_([i for i, _ in rows]), Assignment.judge_id == owner,
                           Assignment.done_at.is_(None))
                    .values(judge_id=jid, position=Assignment.position + delta, skipped=False)
                )
            )
            session.commit()
        except Exception:
            session.rollback()
            raise
        if res.rowcount:
            return res.rowcount
    return 0
