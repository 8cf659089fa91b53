"""project minimum answer time: ``project.min_answer_ms``, the least time in milliseconds between
showing a pair and accepting its answer, set per project by a lead (``golden project settings``, the
lead's Settings page)

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-01 17:30:00

NULL (every project made before this revision, and a new one until a lead sets it) means the
server's own minimum: ``GOLDEN_MIN_ANSWER_MS``, default 250.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0025'
down_revision: str | None = '0024'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column('project', sa.Column('min_answer_ms', sa.Integer(), nullable=True))


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute('ALTER TABLE project DROP COLUMN min_answer_ms')
    else:
        op.drop_column('project', 'min_answer_ms')
