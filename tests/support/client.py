"""What the tests that drive the Flask app through its test client share: the app on a test
engine's database (the ``app`` and ``client`` fixtures of conftest.py wrap it), the CSRF token of a
page, and logging in through the login form."""

from __future__ import annotations

import html
import re
from contextlib import contextmanager

from judging_app import create_app
from tests.support.projects import PASSWORD


@contextmanager
def app_on(engine, **config):
    """The app (testing mode) on ``engine``'s database, with ``config`` over the test defaults; its
    own engine is disposed at the end. Tests answer a pair as soon as it is shown, so the minimum
    time between showing a pair and its answer (``MIN_ANSWER_MS``) is 0 unless ``config`` sets it."""
    app = create_app({"DATABASE_URL": engine.url.render_as_string(hide_password=False), "SECRET_KEY": "t",
                      "TESTING": True, "MIN_ANSWER_MS": 0, **config})
    try:
        yield app
    finally:
        app.extensions["golden_engine"].dispose()


def csrf(body: bytes) -> str:
    """The CSRF token of the first form in ``body``."""
    return html.unescape(re.search(r'name="csrf_token" value="([^"]*)"', body.decode()).group(1))


def post_login(client, name: str, password: str = PASSWORD):
    """Fill in and send the login form as ``name``; returns the response, whatever it is."""
    page = client.get("/login")
    return client.post("/login", data={"username": name, "password": password, "csrf_token": csrf(page.data)})


def login(client, name: str, *, password: str = PASSWORD):
    """Log ``client`` in as ``name`` through the login form, asserting the answer is the redirect
    away from it; returns the client."""
    res = post_login(client, name, password)
    assert res.status_code == 302, res.data[:300]
    return client
