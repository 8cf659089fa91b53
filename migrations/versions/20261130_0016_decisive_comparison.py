"""decisive comparison: the comparisons the decisive judging order serves, and their settlement

Revision ID: 0016
Revises: 0018
Create Date: 2026-11-30 07:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = '0016'
down_revision: str | None = '0018'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('decisivecomparison',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('project_id', sa.Integer(), nullable=False),
    sa.Column('run_a', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('run_b', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('metric', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('tie', sa.Float(), nullable=False),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('settled_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    sa.Column('settled_verdict', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
    sa.Column('settled_share', sa.Float(), nullable=True),
    sa.Column('released_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    sa.Column('released_by_id', sa.Integer(), nullable=True),
    sa.Column('released_pairs', sa.Integer(), nullable=True),
    sa.ForeignKeyConstraint(['project_id'], ['project.id'], ),
    sa.ForeignKeyConstraint(['released_by_id'], ['user.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('project_id', 'run_a', 'run_b', 'metric')
    )
    with op.batch_alter_table('decisivecomparison', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_decisivecomparison_project_id'), ['project_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('decisivecomparison', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_decisivecomparison_project_id'))
    op.drop_table('decisivecomparison')
