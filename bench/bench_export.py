"""Export benchmark: `golden export create` / `golden export verify` on a large project.

    python bench/bench_export.py --queries 18200 --docs 50              # 1,001,000 judgments, SQLite
    python bench/bench_export.py --queries 18200 --docs 50 --postgres   # the same on PostgreSQL
    python bench/bench_export.py --queries 100000 --docs 91 --overlap-pairs 2000 --no-peers   # 10M
    python bench/bench_export.py --queries 18200 --docs 50 --keep /tmp/export-1m.db   # build once, reuse after

Builds a project of QUERIES x DOCS pooled pairs (a SQLite file in a temporary folder, a fresh
PostgreSQL database with ``--postgres``, or ``--db`` pointing at an empty database): judge alice
labels every pair, bob the overlap (``--overlap``, a share of the pairs, or ``--overlap-pairs``, a
fixed number as a real overlap set is) disagreeing on 2 % of it, and the lead adjudicates those.
The rows are bulk-inserted (``--via-import``: through the code of ``golden judging import``, as
before, slow beyond 100,000 pairs). Then it runs, each as its own process (``golden export create``,
``golden export verify``), and reports wall time, CPU time (user + system of the child) and peak memory
(the child's max RSS):

* the first export of a version (final labels, agreement, every file, the state hash, the zip
  frozen in the store);
* exporting the same version again (the state recomputed and compared, the frozen bytes written);
* ``verify`` of the folder;
* the floor, in the same run: a process that only reads the judgments table (one statement) and
  writes one qrels line per judgment; the export's CPU time is given as a ratio to it;
* for scale, reading the exported qrels.txt with ir_measures and ranx (skipped by ``--no-peers``).

It checks that the re-export is byte-identical and that the peers read exactly the exported pairs.

``--keep`` builds the store once and exports from a copy of it on later runs (a SQLite file's path;
with ``--postgres`` a database name, copied with ``CREATE DATABASE ... TEMPLATE``), so that the
export can be measured again and again without building a million rows each time;
``--export-only`` measures the floor and the first export only.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def build(folder: Path, engine, n_queries: int, n_docs: int, overlap: float, seed: int = 0) -> int:
    """The store through golden's own loaders (project create, import-judgments, adjudicate)."""
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


