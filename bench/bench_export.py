"""Export benchmark: `golden export` / `golden verify` on a large project.

    /work/venv/bin/python bench/bench_export.py [--queries 2000] [--docs 50] [--overlap 0.1] [--db URL]

Builds a project of QUERIES x DOCS pooled pairs (SQLite file in a temporary folder, or ``--db``
pointing at an empty PostgreSQL database), loads labels through the same code as
``golden import-judgments`` (judge alice labels every pair, bob the overlap share, disagreeing on
2 % of it; the lead adjudicates those), then times:

* the first export of a version (building every file, the state hash, the zip frozen in the store);
* exporting the same version again (the state recomputed and compared, the frozen bytes written);
* ``verify`` of the folder;
* for scale, reading the exported qrels.txt with ir_measures and with ranx (the peer readers).

It checks that the re-export is byte-identical and that both peers read exactly the exported pairs.
Prints one line per figure. There is no peer tool that writes versioned qrels, so there is no ratio.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def build(folder: Path, engine, n_queries: int, n_docs: int, overlap: float, seed: int = 0) -> int:
    from sqlmodel import select

    from curation.agree.adjudication import adjudicate
    from curation.judge.importing import import_judgments
    from curation.store import projects, users
    from curation.store.engine import session
    from curation.store.models import Document, PoolPair, Query

    rng = random.Random(seed)
    with open(folder / "queries.jsonl", "w") as q, open(folder / "pool.jsonl", "w") as p, \
            open(folder / "corpus.jsonl", "w") as c:
        for i in range(n_queries):
            qid = f"q{i:05d}"
            q.write(json.dumps({"qid": qid, "text": f"query number {i}",
                                "stratum": {"freq": ("head", "torso", "tail")[i % 3]},
                                "traffic": 1000 - i % 1000, "users": 3, "stratum_share": 0.33, "weight": 1.0}) + "\n")
            for j in range(n_docs):
                p.write(json.dumps({"qid": qid, "docid": f"{qid}-d{j:03d}", "order": j,
                                    "systems": {"bm25": j + 1}}) + "\n")
                c.write(json.dumps({"id": f"{qid}-d{j:03d}", "text": f"document {j} for query {i}"}) + "\n")
    (folder / "G.md").write_text("# Relevance\n")
    alice, bob, disagree = [], [], []
    for i in range(n_queries):
        for j in range(n_docs):
            qid, docid = f"q{i:05d}", f"q{i:05d}-d{j:03d}"
            g = rng.choice((0, 0, 0, 1, 2))
            alice.append(f"{qid} 0 {docid} {g}\n")
            if rng.random() < overlap:
                if rng.random() < 0.02:
                    bob.append(f"{qid} 0 {docid} {(g + 1) % 3}\n")
                    disagree.append((qid, docid))
                else:
                    bob.append(f"{qid} 0 {docid} {g}\n")
    (folder / "alice.qrels").write_text("".join(alice))
    (folder / "bob.qrels").write_text("".join(bob))
    with session(engine) as s:
        projects.create_project(s, "bench", queries_path=folder / "queries.jsonl", pool_path=folder / "pool.jsonl",
                                corpus_paths=[folder / "corpus.jsonl"], guidelines_path=folder / "G.md")
        for name, role in (("alice", "judge"), ("bob", "judge"), ("lena", "lead")):
            users.add_user(s, name, role=role, password="bench-password-1")
        import_judgments(s, folder / "alice.qrels", judge="alice", project="bench")
        import_judgments(s, folder / "bob.qrels", judge="bob", project="bench")
        proj = projects.get_project(s, "bench")
        lena = users.get_user(s, "lena")
        ids = {(q, d): i for i, q, d in s.exec(
            select(PoolPair.id, Query.qid, Document.docid).join(Query, Query.id == PoolPair.query_id)
            .join(Document, Document.id == PoolPair.document_id))}
        for key in disagree:
            adjudicate(s, proj, pair_id=ids[key], lead=lena, grade=1, reason="bench")
    return len(alice)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--docs", type=int, default=50)
    ap.add_argument("--overlap", type=float, default=0.1)
    ap.add_argument("--db", default=None, help="an EMPTY database URL (default: a temporary SQLite file)")
    args = ap.parse_args()

    import ir_measures
    from ranx import Qrels

    from curation.export import versions as export
    from curation.export.verify import verify
    from curation.store.engine import make_engine, session
    from curation.store.migrate import upgrade
    from curation.store.projects import get_project

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        url = args.db or f"sqlite:///{tmp / 'bench.db'}"
        engine = make_engine(url)
        upgrade(engine)
        t0 = time.perf_counter()
        pairs = build(tmp, engine, args.queries, args.docs, args.overlap)
        print(f"store: {engine.url.get_backend_name()}, {args.queries} queries x {args.docs} = {pairs} pooled pairs "
              f"(built in {time.perf_counter() - t0:.1f} s)")

        with session(engine) as s:
            t0 = time.perf_counter()
            res = export.export_version(s, get_project(s, "bench"), "v1", out_dir=tmp / "out", created_by="bench")
            first = time.perf_counter() - t0
        size = sum(p.stat().st_size for p in (tmp / "out" / "v1").iterdir())
        before = {p.name: p.read_bytes() for p in (tmp / "out" / "v1").iterdir()}
        print(f"export (new version):      {first:7.2f} s  {pairs / first:9.0f} pairs/s  ({size / 1e6:.1f} MB written)")
        with session(engine) as s:
            t0 = time.perf_counter()
            export.export_version(s, get_project(s, "bench"), "v1", out_dir=tmp / "again", created_by="bench")
            again = time.perf_counter() - t0
        same = before == {p.name: p.read_bytes() for p in (tmp / "again" / "v1").iterdir()}
        print(f"export again (frozen):     {again:7.2f} s  {pairs / again:9.0f} pairs/s  byte-identical: {same}")
        t0 = time.perf_counter()
        rep = verify(tmp / "out" / "v1")
        ver = time.perf_counter() - t0
        print(f"verify:                    {ver:7.2f} s  {pairs / ver:9.0f} pairs/s  ok: {rep.ok}")

        qpath = str(tmp / "out" / "v1" / "qrels.txt")
        t0 = time.perf_counter()
        irm = list(ir_measures.read_trec_qrels(qpath))
        t_irm = time.perf_counter() - t0
        t0 = time.perf_counter()
        rq = Qrels.from_file(qpath, kind="trec").to_dict()
        t_ranx = time.perf_counter() - t0
        n_ranx = sum(len(d) for d in rq.values())
        print(f"read qrels.txt, ir_measures: {t_irm:5.2f} s ({len(irm)} pairs); ranx: {t_ranx:5.2f} s ({n_ranx} pairs)")
        assert same and rep.ok and len(irm) == n_ranx == res.manifest["counts"]["pairs"] == pairs
        engine.dispose()


if __name__ == "__main__":
    main()
