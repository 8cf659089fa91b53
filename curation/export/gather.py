"""Gathering a version's state from the store: the SQL that collects the final labels, their votes,
adjudications and seeds, the queries and the manifest's facts, and the three data files built from
them. ``gather_state`` is one long function (about 200 lines) because each manifest figure is
counted from the same rows as the files; its steps are the ones the export's progress bar names."""

from __future__ import annotations

import json
import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import true
from sqlmodel import Session, func, select

from curation.agree.labels import LABEL_SOURCES, final_labels, load_judgments
from curation.export.manifest import FORMAT, iso_utc, sha256_bytes, state_hash
from curation.export.split import split_summary
from curation.formats.qrels import QrelLine, format_label_record, format_qrel
from curation.formats.queries import queries_text
from curation.pool.seeds import SEED_SOURCES
from curation.store.lookups import join_pair_text
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


@dataclass
class VersionState:
    files: dict[str, bytes]  # qrels.txt, qrels.jsonl, queries.jsonl
    body: dict  # the manifest without version/parent/created/files
    labels: dict[tuple[str, str], dict]  # (qid, docid) -> qrels.jsonl record
    queries: dict[str, dict]  # qid -> queries.jsonl record
    unjudged: list[tuple[str, str]]
    unresolved: list[tuple[str, str]]

    @property
    def sha256(self) -> str:
        return state_hash({n: sha256_bytes(b) for n, b in self.files.items()}, self.body)


def _latest_judgments(session: Session, project: Project) -> dict[int, dict[str, dict]]:
    """pair_id -> judge -> the judge's latest labelling judgment (skips ignored), with its guidelines
    version number: the same judgments :func:`curation.agree.labels.final_labels` counts."""
    rows = session.exec(
        select(Judgment.pair_id, User.name, Judgment.grade, Judgment.unsure, Judgment.skipped,
               GuidelinesVersion.version, QueryNeed.version)
        .join(User, User.id == Judgment.judge_id)
        .outerjoin(GuidelinesVersion, GuidelinesVersion.id == Judgment.guidelines_version_id)
        .outerjoin(QueryNeed, QueryNeed.id == Judgment.need_version_id)
        .where(Judgment.project_id == project.id)
        .order_by(Judgment.answered_at, Judgment.id)
    ).all()
    out: dict[int, dict[str, dict]] = defaultdict(dict)
    for pair_id, judge, grade, unsure, skipped, gv, need in rows:
        if grade is None or skipped:
            continue
        vote = {"judge": judge, "grade": int(grade), "unsure": bool(unsure), "guidelines_version": gv}
        if need is not None:  # the query's information need it was made under (absent: none shown)
            vote["need_version"] = need
        out[pair_id][judge] = vote
    return out


def _adjudication_versions(session: Session, project: Project) -> dict[int, int | None]:
    out: dict[int, int | None] = {}
    for pair_id, gv in session.exec(
        select(Adjudication.pair_id, GuidelinesVersion.version)
        .outerjoin(GuidelinesVersion, GuidelinesVersion.id == Adjudication.guidelines_version_id)
        .where(Adjudication.project_id == project.id)
        .order_by(Adjudication.created_at, Adjudication.id)
    ).all():
        out[pair_id] = gv
    return out


def _agreement_summary(session: Session, project: Project, scale: list[int]) -> dict | None:
    """Agreement on the overlap pairs (:func:`curation.agree.agreement.agreement_report`), summarised."""
    from curation.agree.agreement import agreement_report
    from curation.agree.settings import RESAMPLES, SEED

    records = load_judgments(session, project, overlap_only=True)
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


