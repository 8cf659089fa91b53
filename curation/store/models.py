"""The project store's tables (SQLModel). These classes are the one source of the schema:
Alembic revisions in ``migrations/`` are generated from them.

Identifiers from the outside world (qid, docid, run names) are strings. Provenance that judges must
never see (which system retrieved a pair, at what rank) lives only in ``PoolPair.systems_json``.
A pair's final label is derived from Judgment and Adjudication rows by a stated policy; it is never
stored twice.

Indexes: a column gets an index of its own only when no unique constraint or other index starts
with it (a database uses the longer one's first columns just as well, foreign-key checks included),
and only when something reads by it. Each index is one more B-tree written by every insert: a
judge's answer wrote 17.8 WAL pages before migration 0026 dropped or merged such indexes, 14.6 after.
``tests/store/test_indexes.py`` keeps it so.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import BigInteger, Column, ForeignKey, Index, Integer, LargeBinary, Text, UniqueConstraint
from sqlalchemy import false as sa_false
from sqlmodel import Field, SQLModel

from curation.store.roles import ROLES  # noqa: F401 - the users' roles (User.role), defined with their permissions


def utcnow() -> datetime:
    """Now, timezone-aware in UTC: sqlmodel's datetime columns (UTCDateTime) refuse naive values
    and return aware UTC datetimes on every database."""
    return datetime.now(UTC)


MAIN_BASE = 1_000_000  # queue positions: overlap (calibration) rows below it, main rows from it
KNOWN_KIND = "known"  # Assignment.kind of a known-answer pair mixed into a judge's main queue


class Project(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(index=True, unique=True)
    scale: str = "0-2"  # "binary", "0-2" or "0-3"
    grades_json: str = Field(sa_column=Column(Text, nullable=False))  # [{"grade", "name", "description"}]
    corpus_fingerprint: str | None = None
    queries_sha256: str | None = None
    pool_sha256: str | None = None
    pool_depth: int | None = None
    hold_main: bool = True  # main-pool tasks held back until a lead releases them
    released_at: datetime | None = None
    released_by_id: int | None = Field(default=None, foreign_key="user.id")
    released_agreement: float | None = None
    released_reason: str | None = Field(default=None, sa_column=Column(Text, nullable=True))  # why, when forced
    split_holdout: float | None = None  # `golden export split`: share of each stratum held out (fixed once set)
    split_seed: int | None = None  # `golden export split`: seed of the per-stratum systematic split
    # The least time (ms) between showing a pair and accepting its answer; None: the server's
    # MIN_ANSWER_MS (GOLDEN_MIN_ANSWER_MS, default 250). Set with `golden project settings` or the
    # lead's Settings page.
    min_answer_ms: int | None = None
    created_at: datetime = Field(default_factory=utcnow)
    # Known-answer pairs (KnownAnswer): one item in every ``known_answer_rate`` a judge is shown is a
    # known-answer pair mixed blind into the main queue (0: none); a judge whose exact accuracy on
    # them is shown to be under ``known_answer_bar`` is flagged (curation.judge.known_answer, whose
    # DEFAULT_BAR is the default here: the store cannot import the judge stage, a test checks they
    # agree), and with ``known_answer_hold`` their queue is held until a lead releases it.
    known_answer_rate: int = Field(default=0, sa_column_kwargs={"server_default": "0"})
    known_answer_bar: float = Field(default=0.6, sa_column_kwargs={"server_default": "0.6"})
    known_answer_hold: bool = Field(default=False, sa_column_kwargs={"server_default": sa_false()})
    # Qualification before main work: ``qualification_pairs`` known-answer pairs (0: none), passed
    # with a share of exact answers of at least ``qualification_pass``, ``qualification_retries``
    # further attempts allowed after a failed one.
    qualification_pairs: int = Field(default=0, sa_column_kwargs={"server_default": "0"})
    qualification_pass: float = Field(default=0.8, sa_column_kwargs={"server_default": "0.8"})
    qualification_retries: int = Field(default=1, sa_column_kwargs={"server_default": "1"})


class User(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(index=True, unique=True)
    role: str = "judge"  # one of ROLES
    password_hash: str
    active: bool = True
    created_at: datetime = Field(default_factory=utcnow)
    # Bumped by logout, a password or role change, disable and enable, and "end sessions": every
    # LoginSession made under an older version stops working at its next request.
    session_version: int = Field(default=0, sa_column_kwargs={"server_default": "0"})


class Query(SQLModel, table=True):
    __table_args__ = (
        UniqueConstraint("project_id", "qid"),
        Index("ix_query_project_status", "project_id", "status"),  # finding dropped queries
    )
    id: int | None = Field(default=None, primary_key=True)
    project_id: int = Field(foreign_key="project.id")
    qid: str
    text: str = Field(sa_column=Column(Text, nullable=False))
    stratum_json: str = "{}"  # dimension -> value
    stratum_key: str = ""  # a stable, readable form of the stratum, for grouping
    traffic: float = 0.0
    users: int = 0
    weight: float = 0.0
    stratum_share: float = 0.0
    pii_json: str | None = None  # flags from sampling, e.g. ["email"]
    split: str | None = None  # "tune" or "holdout"
    leak_status: str | None = None  # "clean", "leak", "too_short", None = not checked
    status: str = "active"  # "active", "dropped", "rejudge"


class Document(SQLModel, table=True):
    __table_args__ = (
        UniqueConstraint("project_id", "docid"),
        Index("ix_document_project_excluded", "project_id", "excluded"),  # finding excluded documents
    )
    id: int | None = Field(default=None, primary_key=True)
    project_id: int = Field(foreign_key="project.id")
    docid: str
    title: str | None = None
    url: str | None = None
    text: str = Field(sa_column=Column(Text, nullable=False))
    excluded: bool = False  # excluded from the snapshot by a lead's leak decision


class Run(SQLModel, table=True):
    __table_args__ = (UniqueConstraint("project_id", "name"),)
    id: int | None = Field(default=None, primary_key=True)
    project_id: int = Field(foreign_key="project.id")
    name: str
    sha256: str
    depth: int
    added_at: datetime = Field(default_factory=utcnow)
    # The model the system itself uses (declared by a team: `golden machine declare-model`), so that
    # calibration can warn when a machine judge of the same family ranks it (circularity).
    model: str | None = None


class PoolPair(SQLModel, table=True):
    __table_args__ = (UniqueConstraint("query_id", "document_id"),)
    id: int | None = Field(default=None, primary_key=True)
    project_id: int = Field(foreign_key="project.id", index=True)
    query_id: int = Field(foreign_key="query.id")
    document_id: int = Field(foreign_key="document.id", index=True)
    shuffle_order: int = 0  # seeded shuffle within the query
    systems_json: str = "{}"  # HIDDEN provenance: run name -> rank. Never rendered to judges.
    batch: int = 0  # 0 for the first pool, +1 for each extension
    seed_source: str | None = None  # "ticket" or "click" when the pair came from a seed judgment


class GuidelinesVersion(SQLModel, table=True):
    __table_args__ = (UniqueConstraint("project_id", "version"),)
    id: int | None = Field(default=None, primary_key=True)
    project_id: int = Field(foreign_key="project.id")
    version: int
    text: str = Field(sa_column=Column(Text, nullable=False))
    sha256: str
    note: str | None = None
    created_by_id: int | None = Field(default=None, foreign_key="user.id")
    created_at: datetime = Field(default_factory=utcnow)


class QueryNeed(SQLModel, table=True):
    """A version of a query's information need (what the searcher is after, as TREC topics'
    description and narrative): version 1 from queries.jsonl, later ones written by a lead. The
    latest version of a query is in force; a judgment records the version it was made under."""

    __table_args__ = (UniqueConstraint("query_id", "version"),)
    id: int | None = Field(default=None, primary_key=True)
    project_id: int = Field(foreign_key="project.id", index=True)
    query_id: int = Field(foreign_key="query.id")
    version: int
    description: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    narrative: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    note: str | None = None
    created_by_id: int | None = Field(default=None, foreign_key="user.id")
    created_at: datetime = Field(default_factory=utcnow)


class Assignment(SQLModel, table=True):
    """A pair in a judge's queue. Overlap pairs have one row per judge; a main pair has one owner row,
    which ``exclusive_pair_id`` (unique, set only for main owner rows) enforces in the database, and,
    when the project asks for k judges on a share of the pool, k - 1 more main rows without it."""

    __table_args__ = (
        UniqueConstraint("pair_id", "judge_id"),
        # A judge's open pairs in queue order (done_at IS NULL, then skipped, then position).
        Index("ix_assignment_queue", "judge_id", "project_id", "done_at", "skipped", "position"),
    )
    id: int | None = Field(default=None, primary_key=True)
    project_id: int = Field(foreign_key="project.id", index=True)
    pair_id: int = Field(foreign_key="poolpair.id")
    judge_id: int = Field(foreign_key="user.id")
    kind: str = "main"  # "overlap", "main", or "known" (a known-answer pair mixed into the main queue)
    exclusive_pair_id: int | None = Field(default=None, unique=True)
    position: int = 0  # order in the judge's queue: overlap rows below MAIN_BASE, main rows from it
    # No longer written when a pair is shown (one statement less per answer); when a pair
    # was shown is its PairView row's shown_at. Kept so that older stores need no migration.
    claimed_at: datetime | None = None
    done_at: datetime | None = None  # set when this judge's latest judgment is a label (not a skip)
    skipped: bool = False  # this judge's latest judgment of the pair is a skip: offered again last
    created_at: datetime = Field(default_factory=utcnow)


class QueueCount(SQLModel, table=True):
    """How many assignment rows a judge has in a project, by kind, and how many of them are open
    (not answered, not skipped) and skipped: what the judging page's progress shows on every
    answer, read in one index probe instead of counted over the judge's whole queue. Kept by the
    database itself (triggers on ``assignment``, migration 0020), so every writer of assignments
    keeps it right; ``curation.judge.judging.progress`` reads it."""

    judge_id: int = Field(primary_key=True)
    project_id: int = Field(primary_key=True)
    kind: str = Field(primary_key=True)
    total: int = 0
    unanswered: int = 0  # done_at IS NULL and not skipped
    skipped: int = 0  # done_at IS NULL and skipped


class PairView(SQLModel, table=True):
    """One showing of a pair to its judge, with the one-time token the answer must carry.

    Submitting with a token records at most one judgment (``Judgment.client_token``), so a double
    click or a resubmitted form is harmless; ``shown_at`` and the guidelines version in view are
    taken from here."""

    __table_args__ = (Index("ix_pairview_judge_shown", "judge_id", "project_id", "shown_at"),)
    id: int | None = Field(default=None, primary_key=True)
    token: str = Field(index=True, unique=True)
    project_id: int = Field(foreign_key="project.id")
    assignment_id: int = Field(foreign_key="assignment.id", index=True)
    pair_id: int = Field(foreign_key="poolpair.id")
    judge_id: int = Field(foreign_key="user.id")
    guidelines_version_id: int | None = Field(default=None, foreign_key="guidelinesversion.id")
    need_version_id: int | None = Field(default=None, foreign_key="queryneed.id")  # the query's need in force
    shown_at: datetime = Field(default_factory=utcnow)


JUDGMENT_POOL = "pool"  # Judgment.purpose of a label of the pool: the only ones that count as labels
JUDGMENT_KNOWN = "known"  # Judgment.purpose of an answer on a known-answer pair mixed into the queue


class Judgment(SQLModel, table=True):
    """Append-only: changing a label adds a row; the latest row of a (pair, judge) counts.

    ``purpose`` keeps a judge's answers on known-answer pairs apart from the pool's labels: the
    answer path writes every answer here, with the same statements, and marks one given on a
    known-answer queue row (``Assignment.kind == "known"``) ``"known"``; every reader of labels
    (agreement, final labels, adjudication, exports, the decisive order, progress) reads only
    ``purpose == "pool"`` (:func:`pool_labels`). Why one table rather than one of their own: the
    judging page carries the id of the answer just given (its undo form) and the answer's timing is
    seen by the judge's browser, so an answer on a known-answer pair must take the same statements
    and the same id sequence as any other, or the page would tell the two apart. A table of their
    own would be safer for readers ("never counted twice") but would show in the ids and the
    timing; tests/judge/test_known_answer_apart.py plants such answers and checks that no reader
    of labels sees them."""

    __table_args__ = (
        UniqueConstraint("judge_id", "client_token"),
        # a pair's labels, and a judge's latest label of a pair (migration 0026: it was two indexes,
        # (pair_id) and (judge_id, pair_id, id), each written by every answer)
        Index("ix_judgment_pair_judge", "pair_id", "judge_id", "id"),
        Index("ix_judgment_judge_project", "judge_id", "project_id", "id"),  # a judge's recent labels
    )
    id: int | None = Field(default=None, primary_key=True)
    project_id: int = Field(foreign_key="project.id", index=True)
    pair_id: int = Field(foreign_key="poolpair.id")
    judge_id: int = Field(foreign_key="user.id")
    grade: int | None = None  # None when skipped
    unsure: bool = False
    skipped: bool = False
    note: str | None = None
    guidelines_version_id: int | None = Field(default=None, foreign_key="guidelinesversion.id")
    need_version_id: int | None = Field(default=None, foreign_key="queryneed.id")  # information need shown
    source: str = "human"  # "human" or "import"
    shown_at: datetime | None = None
    answered_at: datetime = Field(default_factory=utcnow)
    client_token: str | None = None  # one per shown pair: a resubmitted form records once
    purpose: str = Field(default=JUDGMENT_POOL, sa_column_kwargs={"server_default": JUDGMENT_POOL})


def pool_labels():
    """The condition that a Judgment row is a label of the pool (not an answer on a known-answer
    pair): every reader of labels adds it."""
    return Judgment.purpose == JUDGMENT_POOL


class Adjudication(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    project_id: int = Field(foreign_key="project.id", index=True)
    pair_id: int = Field(foreign_key="poolpair.id", index=True)
    lead_id: int = Field(foreign_key="user.id")
    grade: int
    reason: str = Field(sa_column=Column(Text, nullable=False))
    guidelines_issue: bool = False  # the disagreement came from the guidelines
    guidelines_version_id: int | None = Field(default=None, foreign_key="guidelinesversion.id")
    created_at: datetime = Field(default_factory=utcnow)


class KnownAnswer(SQLModel, table=True):
    """A known-answer ("gold") pair: a pool pair whose accepted grade(s) a lead fixed, mixed blind into
    judges' queues to measure each judge's accuracy (curation.judge.known_answer). ``source`` says
    where the grades came from: "adjudication" (a lead's adjudicated label, its reason kept as the
    teaching text), "seed" (a seed judgment) or "lead" (given by hand). Retired pairs
    (``retired_at`` set) are no longer mixed in; answers already given on them still count."""

    id: int | None = Field(default=None, primary_key=True)
    project_id: int = Field(foreign_key="project.id", index=True)
    pair_id: int = Field(foreign_key="poolpair.id", index=True, unique=True)
    accepted_json: str  # the accepted grades, a sorted JSON list of one or more grades of the scale
    reason: str | None = Field(default=None, sa_column=Column(Text, nullable=True))  # why: teaching text
    source: str = "lead"  # "adjudication", "seed" or "lead"
    adjudication_id: int | None = Field(default=None, foreign_key="adjudication.id")
    created_by_id: int | None = Field(default=None, foreign_key="user.id")
    created_at: datetime = Field(default_factory=utcnow)
    retired_at: datetime | None = None
    retired_by_id: int | None = Field(default=None, foreign_key="user.id")


class KnownAnswerHold(SQLModel, table=True):
    """A judge's queue held in a project because their known-answer accuracy fell below the bar
    (with ``Project.known_answer_hold`` on): held while ``released_at`` is NULL. ``answers`` is how
    many known-answer answers the judge had given when held; a lead's release records who, when and
    that count again (``released_answers``): the judge is not held again until enough further
    answers show them below the bar on their own."""

    __table_args__ = (Index("ix_knownanswerhold_judge", "judge_id", "project_id", "released_at"),)
    id: int | None = Field(default=None, primary_key=True)
    project_id: int = Field(foreign_key="project.id", index=True)
    judge_id: int = Field(foreign_key="user.id")
    held_at: datetime = Field(default_factory=utcnow)
    answers: int = 0
    exact: float | None = None  # the judge's exact accuracy when held
    released_at: datetime | None = None
    released_by_id: int | None = Field(default=None, foreign_key="user.id")
    released_answers: int | None = None


class QualificationAttempt(SQLModel, table=True):
    """One attempt of a judge at a project's qualification (curation.judge.qualification): ``pairs``
    known-answer pairs drawn for it (its :class:`QualificationAnswer` rows) and the pass mark in
    force when it was drawn. ``finished_at``, ``correct`` and ``passed`` are set with its last
    answer. ``granted_by_id``: the lead who granted it to a blocked judge (beyond the retries)."""

    __table_args__ = (UniqueConstraint("project_id", "judge_id", "attempt"),)
    id: int | None = Field(default=None, primary_key=True)
    project_id: int = Field(foreign_key="project.id")
    judge_id: int = Field(foreign_key="user.id", index=True)
    attempt: int  # 1, 2, ... per judge and project
    pairs: int
    pass_mark: float
    started_at: datetime = Field(default_factory=utcnow)
    finished_at: datetime | None = None
    correct: int | None = None  # exact answers, once finished
    passed: bool | None = None
    granted_by_id: int | None = Field(default=None, foreign_key="user.id")


class QualificationAnswer(SQLModel, table=True):
    """A pair of a qualification attempt, in the order shown, and the judge's answer (``grade`` NULL
    until answered). Never a :class:`Judgment`: a qualification answer is no label of the pool."""

    __table_args__ = (UniqueConstraint("attempt_id", "position"), UniqueConstraint("attempt_id", "pair_id"))
    id: int | None = Field(default=None, primary_key=True)
    attempt_id: int = Field(foreign_key="qualificationattempt.id")
    position: int  # 1-based
    known_answer_id: int = Field(foreign_key="knownanswer.id")
    pair_id: int = Field(foreign_key="poolpair.id")
    grade: int | None = None
    exact: bool | None = None  # the grade is one of the known-answer pair's accepted grades
    answered_at: datetime | None = None


class LeakFinding(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    project_id: int = Field(foreign_key="project.id", index=True)
    query_id: int = Field(foreign_key="query.id", index=True)
    chunk_id: str
    mode: str  # "exact", "jaccard", "containment"
    score: float
    span: str | None = None
    context_before: str | None = Field(default=None, sa_column=Column(Text, nullable=True))  # the chunk around
    context_after: str | None = Field(default=None, sa_column=Column(Text, nullable=True))  # the match (normalised)
    decision: str | None = None  # "exclude_chunk", "drop_query", "rejudge", "keep"
    decided_by_id: int | None = Field(default=None, foreign_key="user.id")
    decided_at: datetime | None = None


class SeedJudgment(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    project_id: int = Field(foreign_key="project.id", index=True)
    qid: str
    docid: str
    source: str  # "ticket" or "click"
    grade: int
    imported_at: datetime = Field(default_factory=utcnow)


class ExportVersion(SQLModel, table=True):
    __table_args__ = (UniqueConstraint("project_id", "name"),)
    id: int | None = Field(default=None, primary_key=True)
    project_id: int = Field(foreign_key="project.id")
    name: str
    parent: str | None = None
    state_sha256: str  # hash of the exported content: a different state under this name is refused
    manifest_json: str = Field(sa_column=Column(Text, nullable=False))
    # The frozen zip is stored in chunks (ExportChunk, curation.store.archives); here its size and sha256.
    archive_bytes: int | None = Field(default=None, sa_column=Column(BigInteger, nullable=True))
    archive_sha256: str | None = None
    created_by: str | None = None
    created_at: datetime = Field(default_factory=utcnow)
    # The absolute path of the folder being written while the export is pending (recorded before the
    # folder appears), NULL once the folder is in place (curation.export.versions, migration 0021),
    # and who writes it (``host:pid``), so that another export knows whether the writer still runs.
    pending_folder: str | None = None
    pending_owner: str | None = None


class ExportChunk(SQLModel, table=True):
    """One piece of an export version's frozen zip: chunk ``no`` (from 0) holds bytes
    ``no * size`` on, where size is chunk 0's length (curation.store.archives)."""

    version_id: int = Field(sa_column=Column(Integer, ForeignKey("exportversion.id", ondelete="CASCADE"),
                                             primary_key=True))  # the chunks go with their version
    no: int = Field(primary_key=True)
    data: bytes = Field(sa_column=Column(LargeBinary, nullable=False))


