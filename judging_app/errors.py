"""One error renderer: a full page for a browser request, a small message for an htmx request.

For htmx, the message is swapped into ``#messages`` (``HX-Retarget``) so the pair on screen stays
where it was; ``templates/base.html`` tells htmx to swap 4xx/5xx responses.
"""

from __future__ import annotations

import math
import re

from flask import Flask, abort, render_template, request
from flask_wtf.csrf import CSRFError
from jinja2 import TemplateNotFound
from werkzeug.exceptions import HTTPException
from werkzeug.routing import PathConverter

# The largest id or position the store can hold: SQLite's INTEGER and PostgreSQL's BIGINT are
# 64-bit signed; a larger number in a URL names nothing (404): it must not reach the driver
# (SQLite raises OverflowError on it, a 500).
MAX_STORE_INT = 2**63 - 1
# ASCII decimals, and the words float() reads as inf and nan (refused below as not finite)
_DECIMAL = re.compile(r"[-+]?(([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?|inf|infinity|nan)", re.IGNORECASE)
_WHOLE = re.compile(r"-?[0-9]+")  # ASCII digits only (int() would also take "١٢", " 12", "1_000")


class NameConverter(PathConverter):
    """``<name:project>``: a project name as it is in the store, "/" and newlines included (names made
    before they were refused at creation); werkzeug's ``path`` stops at a newline."""

    regex = r"[^/](?s:.)*?"


def whole_number(text: str) -> int:
    """``type=`` for a whole number in a query string or form, written in ASCII digits (an optional
    minus); else ValueError, which werkzeug's ``get`` turns into the default. The web layer's one
    parser of whole numbers (a view checks the range its setting allows)."""
    if not isinstance(text, str) or not _WHOLE.fullmatch(text):
        raise ValueError(f"{str(text)[:30]!r} is not a whole number")
    return int(text)


def store_int(text: str) -> int:
    """``type=`` for an id or position in a query string or form (``request.args.get("at",
    type=store_int)``): a :func:`whole_number` that fits the store, else ValueError, which werkzeug's
    ``get`` turns into the default (None), so the view answers as for a missing or unknown id."""
    value = whole_number(text)
    if not -MAX_STORE_INT <= value <= MAX_STORE_INT:
        raise ValueError(f"{text[:30]!r} is out of range")
    return value


def finite_float(text: str, name: str, *, low: float | None = None, high: float | None = None) -> float:
    """A number from a form or query string: ValueError naming ``name`` when it is not a number
    written in ASCII (digits, a point, an exponent), not finite (inf, nan, 1e400) or outside
    ``[low, high]``; views answer that with a 400. The web layer's one parser of decimals, as
    :func:`store_int` is of whole numbers."""
    if not isinstance(text, str) or not _DECIMAL.fullmatch(text.strip()):
        raise ValueError(f"{name}: {str(text)[:30]!r} is not a number")
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{name}: {str(text)[:30]!r} is not a finite number")
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = f"between {low:g} and {high:g}" if low is not None and high is not None else (
            f"at least {low:g}" if low is not None else f"at most {high:g}")
        raise ValueError(f"{name}: {value:g} is out of range; give a number {bounds}")
    return value

MESSAGES = {
    400: "The request could not be understood.",
    403: "You do not have access to this page.",
    404: "There is nothing here.",
    405: "That action is not allowed here.",
    413: "The form is too large: guidelines and information needs are limited to GOLDEN_MAX_GUIDELINES_BYTES "
         "(1 MB unless the server sets it higher).",
    500: "Something went wrong on the server. Your earlier judgments are saved.",
}


def is_htmx() -> bool:
    # The header as the WSGI server put it in the environ: what request.headers.get("HX-Request")
    # reads, without its case-insensitive look-up (asked several times a request).
    return request.environ.get("HTTP_HX_REQUEST") == "true"


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
    app.url_value_preprocessor(ids_in_range)


def install_converters(app: Flask) -> None:
    """``<name:...>`` (:class:`NameConverter`); call before the blueprints are registered."""
    app.url_map.converters["name"] = NameConverter


def ids_in_range(_endpoint: str | None, values: dict | None) -> None:
    """The one check of every number in a route (``/<int:project_id>/...``, any blueprint, any
    method): an int past the store's integers or a float that is not finite names nothing, so 404.
    (A bounded URL converter would not do: werkzeug answers 405 when a GET rule's pattern matches a
    POST whose converter refused the value.)"""
    for value in (values or {}).values():
        if isinstance(value, bool):
            continue
        if (isinstance(value, int) and not -MAX_STORE_INT <= value <= MAX_STORE_INT) or (
                isinstance(value, float) and not math.isfinite(value)):
            abort(404)
