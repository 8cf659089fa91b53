"""The decisive judging order: judge first what can change the compared differences.

Each unjudged pair gets a priority from how much its label can move the per-query differences of
the open comparisons (:class:`curation.evaluate.settle.Bounds` ``weight``: for nDCG@k,
``max_grade * |disc_B(u) - disc_A(u)| / max(IDCG_judged, 1)``, the largest change of the query's
difference its label can make; for AP@k, ``|1/rank_B - 1/rank_A| / max(judged relevant, 1)``), summed
over the comparisons, each comparison weighted by how close it is to settling
(``1 / max(gap, 0.001)``, ``gap`` the distance of its worst-case interval from deciding) and 0 once
settled (Carterette, Allan & Sitaraman, "Minimal test collections for retrieval evaluation",
SIGIR 2006, choose the documents whose judgment moves the difference most).

Judges get whole queries, the most unsettled weight first; within a query the pairs stay in the
seeded shuffle of ``curation.judge.assignment`` (the displayed order never depends on a rank or a
system), and the overlap (calibration) set is drawn as before.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

MIN_GAP = 1e-3


def comparison_urgency(status: Sequence[str], gap: np.ndarray) -> np.ndarray:
    """Weight of each comparison in the priorities: 0 when settled, else ``1 / max(gap, MIN_GAP)``."""
    gap = np.asarray(gap, dtype=np.float64)
    open_ = np.array([s == "open" for s in status])
    return np.where(open_, 1.0 / np.maximum(gap, MIN_GAP), 0.0)


def pair_priorities(bounds, settlement, comparisons: Sequence[int] | None, n_pairs: int) -> np.ndarray:
    """Priority of every pair: sum over ``comparisons`` (indices into ``bounds``; default all) of
    the comparison's urgency times the pair's weight in it."""
    if comparisons is None:
        comparisons = range(bounds.weight.shape[0])
    comparisons = list(comparisons)
    urg = comparison_urgency(settlement.status, settlement.gap)
    if not comparisons:
        return np.zeros(n_pairs)
    return urg[comparisons] @ bounds.weight[comparisons]


def query_priorities(pair_query: np.ndarray, priority: np.ndarray, n_queries: int) -> np.ndarray:
    """Each query's unsettled weight: the sum of its pairs' priorities."""
    return np.bincount(np.asarray(pair_query), weights=priority, minlength=n_queries)
