"""Benchmark: what accounts and sessions cost per request.

1. The per-request session check, :func:`curation.store.sessions.session_user` (the token's unique
   index joined to the user's row, idle and absolute limits checked), against the check it replaced,
   :func:`curation.store.users.signed_in` (the user's row by primary key): CPU time per call in the
   same run, on a store with USERS users and SESSIONS sessions (SQLite; PostgreSQL too when
   reachable at --pg).
2. A login while locked against a failed login that is not locked, with werkzeug's default scrypt:
   a locked attempt must cost no password hash (the point of checking the lock first).

CPU time is the process's (time.process_time), so the machine's load (printed) moves it little.

    python bench/bench_sessions.py
    python bench/bench_sessions.py --calls 20000 --pg postgresql://postgres@127.0.0.1:5432/test
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def cpu_per_call(fn, calls: int) -> float:
    """Median of 3 runs of ``calls`` calls: CPU seconds per call."""
    runs = []
    for _ in range(3):
        start = time.process_time()
        for _ in range(calls):
            fn()
        runs.append((time.process_time() - start) / calls)
    return sorted(runs)[1]


def store_with_sessions(url: str, users: int, per_user: int):
    from curation.store.engine import make_engine
    from curation.store.engine import session as new_session
    from curation.store.migrate import upgrade
    from curation.store.models import User
    from curation.store.sessions import start_session

    engine = make_engine(url)
    upgrade(engine)
    with new_session(engine) as s:
        s.add_all([User(name=f"judge{i:05d}", role="judge", password_hash="x") for i in range(users)])
        s.commit()
        rows = s.exec(__import__("sqlmodel").select(User)).all()
        tokens = [start_session(s, u, address="10.0.0.1", commit=False) for u in rows for _ in range(per_user)]
        s.commit()
    return engine, rows, tokens


def bench_check(url: str, label: str, users: int, per_user: int, calls: int) -> None:
    from curation.store.engine import session as new_session
    from curation.store.sessions import session_user
    from curation.store.users import signed_in

    engine, rows, tokens = store_with_sessions(url, users, per_user)
    try:
        with new_session(engine) as s:
            token, uid = tokens[len(tokens) // 2], rows[len(rows) // 2].id
            assert session_user(s, token) is not None and signed_in(s, uid) is not None
            old = cpu_per_call(lambda: signed_in(s, uid), calls)
            new = cpu_per_call(lambda: session_user(s, token), calls)
        print(f"{label:<11} {users} users, {users * per_user} sessions: session_user {new * 1e6:7.1f} us CPU/call, "
              f"signed_in (before) {old * 1e6:7.1f} us; ratio {new / old:4.2f}")
    finally:
        engine.dispose()


def bench_locked_login(folder: Path) -> None:
    """A failed login (scrypt) against a login refused while locked, through the app."""
    os.environ.pop("GOLDEN_PASSWORD_HASH_METHOD", None)
    from curation.store.engine import session as new_session
    from curation.store.users import add_user
    from judging_app import create_app
    from tests.support.client import csrf

    url = f"sqlite:///{folder / 'login.db'}"
    engine = __import__("curation.store.engine", fromlist=["make_engine"]).make_engine(url)
    from curation.store.migrate import upgrade

    upgrade(engine)
    with new_session(engine) as s:
        add_user(s, "alice", password="correct-horse-battery")
    app = create_app({"DATABASE_URL": url, "SECRET_KEY": "bench", "TESTING": True,
                      "LOGIN_MAX_FAILURES": 10_000, "LOGIN_ADDRESS_MAX_FAILURES": 10_000})
    client = app.test_client()
    token = csrf(client.get("/login").data)

    def attempt(expect: int):
        res = client.post("/login", data={"username": "alice", "password": "wrong", "csrf_token": token})
        assert res.status_code == expect, res.status_code

    failed = cpu_per_call(lambda: attempt(401), 5)
    app.config.update(LOGIN_MAX_FAILURES=1)
    attempt(401)  # this one locks
    locked = cpu_per_call(lambda: attempt(429), 50)
    print(f"login      failed, not locked (scrypt) {failed * 1e3:7.1f} ms CPU; refused while locked "
          f"{locked * 1e3:6.2f} ms CPU; ratio {failed / locked:5.0f}x")
    app.extensions["golden_engine"].dispose()
    engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=500)
    parser.add_argument("--sessions-per-user", type=int, default=4)
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--pg", default=os.environ.get("GOLDEN_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/test"),
                        help="PostgreSQL server for a scratch database ('' to skip)")
    args = parser.parse_args()
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        bench_check(f"sqlite:///{folder / 'bench.db'}", "SQLite", args.users, args.sessions_per_user, args.calls)
        if args.pg:
            try:
                from curation.store.engine import scratch_database

                url, drop = scratch_database(args.pg, "golden_bench_")
            except Exception as exc:  # no server: say so and go on
                print(f"PostgreSQL  skipped: {exc}")
            else:
                try:
                    bench_check(url, "PostgreSQL", args.users, args.sessions_per_user, args.calls // 5)
                finally:
                    drop()
        bench_locked_login(folder)
    print(f"load average at end:   {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
