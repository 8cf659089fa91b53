"""A leak check's findings in a project: record them, list them, and a lead's decisions on them.

:func:`record_findings` stores a ``golden leakcheck`` result (the records of
:func:`curation.leak.report.read_report`) as ``LeakFinding`` rows and sets each query's
``leak_status``. A lead then decides, per query and matching chunk (:func:`decide`):

``exclude_chunk``
    the chunk leaves the snapshot: the project's document with that id gets ``excluded``;
``drop_query``
    the query leaves the golden set (``Query.status = "dropped"``); taken on one chunk, it is also
    recorded on every still undecided chunk of the query (the query is decided whole);
``rejudge``
    the query stays but is to be judged again (``Query.status = "rejudge"``);
``keep``
    a false alarm: nothing changes.

The decision, who took it and when are stored on every finding of that (query, chunk) pair.
Changing a decision undoes the old effect unless another finding still asks for it. Every finding
starts undecided; a lead decides one chunk, a selection of chunks or a whole query at once
(:func:`decide_many`, :func:`decide_query`).

Words: a *finding* is one match of one query in one chunk under one mode (``exact``, ``jaccard``,
``containment``): what ``golden leakcheck --project`` counts ("5 findings to review"). A *chunk* is
one passage of the corpus; a chunk matching a query under two modes is two findings and one
decision. :func:`leak_overview` counts both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlmodel import Session, select

from curation.leak.report import MODES, whole_words
from curation.store.models import Document, LeakFinding, Project, Query, User, utcnow

DECISIONS = {  # no default: a finding starts undecided
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
                    context_before=m.get("before"), context_after=m.get("after"),  # None: an older report
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
    before: str | None = None  # the chunk's (normalised) text before the matched span
    after: str | None = None  # ... and after it
    findings: int = 0  # findings (modes) behind this chunk

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
    hidden: int = 0  # chunks of this query the filter leaves out

    @property
    def findings(self) -> int:
        return sum(c.findings for c in self.chunks)

    @property
    def undecided(self) -> int:
        return sum(1 for c in self.chunks if not c.decision)


@dataclass
class LeakFilter:
    """What the review page shows: chunks with a finding under ``mode`` (any mode: None) scoring at
    least ``min_score``; ``show`` "all", "undecided" or "decided"; one page of ``per_page`` queries."""

    mode: str | None = None
    min_score: float = 0.0
    show: str = "all"
    page: int = 1
    per_page: int = 20

    def __post_init__(self):
        if self.mode is not None and self.mode not in MODES:
            raise ValueError(f"mode: {self.mode!r} is not one of {', '.join(MODES)}")
        if not 0.0 <= self.min_score <= 1.0:
            raise ValueError(f"min_score: {self.min_score} is not between 0 and 1")
        if self.show not in ("all", "undecided", "decided"):
            raise ValueError(f"show: {self.show!r} is not one of all, undecided, decided")
        if self.page < 1 or self.per_page < 1:
            raise ValueError("page and per_page start at 1")

    def keeps(self, c: ChunkFinding) -> bool:
        scores = [v for m, v in c.scores.items() if self.mode is None or m == self.mode]
        if not scores or max(scores) < self.min_score:
            return False
        return self.show == "all" or (self.show == "decided") == bool(c.decision)


@dataclass
class LeakOverview:
    counts: dict[str, int]  # leak / too_short / clean / unchecked -> queries
    queries: list[QueryLeaks]  # this page's flagged queries (leaks first), their chunks filtered
    decided: int  # chunks decided, over all flagged queries (unfiltered)
    undecided: int
    findings: int = 0  # LeakFinding rows over all flagged queries (what the CLI counts)
    findings_undecided: int = 0
    matching_queries: int = 0  # flagged queries with a chunk the filter keeps (or too_short ones, unfiltered)
    matching_chunks: int = 0
    pages: int = 1
    filter: LeakFilter = field(default_factory=LeakFilter)


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
                f.decision, lead, f.decided_at, int(f.id), f.context_before, f.context_after,
            )
        cf.scores[f.mode] = f.score
        cf.findings += 1
        if f.span and not cf.span:
            cf.span, cf.before, cf.after = f.span, f.context_before, f.context_after
    for by_chunk in grouped.values():
        for cf in by_chunk.values():
            cf.before, cf.span, cf.after = whole_words(cf.before, cf.span, cf.after)
    return {q: sorted(c.values(), key=lambda c: (-c.best, c.chunk_id)) for q, c in grouped.items()}


def leak_overview(session: Session, project: Project | int, flt: LeakFilter | None = None) -> LeakOverview:
    """Every query's leak status in ``project``; the flagged queries (leaks first, then too short),
    their matching chunks filtered by ``flt`` and cut to its page. The totals (findings, chunks
    decided and undecided) are over all flagged queries, whatever the filter."""
    flt = flt or LeakFilter()
    pid = _pid(project)
    queries = session.exec(select(Query).where(Query.project_id == pid).order_by(Query.qid)).all()
    counts = {"leak": 0, "too_short": 0, "clean": 0, "unchecked": 0}
    for q in queries:
        counts[q.leak_status if q.leak_status in counts else "unchecked"] += 1
    flagged = [q for q in queries if q.leak_status in ("leak", "too_short")]
    chunks = _chunk_findings(session, pid, [q.id for q in flagged])
    every = [QueryLeaks(q.qid, int(q.id), q.text, q.leak_status, q.status, chunks.get(q.id, [])) for q in flagged]
    every.sort(key=lambda q: (q.leak_status != "leak", q.qid))
    decided = sum(1 for q in every for c in q.chunks if c.decision)
    undecided = sum(1 for q in every for c in q.chunks if not c.decision)
    findings = sum(q.findings for q in every)
    findings_undecided = sum(c.findings for q in every for c in q.chunks if not c.decision)
    shown = []
    for q in every:
        kept = [c for c in q.chunks if flt.keeps(c)]
        if kept or (not q.chunks and flt.show != "decided" and flt.mode is None and flt.min_score == 0):
            shown.append(QueryLeaks(q.qid, q.query_id, q.text, q.leak_status, q.status, kept,
                                    hidden=len(q.chunks) - len(kept)))
    pages = max(1, -(-len(shown) // flt.per_page))
    start = (min(flt.page, pages) - 1) * flt.per_page
    return LeakOverview(counts, shown[start:start + flt.per_page], decided, undecided, findings, findings_undecided,
                        matching_queries=len(shown), matching_chunks=sum(len(q.chunks) for q in shown), pages=pages,
                        filter=flt)


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
    return decide_many(session, project, [finding_id], decision, lead)[0]


def decide_query(session: Session, project: Project | int, query_id: int, decision: str, lead: User) -> QueryLeaks:
    """:func:`decide_many` on every chunk of one query. ``LookupError`` when the query is not in
    the project or has no findings."""
    pid = _pid(project)
    ids = session.exec(
        select(LeakFinding.id).where(LeakFinding.project_id == pid, LeakFinding.query_id == query_id)
    ).all()
    if not ids:
        raise LookupError(f"query {query_id} has no leak findings in this project")
    return decide_many(session, project, list(ids), decision, lead)[0]


def decide_many(
    session: Session, project: Project | int, finding_ids: list[int], decision: str, lead: User, *,
    query_id: int | None = None,
) -> list[QueryLeaks]:
    """Record ``lead``'s ``decision`` on the (query, chunk) pair of each finding in
    ``finding_ids`` (every finding of those pairs, whatever its mode), apply the effects, and
    commit once: all or nothing. Returns the queries touched, as they are now, in the order first
    met. ``LookupError`` when a finding is not in the project, or not of query ``query_id`` when
    given (nothing is recorded then)."""
    if decision not in DECISIONS:
        raise ValueError(f"decision: {decision!r} is not one of {', '.join(DECISIONS)}")
    pid = _pid(project)
    wanted = list(dict.fromkeys(int(i) for i in finding_ids))
    if not wanted:
        raise LookupError("no finding given")
    found = session.exec(select(LeakFinding).where(LeakFinding.id.in_(wanted))).all()
    by_id = {f.id: f for f in found}
    missing = [i for i in wanted if i not in by_id or by_id[i].project_id != pid
               or (query_id is not None and by_id[i].query_id != query_id)]
    if missing:
        raise LookupError(f"finding {missing[0]} is not in this project")
    pairs = list(dict.fromkeys((by_id[i].query_id, by_id[i].chunk_id) for i in wanted))
    if decision == "drop_query":
        pairs = _with_undecided_chunks(session, pairs)
    now = utcnow()
    undo: dict[int, bool] = {}
    try:
        for query_id, chunk_id in pairs:
            same = session.exec(
                select(LeakFinding).where(LeakFinding.query_id == query_id, LeakFinding.chunk_id == chunk_id)
            ).all()
            undo[query_id] = undo.get(query_id, False) or any(f.decision in _STATUS_FROM_DECISION for f in same)
            for f in same:
                f.decision, f.decided_by_id, f.decided_at = decision, lead.id, now
                session.add(f)
        session.flush()
        for chunk_id in dict.fromkeys(c for _, c in pairs):
            _apply_chunk(session, pid, chunk_id)
        for query_id, was in undo.items():
            _apply_query(session, query_id, undo=was)
        _audit_decision(session, pid, pairs, decision, lead)
        session.commit()
    except Exception:
        session.rollback()
        raise
    return [query_leaks(session, pid, q) for q in undo]


def _audit_decision(session: Session, pid: int, pairs: list[tuple[int, str]], decision: str, lead: User) -> None:
    """One audit event per decision, naming the queries (by qid) and chunks decided (the first 100)."""
    from curation.store.audit import record_audit

    qids = dict(session.exec(select(Query.id, Query.qid).where(Query.id.in_({q for q, _ in pairs}))).all())
    shown = [[qids.get(q, str(q)), c] for q, c in pairs[:100]]
    record_audit(session, "leak_decision", actor=lead, target=f"{len(pairs)} chunk{'s' if len(pairs) != 1 else ''}",
                 project=pid, detail={"decision": decision, "pairs": shown, "count": len(pairs)})


def _with_undecided_chunks(session: Session, pairs: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Dropping a query decides it whole: ``pairs`` with every still undecided chunk of
    the queries dropped, so none of them is left for review or counted undecided by the export.
    Chunks a lead already decided keep their decision."""
    queries = list(dict.fromkeys(q for q, _ in pairs))
    rest = session.exec(
        select(LeakFinding.query_id, LeakFinding.chunk_id)
        .where(LeakFinding.query_id.in_(queries), LeakFinding.decision.is_(None))
    ).all()
    return list(dict.fromkeys(pairs + [(q, c) for q, c in rest]))


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
