"""pending export versions: ``exportversion.pending_folder`` (the folder an export is writing) and
``pending_owner`` (the host and process writing it)

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-01 14:30:00

An export records its version (with the frozen zip) before the version's folder appears, with the
absolute path of that folder in ``pending_folder``; once the folder is in place the column is set
to NULL in a second transaction; ``pending_owner`` (``host:pid``) tells another export whether the
writer is still running. A row still pending after an interruption is settled by the next
export of the project (completed when its folder is there with the stored files, removed when it
never appeared), so the folders and the store agree (curation/export/versions.py). Versions
exported before this revision are complete: the column is NULL.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = '0021'
down_revision: str | None = '0020'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column('exportversion', sa.Column('pending_folder', sqlmodel.sql.sqltypes.AutoString(), nullable=True))
    op.add_column('exportversion', sa.Column('pending_owner', sqlmodel.sql.sqltypes.AutoString(), nullable=True))


def downgrade() -> None:
    conn = op.get_bind()
    # A pending version was never published: it goes, with its chunks, as the next export would remove it.
    conn.execute(sa.text("DELETE FROM exportchunk WHERE version_id IN "
                         "(SELECT id FROM exportversion WHERE pending_folder IS NOT NULL)"))
    conn.execute(sa.text("DELETE FROM exportversion WHERE pending_folder IS NOT NULL"))
    for column in ('pending_owner', 'pending_folder'):
        if conn.dialect.name == "sqlite":
            op.execute(f'ALTER TABLE exportversion DROP COLUMN {column}')
        else:
            op.drop_column('exportversion', column)
