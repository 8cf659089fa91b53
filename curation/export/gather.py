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

from curation.agree.labels import LABEL_SOURCES, Label, Vote, resolve
from curation.export.manifest import FORMAT, iso_utc, state_hash
from curation.export.split import split_summary
from curation.formats.qrels import label_record_line, label_vote_json, plain_label_lines, qrel_text
from curation.formats.queries import queries_text
from curation.pool.seeds import SEED_SOURCES
from curation.store.models import (
    Adjudication,
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
)
from curation.store.needs import needs_by_qid
from curation.store.projects import guidelines_history
from curation.store.roles import is_lead as lead_role
from curation.store.scale import grade_values, scale_records

# The sources of an exported label (curation.agree.labels): every one but the two that carry no grade.
EXPORTED_SOURCES = tuple(s for s in LABEL_SOURCES if s not in ("unresolved", "unjudged"))
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
    ``golden agreement`` reports it), summarised. ``units``: the (qid, docid) of each pair two or more
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
    """``{"judging_order": ...}`` when the pool was ordered for comparisons (golden assign --order
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
    out = {}
    for pair_id, grade, reason, lead, gv_id in session.exec(
        select(Adjudication.pair_id, Adjudication.grade, Adjudication.reason, User.name,
               Adjudication.guidelines_version_id)
        .join(User, User.id == Adjudication.lead_id)
        .where(Adjudication.project_id == pid)
        .order_by(Adjudication.created_at, Adjudication.id)
    ).all():
        out[pair_id] = (int(grade), reason, lead, gv_of.get(gv_id))  # the latest wins
    return out


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
    latest: dict[tuple[str, str], int] = {}
    for qid, docid, grade in session.exec(
        select(SeedJudgment.qid, SeedJudgment.docid, SeedJudgment.grade)
        .where(SeedJudgment.project_id == pid)
        .order_by(SeedJudgment.imported_at, SeedJudgment.id)
    ).all():
        latest[(str(qid), str(docid))] = int(grade)
    return rows, latest


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


def _fetch(conn, stmt) -> list[tuple]:
    """All rows of ``stmt`` as the driver's plain tuples (integers, strings, booleans: no value needs
    SQLAlchemy's result processing), without building a Row object per row."""
    result = conn.execute(stmt)
    try:
        return result.cursor.fetchall()
    finally:
        result.close()


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
    import numpy as np

    pid = project.id
    grades_list = scale_records(project)
    scale = grade_values(project)

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
    n_judges = max(len(names), 1)

    adjudications = _adjudications(session, pid, gv_of)
    seed_rows, seed_grade = _seeds(session, pid)
    seeds_by_qid: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for key in seed_rows.keys() | seed_grade.keys():
        seeds_by_qid[key[0]].append(key)
    known_qids = {q.qid for q in queries}

    progress_step(bar, "final labels")
    filler = None
    if fill is not None:
        from curation.machine.fill import FILL_SOURCE, machine_fill

        filler = machine_fill(session, project, fill)
    spool.mkdir(parents=True, exist_ok=True)
    txt, jsonl = _HashedFile(spool / "qrels.txt"), _HashedFile(spool / "qrels.jsonl")
    vote_json: dict[tuple, str] = {}
    adjudicated_ids = np.array(sorted(adjudications), dtype=np.int64)
    unjudged: list[tuple[str, str]] = []
    unresolved: list[tuple[str, str]] = []
    n_unjudged = n_unresolved = 0
    unsure_labels = unsure_decided = 0
    left_out = Counter()
    sources = Counter()
    grade_counts = Counter()
    seed_confirm = Counter()
    with_labels: set[str] = set()
    in_project = np.zeros(n_judges, dtype=np.int64)  # each judge's latest labels in the project
    in_export = np.zeros(n_judges, dtype=np.int64)  # ... and those this export counts
    gv_counts = Counter()
    pool_pairs = seed_pairs = 0
    batches: set[int] = set()
    conn = session.connection()
    overlap_ids = _overlap_assigned(session, pid)
    agree_units: list[tuple[str, str]] = []  # the overlap pairs' (qid, docid), and their latest votes:
    agree_votes: list[np.ndarray] = []  # (unit number, judge rank, grade) rows, for the agreement summary
    for chunk in _chunks(session, pid, queries, chunk_pairs or CHUNK_PAIRS):
        qid_of = {q.id: q.qid for q in chunk}
        ids = list(qid_of)
        chunk_qids = [q.qid for q in chunk]  # in qid order (_chunks)
        pool = _fetch(conn,
            select(PoolPair.id, PoolPair.query_id, Document.docid, Document.excluded, PoolPair.seed_source,
                   PoolPair.batch)
            .join(Document, Document.id == PoolPair.document_id)
            .where(PoolPair.query_id.in_(ids))
        )
        rows = _fetch(conn,
            select(Judgment.pair_id, Judgment.judge_id, Judgment.grade, Judgment.unsure,
                   func.coalesce(Judgment.guidelines_version_id, 0), func.coalesce(Judgment.need_version_id, 0))
            .join(PoolPair, PoolPair.id == Judgment.pair_id)
            # No filter on Judgment.project_id: the pairs are the project's, and SQLite would read
            # every judgment of the project through that index for each chunk.
            .where(PoolPair.query_id.in_(ids), Judgment.skipped == false(), Judgment.grade.is_not(None))
            .order_by(Judgment.answered_at, Judgment.id)
        )
        latest, lrank, lorder, starts = _latest_votes(rows, rank_of, n_judges)
        del rows
        ends = np.r_[starts[1:], len(latest)] if len(starts) else starts
        n_groups = len(starts)
        if len(latest):
            in_project += np.bincount(lrank, minlength=n_judges)
            gmin = np.minimum.reduceat(latest[:, 2], starts)
            gmax = np.maximum.reduceat(latest[:, 2], starts)
            glead = np.maximum.reduceat(is_lead[lrank].astype(np.int64), starts)
            ggv = np.maximum.reduceat(gv_version[latest[:, 4]], starts)
            gunsure = np.maximum.reduceat(latest[:, 3], starts) > 0
        else:
            gmin = gmax = glead = ggv = np.zeros(0, dtype=np.int64)
            gunsure = np.zeros(0, dtype=bool)
        gpair = latest[starts, 0]  # each group's pair id, ascending
        easy = gmin == gmax
        if policy == "lead":
            easy &= glead == 0
        exported_groups = np.zeros(n_groups, dtype=bool)

        # The chunk's units (pooled pairs, and seed judgments of pairs not pooled) in the files' order.
        pool_pairs += len(pool)
        u_pair, u_query, u_docid, u_excl, u_seeded, u_batch = (list(c) for c in zip(*pool, strict=True)) if pool \
            else ([], [], [], [], [], [])
        del pool
        seed_pairs += len(u_seeded) - u_seeded.count(None) - u_seeded.count("")  # the pairs a seed pooled
        batches.update(u_batch)
        del u_seeded, u_batch
        id_arr = np.array(ids, dtype=np.int64)  # query id -> its place in the chunk, by a sorted lookup
        by_id = np.argsort(id_arr)
        u_qpos = by_id[np.searchsorted(id_arr[by_id], np.array(u_query, dtype=np.int64))].tolist()
        del u_query
        chunk_seeds = any(q in seeds_by_qid for q in chunk_qids)
        seed_keys: set[tuple[str, str]] = set()
        if chunk_seeds:
            pooled_keys = {(chunk_qids[q], d) for q, d in zip(u_qpos, u_docid, strict=True)}
            for qpos, qid in enumerate(chunk_qids):
                for key in seeds_by_qid.get(qid, ()):
                    seed_keys.add(key)
                    if key not in pooled_keys:
                        u_pair.append(-1)
                        u_qpos.append(qpos)
                        u_docid.append(key[1])
                        u_excl.append(key[1] in excluded_docids)
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
        if excluded_docids:
            u_excl |= np.fromiter((d in excluded_docids for d in docs.tolist()), dtype=bool, count=len(docs))
        u_active = np.array([q in active for q in chunk_qids], dtype=bool)[u_qpos]
        g = np.searchsorted(gpair, u_pair) if n_groups else np.zeros(len(u_pair), dtype=np.int64)
        found = g < n_groups
        found[found] = gpair[g[found]] == u_pair[found]
        g = np.where(found, g, -1)
        u_seed = np.zeros(len(u_pair), dtype=bool)
        if seed_keys:
            u_seed = np.array([(chunk_qids[q], d) in seed_keys for q, d in zip(u_qpos.tolist(), docs.tolist(),
                                                                                strict=True)], dtype=bool)
        kept = u_active & ~u_excl
        left_out["dropped_query"] += int((~u_active).sum())
        left_out["excluded_document"] += int((u_active & u_excl).sum())
        # The common case, in vectorised passes: a pooled pair whose latest votes agree (or that one
        # judge labelled), not adjudicated, without seed judgments; every other pair is resolved below.
        fast = kept & found & ~u_seed & ~np.isin(u_pair, adjudicated_ids)
        fast[fast] = easy[g[fast]]
        if odd:
            fast[:] = False
        slow = np.flatnonzero(kept & ~fast)
        fidx = np.flatnonzero(fast)
        fg = g[fidx]
        exported_groups[fg] = True
        fgrade = gmin[fg]
        fsingle = (ends - starts)[fg] == 1
        funsure = gunsure[fg]
        sources["single"] += int(fsingle.sum())
        sources["unanimous"] += int(len(fg) - fsingle.sum())
        grade_counts.update(dict(zip(*(v.tolist() for v in np.unique(fgrade, return_counts=True)), strict=True)))
        unsure_labels += int(funsure.sum())
        with_labels.update(chunk_qids[i] for i in np.unique(u_qpos[fidx]).tolist())
        txt_fast, json_fast = plain_label_lines(
            np.array(chunk_qids, dtype=object)[u_qpos[fidx]].tolist(), docs[fidx].tolist(), fgrade.tolist(),
            fsingle.tolist(), _vote_lists(latest, lrank, starts, ends, names, gv_of, need_of, vote_json)[fg].tolist(),
            ggv[fg].tolist(), funsure.tolist(), machine=filler is not None)

        # The other pairs, one at a time (curation.agree.labels.resolve), their lines put in their place.
        txt_out: list = []
        json_out: list = []
        done = 0  # fast lines written so far
        slow_docids = docs[slow].tolist()
        for i, docid in zip(slow.tolist(), slow_docids, strict=True):
            upto = int(np.searchsorted(fidx, i))
            if upto > done:
                txt_out.extend(txt_fast[done:upto])
                json_out.extend(json_fast[done:upto])
                done = upto
            qid = chunk_qids[u_qpos[i]]
            gi = int(g[i])
            pair_id = None if u_pair[i] < 0 else int(u_pair[i])
            adj = adjudications.get(pair_id) if pair_id is not None else None
            key = (qid, docid)
            if adj is None and gi >= 0 and easy[gi]:
                grade = int(gmin[gi])
                source = "single" if ends[gi] - starts[gi] == 1 else "unanimous"
            else:
                votes = [Vote(names[lrank[k]], int(latest[k, 2]), bool(is_lead[lrank[k]]), float(lorder[k]))
                         for k in range(starts[gi], ends[gi])] if gi >= 0 else []
                grade, source = resolve(votes, policy=policy, adjudication=adj[0] if adj else None,
                                        seed=seed_grade.get(key))
            machine = None
            if filler is not None and source == "unjudged" and pair_id is not None:
                machine = filler.labels.get((qid, docid))
                if machine is not None:
                    grade, source = machine["grade"], FILL_SOURCE
            if pair_id is not None and source in ("unjudged", "seed"):
                n_unjudged += 1
                if len(unjudged) < EXAMPLES:
                    unjudged.append((qid, docid))
            if source == "unresolved":
                n_unresolved += 1
                if len(unresolved) < EXAMPLES:
                    unresolved.append((qid, docid))
            if grade is None:
                continue
            if odd or qid not in with_labels:
                _check_ids(qid, docid)
            parts = []
            gv_used = -1
            if gi >= 0:
                exported_groups[gi] = True
                gv_used = int(ggv[gi])
                for k in range(starts[gi], ends[gi]):
                    parts.append(_vote_text(vote_json, names, gv_of, need_of, lrank[k], *latest[k, 2:6].tolist()))
            adjudication = None
            if source == "adjudicated":
                adjudication = {"lead": adj[2], "grade": int(grade), "reason": adj[1], "guidelines_version": adj[3]}
                if adj[3] is not None:
                    gv_used = max(gv_used, adj[3])
            seeds = seed_rows.get(key) if chunk_seeds else None
            extra = {}
            if gi >= 0 and gunsure[gi]:
                # A judge marked their grade unsure. Only then is the key written, so a state exported
                # before unsure answers carried a grade keeps its bytes (and its state hash).
                extra["unsure"] = True
                unsure_labels += 1
                unsure_decided += adjudication is not None
            if filler is not None:
                extra["machine"] = machine
            txt_out.append(qrel_text(qid, docid, grade))
            json_out.append(label_record_line(qid, docid, grade, source, parts, adjudication, seeds or [],
                                              pair_id is not None, gv_used if gv_used >= 0 else None, extra))
            sources[source] += 1
            grade_counts[grade] += 1
            with_labels.add(qid)
            if seeds and source != "seed":
                seed_confirm["confirmed" if (grade > 0) == (max(s["grade"] for s in seeds) > 0) else "rejected"] += 1
        if len(fidx) > done:
            txt_out.extend(txt_fast[done:])
            json_out.extend(json_fast[done:])
        txt.write("".join(txt_out))
        jsonl.write("".join(json_out))
        del txt_out, json_out, txt_fast, json_fast
        if len(latest):
            counted = np.repeat(exported_groups, ends - starts)
            in_export += np.bincount(lrank[counted], minlength=n_judges)
            gvs = gv_version[latest[counted, 4]]
            gv_counts.update({int(v): int(n) for v, n in zip(*np.unique(gvs[gvs >= 0], return_counts=True),
                                                              strict=True)})
            # The agreement's pairs: those two or more judges labelled, and the overlap set's.
            shared = (ends - starts) >= 2
            if len(overlap_ids):
                shared |= np.isin(gpair, overlap_ids)
            if shared.any():
                at = np.flatnonzero(shared)
                unit_of = np.argsort(u_pair, kind="stable")
                where = unit_of[np.searchsorted(u_pair, gpair[at], sorter=unit_of)]
                unit_docids = docs[where].tolist()
                base = len(agree_units)
                agree_units.extend((chunk_qids[q], d) for q, d in zip(u_qpos[where].tolist(), unit_docids,
                                                                      strict=True))
                rows_at = np.repeat(shared, ends - starts)
                unit_no = np.repeat(base + np.arange(len(at)), (ends - starts)[at])
                agree_votes.append(np.column_stack([unit_no, lrank[rows_at], latest[rows_at, 2]]))
    # Seed judgments of queries that are not in the project are counted as left out.
    for qid, keys in seeds_by_qid.items():
        if qid not in known_qids:
            left_out["query_not_in_set"] += len(keys)
    files = {"qrels.txt": txt.close(), "qrels.jsonl": jsonl.close()}

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
            # The stratum's known share of the traffic, as golden sample recorded it: what the statistics'
            # Horvitz-Thompson mean divides by (curation.evaluate.stats.design), so `golden compare` on an
            # export weights as it does on the sample. Written only when known (older states keep their bytes).
            qrecs[qid]["stratum_share"] = _number(q.stratum_share)
    # The information need in force, on the queries that have one (absent otherwise: the bytes of a
    # state exported before needs existed stay the same).
    for qid, need in needs_by_qid(session, project).items():
        if qid in qrecs:
            qrecs[qid].update(description=need.description, narrative=need.narrative, need_version=need.version)
    qfile = _HashedFile(spool / "queries.jsonl")
    qfile.write(queries_text((qrecs[qid] for qid in sorted(qrecs)), spaced=True))
    files["queries.jsonl"] = qfile.close()

    # Judges: each one's latest labels in the project, and how many of them this export counts.
    judges = [
        {"name": names[i], "role": roles.get(names[i]), "labels": int(in_project[i]),
         "labels_in_export": int(in_export[i])}
        for i in np.flatnonzero(in_project)
    ]
    gv_rows = guidelines_history(session, project)
    current_gv = gv_rows[-1] if gv_rows else None

    runs = list(session.exec(select(Run).where(Run.project_id == pid).order_by(Run.name)))

    findings = list(session.exec(select(LeakFinding).where(LeakFinding.project_id == pid)))
    leak_status = Counter(q.leak_status or "unchecked" for q in queries)
    doc_total = session.exec(select(func.count(Document.id)).where(Document.project_id == pid)).one()

    seeds_by_source = Counter(s["source"] for rows in seed_rows.values() for s in rows)

    progress_step(bar, "agreement")
    agreement = _agreement_summary(agree_units, agree_votes, names, scale)
    progress_step(bar, "files")
    n_pairs = sum(sources.values())
    body = {
        "format": FORMAT,
        "project": project.name,
        "policy": policy,
        "counts": {
            "queries": len(qrecs),
            "queries_with_labels": len(with_labels),
            "pairs": n_pairs,
            "grades": {str(g): grade_counts.get(g, 0) for g in scale},
            "sources": {s: sources.get(s, 0) for s in EXPORTED_SOURCES + ((FILL_SOURCE,) if filler else ())},
            "seed_only": sources.get("seed", 0),
            "left_out": {k: left_out.get(k, 0) for k in ("dropped_query", "excluded_document", "query_not_in_set")},
        },
        "incomplete": {
            "unjudged_pooled_pairs": n_unjudged,
            "unresolved_disagreements": n_unresolved,
        },
        "corpus": {
            "fingerprint": project.corpus_fingerprint,
            "documents": int(doc_total),
            "excluded_documents": len(excluded_docids),
        },
        "query_set": {
            "sha256": project.queries_sha256,
            "queries": len(queries),
            "dropped": dropped,
        },
        "pool": {
            "sha256": project.pool_sha256,
            "depth": project.pool_depth,
            "pairs": pool_pairs,
            "batches": len(batches),
            "seed_pairs": seed_pairs,
            "runs": [{"name": r.name, "sha256": r.sha256, "depth": r.depth} for r in runs],
        },
        "label_scale": {"scale": project.scale, "grades": grades_list},
        "guidelines": {
            "current": {"version": current_gv.version, "sha256": current_gv.sha256} if current_gv else None,
            "versions": [
                {"version": g.version, "sha256": g.sha256, "labels_in_export": gv_counts.get(g.version, 0)}
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
            "confirmed_by_judges": seed_confirm.get("confirmed", 0),
            "rejected_by_judges": seed_confirm.get("rejected", 0),
            "labels_resting_on_seed_alone": sources.get("seed", 0),
        },
    }
    if unsure_labels:  # written when there are some, so earlier states keep their state hash
        body["counts"]["unsure"] = {
            "labels": unsure_labels,  # labels a judge marked unsure (with their best grade)
            "decided_by_lead": unsure_decided,  # confirmed or changed
        }
    undecided = [f for f in findings if f.decision is None]
    if undecided:  # issue 14: an export says so (only then: the states of clean exports keep their hash)
        body["leak_check"]["undecided"] = {
            "findings": len(undecided), "chunks": len({(f.query_id, f.chunk_id) for f in undecided}),
            "queries": len({f.query_id for f in undecided}),
        }
    if filler is not None:
        body["machine_fill"] = _plain({
            "judge": filler.name,
            "kind": "machine",
            "pairs_filled": sources.get(FILL_SOURCE, 0),
            "pairs_labelled_by_machine": len(filler.labels),
            "calibration": filler.calibration,
        })
    return VersionState(files, body, qrecs, unjudged, unresolved, n_unjudged, n_unresolved)


def progress_step(bar, name: str) -> None:
    if bar is not None:
        bar.set_postfix_str(name, refresh=False)
        bar.update(1)
