"""Stores and projects for the tests, built through the domain API the CLI uses (input files on disk
-> create_project -> add_user -> assign). Three builders, each for what a group of tests needs:

- :func:`assigned_project`: a judging project ready to judge (recipe queries, one document carrying
  markup, two runs whose names must never reach a judge, judges and a lead, pairs assigned), for the
  web app, browser, leak and coverage tests.
- :func:`pairs_project`: a project holding exactly the (qid, docid) pairs given, with the judges
  alice, bob, carol and the lead lena, for the label, agreement, import, export and seed tests.
- :func:`counts_project`: a project from :func:`write_inputs` (qid -> number of pooled documents,
  a market stratum, run provenance in pool.meta.json, documents left out or added), for the store,
  assignment and judging tests of the input files themselves.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from curation.store import projects, users
from curation.store.engine import session as new_session

PASSWORD = "correct-horse-battery"
# The users of a pairs project (name -> role).
STAFF = {"alice": "judge", "bob": "judge", "carol": "judge", "lena": "lead"}
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


@contextmanager
def sqlite_store(folder: Path):
    """A SQLite database in ``folder``, migrated to head: yields (its URL, an engine on it)."""
    from curation.store.engine import make_engine
    from curation.store.migrate import upgrade

    url = f"sqlite:///{folder / 'golden.db'}"
    engine = make_engine(url)
    try:
        upgrade(engine)
        yield url, engine
    finally:
        engine.dispose()


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def write_project_files(folder: Path, queries, pool, corpus) -> dict[str, Path]:
    """queries.jsonl, pool.jsonl, corpus.jsonl (rows as `golden sample queries`, `golden pool` and the corpus
    readers write them) and GUIDELINES.md in ``folder``; returns their paths by kind."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {kind: write_jsonl(folder / f"{kind}.jsonl", rows)
             for kind, rows in (("queries", queries), ("pool", pool), ("corpus", corpus))}
    paths["guidelines"] = folder / "GUIDELINES.md"
    paths["guidelines"].write_text(GUIDELINES, encoding="utf-8")
    return paths


def create_from_files(engine, name: str, paths: dict[str, Path], *, scale: str = "0-2"):
    """`golden project create` on ``paths`` (as :func:`write_project_files` returns them)."""
    with new_session(engine) as s:
        projects.create_project(s, name, queries_path=paths["queries"], pool_path=paths["pool"],
                                corpus_paths=[paths["corpus"]], guidelines_path=paths["guidelines"], scale=scale)


def add_users(engine, **roles: str) -> None:
    """add_users(engine, alice="judge", lena="lead"); users that exist already are left as they are."""
    with new_session(engine) as s:
        for name, role in roles.items():
            if users.get_user(s, name) is None:
                users.add_user(s, name, role=role, password=PASSWORD)


def read_files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


# ----------------------------------------------------------------------------- an assigned project


@dataclass
class Setup:
    project_id: int
    project_name: str
    judges: tuple[str, ...]
    lead: str


