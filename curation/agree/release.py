"""Releasing the held-back pool only against an agreement measured on the overlap set.

``golden judging release`` and the dashboard's release button both call :func:`review_and_release`: it
measures the agreement on the overlap set (:func:`curation.agree.agreement.build_agreement_report`,
the report ``golden labels agreement`` prints) and releases when the verdict is "usable". Otherwise (no
labels yet, too few shared pairs, a marginal or poor agreement) the lead must force it and say why;
the reason is recorded with the release (``Project.released_reason``), beside the measured value.
Before, ``golden judging release --agreement 0.71`` used to be accepted with no label in the store.
"""

from __future__ import annotations

from sqlmodel import Session

from curation.agree.agreement import build_agreement_report
from curation.agree.settings import DEFAULT_THRESHOLDS, Thresholds
from curation.judge import assignment
from curation.store.models import Project, User
from curation.store.roles import is_lead


class ReleaseRefused(ValueError):
    """The verdict does not allow a release without ``force`` and a reason (``band``: the verdict's)."""

    def __init__(self, band: str, message: str):
        super().__init__(message)
        self.band = band


def review_and_release(
    session: Session,
    project: Project,
    lead: User,
    *,
    force: bool = False,
    reason: str | None = None,
    claimed: float | None = None,
    report=None,
    cut: int | None = None,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
) -> assignment.ReleaseRecord:
    """Release ``project``'s held-back main pairs after measuring the overlap set's agreement
    (``report``: an agreement report already built with the caller's cut and thresholds).

    A "usable" verdict releases, recording the measured value. Any other verdict raises
    :class:`ReleaseRefused` (a ValueError) unless ``force`` and a non-empty ``reason``, which is
    recorded. ``claimed`` (``golden judging release --agreement``) must equal the measured value to three
    decimals: the record holds what was measured, not what was typed."""
    if not is_lead(lead):  # before measuring anything (as assignment.release)
        raise ValueError(f"lead: {getattr(lead, 'name', None)!r} is a {getattr(lead, 'role', None)}; "
                         "only a lead or admin can release work")
    if report is None:
        report = build_agreement_report(session, project, cut=cut, thresholds=thresholds)
    verdict = report.verdict
    measured = verdict.value
    if claimed is not None:
        if measured is None:
            raise ReleaseRefused(verdict.band, (
                f"agreement: {claimed} was given, but no agreement can be measured on the overlap set of "
                f"project {project.name!r} ({verdict.message}); release records the measured value"))
        if round(claimed, 3) != round(measured, 3):
            raise ReleaseRefused(verdict.band, (
                f"agreement: {claimed} was given, but the overlap set's measured agreement is {measured:.3f} "
                f"({verdict.on}, {verdict.pairs} shared pairs); release records the measured value"))
    reason = (reason or "").strip() or None
    if verdict.band != "usable":
        if not force or not reason:
            what = "no agreement is measured" if measured is None else f"the verdict is {verdict.band}"
            raise ReleaseRefused(verdict.band, (
                f"release: {what} on the overlap set of project {project.name!r} ({verdict.message}). "
                "Judge the overlap set first, or force the release and say why (recorded with it)"))
    else:
        reason = reason if force else None
    return assignment.release(session, project, lead, agreement=measured, reason=reason)
