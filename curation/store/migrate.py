"""Schema migrations with Alembic: upgrade a store to the code's revision, and refuse to work on
an out-of-date one.

The revisions live in ``migrations/`` at the top of the repository; they are generated from the
SQLModel tables in :mod:`curation.store.models` (``alembic revision --autogenerate``), one linear history.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import text
from sqlalchemy.engine import Engine, make_url

from curation.store.engine import DEFAULT_SQLITE, default_url, make_engine, normalize_url

# Inside the curation package when golden is installed from a wheel (pyproject.toml puts it there), else
# at the top of the source checkout.
_PACKAGED = Path(__file__).resolve().parent.parent / "migrations"  # curation/migrations in a wheel
MIGRATIONS = _PACKAGED if _PACKAGED.is_dir() else Path(__file__).resolve().parents[2] / "migrations"


class SchemaError(RuntimeError):
    """The store's schema does not match the code; the message says which command to run."""


def alembic_config(url: str | None = None) -> Config:
    """An Alembic config pointing at ``migrations/`` (and at ``url`` when given)."""
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    if url:
        cfg.set_main_option("sqlalchemy.url", normalize_url(url).replace("%", "%%"))
    return cfg


def head_revision() -> str:
    """The revision the code expects (the single head of ``migrations/``)."""
    heads = ScriptDirectory.from_config(alembic_config()).get_heads()
    if len(heads) != 1:
        raise SchemaError(f"migrations/ has {len(heads)} heads ({', '.join(heads)}): merge them into one")
    return heads[0]


def current_revision(engine: Engine) -> str | None:
    """The revision the store is at (None for an empty database)."""
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


# The key of the PostgreSQL advisory lock `golden admin db upgrade` holds while it migrates: a 64-bit number
# no other application on the server is likely to use (the first 8 bytes of sha256("golden db upgrade")).
UPGRADE_LOCK_KEY = int.from_bytes(hashlib.sha256(b"golden db upgrade").digest()[:8], "big", signed=True)


def lock_for_upgrade(conn) -> None:
    """On PostgreSQL, wait for and then hold, until the transaction ends, the store's migration lock
    (a transaction-level advisory lock, ``pg_advisory_xact_lock``): two servers starting together
    migrate one after the other, and the second finds the schema at head. A SQLite store lives on one
    machine, where `golden admin db upgrade` is run once before the servers start."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": UPGRADE_LOCK_KEY})


def upgrade(engine: Engine, revision: str = "head") -> tuple[str | None, str]:
    """Migrate the store to ``revision`` (default: head); returns (revision before, revision after).
    Safe to run from several processes at once (:func:`lock_for_upgrade`): one migrates, the others
    wait and then find nothing left to do."""
    cfg = alembic_config()
    with engine.begin() as conn:
        lock_for_upgrade(conn)
        before = MigrationContext.configure(conn).get_current_revision()
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)
    return before, current_revision(engine)


def schema_problem(engine: Engine) -> str | None:
    """None when the store is at the head revision, else what is wrong and the command to run."""
    current = current_revision(engine)
    head = head_revision()
    if current == head:
        return None
    where = engine.url.render_as_string(hide_password=True)
    # Name the store in the command for a SQLite file other than ./golden.db; a server database
    # usually comes from DATABASE_URL (and its password must not be printed).
    default = Path(DEFAULT_SQLITE).resolve()
    is_other_file = engine.url.get_backend_name() == "sqlite" and Path(engine.url.database or "").resolve() != default
    flag = f" --db {where}" if is_other_file else ""
    if current is None:
        return f"the database at {where} has no golden schema yet: run `golden admin db upgrade{flag}`"
    return (
        f"the database at {where} is at schema revision {current}, this golden needs {head}: "
        f"run `golden admin db upgrade{flag}`"
    )


def check_schema(engine: Engine) -> None:
    """Raise :class:`SchemaError` unless the store is at the head revision; the message says what
    to run (``golden admin db upgrade``)."""
    problem = schema_problem(engine)
    if problem:
        raise SchemaError(problem)


def open_store(url: str | None = None, *, check: bool = True, refuse_missing: bool | None = None,
               **engine_kwargs) -> Engine:
    """An engine for ``url`` (default: ``DATABASE_URL`` or golden.db), checked to be at head.

    A SQLite file that does not exist is refused (SchemaError, with the command that creates the
    store) before connecting, which would leave an empty file behind; ``refuse_missing`` sets this
    apart from ``check`` (default: the same)."""
    if check if refuse_missing is None else refuse_missing:
        parsed = make_url(normalize_url(url or default_url()))
        database = parsed.database or ""
        if parsed.get_backend_name() == "sqlite" and database not in ("", ":memory:") and not Path(database).exists():
            raise SchemaError(f"there is no store at {database}: create it with "
                              f"`golden admin db upgrade --db {database}`")
    engine = make_engine(url, **engine_kwargs)
    if check:
        try:
            check_schema(engine)
        except Exception:
            engine.dispose()
            raise
    return engine
