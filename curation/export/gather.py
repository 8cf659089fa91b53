"""Gathering a version's state from the store: the final labels with their votes, adjudications and
seeds, the queries and the manifest's facts, and the three data files built from them.

The judgments are read in one pass, a chunk of queries at a time (:data:`CHUNK_PAIRS` pooled pairs
per chunk, in qid order, which is the files' order): one statement per chunk for the pool pairs and
one for the judgments, each judge's latest label and the per-pair vote counts, grade range and lead
flag found with a few numpy passes (``np.unique`` on the (pair, judge) key, ``ufunc.reduceat`` over
the pairs). The common pairs (one judge, or judges who agree; no adjudication, no seed judgment)
are picked out with numpy masks and their lines written by
:func:`curation.formats.qrels.plain_label_lines`; only pairs that need a decision (disagreements,
adjudications, the ``lead`` policy, seeds, unjudged pairs) go through
:func:`curation.agree.labels.resolve` one at a time. The lines of ``qrels.txt`` and
``qrels.jsonl`` are written to files as each chunk is done, their sha256 computed as they are
written, so memory holds one chunk, the queries, the adjudications and the seed judgments, never
the judgments table. The same pass keeps each judge's latest vote of the pairs agreement is measured
on, from which the manifest's agreement summary is computed (no second read). ``gather_state`` is
one long function because each manifest figure is counted from the same rows as the files; its
steps are the ones the export's progress bar names."""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from sqlalchemy import false, true
from sqlmodel import Session, func, select

from curation.agree.labels import (
    AGGREGATING,
    LABEL_SOURCES,
    Label,
    Vote,
    latest_adjudications,
    latest_seed_grades,
    policy_estimates,
    resolve,
)
from curation.export.manifest import FORMAT, iso_utc, state_hash
from curation.export.split import split_summary
from curation.formats.qrels import label_record_line, label_vote_json, plain_label_lines, qrel_text
from curation.formats.queries import queries_text
from curation.pool.seeds import SEED_SOURCES
from curation.store.lookups import plain_rows
from curation.store.models import (
    Document,
    GuidelinesVersion,
    Judgment,
    LeakFinding,
    PoolPair,
    Project,
    Query,
    QueryNeed,
    Run,
    SeedJudgment,
    User,
    pool_labels,
)
from curation.store.needs import needs_by_qid
from curation.store.projects import guidelines_history
from curation.store.roles import is_lead as lead_role
from curation.store.scale import grade_values, scale_records

# The sources of an exported label (curation.agree.labels): every one but the two that carry no grade.
# The aggregating policies' sources are counted only in an export under that policy (so an export
# under another policy keeps its manifest's bytes).
EXPORTED_SOURCES = tuple(s for s in LABEL_SOURCES if s not in ("unresolved", "unjudged") + AGGREGATING)
# Pooled pairs per chunk of queries (a chunk also stops at CHUNK_QUERIES queries: one IN list each).
CHUNK_PAIRS = 100_000
CHUNK_QUERIES = 900
EXAMPLES = 20  # unjudged / unresolved pairs kept to name in a message (all are counted)


def _plain(obj, digits: int = 6):
    """JSON-safe plain data with floats rounded to ``digits`` (numpy scalars included), NaN -> None."""
    if isinstance(obj, dict):
        return {str(k): _plain(v, digits) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v, digits) for v in obj]
    if isinstance(obj, bool) or obj is None or isinstance(obj, str):
        return obj
    if isinstance(obj, int):
        return int(obj)
    if isinstance(obj, datetime):
        return iso_utc(obj)
    try:
        as_float = float(obj)
    except (TypeError, ValueError):
        return str(obj)
    if hasattr(obj, "dtype") and getattr(obj.dtype, "kind", "") in "iu":
        return int(obj)
    if math.isnan(as_float) or math.isinf(as_float):
        return None
    return round(as_float, digits)


def _number(x):
    """A stored number as JSON: integers stay integers, floats keep their shortest repr."""
    if x is None:
        return None
    x = float(x)
    return int(x) if x.is_integer() else x


_SPACE = re.compile(r"\s")


def _check_ids(qid: str, docid: str) -> None:
    for name, value in (("qid", qid), ("docid", docid)):
        if not value or _SPACE.search(value):
            raise ValueError(
                f"{name} {value!r} is empty or holds white space, which a TREC qrels line cannot carry; "
                "fix the identifier in the project's queries or corpus"
            )


def _agreement_summary(units: list[tuple[str, str]], votes: list, names: list[str], scale: list[int]) -> dict | None:
    """Agreement on the overlap pairs (:func:`curation.agree.agreement.agreement_core`, as
    ``golden labels agreement`` reports it), summarised. ``units``: the (qid, docid) of each pair two or more
    judges labelled or the overlap set holds, and ``votes``: arrays of (unit number, judge rank, grade),
    each judge's latest label of those pairs, as the labels' pass found them (the labels
    :func:`curation.agree.labels.load_judgments` with ``overlap_only`` and
    :func:`~curation.agree.labels.latest_labels` give: tests/export/test_fast_lines.py)."""
    import numpy as np

    from curation.agree.agreement import agreement_core
    from curation.agree.settings import RESAMPLES, SEED

    if not units:
        return None
    labels: dict[tuple[str, str], dict[str, Label]] = {}
    for unit_no, rank, grade in np.concatenate(votes).tolist():
        qid, docid = units[unit_no]
        judge = names[rank]
        labels.setdefault(units[unit_no], {})[judge] = Label(qid, docid, judge, grade)
    core = agreement_core(labels, scale=scale)  # the report's defaults: curation.agree.settings
    overall = core.overall.as_dict()
    return _plain({
        "computed_by": "curation.agree.agreement.agreement_report "
                       f"(overlap pairs; query bootstrap, {RESAMPLES} resamples, seed {SEED})",
        "judges": core.judges,
        "pairs": overall.get("pairs"),
        "queries": overall.get("queries"),
        "verdict": core.verdict.as_dict(),
        "overall": {"measures": overall.get("measures"), "binary": overall.get("binary")},
        "pairwise": [
            {"judges": list(c.judges), "pairs": c.pairs, "measures": {k: v.as_dict() for k, v in c.measures.items()}}
            for c in core.pairwise
        ],
        "cut": core.cut,
        "notes": core.notes,
    })