def write_recipe_files(folder: Path, *, n_queries: int, docs_per_query: int, xss_doc: bool = True) -> dict[str, Path]:
    """``n_queries`` queries "how to cook dish <q>" (qids q000, ...), each pooled with
    ``docs_per_query`` documents (d000_00, ...) ranked by RUN_NAMES[0] and, every other one, by
    RUN_NAMES[1]; document d000_00 is XSS_TEXT when ``xss_doc``."""
    queries, pool, corpus = [], [], []
    for q in range(n_queries):
        qid = f"q{q:03d}"
        queries.append({
            "qid": qid, "text": f"how to cook dish {q}", "stratum": {"freq": ("head", "tail")[q % 2]},
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
    return write_project_files(folder, queries, pool, corpus)


def assigned_project(
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
    """A project of :func:`write_recipe_files`, its judges and lead, and its pairs assigned
    (`golden judging assign` with ``overlap`` and ``hold``, seed 7)."""
    from curation.judge import assignment

    create_from_files(engine, name, write_recipe_files(folder, n_queries=n_queries, docs_per_query=docs_per_query),
                      scale=scale)
    add_users(engine, **{judge: "judge" for judge in judges}, **{lead: "lead"})
    with new_session(engine) as db:
        project = projects.get_project(db, name)
        assignment.assign(db, project, list(judges), overlap=overlap, seed=7, hold=hold)
        return Setup(project.id, name, judges, lead)


# -------------------------------------------------------------------------------- a pairs project


def write_pair_files(folder: Path, pairs, *, strata: dict[str, str] | None = None, texts: dict[str, str] | None = None,
                     runs: list[dict] | None = None, depth: int | None = None) -> dict[str, Path]:
    """Input files holding exactly ``pairs`` ((qid, docid), in pool order; runA ranks each query's
    documents in that order); documents repeated across queries are written once. Query i's text is
    ``texts[qid]`` or "query <qid>", its stratum ``strata[qid]`` or head/tail by turns; with ``runs``
    a pool.meta.json names the pooled runs and ``depth``."""
    texts = texts or {}
    pairs = list(dict.fromkeys((str(q), str(d)) for q, d in pairs))
    qids = list(dict.fromkeys(q for q, _ in pairs))
    queries = [{"qid": q, "text": texts.get(q, f"query {q}"),
                "stratum": {"freq": strata[q] if strata else ("head" if i % 2 == 0 else "tail")},
                "traffic": float(10 + i), "users": 1 + i, "stratum_share": 0.5, "weight": 1.5, "pii": []}
               for i, q in enumerate(qids)]
    order: dict[str, int] = {}
    pool = []
    for q, d in pairs:
        order[q] = order.get(q, -1) + 1
        pool.append({"qid": q, "docid": d, "order": order[q], "systems": {"runA": order[q] + 1}})
    corpus = [{"id": d, "title": f"Title of {d}", "text": f"Text of document {d}."}
              for d in dict.fromkeys(d for _, d in pairs)]
    paths = write_project_files(folder, queries, pool, corpus)
    if runs is not None:
        (folder / "pool.meta.json").write_text(json.dumps({"depth": depth, "runs": runs}), encoding="utf-8")
    return paths


def pairs_project(engine, folder: Path, pairs, *, name: str = "p", scale: str = "0-2", staff: dict[str, str] = STAFF,
                  **files):
    """A project of :func:`write_pair_files` (``files`` are its options) and the users ``staff``
    (name -> role); returns the project."""
    create_from_files(engine, name, write_pair_files(folder, pairs, **files), scale=scale)
    add_users(engine, **staff)
    with new_session(engine) as s:
        return projects.get_project(s, name)


# ------------------------------------------------------------------------------- a counts project


def write_inputs(folder: Path, *, queries: dict[str, int] | None = None, strata: dict[str, str] | None = None,
                 extra_docs: int = 0, skip_docs: set[str] = frozenset()) -> dict[str, Path]:
    """Write queries.jsonl, pool.jsonl (+ pool.meta.json), corpus.jsonl and GUIDELINES.md, returned by
    file name.

    ``queries``: qid -> number of pooled documents (docids ``{qid}-d{i}``); ``strata``: qid -> market.
    ``skip_docs``: docids left out of the corpus. ``extra_docs``: unpooled corpus documents."""
    queries = queries or {"q1": 4, "q2": 3, "q3": 5, "q4": 2}
    strata = strata or {qid: ("us" if i % 2 == 0 else "uk") for i, qid in enumerate(queries)}
    query_rows = [{"qid": qid, "text": f"query text {qid}", "stratum": {"market": strata[qid]},
                   "traffic": 10 * (i + 1), "users": i + 1, "stratum_share": 0.5,
                   "weight": 0.25, "pii": ["email"] if i == 0 else []} for i, qid in enumerate(queries)]
    pool = [{"qid": qid, "docid": f"{qid}-d{i}", "order": n - 1 - i, "systems": {"bm25": i + 1, "dense": n - i}}
            for qid, n in queries.items() for i in range(n)]
    corpus = [{"id": row["docid"], "title": f"Title {row['docid']}", "text": f"text of {row['docid']}"}
              for row in pool if row["docid"] not in skip_docs]
    corpus += [{"id": f"extra{i}", "text": "not pooled"} for i in range(extra_docs)]
    paths = write_project_files(folder, query_rows, pool, corpus)
    (folder / "pool.meta.json").write_text(json.dumps({"depth": 10, "runs": [
        {"name": "bm25", "sha256": "a" * 64, "depth": 10}, {"name": "dense", "sha256": "b" * 64, "depth": 10}]}))
    return {path.name: path for path in paths.values()}


def counts_project(session, folder: Path, name: str = "demo", **kwargs):
    """Write :func:`write_inputs` (its options among ``kwargs``) and create a project from them in
    ``session`` (the rest of ``kwargs`` go to create_project); returns (project, paths)."""
    opts = {k: kwargs.pop(k) for k in ("queries", "strata", "extra_docs", "skip_docs") if k in kwargs}
    paths = write_inputs(folder, **opts)
    projects.create_project(session, name, queries_path=paths["queries.jsonl"], pool_path=paths["pool.jsonl"],
                            corpus_paths=[paths["corpus.jsonl"]], guidelines_path=paths["GUIDELINES.md"], **kwargs)
    return projects.get_project(session, name), paths
