"""The lead's progress report on a large store: :func:`curation.judge.progress.build_progress`
(behind ``golden judging progress`` and ``/lead/<id>/progress``) against its floor, fetching the same rows
from the same database with plain SQL and doing nothing with them.

The store is built with bulk inserts (it is the report that is timed, not the judging): ``--judges``
judges, ``--queries`` x ``--docs`` pooled pairs, an overlap set of ``--overlap`` pairs every judge
labels, the rest split by query; ``--done`` of the assignment rows answered over the last three
days, at rates that differ between judges (Zipf-like: the busiest judge answers most), with
log-normal seconds per pair, 5% skips and 8% unsure labels. Prints the load average, wall and CPU
time (best of ``--repeat``) and the ratio to the floor measured in the same run, and the page's
time through Flask's test client.

    python bench/bench_progress.py
    python bench/bench_progress.py --queries 4000 --docs 50 --judges 12 --repeat 5
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def build_store(url: str, *, queries: int, docs: int, judges: int, overlap: int, done: float, seed: int = 0):
    """A project with its users, pool, assignments and judgments, inserted in bulk."""
    from sqlalchemy import insert
    from sqlmodel import select

    from curation.store.engine import make_engine, session
    from curation.store.migrate import upgrade
    from curation.store.models import (
        MAIN_BASE,
        Assignment,
        Document,
        Judgment,
        PoolPair,
        Project,
        Query,
        User,
        utcnow,
    )

    rng = random.Random(seed)
    engine = make_engine(url)
    upgrade(engine)
    now = utcnow()
    with session(engine) as s:
        project = Project(name="big", grades_json='[{"grade": 0, "name": "Not"}, {"grade": 1, "name": "Partly"}, '
                          '{"grade": 2, "name": "Highly"}]', hold_main=False)
        s.add(project)
        s.flush()
        pid = project.id
        s.execute(insert(User), [dict(name=f"judge{j:02d}", role="judge", password_hash="x", active=True,
                                      created_at=now) for j in range(judges)])
        s.flush()
        jids = list(s.exec(select(User.id).order_by(User.id)).all())
        s.execute(insert(Query), [dict(project_id=pid, qid=f"q{q:05d}", text=f"query {q}", status="active",
                                       stratum_key="all") for q in range(queries)])
        s.execute(insert(Document), [dict(project_id=pid, docid=f"d{q:05d}_{d:03d}", text="x", excluded=False)
                                     for q in range(queries) for d in range(docs)])
        s.flush()
        sel = select
        qids = list(s.exec(sel(Query.id).where(Query.project_id == pid).order_by(Query.id)).all())
        dids = list(s.exec(sel(Document.id).where(Document.project_id == pid).order_by(Document.id)).all())
        s.execute(insert(PoolPair), [dict(project_id=pid, query_id=qids[i // docs], document_id=dids[i],
                                          shuffle_order=i % docs, systems_json="{}", batch=0)
                                     for i in range(queries * docs)])
        s.flush()
        pairs = list(s.exec(sel(PoolPair.id, PoolPair.query_id).where(PoolPair.project_id == pid)
                            .order_by(PoolPair.id)).all())
        rows = []
        for pos, (pair_id, _) in enumerate(pairs[:overlap]):
            for j in jids:
                rows.append(dict(project_id=pid, pair_id=pair_id, judge_id=j, kind="overlap", exclusive_pair_id=None,
                                 position=pos, created_at=now, skipped=False))
        for i, (pair_id, query_id) in enumerate(pairs[overlap:]):
            j = jids[query_id % len(jids)]
            rows.append(dict(project_id=pid, pair_id=pair_id, judge_id=j, kind="main", exclusive_pair_id=pair_id,
                             position=MAIN_BASE + i, created_at=now, skipped=False))
        # Answers: the first `done` share of the rows, each judge at their own pace over 3 days.
        rng.shuffle(rows)
        weight = {j: 1.0 / (k + 1) for k, j in enumerate(jids)}  # Zipf-like: judge00 is the busiest
        answered_rows = [r for r in rows if rng.random() < done * weight[r["judge_id"]] * len(jids) / sum(
            weight.values())]
        judgments = []
        for r in answered_rows:
            at = now - timedelta(seconds=rng.uniform(0, 3 * 86400))
            secs = rng.lognormvariate(2.5, 0.8)
            skip = rng.random() < 0.05
            if not skip:
                r["done_at"] = at
            r["skipped"] = skip
            judgments.append(dict(project_id=pid, pair_id=r["pair_id"], judge_id=r["judge_id"],
                                  grade=None if skip else rng.randrange(3), unsure=(not skip) and rng.random() < 0.08,
                                  skipped=skip, source="human", shown_at=at - timedelta(seconds=secs), answered_at=at))
        for r in rows:
            r.setdefault("done_at", None)
        for start in range(0, len(rows), 20_000):
            s.execute(insert(Assignment), rows[start:start + 20_000])
        for start in range(0, len(judgments), 20_000):
            s.execute(insert(Judgment), judgments[start:start + 20_000])
        s.commit()
    return engine, pid, len(rows), len(judgments)


def floor(engine, pid):
    """The same rows as build_progress reads, fetched and dropped."""
    from sqlalchemy import text

    with engine.connect() as conn:
        conn.execute(text("SELECT a.pair_id, a.judge_id, a.kind, a.done_at IS NOT NULL FROM assignment a "
                          "JOIN poolpair p ON p.id = a.pair_id JOIN query q ON q.id = p.query_id "
                          "WHERE a.project_id = :p AND q.status != 'dropped'"), {"p": pid}).all()
        conn.execute(text("SELECT judge_id, answered_at, shown_at, skipped, unsure FROM judgment "
                          "WHERE project_id = :p AND source = 'human'"), {"p": pid}).all()


def best(fn, repeat):
    walls, cpus = [], []
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return min(walls), min(cpus)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--docs", type=int, default=50)
    ap.add_argument("--judges", type=int, default=10)
    ap.add_argument("--overlap", type=int, default=500)
    ap.add_argument("--done", type=float, default=0.6, help="share of the assignment rows answered")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    from curation.judge.progress import build_progress
    from curation.store.engine import session
    from curation.store.models import Project

    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'golden.db'}"
        t = time.perf_counter()
        engine, pid, n_rows, n_judgments = build_store(url, queries=args.queries, docs=args.docs, judges=args.judges,
                                                       overlap=args.overlap, done=args.done)
        print(f"store: {args.queries * args.docs:,} pairs, {n_rows:,} assignment rows, {n_judgments:,} judgments "
              f"by {args.judges} judges (built in {time.perf_counter() - t:.1f} s)")
        print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")

        def report():
            with session(engine) as s:
                return build_progress(s, s.get(Project, pid))

        r = report()
        fw, fc = best(lambda: floor(engine, pid), args.repeat)
        rw, rc = best(report, args.repeat)
        print(f"floor (the same rows fetched by plain SQL): {fw:.3f} s wall, {fc:.3f} s CPU (best of {args.repeat})")
        print(f"build_progress:                             {rw:.3f} s wall, {rc:.3f} s CPU  -> "
              f"{rw / fw:.2f}x the floor (wall), {rc / fc:.2f}x (CPU)")
        print(f"  {r.done_pairs:,} of {r.assigned_pairs:,} pairs done, pace {r.pace:.0f}/h, "
              f"{sum(j.idle for j in r.judges)} idle judges")

        from curation.store.users import add_user
        from judging_app import create_app
        from tests.support.client import login

        with session(engine) as s:
            add_user(s, "lena", role="lead", password="bench-password-1")
        app = create_app({"DATABASE_URL": url, "SECRET_KEY": "bench", "TESTING": True})
        client = login(app.test_client(), "lena", password="bench-password-1")
        pw, pc = best(lambda: client.get(f"/lead/{pid}/progress"), args.repeat)
        status = client.get(f"/lead/{pid}/progress").status_code
        print(f"GET /lead/{pid}/progress (Flask test client):   {pw:.3f} s wall, {pc:.3f} s CPU (status {status})")
        print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        app.extensions["golden_engine"].dispose()
        engine.dispose()


if __name__ == "__main__":
    main()
