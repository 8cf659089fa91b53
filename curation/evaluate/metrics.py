"""Per-query retrieval metrics, computed the way trec_eval computes them.

Every metric here gives one score per query, so that two systems can be compared query by query
(``curation.evaluate.stats``). The registry :data:`METRICS` states each metric's parameters once; the CLI
choices, the help text and the names used by trec_eval, ranx and ir_measures all come from it.

Conventions (trec_eval 9.0, ``-c``):

* A run's ranking is trec_eval's: score descending, ties broken by docid descending
  (:func:`curation.formats.runs.trec_order`); the rank column is ignored.
* A document is *relevant* when its grade is at least ``rel_level`` (trec_eval's ``-l``, default 1).
  Documents absent from the qrels (unjudged) count as not relevant; ``judged@k`` says how many there
  were.
* nDCG's gains are the grade values themselves (negative grades give no gain), discounted by
  ``log2(r + 1)`` at rank ``r`` (Järvelin & Kekäläinen; trec_eval's ``ndcg_cut`` since 9.0.8; older
  trec_eval releases left ranks 1 and 2 both undiscounted, and their figures differ). The ideal
  ranking is every judged document with a positive grade, best grade first, cut at ``k``.
  ``rel_level`` does not change nDCG (as in trec_eval). The values match ``out.test.aq``.
* A query of the qrels for which the run has no result scores 0 (trec_eval's ``-c``); the
  evaluation lists those queries in :attr:`QueryScores.no_results`.
* A query with no relevant document (no grade >= ``rel_level``) has no recall or AP (0/0). It is
  left out of those metrics and listed in :attr:`QueryScores.dropped`; precision-type metrics keep
  it. nDCG does not depend on the level: it is defined whenever the query has a document with a
  positive grade, and only a query without any is left out of it (trec_eval scores such a query
  0; golden leaves it out, as 0/0 says nothing about the run). So at ``-l 2`` nDCG keeps the
  queries that recall and AP leave out, as trec_eval does.

The values agree with trec_eval's own regression outputs (``out.test.aq``, ``out.test.aql``,
``out.test.aqc``), see ``tests/evaluate/test_metrics.py``.

References: Järvelin & Kekäläinen, "Cumulated gain-based evaluation of IR techniques", ACM TOIS
20(4), 2002 (nDCG); Buckley & Voorhees, "Retrieval evaluation with incomplete information", SIGIR
2004 (judged fraction); trec_eval, https://github.com/usnistgov/trec_eval.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from curation.formats.runs import RankedRun

__all__ = [
    "METRICS",
    "Metric",
    "MetricSpec",
    "QueryScores",
    "QrelsIndex",
    "evaluate",
    "parse_metric",
    "metric_choices",
]


# ---------------------------------------------------------------------------------------------
# The judged matrix: one row per query, one column per rank, built once per (run, qrels).


@dataclass
class QrelsIndex:
    """Qrels prepared once for many runs: grades per query, relevant counts and ideal gains.

    ``qids`` is the evaluated query set (every query of the qrels unless restricted), sorted as
    strings. ``num_rel[i]`` counts documents with grade >= ``rel_level``; ``ideal[i]`` holds the
    positive grades of query ``i`` sorted best first.
    """

    grades: dict[str, dict[str, int]]
    rel_level: int
    qids: list[str]
    num_rel: np.ndarray
    ideal: list[np.ndarray]

    @classmethod
    def build(
        cls, qrels: Mapping[str, Mapping[str, int]], *, rel_level: int = 1, qids: Iterable[str] | None = None
    ) -> QrelsIndex:
        if not isinstance(rel_level, (int, np.integer)) or isinstance(rel_level, bool):
            raise ValueError(f"rel_level must be an integer grade, got {rel_level!r}")
        if qids is None:
            chosen = sorted(qrels)
        else:
            chosen = sorted({str(q) for q in qids})
            missing = [q for q in chosen if q not in qrels]
            if missing:
                raise ValueError(
                    f"qids: {len(missing)} queries have no qrels (first: {missing[0]!r}); "
                    "evaluate only judged queries"
                )
        num_rel = np.zeros(len(chosen), dtype=np.int64)
        ideal = []
        for i, qid in enumerate(chosen):
            g = np.fromiter(qrels[qid].values(), dtype=np.float64, count=len(qrels[qid]))
            num_rel[i] = int((g >= rel_level).sum())
            pos = g[g > 0]
            ideal.append(np.sort(pos)[::-1])
        return cls(grades={q: dict(qrels[q]) for q in chosen}, rel_level=int(rel_level), qids=chosen,
                   num_rel=num_rel, ideal=ideal)


@dataclass
class Judged:
    """A run laid against the qrels: ``grade[i, r]`` is the grade of the document at rank ``r+1``
    of query ``i`` (NaN when unjudged or past the end of the ranking)."""

    index: QrelsIndex
    grade: np.ndarray
    judged: np.ndarray
    lengths: np.ndarray

    @property
    def relevant(self) -> np.ndarray:
        rel = getattr(self, "_relevant", None)
        if rel is None:
            with np.errstate(invalid="ignore"):
                rel = self.grade >= self.index.rel_level
            self._relevant = rel
        return rel

    @property
    def gain(self) -> np.ndarray:
        gain = getattr(self, "_gain", None)
        if gain is None:
            gain = np.where(self.grade > 0, self.grade, 0.0)
            self._gain = gain
        return gain


def _lay(rankings: Mapping[str, list[str]], index: QrelsIndex, depth: int | None) -> Judged:
    """Look every ranked document up in the qrels, building the (queries x depth) grade matrix."""
    nq = len(index.qids)
    lengths = np.zeros(nq, dtype=np.int64)
    rows = []
    for i, qid in enumerate(index.qids):
        ranked = rankings.get(qid) or ()
        if depth is not None:
            ranked = ranked[:depth]
        lengths[i] = len(ranked)
        get = index.grades[qid].get
        rows.append([get(d, math.nan) for d in ranked])
    width = int(lengths.max()) if nq else 0
    if depth is not None:
        width = max(width, 1)
    grade = np.full((nq, max(width, 1)), np.nan)
    for i, row in enumerate(rows):
        if row:
            grade[i, : len(row)] = row
    judged = ~np.isnan(grade)
    return Judged(index=index, grade=grade, judged=judged, lengths=lengths)


def _cut(m: np.ndarray, k: int | None) -> np.ndarray:
    """The first ``k`` columns, padded with zeros/False when the matrix is narrower than ``k``."""
    if k is None:
        return m
    if m.shape[1] >= k:
        return m[:, :k]
    pad = np.zeros((m.shape[0], k - m.shape[1]), dtype=m.dtype)
    return np.concatenate([m, pad], axis=1)


def _safe_div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    out = np.zeros(np.broadcast(num, den).shape)
    np.divide(num, den, out=out, where=den > 0)
    return out


# ---------------------------------------------------------------------------------------------
# The metrics (each takes the judged matrix and a cutoff, returns one value per query).


def _precision(j: Judged, k: int) -> np.ndarray:
    # trec_eval P_k divides by k even when fewer than k documents were retrieved.
    return _cut(j.relevant, k).sum(axis=1) / k


def _recall(j: Judged, k: int | None) -> np.ndarray:
    return _safe_div(_cut(j.relevant, k).sum(axis=1), j.index.num_rel)


def _recall_capped(j: Judged, k: int) -> np.ndarray:
    return _safe_div(_cut(j.relevant, k).sum(axis=1), np.minimum(j.index.num_rel, k))


def _success(j: Judged, k: int) -> np.ndarray:
    return _cut(j.relevant, k).any(axis=1).astype(np.float64)


def _reciprocal_rank(j: Judged, k: int | None) -> np.ndarray:
    rel = _cut(j.relevant, k)
    first = rel.argmax(axis=1)
    return np.where(rel.any(axis=1), 1.0 / (first + 1.0), 0.0)


def _average_precision(j: Judged, k: int | None) -> np.ndarray:
    rel = _cut(j.relevant, k)
    ranks = np.arange(1, rel.shape[1] + 1)
    precision_at = np.cumsum(rel, axis=1) / ranks
    return _safe_div((precision_at * rel).sum(axis=1), j.index.num_rel)


def _discount(n: int) -> np.ndarray:
    """The discount of ranks 1..n: log2(r + 1), as trec_eval's ndcg_cut (9.0.8 and later)."""
    return np.log2(np.arange(2, n + 2, dtype=np.float64))


