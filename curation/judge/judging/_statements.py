"""The judging operations' SQL: prebuilt SQLAlchemy Core statements with bound parameters, and
one :class:`Plan` per database for the few that differ between SQLite and PostgreSQL.

The statements share the table aliases, the access rules and the rule of which pairs are retired
(``_RETIRED``), so that showing, submitting, the progress count and the stale move agree on the same
rows (see :mod:`curation.judge.judging`).
"""

from __future__ import annotations

import functools

from sqlalchemy import and_, bindparam, case, exists, false, func, insert, literal_column, or_, true, update
from sqlalchemy import select as core_select
from sqlmodel import select

from curation.store import workload
from curation.store.direct import Statement
from curation.store.models import (
    Assignment,
    Document,
    GuidelinesVersion,
    Judgment,
    KnownAnswerHold,
    PairView,
    PoolPair,
    Project,
    Query,
    QueryNeed,
    QueueCount,
    User,
)
from curation.store.scale import SCALE

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


# One index probe per project (few) instead of a walk over the judge's whole queue.
_HAS_WORK = exists().where(_A.c.project_id == Project.id, _A.c.judge_id == bindparam("jid"))
_JUDGE_PROJECTS = select(Project).where(_HAS_WORK).order_by(Project.name)
_KH = KnownAnswerHold.__table__
# Whether the judge's queue is held in the project (known-answer accuracy below the bar): one probe of
# the holds' (judge, project, released_at) index, read with the project on every request.
_HELD = exists().where(_KH.c.judge_id == bindparam("jid"), _KH.c.project_id == _P.c.id, _KH.c.released_at.is_(None))
_HELD_ALONE = core_select(_KH.c.id).where(_KH.c.judge_id == bindparam("jid"), _KH.c.project_id == bindparam("pid"),
                                          _KH.c.released_at.is_(None)).limit(1)
# What the judging pages read of a project (judging._operations._judge_project_of), with the judge's hold.
_JUDGE_PROJECT_COLUMNS = (_P.c.id, _P.c.name, _P.c.scale, SCALE, _P.c.hold_main, _P.c.released_at, _HELD,
                          _P.c.known_answer_hold, _P.c.min_answer_ms)
_JUDGE_PROJECT_D = Statement(
    core_select(*_JUDGE_PROJECT_COLUMNS).where(_P.c.id == bindparam("pid"), _HAS_WORK),
    prepare=True,
)


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


def _queue_block(kind):
    """The block of the queue a row of ``kind`` is in: the overlap rows, or the main work (main
    rows and the known-answer rows mixed into them)."""
    return case((kind == _OVERLAP, _OVERLAP), else_=literal_column("'main'"))


def _shown_of(view, first=None):
    """The page's read of the token row ``view``: the ``pairview`` table (the row is then picked by
    its token), or the row the token's INSERT returned (PostgreSQL, see ``_ISSUE_AND_SHOW``). The
    pair's kind and queue position are bound parameters, or with ``first`` (the judge's first open
    row, ``_ANSWER_THEN_SHOW``) its columns, returned first, with the page's NULL when no token
    was issued."""
    kind, pos = ((bindparam("kind", type_=_A.c.kind.type), bindparam("pos")) if first is None
                 else (first.c.kind, first.c.position))
    # With ``first`` and the ``pairview`` table, ``first`` is the token row's own assignment
    # (``_SHOWN_ROW``); with a returned row, the judge's first open row, the page NULL beside it
    # when no token was issued (``_ANSWER_THEN_SHOW``).
    same_query = and_(
        _MINE.c.pair_id.in_(core_select(_QP.c.id).where(_QP.c.query_id == _PP.c.query_id).correlate_except(_QP)),
        _MINE.c.judge_id == view.c.judge_id,
        # A known-answer row counts with the main rows it is mixed into, so that the page's "pair i
        # of n of this query" is worked out the same way for it as for any main pair.
        _queue_block(_MINE.c.kind) == _queue_block(kind),
    )
    page = (
        view.join(_PP, _PP.c.id == view.c.pair_id)
        .join(_Q, _Q.c.id == _PP.c.query_id)
        .join(_D, _D.c.id == _PP.c.document_id)
        .outerjoin(_GV, _GV.c.id == view.c.guidelines_version_id)
        .outerjoin(_QN, _QN.c.id == view.c.need_version_id)
    )
    stmt = core_select(
        *((first.c.id, first.c.pair_id, first.c.position, first.c.kind, first.c.skipped, first.c.done_at)
          if first is not None else ()),
        _Q.c.qid, _Q.c.text, _D.c.docid, _D.c.title, _D.c.text, _D.c.url, _GV.c.version,
        _QN.c.version, _QN.c.description, _QN.c.narrative,
        core_select(func.count()).where(same_query).correlate_except(_MINE).scalar_subquery(),
        core_select(func.count()).where(same_query, _MINE.c.position <= pos).correlate_except(_MINE).scalar_subquery(),
    )
    if first is None:
        stmt = stmt.select_from(page)
    elif view is _PV:
        stmt = stmt.select_from(page.join(first, first.c.id == view.c.assignment_id))
    else:
        stmt = stmt.select_from(first.outerjoin(page, true()))
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