def _overlap_assigned(session: Session, pid: int):
    """The ids of the overlap set's pairs (assignments of kind ``overlap``), sorted."""
    import numpy as np

    from curation.store.models import Assignment

    ids = session.exec(select(Assignment.pair_id).where(Assignment.project_id == pid, Assignment.kind == "overlap")
                       .distinct()).all()
    return np.array(sorted(ids), dtype=np.int64)


def _vote_text(cache: dict, names, gv_of, need_of, rank: int, grade: int, unsure: int, gv_id: int,
               need_id: int) -> str:
    """A vote as qrels.jsonl lists it (:func:`label_vote_json`), each distinct one written once."""
    key = (int(rank), int(grade), int(unsure), int(gv_id), int(need_id))
    text = cache.get(key)
    if text is None:
        text = cache[key] = label_vote_json(names[key[0]], key[1], bool(key[2]), gv_of.get(key[3]),
                                            need_version=need_of.get(key[4]))
    return text


def _vote_lists(latest, lrank, starts, ends, names, gv_of, need_of, cache: dict):
    """Each pair's votes (the groups of ``latest``) as its qrels.jsonl ``judgments`` list holds them,
    without the brackets: a numpy object array of strings, one per group. Each distinct vote is
    written once (:func:`_vote_text`); a pair with one vote takes its text, the others' are joined."""
    import numpy as np

    if not len(latest):
        return np.array([], dtype=object)
    # One integer per distinct (judge, grade, unsure, guidelines, need) vote: the columns' offsets from
    # their minimum combined in mixed radix (renumbered by np.unique should the product grow too large),
    # then numbered densely by one np.unique.
    key = np.zeros(len(latest), dtype=np.int64)
    span = 1
    columns = [lrank, latest[:, 2], latest[:, 3], latest[:, 4], latest[:, 5]]
    for col in columns:
        lo, width = int(col.min()), int(col.max()) - int(col.min()) + 1
        if span * width >= 2**62:
            _, key = np.unique(key, return_inverse=True)
            key, span = key.ravel(), int(key.max()) + 1
        key = key * width + (col - lo)
        span *= width
    _, key = np.unique(key, return_inverse=True)
    key = key.ravel()
    first = np.zeros(key.max() + 1, dtype=np.int64)
    first[key] = np.arange(len(key))  # a row of each distinct vote
    texts = np.array([_vote_text(cache, names, gv_of, need_of, *row)
                      for row in np.column_stack(columns)[first].tolist()] + [None], dtype=object)[:-1]
    row_text = texts[key]
    out = row_text[starts]
    sizes = ends - starts
    for size in np.unique(sizes[sizes > 1]).tolist():  # pairs with `size` votes: joined a column at a time
        at = np.flatnonzero(sizes == size)
        text = row_text[starts[at]]
        for j in range(1, size):
            text = text + ", " + row_text[starts[at] + j]  # str + str for each element (object arrays)
        out[at] = text
    return out


def _decisive_record(session, project) -> dict | None:
    """For the export's manifest: how the pool was ordered and which comparisons were settled at
    what share (None when the project has no decisive comparison: the default order)."""
    from curation.evaluate.decisive import stored_comparisons
    from curation.judge.assignment import BLOCK

    rows = stored_comparisons(session, project)
    if not rows:
        return None
    return {
        "order": "decisive",
        "block": BLOCK,
        "comparisons": [
            {"a": r.run_a, "b": r.run_b, "metric": r.metric, "tie": r.tie,
             "settled": r.settled_verdict is not None, "verdict": r.settled_verdict,
             "settled_at": iso_utc(r.settled_at), "settled_share": r.settled_share,
             "released_at": iso_utc(r.released_at), "released_pairs": r.released_pairs}
            for r in rows
        ],
    }


def _judging_order(session, project) -> dict:
    """``{"judging_order": ...}`` when the pool was ordered for comparisons (golden judging assign --order
    decisive), else nothing (:func:`_decisive_record`)."""
    record = _decisive_record(session, project)
    return {} if record is None else {"judging_order": record}


@dataclass
class DataFile:
    """A data file of a version, written once to ``path``; its sha256 and size as written."""

    path: Path
    sha256: str
    size: int

    def read_bytes(self) -> bytes:
        return self.path.read_bytes()


class _HashedFile:
    """A text file written in pieces, hashed as it is written."""

    def __init__(self, path: Path):
        self.path = path
        self._fh = open(path, "wb")  # noqa: SIM115 (closed by close(), or by the spool's removal on failure)
        self._hash = hashlib.sha256()
        self._size = 0

    def write(self, text: str | bytes) -> None:
        data = text.encode("utf-8") if isinstance(text, str) else text
        self._fh.write(data)
        self._hash.update(data)
        self._size += len(data)

    def close(self) -> DataFile:
        self._fh.close()
        return DataFile(self.path, self._hash.hexdigest(), self._size)


@dataclass
class VersionState:
    files: dict[str, DataFile]  # qrels.txt, qrels.jsonl, queries.jsonl, written in the spool folder
    body: dict  # the manifest without version/parent/created/files
    queries: dict[str, dict]  # qid -> queries.jsonl record
    unjudged: list[tuple[str, str]] = field(default_factory=list)  # the first EXAMPLES
    unresolved: list[tuple[str, str]] = field(default_factory=list)  # the first EXAMPLES
    n_unjudged: int = 0
    n_unresolved: int = 0

    @property
    def sha256(self) -> str:
        return state_hash({n: f.sha256 for n, f in self.files.items()}, self.body)


def _adjudications(session: Session, pid: int, gv_of: dict[int, int]) -> dict[int, tuple[int, str, str, int | None]]:
    """pair id -> (grade, reason, lead name, guidelines version) of the pair's latest adjudication."""
    return {pair_id: (grade, reason, lead, gv_of.get(gv_id))
            for pair_id, (grade, reason, lead, gv_id) in latest_adjudications(session, pid).items()}


