"""The held-out split: each query goes once to ``tune`` or ``holdout``, stratified, and never moves.

The rule is systematic sampling with a random start, done per stratum (Madow & Madow 1944;
Cochran, *Sampling Techniques*, 3rd ed., ch. 8). For a stratum ``s`` the seed gives a start
``u_s`` in [0, 1) and the queries an order (a keyed hash of the qid). The ``k``-th query of the
stratum is held out when that brings the stratum's holdout count up to ``floor(h * k + u_s)``:

* every query is held out with probability exactly ``h`` over the seed (the start is uniform);
* after any number ``n`` of queries a stratum holds ``floor(h*n)`` or ``ceil(h*n)`` out, so the
  proportions hold in every stratum, however small;
* the decision for a query depends only on the queries before it in its stratum, so queries that
  arrive later are assigned by continuing the sequence and earlier queries never change.

Hashes are sha256 (hashlib), so the split is the same on every machine and Python version.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from sqlmodel import Session, select

from curation.formats.queries import SPLITS
from curation.store.models import Project, Query


def _unit(seed: int, kind: str, key: str) -> float:
    """A number in [0, 1) from sha256 of (seed, kind, key): 64 bits of the digest."""
    digest = hashlib.sha256(f"{seed}\x1f{kind}\x1f{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def _check(holdout: float, seed: int) -> None:
    if not isinstance(holdout, (int, float)) or isinstance(holdout, bool) or not 0.0 < float(holdout) < 1.0:
        raise ValueError(f"holdout must be a share strictly between 0 and 1 (e.g. 0.35), got {holdout!r}")
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise ValueError(f"seed must be an integer, got {seed!r}")


@dataclass(frozen=True)
class SplitQuery:
    """A query as the split sees it: its qid, its stratum key and its split (None = not yet assigned)."""

    qid: str
    stratum: str
    split: str | None = None


def assign_splits(queries: Iterable[SplitQuery], *, holdout: float, seed: int) -> dict[str, str]:
    """The split of every query that has none yet, as ``{qid: "tune" | "holdout"}``.

    Queries that already have a split keep it and count towards their stratum's totals; the new
    ones of each stratum are taken in the order of ``sha256(seed, qid)`` and held out while the
    stratum's holdout count is below ``floor(holdout * k + u_s)`` (see the module docstring).

    Example: four new queries in one stratum with ``holdout=0.5`` give two ``holdout``; adding
    four more later gives two more, and the first four keep theirs.
    """
    _check(holdout, seed)
    by_stratum: dict[str, list[SplitQuery]] = defaultdict(list)
    seen: set[str] = set()
    for q in queries:
        if q.qid in seen:
            raise ValueError(f"queries: qid {q.qid!r} appears twice")
        seen.add(q.qid)
        if q.split is not None and q.split not in SPLITS:
            raise ValueError(f"queries: qid {q.qid!r} has split {q.split!r}, expected one of {SPLITS}")
        by_stratum[q.stratum].append(q)

    result: dict[str, str] = {}
    for stratum in sorted(by_stratum):
        members = by_stratum[stratum]
        start = _unit(seed, "stratum", stratum)
        done = sum(1 for q in members if q.split is not None)
        held = sum(1 for q in members if q.split == "holdout")
        new = sorted((q for q in members if q.split is None), key=lambda q: (_unit(seed, "query", q.qid), q.qid))
        for k, q in enumerate(new, start=done + 1):
            if held < math.floor(holdout * k + start):
                result[q.qid] = "holdout"
                held += 1
            else:
                result[q.qid] = "tune"
    return result


@dataclass
class SplitReport:
    """What ``golden export split`` did: the parameters, how many queries it assigned now, and the totals."""

    project: str
    holdout: float
    seed: int
    assigned: dict[str, str] = field(default_factory=dict)  # qid -> split, assigned in this call
    totals: dict[str, Counter] = field(default_factory=dict)  # stratum -> Counter(split -> n)

    @property
    def counts(self) -> Counter:
        total: Counter = Counter()
        for c in self.totals.values():
            total.update(c)
        return total

    def summary(self) -> dict:
        """Plain data for a manifest: parameters and counts per split and per stratum."""
        return {
            "holdout": self.holdout,
            "seed": self.seed,
            "method": "per-stratum systematic sampling with a seeded random start",
            "counts": {s: self.counts.get(s, 0) for s in SPLITS},
            "strata": {k: {s: v.get(s, 0) for s in SPLITS} for k, v in sorted(self.totals.items())},
        }


def _project_queries(session: Session, project: Project) -> list[Query]:
    return list(session.exec(select(Query).where(Query.project_id == project.id).order_by(Query.id)))


def split_project(
    session: Session, project: Project, *, holdout: float | None = None, seed: int | None = None
) -> SplitReport:
    """Assign ``tune``/``holdout`` to every query of ``project`` that has no split yet, and commit.

    The first call fixes the project's ``holdout`` share and ``seed`` (stored on the project);
    later calls (with the same values or none) assign only queries that arrived since. Asking for
    different values once the split exists raises ValueError: a query's split never changes.
    """
    stored_h, stored_s = project.split_holdout, project.split_seed
    if stored_h is None:
        if holdout is None:
            raise ValueError(
                f"holdout: project {project.name!r} has no split yet; give the share to hold out, e.g. 0.35"
            )
        seed = 0 if seed is None else seed
        _check(holdout, seed)
    else:
        if holdout is not None and not math.isclose(holdout, stored_h, rel_tol=0, abs_tol=1e-12):
            raise ValueError(
                f"holdout: project {project.name!r} is already split with holdout {stored_h} (seed {stored_s}); "
                "a query's split never changes. Run `golden export split` without --holdout/--seed to assign new "
                "queries."
            )
        if seed is not None and seed != stored_s:
            raise ValueError(
                f"seed: project {project.name!r} is already split with seed {stored_s} (holdout {stored_h}); "
                "a query's split never changes. Run `golden export split` without --holdout/--seed to assign new "
                "queries."
            )
        holdout, seed = stored_h, stored_s

    rows = _project_queries(session, project)
    assigned = assign_splits(
        (SplitQuery(q.qid, q.stratum_key or "", q.split) for q in rows), holdout=holdout, seed=seed
    )
    for q in rows:
        if q.qid in assigned:
            q.split = assigned[q.qid]
            session.add(q)
    if stored_h is None:
        project.split_holdout, project.split_seed = float(holdout), int(seed)
        session.add(project)
    session.commit()
    return _report(project, rows, assigned)


def assign_pending(session: Session, project: Project) -> SplitReport | None:
    """Assign new queries under the project's stored split; None when the project has no split.

    Called by the export, so every exported query carries its split even when queries arrived
    after the last ``golden export split``.
    """
    if project.split_holdout is None:
        return None
    return split_project(session, project)


def split_summary(session: Session, project: Project) -> dict | None:
    """The manifest's split section (parameters and counts), or None when the project has no split."""
    if project.split_holdout is None:
        return None
    return _report(project, _project_queries(session, project), {}).summary()


def _report(project: Project, rows: list[Query], assigned: dict[str, str]) -> SplitReport:
    totals: dict[str, Counter] = defaultdict(Counter)
    for q in rows:
        if q.split is not None:
            totals[q.stratum_key or ""][q.split] += 1
    return SplitReport(
        project=project.name,
        holdout=float(project.split_holdout),
        seed=int(project.split_seed),
        assigned=assigned,
        totals=dict(totals),
    )