def _ndcg(j: Judged, k: int | None) -> np.ndarray:
    gain = _cut(j.gain, k)
    dcg = (gain / _discount(gain.shape[1])).sum(axis=1)
    depth = k if k is not None else max((len(x) for x in j.index.ideal), default=0)
    ideal = np.zeros((len(j.index.ideal), max(depth, 1)))
    for i, g in enumerate(j.index.ideal):
        g = g[:depth]
        ideal[i, : len(g)] = g
    idcg = (ideal / _discount(ideal.shape[1])).sum(axis=1)
    return _safe_div(dcg, idcg)


def _judged_fraction(j: Judged, k: int | None) -> np.ndarray:
    judged = _cut(j.judged, k).sum(axis=1)
    shown = j.lengths if k is None else np.minimum(j.lengths, k)
    return _safe_div(judged, shown)


@dataclass(frozen=True)
class Metric:
    """One registry entry.

    ``cutoff``: "required", "optional" or "none". ``needs_relevant``: undefined (dropped) for a
    query without relevant documents (grade >= rel_level). ``needs_gain``: undefined for a query
    without a positively graded document, whatever the level (nDCG). ``binary``: every value is 0
    or 1 (so McNemar applies); ``binary_at_1`` marks metrics that become binary at k=1.
    ``trec_eval``/``ir_measures``/``ranx`` are the peer tools' names (``{k}`` stands for the
    cutoff), None where the tool has no match.
    """

    name: str
    title: str
    cutoff: str
    needs_relevant: bool
    compute: Callable[[Judged, int | None], np.ndarray]
    doc: str
    binary: bool = False
    binary_at_1: bool = False
    needs_gain: bool = False
    trec_eval: str | None = None
    trec_eval_nocut: str | None = None
    ir_measures: str | None = None
    ranx: str | None = None
    aliases: tuple[str, ...] = ()


