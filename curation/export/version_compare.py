"""Comparing pooled runs of a project against one of its exported versions (the app's report).

The store does not keep run files, but the pool remembers, for every pooled pair, which run put
the document where in its top ``depth`` (:mod:`curation.store.provenance`, hidden from judges). That is
each run's ranking down to the pool depth, exactly the documents trec_eval sees in any top-k with
k <= depth, so metrics cut at such a k are the same as from the run files. Uncut metrics (AP and
MRR over the whole ranking) and deeper cutoffs are refused.

The qrels and queries come from the version's frozen files, never from the live store, so the
report is about that version.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlmodel import Session, select

from curation.evaluate.coverage import RunCoverage, unjudged
from curation.evaluate.metrics import QrelsIndex, evaluate, parse_metric
from curation.evaluate.stats import Comparison, compare, pair_scores
from curation.export.reading import version_qrels, version_queries
from curation.export.versions import get_version
from curation.export.versions_page import version_files
from curation.formats.runs import RankedRun
from curation.store.lookups import join_pair_text
from curation.store.models import Document, PoolPair, Query, Run
from curation.store.projects import get_project
from curation.store.provenance import RANKS, decode_ranks

__all__ = ["PooledRun", "pooled_runs", "version_runs", "compare_pooled", "version_coverage", "COVERAGE_WARN_BELOW"]

COVERAGE_WARN_BELOW = 0.90  # a run whose top-10 is judged less than this is flagged where decisions are made


@dataclass
class PooledRun:
    """A run as the pool knows it: its name, depth and ``rankings[qid]`` down to that depth."""

    name: str
    depth: int
    rankings: dict[str, list[str]]


def pooled_runs(session: Session, project: str) -> dict[str, PooledRun]:
    """Every run that contributed to ``project``'s pool, rebuilt from the pool's provenance."""
    proj = get_project(session, project)
    ranks: dict[str, dict[str, list[tuple[int, str]]]] = {}
    rows = session.exec(
        join_pair_text(select(Query.qid, Document.docid, RANKS)).where(PoolPair.project_id == proj.id)
    ).all()
    for qid, docid, systems in rows:
        for name, rank in decode_ranks(systems).items():
            ranks.setdefault(name, {}).setdefault(qid, []).append((int(rank), docid))
    depths = {r.name: r.depth for r in session.exec(select(Run).where(Run.project_id == proj.id))}
    out = {}
    for name in sorted(ranks):
        per_query = {q: [d for _, d in sorted(pairs)] for q, pairs in ranks[name].items()}
        seen = max((len(v) for v in per_query.values()), default=0)
        out[name] = PooledRun(name, int(depths.get(name) or seen), per_query)
    return out


def version_runs(session: Session, project: str, version: str) -> dict[str, PooledRun]:
    """The pooled runs of ``project``, after checking that ``version`` exists (ValueError if not)."""
    proj = get_project(session, project)
    get_version(session, proj, version)
    return pooled_runs(session, project)


def _pooled_scores(session: Session, project: str, version: str, names: list[str], metric: str, params: list[str]):
    """Per-query scores of the pooled runs ``names`` on the qrels of ``version``, and its queries file."""
    _, files, _ = version_files(session, project, version)
    spec = parse_metric(metric)
    runs = pooled_runs(session, project)
    for param, name in zip(params, names):
        if name not in runs:
            raise ValueError(f"{param}: no pooled run {name!r} in project {project!r} (runs: {', '.join(runs)})")
    depth = min(runs[n].depth for n in names)
    if spec.k is None or spec.k > depth:
        raise ValueError(f"metric: the pool holds these runs' top {depth}; choose a metric cut at k <= {depth}, "
                         f"e.g. {spec.metric.name}@{min(10, depth)}")
    qrels = version_qrels(files)
    queries = version_queries(files["queries.jsonl"]) if "queries.jsonl" in files else None
    index = QrelsIndex.build(qrels)
    return [evaluate(runs[n].rankings, index, [spec], name=n)[str(spec)] for n in names], queries


def compare_pooled(
    session: Session,
    project: str,
    version: str,
    run_a: str,
    run_b: str,
    *,
    metric: str = "ndcg@10",
    weighting: str = "unweighted",
    split: str | None = None,
    resamples: int = 10_000,
    seed: int = 0,
    tie: float | None = None,
) -> Comparison:
    """Paired comparison (:func:`curation.evaluate.stats.compare`) of pooled runs ``run_a`` and ``run_b`` on
    the qrels and queries of exported ``version``. ValueError (naming the parameter) for an unknown
    run, a metric without a cutoff or deeper than the pool."""
    if run_a == run_b:
        raise ValueError("run_b: pick two different runs")
    (a, b), queries = _pooled_scores(session, project, version, [run_a, run_b], metric, ["run_a", "run_b"])
    paired = pair_scores(a, b, queries=queries, split=split)
    return compare(paired, queries=queries, weighting=weighting, resamples=resamples, seed=seed, tie=tie,
                   split=split)


def compare_pooled_many(
    session: Session,
    project: str,
    version: str,
    names: list[str],
    *,
    baseline: str | None = None,
    correction: str = "holm",
    metric: str = "ndcg@10",
    weighting: str = "unweighted",
    split: str | None = None,
    resamples: int = 10_000,
    seed: int = 0,
    tie: float | None = None,
):
    """Every pair of the pooled runs ``names`` (or each against ``baseline``), corrected as a family
    (:func:`curation.evaluate.multiple.compare_many`), on the qrels and queries of ``version``: what
    ``golden stats compare`` of several runs gives."""
    from curation.evaluate.multiple import compare_many

    names = list(dict.fromkeys(names))
    if len(names) < 2:
        raise ValueError("runs: pick at least two different runs")
    if baseline and baseline not in names:
        raise ValueError(f"baseline: {baseline!r} is not one of the runs picked")
    scores, queries = _pooled_scores(session, project, version, names, metric, ["runs"] * len(names))
    return compare_many(scores, baseline=names.index(baseline) if baseline else None, correction=correction,
                        queries=queries, weighting=weighting, split=split, resamples=resamples, seed=seed, tie=tie)


def version_coverage(session: Session, project: str, version: str, *, depth: int = 10) -> list[RunCoverage]:
    """How much of each pooled run's top ``depth`` (at most the pool depth) the exported
    ``version``'s qrels judge (:func:`curation.evaluate.coverage.unjudged`, as ``golden stats coverage``),
    worst first; ``holes`` is set below :data:`COVERAGE_WARN_BELOW` judged. For the version page and
    the comparison report (a verdict on runs whose top-10 is 7% judged used to come with no warning)."""
    _, files, _ = version_files(session, project, version)
    qrels = version_qrels(files)
    judged = {q: set(docs) for q, docs in qrels.items()}
    out = []
    for run in pooled_runs(session, project).values():
        ranked = RankedRun(run.name, "", "", rankings=run.rankings)
        out.append(unjudged(ranked, judged, depth=min(depth, run.depth or depth),
                            holes_at=round(1.0 - COVERAGE_WARN_BELOW, 10)))
    return sorted(out, key=lambda r: (-r.share, r.name))
