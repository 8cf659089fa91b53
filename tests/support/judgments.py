"""Projects for the agreement, labels, import and lead-app tests, built through the same domain API
as the CLI (files on disk -> create_project -> add_user)."""

from __future__ import annotations

import json
from pathlib import Path

from curation.store import projects
from curation.store import users
from curation.store.engine import session as new_session
from tests.support.judging_setup import PASSWORD


def write_pair_files(folder: Path, pairs, query) -> dict[str, Path]:
    """queries.jsonl (``query(i, qid)`` is the row of the i-th query), pool.jsonl (runA ranking each
    query's documents in the order given), corpus.jsonl and GUIDELINES.md holding exactly ``pairs``
    (an iterable of (qid, docid)); documents repeated across queries are written once."""
    folder.mkdir(parents=True, exist_ok=True)
    pairs = list(dict.fromkeys((str(q), str(d)) for q, d in pairs))
    qids = list(dict.fromkeys(q for q, _ in pairs))
    docids = list(dict.fromkeys(d for _, d in pairs))
    queries = [query(i, q) for i, q in enumerate(qids)]
    order: dict[str, int] = {}
    pool = []
    for q, d in pairs:
        order[q] = order.get(q, -1) + 1
        pool.append({"qid": q, "docid": d, "order": order[q], "systems": {"runA": order[q] + 1}})
    corpus = [{"id": d, "title": f"Title of {d}", "text": f"Text of document {d}."} for d in docids]
    paths = {k: folder / f"{k}.jsonl" for k in ("queries", "pool", "corpus")}
    for key, rows in (("queries", queries), ("pool", pool), ("corpus", corpus)):
        paths[key].write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    paths["guidelines"] = folder / "GUIDELINES.md"
    paths["guidelines"].write_text("# Relevance\n\nA document is relevant when it answers the query.\n")
    return paths


def write_project_files(folder: Path, pairs, *, strata=("head", "tail")) -> dict[str, Path]:
    """write_pair_files with queries "query <qid> <b>bold</b>" whose strata cycle through ``strata``."""
    return write_pair_files(folder, pairs, lambda i, q: {
        "qid": q, "text": f"query {q} <b>bold</b>", "stratum": {"freq": strata[i % len(strata)]}, "traffic": 1.0,
        "users": 1, "stratum_share": 0.5, "weight": 1.0, "pii": []})


def make_project(engine, folder: Path, pairs, *, name: str = "p", scale: str = "0-2") -> int:
    paths = write_project_files(folder, pairs)
    with new_session(engine) as s:
        report = projects.create_project(
            s, name, queries_path=paths["queries"], pool_path=paths["pool"], corpus_paths=[paths["corpus"]],
            guidelines_path=paths["guidelines"], scale=scale,
        )
        return report.project_id


def add_users(engine, **roles: str) -> None:
    """add_users(engine, alice="judge", lena="lead")"""
    with new_session(engine) as s:
        for name, role in roles.items():
            if users.get_user(s, name) is None:
                users.add_user(s, name, role=role, password=PASSWORD)


def write_qrels(path: Path, rows) -> Path:
    """rows of (qid, group, docid, grade)."""
    path.write_text("".join(f"{q} {g} {d} {r}\n" for q, g, d, r in rows))
    return path


def judge_queue(engine, project_id: int, judge: str, grade_of, *, start, seconds: float = 5.0,
                limit: int | None = None) -> int:
    """``judge`` labels their queue through the judging API (next_task -> submit), ``grade_of(docid)``
    giving each grade, one pair every ``seconds`` from ``start``; returns how many were labelled."""
    from datetime import timedelta

    from curation.judge import judging

    done = 0
    with new_session(engine) as s:
        user = users.get_user(s, judge)
        t = start
        while limit is None or done < limit:
            task = judging.next_task(s, project_id, user, now=t)
            if task is None:
                break
            t = t + timedelta(seconds=seconds)
            judging.submit(s, user, task.token, grade=grade_of(task.docid), now=t)
            done += 1
    return done
