"""Accounts in the app: leads and admins see every user with their open sessions and can end a
user's sessions or unlock their failed logins (a lead: a judge's; an admin: anyone's); admins also
see the audit trail (logins, failed logins, lock-outs, role changes, disables, releases, exports,
adjudications: who, when and from where) and the logins locked now. The data comes from
:mod:`curation.store.sessions`,
:mod:`curation.store.throttle` and :mod:`curation.store.audit`, the same functions ``golden admin user`` and
``golden admin audit`` use."""

from __future__ import annotations

from flask import Blueprint, abort, flash, g, redirect, render_template, request, url_for

from curation.store import roles, sessions, throttle, users
from curation.store.audit import ACTIONS, list_audit
from curation.store.models import User

from .auth import admin_required, lead_required
from .db import get_db

bp = Blueprint("admin", __name__, url_prefix="/admin")


may_end = roles.may_end_sessions


@bp.get("/users")
@lead_required
def users_page():
    db = get_db()
    rows = sessions.open_sessions(db)
    return render_template("admin/users.html", rows=rows, may_end=may_end, held=throttle.held_accounts(db))


@bp.post("/users/<int:user_id>/end-sessions")
@lead_required
def end_sessions(user_id: int):
    db = get_db()
    user = db.get(User, user_id)
    if user is None:
        abort(404)
    if not (may_end(g.user, user.role) or user.id == g.user.id):
        abort(403, description="Only an admin can end the sessions of a lead or admin.")
    n = users.end_user_sessions(db, user, by=g.user)
    if user.id == g.user.id:
        return redirect(url_for("auth.login"))
    flash(f"Ended {n} session{'s' if n != 1 else ''} of {user.name}: they must log in again.", "info")
    return redirect(url_for("admin.users_page"))


@bp.post("/users/<int:user_id>/unlock")
@lead_required
def unlock(user_id: int):
    """Clear a user's failed-login locks (a lead: a judge's; an admin: anyone's). CSRF-protected like
    every form; audited as ``unlock``."""
    db = get_db()
    user = db.get(User, user_id)
    if user is None:
        abort(404)
    if not may_end(g.user, user.role):
        abort(403, description="Only an admin can unlock a lead or admin.")
    users.unlock_user(db, user, by=g.user)
    flash(f"Unlocked {user.name}: they can log in now.", "info")
    return redirect(url_for("admin.users_page"))


@bp.get("/audit")
@admin_required
def audit_page():
    action = request.args.get("action") or None
    if action is not None and action not in ACTIONS:
        abort(400, description="Choose one of the actions in the list.")
    who = (request.args.get("user") or "").strip()[:120] or None
    db = get_db()
    return render_template("admin/audit.html", events=list_audit(db, limit=500, action=action, actor=who),
                           locks=throttle.current_locks(db), actions=ACTIONS, action=action, who=who or "")
