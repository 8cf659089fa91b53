"""A project with known-answer pairs mixed into a judge's queue, for the tests of known-answer pairs
(store, app and browser)."""

from __future__ import annotations

from pathlib import Path

from sqlmodel import select

from curation.judge import gold
from curation.judge.assignment import assign
from curation.store import projects, users
from curation.store.engine import session as new_session
from curation.store.lookups import pair_keys
from curation.store.models import Assignment
from tests.support.projects import add_users, create_from_files, write_recipe_files


def known_answer_project(engine, folder: Path, *, rate: int = 3, known: int = 4, hold: bool = True,
                         name: str = "recipes", n_queries: int = 8) -> tuple[int, list[int]]:
    """``name``: ``n_queries`` (8) queries of 4 documents, judges alice and carol (no overlap set, main work not
    held), lead lena. alice is assigned the pool; ``known`` of her pairs become known-answer pairs
    (accepted grade 1 or 2 for the even ones, 2 for the odd ones), and her other pairs of even id go
    to carol, into whose queue the known-answer pairs are then mixed at one in ``rate``. Returns the
    project's id and the known-answer pairs' ids."""
    create_from_files(engine, name, write_recipe_files(folder, n_queries=n_queries, docs_per_query=4))
    add_users(engine, alice="judge", carol="judge", lena="lead")
    with new_session(engine) as s:
        proj = projects.get_project(s, name)
        lena, alice, carol = (users.get_user(s, n) for n in ("lena", "alice", "carol"))
        assign(s, proj, [alice], overlap=0, seed=7)
        rows = s.exec(select(Assignment).where(Assignment.judge_id == alice.id, Assignment.project_id == proj.id)
                      .order_by(Assignment.pair_id)).all()
        chosen = [a.pair_id for a in rows[:known]]
        for a in rows[known:]:
            if a.pair_id % 2 == 0:
                a.judge_id = carol.id
                s.add(a)
        s.commit()
        keys = pair_keys(s, chosen)
        entries = [gold.KnownEntry(*keys[p], (2,) if i % 2 else (1, 2), f"reason {i}") for i, p in enumerate(chosen)]
        gold.add_known(s, proj, entries, source="lead", lead=lena)
        gold.set_known_settings(s, proj, lead=lena, rate=rate, bar=0.6, hold=hold)
        return proj.id, chosen
