"""Power of a query set: the minimum detectable difference of a paired comparison and the queries
needed for a target difference (normal approximation; Sakai, "Topic set size design", 2016)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np
from scipy import stats as sps


@dataclass
class Power:
    """How much a query set can resolve (normal approximation, paired design)."""

    n: int
    sd: float
    se: float
    mdd: float  # minimum detectable difference at the given power and level
    alpha: float
    power: float
    multiplier: float  # z_(1-alpha/2) + z_power, 2.80 for 5% / 80%
    delta: float | None = None
    needed: int | None = None
    observed: float | None = None
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


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
    detectable difference ``(z_(1-alpha/2) + z_power) * se`` and, for a target ``delta``, the
    queries needed: ``n >= ((z_(1-alpha/2) + z_power) * s / delta)^2`` (2.80 at 5% / 80%).

    Give either the differences ``diff`` (from two runs) or ``sd`` and ``n``.
    Reference: Sakai, "Topic set size design", Information Retrieval Journal 19, 2016.
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
    z = float(sps.norm.ppf(1 - alpha / 2) + sps.norm.ppf(power))
    se = sd / math.sqrt(n)
    out = Power(n=int(n), sd=sd, se=se, mdd=z * se, alpha=alpha, power=power, multiplier=z, observed=observed)
    target = delta if delta is not None else (abs(observed) if observed else None)
    if delta is not None and not delta > 0:
        raise ValueError(f"delta must be positive, not {delta!r}")
    if target:
        out.delta = float(target)
        try:
            needed = (z * sd / target) ** 2
        except OverflowError:
            needed = math.inf
        if not math.isfinite(needed):
            raise ValueError(f"delta: {target!r} is too small to plan for (sd {sd:g}): the queries needed overflow")
        out.needed = max(2, math.ceil(needed))
    out.notes.append(
        "winner's curse: a delta that only just reached (or just missed) significance is likely an "
        "overestimate of the true effect; plan the query count for a smaller delta"
    )
    return out
