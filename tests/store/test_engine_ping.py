"""A pooled PostgreSQL connection is pinged before use only after sitting idle
(curation.store.engine._ping_when_idle): a connection whose server process went away is
replaced instead of failing the request, and a connection in steady use costs no extra round trip."""

from __future__ import annotations

import psycopg
import pytest
from sqlalchemy import text

from curation.store import engine as engine_module
from curation.store.engine import make_engine

pytestmark = pytest.mark.postgres


def _backend_pid(eng) -> int:
    with eng.connect() as conn:
        return conn.execute(text("SELECT pg_backend_pid()")).scalar()


def _terminate(url: str, pid: int) -> None:
    dsn = url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))


def test_an_idle_connection_whose_server_went_away_is_replaced(pg_url, monkeypatch):
    eng = make_engine(pg_url, pool_size=1)
    try:
        pid = _backend_pid(eng)
        assert _backend_pid(eng) == pid  # the pool hands the same connection out again
        _terminate(pg_url, pid)
        monkeypatch.setattr(engine_module, "PING_AFTER_IDLE_SECONDS", 0.0)
        assert _backend_pid(eng) != pid  # pinged, found dead, replaced: the request works
    finally:
        eng.dispose()


def test_a_connection_in_steady_use_is_not_pinged(pg_url, monkeypatch):
    eng = make_engine(pg_url, pool_size=1)
    pings = []
    real = eng.dialect.do_ping
    monkeypatch.setattr(eng.dialect, "do_ping", lambda c: (pings.append(1), real(c))[1])
    try:
        pid = _backend_pid(eng)
        for _ in range(5):
            assert _backend_pid(eng) == pid
        assert pings == []
        monkeypatch.setattr(engine_module, "PING_AFTER_IDLE_SECONDS", 0.0)
        assert _backend_pid(eng) == pid
        assert pings == [1]
        _terminate(pg_url, pid)
        monkeypatch.setattr(engine_module, "PING_AFTER_IDLE_SECONDS", 3600.0)
        with pytest.raises(Exception, match="terminat|closed|server"):  # no ping: the request meets the dead one
            _backend_pid(eng)
        assert _backend_pid(eng) != pid  # and SQLAlchemy replaced it for the next request
    finally:
        eng.dispose()