METRICS: dict[str, Metric] = {
    m.name: m
    for m in [
        Metric("ndcg", "nDCG", "required", False, _ndcg,
               "normalised discounted cumulative gain, gains = grades, trec_eval's ndcg_cut",
               needs_gain=True, trec_eval="ndcg_cut_{k}", ir_measures="nDCG@{k}", ranx="ndcg@{k}"),
        Metric("recall", "Recall", "required", True, _recall,
               "|relevant in top k| / |relevant|", trec_eval="recall_{k}", ir_measures="R@{k}",
               ranx="recall@{k}"),
        Metric("recall_capped", "Capped recall", "required", True, _recall_capped,
               "|relevant in top k| / min(|relevant|, k)", ir_measures=None, aliases=("rcap",)),
        Metric("p", "Precision", "required", False, _precision,
               "|relevant in top k| / k", binary_at_1=True, trec_eval="P_{k}", ir_measures="P@{k}",
               ranx="precision@{k}", aliases=("precision",)),
        Metric("mrr", "MRR", "optional", False, _reciprocal_rank,
               "1 / rank of the first relevant document (0 when none in the top k)", binary_at_1=True,
               trec_eval_nocut="recip_rank", ir_measures="RR@{k}", ranx="mrr@{k}",
               aliases=("rr", "recip_rank")),
        Metric("ap", "AP", "optional", True, _average_precision,
               "average precision: sum of precision at each relevant rank / |relevant|",
               trec_eval="map_cut_{k}", trec_eval_nocut="map", ir_measures="AP@{k}", ranx="map@{k}",
               aliases=("map",)),
        Metric("success", "Success", "required", False, _success,
               "1 when a relevant document is in the top k, else 0", binary=True,
               ir_measures="Success@{k}", ranx="hit_rate@{k}", aliases=("hit",)),
        Metric("judged", "Judged", "optional", False, _judged_fraction,
               "fraction of the top k (or of what was retrieved, if fewer) that has a judgment",
               ir_measures="Judged@{k}"),
    ]
}
_ALIASES = {a: m.name for m in METRICS.values() for a in m.aliases}


