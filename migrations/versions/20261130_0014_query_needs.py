"""query information needs (description, narrative), versioned; the version a judgment was made under

Revision ID: 0014
Revises: 0015
Create Date: 2026-11-30 06:40:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = '0014'
down_revision: str | None = '0015'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('queryneed',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('project_id', sa.Integer(), nullable=False),
    sa.Column('query_id', sa.Integer(), nullable=False),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.Column('description', sa.Text(), nullable=True),
    sa.Column('narrative', sa.Text(), nullable=True),
    sa.Column('note', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
    sa.Column('created_by_id', sa.Integer(), nullable=True),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.ForeignKeyConstraint(['created_by_id'], ['user.id'], ),
    sa.ForeignKeyConstraint(['project_id'], ['project.id'], ),
    sa.ForeignKeyConstraint(['query_id'], ['query.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('query_id', 'version')
    )
    with op.batch_alter_table('queryneed', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_queryneed_project_id'), ['project_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_queryneed_query_id'), ['query_id'], unique=False)
    with op.batch_alter_table('pairview', schema=None) as batch_op:
        batch_op.add_column(sa.Column('need_version_id', sa.Integer(), nullable=True))
        batch_op.create_foreign_key('fk_pairview_need_version_id_queryneed', 'queryneed', ['need_version_id'], ['id'])
    with op.batch_alter_table('judgment', schema=None) as batch_op:
        batch_op.add_column(sa.Column('need_version_id', sa.Integer(), nullable=True))
        batch_op.create_foreign_key('fk_judgment_need_version_id_queryneed', 'queryneed', ['need_version_id'], ['id'])


def downgrade() -> None:
    with op.batch_alter_table('judgment', schema=None) as batch_op:
        batch_op.drop_constraint('fk_judgment_need_version_id_queryneed', type_='foreignkey')
        batch_op.drop_column('need_version_id')
    with op.batch_alter_table('pairview', schema=None) as batch_op:
        batch_op.drop_constraint('fk_pairview_need_version_id_queryneed', type_='foreignkey')
        batch_op.drop_column('need_version_id')
    with op.batch_alter_table('queryneed', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_queryneed_query_id'))
        batch_op.drop_index(batch_op.f('ix_queryneed_project_id'))
    op.drop_table('queryneed')
