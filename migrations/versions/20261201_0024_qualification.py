"""qualification: each judge's attempts at a project's qualification (``qualificationattempt``: attempt
number, pairs, pass mark, started/finished, exact answers, passed, the lead who granted it) and
their pairs and answers (``qualificationanswer``), kept apart from the pool's labels

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-01 17:30:00

The qualification settings (number of pairs, pass mark, retries) are columns of ``project`` from
revision 0023.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = '0024'
down_revision: str | None = '0023'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('qualificationattempt',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('project_id', sa.Integer(), nullable=False),
    sa.Column('judge_id', sa.Integer(), nullable=False),
    sa.Column('attempt', sa.Integer(), nullable=False),
    sa.Column('pairs', sa.Integer(), nullable=False),
    sa.Column('pass_mark', sa.Float(), nullable=False),
    sa.Column('started_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('finished_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    sa.Column('correct', sa.Integer(), nullable=True),
    sa.Column('passed', sa.Boolean(), nullable=True),
    sa.Column('granted_by_id', sa.Integer(), nullable=True),
    sa.ForeignKeyConstraint(['granted_by_id'], ['user.id'], ),
    sa.ForeignKeyConstraint(['judge_id'], ['user.id'], ),
    sa.ForeignKeyConstraint(['project_id'], ['project.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('project_id', 'judge_id', 'attempt')
    )
    with op.batch_alter_table('qualificationattempt', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_qualificationattempt_judge_id'), ['judge_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_qualificationattempt_project_id'), ['project_id'], unique=False)

    op.create_table('qualificationanswer',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('attempt_id', sa.Integer(), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('known_answer_id', sa.Integer(), nullable=False),
    sa.Column('pair_id', sa.Integer(), nullable=False),
    sa.Column('grade', sa.Integer(), nullable=True),
    sa.Column('exact', sa.Boolean(), nullable=True),
    sa.Column('answered_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    sa.ForeignKeyConstraint(['attempt_id'], ['qualificationattempt.id'], ),
    sa.ForeignKeyConstraint(['known_answer_id'], ['knownanswer.id'], ),
    sa.ForeignKeyConstraint(['pair_id'], ['poolpair.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('attempt_id', 'pair_id'),
    sa.UniqueConstraint('attempt_id', 'position')
    )
    with op.batch_alter_table('qualificationanswer', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_qualificationanswer_attempt_id'), ['attempt_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('qualificationanswer', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_qualificationanswer_attempt_id'))
    op.drop_table('qualificationanswer')
    with op.batch_alter_table('qualificationattempt', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_qualificationattempt_project_id'))
        batch_op.drop_index(batch_op.f('ix_qualificationattempt_judge_id'))
    op.drop_table('qualificationattempt')
