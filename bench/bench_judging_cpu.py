"""CPU per submit-and-next of the judging app in one process (Flask's test client, no HTTP, no
gunicorn), and PostgreSQL's own CPU per request: the figure the load test's latency is made of,
measured without the judges' client sharing the cores.

    python bench/bench_judging_cpu.py                  # SQLite store as bench_judging_load.py builds it
    python bench/bench_judging_cpu.py --postgres       # the same on a fresh PostgreSQL database
    python bench/bench_judging_cpu.py --requests 400 --profile   # plus a cProfile (CPU clock) of the app

Builds the store of ``bench_judging_load.py`` (120,000 pairs, 20 judges, 100,000 judgments
preloaded), logs the 20 judges in, warms up with 40 answers, then sends ``--requests`` answers
round-robin (each one the htmx POST that records an answer and renders the next pair) and prints
the app's CPU time per request (SQLite's engine included: it runs in the process), the CPU time of
the PostgreSQL backend processes of this database per request, and the SQL statements per request.
"""

from __future__ import annotations

import argparse
import cProfile
import html
import os
import pstats
import random
import sys
import tempfile
import time
from pathlib import Path

from sqlalchemy import event

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import bench_judging_load as load  # noqa: E402  (the store and the helpers of the load test)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--postgres", action="store_true")
    ap.add_argument("--requests", type=int, default=400)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--profile-out", metavar="FILE", help="with --profile: also save the profile (pstats) to FILE")
    ap.add_argument("--store-cache", metavar="FILE", help="as bench_judging_load.py's (SQLite)")
    args = ap.parse_args()
    store = argparse.Namespace(queries=3000, docs=40, judges=20, overlap=100, seed=0, preload=100_000,
                               store_cache=args.store_cache)
    with tempfile.TemporaryDirectory(prefix="golden-bench-") as tmp:
        drop = None
        if args.postgres:
            url, drop = load.scratch_database(load.PG_SERVER, "golden_bench_")
        else:
            url = f"sqlite:///{tmp}/golden.db"
        try:
            project_id, names = load.cached_store(url, Path(tmp), store)
            return measure(url, project_id, names, args)
        finally:
            if drop:
                drop()


def count_statements(engine, statements: list[int]) -> None:
    """Count every SQL statement sent: SQLAlchemy's (its cursor-execute event) and the hot path's
    run on the driver directly (curation.store.direct.Statement.run), into ``statements[0]``."""
    from curation.store import direct

    event.listen(engine, "before_cursor_execute", lambda *a: statements.__setitem__(0, statements[0] + 1))
    run = direct.Statement.run

    def counted(self, conn, params):
        statements[0] += 1
        return run(self, conn, params)

    direct.Statement.run = counted


def measure(url: str, project_id: int, names: list[str], args) -> int:
    from judging_app import create_app

    # MIN_ANSWER_MS=1: the check that an answer is not too soon after its pair runs on every answer
    # (its cost is measured), with a minimum the benchmark's machine-speed judges pass.
    app = create_app({"DATABASE_URL": url, "SECRET_KEY": "bench", "MIN_ANSWER_MS": 1})
    statements = [0]
    count_statements(app.extensions["golden_engine"], statements)
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

    def answer(judge):
        client, body, csrf = judge
        token = html.unescape(load.TOKEN_RE.search(body).group(1))
        r = client.post(path, data={"csrf_token": csrf, "token": token, "grade": str(rng.randrange(3))},
                        headers={"HX-Request": "true"})
        assert r.status_code == 200, r.get_data(as_text=True)[:300]
        judge[1] = r.get_data(as_text=True)

    for k in range(40):
        answer(judges[k % len(judges)])
    profile = cProfile.Profile(time.process_time) if args.profile else None
    db0, n0 = load.database_cpu_seconds(url), statements[0]
    cpu0, wall0 = time.process_time(), time.perf_counter()
    if profile:
        profile.enable()
    for k in range(args.requests):
        answer(judges[k % len(judges)])
    if profile:
        profile.disable()
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    db = load.database_cpu_seconds(url)
    n = args.requests
    backend = "PostgreSQL" if url.startswith("postgres") else "SQLite"
    print(f"{backend}: {n} submit-and-next in one process, "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"  app CPU per request         {cpu / n * 1000:6.2f} ms   (wall {wall / n * 1000:.2f} ms)")
    if db is not None:
        print(f"  PostgreSQL CPU per request  {(db - db0) / n * 1000:6.2f} ms   (its backends for this database)")
    print(f"  SQL statements per request  {(statements[0] - n0) / n:6.1f}   (besides BEGIN and COMMIT)")
    if profile:
        pstats.Stats(profile).sort_stats("cumulative").print_stats(40)
        if args.profile_out:
            profile.dump_stats(args.profile_out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
