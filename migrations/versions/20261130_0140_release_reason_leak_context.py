"""release reason and leak context: why a lead released the held-back pairs without a usable
agreement; the chunk's text around a leak finding's match

Revision ID: 0140
Revises: 0014
Create Date: 2026-11-30 06:30:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0140'
down_revision: str | None = '0014'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('project') as batch:
        batch.add_column(sa.Column('released_reason', sa.Text(), nullable=True))
    with op.batch_alter_table('leakfinding') as batch:
        batch.add_column(sa.Column('context_before', sa.Text(), nullable=True))
        batch.add_column(sa.Column('context_after', sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('leakfinding') as batch:
        batch.drop_column('context_after')
        batch.drop_column('context_before')
    with op.batch_alter_table('project') as batch:
        batch.drop_column('released_reason')
