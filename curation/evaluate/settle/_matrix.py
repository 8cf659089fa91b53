"""The pool as matrices: the runs' ranks of every pooled pair, and the metric's discount."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from curation.evaluate.metrics import MetricSpec, parse_metric

EPS = 1e-12  # strict inequalities of the guarantee hold by more than rounding


# ---------------------------------------------------------------------------------------------
# The pool as matrices


@dataclass
class PoolMatrix:
    """A pool laid out for the bounds: pair ``p`` belongs to query ``pair_query[p]``; ``ranks[r, p]``
    is the pair's rank (1-based) in run ``r``, 0 when that run did not retrieve it within ``depth``.
    ``strata[q]`` names query ``q``'s stratum (for the estimate)."""

    qids: list[str]
    runs: list[str]
    pair_query: np.ndarray
    docids: list[str]
    ranks: np.ndarray
    depth: int
    strata: list[str] = field(default_factory=list)
    _tops: dict = field(default_factory=dict, repr=False)

    @property
    def n_pairs(self) -> int:
        return len(self.pair_query)

    @classmethod
    def from_rankings(
        cls, rankings: Mapping[str, Mapping[str, Sequence[str]]], depth: int, *,
        qids: Sequence[str] | None = None, strata: Mapping[str, str] | None = None,
    ) -> PoolMatrix:
        """The union of every run's top ``depth`` (``rankings``: run name -> {qid: [docid...]} in
        trec_eval order) over ``qids`` (default: every query any run answers), queries sorted."""
        runs = list(rankings)
        if qids is None:
            qids = sorted({q for r in rankings.values() for q in r})
        else:
            qids = sorted({str(q) for q in qids})
        index: dict[tuple[int, str], int] = {}
        pair_query, docids = [], []
        rows = [[] for _ in runs]
        for qi, qid in enumerate(qids):
            for ri, run in enumerate(runs):
                for rank, doc in enumerate(list(rankings[run].get(qid, ()))[:depth], start=1):
                    key = (qi, doc)
                    p = index.get(key)
                    if p is None:
                        p = index[key] = len(docids)
                        docids.append(doc)
                        pair_query.append(qi)
                    rows[ri].append((p, rank))
        ranks = np.zeros((len(runs), len(docids)), dtype=np.int32)
        for ri, row in enumerate(rows):
            if row:
                arr = np.asarray(row, dtype=np.int64)
                ranks[ri, arr[:, 0]] = arr[:, 1]
        strata_list = [str((strata or {}).get(q, "")) for q in qids]
        return cls(qids=list(qids), runs=runs, pair_query=np.asarray(pair_query, dtype=np.int64), docids=docids,
                   ranks=ranks, depth=int(depth), strata=strata_list)

    def run_index(self, name: str) -> int:
        try:
            return self.runs.index(name)
        except ValueError:
            raise ValueError(f"compare: no run named {name!r}; the pool's runs are {', '.join(self.runs)}") from None

    def top(self, run: int, k: int) -> np.ndarray:
        """(queries x k) pair indices of run ``run``'s top ``k`` (-1 where it has fewer)."""
        key = (run, k)
        if key not in self._tops:
            out = np.full((len(self.qids), k), -1, dtype=np.int64)
            r = self.ranks[run]
            sel = np.flatnonzero((r >= 1) & (r <= k))
            out[self.pair_query[sel], r[sel] - 1] = sel
            self._tops[key] = out
        return self._tops[key]

    def members(self, runs: Sequence[int]) -> np.ndarray:
        """Boolean mask of the pairs retrieved (within ``depth``) by any of ``runs``."""
        return (self.ranks[list(runs)] > 0).any(axis=0)


def metric_form(metric: str | MetricSpec, depth: int) -> tuple[str, int]:
    """(``"ndcg"`` or ``"ap"``, cutoff) for a metric the settlement supports; AP without a cutoff
    is AP at the pool depth (nothing deeper is in the pool). A deeper cutoff than the pool is
    allowed: the ranks past the pool depth count as not relevant, as in the export's evaluation."""
    spec = parse_metric(metric)
    if spec.metric.name not in ("ndcg", "ap"):
        raise ValueError(f"metric {spec}: settlement supports ndcg@k and ap[@k]")
    # a cutoff deeper than the pool: ranks past the pool depth hold nothing judged, as in the
    # evaluation of the exported qrels (they count as not relevant)
    k = spec.k if spec.k is not None else depth
    return spec.metric.name, int(k)


def _disc(k: int) -> np.ndarray:
    """Discount of ranks 0..k (index 0 unused, 0): 1/log2(r+1), as trec_eval's ndcg_cut."""
    out = np.zeros(k + 1)
    out[1:] = 1.0 / np.log2(np.arange(2, k + 2, dtype=np.float64))
    return out


def _as_grades(grades: np.ndarray, n_comp: int) -> np.ndarray:
    g = np.asarray(grades, dtype=np.float64)
    if g.ndim == 1:
        g = g[None, :]
    if g.shape[0] not in (1, n_comp):
        raise ValueError("grades: one row, or one row per comparison")
    return g
