"""Shared fixtures: real SQLite and PostgreSQL databases (``db_url``, ``engine``, ``sqlite_engine``),
a small judging project (``project``), the web app and its test client (``app``, ``client``; log in
with tests.support.client.login), a browser (``browser``, ``page``), and the shared data folder.
The builders and helpers behind them are in the package tests/support/."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("GOLDEN_SHARED_DATA", ROOT.parent / "shared" / "data"))
# Users are created by the hundred here: a cheap werkzeug method instead of scrypt (curation.store.users).
os.environ.setdefault("GOLDEN_PASSWORD_HASH_METHOD", "pbkdf2:sha256:1000")

PG_SERVER = os.environ.get("GOLDEN_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/test")


def shared_path(*parts: str) -> Path:
    """A path under ../shared/data, or skip the test (with the reason) where it is absent."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared data not available: {path}")
    return path


@pytest.fixture
def shared():
    return shared_path


def _pg_reachable() -> str | None:
    """None when PostgreSQL answers, else the reason it does not."""
    try:
        import psycopg
    except ImportError as exc:  # pragma: no cover - psycopg is a dependency
        return f"psycopg not importable: {exc}"
    from sqlalchemy.engine import make_url

    url = make_url(PG_SERVER)
    try:
        with psycopg.connect(
            host=url.host, port=url.port or 5432, user=url.username, dbname=url.database, connect_timeout=3
        ):
            return None
    except Exception as exc:  # any failure means "not reachable"
        return f"PostgreSQL not reachable at {url.host}:{url.port}: {exc}"


@pytest.fixture(scope="session")
def pg_reason():
    return _pg_reachable()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request, tmp_path, pg_reason):
    """An empty database URL: a SQLite file, then a fresh PostgreSQL database when reachable."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'golden.db'}"
        return
    if pg_reason:
        pytest.skip(pg_reason)
    from curation.store.engine import scratch_database

    url, drop = scratch_database(PG_SERVER, "golden_test_")
    try:
        yield url
    finally:
        drop()


@pytest.fixture
def pg_url(pg_reason):
    """A fresh, empty PostgreSQL database (skipped when PostgreSQL is not reachable): for tests that
    need several processes on one server store."""
    if pg_reason:
        pytest.skip(pg_reason)
    from curation.store.engine import scratch_database

    url, drop = scratch_database(PG_SERVER, "golden_test_")
    try:
        yield url
    finally:
        drop()


@pytest.fixture
def engine(db_url):
    """An engine on a fresh database migrated to head by the code behind `golden admin db upgrade`."""
    from curation.store.engine import make_engine
    from curation.store.migrate import upgrade

    eng = make_engine(db_url)
    upgrade(eng)
    yield eng
    eng.dispose()


@pytest.fixture
def sqlite_engine(tmp_path):
    """SQLite only: for tests of input checks and pure logic that do not depend on the database."""
    from tests.support.projects import sqlite_store

    with sqlite_store(tmp_path) as (_url, eng):
        yield eng


@pytest.fixture
def project(engine, tmp_path):
    """A small judging project (tests.support.projects.assigned_project): "recipes", 4 queries of 4
    documents each, judges alice and bob (3 overlap pairs each), lead lena."""
    from tests.support.projects import assigned_project

    return assigned_project(engine, tmp_path / "project")


@pytest.fixture
def app(engine):
    """The judging app (testing mode) on ``engine``'s database."""
    from tests.support.client import app_on

    with app_on(engine) as flask_app:
        yield flask_app


@pytest.fixture
def client(app):
    """A test client of ``app``, logged out (tests.support.client.login logs it in)."""
    return app.test_client()


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium driven by Playwright, one per test module (tests/support/browser.py)."""
    from tests.support.browser import chromium

    with chromium() as launched:
        yield launched


@pytest.fixture
def page(browser):
    """A page in a fresh browser context (no cookies from other tests), 10 s timeouts."""
    from tests.support.browser import new_page

    with new_page(browser) as fresh:
        yield fresh
