"""Lookups that several stages need, written once: a pool pair with its query and document.

A pool pair (``PoolPair``) points at its query and document by surrogate id; reports, labels, the
export and the importers all want the TREC identifiers (qid, docid) beside it. Every such join goes
through :func:`join_pair_text`, and the (qid, docid) -> pair id map through :func:`pair_ids`.
"""

from __future__ import annotations

from sqlalchemy.sql import Select
from sqlmodel import Session, select

from curation.store.models import Document, PoolPair, Project, Query


def project_id(project: Project | int) -> int:
    """The id of ``project``, given the row or the id itself."""
    return project if isinstance(project, int) else project.id


def join_pair_text(stmt: Select) -> Select:
    """``stmt`` (whose FROM already has ``PoolPair``) joined to the pair's ``Query`` and ``Document``,
    so it can select or filter on ``Query.qid``, ``Document.docid`` and their text."""
    return stmt.join(Query, Query.id == PoolPair.query_id).join(Document, Document.id == PoolPair.document_id)


def pair_ids(session: Session, project: Project | int) -> dict[tuple[str, str], int]:
    """``{(qid, docid): pair id}`` for every pair in ``project``'s pool."""
    rows = session.exec(
        join_pair_text(select(PoolPair.id, Query.qid, Document.docid)).where(PoolPair.project_id == project_id(project))
    ).all()
    return {(qid, docid): pid for pid, qid, docid in rows}