def _seeds(session: Session, pid: int):
    """The seed judgments: ``{(qid, docid): [{"source", "grade"}]}`` in the export's order, and
    ``{(qid, docid): grade}`` of the latest one (the grade a pair nobody judged takes)."""
    rows: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for qid, docid, source, grade in session.exec(
        select(SeedJudgment.qid, SeedJudgment.docid, SeedJudgment.source, SeedJudgment.grade)
        .where(SeedJudgment.project_id == pid)
        .order_by(SeedJudgment.source, SeedJudgment.qid, SeedJudgment.docid)
    ).all():
        rows[(str(qid), str(docid))].append({"source": source, "grade": int(grade)})
    return rows, latest_seed_grades(session, pid)


def _chunks(session: Session, pid: int, queries: list[Query], chunk_pairs: int) -> list[list[Query]]:
    """The project's queries in qid order, cut into runs of about ``chunk_pairs`` pooled pairs."""
    per_query = dict(session.exec(
        select(PoolPair.query_id, func.count(PoolPair.id)).where(PoolPair.project_id == pid).group_by(PoolPair.query_id)
    ).all())
    chunks: list[list[Query]] = []
    size = chunk_pairs
    for q in sorted(queries, key=lambda q: q.qid):
        n = per_query.get(q.id, 0)
        if not chunks or size + n > chunk_pairs or len(chunks[-1]) >= CHUNK_QUERIES:
            chunks.append([])
            size = 0
        chunks[-1].append(q)
        size += n
    return chunks


def _latest_votes(rows, rank_of, n_judges: int):
    """Each judge's latest label of each pair, from judgment rows (pair id, judge id, grade, unsure,
    guidelines version id or 0, information need version id or 0) oldest first: arrays sorted by
    (pair, judge name), with the group starts of each pair. numpy: the last row of each (pair, judge)
    key, found with ``np.unique`` on the reversed keys."""
    import numpy as np

    a = np.array(rows, dtype=np.int64).reshape(-1, 6)
    pair, judge = a[:, 0], rank_of[a[:, 1]]
    key = pair * n_judges + judge
    _, first_rev = np.unique(key[::-1], return_index=True)  # sorted by key = (pair, judge rank)
    last = len(key) - 1 - first_rev
    latest = a[last]
    lpair = latest[:, 0]
    starts = np.flatnonzero(np.r_[True, lpair[1:] != lpair[:-1]]) if len(lpair) else np.zeros(0, dtype=np.int64)
    return latest, judge[last], last, starts


def gather_state(session: Session, project: Project, *, policy: str, spool: Path, bar=None,
                 chunk_pairs: int | None = None, fill: str | None = None) -> VersionState:
    """:func:`_gather_state` with Python's cyclic garbage collector paused: the pass makes millions of
    short-lived tuples and strings (the driver's rows), none of them in a reference cycle, and the
    collector's scans of them took about a fifth of the export's CPU time (2-2.5 s of 12 for a million
    judgments). Reference counting still frees every row as soon as it is dropped."""
    import gc

    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _gather_state(session, project, policy=policy, spool=spool, bar=bar, chunk_pairs=chunk_pairs,
                             fill=fill)
    finally:
        if was_enabled:
            gc.enable()


def _gather_state(session: Session, project: Project, *, policy: str, spool: Path, bar=None,
                  chunk_pairs: int | None = None, fill: str | None = None) -> VersionState:
    """The state of ``project``'s golden set under ``policy``: its three data files (written into the
    folder ``spool``), the manifest's facts, and what is unjudged or unresolved; ``bar`` (a tqdm bar
    or None) is advanced per step. The labels are the ones :func:`curation.agree.labels.final_labels`
    gives (each judge's latest label, skips ignored; the latest adjudication; seeds for pairs nobody
    judged), computed here a chunk of queries at a time. ``fill`` (``machine:NAME``): pooled pairs no
    person labelled take that machine judge's label, flagged per pair and counted in the manifest
    (:mod:`curation.machine.fill`); without it nothing a machine said is read."""
    facts = _project_facts(session, project)
    facts.estimates = policy_estimates(session, project, policy)  # a model policy's fit on every label

    progress_step(bar, "final labels")
    filler = None
    if fill is not None:
        from curation.machine.fill import machine_fill

        filler = machine_fill(session, project, fill)
    spool.mkdir(parents=True, exist_ok=True)
    tally = _Tally.open(spool, facts.n_judges)
    conn = session.connection()
    overlap_ids = _overlap_assigned(session, facts.pid)
    for chunk in _chunks(session, facts.pid, facts.queries, chunk_pairs or CHUNK_PAIRS):
        _label_chunk(conn, chunk, facts, tally, policy=policy, filler=filler, overlap_ids=overlap_ids)
    # Seed judgments of queries that are not in the project are counted as left out.
    for qid, keys in facts.seeds_by_qid.items():
        if qid not in facts.known_qids:
            tally.left_out["query_not_in_set"] += len(keys)
    files = {"qrels.txt": tally.txt.close(), "qrels.jsonl": tally.jsonl.close()}

    qrecs = _query_records(session, project, facts.active)
    qfile = _HashedFile(spool / "queries.jsonl")
    qfile.write(queries_text((qrecs[qid] for qid in sorted(qrecs)), spaced=True))
    files["queries.jsonl"] = qfile.close()

    body = _manifest_body(session, project, facts, tally, qrecs, policy=policy, filler=filler, bar=bar)
    return VersionState(files, body, qrecs, tally.unjudged, tally.unresolved, tally.n_unjudged, tally.n_unresolved)


