"""Projects for the export, split and seed tests, built through the same domain API as the CLI:
files on disk -> create_project -> add_user -> import_judgments (qrels files) / adjudicate."""

from __future__ import annotations

import json
from pathlib import Path

from curation.store import projects
from curation.store import users
from curation.judge.importing import import_judgments
from curation.store.engine import session as new_session

from tests.support.judgments import write_pair_files
from tests.support.judging_setup import PASSWORD


def write_files(folder: Path, pairs, *, strata: dict[str, str] | None = None, texts: dict[str, str] | None = None,
                runs: list[dict] | None = None, depth: int | None = None) -> dict[str, Path]:
    """queries.jsonl, pool.jsonl (+ pool.meta.json when ``runs``), corpus.jsonl and GUIDELINES.md
    holding exactly ``pairs`` ((qid, docid), in pool order)."""
    texts = texts or {}

    def query(i: int, q: str) -> dict:
        freq = strata[q] if strata else ("head" if i % 2 == 0 else "tail")
        return {"qid": q, "text": texts.get(q, f"query {q}"), "stratum": {"freq": freq}, "traffic": float(10 + i),
                "users": 1 + i, "stratum_share": 0.5, "weight": 1.5, "pii": []}

    paths = write_pair_files(folder, pairs, query)
    if runs is not None:
        (folder / "pool.meta.json").write_text(json.dumps({"depth": depth, "runs": runs}), encoding="utf-8")
    return paths


def make_project(engine, folder: Path, pairs, *, name: str = "p", scale: str = "0-2", **kwargs):
    """Create the project and its users (judges alice, bob, carol; lead lena); returns the project."""
    paths = write_files(folder, pairs, **kwargs)
    with new_session(engine) as s:
        projects.create_project(
            s, name, queries_path=paths["queries"], pool_path=paths["pool"], corpus_paths=[paths["corpus"]],
            guidelines_path=paths["guidelines"], scale=scale,
        )
        for user, role in (("alice", "judge"), ("bob", "judge"), ("carol", "judge"), ("lena", "lead")):
            if users.get_user(s, user) is None:
                users.add_user(s, user, role=role, password=PASSWORD)
        return projects.get_project(s, name)


_counter = [0]


def judge(engine, folder: Path, who: str, labels: dict[tuple[str, str], int], *, project: str = "p") -> None:
    """``who`` labels ``labels`` ((qid, docid) -> grade), through `golden import-judgments`'s code."""
    _counter[0] += 1
    path = folder / f"{who}-{_counter[0]}.qrels"
    path.write_text("".join(f"{q} 0 {d} {g}\n" for (q, d), g in labels.items()))
    with new_session(engine) as s:
        report = import_judgments(s, path, judge=who, project=project)
    assert report.imported == len(labels), report.summary()


def adjudicate(engine, qid: str, docid: str, grade: int, *, project: str = "p", reason: str = "per guidelines") -> None:
    from sqlmodel import select

    from curation.agree.adjudication import adjudicate as record
    from curation.store.models import Document, PoolPair, Query

    with new_session(engine) as s:
        proj = projects.get_project(s, project)
        pair = s.exec(
            select(PoolPair).join(Query, Query.id == PoolPair.query_id).join(Document, Document.id == PoolPair.document_id)
            .where(PoolPair.project_id == proj.id, Query.qid == qid, Document.docid == docid)
        ).one()
        record(s, proj, pair_id=pair.id, lead=users.get_user(s, "lena"), grade=grade, reason=reason)


def read_files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}
