"""Comparison reports in the app: a lead or admin picks two pooled runs of an exported version (or
several: every pair, or each against a baseline, corrected for their number as ``golden stats compare``
of several runs) and gets golden stats compare's self-contained HTML report
(curation.export.version_compare + curation.evaluate.html_report).

The form is a GET (it changes nothing, and the report's address can be shared); the report is the
same document ``golden stats compare --html`` writes, served with its own Content-Security-Policy: no
script at all, only its inline style. Above the verdict it shows how much of each run's top-10
the version judges, with a warning below 90%, and it links back to the version's page.
"""

from __future__ import annotations

from flask import Blueprint, Response, abort, render_template, request, url_for

from curation.evaluate.choices import CORRECTIONS
from curation.evaluate.html_report import render_comparison, render_family
from curation.evaluate.metrics import METRICS
from curation.evaluate.stats import WEIGHTINGS
from curation.export import version_compare

from .auth import lead_required
from .db import get_db
from .errors import finite_float

bp = Blueprint("reports", __name__, url_prefix="/reports")

REPORT_CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; "
              "form-action 'none'; frame-ancestors 'self'")


def _runs_or_404(project: str, version: str):
    try:
        return version_compare.version_runs(get_db(), project, version)
    except ValueError:
        abort(404)


def _form(project: str, version: str, runs, *, error: str | None = None, status: int = 200):
    depth = min((r.depth for r in runs.values()), default=0)
    choices = ", ".join(f"{m.name}@k" for m in METRICS.values() if m.cutoff != "none") + f" (k <= {depth})"
    args = request.args
    return render_template(
        "reports/pick.html", project=project, version=version, runs=list(runs.values()), error=error,
        a=args.get("a"), b=args.get("b"), metric=args.get("metric", f"ndcg@{min(10, depth) or 10}"),
        weighting=args.get("weighting", "unweighted"), weightings=WEIGHTINGS, split=args.get("split"),
        tie=args.get("tie"), choices=choices, picked=args.getlist("runs"), baseline=args.get("baseline"),
        correction=args.get("correction", "holm"), corrections=CORRECTIONS,
    ), status


def _number(text: str | None, name: str) -> float | None:
    """A minimum effect: a finite number in (0, 1] (metrics lie in [0, 1]); inf, nan and 1e308 are
    refused with a 400, not carried into the statistics."""
    if not text:
        return None
    try:
        return finite_float(text, name, low=0.0, high=1.0)
    except ValueError as exc:
        raise ValueError(f"{exc}; write e.g. 0.02") from None


@bp.get("/<name:project>/<version>")  # a name may hold "/" (older stores)
@lead_required
def pick(project: str, version: str):
    return _form(project, version, _runs_or_404(project, version))


@bp.get("/<name:project>/<version>/compare")
@lead_required
def report(project: str, version: str):
    runs = _runs_or_404(project, version)
    args = request.args
    default_metric = f"ndcg@{min(10, min(r.depth for r in runs.values())) if runs else 10}"
    back = (url_for("versions.detail", project=project, version=version), f"Back to {project} · {version} in golden")
    if "runs" in args:  # several runs: every pair, or each against a baseline, corrected as a family
        names = args.getlist("runs")
        try:
            tie = _number(args.get("tie"), "tie")
            correction = args.get("correction", "holm")
            if correction not in CORRECTIONS:
                raise ValueError(f"correction: choose one of {', '.join(CORRECTIONS)}")
            family = version_compare.compare_pooled_many(
                get_db(), project, version, names, baseline=args.get("baseline") or None, correction=correction,
                metric=args.get("metric") or default_metric, weighting=args.get("weighting", "unweighted"),
                split=args.get("split") or None, tie=tie,
            )
        except ValueError as exc:
            return _form(project, version, runs, error=str(exc), status=400)
        title = f"{project} {version} · {family.metric}: {len(family.runs)} runs"
        coverage = [c for c in version_compare.version_coverage(get_db(), project, version) if c.name in family.runs]
        body = render_family(family, title=title, coverage=coverage, warn_below=version_compare.COVERAGE_WARN_BELOW,
                             back=back)
    else:
        try:
            tie = _number(args.get("tie"), "tie")
            result = version_compare.compare_pooled(
                get_db(), project, version, args.get("a", ""), args.get("b", ""),
                metric=args.get("metric") or default_metric, weighting=args.get("weighting", "unweighted"),
                split=args.get("split") or None, tie=tie,
            )
        except ValueError as exc:
            return _form(project, version, runs, error=str(exc), status=400)
        title = f"{project} {version} · {result.metric}: {result.name_b} vs {result.name_a}"
        coverage = [c for c in version_compare.version_coverage(get_db(), project, version)
                    if c.name in (result.name_a, result.name_b)]
        body = render_comparison(result, title=title, coverage=coverage,
                                 warn_below=version_compare.COVERAGE_WARN_BELOW, back=back)
    response = Response(body, mimetype="text/html")
    response.headers["Content-Security-Policy"] = REPORT_CSP
    return response