def bulk_build(folder: Path, engine, n_queries: int, n_docs: int, overlap: float, overlap_pairs: int | None,
               seed: int = 0) -> int:
    """The same store as :func:`build`, its rows bulk-inserted (a one-query project made by
    ``create_project`` for the project row, its guidelines and users; then COPY on PostgreSQL,
    executemany on SQLite). Returns the number of judgments."""
    from datetime import UTC, datetime, timedelta

    from sqlalchemy import text
    from sqlmodel import select

    from curation.store import projects, users
    from curation.store.engine import session
    from curation.store.models import Adjudication, Document, Judgment, PoolPair, Query, User

    (folder / "q.jsonl").write_text(json.dumps({"qid": "seed-query", "text": "seed"}) + "\n")
    (folder / "p.jsonl").write_text(json.dumps({"qid": "seed-query", "docid": "seed-doc", "order": 0,
                                                "systems": {"bm25": 1}}) + "\n")
    (folder / "c.jsonl").write_text(json.dumps({"id": "seed-doc", "text": "seed"}) + "\n")
    (folder / "G.md").write_text("# Relevance\n")
    with session(engine) as s:
        projects.create_project(s, "bench", queries_path=folder / "q.jsonl", pool_path=folder / "p.jsonl",
                                corpus_paths=[folder / "c.jsonl"], guidelines_path=folder / "G.md")
        for name, role in (("alice", "judge"), ("bob", "judge"), ("lena", "lead")):
            users.add_user(s, name, role=role, password="bench-password-1")
        pid = projects.get_project(s, "bench").id
        uid = {n: i for i, n in s.exec(select(User.id, User.name)).all()}
    pg = engine.dialect.name == "postgresql"
    with engine.connect() as conn:
        qbase = conn.execute(text("SELECT max(id) FROM query")).scalar()
        dbase = conn.execute(text("SELECT max(id) FROM document")).scalar()
        pbase = conn.execute(text("SELECT max(id) FROM poolpair")).scalar()
    n_pairs = n_queries * n_docs
    rng = random.Random(seed)
    share = overlap if overlap_pairs is None else overlap_pairs / n_pairs
    t0 = datetime(2026, 11, 1, tzinfo=UTC)

    def queries():
        for i in range(n_queries):
            freq = ("head", "torso", "tail")[i % 3]
            yield (qbase + 1 + i, pid, f"q{i:06d}", f"query number {i}", json.dumps({"freq": freq}), f"freq={freq}",
                   1000 - i % 1000, 3, 1.0, 0.33, "active")

    def docs():
        for i in range(n_queries):
            for j in range(n_docs):
                yield (dbase + 1 + i * n_docs + j, pid, f"q{i:06d}-d{j:03d}", f"document {j} for query {i}", False)

    def pairs():
        for k in range(n_pairs):
            yield (pbase + 1 + k, pid, qbase + 1 + k // n_docs, dbase + 1 + k, k % n_docs, "{}", 0)

    adjudicate = []

    def judgments():
        for k in range(n_pairs):
            g = rng.choice((0, 0, 0, 1, 2))
            when = t0 + timedelta(milliseconds=k)
            yield (pid, pbase + 1 + k, uid["alice"], g, False, False, "import", when)
            if rng.random() < share:
                other = g
                if rng.random() < 0.02:
                    other = (g + 1) % 3
                    adjudicate.append(pbase + 1 + k)
                yield (pid, pbase + 1 + k, uid["bob"], other, False, False, "import", when)

    tables = [
        (Query.__table__, ("id", "project_id", "qid", "text", "stratum_json", "stratum_key", "traffic", "users",
                           "weight", "stratum_share", "status"), queries),
        (Document.__table__, ("id", "project_id", "docid", "text", "excluded"), docs),
        (PoolPair.__table__, ("id", "project_id", "query_id", "document_id", "shuffle_order", "systems_json", "batch"),
         pairs),
        (Judgment.__table__, ("project_id", "pair_id", "judge_id", "grade", "unsure", "skipped", "source",
                              "answered_at"), judgments),
    ]
    n_judgments = 0
    raw = engine.raw_connection()
    try:
        cur = raw.cursor()
        for table, cols, rows in tables:
            if pg:
                with cur.copy(f"COPY {table.name} ({', '.join(cols)}) FROM STDIN") as copy:
                    for row in rows():
                        copy.write_row(row)
                        n_judgments += table.name == "judgment"
            else:
                sql = f"INSERT INTO {table.name} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})"
                batch = []
                for row in rows():
                    batch.append(row)
                    if len(batch) == 100_000:
                        cur.executemany(sql, batch)
                        n_judgments += len(batch) if table.name == "judgment" else 0
                        batch = []
                cur.executemany(sql, batch)
                n_judgments += len(batch) if table.name == "judgment" else 0
        raw.commit()
        if pg:
            for table in ("query", "document", "poolpair", "judgment"):
                cur.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))")
            raw.commit()
    finally:
        raw.close()
    with session(engine) as s:
        s.execute(Adjudication.__table__.insert(), [
            {"project_id": pid, "pair_id": p, "lead_id": uid["lena"], "grade": 1, "reason": "bench",
             "created_at": t0} for p in adjudicate])
        s.commit()
    if pg:
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.exec_driver_sql("VACUUM ANALYZE")
    else:
        with engine.connect() as conn:
            conn.exec_driver_sql("ANALYZE")
    return n_judgments


