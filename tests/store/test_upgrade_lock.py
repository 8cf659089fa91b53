"""`golden admin db upgrade` from several processes at once on one fresh PostgreSQL database (two app
servers starting together): the migration lock makes them run one after the other."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import psycopg
import pytest
from sqlalchemy.engine import make_url

from curation.store.engine import make_engine
from curation.store.migrate import UPGRADE_LOCK_KEY, current_revision, head_revision

pytestmark = pytest.mark.postgres


def _connect(url: str):
    u = make_url(url)
    return psycopg.connect(host=u.host, port=u.port or 5432, user=u.username, password=u.password, dbname=u.database)


def _upgrade(url: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (os.getcwd(), os.environ.get("PYTHONPATH")) if p)}
    code = "from curation.cli import main; main()"
    return subprocess.Popen([sys.executable, "-c", code, "admin", "db", "upgrade", "--db", url],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def test_concurrent_upgrades_wait_for_the_lock_and_migrate_once(pg_url):
    holder = _connect(pg_url)
    try:
        # Hold the migration lock as a first server would while it migrates.
        holder.execute("SELECT pg_advisory_xact_lock(%s)", (UPGRADE_LOCK_KEY,))
        procs = [_upgrade(pg_url) for _ in range(3)]
        waiting = _connect(pg_url)
        waiting.autocommit = True
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:  # until the three interpreters have started and reached the lock
                n = waiting.execute(
                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted "
                    "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())").fetchone()[0]
                if n == 3 or any(p.poll() is not None for p in procs):
                    break
                time.sleep(0.2)
            assert all(p.poll() is None for p in procs), [p.communicate() for p in procs if p.poll() is not None]
            tables = waiting.execute("SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'")
            assert n == 3 and tables.fetchone()[0] == 0  # all three wait; none has created anything
        finally:
            waiting.close()
    finally:
        holder.rollback()  # releases the lock
        holder.close()
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], outs
    said = sorted("upgraded from empty" in out for out, _ in outs)
    assert said == [False, False, True], outs  # one migrated; the two others found the schema at head
    assert all("already at schema revision" in out for out, _ in outs if "upgraded from empty" not in out)
    eng = make_engine(pg_url)
    try:
        assert current_revision(eng) == head_revision()
    finally:
        eng.dispose()


def test_upgrades_started_together_all_succeed(pg_url):
    procs = [_upgrade(pg_url) for _ in range(4)]
    outs = [p.communicate(timeout=180) for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, outs
    assert sum("upgraded from empty" in out for out, _ in outs) == 1, outs
