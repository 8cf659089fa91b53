"""Logging in and out, and who may open which page. Passwords are checked by
:func:`curation.store.users.authenticate` (werkzeug's hashes). The session cookie (signed with the
store's own key, HttpOnly, SameSite=Lax, Secure with ``--secure-cookies``) holds only a random
session token; whether it is still valid is decided by the store on every request
(:func:`curation.store.sessions.session_user`): logout, a password or role change, disabling or
enabling the user, and a lead's "end sessions" end it at its next request, in every server process.
Failed logins are throttled (:mod:`curation.store.throttle`): locked per pair of account and
address, only slowed per account and per address, and a browser that logged in to the account before
(its signed device cookie, :func:`device_id`) is counted on its own. While held, the answer is 429
with ``Retry-After`` and no password is hashed. Logins, failures and
lock-outs go to the audit trail (:mod:`curation.store.audit`).

The guards, each written once: :func:`login_required` (any signed-in user), :func:`lead_required`
(leads and admins: the lead, leak, versions and report pages) and :func:`project_or_404` (a project
those staff pages may open: any project of the store). The judging pages have their own, narrower
lookup (:mod:`judging_app.judge`: only a project the judge has work in)."""

from __future__ import annotations

import functools
from datetime import timedelta
from urllib.parse import urlsplit

from flask import Blueprint, abort, current_app, g, redirect, render_template, request, session, url_for
from flask.sessions import SecureCookieSessionInterface
from itsdangerous import BadSignature, URLSafeTimedSerializer

from curation.store import roles, sessions, throttle, users
from curation.store.audit import record_audit
from curation.store.models import Project

from .db import get_db
from .errors import is_htmx
from .tokens import VerifiedTokens

bp = Blueprint("auth", __name__)


class SessionCookies(SecureCookieSessionInterface):
    """Flask's signed session cookie, with the cookies verified lately remembered per process, so
    that a judge's every answer does not verify the same cookie's signature again (itsdangerous:
    a key derivation, an HMAC, base64 and JSON; about a twentieth of a submit-and-next).

    A cookie is remembered only once its signature has been verified, under its whole text (the
    signature included), with the time it was signed: a remembered cookie is accepted exactly as
    long as verifying it again would accept it (``PERMANENT_SESSION_LIFETIME``), and a changed or
    forged cookie is never found and gets verified as before. Only cookies whose values are
    immutable (text, numbers) are remembered; each request gets its own session dict. The
    session's validity itself is still decided by the store on every request (:func:`load_user`)."""

    def __init__(self):
        self._verified = VerifiedTokens()

    def verified(self, value: str, app) -> dict | None:
        """The data of session cookie ``value`` when this process verified it lately and it is
        still within its lifetime (what :meth:`open_session` would return without verifying), else
        None. For the lean answer path (:mod:`judging_app.lean`), which only reads it."""
        return self._verified.get(value, int(app.permanent_session_lifetime.total_seconds()))

    def open_session(self, app, request):
        value = request.cookies.get(self.get_cookie_name(app))
        if not value or not app.secret_key:
            return super().open_session(app, request)
        max_age = int(app.permanent_session_lifetime.total_seconds())
        seen = self._verified.get(value, max_age)
        if seen is not None:
            return self.session_class(seen)
        try:
            data, signed_at = self.get_signing_serializer(app).loads(value, max_age=max_age, return_timestamp=True)
        except BadSignature:
            return self.session_class()
        if isinstance(data, dict) and all(type(v) in (str, int, float, bool) for v in data.values()):
            self._verified.remember(value, dict(data), signed_at.timestamp())
        return self.session_class(data)


# Files that never depend on who asks: no session lookup for them.
_NO_USER = frozenset({"static", "assets.htmx_js", "assets.favicon"})


@bp.before_app_request
def load_user() -> None:
    """``g.user``: the user of a valid session (a :class:`curation.store.sessions.SignedIn`), or None.
    One indexed statement (:func:`curation.store.sessions.session_user`)."""
    token = session.get("sid")
    if not isinstance(token, str) or request.endpoint in _NO_USER:
        g.user = None
        return
    config = current_app.config
    g.user = sessions.session_user(get_db(), token, idle=timedelta(seconds=config["SESSION_IDLE_SECONDS"]),
                                   absolute=timedelta(seconds=config["SESSION_MAX_SECONDS"]))
    if g.user is None:
        session.pop("sid", None)  # ended or expired: drop it from the cookie too


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
        if not roles.is_lead(g.user):
            abort(403, description="Only leads and admins can open this page.")
        return view(*args, **kwargs)

    return wrapped


def admin_required(view):
    """Logged in (else the login page), and an admin (else 403)."""

    @functools.wraps(view)
    @login_required
    def wrapped(*args, **kwargs):
        if not roles.is_admin(g.user):
            abort(403, description="Only admins can open this page.")
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
    """Only a path on this site (no scheme, no host, no '//' or backslash tricks, no control character:
    a newline cannot go into a Location header) is followed; anything else is dropped."""
    if not value or not value.startswith("/") or value.startswith("//") or "\\" in value:
        return None
    if any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in value):
        return None
    parts = urlsplit(value)
    return value if not parts.scheme and not parts.netloc else None


