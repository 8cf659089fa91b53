"""A project that asks new judges to qualify: known-answer pairs written straight into the store
(the pairs a given judge has no row of), each accepted grade taken from its document id, so a test
knows the expected answer from what the page shows."""

from __future__ import annotations

import json

from sqlmodel import select

from curation.judge.qualification import set_qualification
from curation.store import projects
from curation.store.engine import session as new_session
from curation.store.models import Assignment, Document, KnownAnswer, PoolPair
from tests.support.projects import add_users


def expected_grade(docid: str) -> int:
    """The accepted grade of a known-answer pair of these tests: the document's last digit mod 3."""
    return int(docid[-1]) % 3


def add_known_pairs(engine, project_id: int, *, avoid_judge: str, n: int | None = None,
                    reason_every: int = 2) -> list[str]:
    """Make pool pairs that ``avoid_judge`` has no assignment of known-answer pairs (``n`` of them, or
    all), accepted grade :func:`expected_grade`, a reason on every ``reason_every``-th; returns their
    docids."""
    from curation.store.users import get_user

    with new_session(engine) as s:
        judge = get_user(s, avoid_judge)
        mine = set(s.exec(select(Assignment.pair_id).where(Assignment.project_id == project_id,
                                                           Assignment.judge_id == judge.id)).all())
        rows = s.exec(select(PoolPair.id, Document.docid).join(Document, Document.id == PoolPair.document_id)
                      .where(PoolPair.project_id == project_id).order_by(PoolPair.id)).all()
        chosen = [(pid, docid) for pid, docid in rows if pid not in mine][:n]
        for i, (pid, docid) in enumerate(chosen):
            s.add(KnownAnswer(project_id=project_id, pair_id=pid, accepted_json=json.dumps([expected_grade(docid)]),
                              reason=f"Reason for {docid}: <b>read the steps</b>" if i % reason_every == 0 else None,
                              source="lead"))
        s.commit()
    return [d for _, d in chosen]


def require_qualification(engine, project_name: str, *, pairs: int = 4, pass_mark: float = 0.75, retries: int = 1,
                          lead: str = "lena") -> None:
    add_users(engine, **{lead: "lead"})
    with new_session(engine) as s:
        from curation.store.users import get_user

        set_qualification(s, projects.get_project(s, project_name), lead=get_user(s, lead), pairs=pairs,
                          pass_mark=pass_mark, retries=retries)
