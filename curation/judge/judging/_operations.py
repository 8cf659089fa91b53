"""The judging operations: show a pair, record an answer, go back, count the progress, move the
work of a judge who walked away (see :mod:`curation.judge.judging`)."""

from __future__ import annotations

import secrets
import statistics
from datetime import datetime, timedelta

from sqlalchemy import delete, false, func, true, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from curation.judge.assignment import main_visible
from curation.judge.judging._records import (
    DEFAULT_STALE_AFTER,
    MAX_NOTE,
    AccessDenied,
    Answered,
    JudgeProject,
    PairReassigned,
    Progress,
    SubmitResult,
    Task,
    TooSoon,
)
from curation.judge.judging._statements import (
    _EXISTING,
    _FIRST_OPEN_D,
    _HELD_ALONE,
    _JUDGE_PROJECT_COLUMNS,
    _JUDGE_PROJECT_D,
    _JUDGE_PROJECTS,
    _LAST_ANSWERED,
    _LAST_SHOWN,
    _LATEST_OWN_D,
    _OPEN_MAIN,
    _OTHER_USERS,
    _PROJECT_AND_VIEW_D,
    _RECORD_D,
    _VIEW_D,
    _Row,
    plan_of,
)
from curation.judge.qualification import met_in_qualification
from curation.store import workload
from curation.store.audit import record_audit
from curation.store.direct import Statement, batch, connection_of, dbapi, to_datetime
from curation.store.lookups import join_pair_text
from curation.store.models import (
    JUDGMENT_KNOWN,
    JUDGMENT_POOL,
    KNOWN_KIND,
    MAIN_BASE,
    Assignment,
    Document,
    Judgment,
    PoolPair,
    Project,
    Query,
    User,
    utcnow,
)
from curation.store.scale import check_grade, stored_grade_values


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
    pid, name, scale, stored_scale, hold_main, released_at, held, known_answer_hold, min_answer_ms = row
    return JudgeProject(pid, name, scale, stored_scale, bool(hold_main), to_datetime(released_at), bool(held),
                        bool(known_answer_hold), min_answer_ms)


def _held(session: Session, proj: Project | JudgeProject, jid: int) -> bool:
    """Whether the judge's queue is held in the project (known-answer accuracy below the bar): read
    with the project on the judging pages (:class:`JudgeProject`), else looked up."""
    if isinstance(proj, JudgeProject):
        return proj.held
    return connection_of(session).execute(_HELD_ALONE, {"jid": jid, "pid": proj.id}).first() is not None


def work_released(project: Project | JudgeProject) -> bool:
    """Whether the project's main pairs are open to its judges (not held, or released by a lead)."""
    return main_visible(project)


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
        shown = plan_of(conn).issue_and_show(conn, params)
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
    if _held(session, proj, jid):  # known-answer accuracy below the bar: nothing new until a lead looks
        return None
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
    if a is None or (a.done_at is None and not a.skipped and _held(session, proj, jid)):
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
    min_seconds: float = 0.0,
) -> SubmitResult:
    """Record the judge's answer to the pair shown with ``token``: a grade of the project's scale,
    "unsure" (with the judge's best grade, and an optional note), or a skip; append-only, with the
    guidelines version and time the pair was shown, and the time answered.

    A skip of a pair the judge has already answered (they came back to it) moves on and keeps the
    answer: the skip is recorded in the history, but the pair stays done.

    Idempotent on the token: a second submit with it records nothing and returns the first
    judgment (``duplicate=True``). :class:`AccessDenied` when the token is not one issued to this
    judge; :class:`PairReassigned` when the pair was moved to another judge meanwhile;
    :class:`TooSoon` (nothing recorded) when the answer comes less than the project's minimum
    answer time (``Project.min_answer_ms``, read with the token; ``min_seconds`` when the project has
    none) after the pair was shown (the time its token was issued): a second press of a key meant
    for the pair before; ValueError for a grade outside the scale, a note longer than ``MAX_NOTE``, or no answer
    at all."""
    _check_token(token)
    view = _VIEW_D.read_alone(connection_of(session), {"token": token})
    return _submit(session, _jid(judge), token, view, grade=grade, unsure=unsure, note=note, skip=skip,
                   now=now, min_seconds=min_seconds).result


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
    min_seconds: float = 0.0,
) -> Answered:
    """:func:`submit`, then :func:`next_task` in ``project`` and the judge's :func:`progress`: the
    judging page's answer. The same outcome as the three calls, with the answer, the next pair's
    token and the progress read in one transaction on PostgreSQL, sent in one round trip
    (:func:`curation.store.direct.batch`): record the answer; find the next open pair, issue its
    token and read what the page shows (one statement, ``_ANSWER_THEN_SHOW``); read the progress;
    commit. On SQLite the answer and the next pair's token are one write transaction (the token's
    INSERT finds the first open pair itself, ``_ISSUE_OPEN``), and the page and the progress are
    read after its commit. When the next pair needs more (the queue is done, or only skipped
    pairs are left, so a walked-away judge's work may be taken first; or it was moved meanwhile),
    the answer is committed on its own, :func:`next_task` finds the pair, and the progress is left
    to the caller (None).

    ``project`` may be given by its id: it is then read with the token, in the same statement,
    and :class:`AccessDenied` raised when it is not one of the judge's (``Answered.project`` is
    what was read)."""
    jid = _jid(judge)
    _check_token(token)
    conn = connection_of(session)
    if isinstance(project, int):
        found = _PROJECT_AND_VIEW_D.read_alone(conn, {"jid": jid, "pid": project, "token": token})
        if not found:
            raise AccessDenied("no such project")
        width = len(_JUDGE_PROJECT_COLUMNS)
        proj = _judge_project_of(found[0][:width])
        view = [found[0][width:]] if found[0][width] is not None else []  # judge_id: NULL when no token row
    else:
        proj, view = _project(session, project), _VIEW_D.read_alone(conn, {"token": token})
    then_show = proj if plan_of(conn).answer_then_show and not _held(session, proj, jid) else None
    answered = _submit(session, jid, token, view, grade=grade, unsure=unsure, note=note, skip=skip, now=now,
                       min_seconds=min_seconds, then_show=then_show)
    if answered.task is None:
        return Answered(answered.result, next_task(session, proj, jid, now=now, stale_after=stale_after), None,
                        proj)
    return answered