@dataclass
class _Facts:
    """What the export reads of the project once, before its chunks of queries."""

    pid: int
    queries: list  # the queries' rows (attribute access by column name)
    active: dict  # qid -> row, of the queries not dropped
    dropped: list[str]
    excluded_docids: set[str]
    gv_of: dict[int, int]  # guidelines version id -> number
    gv_version: object  # numpy: guidelines version id -> number, -1 for none
    names: list[str]  # every user's name, sorted: votes are listed by judge name
    rank_of: object  # numpy: user id -> place in ``names``
    is_lead: object  # numpy bool per place in ``names``
    roles: dict[str, str]
    need_of: dict[int, int]  # information need version id -> number
    n_judges: int
    adjudications: dict
    seed_rows: dict
    seed_grade: dict
    seeds_by_qid: dict[str, list[tuple[str, str]]]
    known_qids: set[str]
    adjudicated_ids: object  # numpy: the adjudicated pairs' ids, sorted
    estimates: dict = field(default_factory=dict)  # (qid, docid) -> a model policy's ModelEstimate


def _project_facts(session: Session, project: Project) -> _Facts:
    import numpy as np

    pid = project.id
    # The queries' columns as rows (attribute access by column name), without an ORM object each.
    queries = session.exec(select(*Query.__table__.columns).where(Query.project_id == pid)).all()
    active = {q.qid: q for q in queries if q.status != "dropped"}
    dropped = sorted(q.qid for q in queries if q.status == "dropped")
    excluded_docids = set(
        session.exec(select(Document.docid).where(Document.project_id == pid, Document.excluded == true())).all()
    )
    gv_of = dict(session.exec(select(GuidelinesVersion.id, GuidelinesVersion.version)
                              .where(GuidelinesVersion.project_id == pid)).all())
    user_rows = session.exec(select(User.id, User.name, User.role)).all()
    names = sorted(name for _, name, _ in user_rows)
    rank = {name: i for i, name in enumerate(names)}  # votes are listed by judge name
    rank_of = np.zeros(max((uid for uid, _, _ in user_rows), default=0) + 1, dtype=np.int64)
    for uid, name, _ in user_rows:
        rank_of[uid] = rank[name]
    is_lead = np.array([False] * len(names), dtype=bool)
    for _, name, role in user_rows:
        is_lead[rank[name]] = lead_role(role)
    roles = {name: role for _, name, role in user_rows}
    need_of = dict(session.exec(select(QueryNeed.id, QueryNeed.version).where(QueryNeed.project_id == pid)).all())
    gv_version = np.full(max(gv_of, default=0) + 1, -1, dtype=np.int64)  # guidelines version id -> number
    for gid, v in gv_of.items():
        gv_version[gid] = v

    adjudications = _adjudications(session, pid, gv_of)
    seed_rows, seed_grade = _seeds(session, pid)
    seeds_by_qid: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for key in seed_rows.keys() | seed_grade.keys():
        seeds_by_qid[key[0]].append(key)
    return _Facts(pid=pid, queries=queries, active=active, dropped=dropped, excluded_docids=excluded_docids,
                  gv_of=gv_of, gv_version=gv_version, names=names, rank_of=rank_of, is_lead=is_lead, roles=roles,
                  need_of=need_of, n_judges=max(len(names), 1), adjudications=adjudications, seed_rows=seed_rows,
                  seed_grade=seed_grade, seeds_by_qid=seeds_by_qid, known_qids={q.qid for q in queries},
                  adjudicated_ids=np.array(sorted(adjudications), dtype=np.int64))


@dataclass
class _Tally:
    """What the chunks add up to: the two label files being written, and the manifest's counts."""

    txt: _HashedFile
    jsonl: _HashedFile
    in_project: object  # numpy: each judge's latest labels in the project
    in_export: object  # ... and those this export counts
    vote_json: dict = field(default_factory=dict)
    unjudged: list[tuple[str, str]] = field(default_factory=list)
    unresolved: list[tuple[str, str]] = field(default_factory=list)
    n_unjudged: int = 0
    n_unresolved: int = 0
    unsure_labels: int = 0
    unsure_decided: int = 0
    left_out: Counter = field(default_factory=Counter)
    sources: Counter = field(default_factory=Counter)
    grade_counts: Counter = field(default_factory=Counter)
    seed_confirm: Counter = field(default_factory=Counter)
    with_labels: set[str] = field(default_factory=set)
    gv_counts: Counter = field(default_factory=Counter)
    pool_pairs: int = 0
    seed_pairs: int = 0
    batches: set[int] = field(default_factory=set)
    agree_units: list[tuple[str, str]] = field(default_factory=list)  # the overlap pairs' (qid, docid), and
    agree_votes: list = field(default_factory=list)  # their latest votes: (unit number, judge rank, grade) rows

    @classmethod
    def open(cls, spool: Path, n_judges: int) -> _Tally:
        import numpy as np

        return cls(_HashedFile(spool / "qrels.txt"), _HashedFile(spool / "qrels.jsonl"),
                   np.zeros(n_judges, dtype=np.int64), np.zeros(n_judges, dtype=np.int64))

    def count_missing(self, pair_id, source: str, qid: str, docid: str) -> None:
        """Count a pooled pair without a person's label, and a disagreement left unresolved."""
        if pair_id is not None and source in ("unjudged", "seed"):
            self.n_unjudged += 1
            if len(self.unjudged) < EXAMPLES:
                self.unjudged.append((qid, docid))
        if source == "unresolved":
            self.n_unresolved += 1
            if len(self.unresolved) < EXAMPLES:
                self.unresolved.append((qid, docid))


@dataclass
class _Votes:
    """A chunk's latest votes (each judge's latest label of each pair), grouped by pair, ascending."""

    latest: object  # numpy rows: pair id, judge id, grade, unsure, guidelines version id, need version id
    lrank: object  # each row's judge, as a place in the names
    lorder: object  # each row's place among the judgments (its age)
    starts: object
    ends: object
    gpair: object  # each group's pair id
    gmin: object
    glead: object
    ggv: object  # the highest guidelines version number of the group's votes
    gunsure: object
    easy: object  # the votes agree (and, under policy lead, no lead voted)

    @property
    def n_groups(self) -> int:
        return len(self.starts)


