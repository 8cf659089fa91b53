"""A leak check's findings in a project: record them, list them, and a lead's decisions on them.

:func:`record_findings` stores a ``golden leakcheck`` result (the records of
:func:`curation.leak.report.read_report`) as ``LeakFinding`` rows and sets each query's
``leak_status``. A lead then decides, per query and matching chunk (:func:`decide`):

``exclude_chunk``
    the chunk leaves the snapshot: the project's document with that id gets ``excluded``;
``drop_query``
    the query leaves the golden set (``Query.status = "dropped"``);
``rejudge``
    the query stays but is to be judged again (``Query.status = "rejudge"``);
``keep``
    a false alarm: nothing changes.

The decision, who took it and when are stored on every finding of that (query, chunk) pair.
Changing a decision undoes the old effect unless another finding still asks for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlmodel import Session, select

from curation.store.models import Document, LeakFinding, Project, Query, User, utcnow

DECISIONS = {
    "exclude_chunk": "Exclude the chunk from the snapshot",
    "drop_query": "Drop the query",
    "rejudge": "Re-judge the query",
    "keep": "Keep (false alarm)",
}
_STATUS_FROM_DECISION = {"drop_query": "dropped", "rejudge": "rejudge"}


def _pid(project: Project | int) -> int:
    return project if isinstance(project, int) else int(project.id)


@dataclass
class RecordSummary:
    """What :func:`record_findings` did."""

    queries: int = 0  # project queries given a leak status
    findings: int = 0  # LeakFinding rows added
    kept_decided: int = 0  # earlier findings kept because a lead had decided on them
    unknown_qids: list[str] = field(default_factory=list)  # in the report, not in the project
    statuses: dict[str, int] = field(default_factory=dict)


def record_findings(session: Session, project: Project | int, records: list[dict]) -> RecordSummary:
    """Store a leak check's per-query records in ``project`` and commit.

    Each record is one line of the ``--out`` file of ``golden leakcheck`` (``qid``, ``status``,
    ``matches``). The queries' ``leak_status`` is set; their undecided findings from an earlier
    check are replaced, while findings a lead already decided on are kept (and not added twice).
    """
    pid = _pid(project)
    queries = {q.qid: q for q in session.exec(select(Query).where(Query.project_id == pid)).all()}
    summary = RecordSummary()
    for rec in records:
        qid = str(rec["qid"])
        query = queries.get(qid)
        if query is None:
            summary.unknown_qids.append(qid)
            continue
        status = str(rec["status"])
        if status not in ("leak", "too_short", "clean"):
            raise ValueError(f"records: query {qid!r} has unknown status {status!r}")
        query.leak_status = status
        session.add(query)
        summary.queries += 1
        summary.statuses[status] = summary.statuses.get(status, 0) + 1
        decided = set()
        for old in session.exec(select(LeakFinding).where(LeakFinding.query_id == query.id)).all():
            if old.decision is None:
                session.delete(old)
            else:
                decided.add((old.chunk_id, old.mode))
                summary.kept_decided += 1
        for m in rec.get("matches") or ():
            key = (str(m["chunk_id"]), str(m["mode"]))
            if key in decided:
                continue
            session.add(
                LeakFinding(
                    project_id=pid, query_id=query.id, chunk_id=key[0], mode=key[1],
                    score=float(m["score"]), span=m.get("span"),
                )
            )
            summary.findings += 1
    session.commit()
    return summary


@dataclass
class ChunkFinding:
    """One matching chunk of a query, all modes together, with the lead's decision."""

    chunk_id: str
    scores: dict[str, float]  # mode -> score
    span: str | None
    in_pool: bool  # the chunk is one of the project's (pooled) documents
    excluded: bool
    decision: str | None
    decided_by: str | None
    decided_at: datetime | None
    finding_id: int  # the first finding's id: the handle the page posts back

    @property
    def best(self) -> float:
        return max(self.scores.values())


@dataclass
class QueryLeaks:
    qid: str
    query_id: int
    text: str
    leak_status: str | None
    status: str  # the query's own status: active, dropped, rejudge
    chunks: list[ChunkFinding]


@dataclass
class LeakOverview:
    counts: dict[str, int]  # leak / too_short / clean / unchecked -> queries
    queries: list[QueryLeaks]  # every query with a leak or too_short status, leaks first
    decided: int
    undecided: int


