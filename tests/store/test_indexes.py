"""The store's indexes: none is redundant (each is one more B-tree that every insert writes), the
judging answer's statements still find every row through an index, and migration 0026, which
dropped the redundant ones, goes down and up again on SQLite and PostgreSQL."""

from __future__ import annotations

import re
import sqlite3

from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy import event, inspect

from curation.store.engine import make_engine
from curation.store.migrate import alembic_config, current_revision

# The tables that grow with the pool and the judging: a full scan of one is a slow request.
LARGE = {"assignment", "judgment", "pairview", "poolpair", "query", "document", "queuecount"}


def index_keys(insp, table: str) -> tuple[list[tuple[str, tuple[str, ...]]], list[tuple[str, ...]]]:
    """The table's non-unique indexes (name, columns) and the column lists of its unique keys
    (primary key, unique constraints, unique indexes), as the database reports them."""
    plain, unique = [], []
    pk = tuple(insp.get_pk_constraint(table)["constrained_columns"])
    if pk:
        unique.append(pk)
    unique += [tuple(u["column_names"]) for u in insp.get_unique_constraints(table)]
    for ix in insp.get_indexes(table):
        cols = tuple(ix["column_names"])
        (unique.append(cols) if ix["unique"] else plain.append((ix["name"], cols)))
    return plain, unique


def redundant_indexes(eng) -> list[str]:
    """Each non-unique index whose columns start another index or a unique key (which the database
    reads just as well for a condition on those columns)."""
    insp = inspect(eng)
    found = []
    for table in insp.get_table_names():
        plain, unique = index_keys(insp, table)
        for name, cols in plain:
            longer = [c for n, c in plain if n != name and len(c) > len(cols)] + unique
            if any(other[:len(cols)] == cols for other in longer):
                found.append(f"{table}.{name} {cols}")
    return found


def test_no_index_is_a_prefix_of_another_key(engine):
    assert redundant_indexes(engine) == []


def test_the_check_finds_a_redundant_index(engine):
    """The check above is not vacuous: an index on a unique key's first column is found."""
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE INDEX ix_extra_pair ON assignment (pair_id)")
    assert redundant_indexes(engine) == ["assignment.ix_extra_pair ('pair_id',)"]


def test_0026_drops_the_redundant_indexes_and_downgrades(db_url):
    cfg = alembic_config(db_url)
    rev = ScriptDirectory.from_config(cfg).get_revision("0026").module
    gone = {(t, f"ix_{t}_{c}") for t, c in rev.DROPPED} | {("judgment", n) for n, _c in rev.JUDGMENT_BEFORE}
    added = {("judgment", rev.JUDGMENT_AFTER[0])}
    tables = {t for t, _n in gone}
    eng = make_engine(db_url)

    def indexes():
        insp = inspect(eng)
        return {(t, ix["name"]): tuple(ix["column_names"]) for t in tables for ix in insp.get_indexes(t)}

    try:
        command.upgrade(cfg, "0025")
        before = indexes()
        assert gone <= set(before) and not added & set(before)
        assert len(redundant_indexes(eng)) == len(rev.DROPPED) - 1  # all but pairview.project_id's
        command.upgrade(cfg, "0026")
        assert current_revision(eng) == "0026"
        after = indexes()
        assert set(after) == set(before) - gone | added
        assert after[("judgment", "ix_judgment_pair_judge")] == ("pair_id", "judge_id", "id")
        assert redundant_indexes(eng) == []
        command.downgrade(cfg, "0025")
        assert indexes() == before
        command.upgrade(cfg, "head")
    finally:
        eng.dispose()


def traced_statements(app, requests) -> list[str]:
    """The SQL, values filled in, that SQLite ran for ``requests()`` (triggers' bodies left
    out: they are planned with their statement)."""
    seen: list[str] = []
    eng = app.extensions["golden_engine"]
    eng.dispose()

    def trace(dbapi_conn, _record):
        dbapi_conn.set_trace_callback(lambda sql: seen.append(sql) if not sql.startswith("--") else None)

    event.listen(eng, "connect", trace)
    try:
        requests()
    finally:
        event.remove(eng, "connect", trace)
        eng.dispose()
    return [s for s in seen if re.match(r"\s*(SELECT|INSERT|UPDATE|DELETE|WITH)\b", s, re.I)]


def full_scans(db_path, statements: list[str], tmp_path) -> list[tuple[str, str]]:
    """(plan line, statement) of each full scan of a large table, planned on a copy of the store
    without ANALYZE's statistics: SQLite then plans as for a large store, where a small test store's
    statistics would make a scan of a few rows the cheaper plan."""
    copy = tmp_path / "plans.db"
    store, conn = sqlite3.connect(db_path), sqlite3.connect(copy)
    store.backup(conn)  # the store as its connections see it, WAL included
    store.close()
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_stat1'").fetchone():
        conn.execute("DELETE FROM sqlite_stat1")
        conn.commit()
    conn.close()
    conn = sqlite3.connect(copy)  # a new connection: one that has read the statistics keeps them
    try:
        found = []
        for sql in statements:
            for row in conn.execute("EXPLAIN QUERY PLAN " + sql):
                m = re.match(r"SCAN (\w+)", row[3])
                if m and m.group(1) in LARGE:
                    found.append((row[3], sql))
        return found
    finally:
        conn.close()


def test_the_answer_path_reads_every_large_table_through_an_index(sqlite_engine, tmp_path):
    """Showing the judging page, answering (the lean htmx path and Flask's) and skipping:
    no statement scans a table that grows with the store."""
    from tests.app.test_lean_answer import HTMX, field
    from tests.support.client import app_on, csrf, login
    from tests.support.projects import assigned_project

    setup = assigned_project(sqlite_engine, tmp_path / "p", n_queries=6, docs_per_query=5)
    path = f"/projects/{setup.project_id}/judge"
    with app_on(sqlite_engine) as app:
        client = login(app.test_client(), "alice")

        def requests():
            body = client.get(path).data
            body = client.get(path, headers=HTMX).data
            for grade in ("1", "2", "0"):
                body = client.post(path, data={"csrf_token": csrf(body), "token": field(body, "token"),
                                               "grade": grade}, headers=HTMX).data
            body = client.post(path, data={"csrf_token": csrf(body), "token": field(body, "token"),
                                           "action": "skip"}, headers=HTMX).data
            saved, app.lean = app.lean, None  # Flask's own path for the next answer
            try:
                body = client.post(path, data={"csrf_token": csrf(body), "token": field(body, "token"),
                                               "grade": "1"}, headers=HTMX).data
            finally:
                app.lean = saved

        statements = traced_statements(app, requests)
    assert sum(s.lstrip().upper().startswith("INSERT INTO JUDGMENT") for s in statements) >= 4
    db_path = sqlite_engine.url.database
    assert full_scans(db_path, statements, tmp_path) == []
