"""The judging web app: a thin Flask layer over ``curation``.

``create_app`` builds the app (the Flask tutorial's app-factory pattern): one database engine per
app, one session per request (:mod:`judging_app.db`), CSRF protection on every form
(flask-wtf's ``CSRFProtect``), one error renderer (:mod:`judging_app.errors`) and nine blueprints:
``assets`` (htmx, from its wheel; the favicon), ``auth`` (log in / out; the role guards), ``judge``
(the judging page), ``qualification`` (a new judge's qualification before main work, and a lead's
grant of another attempt), and, for leads and admins, ``lead`` (agreement, adjudication, release), ``leaks``
(the leak review), ``versions`` (exported versions), ``reports`` (comparison reports) and ``admin``
(users and their sessions; for admins the audit trail and the login lock-outs). Views parse input,
call ``curation`` functions and render; no SQL and no statistics are written here.

Everything a request's answer depends on besides the request (sessions, login failures, the audit
trail, the cookie-signing key) is in the store, so several ``golden serve`` processes on one
PostgreSQL store behave as one.
"""

from __future__ import annotations

import functools
import hmac
import os
from datetime import timedelta
from pathlib import Path

from flask import Flask, current_app, g, request, session
from flask_wtf.csrf import CSRFProtect

from curation.store import roles
from curation.store.engine import default_url, normalize_url
from curation.store.migrate import open_store

from .tokens import VerifiedTokens, signed_at

ROOT = Path(__file__).resolve().parent.parent


def asset_dir(name: str) -> Path:
    """``templates`` or ``static``: inside this package when golden is installed from a wheel
    (pyproject.toml puts them there), else at the top of the source checkout."""
    packaged = Path(__file__).resolve().parent / name
    return packaged if packaged.is_dir() else ROOT / name
