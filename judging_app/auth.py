"""Logging in and out, and who may open which page. Passwords are checked by
:func:`curation.store.users.authenticate` (werkzeug's hashes); the session cookie holds only the user's
id, signed by Flask, HttpOnly, SameSite=Lax.

The guards, each written once: :func:`login_required` (any signed-in user), :func:`lead_required`
(leads and admins: the lead, leak, versions and report pages) and :func:`project_or_404` (a project
those staff pages may open: any project of the store). The judging pages have their own, narrower
lookup (:mod:`judging_app.judge`: only a project the judge has work in)."""

from __future__ import annotations

import functools
from urllib.parse import urlsplit

from flask import Blueprint, abort, g, redirect, render_template, request, session, url_for

from curation.store import users
from curation.store.models import Project

from .db import get_db
from .errors import is_htmx

bp = Blueprint("auth", __name__)


@bp.before_app_request
def load_user() -> None:
    """``g.user``: the logged-in, active user (a :class:`curation.store.users.SignedIn`), or None."""
    user_id = session.get("user_id")
    g.user = users.signed_in(get_db(), user_id) if isinstance(user_id, int) else None


def login_required(view):
    """Send an anonymous visitor to the login page (htmx: a full-page redirect via HX-Redirect)."""

    @functools.wraps(view)
    def wrapped(*args, **kwargs):
        if g.user is None:
            target = url_for("auth.login", next=request.full_path.rstrip("?") if request.method == "GET" else None)
            if is_htmx():
                return "", 401, {"HX-Redirect": target}
            return redirect(target)
        return view(*args, **kwargs)

    return wrapped


def lead_required(view):
    """Logged in (else the login page), and a lead or admin (else 403)."""

    @functools.wraps(view)
    @login_required
    def wrapped(*args, **kwargs):
        if not users.is_lead(g.user):
            abort(403, description="Only leads and admins can open this page.")
        return view(*args, **kwargs)

    return wrapped


def project_or_404(project_id: int) -> Project:
    """The project with this id, for a page behind :func:`lead_required` (staff see every project); 404
    when there is none."""
    project = get_db().get(Project, project_id)
    if project is None:
        abort(404)
    return project


def _safe_next(value: str | None) -> str | None:
    """Only a path on this site (no scheme, no host, no '//' or backslash tricks) is followed."""
    if not value or not value.startswith("/") or value.startswith("//") or "\\" in value:
        return None
    parts = urlsplit(value)
    return value if not parts.scheme and not parts.netloc else None


@bp.route("/login", methods=["GET", "POST"])
def login():
    next_url = _safe_next(request.args.get("next"))
    if request.method == "GET" and g.user is not None:
        return redirect(next_url or url_for("index"))
    username = ""
    if request.method == "POST":
        username = request.form.get("username", "").strip()
        user = users.authenticate(get_db(), username, request.form.get("password", ""))
        if user is not None:
            session.clear()  # a fresh session at login: no fixation
            session["user_id"] = user.id
            session.permanent = True
            return redirect(next_url or url_for("index"))
        return render_template(
            "auth/login.html", next_url=next_url, username=username,
            error="That name and password do not match.",
        ), 401
    return render_template("auth/login.html", next_url=next_url, username=username)


@bp.post("/logout")
def logout():
    session.clear()
    return redirect(url_for("auth.login"))