def _chunk_votes(conn, ids: list[int], facts: _Facts, policy: str) -> _Votes:
    import numpy as np

    rows = plain_rows(conn,
        select(Judgment.pair_id, Judgment.judge_id, Judgment.grade, Judgment.unsure,
               func.coalesce(Judgment.guidelines_version_id, 0), func.coalesce(Judgment.need_version_id, 0))
        .join(PoolPair, PoolPair.id == Judgment.pair_id)
        # No filter on Judgment.project_id: the pairs are the project's, and SQLite would read
        # every judgment of the project through that index for each chunk.
        .where(PoolPair.query_id.in_(ids), Judgment.skipped == false(), Judgment.grade.is_not(None), pool_labels())
        .order_by(Judgment.answered_at, Judgment.id)
    )
    latest, lrank, lorder, starts = _latest_votes(rows, facts.rank_of, facts.n_judges)
    del rows
    ends = np.r_[starts[1:], len(latest)] if len(starts) else starts
    if len(latest):
        gmin = np.minimum.reduceat(latest[:, 2], starts)
        gmax = np.maximum.reduceat(latest[:, 2], starts)
        glead = np.maximum.reduceat(facts.is_lead[lrank].astype(np.int64), starts)
        ggv = np.maximum.reduceat(facts.gv_version[latest[:, 4]], starts)
        gunsure = np.maximum.reduceat(latest[:, 3], starts) > 0
    else:
        gmin = gmax = glead = ggv = np.zeros(0, dtype=np.int64)
        gunsure = np.zeros(0, dtype=bool)
    easy = gmin == gmax
    if policy == "lead":
        easy &= glead == 0
    return _Votes(latest, lrank, lorder, starts, ends, latest[starts, 0], gmin, glead, ggv, gunsure, easy)


@dataclass
class _Units:
    """A chunk's units (pooled pairs, and seed judgments of pairs not pooled) in the files' order:
    (qid, docid) as Python compares strings."""

    pair: object  # numpy: the pool pair's id, -1 for a seed judgment of a pair not pooled
    qpos: object  # numpy: the query's place in the chunk
    docs: object  # numpy (object): the docids
    excluded: object  # numpy bool: the document is excluded
    group: object  # numpy: the unit's group in the chunk's votes, -1 for none
    seeded: object  # numpy bool: the pair has seed judgments
    seed_keys: set[tuple[str, str]]
    odd: bool  # an identifier of the chunk is empty or holds white space


def _chunk_units(pool: list[tuple], ids: list[int], chunk_qids: list[str], facts: _Facts, votes: _Votes,
                 tally: _Tally) -> _Units:
    import numpy as np

    tally.pool_pairs += len(pool)
    u_pair, u_query, u_docid, u_excl, u_seeded, u_batch = (list(c) for c in zip(*pool, strict=True)) if pool \
        else ([], [], [], [], [], [])
    tally.seed_pairs += len(u_seeded) - u_seeded.count(None) - u_seeded.count("")  # the pairs a seed pooled
    tally.batches.update(u_batch)
    del u_seeded, u_batch
    id_arr = np.array(ids, dtype=np.int64)  # query id -> its place in the chunk, by a sorted lookup
    by_id = np.argsort(id_arr)
    u_qpos = by_id[np.searchsorted(id_arr[by_id], np.array(u_query, dtype=np.int64))].tolist()
    del u_query
    seed_keys: set[tuple[str, str]] = set()
    if any(q in facts.seeds_by_qid for q in chunk_qids):
        pooled_keys = {(chunk_qids[q], d) for q, d in zip(u_qpos, u_docid, strict=True)}
        for qpos, qid in enumerate(chunk_qids):
            for key in facts.seeds_by_qid.get(qid, ()):
                seed_keys.add(key)
                if key not in pooled_keys:
                    u_pair.append(-1)
                    u_qpos.append(qpos)
                    u_docid.append(key[1])
                    u_excl.append(key[1] in facts.excluded_docids)
        del pooled_keys
    # Checked once per chunk: white space in an identifier (refused, below, by the per-pair path).
    odd = not all(u_docid) or _SPACE.search("\0".join(u_docid)) is not None or \
        any(not q or _SPACE.search(q) for q in chunk_qids)
    # Sorted by (qid, docid) as Python compares strings: by docid (sorted, on the docids themselves),
    # then by the query's place in the chunk (numpy's stable sort keeps the docid order within a query).
    order = np.array(sorted(range(len(u_docid)), key=u_docid.__getitem__), dtype=np.int64)
    u_qpos = np.array(u_qpos, dtype=np.int64)[order]
    by_query = np.argsort(u_qpos, kind="stable")
    order, u_qpos = order[by_query], u_qpos[by_query]
    docs = np.array(u_docid, dtype=object)[order]  # the docids in the files' order
    u_pair = np.array(u_pair, dtype=np.int64)[order]
    u_excl = np.array(u_excl, dtype=bool)[order]  # Document.excluded (the driver's 0/1 or booleans)
    del u_docid
    if facts.excluded_docids:
        u_excl |= np.fromiter((d in facts.excluded_docids for d in docs.tolist()), dtype=bool, count=len(docs))
    n_groups = votes.n_groups
    g = np.searchsorted(votes.gpair, u_pair) if n_groups else np.zeros(len(u_pair), dtype=np.int64)
    found = g < n_groups
    found[found] = votes.gpair[g[found]] == u_pair[found]
    g = np.where(found, g, -1)
    u_seed = np.zeros(len(u_pair), dtype=bool)
    if seed_keys:
        u_seed = np.array([(chunk_qids[q], d) in seed_keys for q, d in zip(u_qpos.tolist(), docs.tolist(),
                                                                            strict=True)], dtype=bool)
    return _Units(u_pair, u_qpos, docs, u_excl, g, u_seed, seed_keys, odd)


