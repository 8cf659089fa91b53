"""Seed judgments: query-document pairs known from existing signals, kept apart from human labels.

Two sources:

* ``ticket``: a resolved support ticket links a document to the question asked. A strong signal:
  by default the top grade of the project's scale.
* ``click``: a user clicked the document for the query. A weak positive: by default grade 1.

Seeds are stored as :class:`~curation.store.models.SeedJudgment` rows, never as judgments. They can be
added to the judging pool (``PoolPair.seed_source``), where judges confirm or reject them blind:
nothing a judge sees says a pair came from a seed, and the pair takes its place in the query's
shuffled order like any other. The export marks the labels that rest on a seed alone.

Input files: see :mod:`curation.formats.seeds_file`.
"""

from __future__ import annotations

import hashlib
import os
import random
from dataclasses import dataclass, field

from sqlalchemy import func
from sqlmodel import Session, select

from curation.formats.fileio import InputError
from curation.formats.seeds_file import read_seeds
from curation.store.models import Assignment, Document, Judgment, PoolPair, Project, Query, SeedJudgment
from curation.store.scale import check_grade, grade_values

SEED_SOURCES = ("ticket", "click")


project_grades = grade_values  # the scale's grades, ascending (curation.store.scale)


def default_grade(source: str, grades: list[int]) -> int:
    """``ticket``: the scale's top grade; ``click``: the lowest positive grade (a weak positive)."""
    if source not in SEED_SOURCES:
        raise ValueError(f"source must be one of {', '.join(SEED_SOURCES)}, got {source!r}")
    positives = [g for g in grades if g > 0] or [max(grades)]
    return max(positives) if source == "ticket" else min(positives)


@dataclass
class SeedReport:
    """What an import did. ``pooled_new`` pairs joined the pool; ``pooled_marked`` were already in it."""

    source: str
    lines: int = 0
    distinct: int = 0
    added: int = 0
    already: int = 0
    pooled_new: int = 0
    pooled_marked: int = 0
    unknown_queries: list[str] = field(default_factory=list)
    unknown_documents: list[str] = field(default_factory=list)  # "qid docid"
    repeats: str | None = None  # the summary line on repeated pairs (curation.formats.conflicts)


def _order_key(seed: int, qid: str, docid: str) -> bytes:
    return hashlib.sha256(f"{seed}\x1fseed-order\x1f{qid}\x1f{docid}".encode()).digest()


def import_seeds(
    session: Session,
    project: Project,
    path: str | os.PathLike,
    *,
    source: str,
    add_to_pool: bool = False,
    seed: int = 0,
    allow_empty: bool = False,
    on_conflict: str = "error",
) -> SeedReport:
    """Store the seed pairs of ``path`` for ``project`` (idempotent), optionally adding them to the pool.

    A pair repeated in the file with the same grade is stored once (counted in ``report.repeats``);
    with another grade it is an :class:`InputError` naming both lines unless ``on_conflict`` is
    ``first`` or ``last`` (:mod:`curation.formats.conflicts`). A pair
    already stored for this source is left as it is. With ``add_to_pool``, each seed whose query and
    document are in the project becomes a pool pair (or marks the existing pool pair) with
    ``seed_source``. A new pair is placed in its query's shuffled order: when none of the query's
    pairs has been assigned yet, the query's whole order is reshuffled (seeded) so the seed sits at
    a random place; otherwise new pairs follow the existing ones, shuffled among themselves.
    """
    if source not in SEED_SOURCES:
        raise ValueError(f"source must be one of {', '.join(SEED_SOURCES)}, got {source!r}")
    grades = project_grades(project)
    fallback = default_grade(source, grades)
    report = SeedReport(source=source)

    from curation.formats.conflicts import Dedup

    dedup = Dedup(path, policy=on_conflict, what="pair")
    pairs: dict[tuple[str, str], int] = {}
    for s in read_seeds(path, allow_empty=allow_empty):  # allow_empty: a file without a pair adds nothing
        report.lines += 1
        grade = fallback if s.grade is None else s.grade
        try:
            grade = check_grade(grade, grades, project.scale)
        except ValueError as exc:
            raise InputError(path, s.line, str(exc)) from None
        key = (s.qid, s.docid)
        if dedup.add(key, grade, s.line):
            pairs[key] = grade
    report.distinct = len(pairs)
    report.repeats = dedup.summary()

    stored = {
        (r.qid, r.docid)
        for r in session.exec(
            select(SeedJudgment).where(SeedJudgment.project_id == project.id, SeedJudgment.source == source)
        )
    }
    for (qid, docid), grade in sorted(pairs.items()):
        if (qid, docid) in stored:
            report.already += 1
            continue
        session.add(SeedJudgment(project_id=project.id, qid=qid, docid=docid, source=source, grade=grade))
        report.added += 1

    if add_to_pool:
        _pool_seeds(session, project, sorted(pairs), source=source, seed=seed, report=report)
    session.commit()
    return report