def gather_state(session: Session, project: Project, *, policy: str, bar=None, fill: str | None = None
                 ) -> VersionState:
    """The state of ``project``'s golden set under ``policy``: its three data files, the manifest's
    facts, and what is unjudged or unresolved; ``bar`` (a tqdm bar or None) is advanced per step.
    ``fill`` (``machine:NAME``): pooled pairs no person labelled take that machine judge's label,
    flagged per pair and counted in the manifest (:mod:`curation.machine.fill`); without it nothing
    a machine said is read."""
    pid = project.id
    grades_list = json.loads(project.grades_json or "[]")
    scale = sorted(int(g["grade"]) for g in grades_list) or [0, 1]

    queries = list(session.exec(select(Query).where(Query.project_id == pid)))
    active = {q.qid: q for q in queries if q.status != "dropped"}
    dropped = sorted(q.qid for q in queries if q.status == "dropped")

    pairs = session.exec(
        join_pair_text(
            select(PoolPair.id, Query.qid, Document.docid, Document.excluded, PoolPair.seed_source, PoolPair.batch)
        ).where(PoolPair.project_id == pid)
    ).all()
    pooled = {(q, d): (i, excl, seed_src, batch) for i, q, d, excl, seed_src, batch in pairs}
    excluded_docids = set(
        session.exec(select(Document.docid).where(Document.project_id == pid, Document.excluded == true())).all()
    )

    seed_rows: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for qid, docid, source, grade in session.exec(
        select(SeedJudgment.qid, SeedJudgment.docid, SeedJudgment.source, SeedJudgment.grade)
        .where(SeedJudgment.project_id == pid)
        .order_by(SeedJudgment.source, SeedJudgment.qid, SeedJudgment.docid)
    ).all():
        seed_rows[(str(qid), str(docid))].append({"source": source, "grade": int(grade)})

    latest = _latest_judgments(session, project)
    adj_versions = _adjudication_versions(session, project)
    progress_step(bar, "final labels")
    finals = final_labels(session, project, policy=policy, include_unjudged=True)
    filler = None
    if fill is not None:
        from curation.machine.fill import FILL_SOURCE, machine_fill

        filler = machine_fill(session, project, fill)

    records: dict[tuple[str, str], dict] = {}
    unjudged: list[tuple[str, str]] = []
    unresolved: list[tuple[str, str]] = []
    left_out = Counter()
    sources = Counter()
    for fl in finals:
        key = (fl.qid, fl.docid)
        if fl.qid not in active:
            left_out["dropped_query" if fl.qid in dropped else "query_not_in_set"] += 1
            continue
        if fl.docid in excluded_docids:
            left_out["excluded_document"] += 1
            continue
        in_pool = key in pooled
        machine = None
        if filler is not None and fl.source == "unjudged" and in_pool and key in filler.labels:
            machine = filler.labels[key]
            fl = fl._replace(grade=machine["grade"], source=FILL_SOURCE)
        if in_pool and fl.source in ("unjudged", "seed"):
            unjudged.append(key)
        if fl.source == "unresolved":
            unresolved.append(key)
        if fl.grade is None:
            continue
        _check_ids(fl.qid, fl.docid)
        pair_id = pooled[key][0] if in_pool else None
        votes = sorted((latest.get(pair_id, {}) if pair_id is not None else {}).values(), key=lambda v: v["judge"])
        gv_used = [v["guidelines_version"] for v in votes if v["guidelines_version"] is not None]
        adjudication = None
        if fl.source == "adjudicated":
            adjudication = {
                "lead": fl.adjudicated_by, "grade": int(fl.grade), "reason": fl.reason,
                "guidelines_version": adj_versions.get(pair_id),
            }
            if adjudication["guidelines_version"] is not None:
                gv_used.append(adjudication["guidelines_version"])
        records[key] = {
            "qid": fl.qid,
            "docid": fl.docid,
            "grade": int(fl.grade),
            "source": fl.source,
            "seed_only": fl.source == "seed",
            "judgments": votes,
            "adjudication": adjudication,
            "seeds": seed_rows.get(key, []),
            "pooled": in_pool,
            "guidelines_version": max(gv_used) if gv_used else None,
        }
        if any(v["unsure"] for v in votes):
            # A judge marked their grade unsure. Only then is the key written, so a state exported
            # before unsure answers carried a grade keeps its bytes (and its state hash).
            records[key]["unsure"] = True
        if filler is not None:
            records[key]["machine"] = machine
        sources[fl.source] += 1

    ordered = sorted(records)
    qrels_txt = "".join(format_qrel(QrelLine(q, "0", d, records[(q, d)]["grade"])) for q, d in ordered)
    qrels_jsonl = "".join(format_label_record(records[k]) for k in ordered)

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
    # The information need in force, on the queries that have one (absent otherwise: the bytes of a
    # state exported before needs existed stay the same).
    for qid, need in needs_by_qid(session, project).items():
        if qid in qrecs:
            qrecs[qid].update(description=need.description, narrative=need.narrative, need_version=need.version)
    queries_jsonl = queries_text((qrecs[qid] for qid in sorted(qrecs)), spaced=True)

    # Judges: each one's latest labels in the project, and how many of them this export counts.
    roles = dict(session.exec(select(User.name, User.role)).all())
    in_project = Counter(judge for by_judge in latest.values() for judge in by_judge)
    counted = Counter(v["judge"] for r in records.values() for v in r["judgments"])
    judges = [
        {"name": name, "role": roles.get(name), "labels": in_project[name], "labels_in_export": counted.get(name, 0)}
        for name in sorted(in_project)
    ]
    gv_rows = guidelines_history(session, project)
    gv_counts = Counter(v["guidelines_version"] for r in records.values() for v in r["judgments"])
    current_gv = gv_rows[-1] if gv_rows else None

    runs = list(session.exec(select(Run).where(Run.project_id == pid).order_by(Run.name)))
    batches = sorted({b for _, _, _, b in pooled.values()})

    findings = list(session.exec(select(LeakFinding).where(LeakFinding.project_id == pid)))
    leak_status = Counter(q.leak_status or "unchecked" for q in queries)
    doc_total = session.exec(select(func.count(Document.id)).where(Document.project_id == pid)).one()

    grade_counts = Counter(r["grade"] for r in records.values())
    seeds_by_source = Counter(s["source"] for rows in seed_rows.values() for s in rows)
    seed_confirm = Counter()
    for key, rows in seed_rows.items():
        rec = records.get(key)
        if rec is None or rec["source"] == "seed":
            continue
        seed_grade = max(s["grade"] for s in rows)
        seed_confirm["confirmed" if (rec["grade"] > 0) == (seed_grade > 0) else "rejected"] += 1

    progress_step(bar, "agreement")
    agreement = _agreement_summary(session, project, scale)
    progress_step(bar, "files")
    body = {
        "format": FORMAT,
        "project": project.name,
        "policy": policy,
        "counts": {
            "queries": len(qrecs),
            "queries_with_labels": len({q for q, _ in records}),
            "pairs": len(records),
            "grades": {str(g): grade_counts.get(g, 0) for g in scale},
            "sources": {s: sources.get(s, 0) for s in EXPORTED_SOURCES + ((FILL_SOURCE,) if filler else ())},
            "seed_only": sources.get("seed", 0),
            "left_out": {k: left_out.get(k, 0) for k in ("dropped_query", "excluded_document", "query_not_in_set")},
        },
        "incomplete": {
            "unjudged_pooled_pairs": len(unjudged),
            "unresolved_disagreements": len(unresolved),
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
            "pairs": len(pooled),
            "batches": len(batches),
            "seed_pairs": sum(1 for v in pooled.values() if v[2]),
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
    unsure_labels = [r for r in records.values() if r.get("unsure")]
    if unsure_labels:  # written when there are some, so earlier states keep their state hash
        body["counts"]["unsure"] = {
            "labels": len(unsure_labels),  # labels a judge marked unsure (with their best grade)
            "decided_by_lead": sum(1 for r in unsure_labels if r["adjudication"]),  # confirmed or changed
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
    files = {
        "qrels.txt": qrels_txt.encode("utf-8"),
        "qrels.jsonl": qrels_jsonl.encode("utf-8"),
        "queries.jsonl": queries_jsonl.encode("utf-8"),
    }
    return VersionState(files, body, records, qrecs, unjudged, unresolved)


def progress_step(bar, name: str) -> None:
    if bar is not None:
        bar.set_postfix_str(name, refresh=False)
        bar.update(1)