class GoldenFlask(Flask):
    """Flask, asking once per function whether it is a coroutine function: Flask asks again for
    every hook and view of every request (``inspect.iscoroutinefunction``, a dozen times a
    submit-and-next). A coroutine function is still wrapped as Flask wraps it."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._plain_functions: dict = {}
        self.lean = None  # the lean answer path (judging_app.lean), set by create_app

    def wsgi_app(self, environ, start_response):
        """Flask's, except that the judging page's htmx answer takes the lean path when it can
        (:mod:`judging_app.lean`: it returns None, having changed nothing, when it cannot)."""
        lean = self.lean
        if lean is not None and environ.get("HTTP_HX_REQUEST") == "true":
            response = lean.answer(environ, start_response)
            if response is not None:
                return response
        return super().wsgi_app(environ, start_response)

    def ensure_sync(self, func):
        plain = self._plain_functions
        if func in plain:
            return func
        wrapped = super().ensure_sync(func)
        if wrapped is func:
            if len(plain) >= 4096:  # bounded: views and hooks are few, bound methods may be many
                plain.clear()
            plain[func] = True
        return wrapped


class CheckedTokens(CSRFProtect):
    """flask-wtf's CSRF protection, remembering per process the tokens it accepted lately, so that a
    judge's every answer does not verify the same token's signature again (itsdangerous: a key
    derivation, an HMAC, base64 and JSON).

    A remembered token is accepted exactly when flask-wtf would accept it: the same text (signature
    included) it verified, against the same session value (compared in constant time), within the
    same ``WTF_CSRF_TIME_LIMIT`` from its signing; anything else (another session, an expired or
    forged token, HTTPS with the strict referrer check, an exempt view) goes through flask-wtf."""

    def __init__(self, app=None):
        self._accepted = VerifiedTokens()  # (app, token) -> session value: one csrf object serves every app
        super().__init__(app)

    def protect(self, apply_exemptions=False):
        config = current_app.config
        if (request.method in config["WTF_CSRF_METHODS"] and not (request.is_secure and config["WTF_CSRF_SSL_STRICT"])
                and (not apply_exemptions or (request.endpoint and not self._is_exempt()))):
            token = self._get_csrf_token()
            limit = config["WTF_CSRF_TIME_LIMIT"]
            seen = self._accepted.get((id(current_app._get_current_object()), token), limit) if token else None
            value = session.get(config["WTF_CSRF_FIELD_NAME"])
            if seen is not None and isinstance(value, str) and hmac.compare_digest(seen, value):
                g.csrf_valid = True
                return
        super().protect(apply_exemptions)  # raises CSRFError (a 400) when the token is refused
        if g.get("csrf_valid"):
            self._remember(self._get_csrf_token(), session.get(config["WTF_CSRF_FIELD_NAME"]))

    def accepted(self, app, token: str):
        """The session value ``token`` was accepted for lately in ``app`` (within
        ``WTF_CSRF_TIME_LIMIT`` of its signing), else None: what :meth:`protect` accepts without
        verifying again, for the lean answer path (:mod:`judging_app.lean`)."""
        return self._accepted.get((id(app), token), app.config["WTF_CSRF_TIME_LIMIT"])

    def _remember(self, token: str | None, value) -> None:
        if not token or not isinstance(value, str):
            return
        signed = signed_at(token)
        if signed is not None:
            self._accepted.remember((id(current_app._get_current_object()), token), value, signed)


csrf = CheckedTokens()

# A defence in depth under the escaping in the templates: no inline script, no third-party origin.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
)


# Secure cookies: browsers must come back over HTTPS only, for a year (sent only with --secure-cookies,
# i.e. when golden is served behind HTTPS).
HSTS = "max-age=31536000"


def security_headers(secure: bool) -> list[tuple[str, str]]:
    """The headers every response carries (added unless a view set them), in this order: the
    content security policy, no MIME sniffing, the referrer policy, and HSTS when ``secure``."""
    headers = [("Content-Security-Policy", CONTENT_SECURITY_POLICY), ("X-Content-Type-Options", "nosniff"),
               ("Referrer-Policy", "same-origin")]
    if secure:
        headers.append(("Strict-Transport-Security", HSTS))
    return headers


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def _env_hours(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r}: give a number of hours") from None
    if not 0 < value < 24 * 366:
        raise ValueError(f"{name}={raw!r}: give a number of hours above 0 and below a year")
    return value


def _env_ms(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if not raw:
        return default
    from .errors import whole_number

    try:
        value = whole_number(raw.strip())
    except ValueError:
        value = -1
    if not 0 <= value <= 60_000:
        raise ValueError(f"{name}={raw!r}: give a whole number of milliseconds from 0 to 60000")
    return value


def _secret_key(engine) -> str:
    """``GOLDEN_SECRET_KEY`` when set, else the store's own key (made by ``golden admin db upgrade``), so
    a cookie of one store is refused by another and every server process on a store agrees."""
    key = os.environ.get("GOLDEN_SECRET_KEY")
    if key:
        return key
    from curation.store.settings import store_secret

    return store_secret(engine)


def create_app(test_config: dict | None = None) -> Flask:
    """Build the judging app.

    ``test_config`` overrides the configuration; the keys golden reads are ``DATABASE_URL``
    (default: :func:`curation.store.engine.default_url`, i.e. ``DATABASE_URL`` or ``./golden.db``),
    ``SECRET_KEY`` (default ``GOLDEN_SECRET_KEY``, else the store's own key), ``CLAIM_TIMEOUT_SECONDS``,
    ``MIN_ANSWER_MS`` (``GOLDEN_MIN_ANSWER_MS``, default 250: an answer that comes sooner after its
    pair was shown is refused, as a key pressed for the pair before),
    ``SESSION_IDLE_SECONDS`` / ``SESSION_MAX_SECONDS`` (sessions end after this long without a
    request / after login; ``GOLDEN_SESSION_IDLE_HOURS`` / ``GOLDEN_SESSION_MAX_HOURS``, default 8 hours
    and 7 days), ``LOGIN_*`` (throttling: 5 failures of an account from one address in 15 minutes lock
    that pair for 1 minute, doubling up to an hour; 5 per account or 20 per address only slow
    them, for 30 seconds; a known device is counted on its own), ``SECURE_COOKIES``
    (``GOLDEN_SECURE_COOKIES``: Secure cookies and HSTS, behind HTTPS), ``PROXY_HEADERS``
    (``GOLDEN_PROXY_HEADERS``: trust X-Forwarded-For and X-Forwarded-Proto from one
    reverse proxy, werkzeug's ProxyFix) and ``LEAN_ANSWER`` (default True: the judging page's htmx
    answer takes the lean path of :mod:`judging_app.lean` when it can; False: always Flask's
    dispatch). The app refuses to start on a store whose schema is not at the latest migration,
    with the command that fixes it.

    One function on purpose: the app factory keeps configuration, security, blueprints and error
    handlers in one place, in the order they must be set up.
    """
    app = GoldenFlask(
        __name__,
        instance_relative_config=True,
        template_folder=str(asset_dir("templates")),
        static_folder=str(asset_dir("static")),
    )
    app.config.from_mapping(
        DATABASE_URL=None,
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        # Not re-signing the cookie on every answer saves work on the judging hot path (and a
        # Set-Cookie header on every htmx response): the idle limit is kept in the store instead.
        SESSION_REFRESH_EACH_REQUEST=False,
        SESSION_IDLE_SECONDS=int(_env_hours("GOLDEN_SESSION_IDLE_HOURS", 8) * 3600),
        SESSION_MAX_SECONDS=int(_env_hours("GOLDEN_SESSION_MAX_HOURS", 7 * 24) * 3600),
        LOGIN_MAX_FAILURES=5,
        LOGIN_ADDRESS_MAX_FAILURES=20,
        LOGIN_WINDOW_SECONDS=15 * 60,
        LOGIN_LOCK_SECONDS=60,
        LOGIN_MAX_LOCK_SECONDS=3600,
        LOGIN_SLOW_SECONDS=30,
        SECURE_COOKIES=_env_flag("GOLDEN_SECURE_COOKIES"),
        PROXY_HEADERS=_env_flag("GOLDEN_PROXY_HEADERS"),
        WTF_CSRF_TIME_LIMIT=12 * 3600,  # a working day: a page left open over lunch still submits
        CLAIM_TIMEOUT_SECONDS=15 * 60,
        # No one reads a pair in a quarter of a second: an answer sooner than this after its pair
        # was shown is the second press of a key meant for the pair before, and is refused.
        MIN_ANSWER_MS=_env_ms("GOLDEN_MIN_ANSWER_MS", 250),
        SEND_FILE_MAX_AGE_DEFAULT=3600,
        LEAN_ANSWER=True,  # the htmx answer without Flask's full dispatch (judging_app.lean); False: Flask's
    )
    if test_config:
        app.config.from_mapping(test_config)
    if "MAX_FORM_MEMORY_SIZE" not in (test_config or {}):
        # A form's text fields together: room for guidelines of the CLI's limit (a byte of text may
        # take 3 on the wire, %XX) and the form's other fields; werkzeug answers a larger one 413.
        # The fields' own limits (curation/formats/limits.py) are checked by the functions that store them.
        from curation.formats.limits import limit

        app.config["MAX_FORM_MEMORY_SIZE"] = 3 * limit("GOLDEN_MAX_GUIDELINES_BYTES") + (1 << 20)
    # The cookie outlives no session: the absolute limit is also the cookie's lifetime.
    app.config["PERMANENT_SESSION_LIFETIME"] = timedelta(seconds=app.config["SESSION_MAX_SECONDS"])
    if app.config["SECURE_COOKIES"]:
        app.config["SESSION_COOKIE_SECURE"] = True
    app.config["DATABASE_URL"] = normalize_url(app.config["DATABASE_URL"] or default_url())

    from . import db

    # open_store refuses a missing SQLite file before connecting would create an empty one;
    # init_app then checks the schema is at head.
    db.init_app(app, open_store(app.config["DATABASE_URL"], check=False, refuse_missing=True))
    if not app.config.get("SECRET_KEY"):
        app.config["SECRET_KEY"] = _secret_key(app.extensions["golden_engine"])
    csrf.init_app(app)
    if app.config["PROXY_HEADERS"]:
        from werkzeug.middleware.proxy_fix import ProxyFix

        # One proxy hop: its X-Forwarded-For (the client address the throttling and the audit trail
        # see) and -Proto (https). Not -Host: a proxy that does not overwrite it would pass on the
        # client's. Never on a server reached directly, where a client could write these itself.
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=1, x_proto=1, x_host=0)

    from . import admin, assets, auth, errors, judge, lead, leaks, qualification, reports, settings, versions

    app.session_interface = auth.SessionCookies()

    errors.init_app(app)
    errors.install_converters(app)
    app.register_blueprint(assets.bp)
    app.register_blueprint(auth.bp)
    app.register_blueprint(judge.bp)
    app.register_blueprint(qualification.bp)
    app.register_blueprint(versions.bp)
    app.register_blueprint(lead.bp)
    app.register_blueprint(leaks.bp)
    app.register_blueprint(reports.bp)
    app.register_blueprint(admin.bp)
    app.register_blueprint(settings.bp)
    app.add_url_rule("/", endpoint="index", view_func=judge.index)

    app.jinja_env.globals["current_app"] = app  # templates link to blueprints only when registered
    app.jinja_env.globals.update(is_lead=roles.is_lead, is_admin=roles.is_admin)  # the permission checks
    # the judging page's grade buttons, rendered once per scale (judging_app.judge.grade_buttons)
    app.jinja_env.globals["grade_buttons"] = functools.partial(judge.grade_buttons, app.jinja_env)

    from curation.store import audit

    @app.before_request
    def audit_origin():
        # "From where" for the audit events this request records (curation.store.audit).
        g.audit_origin = audit.ORIGIN.set(request.remote_addr or "unknown")

    @app.teardown_request
    def audit_origin_reset(_exc=None):
        token = g.pop("audit_origin", None)
        if token is not None:
            audit.ORIGIN.reset(token)

    headers = security_headers(app.config["SECURE_COOKIES"])
    if app.config["LEAN_ANSWER"]:
        from .lean import LeanAnswer

        app.lean = LeanAnswer(app, csrf, headers)

    @app.after_request
    def add_security_headers(response):
        for name, value in headers:
            response.headers.setdefault(name, value)
        return response

    return app
