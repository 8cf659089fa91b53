"""The runs of machine judges that golden prompts itself (``golden machine run``): which pairs a run
asks about, what is already answered, which labels are stale, and the runs' table for the lead's
page. The SQL of the ``machinerun`` and ``machinefailure`` tables lives here (the machine stage owns
them); the wire is :mod:`curation.machine.runner`.

**Stale.** A label made by a run is stale when it was made under another prompt than the one a run
would use now for its pair: another template (hash), another guidelines version, or another version
of its query's information need (:func:`stale_labels`). Imported labels (no run) are never called
stale: golden does not know the prompt that made them.

**Answered.** A (pair, sample) is answered under a prompt when a label of the machine exists for it
with the same prompt version and need version; a run never asks for it again (:func:`answered`).
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func
from sqlmodel import Session, select

from curation.store import lookups
from curation.store.models import (
    Document,
    Judgment,
    MachineFailure,
    MachineJudge,
    MachineLabel,
    MachineRun,
    PoolPair,
    Project,
    Query,
    QueryNeed,
    Run,
    pool_labels,
    utcnow,
)

SELECTIONS = ("all", "overlap", "unjudged", "sample", "stale")


@dataclass(frozen=True)
class PairText:
    """What a prompt is built from, for one pool pair."""

    pair_id: int
    qid: str
    query: str
    docid: str
    title: str | None
    document: str
    need_version: int  # 0: no need written
    need_description: str | None
    need_narrative: str | None


def need_versions(session: Session, project: Project | int) -> dict[int, QueryNeed]:
    """``{query id: the need in force}`` for the queries of ``project`` that have one."""
    out: dict[int, QueryNeed] = {}
    for row in session.exec(select(QueryNeed).where(QueryNeed.project_id == lookups.project_id(project))
                            .order_by(QueryNeed.query_id, QueryNeed.version)).all():
        out[row.query_id] = row
    return out


def pair_texts(session: Session, project: Project | int, pair_ids: list[int] | None = None) -> list[PairText]:
    """The prompt material of the pool pairs ``pair_ids`` (all pairs when None), in pool order."""
    pid = lookups.project_id(project)
    needs = need_versions(session, pid)
    stmt = lookups.join_pair_text(
        select(PoolPair.id, Query.id, Query.qid, Query.text, Document.docid, Document.title, Document.text)
        .select_from(PoolPair)).where(PoolPair.project_id == pid).order_by(Query.qid, PoolPair.shuffle_order,
                                                                           PoolPair.id)
    wanted = None if pair_ids is None else set(pair_ids)
    out = []
    for pair_id, query_id, qid, qtext, docid, title, text in session.exec(stmt).all():
        if wanted is not None and pair_id not in wanted:
            continue
        n = needs.get(query_id)
        out.append(PairText(pair_id, qid, qtext, docid, title, text, n.version if n else 0,
                            n.description if n else None, n.narrative if n else None))
    return out


def select_pairs(session: Session, project: Project, selection: str, *, machine: MachineJudge | None,
                 prompt_version: str, n: int | None = None, seed: int = 0) -> list[int]:
    """The pool pair ids a run asks about: ``all``; ``overlap`` (the pairs agreement is measured on);
    ``unjudged`` (no human label yet); ``sample`` (``n`` pairs drawn with ``random.Random(seed)``
    from the pool in pair-id order); ``stale`` (pairs with a stale label of ``machine``)."""
    if selection not in SELECTIONS:
        raise ValueError(f"pairs: unknown selection {selection!r} ({', '.join(SELECTIONS)})")
    pid = project.id
    everything = sorted(session.exec(select(PoolPair.id).where(PoolPair.project_id == pid)).all())
    if selection == "all":
        return everything
    if selection == "overlap":
        from curation.agree.labels import _overlap_pairs

        ids = {r[0] for r in session.execute(_overlap_pairs(pid)).all()}
        return [p for p in everything if p in ids]
    if selection == "unjudged":
        judged = set(session.exec(select(Judgment.pair_id).where(
            Judgment.project_id == pid, Judgment.grade.is_not(None), pool_labels())).all())  # type: ignore[union-attr]
        return [p for p in everything if p not in judged]
    if selection == "sample":
        if n is None or n < 1:
            raise ValueError("sample: give the number of pairs to draw (--sample N)")
        return sorted(random.Random(seed).sample(everything, min(n, len(everything))))
    if machine is None:
        return []
    return sorted({s.pair_id for s in stale_labels(session, project, machine, prompt_version)})


@dataclass(frozen=True)
class StaleLabel:
    label_id: int
    pair_id: int
    qid: str
    docid: str
    sample: int
    prompt_version: str | None
    need_version: int | None
    reason: str  # "prompt" (template or guidelines) or "need"


def stale_labels(session: Session, project: Project | int, machine: MachineJudge, prompt_version: str
                 ) -> list[StaleLabel]:
    """The labels of ``machine`` in ``project`` made by a run under another prompt version than
    ``prompt_version`` or another need version than the one in force, and not since answered again
    under the current prompt for the same pair and sample (the newest such label of each pair and
    sample; older ones it replaced are not counted again)."""
    pid = lookups.project_id(project)
    needs = {q: n.version for q, n in need_versions(session, pid).items()}
    rows = session.exec(lookups.join_pair_text(
        select(MachineLabel.id, MachineLabel.pair_id, Query.id, Query.qid, Document.docid, MachineLabel.sample,
               MachineLabel.prompt_version, MachineLabel.need_version)
        .select_from(MachineLabel).join(PoolPair, PoolPair.id == MachineLabel.pair_id))
        .where(MachineLabel.project_id == pid, MachineLabel.machine_id == machine.id,
               MachineLabel.run_id.is_not(None))  # type: ignore[union-attr]
        .order_by(MachineLabel.id)).all()
    current: set[tuple[int, int]] = set()
    latest: dict[tuple[int, int], StaleLabel] = {}  # the newest stale label of each (pair, sample)
    for lid, pair_id, query_id, qid, docid, sample, pv, nv in rows:
        now_need = needs.get(query_id, 0)
        if pv == prompt_version and nv == now_need:
            current.add((pair_id, sample))
        else:
            reason = "prompt" if pv != prompt_version else "need"
            latest[(pair_id, sample)] = StaleLabel(lid, pair_id, qid, docid, sample, pv, nv, reason)
    return [c for key, c in latest.items() if key not in current]


def answered(session: Session, project: Project | int, machine: MachineJudge | None, prompt_version: str
             ) -> set[tuple[int, int, int]]:
    """``{(pair id, sample, need version)}`` answered by ``machine`` under ``prompt_version``."""
    if machine is None:
        return set()
    return {(p, s, nv) for p, s, nv in session.exec(
        select(MachineLabel.pair_id, MachineLabel.sample, MachineLabel.need_version).where(
            MachineLabel.project_id == lookups.project_id(project), MachineLabel.machine_id == machine.id,
            MachineLabel.prompt_version == prompt_version)).all()}


def start_run(session: Session, project: Project, machine: MachineJudge, **fields) -> MachineRun:
    run = MachineRun(project_id=project.id, machine_id=machine.id, **fields)
    session.add(run)
    session.commit()
    session.refresh(run)
    return run


def finish_run(session: Session, run: MachineRun, status: str) -> None:
    run.status = status
    run.finished_at = utcnow()
    session.add(run)
    session.commit()


def apply_vote_shares(session: Session, machine: MachineJudge, project: Project | int, prompt_version: str,
                      samples: int) -> int:
    """Give each pair with ``samples`` or more run-made labels under ``prompt_version`` and no
    probabilities from log-probabilities the vote shares of its samples (the share of samples
    giving each grade) as its probabilities, and each sample the share of its own grade as its
    confidence. Returns the pairs updated."""
    if samples < 2:
        return 0
    labels = session.exec(select(MachineLabel).where(
        MachineLabel.project_id == lookups.project_id(project), MachineLabel.machine_id == machine.id,
        MachineLabel.prompt_version == prompt_version, MachineLabel.run_id.is_not(None))).all()  # type: ignore
    by: dict[tuple[int, int | None], dict[int, MachineLabel]] = defaultdict(dict)
    for lab in labels:
        by[(lab.pair_id, lab.need_version)][lab.sample] = lab  # the latest of a sample counts
    updated = 0
    for group in by.values():
        if len(group) < samples or any(_from_logprobs(lab) for lab in group.values()):
            continue
        counts: dict[int, int] = defaultdict(int)
        for lab in group.values():
            counts[lab.grade] += 1
        shares = {g: c / len(group) for g, c in sorted(counts.items())}
        text = json.dumps({str(g): p for g, p in shares.items()}, sort_keys=True)
        for lab in group.values():
            if lab.probabilities_json != text:
                lab.probabilities_json = text
                lab.confidence = shares[lab.grade]
                session.add(lab)
        updated += 1
    session.commit()
    return updated


def _from_logprobs(lab: MachineLabel) -> bool:
    return bool(lab.sampling_json and json.loads(lab.sampling_json).get("probabilities") == "logprobs")


@dataclass
class RunRow:
    """One run on the lead's page."""

    id: int
    machine: str
    model: str
    served_models: list[str]
    prompt_version: str
    guidelines_version: int | None
    selection: str
    status: str
    pairs_planned: int
    labels: int
    pairs_done: int
    errors: int
    errors_by_kind: dict[str, int]
    tokens_in: int
    tokens_out: int
    started_at: datetime
    finished_at: datetime | None

    def as_dict(self) -> dict:
        d = dict(self.__dict__)
        d["started_at"] = self.started_at.isoformat()
        d["finished_at"] = None if self.finished_at is None else self.finished_at.isoformat()
        return d


