"""Versioned, immutable qrels: ``golden export`` writes ``DIR/<version>/`` and freezes it in the store.

A version folder holds five files:

* ``qrels.txt``: TREC qrels, ``qid 0 docid grade``, sorted by qid then docid (as strings), one
  space between fields, integer grades: what trec_eval, ir_measures and ranx read as is;
* ``qrels.jsonl``: the same pairs in the same order, with provenance: each judge's counted label
  (and the guidelines version it was made under), the adjudication, the seed judgments, and the
  final-label source (``single``, ``unanimous``, ``majority``, ``lead``, ``adjudicated``, ``seed``;
  see :mod:`curation.agree.labels`);
* ``queries.jsonl``: every query of the set, sorted by qid: text, stratum, traffic, weight, split
  and leak status;
* ``CHANGES.md``: what changed against the parent version, for a person;
* ``manifest.json``: where the version came from (corpus fingerprint, query set and pool hashes,
  pool depth and runs, label scale, guidelines, judges, agreement, leak check, split, policy) and
  the sha256 and size of every other file.

Rules:

* Deterministic: every file is a function of the store's content; dict keys and lists are in a
  fixed order; the creation time is the one stored when the version was first exported.
* Immutable: the first export of a version stores its *state* hash and the files themselves (a
  deterministic zip, :class:`~curation.store.models.ExportVersion`). Exporting the same name again from
  the same state rewrites those very bytes; from a different state it is refused
  (:class:`VersionFrozen`). ``write_frozen`` writes a frozen version whatever the store holds now.
* Complete or counted: pooled pairs without a human label and unresolved disagreements refuse the
  export (:class:`ExportBlocked`) unless ``allow_incomplete``; the manifest counts them either way.
* Whole or nothing: the files are written to a temporary folder beside the target and renamed
  into place once all are written and the version is committed in the store.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import re
import shutil
import tempfile
import sys
import zipfile
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, func, select
from tqdm import tqdm

from curation import __version__
from curation.formats.fileio import default_mode, sha256_file
from curation.agree.labels import POLICIES, final_labels, load_judgments
from curation.store.models import (
    Adjudication,
    Document,
    ExportVersion,
    GuidelinesVersion,
    Judgment,
    LeakFinding,
    PoolPair,
    Project,
    Query,
    Run,
    SeedJudgment,
    User,
)
from curation.export.split import assign_pending, split_summary

FORMAT = "golden-qrels/1"
DATA_FILES = ("qrels.txt", "qrels.jsonl", "queries.jsonl", "CHANGES.md")
MANIFEST = "manifest.json"
ALL_FILES = DATA_FILES + (MANIFEST,)
HUMAN_SOURCES = ("single", "unanimous", "majority", "lead", "adjudicated")
_VERSION_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$")
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)
_CHANGES_LIST_LIMIT = 500


class ExportBlocked(ValueError):
    """Pooled pairs are unjudged or disagreements unresolved, and ``allow_incomplete`` is off."""

    def __init__(self, message: str, *, unjudged: int, unresolved: int):
        super().__init__(message)
        self.unjudged = unjudged
        self.unresolved = unresolved


class VersionFrozen(ValueError):
    """The version name is taken by an export of a different state."""


@dataclass
class ExportResult:
    """What :func:`export_version` did. ``new`` is False when a frozen version was written again."""

    version: str
    path: Path
    new: bool
    manifest: dict
    state_sha256: str
    files: dict[str, str] = field(default_factory=dict)  # name -> sha256


# ----------------------------------------------------------------------------------- small helpers


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _check_version(version: str) -> str:
    if not isinstance(version, str) or not _VERSION_RE.match(version) or version in (".", ".."):
        raise ValueError(
            f"version: {version!r} is not a usable version name; use letters, digits, '.', '_', '-' "
            "or '+', starting with a letter or digit (e.g. v5)"
        )
    return version


def _json_line(obj) -> str:
    return json.dumps(obj, ensure_ascii=False, sort_keys=False, separators=(", ", ": ")) + "\n"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _iso(t: datetime | None) -> str | None:
    if t is None:
        return None
    if t.tzinfo is None:
        t = t.replace(tzinfo=timezone.utc)
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


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
        return _iso(obj)
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


# ----------------------------------------------------------------------------------- archive (zip)


def build_archive(version: str, files: dict[str, bytes]) -> bytes:
    """A deterministic zip of a version: entries ``<version>/<name>`` in :data:`ALL_FILES` order,
    a fixed timestamp (1980-01-01) and permissions, deflate level 6 (Python's ``zipfile``)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name in ALL_FILES:
            if name not in files:
                continue
            info = zipfile.ZipInfo(f"{version}/{name}", date_time=_ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3
            info.external_attr = 0o100644 << 16
            zf.writestr(info, files[name], compress_type=zipfile.ZIP_DEFLATED, compresslevel=6)
    return buf.getvalue()


def read_archive(data: bytes) -> dict[str, bytes]:
    """The files of a version zip, by name (the folder prefix removed)."""
    out = {}
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        for info in zf.infolist():
            out[info.filename.split("/", 1)[-1]] = zf.read(info)
    return out


# --------------------------------------------------------------------------------- gathering state


@dataclass
class _State:
    files: dict[str, bytes]  # qrels.txt, qrels.jsonl, queries.jsonl
    body: dict  # the manifest without version/parent/created/files
    labels: dict[tuple[str, str], dict]  # (qid, docid) -> qrels.jsonl record
    queries: dict[str, dict]  # qid -> queries.jsonl record
    unjudged: list[tuple[str, str]]
    unresolved: list[tuple[str, str]]

    @property
    def sha256(self) -> str:
        return state_hash({n: _sha(b) for n, b in self.files.items()}, self.body)


# Manifest keys that are not part of the state: when and by whom, and the checksums themselves.
_META_KEYS = ("version", "parent", "created_at", "created_by", "generator", "state_sha256", "files", "manifest_sha256")
_SEAL = "0" * 64
_SEAL_RE = re.compile(rb'"manifest_sha256": "([0-9a-f]{64})"')


def state_hash(file_hashes: dict[str, str], body: dict) -> str:
    """Hash of what a version says: the sha256 of its three data files and the manifest's facts,
    excluding the agreement figures (derived from the judgments already hashed) so that a newer
    numpy cannot make a frozen state look different."""
    stable = {k: v for k, v in body.items() if k != "agreement" and k not in _META_KEYS}
    payload = json.dumps(
        {"files": {n: file_hashes[n] for n in ("qrels.txt", "qrels.jsonl", "queries.jsonl")}, "manifest": stable},
        sort_keys=True, ensure_ascii=False, separators=(",", ":"),
    )
    return _sha(payload.encode("utf-8"))


def _sealed_manifest(manifest: dict) -> bytes:
    """manifest.json's bytes, ending with ``manifest_sha256``: the sha256 of these very bytes with
    that value written as 64 zeros, so a changed byte anywhere in the manifest is detected."""
    draft = (json.dumps({**manifest, "manifest_sha256": _SEAL}, ensure_ascii=False, indent=2) + "\n").encode("utf-8")
    return _reseal(draft)


def _reseal(draft: bytes) -> bytes:
    m = list(_SEAL_RE.finditer(draft))[-1]
    return draft[: m.start(1)] + _sha(draft).encode() + draft[m.end(1):]


def _manifest_seal_ok(raw: bytes) -> bool:
    found = list(_SEAL_RE.finditer(raw))
    if not found:
        return False
    m = found[-1]
    blank = raw[: m.start(1)] + _SEAL.encode() + raw[m.end(1):]
    return _sha(blank) == m.group(1).decode()


def _latest_judgments(session: Session, project: Project) -> dict[int, dict[str, dict]]:
    """pair_id -> judge -> the judge's latest labelling judgment (skips ignored), with its guidelines
    version number: the same judgments :func:`curation.agree.labels.final_labels` counts."""
    rows = session.exec(
        select(Judgment.pair_id, User.name, Judgment.grade, Judgment.unsure, Judgment.skipped,
               GuidelinesVersion.version)
        .join(User, User.id == Judgment.judge_id)
        .outerjoin(GuidelinesVersion, GuidelinesVersion.id == Judgment.guidelines_version_id)
        .where(Judgment.project_id == project.id)
        .order_by(Judgment.answered_at, Judgment.id)
    ).all()
    out: dict[int, dict[str, dict]] = defaultdict(dict)
    for pair_id, judge, grade, unsure, skipped, gv in rows:
        if grade is None or skipped:
            continue
        out[pair_id][judge] = {"judge": judge, "grade": int(grade), "unsure": bool(unsure), "guidelines_version": gv}
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


def _gather(session: Session, project: Project, *, policy: str, bar=None) -> _State:
    pid = project.id
    grades_list = json.loads(project.grades_json or "[]")
    scale = sorted(int(g["grade"]) for g in grades_list) or [0, 1]

    queries = list(session.exec(select(Query).where(Query.project_id == pid)))
    active = {q.qid: q for q in queries if q.status != "dropped"}
    dropped = sorted(q.qid for q in queries if q.status == "dropped")

    pairs = session.exec(
        select(PoolPair.id, Query.qid, Document.docid, Document.excluded, PoolPair.seed_source, PoolPair.batch)
        .join(Query, Query.id == PoolPair.query_id)
        .join(Document, Document.id == PoolPair.document_id)
        .where(PoolPair.project_id == pid)
    ).all()
    pooled = {(q, d): (i, excl, seed_src, batch) for i, q, d, excl, seed_src, batch in pairs}
    excluded_docids = set(
        session.exec(select(Document.docid).where(Document.project_id == pid, Document.excluded == True)).all()  # noqa: E712
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
    _step(bar, "final labels")
    finals = final_labels(session, project, policy=policy, include_unjudged=True)

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
        sources[fl.source] += 1

    ordered = sorted(records)
    qrels_txt = "".join(f"{q} 0 {d} {records[(q, d)]['grade']}\n" for q, d in ordered)
    qrels_jsonl = "".join(_json_line(records[k]) for k in ordered)

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
    queries_jsonl = "".join(_json_line(qrecs[qid]) for qid in sorted(qrecs))

    # Judges: each one's latest labels in the project, and how many of them this export counts.
    roles = dict(session.exec(select(User.name, User.role)).all())
    in_project = Counter(judge for by_judge in latest.values() for judge in by_judge)
    counted = Counter(v["judge"] for r in records.values() for v in r["judgments"])
    judges = [
        {"name": name, "role": roles.get(name), "labels": in_project[name], "labels_in_export": counted.get(name, 0)}
        for name in sorted(in_project)
    ]
    gv_rows = list(session.exec(
        select(GuidelinesVersion).where(GuidelinesVersion.project_id == pid).order_by(GuidelinesVersion.version)
    ))
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

    _step(bar, "agreement")
    agreement = _agreement_summary(session, project, scale)
    _step(bar, "files")
    body = {
        "format": FORMAT,
        "project": project.name,
        "policy": policy,
        "counts": {
            "queries": len(qrecs),
            "queries_with_labels": len({q for q, _ in records}),
            "pairs": len(records),
            "grades": {str(g): grade_counts.get(g, 0) for g in scale},
            "sources": {s: sources.get(s, 0) for s in HUMAN_SOURCES + ("seed",)},
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
        "seeds": {
            "by_source": {s: seeds_by_source.get(s, 0) for s in ("ticket", "click")},
            "confirmed_by_judges": seed_confirm.get("confirmed", 0),
            "rejected_by_judges": seed_confirm.get("rejected", 0),
            "labels_resting_on_seed_alone": sources.get("seed", 0),
        },
    }
    files = {
        "qrels.txt": qrels_txt.encode("utf-8"),
        "qrels.jsonl": qrels_jsonl.encode("utf-8"),
        "queries.jsonl": queries_jsonl.encode("utf-8"),
    }
    return _State(files, body, records, qrecs, unjudged, unresolved)


# ---------------------------------------------------------------------------------------- CHANGES


def _parse_jsonl(data: bytes) -> list[dict]:
    return [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]


def _md(text: str) -> str:
    """An identifier or text safe inside a Markdown code span on one line."""
    return str(text).replace("`", "'").replace("\n", " ").replace("\r", " ")


def _short(text: str, n: int = 80) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def diff_versions(old_labels: dict, new_labels: dict, old_queries: dict, new_queries: dict) -> dict:
    """What changed between two versions: pairs added, removed and relabelled; queries added and
    dropped. Labels are ``{(qid, docid): record}``, queries ``{qid: record}`` (qrels.jsonl and
    queries.jsonl records); each list is sorted."""
    added = sorted(set(new_labels) - set(old_labels))
    removed = sorted(set(old_labels) - set(new_labels))
    relabelled = sorted(k for k in set(old_labels) & set(new_labels) if old_labels[k]["grade"] != new_labels[k]["grade"])
    resourced = sorted(
        k for k in set(old_labels) & set(new_labels)
        if old_labels[k]["grade"] == new_labels[k]["grade"] and old_labels[k]["source"] != new_labels[k]["source"]
    )
    return {
        "pairs_added": added,
        "pairs_removed": removed,
        "pairs_relabelled": relabelled,
        "pairs_same_grade_new_source": resourced,
        "queries_added": sorted(set(new_queries) - set(old_queries)),
        "queries_dropped": sorted(set(old_queries) - set(new_queries)),
    }


def _changes_md(version: str, parent: str | None, parent_files: dict[str, bytes] | None, state: _State) -> str:
    counts = state.body["counts"]
    lines = [f"# {version}", ""]
    if parent is None or parent_files is None:
        lines += [
            "First version: no parent to compare with.",
            "",
            f"- queries: {counts['queries']}",
            f"- judged pairs: {counts['pairs']}",
            f"- policy: {state.body['policy']}",
            "",
        ]
        return "\n".join(lines)
    old_labels = {(r["qid"], r["docid"]): r for r in _parse_jsonl(parent_files["qrels.jsonl"])}
    old_queries = {r["qid"]: r for r in _parse_jsonl(parent_files["queries.jsonl"])}
    old_manifest = json.loads(parent_files[MANIFEST])
    d = diff_versions(old_labels, state.labels, old_queries, state.queries)
    lines += [
        f"Changes against {parent}.",
        "",
        "| change | count |",
        "|---|---:|",
        f"| pairs added | {len(d['pairs_added'])} |",
        f"| pairs removed | {len(d['pairs_removed'])} |",
        f"| pairs relabelled | {len(d['pairs_relabelled'])} |",
        f"| pairs with the same grade from a new source | {len(d['pairs_same_grade_new_source'])} |",
        f"| queries added | {len(d['queries_added'])} |",
        f"| queries dropped | {len(d['queries_dropped'])} |",
        "",
        f"Judged pairs: {len(old_labels)} -> {len(state.labels)}; queries: {len(old_queries)} -> {len(state.queries)}.",
    ]
    if old_manifest.get("policy") != state.body["policy"]:
        lines.append(f"Policy: {old_manifest.get('policy')} -> {state.body['policy']}.")
    old_gv = (old_manifest.get("guidelines") or {}).get("current")
    new_gv = state.body["guidelines"]["current"]
    if old_gv != new_gv:
        fmt = lambda g: f"v{g['version']} ({g['sha256'][:12]})" if g else "none"  # noqa: E731
        lines.append(f"Guidelines: {fmt(old_gv)} -> {fmt(new_gv)}.")
    lines.append("")

    def section(title: str, items: list, render) -> None:
        if not items:
            return
        lines.extend([f"## {title} ({len(items)})", ""])
        for item in items[:_CHANGES_LIST_LIMIT]:
            lines.append(render(item))
        if len(items) > _CHANGES_LIST_LIMIT:
            lines.append(f"- … and {len(items) - _CHANGES_LIST_LIMIT} more (compare the qrels.jsonl files)")
        lines.append("")

    section("Queries added", d["queries_added"],
            lambda q: f"- `{_md(q)}` {_md(_short(state.queries[q]['text']))}")
    section("Queries dropped", d["queries_dropped"],
            lambda q: f"- `{_md(q)}` {_md(_short(old_queries[q]['text']))}")
    section("Pairs relabelled", d["pairs_relabelled"],
            lambda k: f"- `{_md(k[0])}` `{_md(k[1])}`: {old_labels[k]['grade']} -> {state.labels[k]['grade']}"
                      f" ({old_labels[k]['source']} -> {state.labels[k]['source']})")
    section("Pairs added", d["pairs_added"],
            lambda k: f"- `{_md(k[0])}` `{_md(k[1])}`: {state.labels[k]['grade']} ({state.labels[k]['source']})")
    section("Pairs removed", d["pairs_removed"],
            lambda k: f"- `{_md(k[0])}` `{_md(k[1])}`: was {old_labels[k]['grade']} ({old_labels[k]['source']})")
    section("Pairs with the same grade from a new source", d["pairs_same_grade_new_source"],
            lambda k: f"- `{_md(k[0])}` `{_md(k[1])}`: {state.labels[k]['grade']}"
                      f" ({old_labels[k]['source']} -> {state.labels[k]['source']})")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------- writing


def _write_folder(out_dir: Path, version: str, files: dict[str, bytes]) -> Path:
    """Write ``files`` into ``out_dir/version`` whole or not at all (temp folder, then rename)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / version
    if target.exists():
        if not target.is_dir():
            raise ValueError(f"out_dir: {target} exists and is not a folder; choose another --out")
        names = sorted(p.name for p in target.iterdir())
        # Only a folder holding nothing but export files, whose manifest (when readable) names this
        # version of this project, is replaced: a damaged export is restored, anything else is kept.
        ours = set(names) <= set(ALL_FILES)
        if ours and MANIFEST in names:
            try:
                old = json.loads((target / MANIFEST).read_bytes())
                new = json.loads(files[MANIFEST])
                ours = not isinstance(old, dict) or \
                    (old.get("version"), old.get("project")) == (new.get("version"), new.get("project"))
            except (ValueError, UnicodeDecodeError):
                ours = True
        if names and not ours:
            raise ValueError(
                f"out_dir: {target} already holds files that are not this version's export; "
                "choose another --out or move that folder away"
            )
    tmp = Path(tempfile.mkdtemp(prefix=f".{version}.", suffix=".tmp", dir=out_dir))
    try:
        os.chmod(tmp, default_mode(directory=True))  # mkdtemp makes it 0700
        for name in ALL_FILES:
            with open(tmp / name, "wb") as fh:
                fh.write(files[name])
                fh.flush()
                os.fsync(fh.fileno())
        if target.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{version}.", suffix=".old", dir=out_dir))
            os.rmdir(old)
            os.replace(target, old)
            os.replace(tmp, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def _next_name(session: Session, project: Project, version: str) -> str:
    m = re.match(r"^(.*?)(\d+)$", version)
    if not m:
        return f"{version}.1"
    prefix = m.group(1)
    taken = [
        int(n[len(prefix):]) for n in session.exec(select(ExportVersion.name).where(ExportVersion.project_id == project.id))
        if n.startswith(prefix) and n[len(prefix):].isdigit()
    ]
    return f"{prefix}{max(taken + [int(m.group(2))]) + 1}"


def _frozen_message(session: Session, project: Project, row: ExportVersion, state: _State) -> str:
    files = read_archive(row.archive) if row.archive else {}
    detail = ""
    if "qrels.jsonl" in files:
        old_labels = {(r["qid"], r["docid"]): r for r in _parse_jsonl(files["qrels.jsonl"])}
        old_queries = {r["qid"]: r for r in _parse_jsonl(files["queries.jsonl"])}
        d = diff_versions(old_labels, state.labels, old_queries, state.queries)
        parts = [_count(len(v), k.replace("_", " ").replace("pairs", "pair").replace("queries", "query"),
                        k.replace("_", " ")) for k, v in d.items() if v]
        old_policy = json.loads(row.manifest_json).get("policy")
        if old_policy != state.body["policy"]:
            parts.append(f"policy {old_policy} -> {state.body['policy']}")
        detail = f" (since then: {', '.join(parts) or 'the manifest facts changed'})"
    return (
        f"version {row.name!r} of project {project.name!r} is frozen: it was exported on {_iso(row.created_at)}"
        f"{' by ' + row.created_by if row.created_by else ''} from a different state{detail}. "
        f"Export the current state under a new name, e.g. --version {_next_name(session, project, row.name)}; "
        f"write the frozen {row.name} again with --frozen."
    )


def export_version(
    session: Session,
    project: Project,
    version: str,
    *,
    policy: str = "adjudicated",
    out_dir: str | os.PathLike,
    allow_incomplete: bool = False,
    created_by: str | None = None,
    progress: bool = False,
) -> ExportResult:
    """Export ``project``'s golden set as ``version`` into ``out_dir/version`` and freeze it.

    New name: the files are built from the store under ``policy``, the version is stored
    (:class:`~curation.store.models.ExportVersion` with the state hash and the files) and the folder
    is written. Existing name: from the same state the frozen files are written again (byte for
    byte); from another state :class:`VersionFrozen` is raised and nothing is written.
    :class:`ExportBlocked` when pooled pairs are unjudged or disagreements unresolved and
    ``allow_incomplete`` is off. Queries that arrived since ``golden split`` are assigned first.
    ``progress``: show the steps as a tqdm bar on stderr.
    """
    _check_version(version)
    if policy not in POLICIES:
        raise ValueError(f"policy: {policy!r} is not one of {', '.join(POLICIES)}")
    out_dir = Path(out_dir)

    with tqdm(total=5, desc=f"export {version}", unit="step", disable=not progress, file=sys.stderr, leave=False) as bar:
        _step(bar, "split")
        assign_pending(session, project)
        state = _gather(session, project, policy=policy, bar=bar)
        state_sha = state.sha256
        _step(bar, "write")
        return _store_and_write(session, project, version, state, state_sha, out_dir=out_dir,
                                allow_incomplete=allow_incomplete, created_by=created_by)


def _step(bar, name: str) -> None:
    if bar is not None:
        bar.set_postfix_str(name, refresh=False)
        bar.update(1)


def _store_and_write(session: Session, project: Project, version: str, state: _State, state_sha: str, *,
                     out_dir: Path, allow_incomplete: bool, created_by: str | None) -> ExportResult:
    """The second half of :func:`export_version`: compare with a stored version, or freeze a new one."""
    row = session.exec(
        select(ExportVersion).where(ExportVersion.project_id == project.id, ExportVersion.name == version)
    ).first()
    if row is not None:
        if row.state_sha256 != state_sha:
            raise VersionFrozen(_frozen_message(session, project, row, state))
        files = read_archive(row.archive)
        path = _write_folder(out_dir, version, files)
        return ExportResult(version, path, False, json.loads(files[MANIFEST]), state_sha,
                            {n: _sha(files[n]) for n in DATA_FILES})

    if (state.unjudged or state.unresolved) and not allow_incomplete:
        raise ExportBlocked(_blocked_message(state), unjudged=len(state.unjudged), unresolved=len(state.unresolved))

    parent_row = session.exec(
        select(ExportVersion).where(ExportVersion.project_id == project.id).order_by(ExportVersion.id.desc())
    ).first()
    parent = parent_row.name if parent_row is not None else None
    parent_files = read_archive(parent_row.archive) if parent_row is not None and parent_row.archive else None
    created_at = datetime.now(timezone.utc).replace(microsecond=0)

    files = dict(state.files)
    files["CHANGES.md"] = _changes_md(version, parent, parent_files, state).encode("utf-8")
    manifest = {
        "version": version,
        "parent": parent,
        "created_at": _iso(created_at),
        "created_by": created_by,
        "generator": f"golden {__version__}",
        **state.body,
        "state_sha256": state_sha,
        "files": {n: {"sha256": _sha(files[n]), "bytes": len(files[n])} for n in DATA_FILES},
    }
    files[MANIFEST] = _sealed_manifest(manifest)
    manifest = json.loads(files[MANIFEST])

    row = ExportVersion(
        project_id=project.id, name=version, parent=parent, state_sha256=state_sha,
        manifest_json=files[MANIFEST].decode("utf-8"), archive=build_archive(version, files),
        created_by=created_by, created_at=created_at,
    )
    session.add(row)
    try:
        session.flush()
    except IntegrityError:
        session.rollback()
        raise VersionFrozen(
            f"version {version!r} of project {project.name!r} was exported by someone else at the same time; "
            "run the export again to compare states"
        ) from None
    try:
        path = _write_folder(out_dir, version, files)
    except BaseException:
        session.rollback()
        raise
    session.commit()
    return ExportResult(version, path, True, manifest, state_sha, {n: _sha(files[n]) for n in DATA_FILES})


def _blocked_message(state: _State) -> str:
    parts = []
    if state.unjudged:
        eg = ", ".join(f"{q}/{d}" for q, d in state.unjudged[:3])
        n = len(state.unjudged)
        parts.append(f"{_count(n, 'pooled pair has', 'pooled pairs have')} no human label yet (e.g. {eg})")
    if state.unresolved:
        eg = ", ".join(f"{q}/{d}" for q, d in state.unresolved[:3])
        n = len(state.unresolved)
        parts.append(f"{_count(n, 'disagreement is', 'disagreements are')} unresolved (e.g. {eg})")
    return (
        "export blocked: " + "; ".join(parts) + ". Finish judging and adjudicate the disagreements (or choose "
        "--policy majority), or pass --allow-incomplete to export what is labelled; the manifest counts the gaps."
    )


def write_frozen(session: Session, project: Project, version: str, *, out_dir: str | os.PathLike) -> ExportResult:
    """Write the files of an already exported ``version`` as frozen in the store, whatever the
    store holds now (ValueError when the project has no such version)."""
    row = get_version(session, project, version)
    files = read_archive(row.archive)
    path = _write_folder(Path(out_dir), version, files)
    return ExportResult(version, path, False, json.loads(files[MANIFEST]), row.state_sha256,
                        {n: _sha(files[n]) for n in DATA_FILES})


def list_versions(session: Session, project: Project) -> list[ExportVersion]:
    """The project's exported versions, oldest first."""
    return list(session.exec(
        select(ExportVersion).where(ExportVersion.project_id == project.id).order_by(ExportVersion.id)
    ))


def get_version(session: Session, project: Project, version: str) -> ExportVersion:
    """The stored version ``version`` of ``project``; ValueError listing the versions when absent."""
    row = session.exec(
        select(ExportVersion).where(ExportVersion.project_id == project.id, ExportVersion.name == version)
    ).first()
    if row is None or row.archive is None:
        names = [v.name for v in list_versions(session, project)]
        known = f" (versions: {', '.join(names)})" if names else " (none exported yet)"
        raise ValueError(f"version: project {project.name!r} has no version {version!r}{known}")
    return row


# ---------------------------------------------------------------------------------------- verify


@dataclass
class VerifyReport:
    """The outcome of :func:`verify`: ``ok`` when ``problems`` is empty."""

    path: Path
    version: str | None
    checked: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def verify(path: str | os.PathLike) -> VerifyReport:
    """Re-check an exported version folder against its manifest.

    Checks: every file the manifest lists exists with its sha256 and size, and no other file is
    there; the folder name is the manifest's version; ``qrels.txt`` has four fields a line,
    iteration ``0``, integer grades, sorted unique pairs; ``qrels.jsonl`` holds the same pairs and
    grades in the same order; every qid of the qrels is in ``queries.jsonl``; the manifest's counts
    of pairs, queries and grades match the files.
    """
    path = Path(path)
    report = VerifyReport(path=path, version=None)
    problems = report.problems
    mpath = path / MANIFEST
    if not path.is_dir():
        problems.append(f"{path}: not a folder")
        return report
    if not mpath.exists():
        problems.append(f"{mpath}: missing; is this an exported version folder?")
        return report
    raw = mpath.read_bytes()
    try:
        manifest = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        problems.append(f"{mpath}: not valid JSON ({exc})")
        return report
    if not isinstance(manifest, dict):
        problems.append(f"{mpath}: not a manifest (expected a JSON object)")
        return report
    if not _manifest_seal_ok(raw):
        problems.append(f"{mpath}: its bytes do not match its manifest_sha256 (the manifest was changed)")
    report.version = manifest.get("version")
    if report.version != path.name:
        problems.append(f"{mpath}: version {report.version!r} but the folder is named {path.name!r}")
    listed = manifest.get("files") or {}
    for name in DATA_FILES:
        if name not in listed:
            problems.append(f"{mpath}: no checksum for {name}")
    present = sorted(p.name for p in path.iterdir())
    for name in present:
        if name not in listed and name != MANIFEST:
            problems.append(f"{path / name}: not listed in the manifest")
    intact: set[str] = set()
    for name, info in sorted(listed.items()):
        fpath = path / name
        if not fpath.exists():
            problems.append(f"{fpath}: listed in the manifest but missing")
            continue
        digest, size = sha256_file(fpath), fpath.stat().st_size
        report.checked.append(name)
        if digest != info.get("sha256"):
            problems.append(f"{fpath}: sha256 {digest[:16]}… differs from the manifest's {str(info.get('sha256'))[:16]}…")
        elif size != info.get("bytes"):
            problems.append(f"{fpath}: {size} bytes, the manifest says {info.get('bytes')}")
        else:
            intact.add(name)

    qrels: list[tuple[str, str, int]] = []
    if "qrels.txt" in intact or (path / "qrels.txt").exists():
        qpath = path / "qrels.txt"
        try:
            text = qpath.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(f"{qpath}: unreadable ({exc})")
            text = ""
        for lineno, line in enumerate(text.split("\n")[:-1] if text.endswith("\n") else text.split("\n"), 1):
            parts = line.split(" ")
            if len(parts) != 4 or parts[1] != "0" or not re.fullmatch(r"-?\d+", parts[3]) or not parts[0] or not parts[2]:
                problems.append(f"{qpath}:{lineno}: expected 'qid 0 docid grade' with an integer grade, got {line!r}")
                continue
            qrels.append((parts[0], parts[2], int(parts[3])))
        if text and not text.endswith("\n"):
            problems.append(f"{qpath}: last line has no newline")
        keys = [(q, d) for q, d, _ in qrels]
        if keys != sorted(keys):
            problems.append(f"{qpath}: lines are not sorted by qid then docid")
        if len(set(keys)) != len(keys):
            problems.append(f"{qpath}: a pair appears more than once")
    try:
        jl = _parse_jsonl((path / "qrels.jsonl").read_bytes())
        if [(r["qid"], r["docid"], r["grade"]) for r in jl] != qrels:
            problems.append(f"{path / 'qrels.jsonl'}: pairs or grades differ from qrels.txt")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        problems.append(f"{path / 'qrels.jsonl'}: unreadable ({exc})")
    try:
        qs = _parse_jsonl((path / "queries.jsonl").read_bytes())
        qids = {r["qid"] for r in qs}
        missing = sorted({q for q, _, _ in qrels} - qids)
        if missing:
            problems.append(f"{path / 'queries.jsonl'}: qids of qrels.txt missing here: {', '.join(missing[:5])}")
        counts = manifest.get("counts") or {}
        if counts.get("queries") != len(qs):
            problems.append(f"{mpath}: counts.queries is {counts.get('queries')}, queries.jsonl has {len(qs)}")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        problems.append(f"{path / 'queries.jsonl'}: unreadable ({exc})")
    if {"qrels.txt", "qrels.jsonl", "queries.jsonl"} <= intact:
        hashes = {n: listed[n]["sha256"] for n in ("qrels.txt", "qrels.jsonl", "queries.jsonl")}
        if state_hash(hashes, manifest) != manifest.get("state_sha256"):
            problems.append(f"{mpath}: state_sha256 does not match the files and the manifest's facts")
    counts = manifest.get("counts") or {}
    if counts.get("pairs") != len(qrels):
        problems.append(f"{mpath}: counts.pairs is {counts.get('pairs')}, qrels.txt has {len(qrels)}")
    by_grade = Counter(str(g) for _, _, g in qrels)
    listed_grades = {k: v for k, v in (counts.get("grades") or {}).items() if v}
    if listed_grades != dict(by_grade):
        problems.append(f"{mpath}: counts.grades {listed_grades} differ from qrels.txt {dict(sorted(by_grade.items()))}")
    return report


# ------------------------------------------------------------------------------ for the versions page


@dataclass(frozen=True)
class VersionInfo:
    """One exported version as the versions page lists it."""

    project: str
    name: str
    parent: str | None
    created_at: str | None
    created_by: str | None
    state_sha256: str
    manifest: dict
    zip_bytes: int
    zip_sha256: str


def versions_overview(session: Session, *, project: str | None = None) -> list[VersionInfo]:
    """Every exported version (of ``project`` when given), by project name then export order."""
    stmt = select(Project).order_by(Project.name)
    if project is not None:
        stmt = stmt.where(Project.name == project)
    out = []
    for proj in session.exec(stmt):
        for row in list_versions(session, proj):
            archive = row.archive or b""
            out.append(VersionInfo(
                proj.name, row.name, row.parent, _iso(row.created_at), row.created_by, row.state_sha256,
                json.loads(row.manifest_json), len(archive), _sha(archive),
            ))
    return out


def version_files(session: Session, project: str, version: str) -> tuple[VersionInfo, dict[str, bytes], bytes]:
    """A frozen version's summary, its files by name and its zip, as stored; ValueError when absent."""
    from curation.store.projects import get_project

    proj = get_project(session, project)
    row = get_version(session, proj, version)
    archive = row.archive
    info = VersionInfo(proj.name, row.name, row.parent, _iso(row.created_at), row.created_by, row.state_sha256,
                       json.loads(row.manifest_json), len(archive), _sha(archive))
    return info, read_archive(archive), archive
