"""The agreement report's defaults, defined once for ``golden labels agreement``, ``--json``, the ``/lead``
dashboard and the export's agreement summary: the verdict thresholds (:class:`Thresholds`: 70 %
usable, 60 % marginal, at least 30 pairs), 1,000 query resamples, seed 0, 95 % intervals, 20 pairs
per drift point, and the cut derived from the scale (:func:`default_cut`).

Plain Python (no numpy), so the command line can show the defaults in ``--help`` without loading
the statistics libraries.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

RESAMPLES = 1000  # bootstrap resamples of the queries
SEED = 0
CONFIDENCE = 0.95
DRIFT_WINDOW = 20  # pairs per point of the drift curve


def default_cut(scale: Sequence[int]) -> int:
    """The cut when none is given: grade 1 when it splits the scale (TREC's ``grade >= 1`` is relevant:
    0-1, 0-2, 0-3), else the scale's second grade (a scale without 0, e.g. 1-3: its lowest grade is the
    "not relevant" one).

    >>> default_cut([0, 1, 2]), default_cut([1, 2, 3])
    (1, 2)
    """
    scale = sorted(scale)
    return 1 if scale[0] < 1 <= scale[-1] else scale[1]


@dataclass(frozen=True)
class Thresholds:
    """Verdict bands on percent agreement: ``>= usable`` usable for a paired comparison,
    ``[marginal, usable)`` marginal, ``< marginal`` the definition of relevance is not usable
    (more queries will not fix it). Fewer than ``min_pairs`` shared pairs: too early to say.
    A usable or marginal percent agreement with Krippendorff's alpha under ``chance_alpha`` gets a
    caveat: the agreement is then mostly the prevalence of one grade, not shared judgment."""

    usable: float = 0.70
    marginal: float = 0.60
    min_pairs: int = 30
    chance_alpha: float = 0.20  # below this Krippendorff's alpha, a high percent agreement gets a caveat

    def __post_init__(self):
        if not -1.0 <= self.chance_alpha <= 1.0:
            raise ValueError(f"thresholds: chance_alpha must be in [-1, 1], got {self.chance_alpha}")
        if not 0.0 <= self.marginal <= self.usable <= 1.0:
            raise ValueError(
                f"thresholds: need 0 <= marginal <= usable <= 1, got marginal={self.marginal}, usable={self.usable}"
            )
        if self.min_pairs < 1:
            raise ValueError(f"thresholds: min_pairs must be at least 1, got {self.min_pairs}")


DEFAULT_THRESHOLDS = Thresholds()