def list_runs(session: Session, project: Project | int, machine: str | None = None) -> list[RunRow]:
    """The runs in ``project`` (of ``machine`` when given), newest first, with their counts."""
    pid = lookups.project_id(project)
    stmt = select(MachineRun, MachineJudge.name).join(MachineJudge, MachineJudge.id == MachineRun.machine_id) \
        .where(MachineRun.project_id == pid)
    if machine is not None:
        stmt = stmt.where(MachineJudge.name == machine)
    runs = session.exec(stmt.order_by(MachineRun.id.desc())).all()  # type: ignore[union-attr]
    if not runs:
        return []
    ids = [r.id for r, _ in runs]
    stats = {rid: (n, p, ti, to) for rid, n, p, ti, to in session.exec(
        select(MachineLabel.run_id, func.count(MachineLabel.id), func.count(func.distinct(MachineLabel.pair_id)),
               func.coalesce(func.sum(MachineLabel.tokens_in), 0), func.coalesce(func.sum(MachineLabel.tokens_out), 0))
        .where(MachineLabel.run_id.in_(ids)).group_by(MachineLabel.run_id)).all()}  # type: ignore[union-attr]
    served: dict[int, set[str]] = defaultdict(set)
    for rid, sm in session.exec(select(MachineLabel.run_id, MachineLabel.served_model).where(
            MachineLabel.run_id.in_(ids), MachineLabel.served_model.is_not(None)).distinct()).all():  # type: ignore
        served[rid].add(sm)
    errors: dict[int, dict[str, int]] = defaultdict(dict)
    for rid, kind, c in session.exec(select(MachineFailure.run_id, MachineFailure.kind, func.count(MachineFailure.id))
                                     .where(MachineFailure.run_id.in_(ids))  # type: ignore[union-attr]
                                     .group_by(MachineFailure.run_id, MachineFailure.kind)).all():
        errors[rid][kind] = c
    out = []
    for r, name in runs:
        n, p, ti, to = stats.get(r.id, (0, 0, 0, 0))
        out.append(RunRow(r.id, name, r.model, sorted(served[r.id]), r.prompt_version, r.guidelines_version,
                          r.selection, r.status, r.pairs_planned, n, p, sum(errors[r.id].values()),
                          dict(sorted(errors[r.id].items())), int(ti), int(to), r.started_at, r.finished_at))
    return out