def throttle_policy() -> throttle.ThrottlePolicy:
    """The app's login throttling (LOGIN_* settings of :func:`judging_app.create_app`)."""
    c = current_app.config
    return throttle.ThrottlePolicy(
        max_failures=c["LOGIN_MAX_FAILURES"], address_max_failures=c["LOGIN_ADDRESS_MAX_FAILURES"],
        window=timedelta(seconds=c["LOGIN_WINDOW_SECONDS"]), base_lock=timedelta(seconds=c["LOGIN_LOCK_SECONDS"]),
        max_lock=timedelta(seconds=c["LOGIN_MAX_LOCK_SECONDS"]), slow=timedelta(seconds=c["LOGIN_SLOW_SECONDS"]))


# The device cookie (OWASP's "device cookies"): set at each successful login, it names the accounts
# that logged in on this browser, each with a random id, signed with the app's key. A login of one of
# those accounts from this browser is throttled on that id alone (see curation.store.throttle).
DEVICE_COOKIE = "golden_device"
DEVICE_MAX_AGE = 365 * 24 * 3600
DEVICE_ACCOUNTS = 8  # accounts remembered per browser (a shared laptop), the latest kept


def _device_signer() -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(current_app.secret_key, salt="golden-device-cookie")


def _devices() -> dict:
    """The verified device cookie's accounts (casefolded name -> id), or {}."""
    value = request.cookies.get(DEVICE_COOKIE)
    if not value:
        return {}
    try:
        data = _device_signer().loads(value, max_age=DEVICE_MAX_AGE)
    except BadSignature:
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)}


def device_id(username: str) -> str | None:
    """The id of this browser for account ``username`` when it logged in to it before, else None."""
    return _devices().get(username.strip().casefold()[:120])


def _remember_device(response, username: str, known: str | None):
    import secrets

    name = username.strip().casefold()[:120]
    devices = {k: v for k, v in _devices().items() if k != name}
    devices = dict(list(devices.items())[-(DEVICE_ACCOUNTS - 1):])
    devices[name] = known or secrets.token_urlsafe(16)
    response.set_cookie(DEVICE_COOKIE, _device_signer().dumps(devices), max_age=DEVICE_MAX_AGE, httponly=True,
                        samesite="Lax", secure=bool(current_app.config.get("SESSION_COOKIE_SECURE")))
    return response


MISMATCH = "That name and password do not match."


def _locked(next_url: str | None, username: str, wait: int):
    minutes = max(1, -(-wait // 60))
    error = (f"Too many failed logins for this name or from this address. Try again in "
             f"{minutes} minute{'s' if minutes != 1 else ''}.")
    body = render_template("auth/login.html", next_url=next_url, username=username, error=error)
    return body, 429, {"Retry-After": str(wait)}


@bp.route("/login", methods=["GET", "POST"])
def login():
    next_url = _safe_next(request.args.get("next"))
    if request.method == "GET" and g.user is not None:
        return redirect(next_url or url_for("index"))
    username = ""
    if request.method == "POST":
        db = get_db()
        username = request.form.get("username", "").strip()
        device = device_id(username)
        keys = throttle.keys_for(username, request.remote_addr, device)
        # Held: refuse before the password is hashed (a held login costs one indexed read), the
        # same way for a known and an unknown name.
        wait = throttle.seconds_locked(db, keys)
        if wait:
            current_app.logger.info("login refused while locked: %r from %s", username[:120], request.remote_addr)
            return _locked(next_url, username, wait)
        user = users.authenticate(db, username, request.form.get("password", ""))
        if user is not None:
            throttle.record_success(db, username, request.remote_addr, device=device, policy=throttle_policy(),
                                    commit=False)
            record_audit(db, "login", actor=user, detail={"known_device": True} if device else None)
            token = sessions.start_session(db, user, address=request.remote_addr,
                                           user_agent=request.user_agent.string)  # commits
            session.clear()  # a fresh session at login: no fixation
            session["sid"] = token
            session.permanent = True
            return _remember_device(redirect(next_url or url_for("index")), username, device)
        failure = throttle.record_failure(db, keys, policy=throttle_policy(), commit=False)
        record_audit(db, "login_failed", target=username[:120] or None,
                     detail={"failures": failure.failures[keys[0]]})
        if failure.locked_keys:
            record_audit(db, "login_locked", target=username[:120] or None,
                         detail={"keys": list(failure.locked_keys), "seconds": failure.locked_seconds})
            current_app.logger.warning("logins locked for %ss: %s", failure.locked_seconds,
                                       ", ".join(failure.locked_keys))
        db.commit()
        return render_template("auth/login.html", next_url=next_url, username=username, error=MISMATCH), 401
    return render_template("auth/login.html", next_url=next_url, username=username)


@bp.post("/logout")
def logout():
    """Log out: every session of this user ends (on every device, in every server process)."""
    if g.user is not None:
        db = get_db()
        record_audit(db, "logout", actor=g.user, target=g.user.name)
        sessions.end_sessions(db, g.user.id)  # commits
    session.clear()
    return redirect(url_for("auth.login"))
