"""Gathering a version's state from the store: the final labels with their votes, adjudications and
seeds, the queries and the manifest's facts, and the three data files built from them.

The judgments are read in one pass, a chunk of queries at a time (:data:`CHUNK_PAIRS` pooled pairs
per chunk, in qid order, which is the files' order): one statement per chunk for the pool pairs and
one for the judgments, each judge's latest label and the per-pair vote counts, grade range and lead
flag found with a few numpy passes (``np.unique`` on the (pair, judge) key, ``ufunc.reduceat`` over
the pairs), and only pairs that need a decision (disagreements, adjudications, the ``lead`` policy,
seeds) go through :func:`curation.agree.labels.resolve`. The lines of ``qrels.txt`` and
``qrels.jsonl`` are written to files as each chunk is done, their sha256 computed as they are
written, so memory holds one chunk, the queries, the adjudications and the seed judgments, never
the judgments table. ``gather_state`` is one long function because each manifest figure is counted
from the same rows as the files; its steps are the ones the export's progress bar names."""

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

from curation.agree.labels import LABEL_SOURCES, LEAD_ROLES, Vote, load_judgments, resolve
from curation.export.manifest import FORMAT, iso_utc, state_hash
from curation.export.split import split_summary
from curation.formats.qrels import label_record_line, label_vote_json, qrel_text
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


def _agreement_summary(session: Session, project: Project, scale: list[int]) -> dict | None:
    """Agreement on the overlap pairs (:func:`curation.agree.agreement.agreement_report`), summarised."""
    from curation.agree.agreement import agreement_report
    from curation.agree.settings import RESAMPLES, SEED

    records = load_judgments(session, project, overlap_only=True, seconds=True)
    if not records:
        return None
    report = agreement_report(records, scale=scale)  # the report's defaults: curation.agree.settings
    d = report.as_dict()
    overall = d["overall"]
    return _plain({
        "computed_by": "curation.agree.agreement.agreement_report "
                       f"(overlap pairs; query bootstrap, {RESAMPLES} resamples, seed {SEED})",
        "judges": d["judges"],
        "pairs": overall.get("pairs"),
        "queries": overall.get("queries"),
        "verdict": d["verdict"],
        "overall": {"measures": overall.get("measures"), "binary": overall.get("binary")},
        "pairwise": [
            {"judges": c.get("judges"), "pairs": c.get("pairs"), "measures": c.get("measures")}
            for c in d["pairwise"]
        ],
        "cut": d["cut"],
        "notes": d["notes"],
    })


