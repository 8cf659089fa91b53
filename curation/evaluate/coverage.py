"""Unjudged results: how much of each run's top-k the judgments do not cover.

Metrics such as nDCG@10 and P@10 count an unjudged document as non-relevant, so a run added after
the pool was judged is scored on *holes* and looks worse than it is (Buckley & Voorhees 2004,
"Retrieval evaluation with incomplete information"; Sakai 2007, "Alternatives to bpref").
:func:`unjudged` measures, per run and query, the share of the top-``depth`` documents (trec_eval
order: score descending, ties by docid descending) with no judgment at all, whatever its grade.

Only queries with judgments are measured (trec_eval evaluates exactly those); a run's queries
absent from the judgments, and judged queries the run did not answer, are listed apart.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from curation.formats.qrels import read_qrels
from curation.formats.runs import RankedRun


@dataclass(frozen=True)
class QueryCoverage:
    """One query of one run: ``retrieved`` documents in the top ``depth``, ``unjudged`` of them."""

    qid: str
    retrieved: int
    unjudged: int

    @property
    def share(self) -> float:
        return self.unjudged / self.retrieved if self.retrieved else 0.0


@dataclass
class RunCoverage:
    """The unjudged share of one run's top ``depth``.

    ``share`` pools every measured query's top-``depth`` documents (micro average); ``mean_share``
    is the mean of the per-query shares (macro average, what a per-query metric feels).
    ``holes`` is True when ``share`` reaches ``holes_at``: the run is measured on holes.
    """

    name: str
    depth: int
    queries: list[QueryCoverage]
    not_judged_queries: list[str] = field(default_factory=list)  # run qids with no judgments
    unanswered_queries: list[str] = field(default_factory=list)  # judged qids the run lacks
    holes_at: float = 0.1

    @property
    def retrieved(self) -> int:
        return sum(q.retrieved for q in self.queries)

    @property
    def unjudged(self) -> int:
        return sum(q.unjudged for q in self.queries)

    @property
    def share(self) -> float:
        return self.unjudged / self.retrieved if self.retrieved else 0.0

    @property
    def mean_share(self) -> float:
        return sum(q.share for q in self.queries) / len(self.queries) if self.queries else 0.0

    @property
    def holes(self) -> bool:
        return self.retrieved > 0 and self.share >= self.holes_at

    def verdict(self) -> str:
        """One plain sentence on what the share means for this run's scores."""
        if not self.queries:
            return f"{self.name}: no query in common with the judgments; nothing measured"
        pct = f"{self.share:.1%}"
        if self.holes:
            return (
                f"{self.name} is measured on holes: {pct} of its top-{self.depth} has no judgment, "
                f"and metrics count those as non-relevant, so its scores are biased low. "
                f"Judge its unjudged documents (extend the pool) before comparing it."
            )
        return f"{self.name}: {pct} of its top-{self.depth} unjudged (below {self.holes_at:.0%}); covered"


def judged_from_qrels(path: str | os.PathLike, *, dedup=None) -> dict[str, set[str]]:
    """``{qid: {docid, ...}}`` of every judged pair in a TREC qrels file (any grade counts). A pair
    repeated goes through ``dedup`` (:func:`curation.formats.qrels.read_qrels`): another grade for it is
    an error unless its policy says otherwise."""
    judged: dict[str, set[str]] = {}
    for qid, docs in read_qrels(path, dedup=dedup).items():
        judged.setdefault(qid, set()).update(docs)
    return judged


def judged_from_store(session, project, *, policy: str = "adjudicated") -> dict[str, set[str]]:
    """``{qid: {docid, ...}}`` of a project's pairs that have a final label under ``policy``
    (see :func:`curation.agree.labels.final_labels`), for every query not dropped (possibly empty)."""
    from sqlmodel import select

    from curation.agree.labels import final_labels
    from curation.store.models import Query

    pid = project if isinstance(project, int) else int(project.id)
    judged: dict[str, set[str]] = {
        qid: set()
        for qid in session.exec(select(Query.qid).where(Query.project_id == pid, Query.status != "dropped")).all()
    }
    for label in final_labels(session, pid, policy=policy):
        if label.grade is not None and label.qid in judged:
            judged[label.qid].add(label.docid)
    return judged


def unjudged(
    run: RankedRun, judged: Mapping[str, Collection[str]], *, depth: int = 10, holes_at: float = 0.1
) -> RunCoverage:
    """The unjudged share of ``run``'s top ``depth`` against ``judged`` (``{qid: docids}``).

    >>> from curation.formats.runs import RankedRun
    >>> r = RankedRun("sys", "sys.run", "", rankings={"1": ["a", "b", "c"], "9": ["x"]})
    >>> c = unjudged(r, {"1": {"a", "c"}, "2": {"z"}}, depth=2)
    >>> (c.retrieved, c.unjudged, c.not_judged_queries, c.unanswered_queries)
    (2, 1, ['9'], ['2'])
    """
    if not isinstance(depth, int) or depth < 1:
        raise ValueError(f"depth: must be a positive integer, got {depth!r}")
    if not 0 < holes_at <= 1:
        raise ValueError(f"holes_at: must be in (0, 1], got {holes_at!r}")
    per_query = []
    not_judged = []
    for qid in sorted(run.rankings):
        if qid not in judged:
            not_judged.append(qid)
            continue
        top = run.top(qid, depth)
        docs = judged[qid]
        per_query.append(QueryCoverage(qid, len(top), sum(1 for d in top if d not in docs)))
    unanswered = sorted(q for q in judged if q not in run.rankings)
    return RunCoverage(run.name, depth, per_query, not_judged, unanswered, holes_at)