def run_child(argv: list[str]) -> dict:
    """Run ``argv`` as a child process: its wall time, CPU time (user + system) and peak RSS (from
    ``os.wait4``, this child's own figures)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(argv[3:6])} ... failed ({proc.returncode}): {err.read()[-2000:].decode()}")
        return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss_mb": usage.ru_maxrss / 1024,
                "out": out.read().decode()}


def digests(folder: Path) -> dict[str, str]:
    import hashlib

    out = {}
    for p in sorted(folder.iterdir()):
        h = hashlib.sha256()
        with open(p, "rb") as fh:
            while block := fh.read(1 << 20):
                h.update(block)
        out[p.name] = h.hexdigest()
    return out


def golden(*args: str) -> list[str]:
    return [sys.executable, "-c", "from curation.cli import main; main()", *args]


FLOOR = """
import sys, time
from curation.store.engine import make_engine
eng = make_engine(sys.argv[1])
raw = eng.raw_connection()
cur = raw.cursor()
cur.execute("SELECT pair_id, judge_id, grade FROM judgment")
with open(sys.argv[2], "w") as out:
    while True:
        rows = cur.fetchmany(100_000)
        if not rows:
            break
        out.write("".join(f"{p} 0 {j} {g}\\n" for p, j, g in rows))
raw.close()
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--docs", type=int, default=50)
    ap.add_argument("--overlap", type=float, default=0.1, help="share of the pairs bob labels too")
    ap.add_argument("--overlap-pairs", type=int, default=None, help="a fixed number of pairs bob labels too")
    where = ap.add_mutually_exclusive_group()
    where.add_argument("--db", default=None, help="an EMPTY database URL (default: a temporary SQLite file)")
    where.add_argument("--postgres", action="store_true", help="a fresh database on 127.0.0.1:5432")
    ap.add_argument("--via-import", action="store_true", help="load labels with the code of golden judging import")
    ap.add_argument("--no-peers", action="store_true", help="skip reading the qrels with ir_measures and ranx")
    ap.add_argument("--keep", default=None, metavar="PATH_OR_NAME",
                    help="build the store once and keep it there (a SQLite file; a database name with --postgres); "
                         "later runs export from a copy of it")
    ap.add_argument("--export-only", action="store_true", help="measure the floor and the first export only")
    args = ap.parse_args()
    if args.keep and args.db:
        ap.error("--keep builds its own store: give it without --db")

    from curation.store.engine import make_engine, scratch_database
    from curation.store.migrate import upgrade

    drop = None
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        kept = _kept(args, tmp)
        if kept is not None:
            url, drop = kept
        elif args.postgres:
            url, drop = scratch_database(PG_SERVER, "golden_bench_")
        else:
            url = args.db or f"sqlite:///{tmp / 'bench.db'}"
        try:
            t0 = time.perf_counter()
            engine = make_engine(url)
            if kept is None:
                upgrade(engine)
                if args.via_import:
                    judgments = build(tmp, engine, args.queries, args.docs, args.overlap)
                    judgments += int(judgments * args.overlap)  # about: bob's share
                else:
                    judgments = bulk_build(tmp, engine, args.queries, args.docs, args.overlap, args.overlap_pairs)
                how = "built"
            else:
                with engine.connect() as conn:
                    judgments = conn.exec_driver_sql("SELECT count(*) FROM judgment").scalar()
                how = f"copied from {args.keep}"
            backend = engine.url.get_backend_name()
            engine.dispose()
            if kept is None and args.keep:
                _keep(args, url, tmp)
            print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} CPUs, "
                  f"load average {os.getloadavg()[0]:.1f}")
            print(f"store: {backend}, {args.queries:,} queries x {args.docs} = {args.queries * args.docs:,} pooled "
                  f"pairs, {judgments:,} judgments ({how} in {time.perf_counter() - t0:.1f} s)")
            run_report(tmp, url, judgments, args)
        finally:
            if drop:
                drop()


PG_SERVER = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"


def _pg(sql: str) -> list:
    import psycopg

    with psycopg.connect(host="127.0.0.1", port=5432, user="postgres", dbname="postgres", autocommit=True) as conn:
        cur = conn.execute(sql)
        return cur.fetchall() if cur.description else []


