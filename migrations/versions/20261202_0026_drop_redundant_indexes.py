"""drop redundant indexes: the single-column indexes whose column already starts a unique constraint
or another index, and ``pairview.project_id``'s, which nothing reads by; one index of the judgments
by pair and judge where there were two

Revision ID: 0026
Revises: 0025
Create Date: 2026-12-02 20:10:00

Every index is one more B-tree that each insert writes (and the WAL holds a page of each per
commit). A judge's answer inserts a judgment and a pair view and updates an assignment: 17.8 WAL
pages an answer on the judging bench's store before this revision, 14.6 after. A database reads
``(a, b)``'s index for a condition on ``a`` alone, foreign-key checks included (SQLite and
PostgreSQL alike), so nothing loses an index it used. ``pairview.project_id`` starts no other index
and is read only together with ``judge_id`` (``ix_pairview_judge_shown``); projects are never
deleted, so no foreign-key check needs it either.

The judgments had ``(pair_id)`` for a pair's labels and ``(judge_id, pair_id, id)`` for a judge's
latest label of a pair. ``ix_judgment_pair_judge``, ``(pair_id, judge_id, id)``, serves both (the
equalities on pair and judge, then the latest id); a judge's labels alone are read through
``ix_judgment_judge_project`` ``(judge_id, project_id, id)`` or the ``(judge_id, client_token)``
unique constraint.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = '0026'
down_revision: str | None = '0025'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: (table, column) of each index dropped; each was named ix_<table>_<column>. The comment says
#: which unique constraint or index starts with the same column.
DROPPED = (
    ('query', 'project_id'),  # ix_query_project_status, uq (project_id, qid)
    ('document', 'project_id'),  # ix_document_project_excluded, uq (project_id, docid)
    ('run', 'project_id'),  # uq (project_id, name)
    ('poolpair', 'query_id'),  # uq (query_id, document_id)
    ('guidelinesversion', 'project_id'),  # uq (project_id, version)
    ('queryneed', 'query_id'),  # uq (query_id, version)
    ('assignment', 'pair_id'),  # uq (pair_id, judge_id)
    ('assignment', 'judge_id'),  # ix_assignment_queue (judge_id, project_id, done_at, ...)
    ('pairview', 'project_id'),  # none: never read alone (see above)
    ('judgment', 'judge_id'),  # ix_judgment_judge_pair, ix_judgment_judge_project, uq (judge_id, client_token)
    ('qualificationattempt', 'project_id'),  # uq (project_id, judge_id, attempt)
    ('qualificationanswer', 'attempt_id'),  # uq (attempt_id, position), uq (attempt_id, pair_id)
    ('exportversion', 'project_id'),  # uq (project_id, name)
    ('decisivecomparison', 'project_id'),  # uq (project_id, run_a, run_b, metric)
)


#: The judgments' indexes by pair and judge: the two before, the one after.
JUDGMENT_BEFORE = (('ix_judgment_pair_id', ['pair_id']), ('ix_judgment_judge_pair', ['judge_id', 'pair_id', 'id']))
JUDGMENT_AFTER = ('ix_judgment_pair_judge', ['pair_id', 'judge_id', 'id'])


def upgrade() -> None:
    op.create_index(JUDGMENT_AFTER[0], 'judgment', JUDGMENT_AFTER[1], unique=False)
    for name, _columns in JUDGMENT_BEFORE:
        op.drop_index(name, table_name='judgment')
    for table, column in DROPPED:
        op.drop_index(f'ix_{table}_{column}', table_name=table)


def downgrade() -> None:
    for table, column in DROPPED:
        op.create_index(f'ix_{table}_{column}', table, [column], unique=False)
    for name, columns in JUDGMENT_BEFORE:
        op.create_index(name, 'judgment', columns, unique=False)
    op.drop_index(JUDGMENT_AFTER[0], table_name='judgment')