def _label_chunk(conn, chunk: list, facts: _Facts, tally: _Tally, *, policy: str, filler, overlap_ids) -> None:
    """The final labels of one chunk of queries, their lines appended to the label files, counted.

    The common case in vectorised passes (a pooled pair whose latest votes agree, or that one judge
    labelled, not adjudicated, without seed judgments); every other pair one at a time
    (:func:`_resolve_unit`), its lines put in their place."""
    import numpy as np

    qid_of = {q.id: q.qid for q in chunk}
    ids = list(qid_of)
    chunk_qids = [q.qid for q in chunk]  # in qid order (_chunks)
    pool = plain_rows(conn,
        select(PoolPair.id, PoolPair.query_id, Document.docid, Document.excluded, PoolPair.seed_source,
               PoolPair.batch)
        .join(Document, Document.id == PoolPair.document_id)
        .where(PoolPair.query_id.in_(ids))
    )
    votes = _chunk_votes(conn, ids, facts, policy)
    if len(votes.latest):
        tally.in_project += np.bincount(votes.lrank, minlength=facts.n_judges)
    exported_groups = np.zeros(votes.n_groups, dtype=bool)
    units = _chunk_units(pool, ids, chunk_qids, facts, votes, tally)
    del pool
    u_active = np.array([q in facts.active for q in chunk_qids], dtype=bool)[units.qpos]
    kept = u_active & ~units.excluded
    tally.left_out["dropped_query"] += int((~u_active).sum())
    tally.left_out["excluded_document"] += int((u_active & units.excluded).sum())
    g = units.group
    fast = kept & (g >= 0) & ~units.seeded & ~np.isin(units.pair, facts.adjudicated_ids)
    fast[fast] = votes.easy[g[fast]]
    if units.odd or policy in AGGREGATING:  # an aggregating policy writes two more keys on every label
        fast[:] = False
    slow = np.flatnonzero(kept & ~fast)
    fidx = np.flatnonzero(fast)
    txt_fast, json_fast = _fast_lines(fidx, chunk_qids, units, votes, facts, tally, exported_groups,
                                      machine=filler is not None)

    txt_out: list = []
    json_out: list = []
    done = 0  # fast lines written so far
    for i, docid in zip(slow.tolist(), units.docs[slow].tolist(), strict=True):
        upto = int(np.searchsorted(fidx, i))
        if upto > done:
            txt_out.extend(txt_fast[done:upto])
            json_out.extend(json_fast[done:upto])
            done = upto
        lines = _resolve_unit(i, chunk_qids[units.qpos[i]], docid, units, votes, facts, tally, exported_groups,
                              policy=policy, filler=filler)
        if lines is not None:
            txt_out.append(lines[0])
            json_out.append(lines[1])
    if len(fidx) > done:
        txt_out.extend(txt_fast[done:])
        json_out.extend(json_fast[done:])
    tally.txt.write("".join(txt_out))
    tally.jsonl.write("".join(json_out))
    del txt_out, json_out, txt_fast, json_fast
    if len(votes.latest):
        _count_votes(votes, units, chunk_qids, exported_groups, facts, tally, overlap_ids)


def _fast_lines(fidx, chunk_qids: list[str], units: _Units, votes: _Votes, facts: _Facts, tally: _Tally,
                exported_groups, *, machine: bool) -> tuple[list[str], list[str]]:
    """The label lines of the units resolved in the vectorised pass (``fidx``), counted."""
    import numpy as np

    fg = units.group[fidx]
    exported_groups[fg] = True
    fgrade = votes.gmin[fg]
    fsingle = (votes.ends - votes.starts)[fg] == 1
    funsure = votes.gunsure[fg]
    tally.sources["single"] += int(fsingle.sum())
    tally.sources["unanimous"] += int(len(fg) - fsingle.sum())
    tally.grade_counts.update(dict(zip(*(v.tolist() for v in np.unique(fgrade, return_counts=True)), strict=True)))
    tally.unsure_labels += int(funsure.sum())
    tally.with_labels.update(chunk_qids[i] for i in np.unique(units.qpos[fidx]).tolist())
    vote_lists = _vote_lists(votes.latest, votes.lrank, votes.starts, votes.ends, facts.names, facts.gv_of,
                             facts.need_of, tally.vote_json)
    return plain_label_lines(
        np.array(chunk_qids, dtype=object)[units.qpos[fidx]].tolist(), units.docs[fidx].tolist(), fgrade.tolist(),
        fsingle.tolist(), vote_lists[fg].tolist(), votes.ggv[fg].tolist(), funsure.tolist(), machine=machine)


def _resolve_unit(i: int, qid: str, docid: str, units: _Units, votes: _Votes, facts: _Facts, tally: _Tally,
                  exported_groups, *, policy: str, filler) -> tuple[str, str] | None:
    """The final label of unit ``i`` (:func:`curation.agree.labels.resolve`) as its two lines, counted;
    None when it has no grade."""
    gi = int(units.group[i])
    pair_id = None if units.pair[i] < 0 else int(units.pair[i])
    adj = facts.adjudications.get(pair_id) if pair_id is not None else None
    key = (qid, docid)
    starts, ends, latest, lrank = votes.starts, votes.ends, votes.latest, votes.lrank
    if adj is None and gi >= 0 and votes.easy[gi]:
        grade = int(votes.gmin[gi])
        source = "single" if ends[gi] - starts[gi] == 1 else "unanimous"
    else:
        vote_list = [Vote(facts.names[lrank[k]], int(latest[k, 2]), bool(facts.is_lead[lrank[k]]),
                          float(votes.lorder[k])) for k in range(starts[gi], ends[gi])] if gi >= 0 else []
        est = facts.estimates.get(key)
        grade, source = resolve(vote_list, policy=policy, adjudication=adj[0] if adj else None,
                                seed=facts.seed_grade.get(key), estimate=None if est is None else est.grade)
    machine = None
    if filler is not None and source == "unjudged" and pair_id is not None:
        from curation.machine.fill import FILL_SOURCE

        machine = filler.labels.get((qid, docid))
        if machine is not None:
            grade, source = machine["grade"], FILL_SOURCE
    tally.count_missing(pair_id, source, qid, docid)
    if grade is None:
        return None
    if units.odd or qid not in tally.with_labels:
        _check_ids(qid, docid)
    parts = []
    gv_used = -1
    if gi >= 0:
        exported_groups[gi] = True
        gv_used = int(votes.ggv[gi])
        for k in range(starts[gi], ends[gi]):
            parts.append(_vote_text(tally.vote_json, facts.names, facts.gv_of, facts.need_of, lrank[k],
                                    *latest[k, 2:6].tolist()))
    adjudication = None
    if source == "adjudicated":
        adjudication = {"lead": adj[2], "grade": int(grade), "reason": adj[1], "guidelines_version": adj[3]}
        if adj[3] is not None:
            gv_used = max(gv_used, adj[3])
    seeds = facts.seed_rows.get(key) if units.seed_keys else None
    extra = {}
    if gi >= 0 and votes.gunsure[gi]:
        # A judge marked their grade unsure. Only then is the key written, so a state exported
        # before unsure answers carried a grade keeps its bytes (and its state hash).
        extra["unsure"] = True
        tally.unsure_labels += 1
        tally.unsure_decided += adjudication is not None
    if filler is not None:
        extra["machine"] = machine
    if policy in AGGREGATING:
        # How the label was aggregated (the export's policy) and from how many judges' labels; only
        # under these policies, so exports under the others keep their bytes.
        extra["aggregation"] = policy
        extra["judges"] = int(ends[gi] - starts[gi]) if gi >= 0 else 0
    lines = (qrel_text(qid, docid, grade),
             label_record_line(qid, docid, grade, source, parts, adjudication, seeds or [], pair_id is not None,
                               gv_used if gv_used >= 0 else None, extra))
    tally.sources[source] += 1
    tally.grade_counts[grade] += 1
    tally.with_labels.add(qid)
    if seeds and source != "seed":
        tally.seed_confirm["confirmed" if (grade > 0) == (max(s["grade"] for s in seeds) > 0) else "rejected"] += 1
    return lines


