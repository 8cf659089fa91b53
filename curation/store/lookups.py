"""Lookups that several stages need, written once: a pool pair with its query and document.

A pool pair (``PoolPair``) points at its query and document by surrogate id; reports, labels, the
export and the importers all want the TREC identifiers (qid, docid) beside it. Every such join goes
through :func:`join_pair_text`, and the (qid, docid) -> pair id map through :func:`pair_ids`.
"""

from __future__ import annotations

from sqlalchemy import Connection, update
from sqlalchemy.sql import Select
from sqlmodel import Session, select

from curation.store.direct import connection_of
from curation.store.models import Document, PoolPair, Project, Query


def project_id(project: Project | int) -> int:
    """The id of ``project``, given the row or the id itself."""
    return project if isinstance(project, int) else project.id


def join_pair_text(stmt: Select) -> Select:
    """``stmt`` (whose FROM already has ``PoolPair``) joined to the pair's ``Query`` and ``Document``,
    so it can select or filter on ``Query.qid``, ``Document.docid`` and their text."""
    return stmt.join(Query, Query.id == PoolPair.query_id).join(Document, Document.id == PoolPair.document_id)


def plain_rows(db: Session | Connection, stmt: Select) -> list[tuple]:
    """All rows of ``stmt`` as the driver's plain tuples, without a SQLAlchemy ``Row`` per row: for
    the passes over a project's every judgment (100,000 judgments on SQLite: 0.22 s, against 0.55 s
    with a Row each, 0.88 s when a time column is read too). No value is converted: SQLite gives
    booleans as 0/1 and times as text, so select integers and strings, or convert them yourself."""
    result = (connection_of(db) if isinstance(db, Session) else db).execute(stmt)
    try:
        return result.cursor.fetchall()
    finally:
        result.close()


def pair_ids(session: Session, project: Project | int) -> dict[tuple[str, str], int]:
    """``{(qid, docid): pair id}`` for every pair in ``project``'s pool."""
    rows = session.exec(
        join_pair_text(select(PoolPair.id, Query.qid, Document.docid)).where(PoolPair.project_id == project_id(project))
    ).all()
    return {(qid, docid): pid for pid, qid, docid in rows}


def query_texts(session: Session, project: Project | int) -> dict[str, str]:
    """``{qid: text}`` for every query of ``project`` (dropped ones included), for importers that name
    a query by its text."""
    rows = session.exec(select(Query.qid, Query.text).where(Query.project_id == project_id(project))).all()
    return {qid: text for qid, text in rows}


def pair_keys(session: Session, ids: list[int], *, batch: int = 1000) -> dict[int, tuple[str, str]]:
    """``{pair id: (qid, docid)}`` for the pool pairs ``ids`` (fetched ``batch`` ids a statement, so
    a long list stays under the stores' limits on bound parameters)."""
    keys: dict[int, tuple[str, str]] = {}
    for start in range(0, len(ids), batch):
        for pid, qid, docid in session.exec(
            join_pair_text(select(PoolPair.id, Query.qid, Document.docid))
            .where(PoolPair.id.in_(ids[start:start + batch]))
        ).all():
            keys[pid] = (qid, docid)
    return keys


def lock_project(session: Session, project: Project | int) -> None:
    """Take the write lock on ``project`` for the rest of the session's transaction, so that commands
    changing the project as a whole (``assign``, a new export version) run one after the other.

    A no-op UPDATE of the project's row does it on both stores: PostgreSQL locks the row until the
    transaction ends (a second command waits, then reads what the first committed); SQLite takes
    the database's write lock (a second command waits up to the busy timeout). Call it before
    reading what the change depends on, with no uncommitted reads pending on SQLite."""
    pid = project_id(project)
    session.execute(
        update(Project).where(Project.id == pid).values(id=Project.id).execution_options(synchronize_session=False)
    )
