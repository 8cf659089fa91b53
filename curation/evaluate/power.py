"""Power of a query set: the minimum detectable difference of a paired comparison and the queries
needed for a target difference, from the paired t-test's power (Sakai, "Topic set size design",
Information Retrieval Journal 19, 2016, which plans with the t distribution for the same reason).

The power of the two-sided paired t-test at level ``alpha`` for a true difference ``delta`` with
``n`` queries and sd ``s`` of the per-query differences is, with ``t* = t_(1-alpha/2, n-1)`` and the
noncentrality ``lambda = delta * sqrt(n) / s``::

    P(T' > t*) + P(T' < -t*),   T' ~ noncentral t(n - 1, lambda)

(scipy.stats.nct; the same formula as statsmodels' ``TTestPower``, which the tests check it
against). The minimum detectable difference is the ``delta`` at which that power reaches the
target (80%), found by root finding; the queries needed for a ``delta`` is the smallest ``n`` at
which it does. With many queries this tends to the normal approximation ``(z_(1-alpha/2) +
z_power) * s / sqrt(n)`` (2.80 x se at 5% / 80%); with few it is larger, because ``s`` itself is
estimated from them (at n = 10: 3.15 x se rather than 2.80).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np
from scipy import optimize
from scipy import stats as sps

from curation.evaluate.choices import FEW_QUERIES


@dataclass
class Power:
    """How much a query set can resolve (paired t-test, noncentral t)."""

    n: int
    sd: float
    se: float
    mdd: float  # minimum detectable difference at the given power and level
    alpha: float
    power: float
    multiplier: float  # mdd / se: 3.15 at n=10, tends to z_(1-alpha/2) + z_power = 2.80
    method: str = "paired t-test power (noncentral t, scipy.stats.nct)"
    delta: float | None = None
    needed: int | None = None
    observed: float | None = None
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def _nct_tail(x: float, df: int, nc: float, *, upper: bool) -> float:
    """``P(T' > x)`` (``upper``) or ``P(T' < x)`` for ``T' ~ noncentral t(df, nc)``.

    scipy.stats.nct first; where it returns NaN (it does for 1 degree of freedom and a large
    noncentrality, e.g. ``nct.cdf(-12.7, 1, 42.4)``), the same probability by integrating over the
    chi distribution of the denominator, ``P(T' < x) = E_V[Phi(x sqrt(V / df) - nc)]`` with
    ``V ~ chi2(df)`` (scipy.integrate.quad; Johnson, Kotz & Balakrishnan, *Continuous Univariate
    Distributions* vol. 2, ch. 31), and if that fails too the normal approximation
    ``Phi(+-(x - nc))``."""
    p = float(sps.nct.sf(x, df, nc) if upper else sps.nct.cdf(x, df, nc))
    if math.isfinite(p):
        return p
    cdf = _nct_cdf_integrated(x, df, nc)
    if math.isfinite(cdf):
        return 1.0 - cdf if upper else cdf
    return float(sps.norm.sf(x - nc) if upper else sps.norm.cdf(x - nc))


def _nct_cdf_integrated(x: float, df: int, nc: float) -> float:
    """``P(T' < x)`` by integrating ``Phi(x sqrt(v / df) - nc)`` over ``v ~ chi2(df)`` (scipy.integrate.quad)."""
    from scipy import integrate

    def lower(v: float) -> float:
        return float(sps.chi2.pdf(v, df) * sps.norm.cdf(x * math.sqrt(v / df) - nc))

    with np.errstate(all="ignore"):
        cdf, _err = integrate.quad(lower, 0, np.inf, limit=200)
    return min(1.0, max(0.0, cdf)) if math.isfinite(cdf) else math.nan


def t_power(delta: float, sd: float, n: int, *, alpha: float = 0.05) -> float:
    """Power of the two-sided paired t-test with ``n`` queries for a true difference ``delta``
    (both tails of the noncentral t, each through :func:`_nct_tail`)."""
    if sd == 0:
        return 1.0 if delta else alpha
    df = n - 1
    crit = sps.t.ppf(1 - alpha / 2, df)
    nc = delta * math.sqrt(n) / sd
    return _nct_tail(crit, df, nc, upper=True) + _nct_tail(-crit, df, nc, upper=False)


def _mdd(sd: float, n: int, alpha: float, target: float) -> float:
    """The difference the paired t-test detects with power ``target`` (root of t_power - target)."""
    if sd == 0:
        return 0.0
    z = float(sps.norm.ppf(1 - alpha / 2) + sps.norm.ppf(target)) * sd / math.sqrt(n)
    hi = z
    while t_power(hi, sd, n, alpha=alpha) < target:
        hi *= 2
    return float(optimize.brentq(lambda d: t_power(d, sd, n, alpha=alpha) - target, 0.0, hi, xtol=1e-12))


def _needed(delta: float, sd: float, alpha: float, target: float) -> int:
    """The smallest n >= 2 at which the paired t-test detects ``delta`` with power ``target``."""
    z = float(sps.norm.ppf(1 - alpha / 2) + sps.norm.ppf(target))
    try:
        approx = (z * sd / delta) ** 2
    except OverflowError:
        approx = math.inf
    if not math.isfinite(approx) or approx > 1e9:
        raise ValueError(f"delta: {delta!r} is too small to plan for (sd {sd:g}): the queries needed overflow")
    n = max(2, math.ceil(approx))
    while n > 2 and t_power(delta, sd, n - 1, alpha=alpha) >= target:
        n -= 1
    while t_power(delta, sd, n, alpha=alpha) < target:
        n += 1
    return n


def power(
    diff: np.ndarray | None = None,
    *,
    sd: float | None = None,
    n: int | None = None,
    delta: float | None = None,
    alpha: float = 0.05,
    power: float = 0.80,
) -> Power:
    """Paired standard deviation ``s`` of per-query differences, ``se = s / sqrt(n)``, the minimum
    detectable difference of the paired t-test (power ``power`` at two-sided level ``alpha``) and,
    for a target ``delta``, the queries needed.

    Give either the differences ``diff`` (from two runs) or ``sd`` and ``n``. With ``diff`` the
    observed mean difference is reported as context, but never planned for: it is inflated by
    selection (the winner's curse); the queries needed are computed only for a stated ``delta``.
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1, not {alpha!r}")
    if not 0 < power < 1:
        raise ValueError(f"power must be between 0 and 1, not {power!r}")
    observed = None
    if diff is not None:
        diff = np.asarray(diff, dtype=np.float64)
        if len(diff) < 2:
            raise ValueError("diff: needs at least 2 paired queries")
        sd = float(np.std(diff, ddof=1))
        n = len(diff) if n is None else n
        observed = float(np.mean(diff))
    if sd is None or n is None:
        raise ValueError("sd, n: give two runs, or both --sd-diff and --queries")
    if sd < 0 or not math.isfinite(sd):
        raise ValueError(f"sd must be a non-negative number, not {sd!r}")
    if n < 2:
        raise ValueError(f"n must be at least 2, not {n!r}")
    if delta is not None and not delta > 0:
        raise ValueError(f"delta must be positive, not {delta!r}")
    se = sd / math.sqrt(n)
    mdd = _mdd(sd, int(n), alpha, power)
    out = Power(n=int(n), sd=sd, se=se, mdd=mdd, alpha=alpha, power=power,
                multiplier=mdd / se if se > 0 else float(sps.norm.ppf(1 - alpha / 2) + sps.norm.ppf(power)),
                observed=observed)
    if delta is not None:
        out.delta = float(delta)
        out.needed = _needed(float(delta), sd, alpha, power) if sd > 0 else 2
    if n < FEW_QUERIES:
        out.notes.append(
            f"only {n} queries: the sd of the differences is itself a rough estimate, so the minimum "
            "detectable difference and the queries needed are rough too (the t distribution allows for "
            "the first, not for an sd that happens to come out small)"
        )
    if observed is not None and delta is None:
        out.notes.append(
            f"no --delta: the queries needed are not planned. The observed delta {observed:+.4f} is context "
            "only, never a target: a difference picked because it looked large overestimates the true one "
            "(winner's curse). Give --delta, the smallest difference that would matter to you"
        )
    out.notes.append(
        "winner's curse: a delta that only just reached (or just missed) significance is likely an "
        "overestimate of the true effect; plan the query count for a smaller delta"
    )
    return out