@dataclass(frozen=True)
class MetricSpec:
    """A metric with its cutoff, written ``name@k`` (``ndcg@10``) or ``name`` when uncut."""

    metric: Metric
    k: int | None

    def __str__(self) -> str:
        return self.metric.name if self.k is None else f"{self.metric.name}@{self.k}"

    @property
    def name(self) -> str:
        return str(self)

    @property
    def binary(self) -> bool:
        return self.metric.binary or (self.metric.binary_at_1 and self.k == 1)

    def peer_name(self, tool: str) -> str | None:
        """The same measure's name in ``trec_eval``, ``ir_measures`` or ``ranx`` (None if absent)."""
        if tool == "trec_eval" and self.k is None:
            return self.metric.trec_eval_nocut
        template = getattr(self.metric, tool)
        if template is None:
            return None
        if self.k is None:
            return template.replace("@{k}", "")
        return template.format(k=self.k)


def metric_choices() -> list[str]:
    """Human-readable list of accepted metric forms, from the registry."""
    out = []
    for m in METRICS.values():
        out.append(m.name + ("@k" if m.cutoff == "required" else "[@k]" if m.cutoff == "optional" else ""))
    return out


MAX_CUTOFF = 1_000_000  # a deeper cutoff than any run holds; beyond, the number is a typo (or an attack)
_SPEC = re.compile(r"^\s*([A-Za-z_]+)\s*(?:@\s*(\d+))?\s*$")


def parse_metric(text: str) -> MetricSpec:
    """Parse ``ndcg@10``, ``recall@100``, ``ap``, ``mrr@10`` ... into a :class:`MetricSpec`.

    >>> str(parse_metric("nDCG@10"))
    'ndcg@10'
    """
    if isinstance(text, MetricSpec):
        return text
    m = _SPEC.match(str(text))
    if not m:
        raise ValueError(f"metric {text!r} is not of the form name@k; choose from {', '.join(metric_choices())}")
    name = m.group(1).lower()
    name = _ALIASES.get(name, name)
    if name not in METRICS:
        raise ValueError(f"metric {text!r} is not known; choose from {', '.join(metric_choices())}")
    metric = METRICS[name]
    digits = m.group(2)
    k = int(digits) if digits is not None and len(digits) <= len(str(MAX_CUTOFF)) else None
    if digits is not None and (k is None or not 1 <= k <= MAX_CUTOFF):
        shown = text if len(str(text)) <= 40 else str(text)[:37] + "..."
        raise ValueError(f"metric {shown!r}: the cutoff k must be between 1 and {MAX_CUTOFF}")
    if k is None and metric.cutoff == "required":
        raise ValueError(f"metric {text!r} needs a cutoff, e.g. {metric.name}@10")
    if k is not None and metric.cutoff == "none":
        raise ValueError(f"metric {text!r} takes no cutoff; write {metric.name}")
    return MetricSpec(metric, k)


# ---------------------------------------------------------------------------------------------
# Evaluation


