"""Settings kept in the store itself, shared by every ``golden serve`` process on it.

The one there is so far: the key that signs the judging app's session cookies. Migration 0015
(``golden admin db upgrade``) writes a random one when the store is made, so two stores never share a key
and a cookie signed for one is refused by another. ``GOLDEN_SECRET_KEY`` overrides it for
deployments that manage their secrets (:func:`judging_app.create_app`).
"""

from __future__ import annotations

import secrets

from sqlalchemy import insert, select
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from curation.store.models import StoreSetting

SECRET_KEY = "secret_key"
_TABLE = StoreSetting.__table__


def store_secret(engine: Engine) -> str:
    """The store's cookie-signing key; made (32 random bytes, hex) if the store has none yet, e.g.
    a store migrated by hand. Safe when several servers start at once: the first insert wins."""
    with engine.connect() as conn:
        value = conn.execute(select(_TABLE.c.value).where(_TABLE.c.key == SECRET_KEY)).scalar()
    if value:
        return value
    try:
        with engine.begin() as conn:
            conn.execute(insert(_TABLE).values(key=SECRET_KEY, value=secrets.token_hex(32)))
    except IntegrityError:
        pass  # another process made it first
    with engine.connect() as conn:
        return conn.execute(select(_TABLE.c.value).where(_TABLE.c.key == SECRET_KEY)).scalar_one()
