"""Choosing known-answer pairs from what the project already knows: the pairs a lead adjudicated
(their grade and reason: the reason becomes the teaching text) and the seed judgments (tickets,
clicks). The set itself, and mixing it into queues, is the judge stage's
(:mod:`curation.judge.gold`); this stage reads the adjudications and seed judgments it owns."""

from __future__ import annotations

import random

from sqlmodel import Session, select

from curation.agree.labels import latest_adjudications, latest_seed_grades
from curation.judge.gold import KnownEntry, add_known
from curation.store.lookups import pair_ids, pair_keys
from curation.store.models import Adjudication, KnownAnswer, Project, User


def _pick(items: list, limit: int | None, seed: int) -> list:
    """``limit`` items drawn with ``seed`` (all when no limit), in their given order."""
    if limit is None or limit >= len(items):
        return items
    chosen = set(random.Random(f"known-pairs:{seed}").sample(range(len(items)), limit))
    return [x for i, x in enumerate(items) if i in chosen]


def _already(session: Session, pid: int) -> set[int]:
    return set(session.exec(select(KnownAnswer.pair_id).where(KnownAnswer.project_id == pid)).all())


def from_adjudicated(session: Session, project: Project, *, limit: int | None = None, seed: int = 0
                     ) -> list[KnownEntry]:
    """Known-answer entries from the project's adjudicated pairs not in the set yet: each pair's
    latest adjudicated grade, its reason as the teaching text; ``limit`` of them drawn with ``seed``."""
    latest = latest_adjudications(session, project.id)
    ids = sorted(set(latest) - _already(session, project.id))
    keys = pair_keys(session, ids)
    adj_ids = {}
    for aid, pair_id in session.exec(select(Adjudication.id, Adjudication.pair_id).where(
            Adjudication.project_id == project.id).order_by(Adjudication.created_at, Adjudication.id)).all():
        adj_ids[pair_id] = aid  # the latest wins
    entries = [KnownEntry(*keys[p], (latest[p][0],), latest[p][1], adj_ids.get(p)) for p in ids]
    return _pick(sorted(entries, key=lambda e: (e.qid, e.docid)), limit, seed)


def from_seeds(session: Session, project: Project, *, limit: int | None = None, seed: int = 0) -> list[KnownEntry]:
    """Known-answer entries from the project's seed judgments (each pair's latest seed grade) whose
    pair is in the pool and not in the set yet."""
    already = {tuple(k) for k in pair_keys(session, sorted(_already(session, project.id))).values()}
    in_pool = pair_ids(session, project)
    grades = latest_seed_grades(session, project.id)
    entries = [KnownEntry(q, d, (g,), None) for (q, d), g in sorted(grades.items())
               if (q, d) not in already and (q, d) in in_pool]
    return _pick(entries, limit, seed)


def add_from(session: Session, project: Project, source: str, *, lead: User | None = None, limit: int | None = None,
             seed: int = 0) -> int:
    """Add the pairs of ``source`` ("adjudicated" or "seed") to the known-answer set; returns how many."""
    if source == "adjudicated":
        entries, kind = from_adjudicated(session, project, limit=limit, seed=seed), "adjudication"
    elif source == "seed":
        entries, kind = from_seeds(session, project, limit=limit, seed=seed), "seed"
    else:
        raise ValueError(f"--from {source!r}: give adjudicated or seed")
    return add_known(session, project, entries, source=kind, lead=lead, seed=seed) if entries else 0


def mark_adjudicated(session: Session, project: Project, pair_id: int, *, lead: User) -> int:
    """Make one adjudicated pair a known-answer pair (its latest adjudicated grade, its reason as the
    teaching text): the adjudication page's "use as a known-answer pair". ValueError when the pair
    has no adjudication."""
    latest = latest_adjudications(session, project.id)
    if pair_id not in latest:
        raise ValueError(f"pair_id: {pair_id} has no adjudicated label in project {project.name}")
    aid = session.exec(select(Adjudication.id).where(Adjudication.pair_id == pair_id)
                       .order_by(Adjudication.created_at.desc(), Adjudication.id.desc()).limit(1)).first()
    qid, docid = pair_keys(session, [pair_id])[pair_id]
    grade, reason = latest[pair_id][:2]
    return add_known(session, project, [KnownEntry(qid, docid, (grade,), reason, aid)], source="adjudication",
                     lead=lead)
