"""queue counts: each judge's assignment rows by project and kind, open and skipped, kept by
triggers on ``assignment`` (the judging page's progress on every answer)

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-30 09:45:00

The counts are kept by the database, not by golden's code, so that every writer of assignments
(assigning, the stale move, decisive releases, imports, a lead's tools, SQL by hand) keeps them
right. A later migration that rebuilds ``assignment`` on SQLite (``batch_alter_table`` copies the
table) drops its triggers: it must create them again (``create_triggers``); tests/judge/test_direct.py
checks they are there at head.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = '0020'
down_revision: str | None = '0019'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# (row) adds one row to the counts of (judge, project, kind); the SQL is dialect-neutral but for
# the boolean casts PostgreSQL needs.
_OPEN = "({r}.done_at IS NULL AND NOT {r}.skipped)"
_SKIPPED = "({r}.done_at IS NULL AND {r}.skipped)"
_COLUMNS = "judge_id, project_id, kind, done_at, skipped"


def _sqlite_add(r: str, sign: str) -> str:
    if sign == "+":
        return (f"INSERT INTO queuecount (judge_id, project_id, kind, total, unanswered, skipped) "
                f"VALUES ({r}.judge_id, {r}.project_id, {r}.kind, 1, {_OPEN.format(r=r)}, {_SKIPPED.format(r=r)}) "
                "ON CONFLICT (judge_id, project_id, kind) DO UPDATE SET total = total + 1, "
                "unanswered = unanswered + excluded.unanswered, skipped = skipped + excluded.skipped;")
    return (f"UPDATE queuecount SET total = total - 1, unanswered = unanswered - {_OPEN.format(r=r)}, "
            f"skipped = skipped - {_SKIPPED.format(r=r)} "
            f"WHERE judge_id = {r}.judge_id AND project_id = {r}.project_id AND kind = {r}.kind;")


def create_triggers(bind) -> None:
    """The triggers that keep ``queuecount`` (SQLite: three; PostgreSQL: one function, one trigger)."""
    if bind.dialect.name == "sqlite":
        op.execute(f"CREATE TRIGGER queuecount_insert AFTER INSERT ON assignment BEGIN {_sqlite_add('NEW', '+')} END")
        op.execute(f"CREATE TRIGGER queuecount_delete AFTER DELETE ON assignment BEGIN {_sqlite_add('OLD', '-')} END")
        op.execute(f"CREATE TRIGGER queuecount_update AFTER UPDATE OF {_COLUMNS} ON assignment "
                   f"BEGIN {_sqlite_add('OLD', '-')} {_sqlite_add('NEW', '+')} END")
        return
    open_, skipped = "(" + _OPEN + ")::int", "(" + _SKIPPED + ")::int"
    op.execute(f"""
CREATE FUNCTION golden_queuecount() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        UPDATE queuecount SET total = total - 1, unanswered = unanswered - {open_.format(r='OLD')},
               skipped = skipped - {skipped.format(r='OLD')}
         WHERE judge_id = OLD.judge_id AND project_id = OLD.project_id AND kind = OLD.kind;
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') THEN
        INSERT INTO queuecount AS q (judge_id, project_id, kind, total, unanswered, skipped)
        VALUES (NEW.judge_id, NEW.project_id, NEW.kind, 1, {open_.format(r='NEW')}, {skipped.format(r='NEW')})
        ON CONFLICT (judge_id, project_id, kind) DO UPDATE SET total = q.total + 1,
               unanswered = q.unanswered + EXCLUDED.unanswered, skipped = q.skipped + EXCLUDED.skipped;
    END IF;
    RETURN NULL;
END
$$""")
    op.execute(f"CREATE TRIGGER queuecount AFTER INSERT OR DELETE OR UPDATE OF {_COLUMNS} ON assignment "
               "FOR EACH ROW EXECUTE FUNCTION golden_queuecount()")


def drop_triggers(bind) -> None:
    if bind.dialect.name == "sqlite":
        for name in ("queuecount_insert", "queuecount_delete", "queuecount_update"):
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
    else:
        op.execute("DROP TRIGGER IF EXISTS queuecount ON assignment")
        op.execute("DROP FUNCTION IF EXISTS golden_queuecount()")


def upgrade() -> None:
    op.create_table('queuecount',
    sa.Column('judge_id', sa.Integer(), nullable=False),
    sa.Column('project_id', sa.Integer(), nullable=False),
    sa.Column('kind', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('total', sa.Integer(), nullable=False),
    sa.Column('unanswered', sa.Integer(), nullable=False),
    sa.Column('skipped', sa.Integer(), nullable=False),
    sa.PrimaryKeyConstraint('judge_id', 'project_id', 'kind')
    )
    bind = op.get_bind()
    cast = "" if bind.dialect.name == "sqlite" else "::int"
    op.execute(
        "INSERT INTO queuecount (judge_id, project_id, kind, total, unanswered, skipped) "
        f"SELECT judge_id, project_id, kind, count(*), sum({_OPEN.format(r='assignment')}{cast}), "
        f"sum({_SKIPPED.format(r='assignment')}{cast}) FROM assignment GROUP BY judge_id, project_id, kind")
    create_triggers(bind)


def downgrade() -> None:
    drop_triggers(op.get_bind())
    op.drop_table('queuecount')
