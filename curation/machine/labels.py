"""A machine judge's labels in the store: importing them, reading them back, and the machine's one
label per pair.

- ``import_machine_labels`` (``golden judging import --machine``) stores each line of the file as a
  :class:`~curation.store.models.MachineLabel` (never a ``Judgment``), creating the
  :class:`~curation.store.models.MachineJudge` on first use. Pairs not in the pool are reported and
  skipped; grades outside the scale are skipped or clipped (``clip``). A re-import of the same file
  adds nothing (each line's token is the file's SHA-256, the line, the prompt version and model).
- The machine's label of a pair, under a prompt version, is the majority of its samples (a tie goes
  to the lowest-numbered sample's grade): :func:`machine_grades`. The *current* prompt version is the
  one imported last (:func:`prompt_versions`, oldest first).
"""

from __future__ import annotations

import json
import os
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from sqlalchemy import func, insert
from sqlmodel import Session, select

from curation.agree.labels import final_labels
from curation.formats.conflicts import Dedup
from curation.formats.fileio import sha256_file
from curation.formats.machine_labels import MachineLabelLine, read_machine_labels
from curation.judge.importing import (
    FOREIGN_FORMATS,
    matched_labels,
    place_label,
    read_foreign,
    skipped_lines,
    unmatched_lines,
)
from curation.store import lookups
from curation.store.models import Document, MachineJudge, MachineLabel, PoolPair, Project, Query, utcnow
from curation.store.projects import get_project, grades
from curation.store.users import get_user

MACHINE_KIND = "machine"


class MachineRow(NamedTuple):
    """One stored label of a machine judge."""

    qid: str
    docid: str
    pair_id: int
    grade: int
    sample: int
    prompt_version: str | None
    model: str | None
    confidence: float | None
    probabilities: dict[int, float] | None
    order: int  # the row id: import order


@dataclass
class MachineImportReport:
    path: str
    project: str
    machine: str
    lines: int = 0
    imported: int = 0
    already: int = 0
    missing: int = 0
    missing_examples: list[tuple[str, str]] = field(default_factory=list)
    out_of_scale: int = 0
    clipped: int = 0
    repeats: int = 0
    conflicts: int = 0
    on_conflict: str = "error"
    samples: int = 0  # distinct sample numbers imported
    prompt_versions: list[str] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    with_probabilities: int = 0
    created: bool = False
    unmatched: list[tuple[int, str, str]] = field(default_factory=list)  # --format: rows matching no query

    def summary(self) -> str:
        out = [f"{self.path}: {self.lines} lines -> {self.imported} labels by machine judge {self.machine} "
               f"in project {self.project} (stored apart from human judgments; they never count as human labels)"]
        if self.created:
            out.append(f"new machine judge {self.machine}")
        pv = ", ".join(self.prompt_versions) or "none given"
        md = ", ".join(self.models) or "none given"
        out.append(f"prompt versions: {pv}; models: {md}; samples per pair: {self.samples or 1}; "
                   f"{self.with_probabilities} labels with a probability or confidence")
        out += skipped_lines(self, self.machine, unit="label")
        out += unmatched_lines(self.path, self.unmatched, self.project)
        out.append(f"next: golden labels calibrate --project {self.project} --machine {self.machine}")
        return "\n".join(out)


def get_machine(session: Session, name: str) -> MachineJudge | None:
    return session.exec(select(MachineJudge).where(MachineJudge.name == name)).first()


def require_machine(session: Session, name: str, project: Project | None = None) -> MachineJudge:
    """The machine judge ``name``; ValueError naming the known ones when there is none."""
    m = get_machine(session, name)
    if m is None:
        known = sorted(session.exec(select(MachineJudge.name)).all())
        hint = f" (machine judges: {', '.join(known)})" if known else " (none imported yet)"
        raise ValueError(f"machine: no machine judge {name!r}{hint}; import its labels with "
                         f"`golden judging import FILE --judge {name} --machine`")
    return m


def list_machines(session: Session, project: Project | int) -> list[str]:
    """The names of the machine judges with labels in ``project``."""
    pid = lookups.project_id(project)
    return sorted(session.exec(
        select(MachineJudge.name).join(MachineLabel, MachineLabel.machine_id == MachineJudge.id)
        .where(MachineLabel.project_id == pid).distinct()
    ).all())


