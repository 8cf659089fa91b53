"""curation.store.direct.batch: one transaction of the judging hot path, pipelined on PostgreSQL.
Real SQLite and PostgreSQL stores: commit, rollback, a failing statement inside the
pipeline, the prepared statements afterwards, and the round trips a block takes."""

from __future__ import annotations

import pytest
from sqlalchemy import Column, Integer, MetaData, String, Table, bindparam, insert, select

from curation.store import direct

_META = MetaData()
_T = Table("batchprobe", _META, Column("id", Integer, primary_key=True), Column("name", String, unique=True))
_ADD = direct.Statement(insert(_T).values(name=bindparam("name")), prepare=True)
_COUNT = direct.Statement(select(_T.c.name).order_by(_T.c.name), prepare=True)


@pytest.fixture
def conn(engine):
    _META.create_all(engine)
    with engine.connect() as c:
        yield c


def _names(conn):
    return [r[0] for r in _COUNT.read_alone(conn, {})]


def _idle(conn):
    raw = direct.dbapi(conn)
    if conn.dialect.name == "postgresql":
        assert raw.info.transaction_status == 0 and raw.autocommit is False
    else:
        assert not raw.in_transaction


def test_a_block_commits_when_it_ends_and_rolls_back_when_it_raises(conn):
    with direct.batch(conn):
        _ADD.run(conn, {"name": "a"})
        _ADD.run(conn, {"name": "b"})
    assert _names(conn) == ["a", "b"]
    _idle(conn)
    with pytest.raises(RuntimeError, match="changed my mind"), direct.batch(conn):
        _ADD.run(conn, {"name": "c"})
        raise RuntimeError("changed my mind")
    assert _names(conn) == ["a", "b"]
    _idle(conn)
    with direct.batch(conn) as tx:  # an explicit rollback, then the block ends normally
        _ADD.run(conn, {"name": "d"})
        tx.rollback()
    assert _names(conn) == ["a", "b"]
    _idle(conn)


def test_results_are_read_after_sync_or_after_the_block(conn):
    with direct.batch(conn) as tx:
        first = _ADD.run(conn, {"name": "x"})
        seen = _COUNT.run(conn, {})
        tx.sync()
        assert first.rowcount == 1
        after = _COUNT.run(conn, {})
    assert [r[0] for r in seen.fetchall()] == ["x"]
    assert [r[0] for r in after.fetchall()] == ["x"]


def test_a_failing_statement_rolls_back_the_whole_block_and_the_connection_goes_on(conn):
    integrity = conn.dialect.loaded_dbapi.IntegrityError
    with direct.batch(conn):
        _ADD.run(conn, {"name": "kept"})
    for _ in range(3):  # the failure at sync() (a statement never prepared before it is skipped),
        # then at the block's last round trip
        with pytest.raises(integrity), direct.batch(conn) as tx:
            _ADD.run(conn, {"name": "lost"})
            _ADD.run(conn, {"name": "kept"})  # unique violation
            _COUNT.run(conn, {})  # sent after the failing one: skipped by PostgreSQL
            tx.sync()
        _idle(conn)
        with pytest.raises(integrity), direct.batch(conn):
            _ADD.run(conn, {"name": "lost"})
            _ADD.run(conn, {"name": "kept"})
        _idle(conn)
    # The prepared statements still work (psycopg forgot them with the rollback and prepares anew).
    for i in range(8):
        with direct.batch(conn):
            _ADD.run(conn, {"name": f"n{i}"})
            _COUNT.run(conn, {})
    assert _names(conn) == ["kept"] + [f"n{i}" for i in range(8)]


def test_inside_an_open_transaction_a_block_joins_it(conn):
    conn.execute(insert(_T).values(name="orm"))  # SQLAlchemy opened a transaction
    with direct.batch(conn):
        _ADD.run(conn, {"name": "joined"})
    conn.rollback()  # the block committed the transaction it joined
    assert _names(conn) == ["joined", "orm"]


@pytest.mark.postgres
def test_on_postgresql_a_block_is_one_round_trip_plus_one_per_sync(pg_url, monkeypatch):
    """Counted as the Sync messages psycopg sends (each waits for the server once): BEGIN and
    COMMIT go in the pipeline with the statements, not as round trips of their own."""
    from psycopg._pipeline_base import BasePipeline  # psycopg's own class: where a Sync is queued

    from curation.store.engine import make_engine

    engine = make_engine(pg_url)
    _META.create_all(engine)
    syncs = []
    real = BasePipeline._enqueue_sync
    monkeypatch.setattr(BasePipeline, "_enqueue_sync", lambda self: (syncs.append(1), real(self))[1])
    try:
        with engine.connect() as conn:
            with direct.batch(conn):
                for i in range(5):
                    _ADD.run(conn, {"name": f"r{i}"})
            assert len(syncs) == 1
            with direct.batch(conn) as tx:
                _ADD.run(conn, {"name": "s"})
                tx.sync()
                _COUNT.run(conn, {})
            assert len(syncs) == 3
            assert _names(conn) == ["r0", "r1", "r2", "r3", "r4", "s"]
    finally:
        engine.dispose()
