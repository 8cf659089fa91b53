"""The one count of judging work: what is done and what is left, per judge and for a project.

Every page and command that says how much is judged reads it here (the judge's page,
the lead's Progress page, the dashboard, the Comparisons panel and ``golden judging progress``
used to count four different ways and disagreed after a lead's leak decisions).

The rule:

- the work is the assignment rows (one per judge and pair) of **live** pairs: a pair is retired,
  and leaves every count, when a lead dropped its query or excluded its document (a leak
  decision); its rows are neither done nor to do;
- a row is **done** when the judge's latest answer is a label (a skip is still to do);
- a main row is **held** while the project holds its main pairs back and no lead has released them;
- ``remaining`` is the rows not done (held ones included), ``open_now`` those the judge can work
  on now (remaining minus held);
- known-answer rows (``Assignment.kind == "known"``, pairs a lead knows the answer of, mixed blind
  into a judge's main queue) are not pool work: they are counted apart (``known_*``), for the
  leads' separate figure, and folded in only for the judge's own page (:meth:`Work.as_judge_sees`),
  whose counter must move on them as on any pair.

The totals come from ``queuecount`` (kept by the database's triggers, migration 0020: one index
probe per judge) minus the rows of retired pairs, which are found from the (usually empty) index
ranges of dropped queries and excluded documents, so the count stays cheap enough for the judging
page to read after every answer.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from sqlalchemy import bindparam, case, exists, false, func, literal_column, or_, true, union
from sqlalchemy import select as core_select
from sqlmodel import Session

from curation.store.models import KNOWN_KIND, Assignment, Document, PoolPair, Query, QueueCount

_A, _PP, _Q, _D, _QC = (t.__table__ for t in (Assignment, PoolPair, Query, Document, QueueCount))
_CHUNK = 5000  # pair ids per IN list


@dataclass(frozen=True)
class Work:
    """One judge's (or a project's) work in assignment rows of live pairs."""

    total: int  # rows of live pairs
    done: int  # labelled (the latest answer is a grade)
    skipped: int  # not done, the latest answer a skip
    held: int  # main rows not done, held back until a lead releases them
    overlap_total: int
    overlap_done: int
    known_total: int = 0  # known-answer rows of live pairs: not pool work, counted apart
    known_done: int = 0
    known_skipped: int = 0
    known_held: int = 0

    def as_judge_sees(self) -> Work:
        """The judge's own count: known-answer rows counted as the pairs they look like."""
        return Work(self.total + self.known_total, self.done + self.known_done, self.skipped + self.known_skipped,
                    self.held + self.known_held, self.overlap_total, self.overlap_done)

    @property
    def remaining(self) -> int:
        """Rows still to answer, held ones included."""
        return self.total - self.done

    @property
    def assigned(self) -> int:
        """Rows the judge may work on now (done ones included): all but the held ones."""
        return self.total - self.held

    @property
    def open_now(self) -> int:
        """Rows the judge could answer now."""
        return self.remaining - self.held

    @property
    def finished(self) -> bool:
        """Nothing is left for this judge, held work included: done, not idle."""
        return self.remaining == 0


def _retired_pair_ids(session: Session, project_id: int) -> list[int]:
    stmt = union(
        core_select(_PP.c.id).join(_Q, _Q.c.id == _PP.c.query_id)
        .where(_Q.c.project_id == project_id, _Q.c.status == "dropped"),
        core_select(_PP.c.id).join(_D, _D.c.id == _PP.c.document_id)
        .where(_D.c.project_id == project_id, _D.c.excluded == true()),
    )
    return list(session.connection().execute(stmt).scalars())


def _add(t: list[int], kind: str, total: int, unanswered: int, skipped: int, visible: bool) -> None:
    """Add a judge's rows of one kind (``total`` of them, ``unanswered`` open and not skipped,
    ``skipped`` open and skipped) to their tally ``t``: [total, done, skipped, held, overlap_total,
    overlap_done, then total, done, skipped and held of the known-answer rows, kept apart]."""
    at = 6 if kind == KNOWN_KIND else 0
    done = total - unanswered - skipped
    t[at] += total
    t[at + 1] += done
    t[at + 2] += skipped
    if kind == "overlap":
        t[4] += total
        t[5] += done
    elif not visible:
        t[at + 3] += unanswered + skipped


