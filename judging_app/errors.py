"""One error renderer: a full page for a browser request, a small message for an htmx request.

For htmx, the message is swapped into ``#messages`` (``HX-Retarget``) so the pair on screen stays
where it was; ``templates/base.html`` tells htmx to swap 4xx/5xx responses.
"""

from __future__ import annotations

from flask import Flask, render_template, request
from flask_wtf.csrf import CSRFError
from jinja2 import TemplateNotFound
from werkzeug.exceptions import HTTPException

MESSAGES = {
    400: "The request could not be understood.",
    403: "You do not have access to this page.",
    404: "There is nothing here.",
    405: "That action is not allowed here.",
    500: "Something went wrong on the server. Your earlier judgments are saved.",
}


def is_htmx() -> bool:
    return request.headers.get("HX-Request") == "true"


def render_error(exc: HTTPException):
    code = exc.code or 500
    title = exc.name
    if isinstance(exc, CSRFError):
        title = "Page expired"
        message = "This page has expired or was not sent by golden. Reload the page and try again."
    else:
        message = (exc.description if code < 500 and exc.description and not _is_default(exc) else None) or (
            MESSAGES.get(code, title)
        )
    context = dict(code=code, title=title, message=message)
    if is_htmx():
        body = render_template("_message.html", kind="error", **context)
        return body, code, {"HX-Retarget": "#messages", "HX-Reswap": "innerHTML"}
    try:
        return render_template(f"{code}.html", **context), code
    except TemplateNotFound:
        return render_template("error.html", **context), code


def _is_default(exc: HTTPException) -> bool:
    return exc.description == type(exc).description


def init_app(app: Flask) -> None:
    # Flask logs an unhandled exception and passes an InternalServerError here, so a traceback
    # never reaches a judge (tests see the exception itself: TESTING propagates it).
    app.register_error_handler(HTTPException, render_error)