class LoginSession(SQLModel, table=True):
    """One login in the judging app. The cookie carries a random token; the store keeps its SHA-256
    (a copy of the table logs nobody in). Valid while the user is active, ``version`` equals the
    user's ``session_version``, and the idle and absolute limits have not passed: state every
    ``golden serve`` process on the store shares."""

    id: int | None = Field(default=None, primary_key=True)
    token_hash: str = Field(index=True, unique=True)
    user_id: int = Field(foreign_key="user.id", index=True)
    version: int = 0
    created_at: datetime = Field(default_factory=utcnow)
    last_seen_at: datetime = Field(default_factory=utcnow)
    address: str | None = None
    user_agent: str | None = None


class LoginThrottle(SQLModel, table=True):
    """Failed logins counted per key ("account:NAME" or "address:IP"), and the lock they earned."""

    id: int | None = Field(default=None, primary_key=True)
    key: str = Field(index=True, unique=True)
    failures: int = 0  # failures in the current window
    window_start: datetime | None = None
    last_failure_at: datetime | None = None
    locked_until: datetime | None = None
    lockouts: int = 0  # locks in a row: each one lasts twice as long as the last


class AuditEvent(SQLModel, table=True):
    """Who did what, when and from where: logins, role changes, disables, releases, exports,
    adjudications. Append-only."""

    __table_args__ = (Index("ix_auditevent_action_at", "action", "at"),)
    id: int | None = Field(default=None, primary_key=True)
    at: datetime = Field(default_factory=utcnow, index=True)
    action: str
    actor: str | None = None  # the user's name (or the system account for a command)
    actor_id: int | None = None  # no foreign key: the trail outlives what it names
    target: str | None = None  # what was acted on: a user's name, a project, a version
    project_id: int | None = None
    address: str | None = None  # the client address, or "cli:HOST" for a command
    detail: str | None = Field(default=None, sa_column=Column(Text, nullable=True))


