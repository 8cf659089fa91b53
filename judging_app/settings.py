"""A project's settings page for leads: the minimum answer time (the least time between showing a
pair and accepting its answer). A change is CSRF-protected like every form and recorded in the audit
trail by :func:`curation.store.projects.set_min_answer_ms`, the function ``golden project settings``
calls."""

from __future__ import annotations

from flask import Blueprint, current_app, flash, g, redirect, render_template, request, url_for

from curation.store import projects

from .auth import lead_required, project_or_404
from .db import get_db
from .errors import whole_number
from .judge import min_answer_ms

bp = Blueprint("settings", __name__, url_prefix="/lead")


def _page(project, *, error: str | None = None, value: str | None = None, status: int = 200):
    own = project.min_answer_ms
    return render_template(
        "lead/settings.html", project=project, error=error, server_ms=current_app.config.get("MIN_ANSWER_MS") or 0,
        own_ms=own, in_force=min_answer_ms(project), max_ms=projects.MIN_ANSWER_MS_MAX,
        value=value if value is not None else ("" if own is None else str(own)),
    ), status


@bp.get("/<int:project_id>/settings")
@lead_required
def page(project_id: int):
    return _page(project_or_404(project_id))


@bp.post("/<int:project_id>/settings")
@lead_required
def save(project_id: int):
    """``min_answer_ms``: a whole number of milliseconds, or empty for the server's default."""
    project = project_or_404(project_id)
    raw = (request.form.get("min_answer_ms") or "").strip()
    try:
        value = projects.check_min_answer_ms(whole_number(raw)) if raw else None
    except ValueError:
        return _page(project, value=raw, status=400, error=(
            f"The minimum answer time must be a whole number of milliseconds from 0 to "
            f"{projects.MIN_ANSWER_MS_MAX}, or empty for the server's default."))
    if projects.set_min_answer_ms(get_db(), project, value, actor=g.user):
        shown = "the server's default" if value is None else f"{value} ms"
        flash(f"Minimum answer time set to {shown}.", "info")
    else:
        flash("Nothing changed.", "info")
    return redirect(url_for("settings.page", project_id=project.id), code=303)
