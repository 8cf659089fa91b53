"""Connecting to the project store: SQLite by default, PostgreSQL through ``DATABASE_URL``.

SQLite runs in WAL mode with foreign keys on, so readers never block the judge who is writing.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import event, exc
from sqlalchemy.engine import Engine, make_url
from sqlmodel import Session, create_engine

DEFAULT_SQLITE = "golden.db"
NEVER_AUTO_PREPARE = 2**62  # psycopg's prepare_threshold: only statements run with prepare=True are prepared


def default_url() -> str:
    """``DATABASE_URL`` when set, else a SQLite file ``golden.db`` in the current folder."""
    url = os.environ.get("DATABASE_URL")
    if url:
        return normalize_url(url)
    return f"sqlite:///{Path(DEFAULT_SQLITE).resolve()}"


def normalize_url(url: str) -> str:
    """Accept ``postgres://`` and ``postgresql://`` and use the psycopg 3 driver for them."""
    if url.startswith("postgres://"):
        url = "postgresql://" + url[len("postgres://"):]
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url[len("postgresql://"):]
    return url


#: Bytes of a SQLite store each connection reads through a memory map (``PRAGMA mmap_size``): none,
#: every page is read with ``pread``. When another process (another ``golden serve`` worker) has
#: written, SQLite drops the connection's whole page cache either way; with a map it also unmaps the
#: store and maps it again at the next read, every page then coming back by a page fault. A 256 MiB
#: map (104 -> 29 ``pread`` an answer under 3 workers) was measured against none on 2026-12-03, the
#: judges spread over two processes, runs alternated: 8 of 8 pairs spent less server CPU an answer
#: without it (granian 1.6-2.13 against 1.7-2.25 ms, gunicorn 1.9-2.0 against 2.0-2.5 ms), one process
#: holding every judge was the same (1.1-1.2 ms), and so were the lead pages, within their noise
#: (bench/README.md, "Issue 29: SQLite without a memory map").
SQLITE_MMAP_BYTES = 0


def _sqlite_pragmas(dbapi_conn, _record):
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA busy_timeout=10000")
    cur.execute(f"PRAGMA mmap_size={SQLITE_MMAP_BYTES}")
    cur.close()


def make_engine(url: str | None = None, **kwargs) -> Engine:
    """An engine for ``url`` (default: :func:`default_url`) with golden's connection settings."""
    url = normalize_url(url or default_url())
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        kwargs.setdefault("connect_args", {"check_same_thread": False, "timeout": 10})
        engine = create_engine(url, **kwargs)
        event.listen(engine, "connect", _sqlite_pragmas)
    else:
        ping_idle = not kwargs.get("pool_pre_ping")
        # Plan statements for their actual values, except the judging hot path's few prepared ones.
        # psycopg 3 prepares any statement server-side after five runs by default, and PostgreSQL
        # may then switch to a generic plan that ignores the judge and project ids ("this judge's
        # first open pair" once took 0.3-0.7 s that way, against ~5 ms with custom plans). So nothing
        # is prepared automatically (a threshold no statement reaches; None would also refuse the
        # explicit ``prepare=True``): SQLAlchemy's statements are planned for their values each
        # time, and only the statements of :mod:`curation.store.direct` made with ``prepare=True``
        # are prepared (tests/judge/test_direct.py checks the generic plan of the next open pair).
        connect_args = dict(kwargs.pop("connect_args", {}))
        connect_args.setdefault("prepare_threshold", NEVER_AUTO_PREPARE)
        engine = create_engine(url, connect_args=connect_args, **kwargs)
        if ping_idle:
            _ping_when_idle(engine)
    return engine


PING_AFTER_IDLE_SECONDS = 5.0


def _ping_when_idle(engine: Engine) -> None:
    """Check that a pooled PostgreSQL connection is still alive before handing it out, when it has
    sat unused in the pool for more than :data:`PING_AFTER_IDLE_SECONDS` (a restarted server, a proxy's idle
    timeout): SQLAlchemy's pessimistic disconnect handling, with a checkout handler raising
    ``DisconnectionError`` so the pool replaces the connection, instead of ``pool_pre_ping``, which
    pings at every checkout. The judging app checks a connection out for every request, so under
    load the ping was one round trip to the server in about seven; a connection in steady use
    is not pinged. A server lost within the last few seconds fails one request, whose error
    makes SQLAlchemy drop the pool's connections."""

    @event.listens_for(engine, "checkin")
    def _checked_in(_dbapi_conn, record):
        record.info["golden_idle_since"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _checked_out(dbapi_conn, record, _proxy):
        since = record.info.pop("golden_idle_since", None)
        if since is None or time.monotonic() - since <= PING_AFTER_IDLE_SECONDS:
            return
        try:
            alive = engine.dialect.do_ping(dbapi_conn)
        except Exception as err:
            if engine.dialect.is_disconnect(err, dbapi_conn, None):
                raise exc.DisconnectionError() from err
            raise
        if not alive:
            raise exc.DisconnectionError()


def session(engine: Engine) -> Session:
    """A new session; ``expire_on_commit`` off so returned rows stay readable after commit."""
    return Session(engine, expire_on_commit=False)


def scratch_database(server_url: str, prefix: str) -> tuple[str, Callable[[], None]]:
    """A new, empty PostgreSQL database on the server of ``server_url`` (named ``prefix`` + a random
    suffix), for tests and benchmarks: returns its URL and a function that drops it (closing any
    connection still open to it)."""
    import psycopg

    url = make_url(normalize_url(server_url))
    name = f"{prefix}{uuid.uuid4().hex[:12]}"
    params = dict(host=url.host, port=url.port or 5432, user=url.username, password=url.password,
                  dbname=url.database, autocommit=True)
    with psycopg.connect(**params) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')

    def drop() -> None:
        with psycopg.connect(**params) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    return url.set(database=name).render_as_string(hide_password=False), drop