def _pool_seeds(session: Session, project: Project, keys, *, source: str, seed: int, report: SeedReport) -> None:
    queries = {q.qid: q for q in session.exec(select(Query).where(Query.project_id == project.id))}
    wanted_docids = sorted({d for _, d in keys})
    docs: dict[str, Document] = {}
    for start in range(0, len(wanted_docids), 500):
        chunk = wanted_docids[start:start + 500]
        for d in session.exec(
            select(Document).where(Document.project_id == project.id, Document.docid.in_(chunk))
        ):
            docs[d.docid] = d
    batch = session.exec(select(func.max(PoolPair.batch)).where(PoolPair.project_id == project.id)).one() or 0
    pooled = {
        (p.query_id, p.document_id): p for p in session.exec(select(PoolPair).where(PoolPair.project_id == project.id))
    }

    new_by_query: dict[int, list[PoolPair]] = {}
    unknown_q: set[str] = set()
    for qid, docid in keys:
        query = queries.get(qid)
        if query is None:
            unknown_q.add(qid)
            continue
        doc = docs.get(docid)
        if doc is None:
            report.unknown_documents.append(f"{qid} {docid}")
            continue
        pair = pooled.get((query.id, doc.id))
        if pair is not None:
            if pair.seed_source is None:
                pair.seed_source = source
                session.add(pair)
                report.pooled_marked += 1
            continue
        pair = PoolPair(
            project_id=project.id, query_id=query.id, document_id=doc.id,
            batch=batch, seed_source=source,
        )
        pooled[(query.id, doc.id)] = pair
        new_by_query.setdefault(query.id, []).append(pair)
        report.pooled_new += 1
    report.unknown_queries = sorted(unknown_q)

    for query_id, new_pairs in sorted(new_by_query.items()):
        qid = next(q.qid for q in queries.values() if q.id == query_id)
        existing = list(session.exec(select(PoolPair).where(PoolPair.query_id == query_id)))
        touched = bool(existing) and session.exec(
            select(func.count()).select_from(Assignment).join(PoolPair, Assignment.pair_id == PoolPair.id)
            .where(PoolPair.query_id == query_id)
        ).one() + session.exec(
            select(func.count()).select_from(Judgment).join(PoolPair, Judgment.pair_id == PoolPair.id)
            .where(PoolPair.query_id == query_id)
        ).one() > 0
        rng = random.Random(f"{seed}\x1f{project.name}\x1f{qid}")
        new_pairs.sort(key=lambda p: _order_key(seed, qid, str(p.document_id)))
        if touched:
            # Judges may have seen this query's order: keep it, and shuffle the newcomers after it.
            rng.shuffle(new_pairs)
            top = max(p.shuffle_order for p in existing)
            for offset, p in enumerate(new_pairs, 1):
                p.shuffle_order = top + offset
                session.add(p)
        else:
            everyone = sorted(existing, key=lambda p: (p.shuffle_order, p.document_id)) + new_pairs
            rng.shuffle(everyone)
            for position, p in enumerate(everyone):
                p.shuffle_order = position
                session.add(p)
