"""Information needs: what each query's searcher is after (a TREC topic's description and
narrative), versioned per query like the guidelines are per project.

Version 1 comes from ``queries.jsonl`` (``golden project create``, or ``golden project extend
--queries``); a lead writes later versions from the adjudication screen. The latest version of a
query is in force: the judging page shows it under the query, the token of each showing records
it (``PairView.need_version_id``) and so does the judgment made from it; an export writes the
version in force into queries.jsonl.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import func, insert
from sqlmodel import Session, select

from curation.store.lookups import project_id
from curation.store.models import Query, QueryNeed, User
from curation.store.roles import is_lead


@dataclass(frozen=True)
class Need:
    """A query's information need in force (``version`` 0: none written yet)."""

    qid: str
    version: int
    description: str | None
    narrative: str | None
    author: str | None = None

    @property
    def empty(self) -> bool:
        return not (self.description or self.narrative)


def _clean(text) -> str | None:
    if text is None:
        return None
    text = str(text).strip()
    return text or None


def _latest(session: Session, query_ids: Iterable[int]) -> dict[int, QueryNeed]:
    ids = list(query_ids)
    out: dict[int, QueryNeed] = {}
    for start in range(0, len(ids), 1000):
        for row in session.exec(
            select(QueryNeed).where(QueryNeed.query_id.in_(ids[start:start + 1000]))
            .order_by(QueryNeed.query_id, QueryNeed.version)
        ).all():
            out[row.query_id] = row  # the highest version wins
    return out


def current_need(session: Session, project, qid: str) -> Need | None:
    """The need in force for query ``qid`` of ``project`` (version 0 and no text when none was
    written), or None when the project has no such query."""
    query = session.exec(select(Query).where(Query.project_id == project_id(project), Query.qid == str(qid))).first()
    if query is None:
        return None
    row = _latest(session, [query.id]).get(query.id)
    if row is None:
        return Need(query.qid, 0, None, None)
    author = session.get(User, row.created_by_id).name if row.created_by_id else None
    return Need(query.qid, row.version, row.description, row.narrative, author)


def needs_by_qid(session: Session, project) -> dict[str, Need]:
    """``{qid: Need}`` of every query of ``project`` that has one written (for the export)."""
    pid = project_id(project)
    qids = dict(session.exec(select(Query.id, Query.qid).where(Query.project_id == pid)).all())
    latest = _latest(session, qids)
    return {qids[qid]: Need(qids[qid], row.version, row.description, row.narrative)
            for qid, row in latest.items() if row.description or row.narrative}


def load_needs(session: Session, project, records: Iterable, *, created_by: User | None = None,
               note: str = "from queries.jsonl") -> int:
    """Record the needs carried by query records (``.qid``, ``.description``, ``.narrative``, as
    :class:`curation.formats.queries.QueryRecord`) as each query's next version, where they differ
    from the one in force; no commit (the caller's transaction). Returns how many were recorded."""
    pid = project_id(project)
    ids = dict(session.exec(select(Query.qid, Query.id).where(Query.project_id == pid)).all())
    wanted = {ids[r.qid]: (_clean(r.description), _clean(r.narrative)) for r in records
              if r.qid in ids and (_clean(r.description) or _clean(r.narrative))}
    latest = _latest(session, wanted)
    rows = []
    for qid_id, (description, narrative) in wanted.items():
        old = latest.get(qid_id)
        if old is not None and (old.description, old.narrative) == (description, narrative):
            continue
        rows.append(dict(project_id=pid, query_id=qid_id, version=(old.version + 1) if old else 1,
                         description=description, narrative=narrative, note=note,
                         created_by_id=created_by.id if created_by else None))
    if rows:
        session.execute(insert(QueryNeed), rows)
    edits = [r for r in rows if r["version"] > 1]  # a need that changed (a first one comes with its query)
    if edits:
        from curation.store.audit import record_audit

        qid_of = {v: k for k, v in ids.items()}
        record_audit(session, "need", actor=created_by, target=f"{len(edits)} information need"
                     f"{'s' if len(edits) != 1 else ''}", project=pid,
                     detail={"qids": [qid_of[r["query_id"]] for r in edits[:100]], "count": len(edits), "note": note})
    return len(rows)


def set_need(session: Session, project, qid: str, *, lead: User, description: str | None,
             narrative: str | None, note: str | None = None) -> tuple[Need, bool]:
    """A lead writes query ``qid``'s information need: a new version when the text differs from
    the one in force (the same text keeps it), committed. Returns (the need in force, is_new).
    ValueError naming the field for a user who is not a lead or admin, an unknown qid, or a text
    over GOLDEN_MAX_GUIDELINES_BYTES or holding NUL (:func:`curation.formats.limits.check_size`)."""
    if not is_lead(lead):
        raise ValueError("lead: only a lead or admin can write a query's information need")
    pid = project_id(project)
    query = session.exec(select(Query).where(Query.project_id == pid, Query.qid == str(qid))).first()
    if query is None:
        raise ValueError(f"qid: no query {qid!r} in this project")
    description, narrative = _clean(description), _clean(narrative)
    from curation.formats.limits import check_size

    for name, text in (("description", description), ("narrative", narrative), ("note", note)):
        if text:  # the limit of a description or narrative in queries.jsonl (curation.formats.queries)
            check_size(text, "GOLDEN_MAX_GUIDELINES_BYTES", name, None, f"the {name}")
    old = _latest(session, [query.id]).get(query.id)
    if (old.description, old.narrative) == (description, narrative) if old else not (description or narrative):
        return current_need(session, pid, query.qid), False
    version = (session.exec(select(func.max(QueryNeed.version)).where(QueryNeed.query_id == query.id)).one() or 0) + 1
    session.add(QueryNeed(project_id=pid, query_id=query.id, version=version, description=description,
                          narrative=narrative, note=_clean(note), created_by_id=lead.id))
    from curation.store.audit import record_audit

    record_audit(session, "need", actor=lead, target=f"query {query.qid} need v{version}", project=pid,
                 detail={"qid": query.qid, "version": version, "note": _clean(note)})
    try:
        session.commit()
    except Exception:
        session.rollback()
        raise
    return Need(query.qid, version, description, narrative, lead.name), True
