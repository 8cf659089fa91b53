"""The judging page's hot request, the htmx answer (``POST /projects/N/judge`` with ``HX-Request``:
record the answer, show the next pair), without Flask's full dispatch.

A judge sends one such request every few seconds all day; Flask's request context, routing,
hooks, form parser and response object were about a quarter of its server time. This path does
only what the answer needs, with the same functions as the normal path, and steps aside (returns
None, having changed nothing) whenever the request is not the plain case it can check from what the
process has already verified:

* the session cookie must be one :class:`judging_app.auth.SessionCookies` verified lately (the
  same text, signature included, within the cookie's lifetime), else Flask verifies it;
* the CSRF token must be in the form and one :class:`judging_app.CheckedTokens` accepted lately
  for this session's value (compared in constant time, within ``WTF_CSRF_TIME_LIMIT``), with CSRF
  checks on and not over HTTPS (where flask-wtf also checks the referrer), else flask-wtf checks it;
* the form must be a small ``application/x-www-form-urlencoded`` body in UTF-8, else werkzeug
  parses it;
* the session must still be valid in the store (:func:`curation.store.sessions.session_user`, the
  one check of every request: it may end an expired session, and the normal path then finds it
  ended too), else the normal path answers (the login redirect).

Everything after that is shared with the view (:func:`judging_app.judge.answer_reply`,
:func:`~judging_app.judge.submit_htmx`, :func:`~judging_app.judge.pair_context`): the same
statements, the same minimum answer time, the same blind fragment, rendered by the same template
with autoescaping. A refusal found after the checks (a grade off the scale, a token that is not the
judge's, an answer too soon, a pair moved away), a finished queue, a CSRF token due for renewal or a
project whose URLs this process has not built yet is answered by the normal code in a Flask request
context, with the user and database session of this request, so its response is the normal one too.
The response carries the headers the app's hooks add (``create_app``'s security headers, and
``Vary: Cookie`` as Flask's session adds when the session was read); the known-answer check after
the response runs as the view schedules it.
"""

from __future__ import annotations

import hmac
import io
import re
from datetime import timedelta
from urllib.parse import parse_qsl

from werkzeug.http import parse_cookie
from werkzeug.wsgi import ClosingIterator

ANSWER_PATH = re.compile(r"/projects/([1-9][0-9]{0,17})/judge")  # below the store's largest integer
MAX_BODY = 64 * 1024  # an answer's form: two tokens, a grade, an optional note of at most 2,000 characters
MAX_FIELDS = 20  # an answer sends at most five; werkzeug counts more against MAX_FORM_PARTS
FORM_TYPE = "application/x-www-form-urlencoded"


