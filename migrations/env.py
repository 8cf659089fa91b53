"""Alembic environment for golden's store. The schema's one source is ``curation.store.models``.

Run through ``golden db upgrade`` (which hands over a connection), or with the ``alembic`` command
from the repository root (``alembic.ini``), which uses ``DATABASE_URL`` or golden.db.
"""

from __future__ import annotations

from alembic import context
from sqlmodel import SQLModel

import curation.store.models  # noqa: F401 - imported for its effect: registers the tables on SQLModel.metadata
from curation.store.engine import make_engine

config = context.config
target_metadata = SQLModel.metadata


def _configure(connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",  # SQLite alters tables by copying them
        compare_type=True,
    )


def run_migrations_offline() -> None:
    context.configure(
        url=config.get_main_option("sqlalchemy.url"),
        target_metadata=target_metadata,
        literal_binds=True,
        dialect_opts={"paramstyle": "named"},
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _configure(connection)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = make_engine(config.get_main_option("sqlalchemy.url") or None)
    try:
        with engine.connect() as conn:
            _configure(conn)
            with context.begin_transaction():
                context.run_migrations()
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