def failures(session: Session, run_id: int, limit: int = 20) -> list[tuple[str, str, int, str, str | None]]:
    """The first ``limit`` failed requests of a run: (qid, docid, sample, kind, detail)."""
    return [tuple(r) for r in session.exec(lookups.join_pair_text(
        select(Query.qid, Document.docid, MachineFailure.sample, MachineFailure.kind, MachineFailure.detail)
        .select_from(MachineFailure).join(PoolPair, PoolPair.id == MachineFailure.pair_id))
        .where(MachineFailure.run_id == run_id).order_by(MachineFailure.id).limit(limit)).all()]


def latest_run(session: Session, project: Project | int, machine: MachineJudge) -> MachineRun | None:
    return session.exec(select(MachineRun).where(MachineRun.project_id == lookups.project_id(project),
                                                 MachineRun.machine_id == machine.id)
                        .order_by(MachineRun.id.desc())).first()  # type: ignore[union-attr]


def declare_run_model(session: Session, project: Project, run: str, model: str | None) -> None:
    """Record the model a system run itself uses (None: forget it), for the circularity warning."""
    row = session.exec(select(Run).where(Run.project_id == project.id, Run.name == run)).first()
    if row is None:
        known = sorted(session.exec(select(Run.name).where(Run.project_id == project.id)).all())
        raise ValueError(f"run: no run {run!r} in project {project.name} (runs: {', '.join(known) or 'none'})")
    row.model = model.strip() if model and model.strip() else None
    session.add(row)
    session.commit()