@dataclass
class QueryScores:
    """One metric's per-query values for one run.

    ``qids``/``values``: the queries that have a value (sorted as strings). ``dropped``: queries of
    the qrels left out because the metric is 0/0 for them; ``drop_reason`` says why ("no relevant
    document (grade >= 2)" for recall and AP, "no positively graded document" for nDCG).
    ``no_results``: queries of the qrels where the run returned nothing; they score 0 (trec_eval
    ``-c``). ``judged``: the judged fraction of the same top k for each query in ``qids``.
    """

    metric: MetricSpec
    run: str
    qids: list[str]
    values: np.ndarray
    judged: np.ndarray
    dropped: list[str] = field(default_factory=list)
    no_results: list[str] = field(default_factory=list)
    rel_level: int = 1
    drop_reason: str = ""

    @property
    def mean(self) -> float:
        return float(self.values.mean()) if len(self.values) else math.nan

    @property
    def judged_mean(self) -> float:
        return float(self.judged.mean()) if len(self.judged) else math.nan

    def as_dict(self) -> dict[str, float]:
        return dict(zip(self.qids, self.values.tolist()))


def evaluate(
    run: RankedRun | Mapping[str, list[str]],
    qrels: Mapping[str, Mapping[str, int]] | QrelsIndex,
    metrics: Iterable[str | MetricSpec],
    *,
    rel_level: int = 1,
    qids: Iterable[str] | None = None,
    name: str | None = None,
) -> dict[str, QueryScores]:
    """Per-query values of ``metrics`` for ``run`` against ``qrels``, keyed by metric name.

    ``run`` is a :class:`curation.formats.runs.RankedRun` (or ``{qid: [docid, ...]}`` already in trec_eval order).
    ``qrels`` is ``{qid: {docid: grade}}`` or a :class:`QrelsIndex` built once for many runs. The
    evaluated queries are those of the qrels (or ``qids``, a subset of them).

    >>> scores = evaluate({"q": ["a", "b", "c"]}, {"q": {"b": 2, "c": 1, "z": 0}}, ["p@2", "ndcg@3"])
    >>> round(scores["p@2"].values[0], 4), round(scores["ndcg@3"].values[0], 4)
    (0.5, 0.6697)
    """
    specs = [parse_metric(m) for m in metrics]
    if not specs:
        raise ValueError("metrics: give at least one metric, e.g. ndcg@10")
    if isinstance(qrels, QrelsIndex):
        if qids is not None:
            raise ValueError("qids: restrict the queries when building the QrelsIndex")
        if rel_level != qrels.rel_level:
            raise ValueError(f"rel_level {rel_level} differs from the QrelsIndex's {qrels.rel_level}")
        index = qrels
    else:
        index = QrelsIndex.build(qrels, rel_level=rel_level, qids=qids)
    rankings = run.rankings if isinstance(run, RankedRun) else run
    run_name = name or (run.name if isinstance(run, RankedRun) else "run")
    depth = None if any(s.k is None for s in specs) else max(s.k for s in specs)
    judged = _lay(rankings, index, depth)
    no_results = [q for q, n in zip(index.qids, judged.lengths) if n == 0]
    has_rel = index.num_rel > 0
    has_gain = np.array([len(g) > 0 for g in index.ideal], dtype=bool)
    out: dict[str, QueryScores] = {}
    for spec in specs:
        values = spec.metric.compute(judged, spec.k)
        jfrac = _judged_fraction(judged, spec.k)
        reason = ""
        if spec.metric.needs_relevant:
            keep, reason = has_rel, relevant_reason(index.rel_level)
        elif spec.metric.needs_gain:
            keep, reason = has_gain, NO_GAIN
        else:
            keep = np.ones(len(index.qids), dtype=bool)
        dropped = [q for q, h in zip(index.qids, keep) if not h]
        dropped_set = set(dropped)
        out[str(spec)] = QueryScores(
            metric=spec,
            run=run_name,
            qids=[q for q, k_ in zip(index.qids, keep) if k_],
            values=values[keep].astype(np.float64),
            judged=jfrac[keep],
            dropped=dropped,
            no_results=[q for q in no_results if q not in dropped_set] if dropped else list(no_results),
            rel_level=index.rel_level,
            drop_reason=reason if dropped else "",
        )
    return out


NO_GAIN = "no positively graded document"


def relevant_reason(rel_level: int) -> str:
    """Why recall or AP left a query out: ``"no relevant document (grade >= 2)"``."""
    return f"no relevant document (grade >= {rel_level})"