def _kept(args, tmp: Path):
    """(url, drop) of a copy of the kept store, or None when there is none yet."""
    import shutil
    import uuid

    if not args.keep:
        return None
    if args.postgres:
        if not _pg(f"SELECT 1 FROM pg_database WHERE datname = '{args.keep}'"):
            return None
        name = f"golden_bench_{uuid.uuid4().hex[:12]}"
        _pg(f'CREATE DATABASE "{name}" TEMPLATE "{args.keep}"')
        return (PG_SERVER.rsplit("/", 1)[0] + f"/{name}",
                lambda: _pg(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    if not Path(args.keep).exists():
        return None
    shutil.copyfile(args.keep, tmp / "bench.db")
    return f"sqlite:///{tmp / 'bench.db'}", None


def _keep(args, url: str, tmp: Path) -> None:
    """Keep the store just built (before anything is exported from it)."""
    import shutil

    if args.postgres:
        _pg(f'CREATE DATABASE "{args.keep}" TEMPLATE "{url.rsplit("/", 1)[1]}"')
    else:
        shutil.copyfile(tmp / "bench.db", args.keep)


def run_report(tmp: Path, url: str, judgments: int, args) -> None:
    def line(name: str, r: dict, extra: str = "") -> None:
        print(f"{name:<27} {r['wall']:7.2f} s wall {r['cpu']:7.2f} s CPU {r['rss_mb']:8.0f} MB peak  "
              f"{judgments / r['wall']:9.0f} judgments/s{extra}")

    load0 = os.getloadavg()[0]
    floor = run_child([sys.executable, "-c", FLOOR, url, str(tmp / "floor.txt")])
    first = run_child(golden("export", "create", "--db", url, "--project", "bench", "--version", "v1", "--out",
                             str(tmp / "out"), "--allow-incomplete", "--by", "bench"))
    folder = tmp / "out" / "v1"
    size = sum(p.stat().st_size for p in folder.iterdir())
    line("floor (read + write lines)", floor)
    line("export (new version)", first, f"  {first['cpu'] / floor['cpu']:.1f}x the floor's CPU; "
                                        f"{size / 1e6:.0f} MB written")
    # Compared by sha256, read in blocks: this process stays small, since a child's peak RSS as
    # the kernel reports it starts from what it was forked from.
    if args.export_only:
        print(f"load average {load0:.1f} before, {os.getloadavg()[0]:.1f} after, on {os.cpu_count()} cores")
        return
    before = digests(folder)
    again = run_child(golden("export", "create", "--db", url, "--project", "bench", "--version", "v1", "--out",
                             str(tmp / "again"), "--allow-incomplete", "--by", "bench"))
    same = before == digests(tmp / "again" / "v1")
    line("export again (frozen)", again, f"  byte-identical: {same}")
    ver = run_child(golden("export", "verify", str(folder)))
    line("verify", ver)
    print(f"load average {load0:.1f} before, {os.getloadavg()[0]:.1f} after, on {os.cpu_count()} cores")
    manifest = json.loads((folder / "manifest.json").read_text())
    pairs = manifest["counts"]["pairs"]
    ok = same
    if not args.no_peers:
        import ir_measures
        from ranx import Qrels

        qpath = str(folder / "qrels.txt")
        t0 = time.perf_counter()
        irm = list(ir_measures.read_trec_qrels(qpath))
        t_irm = time.perf_counter() - t0
        t0 = time.perf_counter()
        rq = Qrels.from_file(qpath, kind="trec").to_dict()
        t_ranx = time.perf_counter() - t0
        n_ranx = sum(len(d) for d in rq.values())
        print(f"read qrels.txt, ir_measures: {t_irm:5.2f} s ({len(irm)} pairs); ranx: {t_ranx:5.2f} s ({n_ranx} pairs)")
        ok = ok and len(irm) == n_ranx == pairs
    assert ok and pairs == args.queries * args.docs, (same, pairs)


if __name__ == "__main__":
    main()