# The answer's judgment is there (the next pair's token is issued only then: nothing is issued for
# an answer that recorded nothing, e.g. on a pair moved to another judge meanwhile).
_ANSWER_RECORDED = exists().where(_J.c.judge_id == bindparam("jid"),
                                  _J.c.client_token == bindparam("answered_token", type_=_J.c.client_token.type))


def _answer_then_show(overlap_only: bool):
    """PostgreSQL's last statement of an answer but the progress: the judge's first open row (as
    ``_FIRST_OPEN``), and when it is a fresh one, its token issued and its page read, in one
    statement. Sent in the answer's transaction right after the judgment (``_submit``), so the
    answer's own row is no longer open, and written only once that judgment is there (nothing is
    issued for an answer that recorded nothing). Returns the open row's columns, then the page's,
    NULL when no token was issued (a skipped pair: ``next_task`` decides); no row when none is open."""
    first = _FIRST_OPEN[overlap_only].cte("open_row")
    issued = _token_insert(first.c.id, first.c.pair_id, and_(first.c.skipped == false(), _ANSWER_RECORDED)).returning(
        _PV.c.pair_id, _PV.c.judge_id, _PV.c.guidelines_version_id, _PV.c.need_version_id,
    ).cte("issued")
    return Statement(_shown_of(issued, first=first), prepare=True)


_ANSWER_THEN_SHOW_D = {k: _answer_then_show(k) for k in (False, True)}


def _issue_open(overlap_only: bool):
    """SQLite's counterpart of ``_ANSWER_THEN_SHOW`` (it has no INSERT inside WITH): the token of the
    judge's first open row (as ``_FIRST_OPEN``) issued in one statement when that row is a fresh
    one and the answer's judgment is there; nothing issued otherwise (a skipped pair, or none open:
    ``next_task`` decides). Its page is read afterwards by the token (``_SHOWN_ROW``)."""
    first = _FIRST_OPEN[overlap_only].subquery("open_row")
    return Statement(_token_insert(first.c.id, first.c.pair_id, and_(first.c.skipped == false(), _ANSWER_RECORDED)),
                     prepare=True)


_ISSUE_OPEN_D = {k: _issue_open(k) for k in (False, True)}
# The page of a token just issued, after the columns of its assignment row (the shape of
# ``_ANSWER_THEN_SHOW``'s rows).
_SHOWN_ROW_D = Statement(_shown_of(_PV, first=_A.alias("shown")), prepare=True)


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