class StoreSetting(SQLModel, table=True):
    """Settings kept with the store itself, e.g. the key that signs its session cookies."""

    key: str = Field(primary_key=True)
    value: str = Field(sa_column=Column(Text, nullable=False))
class MachineJudge(SQLModel, table=True):
    """A machine judge (a model prompted with the guidelines): a judge of its own kind, never a
    :class:`User`. Its labels live in :class:`MachineLabel`, never in :class:`Judgment`, so they
    cannot count in human agreement, final labels or exports unless a command asks for them
    (``golden export create --fill-unjudged machine:NAME``, ``--qrels-from machine:NAME``)."""

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(index=True, unique=True)
    kind: str = "machine"  # the judge kind, named on every page and export that shows its labels
    created_at: datetime = Field(default_factory=utcnow)


class MachineLabel(SQLModel, table=True):
    """One label of a machine judge for a pool pair: one row per (sample, prompt version) as imported
    by ``golden judging import --machine``; ``token`` (file hash + line) makes a re-import add nothing."""

    __table_args__ = (
        UniqueConstraint("machine_id", "token"),
        Index("ix_machinelabel_machine_project", "machine_id", "project_id"),
    )
    id: int | None = Field(default=None, primary_key=True)
    project_id: int = Field(foreign_key="project.id", index=True)
    pair_id: int = Field(foreign_key="poolpair.id", index=True)
    machine_id: int = Field(foreign_key="machinejudge.id")
    grade: int
    sample: int = 0  # repeated samples of the same prompt: 0, 1, 2, ...
    probabilities_json: str | None = Field(default=None, sa_column=Column(Text, nullable=True))  # {"grade": p}
    confidence: float | None = None  # the probability of the label given (from probabilities when given)
    rationale: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    model: str | None = None
    prompt_version: str | None = None
    token: str
    imported_at: datetime = Field(default_factory=utcnow)
    # Provenance of a label made by `golden machine run` (None on imported labels):
    run_id: int | None = Field(default=None, foreign_key="machinerun.id", index=True)
    need_version: int | None = None  # the query's information-need version in the prompt (0: none)
    served_model: str | None = None  # the model the endpoint said answered
    sampling_json: str | None = None  # {"temperature", "top_p", "seed", "max_tokens"}
    raw_response: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    tokens_in: int | None = None
    tokens_out: int | None = None
    latency_ms: float | None = None


