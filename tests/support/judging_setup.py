"""A small judging project for the web-app and browser tests, built through the domain API the CLI
uses (project files on disk -> create_project -> add_user -> assign)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from curation.judge import assignment
from curation.store import projects
from curation.store import users
from curation.store.engine import session as new_session

PASSWORD = "correct-horse-battery"
# Provenance that must never reach a judge: run names (and the ranks stored with them).
RUN_NAMES = ("runSecretBM25", "runSecretDense")
XSS_TEXT = (
    'Cooking tips. <script>window.__xss = 1; document.title = "pwned"</script> '
    '<img src=x onerror="window.__xss = 2"> Boil the water first.'
)
GUIDELINES = (
    "# How to judge\n\n"
    "Judge the **document** against the query as a searcher would.\n\n"
    "<script>window.__xss = 3</script>\n\n"
    "- Ignore the page's layout\n- [a bad link](javascript:alert(1))\n"
)


@dataclass
class Setup:
    project_id: int
    project_name: str
    judges: tuple[str, ...]
    lead: str


def write_files(folder: Path, *, n_queries: int, docs_per_query: int, xss_doc: bool = True) -> dict[str, Path]:
    """queries.jsonl, pool.jsonl, corpus.jsonl and GUIDELINES.md in the formats of `golden sample`,
    `golden pool` and the corpus readers."""
    folder.mkdir(parents=True, exist_ok=True)
    strata = ("head", "tail")
    queries, pool, corpus = [], [], []
    for q in range(n_queries):
        qid = f"q{q:03d}"
        queries.append({
            "qid": qid, "text": f"how to cook dish {q}", "stratum": {"freq": strata[q % 2]},
            "traffic": 10.0 + q, "users": 3, "stratum_share": 0.5, "weight": 1.0, "pii": [],
        })
        for d in range(docs_per_query):
            docid = f"d{q:03d}_{d:02d}"
            text = XSS_TEXT if (xss_doc and q == 0 and d == 0) else f"Document {docid} about dish {q}, step {d}."
            corpus.append({"id": docid, "title": f"Recipe {docid}", "text": text})
            systems = {RUN_NAMES[0]: d + 1}
            if d % 2 == 0:
                systems[RUN_NAMES[1]] = docs_per_query - d
            pool.append({"qid": qid, "docid": docid, "order": d, "systems": systems})
    paths = {
        "queries": folder / "queries.jsonl",
        "pool": folder / "pool.jsonl",
        "corpus": folder / "corpus.jsonl",
        "guidelines": folder / "GUIDELINES.md",
    }
    for key, rows in (("queries", queries), ("pool", pool), ("corpus", corpus)):
        paths[key].write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    paths["guidelines"].write_text(GUIDELINES, encoding="utf-8")
    return paths


def build_project(
    engine,
    folder: Path,
    *,
    name: str = "recipes",
    n_queries: int = 4,
    docs_per_query: int = 4,
    judges: tuple[str, ...] = ("alice", "bob"),
    lead: str = "lena",
    overlap: int = 3,
    hold: bool = False,
    scale: str = "0-2",
) -> Setup:
    paths = write_files(folder, n_queries=n_queries, docs_per_query=docs_per_query)
    with new_session(engine) as db:
        projects.create_project(
            db, name, queries_path=paths["queries"], pool_path=paths["pool"], corpus_paths=[paths["corpus"]],
            guidelines_path=paths["guidelines"], scale=scale,
        )
        for judge in judges:
            if users.get_user(db, judge) is None:
                users.add_user(db, judge, role="judge", password=PASSWORD)
        if users.get_user(db, lead) is None:
            users.add_user(db, lead, role="lead", password=PASSWORD)
        project = projects.get_project(db, name)
        assignment.assign(db, project, list(judges), overlap=overlap, seed=7, hold=hold)
        return Setup(project.id, name, judges, lead)
