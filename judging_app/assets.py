"""htmx, served from the ``django-js-lib-htmx`` wheel's package data (never a copy or a CDN), and
``/favicon.ico`` (golden's own icon in ``static/``), which browsers ask for on every site."""

from __future__ import annotations

import hashlib
from functools import lru_cache
from importlib.resources import files

from flask import Blueprint, Response, current_app, request

bp = Blueprint("assets", __name__)

HTMX_RESOURCE = ("js_lib_htmx", "static/htmx/htmx.min.js")


@lru_cache(maxsize=1)
def htmx_source() -> tuple[bytes, str]:
    """The bytes of htmx.min.js from the installed wheel, and their ETag."""
    package, name = HTMX_RESOURCE
    data = files(package).joinpath(name).read_bytes()
    return data, hashlib.sha256(data).hexdigest()[:16]


@bp.get("/vendor/htmx.min.js")
def htmx_js():
    data, etag = htmx_source()
    if request.if_none_match.contains(etag):
        return Response(status=304)
    response = Response(data, mimetype="text/javascript")
    response.set_etag(etag)
    response.cache_control.public = True
    response.cache_control.max_age = 86400
    return response


@bp.get("/favicon.ico")
def favicon():
    return current_app.send_static_file("favicon.ico")