class MachineRun(SQLModel, table=True):
    """One `golden machine run`: a machine judge prompted through an OpenAI-compatible endpoint.
    Its labels are :class:`MachineLabel` rows with ``run_id``; its failed requests
    :class:`MachineFailure` rows. The API key is never stored."""

    id: int | None = Field(default=None, primary_key=True)
    project_id: int = Field(foreign_key="project.id", index=True)
    machine_id: int = Field(foreign_key="machinejudge.id", index=True)
    model: str
    base_url: str
    prompt_version: str  # template hash + guidelines version (need versions are per label)
    template_hash: str
    template_name: str
    guidelines_version: int | None = None
    sampling_json: str = "{}"
    samples: int = 1
    selection: str = "all"
    pairs_planned: int = 0
    status: str = "running"  # running, finished, interrupted, server-down, budget
    started_at: datetime = Field(default_factory=utcnow)
    finished_at: datetime | None = None


class MachineFailure(SQLModel, table=True):
    """A request of a `golden machine run` that gave no grade: a timeout, a refusal, an answer that
    does not parse, an HTTP error after the retries. Counted and shown, never a label; a later run
    asks for the pair and sample again."""

    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="machinerun.id", index=True)
    pair_id: int = Field(foreign_key="poolpair.id", index=True)
    sample: int = 0
    kind: str  # timeout, refusal, unparseable, http, connection
    detail: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    raw_response: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    at: datetime = Field(default_factory=utcnow)
class DecisiveComparison(SQLModel, table=True):
    """A comparison the decisive judging order serves (``golden judging assign --order decisive --compare
    A,B``): is run B higher than run A on ``metric``? ``settled_*`` record when a settlement report
    first found it settled with the guarantee (and at what share of the pool judged);
    ``released_*`` the lead's decision to release the judges from the pairs that no open
    comparison still needs."""

    __table_args__ = (UniqueConstraint("project_id", "run_a", "run_b", "metric"),)
    id: int | None = Field(default=None, primary_key=True)
    project_id: int = Field(foreign_key="project.id")
    run_a: str
    run_b: str
    metric: str = "ndcg@10"
    tie: float = 0.0  # settle as "no difference larger than tie" too (0: off)
    created_at: datetime = Field(default_factory=utcnow)
    settled_at: datetime | None = None
    settled_verdict: str | None = None
    settled_share: float | None = None
    released_at: datetime | None = None
    released_by_id: int | None = Field(default=None, foreign_key="user.id")
    released_pairs: int | None = None
