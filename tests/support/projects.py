"""Small real input files for the store tests: a query set, a pool and a corpus, as the earlier
steps (`golden sample`, `golden pool`) write them."""

from __future__ import annotations

import json
from pathlib import Path

GUIDELINES = "# Relevance\n\nA document is relevant when it helps answer the query.\n"


def write_inputs(folder: Path, *, queries: dict[str, int] | None = None, strata: dict[str, str] | None = None,
                 extra_docs: int = 0, skip_docs: set[str] = frozenset()) -> dict[str, Path]:
    """Write queries.jsonl, pool.jsonl (+ pool.meta.json), corpus.jsonl and GUIDELINES.md.

    ``queries``: qid -> number of pooled documents (docids ``{qid}-d{i}``); ``strata``: qid -> market.
    ``skip_docs``: docids left out of the corpus. ``extra_docs``: unpooled corpus documents."""
    queries = queries or {"q1": 4, "q2": 3, "q3": 5, "q4": 2}
    strata = strata or {qid: ("us" if i % 2 == 0 else "uk") for i, qid in enumerate(queries)}
    folder.mkdir(parents=True, exist_ok=True)
    paths = {name: folder / name for name in ("queries.jsonl", "pool.jsonl", "corpus.jsonl", "GUIDELINES.md")}
    with open(paths["queries.jsonl"], "w", encoding="utf-8") as fh:
        for i, qid in enumerate(queries):
            fh.write(json.dumps({"qid": qid, "text": f"query text {qid}", "stratum": {"market": strata[qid]},
                                 "traffic": 10 * (i + 1), "users": i + 1, "stratum_share": 0.5,
                                 "weight": 0.25, "pii": ["email"] if i == 0 else []}) + "\n")
    with open(paths["pool.jsonl"], "w", encoding="utf-8") as fh:
        for qid, n in queries.items():
            for i in range(n):
                fh.write(json.dumps({"qid": qid, "docid": f"{qid}-d{i}", "order": n - 1 - i,
                                     "systems": {"bm25": i + 1, "dense": n - i}}) + "\n")
    (folder / "pool.meta.json").write_text(json.dumps({"depth": 10, "runs": [
        {"name": "bm25", "sha256": "a" * 64, "depth": 10}, {"name": "dense", "sha256": "b" * 64, "depth": 10}]}))
    with open(paths["corpus.jsonl"], "w", encoding="utf-8") as fh:
        for qid, n in queries.items():
            for i in range(n):
                docid = f"{qid}-d{i}"
                if docid not in skip_docs:
                    fh.write(json.dumps({"id": docid, "title": f"Title {docid}", "text": f"text of {docid}"}) + "\n")
        for i in range(extra_docs):
            fh.write(json.dumps({"id": f"extra{i}", "text": "not pooled"}) + "\n")
    paths["GUIDELINES.md"].write_text(GUIDELINES, encoding="utf-8")
    return paths


def create(session, folder: Path, name: str = "demo", **kwargs):
    """Write the inputs and create a project from them; returns (project, paths)."""
    from curation.store.projects import create_project, get_project

    opts = {k: kwargs.pop(k) for k in ("queries", "strata", "extra_docs", "skip_docs") if k in kwargs}
    paths = write_inputs(folder, **opts)
    create_project(session, name, queries_path=paths["queries.jsonl"], pool_path=paths["pool.jsonl"],
                   corpus_paths=[paths["corpus.jsonl"]], guidelines_path=paths["GUIDELINES.md"], **kwargs)
    return get_project(session, name), paths


def sqlite_store(folder: Path):
    """An engine on a migrated SQLite store in ``folder``, for tests of logic that does not depend on
    the database (input validation): they need not pay for a PostgreSQL database."""
    from curation.store.migrate import upgrade
    from curation.store.engine import make_engine

    eng = make_engine(f"sqlite:///{folder / 'golden.db'}")
    upgrade(eng)
    return eng