def _read_lines(session: Session, proj, path: str, fmt: str, *, allow_empty: bool, dedup: Dedup):
    """The label lines of a machine judge's file in format ``fmt``, the number of rows read, and the
    rows of another tool's file that match no query (line, query, document)."""
    unmatched: list[tuple[int, str, str]] = []
    if fmt == "trec":
        lines = read_machine_labels(path, allow_empty=allow_empty, dedup=dedup)
        read_rows = len(lines) + dedup.repeats + dedup.conflicts
    elif fmt in FOREIGN_FORMATS:
        read = read_foreign(path, fmt, allow_empty=allow_empty)
        if len(read.raters) > 1:
            raise ValueError(f"judge: {path} holds the judgements of raters {', '.join(read.raters)}; a machine "
                             "judge's file names one")
        entries, unmatched = matched_labels(session, proj, list(enumerate(read.labels)), dedup)
        # a row's place among the matched ones stands for its line in the token (an RRE group's rows
        # may share a line, and one row may give labels to several queries)
        lines = [MachineLabelLine(qid, docid, grade, n) for n, (_, qid, docid, grade) in enumerate(entries, 1)]
        read_rows = len(read.labels)
    else:
        raise ValueError(f"format: {fmt!r} is not one of trec, {', '.join(FOREIGN_FORMATS)}")
    return lines, read_rows, unmatched


def import_machine_labels(
    session: Session,
    path: str | os.PathLike,
    *,
    machine: str,
    project: str | None = None,
    model: str | None = None,
    prompt_version: str | None = None,
    clip: bool = False,
    allow_empty: bool = False,
    on_conflict: str = "error",
    fmt: str = "trec",
) -> MachineImportReport:
    """Load the labels of the machine judge ``machine`` from ``path`` (JSONL or TREC qrels; see
    :mod:`curation.formats.machine_labels`) into ``project`` and commit. ``model`` and
    ``prompt_version`` fill the lines that do not name theirs. A user of that name is refused: a
    machine judge is its own kind and needs its own name. ``fmt``: ``trec`` (TREC qrels or JSONL, by
    the file's name) or another tool's judgment file (``quepid``, ``rre``, ``ltr``), whose queries are
    matched as a human import matches them (:func:`curation.judge.importing.match_query`); rows
    matching no query are listed in the report with their line."""
    path = str(path)
    proj = get_project(session, project)
    scale = [g.grade for g in grades(proj)]
    lo, hi = min(scale), max(scale)
    if not machine or not machine.strip():
        raise ValueError("judge: a machine judge needs a name")
    if get_user(session, machine) is not None:
        raise ValueError(f"judge: {machine!r} is a human user; give the machine judge a name of its own "
                         "(its labels must never be taken for a person's)")
    dedup = Dedup(path, policy=on_conflict, what="label")
    lines, read_rows, unmatched = _read_lines(session, proj, path, fmt, allow_empty=allow_empty, dedup=dedup)
    report = MachineImportReport(path, proj.name, machine, on_conflict=on_conflict, unmatched=unmatched)
    report.lines = read_rows
    report.repeats, report.conflicts = dedup.repeats, dedup.conflicts
    mj = get_machine(session, machine)
    if mj is None:
        mj = MachineJudge(name=machine)
        session.add(mj)
        session.flush()
        report.created = True
    pool = lookups.pair_ids(session, proj)
    prefix = f"machine:{sha256_file(path)[:20]}:"
    done = set(session.exec(select(MachineLabel.token).where(
        MachineLabel.machine_id == mj.id, MachineLabel.token.like(prefix + "%"))).all())  # type: ignore[union-attr]
    now = utcnow()
    rows = []
    samples, versions, models = set(), [], []
    for rec in lines:
        placed = place_label(report, pool, rec.qid, rec.docid, rec.grade, lo, hi, clip=clip)
        if placed is None:
            continue
        pair_id, grade = placed
        pv = rec.prompt_version if rec.prompt_version is not None else prompt_version
        md = rec.model if rec.model is not None else model
        token = f"{prefix}{rec.line}:{rec.sample}:{pv or ''}:{md or ''}"
        if token in done:
            report.already += 1
            continue
        done.add(token)
        probs = None
        if rec.probabilities is not None:
            probs = json.dumps({str(g): p for g, p in rec.probabilities}, sort_keys=True)
        rows.append(dict(project_id=proj.id, pair_id=pair_id, machine_id=mj.id, grade=grade, sample=rec.sample,
                         probabilities_json=probs, confidence=rec.confidence, rationale=rec.rationale,
                         model=md, prompt_version=pv, token=token, imported_at=now))
        samples.add(rec.sample)
        if pv is not None and pv not in versions:
            versions.append(pv)
        if md is not None and md not in models:
            models.append(md)
        if rec.confidence is not None:
            report.with_probabilities += 1
    for start in range(0, len(rows), 5000):
        session.execute(insert(MachineLabel), rows[start:start + 5000])
    session.commit()
    report.imported = len(rows)
    report.samples = len(samples)
    report.prompt_versions = versions
    report.models = models
    return report


