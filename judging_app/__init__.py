"""The judging web app: a thin Flask layer over ``curation``.

``create_app`` builds the app (the Flask tutorial's app-factory pattern): one database engine per
app, one session per request (:mod:`judging_app.db`), CSRF protection on every form
(flask-wtf's ``CSRFProtect``), one error renderer (:mod:`judging_app.errors`) and seven blueprints:
``assets`` (htmx, from its wheel), ``auth`` (log in / out; the role guards), ``judge`` (the judging page),
and, for leads and admins, ``lead`` (agreement, adjudication, release), ``leaks`` (the leak review),
``versions`` (exported versions) and ``reports`` (comparison reports). Views parse input, call
``curation`` functions and render; no SQL and no statistics are written here.
"""

from __future__ import annotations

import os
import secrets
from datetime import timedelta
from pathlib import Path

from flask import Flask
from flask_wtf.csrf import CSRFProtect

from curation.store.engine import default_url, normalize_url
from curation.store.migrate import open_store

ROOT = Path(__file__).resolve().parent.parent


def asset_dir(name: str) -> Path:
    """``templates`` or ``static``: inside this package when golden is installed from a wheel
    (pyproject.toml puts them there), else at the top of the source checkout."""
    packaged = Path(__file__).resolve().parent / name
    return packaged if packaged.is_dir() else ROOT / name
csrf = CSRFProtect()

# A defence in depth under the escaping in the templates: no inline script, no third-party origin.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
)


def _secret_key(app: Flask) -> str:
    """``GOLDEN_SECRET_KEY`` when set, else a random key kept in the instance folder (mode 0600),
    so judges stay logged in across a server restart."""
    key = os.environ.get("GOLDEN_SECRET_KEY")
    if key:
        return key
    path = Path(app.instance_path) / "secret_key"
    if path.exists():
        return path.read_text().strip()
    path.parent.mkdir(parents=True, exist_ok=True)
    key = secrets.token_hex(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(key)
    return key


def create_app(test_config: dict | None = None) -> Flask:
    """Build the judging app.

    ``test_config`` overrides the configuration; the keys golden reads are ``DATABASE_URL``
    (default: :func:`curation.store.engine.default_url`, i.e. ``DATABASE_URL`` or ``./golden.db``),
    ``SECRET_KEY`` and ``CLAIM_TIMEOUT_SECONDS``. The app refuses to start on a store whose schema
    is not at the latest migration, with the command that fixes it.
    """
    app = Flask(
        __name__,
        instance_relative_config=True,
        template_folder=str(asset_dir("templates")),
        static_folder=str(asset_dir("static")),
    )
    app.config.from_mapping(
        DATABASE_URL=None,
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        PERMANENT_SESSION_LIFETIME=timedelta(hours=12),
        # The login lasts 12 hours from logging in; not re-signing the cookie on every answer saves
        # work on the judging hot path (and a Set-Cookie header on every htmx response).
        SESSION_REFRESH_EACH_REQUEST=False,
        WTF_CSRF_TIME_LIMIT=12 * 3600,  # a working day: a page left open over lunch still submits
        CLAIM_TIMEOUT_SECONDS=15 * 60,
        SEND_FILE_MAX_AGE_DEFAULT=3600,
    )
    if test_config:
        app.config.from_mapping(test_config)
    if not app.config.get("SECRET_KEY"):
        app.config["SECRET_KEY"] = _secret_key(app)
    app.config["DATABASE_URL"] = normalize_url(app.config["DATABASE_URL"] or default_url())

    from . import db

    # open_store refuses a missing SQLite file before connecting would create an empty one;
    # init_app then checks the schema is at head.
    db.init_app(app, open_store(app.config["DATABASE_URL"], check=False, refuse_missing=True))
    csrf.init_app(app)

    from . import assets, auth, errors, judge, lead, leaks, reports, versions

    errors.init_app(app)
    errors.install_converters(app)
    app.register_blueprint(assets.bp)
    app.register_blueprint(auth.bp)
    app.register_blueprint(judge.bp)
    app.register_blueprint(versions.bp)
    app.register_blueprint(lead.bp)
    app.register_blueprint(leaks.bp)
    app.register_blueprint(reports.bp)
    app.add_url_rule("/", endpoint="index", view_func=judge.index)

    app.jinja_env.globals["current_app"] = app  # templates link to blueprints only when registered

    @app.after_request
    def security_headers(response):
        response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "same-origin")
        return response

    return app
