"""The judge's operations, atomic under concurrency: show a pair, record a label, go back.

Every function here takes the judge's identity and only ever reads or writes that judge's own
assignments; what it returns (:class:`Task`, :class:`Progress`, :class:`SubmitResult`) carries no
provenance (which system retrieved a document, its rank) and no other judge's label.

How it stays correct with many judges at once, on SQLite and PostgreSQL alike:

* Showing a pair issues a one-time token (a :class:`~curation.store.models.PairView` row). A judgment is
  recorded with its token under the unique constraint ``(judge_id, client_token)``, so a double
  click or a resubmitted form records one judgment and returns it again.
* Recording a label first updates the judge's own assignment row (``WHERE judge_id = me``); that
  update takes the row's write lock, so it serialises with the compare-and-set that moves a stale
  pair to another judge (``WHERE judge_id = old AND done_at IS NULL``): a main pair is either
  labelled by its owner or moved, never both. A main pair has one assignment row in all
  (``exclusive_pair_id`` unique), so two judges can never both be given it.
* The history is append-only: relabelling adds a row; the latest row of (pair, judge) counts.
* On PostgreSQL an answer and the next pair's token are sent as a pipeline, before the results of
  earlier statements are known (:func:`curation.store.direct.batch`). So every write whose effect
  depends on an earlier outcome is guarded in SQL: the judgment and the token are inserted only
  while the assignment is still the judge's (``INSERT ... SELECT ... WHERE EXISTS``, or on
  PostgreSQL the judgment inserted from the row the answer's UPDATE returns, in one statement), and
  nothing is written for a pair that was moved meanwhile.

The package's three parts: ``_records`` (what a judge is shown, what an answer returns, the
errors), ``_statements`` (the prebuilt Core statements, which share the table aliases and the rule
of which pairs are retired (``_RETIRED``), so that showing, submitting, the progress count and the
stale move agree on the same rows; and one :class:`~curation.judge.judging._statements.Plan` per
database for the statements that differ between SQLite and PostgreSQL) and ``_operations`` (the
functions below). Import their names from here.
"""

from curation.judge.judging._operations import (  # noqa: F401 - the package's names
    end_reads,
    judge_project,
    judge_projects,
    next_task,
    previous_task,
    progress,
    release_stale,
    submit,
    submit_and_next,
    task_at,
    undo_last,
    work_released,
)
from curation.judge.judging._records import (  # noqa: F401
    DEFAULT_STALE_AFTER,
    MAX_NOTE,
    AccessDenied,
    Answered,
    JudgeProject,
    PairReassigned,
    Progress,
    SubmitResult,
    Task,
    TooSoon,
)
