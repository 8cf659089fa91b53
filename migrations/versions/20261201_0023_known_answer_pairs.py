"""known-answer pairs: the pairs a lead fixed the accepted grade(s) of (``knownanswer``), the mark
that keeps a judge's answers on them apart from the pool's labels (``judgment.purpose``), the holds
of judges found below the bar (``knownanswerhold``), and the project's settings: known-answer rate,
accuracy bar, hold-below-bar, and the qualification settings (number of pairs, pass mark, retries)

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-01 17:35:00

Known-answer queue rows are assignment rows of kind "known": no change to ``assignment`` (so its
queue-count triggers stay as they are).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = '0023'
down_revision: str | None = '0022'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('knownanswer',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('project_id', sa.Integer(), nullable=False),
    sa.Column('pair_id', sa.Integer(), nullable=False),
    sa.Column('accepted_json', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('reason', sa.Text(), nullable=True),
    sa.Column('source', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('adjudication_id', sa.Integer(), nullable=True),
    sa.Column('created_by_id', sa.Integer(), nullable=True),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('retired_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    sa.Column('retired_by_id', sa.Integer(), nullable=True),
    sa.ForeignKeyConstraint(['adjudication_id'], ['adjudication.id'], ),
    sa.ForeignKeyConstraint(['created_by_id'], ['user.id'], ),
    sa.ForeignKeyConstraint(['pair_id'], ['poolpair.id'], ),
    sa.ForeignKeyConstraint(['project_id'], ['project.id'], ),
    sa.ForeignKeyConstraint(['retired_by_id'], ['user.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('knownanswer', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_knownanswer_pair_id'), ['pair_id'], unique=True)
        batch_op.create_index(batch_op.f('ix_knownanswer_project_id'), ['project_id'], unique=False)

    op.create_table('knownanswerhold',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('project_id', sa.Integer(), nullable=False),
    sa.Column('judge_id', sa.Integer(), nullable=False),
    sa.Column('held_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('answers', sa.Integer(), nullable=False),
    sa.Column('exact', sa.Float(), nullable=True),
    sa.Column('released_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    sa.Column('released_by_id', sa.Integer(), nullable=True),
    sa.Column('released_answers', sa.Integer(), nullable=True),
    sa.ForeignKeyConstraint(['judge_id'], ['user.id'], ),
    sa.ForeignKeyConstraint(['project_id'], ['project.id'], ),
    sa.ForeignKeyConstraint(['released_by_id'], ['user.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('knownanswerhold', schema=None) as batch_op:
        batch_op.create_index('ix_knownanswerhold_judge', ['judge_id', 'project_id', 'released_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_knownanswerhold_project_id'), ['project_id'], unique=False)

    # add_column without a table rebuild on SQLite (no batch): ``judgment`` and ``project`` keep
    # their rows and indexes as they are.
    op.add_column('judgment', sa.Column('purpose', sqlmodel.sql.sqltypes.AutoString(), server_default='pool',
                                        nullable=False))
    for name, type_, default in (
        ('known_answer_rate', sa.Integer(), '0'),
        ('known_answer_bar', sa.Float(), '0.6'),
        ('known_answer_hold', sa.Boolean(), sa.false()),
        ('qualification_pairs', sa.Integer(), '0'),
        ('qualification_pass', sa.Float(), '0.8'),
        ('qualification_retries', sa.Integer(), '1'),
    ):
        op.add_column('project', sa.Column(name, type_, server_default=default, nullable=False))


def _drop_column(table: str, column: str) -> None:
    # SQLite (3.35+) drops a column in place; alembic's batch mode would copy the table, and dropping
    # the old copy of project (or judgment) is refused while other rows refer to it (foreign keys on).
    if op.get_bind().dialect.name == "sqlite":
        op.execute(f'ALTER TABLE {table} DROP COLUMN {column}')
    else:
        op.drop_column(table, column)


def downgrade() -> None:
    for name in ('qualification_retries', 'qualification_pass', 'qualification_pairs', 'known_answer_hold',
                 'known_answer_bar', 'known_answer_rate'):
        _drop_column('project', name)
    _drop_column('judgment', 'purpose')
    with op.batch_alter_table('knownanswerhold', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_knownanswerhold_project_id'))
        batch_op.drop_index('ix_knownanswerhold_judge')
    op.drop_table('knownanswerhold')
    with op.batch_alter_table('knownanswer', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_knownanswer_project_id'))
        batch_op.drop_index(batch_op.f('ix_knownanswer_pair_id'))
    op.drop_table('knownanswer')