def _submit(session: Session, jid: int, token: str, rows: list, *, grade, unsure, note, skip, now,
            min_seconds: float = 0.0, then_show: Project | JudgeProject | None = None) -> Answered:
    """:func:`submit` of the token whose ``_VIEW`` rows are ``rows``; with ``then_show``, also the
    judge's next open pair there and their progress (see :func:`submit_and_next`) when the pair can
    be shown in the same transaction."""
    conn = connection_of(session)
    if not rows or rows[0][0] != jid:
        raise AccessDenied("no such pair")
    (_, project_id, pair_id, assignment_id, gv_id, need_id, shown_at, position, done_at, existing, stored_scale,
     scale, kind, project_min_ms) = rows[0]
    if existing is not None:
        return Answered(SubmitResult(existing, True, position), None, None, then_show)
    grade, note, skip, unsure = _checked_answer(stored_scale, scale, grade=grade, note=note, skip=skip, unsure=unsure)
    keep_answer = skip and done_at is not None  # skipping an answered pair keeps the answer

    now = now or utcnow()
    if project_min_ms is not None:  # the project's own minimum, read with the token
        min_seconds = project_min_ms / 1000
    if min_seconds > 0 and shown_at is not None:  # the token's row, read above: no statement more
        seconds = (now - to_datetime(shown_at)).total_seconds()
        if seconds < min_seconds:
            raise TooSoon(seconds, min_seconds)
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
                # The same statements for every pair; an answer on a known-answer pair is only marked.
                "purpose": JUDGMENT_KNOWN if kind == KNOWN_KIND else JUDGMENT_POOL,
            }
            plan = plan_of(conn)
            if keep_answer:
                answered, recorded = None, _RECORD_D.run(conn, params)
            else:
                answered, recorded = plan.answer_and_record(conn, params)
            issued = counts = None
            if then_show is None or not plan.reads_in_answer:
                tx.sync()
                row = recorded.fetchone()
            if then_show is not None:
                # In the answer's transaction (the block commits): the token of the judge's next
                # open pair, issued only once this answer's judgment is there; on PostgreSQL also
                # its page and the progress, sent with the answer (one round trip for all).
                next_token = secrets.token_urlsafe(24)
                next_params = {"jid": jid, "pid": then_show.id, "token": next_token, "now": now,
                               "answered_token": token}
                issued = plan.then_show(conn, not main_visible(then_show), next_params)
                if plan.reads_in_answer:
                    statement, progress_params = _progress_read(conn, then_show, jid)
                    counts = statement.run(conn, progress_params)
        if then_show is not None and plan.reads_in_answer:
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
    a = plan.next_row(conn, issued, next_params) if then_show is not None else None
    if a is None:  # nothing open, or a skipped pair (next_task's work)
        return Answered(result, None, None, then_show)
    task = _shown_task(_Row(a[:6]), next_token, a[6:], None)
    return Answered(result, task, _progress_of(session, then_show, jid, _progress_rows(conn, then_show, jid, counts)),
                    then_show)


def _progress_rows(conn, proj: Project | JudgeProject, jid: int, counts) -> list:
    """The rows of the progress statement: read in the answer's transaction (``counts``, PostgreSQL),
    else now, after its commit (SQLite)."""
    if counts is not None:
        return counts.fetchall()
    statement, params = _progress_read(conn, proj, jid)
    return statement.read_alone(conn, params)