def load_machine_rows(session: Session, project: Project | int, machine: str) -> list[MachineRow]:
    """Every stored label of the machine judge ``machine`` in ``project``, in import order."""
    mj = require_machine(session, machine)
    pid = lookups.project_id(project)
    rows = session.exec(
        lookups.join_pair_text(
            select(Query.qid, Document.docid, MachineLabel.pair_id, MachineLabel.grade, MachineLabel.sample,
                   MachineLabel.prompt_version, MachineLabel.model, MachineLabel.confidence,
                   MachineLabel.probabilities_json, MachineLabel.id)
            .select_from(MachineLabel).join(PoolPair, PoolPair.id == MachineLabel.pair_id)
        ).where(MachineLabel.project_id == pid, MachineLabel.machine_id == mj.id)
        .order_by(MachineLabel.id)
    ).all()
    out = []
    for qid, docid, pair_id, grade, sample, pv, md, conf, probs, rid in rows:
        p = {int(k): float(v) for k, v in json.loads(probs).items()} if probs else None
        out.append(MachineRow(qid, docid, pair_id, int(grade), int(sample), pv, md, conf, p, rid))
    return out


def prompt_versions(rows: Iterable[MachineRow]) -> list[str | None]:
    """The prompt versions of ``rows``, oldest first (ordered by their last import): the last is current."""
    last: dict[str | None, int] = {}
    for r in rows:
        last[r.prompt_version] = max(last.get(r.prompt_version, -1), r.order)
    return sorted(last, key=lambda v: last[v])


def majority(grades_by_sample: Sequence[tuple[int, int]]) -> int:
    """The majority grade of ``(sample, grade)`` labels; a tie goes to the lowest-numbered sample's grade
    among the tied grades."""
    counts = Counter(g for _, g in grades_by_sample)
    top = max(counts.values())
    tied = {g for g, n in counts.items() if n == top}
    return next(g for _, g in sorted(grades_by_sample) if g in tied)


def samples_by_pair(rows: Iterable[MachineRow], prompt_version: str | None) -> dict[tuple[str, str], list[MachineRow]]:
    """``{(qid, docid): [rows by sample]}`` under ``prompt_version`` (the latest row of a sample counts)."""
    by: dict[tuple[str, str], dict[int, MachineRow]] = defaultdict(dict)
    for r in rows:
        if r.prompt_version == prompt_version:
            by[(r.qid, r.docid)][r.sample] = r
    return {u: [d[s] for s in sorted(d)] for u, d in by.items()}


def _current_samples(rows: Iterable[MachineRow], prompt_version: str | None
                     ) -> dict[tuple[str, str], list[MachineRow]]:
    """:func:`samples_by_pair` under ``prompt_version`` (``...``: the current one, imported last;
    no pairs when there is none)."""
    rows = list(rows)
    if prompt_version is ...:
        versions = prompt_versions(rows)
        if not versions:
            return {}
        prompt_version = versions[-1]
    return samples_by_pair(rows, prompt_version)


def machine_grades(rows: Iterable[MachineRow], prompt_version: str | None = ..., *, k: int | None = None
                   ) -> dict[tuple[str, str], int]:
    """The machine's label of each pair: the majority of its samples (the first ``k`` when given)
    under ``prompt_version`` (default: the current one, imported last)."""
    out = {}
    for unit, samples in _current_samples(rows, prompt_version).items():
        use = samples[:k] if k else samples
        out[unit] = majority([(r.sample, r.grade) for r in use])
    return out


def machine_confidence(rows: Iterable[MachineRow], prompt_version: str | None = ...) -> dict[tuple[str, str], float]:
    """Each pair's stated confidence under ``prompt_version`` (default: current): the mean over its
    samples of the probability each gave its own label; pairs without one are left out."""
    out = {}
    for unit, samples in _current_samples(rows, prompt_version).items():
        confs = [r.confidence for r in samples if r.confidence is not None]
        if confs:
            out[unit] = sum(confs) / len(confs)
    return out


def count_labels(session: Session, project: Project | int, machine: str) -> int:
    mj = require_machine(session, machine)
    return session.exec(select(func.count(MachineLabel.id)).where(
        MachineLabel.project_id == lookups.project_id(project), MachineLabel.machine_id == mj.id)).one()


def human_grades(session: Session, project: Project) -> dict[tuple[str, str], int]:
    """The final human label of every pair that has one (policy ``adjudicated``; seeds left out)."""
    return {(f.qid, f.docid): int(f.grade) for f in final_labels(session, project)
            if f.grade is not None and f.source != "seed"}
