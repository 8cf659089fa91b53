"""Leads' leak review: each query's leak status with its matching chunks, and the decision on each.

A view parses the form, calls :mod:`curation.leak.findings` and renders; the query's section is its own
template (``leaks/_query.html``), which the page includes and htmx swaps after a decision. Corpus
text and query text are rendered escaped (Jinja autoescaping), never as HTML.
"""

from __future__ import annotations

from flask import Blueprint, abort, flash, g, redirect, render_template, request, url_for

from curation.leak import findings as leaks

from .auth import lead_required, project_or_404
from .db import get_db
from .errors import is_htmx

bp = Blueprint("leaks", __name__, url_prefix="/lead")


@bp.get("/<int:project_id>/leaks")
@lead_required
def index(project_id: int):
    project = project_or_404(project_id)
    overview = leaks.leak_overview(get_db(), project)
    return render_template("leaks/index.html", project=project, overview=overview, decisions=leaks.DECISIONS)


@bp.post("/<int:project_id>/leaks/<int:finding_id>")
@lead_required
def decide(project_id: int, finding_id: int):
    """Record the lead's decision on one (query, chunk); htmx gets the query's section back."""
    project = project_or_404(project_id)
    decision = request.form.get("decision", "")
    if decision not in leaks.DECISIONS:
        abort(400, description="Choose one of the decisions in the list.")
    try:
        query = leaks.decide(get_db(), project, finding_id, decision, g.user)
    except LookupError:
        abort(404)
    if is_htmx():
        return render_template("leaks/_query.html", project=project, q=query, decisions=leaks.DECISIONS)
    flash(f"Query {query.qid}: {leaks.DECISIONS[decision].lower()} — recorded.", "info")
    return redirect(url_for("leaks.index", project_id=project.id) + f"#leakq-{query.query_id}")