def undo_last(session: Session, project: Project | JudgeProject | int, judge: User | int, judgment_id: int) -> int:
    """Undo the judge's last answer in ``project`` (judgment ``judgment_id``, which must be their
    latest there) while its pair is still theirs: the judgment is removed, and the pair is open
    again for them (or, when they had answered it before, back at that earlier answer). The audit
    trail keeps what was undone. Returns the pair's queue position. :class:`AccessDenied` when the
    judgment is not the judge's; ValueError when it is not their last answer any more;
    :class:`PairReassigned` when the pair went to another judge."""
    proj = _project(session, project)
    jid = _jid(judge)
    j = session.get(Judgment, judgment_id) if isinstance(judgment_id, int) else None
    if j is None or j.judge_id != jid or j.project_id != proj.id or j.source != "human":
        raise AccessDenied("no such answer")
    latest = session.exec(select(func.max(Judgment.id)).where(Judgment.judge_id == jid,
                                                               Judgment.project_id == proj.id)).one()
    if latest != j.id:
        raise ValueError("only your last answer can be undone; go back (B) to change an earlier one")
    a = session.exec(select(Assignment).where(Assignment.project_id == proj.id, Assignment.pair_id == j.pair_id,
                                              Assignment.judge_id == jid)).first()
    if a is None:
        raise PairReassigned("this pair went to another judge; its answer stays")
    earlier = session.exec(select(Judgment.id).where(Judgment.judge_id == jid, Judgment.pair_id == j.pair_id,
                                                     Judgment.id < j.id, Judgment.skipped == false()).limit(1)).first()
    detail = {"pair": j.pair_id, "grade": j.grade, "unsure": bool(j.unsure), "skipped": bool(j.skipped),
              "note": j.note, "answered_at": j.answered_at.isoformat() if j.answered_at else None}
    try:
        session.execute(delete(Judgment).where(Judgment.id == j.id))
        values = {"skipped": False} if earlier is not None else {"skipped": False, "done_at": None}
        session.execute(_plain_update(update(Assignment).where(Assignment.id == a.id, Assignment.judge_id == jid)
                                      .values(**values)))
        record_audit(session, "answer_undone", actor=None if isinstance(judge, int) else judge,
                     target=f"pair {j.pair_id}", project=proj.id, detail=detail)
        session.commit()
    except Exception:
        session.rollback()
        raise
    return a.position


def _checked_answer(stored_scale: str, scale: str, *, grade, note, skip, unsure) -> tuple:
    """The answer's grade, note, skip and unsure flags, checked against the project's scale and
    each other (ValueError saying what is wrong)."""
    if grade is not None:
        grade = check_grade(grade, stored_grade_values(stored_scale), scale)
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


def _existing(session: Session, jid: int, token: str) -> int | None:
    return session.connection().execute(_EXISTING, {"jid": jid, "token": token}).scalar()


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
    return plan_of(conn).progress_statement(int(recent)), {"jid": jid, "pid": proj.id}


def _progress_of(session: Session, proj: Project | JudgeProject, jid: int, rows) -> Progress:
    """:func:`progress` from the rows of its statement (:func:`_progress_read`): the counts from the
    one count of work (:func:`curation.store.workload.judge_work`, which leaves out the pairs a lead
    retired: a dropped query, an excluded document), read in the same statement, and the judge's
    pace from the times after them."""
    work = workload.judge_work(session, proj.id, jid, rows[0], visible=main_visible(proj))
    # The judge's own counter moves on a known-answer pair as on any other (else it would tell them).
    work = work.as_judge_sees()
    at = workload.JUDGE_COUNTS_COLUMNS
    secs = [max(float(row[at]), 0.0) for row in rows if row[at] is not None]
    median = statistics.median(secs) if secs else None
    left = None if median is None else median * work.open_now
    return Progress(done=work.done, assigned=work.assigned, held=work.held, skipped=work.skipped,
                    median_seconds=median, seconds_left=left)


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
    # A pair the judge met in qualification was taught to them: it stays with its owner (for another
    # judge to take), never a label of this judge's; the query taken is the last one with other pairs.
    met = met_in_qualification(session, proj.id, jid)
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
                   Assignment.done_at.is_(None), Query.status != "dropped", Document.excluded == false(),
                   Assignment.pair_id.not_in(met))
            .order_by(Assignment.position.desc())
            .limit(1)
        ).first()
        if tail is None:
            continue
        rows = session.exec(
            select(Assignment.id, Assignment.position, Assignment.pair_id)
            .join(PoolPair, PoolPair.id == Assignment.pair_id)
            .where(Assignment.project_id == proj.id, Assignment.judge_id == owner, Assignment.kind == "main",
                   Assignment.done_at.is_(None), PoolPair.query_id == tail)
        ).all()
        rows = [(i, pos) for i, pos, pair in rows if pair not in met]
        if not rows:  # taken by another judge between the two reads, or all met in qualification
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