def _count_votes(votes: _Votes, units: _Units, chunk_qids: list[str], exported_groups, facts: _Facts,
                 tally: _Tally, overlap_ids) -> None:
    """A chunk's votes counted: the labels the export counts per judge and guidelines version, and the
    agreement's pairs (those two or more judges labelled, and the overlap set's) with their votes."""
    import numpy as np

    starts, ends, latest, lrank, gpair = votes.starts, votes.ends, votes.latest, votes.lrank, votes.gpair
    counted = np.repeat(exported_groups, ends - starts)
    tally.in_export += np.bincount(lrank[counted], minlength=facts.n_judges)
    gvs = facts.gv_version[latest[counted, 4]]
    tally.gv_counts.update({int(v): int(n) for v, n in zip(*np.unique(gvs[gvs >= 0], return_counts=True),
                                                            strict=True)})
    shared = (ends - starts) >= 2
    if len(overlap_ids):
        shared |= np.isin(gpair, overlap_ids)
    if shared.any():
        at = np.flatnonzero(shared)
        unit_of = np.argsort(units.pair, kind="stable")
        where = unit_of[np.searchsorted(units.pair, gpair[at], sorter=unit_of)]
        unit_docids = units.docs[where].tolist()
        base = len(tally.agree_units)
        tally.agree_units.extend((chunk_qids[q], d) for q, d in zip(units.qpos[where].tolist(), unit_docids,
                                                                    strict=True))
        rows_at = np.repeat(shared, ends - starts)
        unit_no = np.repeat(base + np.arange(len(at)), (ends - starts)[at])
        tally.agree_votes.append(np.column_stack([unit_no, lrank[rows_at], latest[rows_at, 2]]))


def _query_records(session: Session, project: Project, active: dict) -> dict[str, dict]:
    """queries.jsonl's record of each active query, by qid."""
    qrecs: dict[str, dict] = {}
    for qid in sorted(active):
        q = active[qid]
        if not qid or _SPACE.search(qid):  # re's \s is str.isspace
            _check_ids(qid, "x")
        try:
            stratum = json.loads(q.stratum_json or "{}")
        except json.JSONDecodeError:
            stratum = {}
        qrecs[qid] = {
            "qid": qid,
            "text": q.text,
            "stratum": stratum,
            "stratum_key": q.stratum_key,
            "traffic": _number(q.traffic),
            "users": q.users,
            "weight": _number(q.weight),
            "split": q.split,
            "leak_status": q.leak_status,
            "status": q.status,
        }
        if q.stratum_share:
            # The stratum's known share of the traffic, as golden sample queries recorded it: what the statistics'
            # Horvitz-Thompson mean divides by (curation.evaluate.stats.design), so `golden stats compare` on an
            # export weights as it does on the sample. Written only when known (older states keep their bytes).
            qrecs[qid]["stratum_share"] = _number(q.stratum_share)
    # The information need in force, on the queries that have one (absent otherwise: the bytes of a
    # state exported before needs existed stay the same).
    for qid, need in needs_by_qid(session, project).items():
        if qid in qrecs:
            qrecs[qid].update(description=need.description, narrative=need.narrative, need_version=need.version)
    return qrecs


def _aggregation_record(policy: str) -> dict:
    """The manifest's record of an aggregating policy: what decided the disagreements, and by which
    implementation (a model's labels depend on its version)."""
    if policy == "median":
        return {"policy": policy, "method": "median of the judges' grades (even count, middle grades differ: "
                "unresolved)"}
    from importlib.metadata import version

    model = {"dawid_skene": "crowdkit.aggregation.DawidSkene(n_iter=100)",
             "mace": "crowdkit.aggregation.MACE(random_state=0)"}[policy]
    return {"policy": policy, "method": model, "crowd-kit": version("crowd-kit"),
            "fitted_on": "every judge's latest label of every pair"}


