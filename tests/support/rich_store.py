"""A project whose judgments exercise every rule of the final labels and the export: several judges,
a lead and an admin, skips, unsure labels, changed minds, equal answer times, guidelines versions,
adjudications (some superseded), seed judgments on pooled and unpooled pairs and on unknown queries,
a dropped query and excluded documents. Rows are written straight into the tables, from a seed."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlmodel import select

from curation.store.engine import session as new_session
from curation.store.models import (
    Adjudication,
    Assignment,
    Document,
    GuidelinesVersion,
    Judgment,
    PoolPair,
    Query,
    SeedJudgment,
    User,
)
from tests.support.projects import pairs_project

STAFF = {"alice": "judge", "bob": "judge", "carol": "judge", "emile": "judge", "lena": "lead", "root": "admin"}


def rich_project(engine, folder: Path, *, n_queries: int = 12, docs: int = 9, seed: int = 0) -> None:
    """Project ``p`` with ``n_queries`` x ``docs`` pairs (qids chosen so string order is not numeric
    order, one with a quote and a non-ASCII letter) and a random history of labels."""
    rng = random.Random(seed)
    qids = [f"{i:0{1 + i % 3}d}" for i in range(n_queries - 1)] + ['q"é']
    pairs = [(q, f"d{rng.randrange(10 ** (1 + j % 3))}-{j}") for q in qids for j in range(docs)]
    pairs_project(engine, folder, pairs, staff=STAFF)
    t0 = datetime(2026, 11, 1, tzinfo=UTC)
    with new_session(engine) as s:
        pid = s.exec(select(Query.project_id)).first()
        users = {u.name: u.id for u in s.exec(select(User))}
        gv1 = s.exec(select(GuidelinesVersion)).first()
        gv2 = GuidelinesVersion(project_id=pid, version=2, text="v2", sha256="0" * 64)
        s.add(gv2)
        s.flush()
        gvs = [None, gv1.id, gv2.id]
        pool = list(s.exec(select(PoolPair.id, Query.qid, Document.docid)
                           .join(Query, Query.id == PoolPair.query_id)
                           .join(Document, Document.id == PoolPair.document_id)))
        rows = []
        for pair_id, _q, _d in pool:
            kind = rng.random()
            if kind < 0.1:
                continue  # unjudged
            judges = rng.sample(sorted(STAFF), rng.choice((1, 1, 1, 2, 2, 3, 4)))
            for name in judges:
                for _ in range(rng.choice((1, 1, 1, 2, 3))):
                    skipped = rng.random() < 0.1
                    rows.append(Judgment(
                        project_id=pid, pair_id=pair_id, judge_id=users[name],
                        grade=None if skipped else rng.choice((0, 0, 1, 2)), skipped=skipped,
                        unsure=rng.random() < 0.15, guidelines_version_id=rng.choice(gvs),
                        answered_at=t0 + timedelta(seconds=rng.randrange(50)),  # many equal times
                    ))
            if rng.random() < 0.15:
                for _ in range(rng.choice((1, 2))):
                    s.add(Adjudication(project_id=pid, pair_id=pair_id, lead_id=users[rng.choice(("lena", "root"))],
                                       grade=rng.choice((0, 1, 2)), reason=rng.choice(("per §3", 'a "quoted" reason')),
                                       guidelines_version_id=rng.choice(gvs),
                                       created_at=t0 + timedelta(seconds=rng.randrange(5))))
            if rng.random() < 0.1:
                s.add(Assignment(project_id=pid, pair_id=pair_id, judge_id=users["alice"], kind="overlap"))
        rng.shuffle(rows)  # ids not in time order
        s.add_all(rows)
        seeds = [(q, d) for _, q, d in rng.sample(pool, len(pool) // 6)]
        seeds += [(rng.choice(qids), f"unpooled-{i}") for i in range(6)] + [("no-such-query", "d1")]
        for q, d in seeds:
            for _ in range(rng.choice((1, 2))):
                s.add(SeedJudgment(project_id=pid, qid=q, docid=d, source=rng.choice(("ticket", "click")),
                                   grade=rng.choice((0, 1, 2)), imported_at=t0 + timedelta(seconds=rng.randrange(3))))
        q = s.exec(select(Query).where(Query.qid == qids[1])).one()
        q.status = "dropped"
        s.add(q)
        for d in rng.sample([d for _, _, d in pool], 4):
            doc = s.exec(select(Document).where(Document.docid == d)).first()
            doc.excluded = True
            s.add(doc)
        s.commit()


def judged_project(engine, folder: Path, *, n_queries: int, docs: int, seed: int = 0) -> None:
    """Project ``p`` with ``n_queries`` x ``docs`` pairs, every one labelled by alice, the first two
    documents of each query by bob as well (a fixed overlap set): the judgments grow with ``docs``,
    the agreement's pairs do not."""
    rng = random.Random(seed)
    pairs_project(engine, folder, [(f"q{q:04d}", f"q{q:04d}-d{d:04d}") for q in range(n_queries) for d in range(docs)],
                  staff=STAFF)
    t0 = datetime(2026, 11, 1, tzinfo=UTC)
    with new_session(engine) as s:
        users = {u.name: u.id for u in s.exec(select(User))}
        pid = s.exec(select(Query.project_id)).first()
        pool = s.exec(select(PoolPair.id, Document.docid).join(Document, Document.id == PoolPair.document_id)).all()
        rows = []
        for n, (pair_id, docid) in enumerate(pool):
            g = rng.choice((0, 0, 1, 2))
            rows.append({"project_id": pid, "pair_id": pair_id, "judge_id": users["alice"], "grade": g,
                         "answered_at": t0 + timedelta(seconds=n)})
            if int(docid.rsplit("d", 1)[1]) < 2:
                rows.append({"project_id": pid, "pair_id": pair_id, "judge_id": users["bob"],
                             "grade": g if rng.random() < 0.8 else (g + 1) % 3,
                             "answered_at": t0 + timedelta(seconds=n)})
        s.execute(Judgment.__table__.insert(), rows)
        s.commit()