class LeanAnswer:
    """The lean path of one app: ``answer(environ, start_response)`` returns the response, or None
    (nothing read from the client is lost: the body is put back) for the normal path."""

    def __init__(self, app, csrf, security_headers: list[tuple[str, str]]):
        self.app = app
        self.csrf = csrf  # the app's CheckedTokens
        self.template = None
        # the app's security headers (its after_request hook), then Vary: Cookie, as Flask adds it
        # when the session was read: the order of the normal path's htmx answer
        self.headers = [*security_headers, ("Vary", "Cookie")]

    def eligible(self, environ) -> int | None:
        """The project id of a plain htmx answer request, else None (checks of the request alone)."""
        if environ.get("REQUEST_METHOD") != "POST" or environ.get("HTTP_HX_REQUEST") != "true":
            return None
        match = ANSWER_PATH.fullmatch(environ.get("PATH_INFO", ""))
        config = self.app.config
        if (match is None or environ.get("SCRIPT_NAME") or environ.get("wsgi.url_scheme") != "http"
                or config.get("SERVER_NAME") or not config.get("WTF_CSRF_ENABLED", True)
                or not config.get("WTF_CSRF_CHECK_DEFAULT", True) or "POST" not in config["WTF_CSRF_METHODS"]):
            return None
        if environ.get("CONTENT_TYPE") != FORM_TYPE or environ.get("HTTP_TRANSFER_ENCODING"):
            return None
        return int(match.group(1))

    def session_data(self, environ) -> dict | None:
        """The session of the request's cookie when this process verified that cookie lately."""
        app = self.app
        cookies = parse_cookie(environ)
        value = cookies.get(app.config["SESSION_COOKIE_NAME"])
        if not value or not app.secret_key:
            return None
        return app.session_interface.verified(value, app)

    def form(self, environ) -> dict | None:
        """The form's first value of each field, or None (its body put back for werkzeug)."""
        try:
            length = int(environ.get("CONTENT_LENGTH") or "")
        except ValueError:
            return None
        limit = self.app.config.get("MAX_CONTENT_LENGTH")
        memory = self.app.config.get("MAX_FORM_MEMORY_SIZE")
        if not 0 <= length <= MAX_BODY or any(x is not None and length > x for x in (limit, memory)):
            return None
        body = environ["wsgi.input"].read(length)
        environ["wsgi.input"] = io.BytesIO(body)
        if len(body) != length:
            return None
        try:
            pairs = parse_qsl(body.decode("utf-8"), keep_blank_values=True, errors="strict")
        except (UnicodeDecodeError, ValueError):
            return None
        if len(pairs) > MAX_FIELDS:
            return None
        form: dict[str, str] = {}
        for key, value in pairs:
            form.setdefault(key, value)
        return form

    def csrf_ok(self, form: dict, data: dict) -> bool:
        """Whether flask-wtf accepted this form's CSRF token for this session's value lately."""
        config = self.app.config
        token = form.get(config["WTF_CSRF_FIELD_NAME"])
        value = data.get(config["WTF_CSRF_FIELD_NAME"])
        if not token or not isinstance(value, str):
            return False
        seen = self.csrf.accepted(self.app, token)
        return seen is not None and hmac.compare_digest(seen, value)

    def answer(self, environ, start_response):
        project_id = self.eligible(environ)
        if project_id is None:
            return None
        data = self.session_data(environ)
        if data is None or not isinstance(data.get("sid"), str):
            return None
        form = self.form(environ)
        if form is None or not self.csrf_ok(form, data):
            return None
        from sqlmodel import Session

        from curation.store import audit, sessions

        config = self.app.config
        conn = self.app.extensions["golden_engine"].connect()
        db = Session(bind=conn, expire_on_commit=False)
        origin = audit.ORIGIN.set(environ.get("REMOTE_ADDR") or "unknown")
        try:
            try:
                user = sessions.session_user(db, data["sid"], idle=timedelta(seconds=config["SESSION_IDLE_SECONDS"]),
                                             absolute=timedelta(seconds=config["SESSION_MAX_SECONDS"]))
            except Exception as exc:
                return self.in_context(environ, start_response, None, db, conn, project_id, error=exc)
            if user is None:
                db.close()
                conn.close()
                return None  # ended or expired: the normal path answers, with the login redirect
            return self.respond(environ, start_response, project_id, form, user, db, conn)
        finally:
            audit.ORIGIN.reset(origin)

    def respond(self, environ, start_response, project_id, form, user, db, conn):
        """Record the answer and answer with the next pair; the rare cases in a request context."""
        from curation.judge import judging

        from . import judge

        config = self.app.config
        try:
            body = None
            try:
                result = judge.submit_htmx(db, user, project_id, form.get("token", ""), judge.answer_reply(form),
                                           config)
                project, task, progress, last, note = result
                urls = judge.cached_urls("", project_id)
                token = form[config["WTF_CSRF_FIELD_NAME"]]
                if not (note or task is None or urls is None or not judge.csrf_token_kept(token, config)):
                    progress = progress or judging.progress(db, project, user)
                    context = judge.pair_context(project, task, note=None, progress=progress, last=last,
                                                 config=config)
                    context.update(urls=urls, g=_Globals(user), csrf_token=lambda: token)
                    body = self.render(context)
            except Exception as exc:  # a refusal (HTTPException) or a failure: the app's error handling
                return self.in_context(environ, start_response, user, db, conn, project_id, error=exc)
            if body is None:  # the rare answers: the view's own code
                return self.in_context(environ, start_response, user, db, conn, project_id, answered=result)
            if not (db.new or db.dirty or db.deleted):
                judging.end_reads(db)
        finally:
            db.close()
            conn.close()
            self.app.extensions["golden_stats"].maybe_refresh()
        start_response("200 OK", self.response_headers(len(body)))
        if getattr(project, "known_answer_hold", False):
            return ClosingIterator([body], [judge.hold_check(self.app.extensions["golden_engine"], project.id,
                                                             user.id)])
        return [body]

    def render(self, context: dict) -> bytes:
        if self.template is None or self.app.jinja_env.auto_reload:
            self.template = self.app.jinja_env.get_template("judge/_pair.html")
        return self.template.render(context).encode()

    def response_headers(self, length: int) -> list[tuple[str, str]]:
        """The headers of the normal path's htmx answer, in its order."""
        return [("Content-Type", "text/html; charset=utf-8"), ("Content-Length", str(length)), *self.headers]

    def in_context(self, environ, start_response, user, db, conn, project_id, *, error=None, answered=None):
        """Finish in a Flask request context with this request's user, database session and
        verified CSRF token, by the normal code: the app's error handling for ``error`` (as Flask
        handles an exception of the view), else :func:`judging_app.judge.htmx_answered`; the
        response's hooks and the teardown run as for any request."""
        from flask import g, session

        from . import judge

        app = self.app
        ctx = app.request_context(environ)
        raised = None
        try:
            try:
                ctx.push()
                session.get("sid")  # read, as the normal path's hooks read it (Vary: Cookie)
                g.user, g.db, g.db_conn, g.csrf_valid = user, db, conn, True
                if error is not None:
                    response = app.finalize_request(app.handle_user_exception(error))
                else:
                    response = app.finalize_request(judge.htmx_answered(project_id, *answered))
            except Exception as exc:  # as Flask's wsgi_app: a 500, and teardown told of the error
                raised = exc
                response = app.handle_exception(exc)
            return response(environ, start_response)
        finally:
            ctx.pop(raised)


class _Globals:
    """The ``g`` the fragment reads (``g.user``), outside a request context."""

    __slots__ = ("user",)

    def __init__(self, user):
        self.user = user
