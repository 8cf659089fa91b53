"""Settlement of a comparison while the pool is still being judged: a guarantee and an estimate.

A *comparison* asks whether run B scores higher than run A on a metric (nDCG@k or AP@k) over the
project's queries: the per-query difference is ``d_q = M_B(q) - M_A(q)`` and the verdict is the
paired bootstrap interval of the mean difference (the same percentile interval as
``curation.evaluate.bootstrap.interval``, over one fixed set of resamples of the queries).

**The guarantee.** Some pairs of the pool are not judged yet; each could take any grade of the
scale. For every query, :func:`query_bounds` gives ``lo_q <= d_q <= hi_q`` over *every* labelling
of the unjudged pairs (exactly for nDCG, a valid bound for AP, see below). Each bootstrap
replicate is a mean ``sum_q n_q d_q / n`` with
non-negative resample counts ``n_q``, so it is monotone (non-decreasing) in every ``d_q``; a
percentile of the replicates (an order statistic, or a linear interpolation between two) is then
monotone too. Hence for any completion, its interval's low end is at least the low end computed
from the ``lo`` vector, and its high end at most the one computed from ``hi``. So:

* if the interval of the worst case ``lo`` excludes 0 from below (its low end > 0), *every*
  completion of the judging gives a significant "B higher": the comparison is **settled**;
* symmetrically with ``hi`` for "B lower";
* with a tie margin ``t > 0``: when the low end of ``lo``'s interval is above ``-t`` and the high
  end of ``hi``'s interval below ``t``, every completion's interval lies inside ``(-t, t)``:
  settled as "no difference larger than the margin".

The resamples are drawn once (:func:`resample_counts`, one seed) and reused for every check and for
the final, fully judged verdict, so a settled verdict can never be contradicted by the full pool
(the benchmark counts such "wrong calls": there must be none). A tiny margin (:data:`EPS`) guards the
strict inequalities against floating-point summation order.

A query whose pool has no relevant document has no nDCG or AP (0/0); here it counts as a difference
of 0 (both systems score 0, as trec_eval averages such a query), so the set of queries, and with it
the resampling, never depends on the labels.

**nDCG@k bound.** With the ideal DCG ``I`` fixed, ``d_q = N / I`` where ``N = sum_u g_u c_u`` is
linear in the gains: ``c_u = disc_B(u) - disc_A(u)``, ``disc(r) = 1/log2(r+1)`` for ``r <= k``, else 0.
``I`` depends on the unknown gains too (the ideal ranking holds every relevant pair of the pool).
For the maximum: if some completion gives ``d_q >= 0`` then zeroing any unjudged pair with
``c_u <= 0`` raises ``N`` and lowers ``I``, so the maximum is over the pairs with ``c_u > 0`` only; for
given counts of each grade among them ``I`` is fixed (it depends only on the multiset of gains), and
``N`` is largest when the highest grades go to the largest ``c_u`` (rearrangement inequality). So the
exact maximum is the best of a small enumeration of grade counts (:func:`_ratio_ext`). If every
completion gives ``N < 0``, the maximum is minus the minimum of ``-N / I > 0``: now every unjudged
pair with ``c_u >= 0`` (and every unjudged pair outside both top k) takes the top grade (that lowers
``-N`` and raises ``I``), and the pairs with ``c_u < 0`` are enumerated the same way, their grades
going to the SMALLEST ``|c_u|`` first. Intermediate grades can be optimal; the enumeration covers
them. So the bound is exact in every case (a completion reaches it; tests/evaluate/test_settle.py
checks it against brute force). The minimum is the same with ``-c``. ``I`` counts the pool's pairs
only: the golden set's qrels are the pool, so "every labelling" means every labelling of the pool.

**AP@k bound.** ``AP = S / R``, ``S = sum over relevant ranks r <= k of precision@r``, ``R`` the
relevant pairs of the query's pool. ``S`` only grows when an unjudged pair becomes relevant or a
relevant pair moves up, so with ``m`` of B's unjudged pairs relevant ``S_B`` is at most its value
with B's ``m`` highest unjudged pairs relevant, ``S_A`` at least its judged value, and ``R`` at least
the judged relevant count plus ``m``: the maximum over ``m`` bounds the difference (a negative one is
divided by the largest ``R``). Valid, looser than the nDCG bound (shared pairs count for B only).

**The estimate** (:func:`estimate`), labelled as such wherever it is shown: a logistic regression
(scikit-learn, calibrated with ``CalibratedClassifierCV``) of P(relevant) from the ranks of a pair
in each run, the number of runs that retrieved it and its query's stratum, fitted on the judged
pairs, scaled per query by the query's own rate of relevant pairs so far; the expected difference
and its variance per query (labels, the query's rate, the model's coefficients, a common error)
give the probability that the fully judged verdict differs from the verdict the estimate expects
(P(flip)).

The package holds three ideas, one module each: ``_matrix`` (the pool as matrices, the metric's
form and discount), ``_bounds`` (the guarantee: the bounds and the bootstrap verdicts they settle)
and ``_estimate`` (the estimate); import their names from here.
"""

from curation.evaluate.settle._bounds import (  # noqa: F401 - the package's public names
    DEFAULT_LEVEL,
    DEFAULT_RESAMPLES,
    HIGHER,
    IDEAL_BY_RANK,
    LOWER,
    NOT_SIGNIFICANT,
    OPEN,
    TIE,
    Bounds,
    Settlement,
    percentile_ends,
    query_bounds,
    resample_counts,
    settle,
    verdict_of,
)
from curation.evaluate.settle._estimate import (  # noqa: F401 - the package's public names
    QUERY_PRIOR,
    SHIFT,
    _features,
    estimate,
    relevance_probability,
)
from curation.evaluate.settle._matrix import (  # noqa: F401 - the package's public names
    EPS,
    PoolMatrix,
    _disc,
    metric_form,
)