def _manifest_body(session: Session, project: Project, facts: _Facts, tally: _Tally, qrecs: dict, *,
                   policy: str, filler, bar) -> dict:
    """The manifest's facts (without version, parent, created and files). One dict literal, the
    manifest's layout in one place, which is why it runs over 80 lines."""
    import numpy as np

    pid, names, queries = facts.pid, facts.names, facts.queries
    sources = tally.sources
    # Judges: each one's latest labels in the project, and how many of them this export counts.
    judges = [
        {"name": names[i], "role": facts.roles.get(names[i]), "labels": int(tally.in_project[i]),
         "labels_in_export": int(tally.in_export[i])}
        for i in np.flatnonzero(tally.in_project)
    ]
    gv_rows = guidelines_history(session, project)
    current_gv = gv_rows[-1] if gv_rows else None

    runs = list(session.exec(select(Run).where(Run.project_id == pid).order_by(Run.name)))

    findings = list(session.exec(select(LeakFinding).where(LeakFinding.project_id == pid)))
    leak_status = Counter(q.leak_status or "unchecked" for q in queries)
    doc_total = session.exec(select(func.count(Document.id)).where(Document.project_id == pid)).one()

    seeds_by_source = Counter(s["source"] for rows in facts.seed_rows.values() for s in rows)
    scale = grade_values(project)
    fill_sources = ()
    if filler is not None:
        from curation.machine.fill import FILL_SOURCE

        fill_sources = (FILL_SOURCE,)

    progress_step(bar, "agreement")
    agreement = _agreement_summary(tally.agree_units, tally.agree_votes, names, scale)
    progress_step(bar, "files")
    n_pairs = sum(sources.values())
    body = {
        "format": FORMAT,
        "project": project.name,
        "policy": policy,
        **({"aggregation": _aggregation_record(policy)} if policy in AGGREGATING else {}),
        "counts": {
            "queries": len(qrecs),
            "queries_with_labels": len(tally.with_labels),
            "pairs": n_pairs,
            "grades": {str(g): tally.grade_counts.get(g, 0) for g in scale},
            "sources": {s: sources.get(s, 0)
                        for s in EXPORTED_SOURCES + ((policy,) if policy in AGGREGATING else ()) + fill_sources},
            "seed_only": sources.get("seed", 0),
            "left_out": {k: tally.left_out.get(k, 0)
                         for k in ("dropped_query", "excluded_document", "query_not_in_set")},
        },
        "incomplete": {
            "unjudged_pooled_pairs": tally.n_unjudged,
            "unresolved_disagreements": tally.n_unresolved,
        },
        "corpus": {
            "fingerprint": project.corpus_fingerprint,
            "documents": int(doc_total),
            "excluded_documents": len(facts.excluded_docids),
        },
        "query_set": {
            "sha256": project.queries_sha256,
            "queries": len(queries),
            "dropped": facts.dropped,
        },
        "pool": {
            "sha256": project.pool_sha256,
            "depth": project.pool_depth,
            "pairs": tally.pool_pairs,
            "batches": len(tally.batches),
            "seed_pairs": tally.seed_pairs,
            "runs": [{"name": r.name, "sha256": r.sha256, "depth": r.depth} for r in runs],
        },
        "label_scale": {"scale": project.scale, "grades": scale_records(project)},
        "guidelines": {
            "current": {"version": current_gv.version, "sha256": current_gv.sha256} if current_gv else None,
            "versions": [
                {"version": g.version, "sha256": g.sha256, "labels_in_export": tally.gv_counts.get(g.version, 0)}
                for g in gv_rows
            ],
        },
        "judges": judges,
        "agreement": agreement,
        "leak_check": {
            "queries": {k: leak_status[k] for k in sorted(leak_status)},
            "findings": len(findings),
            "by_mode": dict(sorted(Counter(f.mode for f in findings).items())),
            "decisions": dict(sorted(Counter(f.decision or "undecided" for f in findings).items())),
        },
        "split": split_summary(session, project),
        **_judging_order(session, project),
        "seeds": {
            "by_source": {s: seeds_by_source.get(s, 0) for s in SEED_SOURCES},
            "confirmed_by_judges": tally.seed_confirm.get("confirmed", 0),
            "rejected_by_judges": tally.seed_confirm.get("rejected", 0),
            "labels_resting_on_seed_alone": sources.get("seed", 0),
        },
    }
    if tally.unsure_labels:  # written when there are some, so earlier states keep their state hash
        body["counts"]["unsure"] = {
            "labels": tally.unsure_labels,  # labels a judge marked unsure (with their best grade)
            "decided_by_lead": tally.unsure_decided,  # confirmed or changed
        }
    undecided = [f for f in findings if f.decision is None]
    if undecided:  # an export says so (only then: the states of clean exports keep their hash)
        body["leak_check"]["undecided"] = {
            "findings": len(undecided), "chunks": len({(f.query_id, f.chunk_id) for f in undecided}),
            "queries": len({f.query_id for f in undecided}),
        }
    known = known_answer_summary(session, project)
    if known is not None:  # written when the project has known-answer pairs (earlier states keep their hash)
        body["known_answer"] = known
    if filler is not None:
        body["machine_fill"] = _plain({
            "judge": filler.name,
            "kind": "machine",
            "pairs_filled": sources.get(fill_sources[0], 0),
            "pairs_labelled_by_machine": len(filler.labels),
            "calibration": filler.calibration,
        })
    return body


def known_answer_summary(session: Session, project: Project) -> dict | None:
    """The manifest's ``known_answer``: the known-answer set (size, sha256) and each judge's accuracy
    on it (answered, exact and within-one with 95% Wilson intervals, the recent window, the state
    against the bar); None when the project has no known-answer pair. The answers themselves are
    never labels: no file of the export holds them."""
    from curation.judge import gold

    summary = gold.set_summary(session, project)
    if not summary["pairs_all"]:
        return None

    def rate(r) -> dict:
        return {"value": r.value, "low": r.low, "high": r.high, "n": r.n}

    judges = [{"name": j.judge, "answered": j.accuracy.answered, "exact": rate(j.accuracy.exact),
               "within_one": rate(j.accuracy.within_one), "recent": rate(j.accuracy.recent),
               "state": j.accuracy.state, "held": j.held} for j in gold.accuracy_report(session, project)]
    return {**summary, "rate": int(project.known_answer_rate or 0), "bar": float(project.known_answer_bar),
            "judges": judges}


def progress_step(bar, name: str) -> None:
    if bar is not None:
        bar.set_postfix_str(name, refresh=False)
        bar.update(1)