def _judging_order(session, project) -> dict:
    """``{"judging_order": ...}`` when the pool was ordered for comparisons (golden assign --order
    decisive), else nothing (curation.judge.decisive.manifest_record)."""
    from curation.judge.decisive import manifest_record

    record = manifest_record(session, project)
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

    def write(self, text: str) -> None:
        data = text.encode("utf-8")
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
    """The state of ``project``'s golden set under ``policy``: its three data files (written into the
    folder ``spool``), the manifest's facts, and what is unjudged or unresolved; ``bar`` (a tqdm bar
    or None) is advanced per step. The labels are the ones :func:`curation.agree.labels.final_labels`
    gives (each judge's latest label, skips ignored; the latest adjudication; seeds for pairs nobody
    judged), computed here a chunk of queries at a time. ``fill`` (``machine:NAME``): pooled pairs no
    person labelled take that machine judge's label, flagged per pair and counted in the manifest
    (:mod:`curation.machine.fill`); without it nothing a machine said is read."""
    import numpy as np

    pid = project.id
    grades_list = json.loads(project.grades_json or "[]")
    scale = sorted(int(g["grade"]) for g in grades_list) or [0, 1]

    queries = list(session.exec(select(Query).where(Query.project_id == pid)))
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
        is_lead[rank[name]] = role in LEAD_ROLES
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
    for chunk in _chunks(session, pid, queries, chunk_pairs or CHUNK_PAIRS):
        qid_of = {q.id: q.qid for q in chunk}
        ids = list(qid_of)
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
        if len(latest):
            in_project += np.bincount(lrank, minlength=n_judges)
            gmin = np.minimum.reduceat(latest[:, 2], starts)
            gmax = np.maximum.reduceat(latest[:, 2], starts)
            glead = np.maximum.reduceat(is_lead[lrank].astype(np.int64), starts)
            ggv = np.maximum.reduceat(gv_version[latest[:, 4]], starts)
        group_of = dict(zip(latest[starts, 0].tolist(), range(len(starts)), strict=True))
        easy = ((gmin == gmax) if len(latest) else np.zeros(0, dtype=bool))
        if policy == "lead" and len(latest):
            easy &= glead == 0
        l_grade, l_unsure, l_gv = latest[:, 2].tolist(), latest[:, 3].tolist(), latest[:, 4].tolist()
        l_need = latest[:, 5].tolist()
        l_rank, l_order = lrank.tolist(), lorder.tolist()
        g_start, g_end, g_min, g_gv = starts.tolist(), ends.tolist(), (gmin.tolist() if len(latest) else []), \
            (ggv.tolist() if len(latest) else [])
        g_easy = easy.tolist()
        exported_groups = np.zeros(len(starts), dtype=bool)

        units = [(qid_of[qpk], docid, pair_id, bool(excl)) for pair_id, qpk, docid, excl, seed_src, batch in pool]
        pool_pairs += len(pool)
        seed_pairs += sum(1 for r in pool if r[4])
        batches.update(r[5] for r in pool)
        del pool
        pooled_keys = {(q, d) for q, d, _, _ in units} if any(q in seeds_by_qid for q in qid_of.values()) else set()
        for qid in qid_of.values():
            for key in seeds_by_qid.get(qid, ()):
                if key not in pooled_keys:
                    units.append((key[0], key[1], None, key[1] in excluded_docids))
        units.sort()
        # Checked once per chunk: white space in a docid (refused, below) and seeds of these queries.
        docids = [u[1] for u in units]
        odd_docids = not all(docids) or _SPACE.search("\0".join(docids)) is not None
        del docids
        chunk_seeds = any(q in seeds_by_qid for q in qid_of.values())
        txt_lines: list[str] = []
        json_lines: list[str] = []
        for qid, docid, pair_id, excluded in units:
            if qid not in active:
                left_out["dropped_query"] += 1
                continue
            if excluded or docid in excluded_docids:
                left_out["excluded_document"] += 1
                continue
            g = group_of.get(pair_id, -1) if pair_id is not None else -1
            adj = adjudications.get(pair_id) if pair_id is not None else None
            key = (qid, docid) if chunk_seeds or adj is not None or g < 0 or not g_easy[g] else None
            if adj is None and g >= 0 and g_easy[g]:
                grade = g_min[g]
                source = "single" if g_end[g] - g_start[g] == 1 else "unanimous"
            else:
                votes = [Vote(names[l_rank[i]], l_grade[i], bool(is_lead[l_rank[i]]), float(l_order[i]))
                         for i in range(g_start[g], g_end[g])] if g >= 0 else []
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
            if odd_docids or qid not in with_labels:
                _check_ids(qid, docid)
            parts = []
            gv_used = -1
            if g >= 0:
                exported_groups[g] = True
                gv_used = g_gv[g]
                for i in range(g_start[g], g_end[g]):
                    vk = (l_rank[i], l_grade[i], l_unsure[i], l_gv[i], l_need[i])
                    text = vote_json.get(vk)
                    if text is None:
                        gv = gv_of.get(l_gv[i])
                        text = vote_json[vk] = label_vote_json(names[l_rank[i]], l_grade[i], bool(l_unsure[i]), gv,
                                                               need_version=need_of.get(l_need[i]))
                    parts.append(text)
            adjudication = None
            if source == "adjudicated":
                adjudication = {"lead": adj[2], "grade": int(grade), "reason": adj[1], "guidelines_version": adj[3]}
                if adj[3] is not None:
                    gv_used = max(gv_used, adj[3])
            seeds = seed_rows.get(key) if chunk_seeds else None
            extra = {}
            if g >= 0 and any(l_unsure[i] for i in range(g_start[g], g_end[g])):
                # A judge marked their grade unsure. Only then is the key written, so a state exported
                # before unsure answers carried a grade keeps its bytes (and its state hash).
                extra["unsure"] = True
                unsure_labels += 1
                unsure_decided += adjudication is not None
            if filler is not None:
                extra["machine"] = machine
            txt_lines.append(qrel_text(qid, docid, grade))
            json_lines.append(label_record_line(qid, docid, grade, source, parts, adjudication, seeds or [],
                                                pair_id is not None, gv_used if gv_used >= 0 else None, extra))
            sources[source] += 1
            grade_counts[grade] += 1
            with_labels.add(qid)
            if seeds and source != "seed":
                seed_confirm["confirmed" if (grade > 0) == (max(s["grade"] for s in seeds) > 0) else "rejected"] += 1
        txt.write("".join(txt_lines))
        jsonl.write("".join(json_lines))
        del txt_lines, json_lines
        if len(latest):
            counted = np.repeat(exported_groups, ends - starts)
            in_export += np.bincount(lrank[counted], minlength=n_judges)
            gvs = gv_version[latest[counted, 4]]
            gv_counts.update({int(v): int(n) for v, n in zip(*np.unique(gvs[gvs >= 0], return_counts=True),
                                                              strict=True)})
    # Seed judgments of queries that are not in the project are counted as left out.
    for qid, keys in seeds_by_qid.items():
        if qid not in known_qids:
            left_out["query_not_in_set"] += len(keys)
    files = {"qrels.txt": txt.close(), "qrels.jsonl": jsonl.close()}

    qrecs: dict[str, dict] = {}
    for qid in sorted(active):
        q = active[qid]
        if any(c.isspace() for c in qid) or not qid:
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
    agreement = _agreement_summary(session, project, scale)
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
