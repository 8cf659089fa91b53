"""One database session per request, opened on first use and closed at teardown."""

from __future__ import annotations

from flask import Flask, current_app, g
from sqlalchemy.engine import Engine
from sqlmodel import Session

from curation.migrate import SchemaError, check_schema  # noqa: F401 - SchemaError re-exported
from curation.store import session as new_session


def init_app(app: Flask, engine: Engine) -> None:
    """Check the schema (refusing to start with :class:`SchemaError` when it is out of date),
    keep the engine on the app, and close each request's session at teardown."""
    try:
        check_schema(engine)  # raises SchemaError("... run `golden db upgrade`")
    except Exception:
        engine.dispose()
        raise
    app.extensions["golden_engine"] = engine
    app.teardown_appcontext(close_db)


def engine() -> Engine:
    return current_app.extensions["golden_engine"]


def get_db() -> Session:
    """The request's session (created on first use)."""
    if "db" not in g:
        g.db = new_session(engine())
    return g.db


def close_db(_exc: BaseException | None = None) -> None:
    db = g.pop("db", None)
    if db is not None:
        db.close()
