"""Qualification pages: a judge answers a project's qualification pairs (labelled as qualification,
the one place known-answer pairs are not blind) and is taught after each answer; a lead grants a
blocked judge another attempt from Progress.

The judging page sends a judge who must qualify here (:func:`gate`) before it shows any pair of
their queue, so no main or overlap pair is shown (no token issued) until they pass. The rules,
draws and records are :mod:`curation.judge.qualification`'s; forms are plain posts with CSRF,
answered by post/redirect/get.
"""

from __future__ import annotations

from flask import Blueprint, abort, flash, g, redirect, render_template, request, url_for

from curation.judge import qualification as q
from curation.store import projects, users
from curation.store.models import Project

from .auth import lead_required, login_required, project_or_404
from .db import get_db
from .errors import store_int

bp = Blueprint("qualification", __name__)


def gate(project) -> object | None:
    """A redirect to the qualification when the logged-in judge must still qualify in ``project``
    (None otherwise: nothing is read when the project asks for no qualification)."""
    db = get_db()
    full = db.get(Project, project.id)
    if full is None or not q.required(full):
        return None
    if q.qualification_state(db, full, g.user).blocks_work:
        return redirect(url_for("qualification.page", project_id=project.id), code=303)
    return None


def _project_for_judge(project_id: int) -> Project:
    """The project, when the logged-in user has work in it (else 404, as the judging page does)."""
    from curation.judge import judging

    if judging.judge_project(get_db(), g.user, project_id) is None:
        abort(404)
    return get_db().get(Project, project_id)


@bp.get("/projects/<int:project_id>/qualify")
@login_required
def page(project_id: int):
    """The next qualification pair, the teaching of one just answered (``?attempt=A&position=P``),
    or where the judge stands (passed, failed with a retry, blocked)."""
    project = _project_for_judge(project_id)
    db = get_db()
    teaching = None
    if "position" in request.args:
        try:
            teaching = q.teaching(db, project, g.user, attempt=request.args.get("attempt", type=store_int) or 0,
                                  position=request.args.get("position", type=store_int) or 0)
        except LookupError:
            abort(404)
    state = q.qualification_state(db, project, g.user)
    item = None
    problem = None
    if teaching is None and state.status == q.IN_PROGRESS:
        try:
            item = q.next_item(db, project, g.user)
        except ValueError as exc:
            problem = str(exc)
        state = q.qualification_state(db, project, g.user)
    if teaching is None and item is None and not state.blocks_work and state.status != q.PASSED:
        return redirect(url_for("judge.page", project_id=project.id), code=303)
    return render_template("judge/qualify.html", project=project, state=state, item=item, teaching=teaching,
                           problem=problem, grades=projects.grades(project))


@bp.post("/projects/<int:project_id>/qualify")
@login_required
def answer(project_id: int):
    """Record the answer to a qualification pair, then show its teaching."""
    project = _project_for_judge(project_id)
    form = request.form
    try:
        attempt = store_int(form.get("attempt", ""))
        position = store_int(form.get("position", ""))
        q.answer(get_db(), project, g.user, attempt=attempt, position=position, grade=form.get("grade", ""))
    except LookupError:
        abort(404)
    except ValueError as exc:
        abort(400, description=str(exc))
    return redirect(url_for("qualification.page", project_id=project.id, attempt=attempt, position=position),
                    code=303)


@bp.post("/projects/<int:project_id>/qualify/retry")
@login_required
def retry(project_id: int):
    """Start the next attempt (fresh pairs where the known-answer set allows) after a failed one."""
    project = _project_for_judge(project_id)
    db = get_db()
    try:
        q.start_attempt(db, project, g.user)
        db.commit()
    except ValueError as exc:
        db.rollback()
        flash(f"No new attempt: {exc}.", "error")
    return redirect(url_for("qualification.page", project_id=project.id), code=303)


@bp.post("/lead/<int:project_id>/qualification/grant")
@lead_required
def grant(project_id: int):
    """A lead grants a blocked judge (form field ``judge``: their name) one more attempt; audited."""
    project = project_or_404(project_id)
    db = get_db()
    name = (request.form.get("judge") or "").strip()
    judge = users.get_user(db, name) if name else None
    if judge is None:
        abort(404)
    try:
        attempt = q.grant_attempt(db, project, judge, g.user)
    except ValueError as exc:
        db.rollback()
        flash(f"Not granted: {exc}.", "error")
    else:
        flash(f"{judge.name} may take the qualification again (attempt {attempt.attempt}).", "info")
    return redirect(url_for("lead.progress", project_id=project.id) + "#qualification", code=303)

