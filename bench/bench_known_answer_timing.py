"""Whether answering a known-answer pair costs what answering a pool pair costs: the judging app's
CPU time, wall time and SQL statements per submit-and-next, split by the kind of pair answered, in
one process (Flask's test client), on the store of ``bench_judging_load.py`` with known-answer
pairs mixed into every judge's queue. A page or a timing that differed would tell a judge which
pairs are checks.

    python bench/bench_known_answer_timing.py                    # 120,000 pairs, 20 judges, SQLite
    python bench/bench_known_answer_timing.py --queries 300 --requests 400   # a quick run
    python bench/bench_known_answer_timing.py --postgres

Builds the store (no overlap set, ``--preload`` judgments), makes ``--known`` pairs known-answer
pairs mixed in at one in ``--rate``, logs the 20 judges in, warms up with 40 answers, then sends
``--requests`` answers round-robin and prints, for answers on pool pairs and on known-answer pairs,
the median and mean CPU and wall time and the statements per request, with the ratio of the two.
"""

from __future__ import annotations

import argparse
import html
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import bench_judging_cpu as cpu_bench  # noqa: E402
import bench_judging_load as load  # noqa: E402


def make_known(url: str, project_id: int, n: int, rate: int) -> int:
    """``n`` pool pairs made known-answer pairs (accepted grade 1) and mixed in at one in ``rate``;
    returns how many known-answer rows the queues got."""
    from sqlmodel import func, select

    from curation.judge import gold
    from curation.store.engine import make_engine
    from curation.store.engine import session as new_session
    from curation.store.lookups import pair_keys
    from curation.store.models import Assignment, PoolPair, Project

    engine = make_engine(url)
    t0 = time.perf_counter()
    with new_session(engine) as db:
        proj = db.get(Project, project_id)
        ids = sorted(db.exec(select(PoolPair.id).where(PoolPair.project_id == project_id)).all())
        chosen = random.Random(3).sample(ids, n)
        keys = pair_keys(db, chosen)
        gold.add_known(db, proj, [gold.KnownEntry(*keys[p], (1,)) for p in chosen], source="lead")
        gold.set_known_settings(db, proj, rate=rate)
        rows = db.exec(select(func.count()).select_from(Assignment).where(Assignment.kind == "known")).one()
    engine.dispose()
    print(f"known-answer: {n} pairs, one in {rate}: {rows:,} rows mixed in ({time.perf_counter() - t0:.1f} s)")
    return rows


def measure(url: str, project_id: int, names: list[str], requests: int) -> dict[str, dict[str, list[float]]]:
    from sqlmodel import select

    from curation.store.engine import make_engine
    from curation.store.engine import session as new_session
    from curation.store.models import Assignment, PairView
    from judging_app import create_app

    app = create_app({"DATABASE_URL": url, "SECRET_KEY": "bench", "MIN_ANSWER_MS": 1})
    statements = [0]
    cpu_bench.count_statements(app.extensions["golden_engine"], statements)
    look = make_engine(url)  # which kind a token's pair is, read outside the timed requests
    path = f"/projects/{project_id}/judge"
    judges = []
    for name in names:
        client = app.test_client()
        page = client.get("/login").get_data(as_text=True)
        r = client.post("/login", data={"username": name, "password": load.PASSWORD,
                                        "csrf_token": load.CSRF_RE.search(page).group(1)})
        assert r.status_code == 302, r.status_code
        body = client.get(path, headers={"HX-Request": "true"}).get_data(as_text=True)
        judges.append([client, body, html.unescape(load.CSRF_RE.search(body).group(1))])
    rng = random.Random(0)
    out: dict[str, dict[str, list[float]]] = {k: {"cpu": [], "wall": [], "sql": []} for k in ("main", "known")}

    def answer(judge, record: bool):
        client, body, csrf = judge
        token = html.unescape(load.TOKEN_RE.search(body).group(1))
        if record:
            with new_session(look) as db:
                kind = db.exec(select(Assignment.kind).join(PairView, PairView.assignment_id == Assignment.id)
                               .where(PairView.token == token)).one()
        n0, c0, w0 = statements[0], time.process_time(), time.perf_counter()
        r = client.post(path, data={"csrf_token": csrf, "token": token, "grade": str(rng.randrange(3))},
                        headers={"HX-Request": "true"})
        c1, w1 = time.process_time(), time.perf_counter()
        assert r.status_code == 200, r.get_data(as_text=True)[:300]
        judge[1] = r.get_data(as_text=True)
        if record:
            out[kind]["cpu"].append((c1 - c0) * 1000)
            out[kind]["wall"].append((w1 - w0) * 1000)
            out[kind]["sql"].append(statements[0] - n0)

    for k in range(40):
        answer(judges[k % len(judges)], False)
    for k in range(requests):
        answer(judges[k % len(judges)], True)
    look.dispose()
    return out


def report(out, url: str) -> None:
    backend = "PostgreSQL" if url.startswith("postgres") else "SQLite"
    print(f"{backend}: submit-and-next by the kind of pair answered, load average {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} cores")
    print(f"  {'answered':<14}{'n':>5}{'CPU median':>12}{'CPU mean':>10}{'wall median':>13}{'statements':>12}")
    for kind, label in (("main", "pool pair"), ("known", "known-answer")):
        m = out[kind]
        if not m["cpu"]:
            print(f"  {label:<14}{0:>5}")
            continue
        cpu = m["cpu"]
        print(f"  {label:<14}{len(cpu):>5}{statistics.median(cpu):>10.2f}ms{statistics.mean(cpu):>8.2f}ms"
              f"{statistics.median(m['wall']):>11.2f}ms{statistics.mean(m['sql']):>12.2f}")
    if out["main"]["cpu"] and out["known"]["cpu"]:
        ratio = statistics.median(out["known"]["cpu"]) / statistics.median(out["main"]["cpu"])
        print(f"  known-answer / pool pair, median CPU: {ratio:.2f}x; statements: "
              f"{sorted(set(out['known']['sql']))} vs {sorted(set(out['main']['sql']))}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--postgres", action="store_true")
    ap.add_argument("--queries", type=int, default=3000)
    ap.add_argument("--preload", type=int, default=20_000)
    ap.add_argument("--known", type=int, default=400)
    ap.add_argument("--rate", type=int, default=5)
    ap.add_argument("--requests", type=int, default=1000)
    args = ap.parse_args()
    store = argparse.Namespace(queries=args.queries, docs=40, judges=20, overlap=0, seed=0, preload=args.preload)
    with tempfile.TemporaryDirectory(prefix="golden-bench-") as tmp:
        drop = None
        if args.postgres:
            url, drop = load.scratch_database(load.PG_SERVER, "golden_bench_i32a_")
        else:
            url = f"sqlite:///{tmp}/golden.db"
        try:
            project_id, names = load.build_store(url, Path(tmp), store)
            make_known(url, project_id, args.known, args.rate)
            report(measure(url, project_id, names, args.requests), url)
        finally:
            if drop:
                drop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