def _chunk_findings(session: Session, pid: int, query_ids: list[int]) -> dict[int, list[ChunkFinding]]:
    rows = session.exec(
        select(LeakFinding, User.name)
        .join(User, User.id == LeakFinding.decided_by_id, isouter=True)
        .where(LeakFinding.project_id == pid, LeakFinding.query_id.in_(query_ids))
        .order_by(LeakFinding.id)
    ).all() if query_ids else []
    docs = {}
    chunk_ids = {f.chunk_id for f, _ in rows}
    if chunk_ids:
        for docid, excluded in session.exec(
            select(Document.docid, Document.excluded).where(Document.project_id == pid, Document.docid.in_(chunk_ids))
        ).all():
            docs[docid] = excluded
    grouped: dict[int, dict[str, ChunkFinding]] = {}
    for f, lead in rows:
        by_chunk = grouped.setdefault(f.query_id, {})
        cf = by_chunk.get(f.chunk_id)
        if cf is None:
            cf = by_chunk[f.chunk_id] = ChunkFinding(
                f.chunk_id, {}, f.span, f.chunk_id in docs, bool(docs.get(f.chunk_id, False)),
                f.decision, lead, f.decided_at, int(f.id),
            )
        cf.scores[f.mode] = f.score
        if f.span and not cf.span:
            cf.span = f.span
    return {q: sorted(c.values(), key=lambda c: (-c.best, c.chunk_id)) for q, c in grouped.items()}


def leak_overview(session: Session, project: Project | int) -> LeakOverview:
    """Every query's leak status in ``project``, with the matching chunks of the flagged ones."""
    pid = _pid(project)
    queries = session.exec(select(Query).where(Query.project_id == pid).order_by(Query.qid)).all()
    counts = {"leak": 0, "too_short": 0, "clean": 0, "unchecked": 0}
    for q in queries:
        counts[q.leak_status if q.leak_status in counts else "unchecked"] += 1
    flagged = [q for q in queries if q.leak_status in ("leak", "too_short")]
    chunks = _chunk_findings(session, pid, [q.id for q in flagged])
    out = [QueryLeaks(q.qid, int(q.id), q.text, q.leak_status, q.status, chunks.get(q.id, [])) for q in flagged]
    out.sort(key=lambda q: (q.leak_status != "leak", q.qid))
    decided = sum(1 for q in out for c in q.chunks if c.decision)
    undecided = sum(1 for q in out for c in q.chunks if not c.decision)
    return LeakOverview(counts, out, decided, undecided)


def query_leaks(session: Session, project: Project | int, query_id: int) -> QueryLeaks | None:
    """One query's leak status and matching chunks (for re-rendering it after a decision)."""
    pid = _pid(project)
    q = session.get(Query, query_id)
    if q is None or q.project_id != pid:
        return None
    chunks = _chunk_findings(session, pid, [q.id]).get(q.id, [])
    return QueryLeaks(q.qid, int(q.id), q.text, q.leak_status, q.status, chunks)


def decide(session: Session, project: Project | int, finding_id: int, decision: str, lead: User) -> QueryLeaks:
    """Record ``lead``'s ``decision`` (one of :data:`DECISIONS`) on the (query, chunk) pair of
    finding ``finding_id``, apply its effect, commit, and return the query's findings as they are
    now. ``LookupError`` when the finding is not in the project."""
    if decision not in DECISIONS:
        raise ValueError(f"decision: {decision!r} is not one of {', '.join(DECISIONS)}")
    pid = _pid(project)
    finding = session.get(LeakFinding, finding_id)
    if finding is None or finding.project_id != pid:
        raise LookupError(f"finding {finding_id} is not in this project")
    now = utcnow()
    same = session.exec(
        select(LeakFinding).where(LeakFinding.query_id == finding.query_id, LeakFinding.chunk_id == finding.chunk_id)
    ).all()
    undo = any(f.decision in _STATUS_FROM_DECISION for f in same)
    for f in same:
        f.decision, f.decided_by_id, f.decided_at = decision, lead.id, now
        session.add(f)
    session.flush()
    _apply_chunk(session, pid, finding.chunk_id)
    _apply_query(session, finding.query_id, undo=undo)
    session.commit()
    return query_leaks(session, pid, finding.query_id)


def _apply_chunk(session: Session, pid: int, chunk_id: str) -> None:
    """A document is excluded while any finding of its chunk says so."""
    doc = session.exec(select(Document).where(Document.project_id == pid, Document.docid == chunk_id)).first()
    if doc is None:
        return
    wanted = session.exec(
        select(LeakFinding.id).where(
            LeakFinding.project_id == pid, LeakFinding.chunk_id == chunk_id, LeakFinding.decision == "exclude_chunk"
        )
    ).first() is not None
    if doc.excluded != wanted:
        doc.excluded = wanted
        session.add(doc)


def _apply_query(session: Session, query_id: int, *, undo: bool) -> None:
    """The query is dropped (or to be re-judged) while one of its findings says so; when a lead
    takes back such a decision (``undo``) and no other finding asks for it, it is active again."""
    query = session.get(Query, query_id)
    decisions = set(session.exec(select(LeakFinding.decision).where(LeakFinding.query_id == query_id)).all())
    if "drop_query" in decisions:
        status = "dropped"
    elif "rejudge" in decisions:
        status = "rejudge"
    elif undo and query.status in _STATUS_FROM_DECISION.values():
        status = "active"
    else:
        status = query.status
    if query.status != status:
        query.status = status
        session.add(query)