def count_work(session: Session, project_id: int, *, visible: bool, judge_id: int | None = None) -> dict[int, Work]:
    """``{judge id: Work}`` for every judge with rows in the project (or only ``judge_id``), by the
    rule of this module; ``visible`` says whether the main pairs are released (or never held):
    :func:`curation.judge.assignment.main_visible`."""
    conn = session.connection()
    where = [_QC.c.project_id == project_id] + ([_QC.c.judge_id == judge_id] if judge_id is not None else [])
    tally: dict[int, list[int]] = defaultdict(lambda: [0] * 10)
    for jid, kind, total, unanswered, skipped in conn.execute(
        core_select(_QC.c.judge_id, _QC.c.kind, _QC.c.total, _QC.c.unanswered, _QC.c.skipped).where(*where)
    ):
        _add(tally[jid], kind, int(total), int(unanswered), int(skipped), visible)
    retired = _retired_pair_ids(session, project_id) if tally else []
    for i in range(0, len(retired), _CHUNK):
        rows = core_select(
            _A.c.judge_id, _A.c.kind, _A.c.done_at.is_(None).label("open"), _A.c.skipped, func.count()
        ).where(_A.c.pair_id.in_(retired[i:i + _CHUNK]), _A.c.project_id == project_id)
        if judge_id is not None:
            rows = rows.where(_A.c.judge_id == judge_id)
        rows = rows.group_by(_A.c.judge_id, _A.c.kind, _A.c.done_at.is_(None), _A.c.skipped)
        for jid, kind, is_open, was_skipped, n in conn.execute(rows):
            n = int(n)
            unanswered = n if is_open and not was_skipped else 0
            skipped = n if is_open and was_skipped else 0
            _add(tally[jid], kind, -n, -unanswered, -skipped, visible)
    return {jid: Work(*t) for jid, t in tally.items()}


# One judge's count in one read, for the judging page after every answer: their ``queuecount`` rows
# by kind, and whether the project has any retired pair at all (two probes of the usually empty
# index ranges of dropped queries and excluded documents). When it has none, the counts are the
# judge's whole work; when it has, :func:`count_work` takes the retired rows off.
_KINDS = ("overlap", "main", KNOWN_KIND)


def _kind_sum(column, kind: str):
    return func.coalesce(func.sum(case((_QC.c.kind == literal_column(f"'{kind}'"), column), else_=0)), 0)


JUDGE_COUNTS = core_select(
    *(_kind_sum(column, kind).label(f"{kind}_{column.name}")
      for kind in _KINDS for column in (_QC.c.total, _QC.c.unanswered, _QC.c.skipped)),
    or_(
        exists().where(_Q.c.project_id == bindparam("pid"), _Q.c.status == literal_column("'dropped'")),
        exists().where(_D.c.project_id == bindparam("pid"), _D.c.excluded == true()),
    ).label("any_retired"),
).where(_QC.c.judge_id == bindparam("jid"), _QC.c.project_id == bindparam("pid"))
"""A Core select with bound ``jid`` and ``pid`` giving one row of :data:`JUDGE_COUNTS_COLUMNS`
columns; a statement may embed it (as a subquery) to read it with other things in one go."""
JUDGE_COUNTS_COLUMNS = 3 * len(_KINDS) + 1


def judge_work(session: Session, project_id: int, judge_id: int, row, *, visible: bool) -> Work:
    """The judge's :class:`Work` from the first :data:`JUDGE_COUNTS_COLUMNS` values of ``row`` (a
    row read with :data:`JUDGE_COUNTS`), by the rule of this module: as it is when the project
    has no retired pair, else as :func:`count_work` counts it."""
    if row[JUDGE_COUNTS_COLUMNS - 1]:
        work = count_work(session, project_id, visible=visible, judge_id=judge_id).get(judge_id)
        return work or Work(0, 0, 0, 0, 0, 0)
    t = [0] * 10
    for k, kind in enumerate(_KINDS):
        total, unanswered, skipped = (int(v or 0) for v in row[3 * k:3 * k + 3])
        _add(t, kind, total, unanswered, skipped, visible)
    return Work(*t)


def project_work(work: dict[int, Work]) -> Work:
    """The project's work: the judges' rows added up (an overlap pair is one row per judge)."""
    return Work(*(sum(getattr(w, f) for w in work.values())
                  for f in ("total", "done", "skipped", "held", "overlap_total", "overlap_done",
                            "known_total", "known_done", "known_skipped", "known_held")))


def live_pair_condition():
    """The SQL condition, over ``query`` and ``document`` joined to a pool pair, that the pair is
    live (not retired): for the few reports that count pairs rather than rows."""
    return (_Q.c.status != "dropped") & (_D.c.excluded == false())