_VIEW = (
    core_select(
        _PV.c.judge_id, _PV.c.project_id, _PV.c.pair_id, _PV.c.assignment_id, _PV.c.guidelines_version_id,
        _PV.c.need_version_id, _PV.c.shown_at, _A.c.position, _A.c.done_at, _J.c.id.label("existing"),
        SCALE, _P.c.scale, _A.c.kind, _P.c.min_answer_ms,
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
# The htmx answer's first read, one statement for both: the project when it is one of the judge's
# (as _JUDGE_PROJECT, no row when it is not) and beside it the answered token's row (as _VIEW; NULLs
# when the token is unknown). One statement less on every answer than the two reads apart.
_VIEWED = _VIEW.subquery("viewed")
_PROJECT_AND_VIEW_D = Statement(
    core_select(*_JUDGE_PROJECT_COLUMNS, *_VIEWED.c)
    .select_from(_P.outerjoin(_VIEWED, true()))
    .where(_P.c.id == bindparam("pid"), _HAS_WORK),
    prepare=True,
)
_ANSWER_D = Statement(_ANSWER, prepare=True)
# The judgment row, written only while the assignment is still the judge's, its id returned by the
# INSERT (RETURNING: SQLite 3.35+, PostgreSQL).
_JUDGMENT_VALUES = {c: _bound(_J.c[c]) for c in (
    "project_id", "pair_id", "judge_id", "grade", "unsure", "skipped", "note", "guidelines_version_id",
    "need_version_id", "source", "shown_at", "answered_at", "client_token", "purpose")}
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
def _progress_statement(dialect: str, recent: int) -> Statement:
    """Everything :func:`progress` reads, in one statement: the judge's one count of work
    (:data:`curation.store.workload.JUDGE_COUNTS`: their queue counts by kind, and whether the
    project has any retired pair), and their ``recent`` latest shown-to-answered times, one row each
    (a single row with NULL before any): the counts ride along on every row. ``recent`` is
    written into the statement (see ``_ONE``)."""
    counts = workload.JUDGE_COUNTS.subquery("counts")
    pace = _pace(dialect, literal_column(str(int(recent)))).subquery("pace")
    return Statement(core_select(*counts.c, *pace.c).select_from(counts.outerjoin(pace, true())), prepare=True)


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


# ---------------------------------------------------------------------------------------------
# One plan per database: the statements whose form differs between SQLite and PostgreSQL


class Plan:
    """How the judging operations talk to one kind of database: the statements that differ between
    SQLite and PostgreSQL, behind the same steps. The operations ask :func:`plan_of` for the
    connection's plan and never look at the dialect themselves."""

    name: str
    # The answer and the next pair's token in one transaction; the page and the progress read in it
    # too (PostgreSQL: one round trip for all) or after its commit (SQLite: see _SQLitePlan).
    answer_then_show = True
    reads_in_answer: bool

    def then_show(self, conn, overlap_only: bool, params):
        """In the answer's transaction, after its judgment: issue the token of the judge's first open
        row when it is a fresh one (see ``_ANSWER_THEN_SHOW``); returns what :meth:`next_row` reads."""
        raise NotImplementedError

    def next_row(self, conn, issued, params):
        """After the answer's transaction: the open row's columns and its page (``_ANSWER_THEN_SHOW``'s
        row), or None when no token was issued (a skipped pair, or none open)."""
        raise NotImplementedError

    def issue_and_show(self, conn, params):
        """Issue the token of an assignment (only while it is the judge's) and read what the page
        shows; returns the page's result."""
        raise NotImplementedError

    def answer_and_record(self, conn, params):
        """Record an answer on the judge's own assignment and its judgment (only while the
        assignment is still the judge's); returns (the update's result or None, the judgment's
        result, empty when the pair was moved)."""
        raise NotImplementedError

    def progress_statement(self, recent: int) -> Statement:
        """The one statement :func:`curation.judge.judging.progress` reads."""
        return _progress_statement(self.name, recent)


class _SQLitePlan(Plan):
    # On SQLite a statement is a function call, and writers take turns: the answer's writes and the
    # next pair's token are one short write transaction (one commit an answer, not two), and the
    # page and the progress are read after its commit, so the write lock is never held through
    # them (measured 2026-11-30: a transaction that held it through the reads gave 16% fewer
    # judgments/s at 20 judges). SQLite has no INSERT inside WITH: each write is its own statement.
    name = "sqlite"
    reads_in_answer = False

    def then_show(self, conn, overlap_only, params):
        return _ISSUE_OPEN_D[overlap_only].run(conn, params).rowcount

    def next_row(self, conn, issued, params):
        return _SHOWN_ROW_D.run(conn, params).fetchone() if issued == 1 else None

    def issue_and_show(self, conn, params):
        _ISSUE_TOKEN_D.run(conn, params)
        return _SHOWN_D.run(conn, params)

    def answer_and_record(self, conn, params):
        answered = _ANSWER_D.run(conn, params)
        return answered, _RECORD_D.run(conn, params)


class _PostgreSQLPlan(Plan):
    name = "postgresql"
    reads_in_answer = True

    def then_show(self, conn, overlap_only, params):
        return _ANSWER_THEN_SHOW_D[overlap_only].run(conn, params)

    def next_row(self, conn, issued, params):
        row = issued.fetchone()
        return row if row is not None and row[6] is not None else None

    def issue_and_show(self, conn, params):
        return _ISSUE_AND_SHOW_D.run(conn, params)

    def answer_and_record(self, conn, params):
        return None, _ANSWER_AND_RECORD_D.run(conn, params)  # no row: the update found the pair moved


SQLITE, POSTGRESQL = _SQLitePlan(), _PostgreSQLPlan()


def plan_of(conn) -> Plan:
    """The plan of the connection's database."""
    return POSTGRESQL if conn.dialect.name == "postgresql" else SQLITE
