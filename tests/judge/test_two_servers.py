"""Two `golden serve` processes on one PostgreSQL store, judges answering through both at once (as
behind a reverse proxy without sticky sessions): a login made on one server works on the other,
nothing is lost or recorded twice, and no main pair is held or judged by two judges."""

from __future__ import annotations

import html
import os
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import requests
from sqlalchemy import func
from sqlmodel import select

from curation.store.engine import make_engine
from curation.store.engine import session as new_session
from curation.store.migrate import upgrade
from curation.store.models import Assignment, Judgment, PairView
from tests.support.projects import PASSWORD, assigned_project

pytestmark = [pytest.mark.postgres, pytest.mark.slow]
TOKEN_RE = re.compile(r'name="token" value="([^"]+)"')
CSRF_RE = re.compile(r'name="csrf_token" value="([^"]+)"')
JUDGES = ("alice", "bob", "carol", "dan")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _serve(url: str, port: int, log: Path) -> subprocess.Popen:
    # GOLDEN_MIN_ANSWER_MS=0: the test's judges answer as soon as a pair is shown
    env = {**os.environ, "GOLDEN_SECRET_KEY": "two-servers-test-secret", "GOLDEN_MIN_ANSWER_MS": "0",
           "PYTHONPATH": os.pathsep.join(p for p in (os.getcwd(), os.environ.get("PYTHONPATH")) if p)}
    with open(log, "wb") as err:
        proc = subprocess.Popen([sys.executable, "-c", "from curation.cli import main; main()", "serve", "--db", url,
                                 "--port", str(port), "--workers", "2"], stdout=subprocess.DEVNULL, stderr=err, env=env)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text()
        try:
            if requests.get(f"http://127.0.0.1:{port}/login", timeout=2).status_code == 200:
                return proc
        except (requests.ConnectionError, requests.Timeout):  # not listening yet, or still starting on a busy machine
            time.sleep(0.2)
    proc.kill()
    raise AssertionError(f"golden serve did not start: {log.read_text()}")


def _judge(name: str, bases: list[str], project_id: int, answered: list, errors: list) -> None:
    """Log in on the first server, then answer each pair through the other server than the one
    that showed it; every fifth answer is sent again (a double click), to the other server."""
    try:
        web = requests.Session()
        page = web.get(f"{bases[0]}/login").text
        r = web.post(f"{bases[0]}/login", data={"username": name, "password": PASSWORD,
                                               "csrf_token": html.unescape(CSRF_RE.search(page).group(1))},
                     allow_redirects=False)
        assert r.status_code == 302, r.text[:300]
        path = f"/projects/{project_id}/judge"
        body = web.get(bases[1] + path, headers={"HX-Request": "true"}).text
        n = 0
        while (m := TOKEN_RE.search(body)) and n < 40:
            form = {"csrf_token": html.unescape(CSRF_RE.search(body).group(1)), "token": html.unescape(m.group(1)),
                    "grade": str(n % 3)}
            shown_by = bases[n % 2]
            other = bases[(n + 1) % 2]
            r = web.post(other + path, data=form, headers={"HX-Request": "true"})
            assert r.status_code == 200, r.text[:300]
            answered.append((name, form["token"]))
            if n % 5 == 0:
                again = web.post(shown_by + path, data=form, headers={"HX-Request": "true"})
                assert again.status_code == 200, again.text[:300]
            body = r.text
            n += 1
    except Exception as exc:  # reported by the test
        errors.append(f"{name}: {type(exc).__name__}: {exc}")


def test_two_servers_share_one_store_under_concurrent_judging(pg_url, tmp_path):
    engine = make_engine(pg_url)
    try:
        upgrade(engine)
        setup = assigned_project(engine, tmp_path / "p", n_queries=12, docs_per_query=6, judges=JUDGES, overlap=6)
    finally:
        engine.dispose()
    ports = [_free_port(), _free_port()]
    servers = []
    try:
        for k, port in enumerate(ports):
            servers.append(_serve(pg_url, port, tmp_path / f"serve{k}.log"))
        bases = [f"http://127.0.0.1:{p}" for p in ports]
        answered: list = []
        errors: list = []
        threads = [threading.Thread(target=_judge, args=(name, bases[::1 if i % 2 == 0 else -1], setup.project_id,
                                                         answered, errors)) for i, name in enumerate(JUDGES)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
    finally:
        for proc in servers:
            proc.terminate()
        for proc in servers:
            proc.wait(timeout=30)
    assert not errors, errors

    engine = make_engine(pg_url)
    try:
        with new_session(engine) as db:
            from curation.store.models import User

            names = dict(db.exec(select(User.id, User.name)).all())
            rows = db.exec(select(Judgment.judge_id, Judgment.client_token, Judgment.pair_id)).all()
            overlap = set(db.exec(select(Assignment.pair_id).where(Assignment.kind == "overlap")).all())
            assigned_twice = db.exec(select(Assignment.pair_id).where(Assignment.kind == "main")
                                     .group_by(Assignment.pair_id).having(func.count() > 1)).all()
            shown = db.exec(select(PairView.pair_id, PairView.judge_id)).all()
    finally:
        engine.dispose()
    recorded = [(names[j], t) for j, t, _ in rows]
    assert sorted(recorded) == sorted(answered)  # nothing lost, nothing recorded twice (double clicks included)
    assert len(answered) == 6 * len(JUDGES) + (12 * 6 - 6)  # every pair: the overlap by all four, the rest once
    judges_of: dict[int, set] = {}
    for j, _, pair in rows:
        judges_of.setdefault(pair, set()).add(j)
    assert all(len(js) == 1 for p, js in judges_of.items() if p not in overlap)
    assert all(len(js) == len(JUDGES) for p, js in judges_of.items() if p in overlap)
    assert not assigned_twice
    shown_to: dict[int, set] = {}
    for pair, j in shown:
        shown_to.setdefault(pair, set()).add(j)
    assert all(len(js) == 1 for p, js in shown_to.items() if p not in overlap)
