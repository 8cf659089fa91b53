"""One database session per request, opened on first use and closed at teardown.

On SQLite the app also keeps the query planner's statistics fresh (a sampled ``ANALYZE``, bounded
by ``PRAGMA analysis_limit``, at start and then every few minutes): without them SQLite answers
"this judge's latest judgments" through the project's index, which gets slower with every
judgment in the store (about 100 ms per request at 100,000 judgments instead of a few ms).
"""

from __future__ import annotations

import threading
import time

from flask import Flask, current_app, g
from sqlalchemy.engine import Engine
from sqlmodel import Session

from curation.store.migrate import check_schema


def init_app(app: Flask, engine: Engine) -> None:
    """Check the schema (refusing to start with :class:`SchemaError` when it is out of date),
    keep the engine on the app, and close each request's session at teardown."""
    try:
        check_schema(engine)  # raises SchemaError("... run `golden admin db upgrade`")
    except Exception:
        engine.dispose()
        raise
    app.extensions["golden_engine"] = engine
    app.extensions["golden_stats"] = PlannerStats(engine)
    app.teardown_appcontext(close_db)


def engine() -> Engine:
    return current_app.extensions["golden_engine"]


def get_db() -> Session:
    """The request's session (created on first use), on one connection held for the whole request:
    its transactions follow one another on that connection instead of taking one from the pool
    each (on PostgreSQL each checkout is also a round trip to ping the server)."""
    if "db" not in g:
        conn = engine().connect()
        g.db = Session(bind=conn, expire_on_commit=False)
        g.db_conn = conn
    return g.db


def close_db(_exc: BaseException | None = None) -> None:
    db = g.pop("db", None)
    conn = g.pop("db_conn", None)
    if db is not None:
        db.close()
        if conn is not None:
            conn.close()
        current_app.extensions["golden_stats"].maybe_refresh()


class PlannerStats:
    """Refresh SQLite's planner statistics now and then (PostgreSQL's autovacuum does it there)."""

    EVERY_SECONDS = 300
    ANALYSIS_LIMIT = 1000  # rows sampled per index: ~30 ms on a store of 200,000 rows

    def __init__(self, engine: Engine):
        self.engine = engine
        self.enabled = engine.dialect.name == "sqlite"
        self.last = 0.0
        self.lock = threading.Lock()
        self.refresh()

    def refresh(self) -> None:
        if not self.enabled or not self.lock.acquire(blocking=False):
            return
        try:
            with self.engine.connect() as conn:
                conn.exec_driver_sql(f"PRAGMA analysis_limit={self.ANALYSIS_LIMIT}")
                conn.exec_driver_sql("ANALYZE")
                conn.commit()
            self.last = time.monotonic()
        finally:
            self.lock.release()

    def maybe_refresh(self) -> None:
        if self.enabled and time.monotonic() - self.last > self.EVERY_SECONDS:
            self.refresh()
