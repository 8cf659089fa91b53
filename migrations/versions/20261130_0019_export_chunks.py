"""export archive in chunks: an export version's frozen zip as rows of (version, chunk no, bytes)

Revision ID: 0019
Revises: 0016
Create Date: 2026-11-30 09:30:00

Before, the zip was one value (``exportversion.archive``), held whole in memory whenever it was
stored or read. The upgrade moves each stored zip into ``exportchunk`` rows of 1 MiB, read from
the old value piece by piece (``substr`` on SQLite, ``substring`` on PostgreSQL), and records its
size and sha256 on the version; the downgrade puts the chunks back together into one value.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = '0019'
down_revision: str | None = '0016'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

CHUNK = 1 << 20  # as curation.store.archives.CHUNK_SIZE when this revision was written


def _drop_column(table: str, column: str) -> None:
    # SQLite (3.35+) drops a column in place; alembic's batch mode would copy the table, and dropping
    # the old copy of exportversion is refused while exportchunk rows refer to it (foreign keys on).
    if op.get_bind().dialect.name == "sqlite":
        op.execute(f'ALTER TABLE {table} DROP COLUMN {column}')
    else:
        op.drop_column(table, column)


def upgrade() -> None:
    op.create_table('exportchunk',
    sa.Column('version_id', sa.Integer(), nullable=False),
    sa.Column('no', sa.Integer(), nullable=False),
    sa.Column('data', sa.LargeBinary(), nullable=False),
    sa.ForeignKeyConstraint(['version_id'], ['exportversion.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('version_id', 'no')
    )
    op.add_column('exportversion', sa.Column('archive_bytes', sa.BigInteger(), nullable=True))
    op.add_column('exportversion', sa.Column('archive_sha256', sqlmodel.sql.sqltypes.AutoString(), nullable=True))
    conn = op.get_bind()
    sqlite = conn.dialect.name == "sqlite"
    size_of = "length(archive)" if sqlite else "octet_length(archive)"
    piece = ("substr(archive, :start, :n)" if sqlite else "substring(archive from :start for :n)")
    rows = conn.execute(sa.text(f"SELECT id, {size_of} FROM exportversion WHERE archive IS NOT NULL ORDER BY id"))
    chunk = sa.table('exportchunk', sa.column('version_id'), sa.column('no'), sa.column('data', sa.LargeBinary))
    for version_id, size in rows.fetchall():
        digest = hashlib.sha256()
        for no, start in enumerate(range(0, size, CHUNK)):
            data = bytes(conn.execute(sa.text(f"SELECT {piece} FROM exportversion WHERE id = :id"),
                                      {"start": start + 1, "n": CHUNK, "id": version_id}).scalar_one())
            digest.update(data)
            conn.execute(chunk.insert().values(version_id=version_id, no=no, data=data))
        conn.execute(sa.text("UPDATE exportversion SET archive_bytes = :size, archive_sha256 = :sha WHERE id = :id"),
                     {"size": size, "sha": digest.hexdigest(), "id": version_id})
    _drop_column('exportversion', 'archive')


def downgrade() -> None:
    op.add_column('exportversion', sa.Column('archive', sa.LargeBinary(), nullable=True))
    conn = op.get_bind()
    ids = [r[0] for r in conn.execute(sa.text("SELECT id FROM exportversion WHERE archive_bytes IS NOT NULL"))]
    version = sa.table('exportversion', sa.column('id'), sa.column('archive', sa.LargeBinary))
    for version_id in ids:
        parts = conn.execute(sa.text("SELECT data FROM exportchunk WHERE version_id = :id ORDER BY no"),
                             {"id": version_id}).scalars()
        conn.execute(version.update().where(version.c.id == version_id).values(archive=b"".join(parts)))
    _drop_column('exportversion', 'archive_sha256')
    _drop_column('exportversion', 'archive_bytes')
    op.drop_table('exportchunk')