def run_models(session: Session, project: Project | int) -> dict[str, str]:
    """``{system run name: its declared model}``."""
    return dict(session.exec(select(Run.name, Run.model).where(Run.project_id == lookups.project_id(project),
                                                               Run.model.is_not(None))).all())  # type: ignore


def current_prompt_version(session: Session, project: Project, machine: MachineJudge) -> str | None:
    """The prompt a run of ``machine`` would use now with its latest run's template: that template's
    name and hash with the guidelines version in force (None before any run)."""
    from curation.store.projects import current_guidelines

    last = latest_run(session, project, machine)
    if last is None:
        return None
    gl = current_guidelines(session, project)
    return f"{last.template_name}-{last.template_hash[:12]}+g{gl.version if gl else 0}"


def runs_overview(session: Session, project: Project, machine: str | None = None) -> dict:
    """The runs and each run-made machine judge's stale labels, as ``golden machine runs`` and the
    lead's Machine judges page show them (one function for both)."""
    runs = list_runs(session, project, machine)
    machines = []
    names = sorted({r.machine for r in runs})
    for name in names:
        mj = session.exec(select(MachineJudge).where(MachineJudge.name == name)).first()
        pv = current_prompt_version(session, project, mj)
        stale = stale_labels(session, project, mj, pv) if pv else []
        by_reason: dict[str, int] = defaultdict(int)
        for s in stale:
            by_reason[s.reason] += 1
        machines.append({"machine": name, "current_prompt_version": pv, "stale": len(stale),
                         "stale_pairs": len({s.pair_id for s in stale}), "stale_by_reason": dict(by_reason),
                         "stale_examples": [{"qid": s.qid, "docid": s.docid, "sample": s.sample,
                                             "prompt_version": s.prompt_version, "need_version": s.need_version,
                                             "reason": s.reason} for s in stale[:20]]})
    out = []
    for r in runs:
        d = r.as_dict()
        d["failures"] = [{"qid": q, "docid": doc, "sample": k, "kind": kind, "detail": detail}
                         for q, doc, k, kind, detail in failures(session, r.id, limit=5)] if r.errors else []
        out.append(d)
    return {"project": project.name, "runs": out, "machines": machines}
