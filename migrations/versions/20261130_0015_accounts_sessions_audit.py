"""accounts and sessions: session versions, login sessions, login throttling, the audit trail and
the store's own secret key

Revision ID: 0015
Revises: 0001
Create Date: 2026-11-30 06:30:00
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = '0015'
down_revision: str | None = '0001'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('loginthrottle',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('key', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('failures', sa.Integer(), nullable=False),
    sa.Column('window_start', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    sa.Column('last_failure_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    sa.Column('locked_until', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    sa.Column('lockouts', sa.Integer(), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('loginthrottle', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_loginthrottle_key'), ['key'], unique=True)

    settings = op.create_table('storesetting',
    sa.Column('key', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('value', sa.Text(), nullable=False),
    sa.PrimaryKeyConstraint('key')
    )
    # The key that signs this store's session cookies, made with the store: a cookie of another store
    # (another key) is refused. GOLDEN_SECRET_KEY, when set, is used instead.
    op.bulk_insert(settings, [{'key': 'secret_key', 'value': secrets.token_hex(32)}])

    op.create_table('loginsession',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('token_hash', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('last_seen_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('address', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
    sa.Column('user_agent', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
    sa.ForeignKeyConstraint(['user_id'], ['user.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('loginsession', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_loginsession_token_hash'), ['token_hash'], unique=True)
        batch_op.create_index(batch_op.f('ix_loginsession_user_id'), ['user_id'], unique=False)

    op.create_table('auditevent',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('action', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('actor', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
    sa.Column('actor_id', sa.Integer(), nullable=True),
    sa.Column('target', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
    sa.Column('project_id', sa.Integer(), nullable=True),
    sa.Column('address', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
    sa.Column('detail', sa.Text(), nullable=True),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('auditevent', schema=None) as batch_op:
        batch_op.create_index('ix_auditevent_action_at', ['action', 'at'], unique=False)
        batch_op.create_index(batch_op.f('ix_auditevent_at'), ['at'], unique=False)

    # Existing users start at version 0, as new ones do.
    with op.batch_alter_table('user', schema=None) as batch_op:
        batch_op.add_column(sa.Column('session_version', sa.Integer(), server_default='0', nullable=False))


def downgrade() -> None:
    with op.batch_alter_table('user', schema=None) as batch_op:
        batch_op.drop_column('session_version')

    with op.batch_alter_table('auditevent', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_auditevent_at'))
        batch_op.drop_index('ix_auditevent_action_at')

    op.drop_table('auditevent')
    with op.batch_alter_table('loginsession', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_loginsession_user_id'))
        batch_op.drop_index(batch_op.f('ix_loginsession_token_hash'))

    op.drop_table('loginsession')
    op.drop_table('storesetting')
    with op.batch_alter_table('loginthrottle', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_loginthrottle_key'))

    op.drop_table('loginthrottle')
