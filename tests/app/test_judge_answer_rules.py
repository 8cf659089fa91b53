"""The server's rules for a judge's answers, through Flask's test client on SQLite and PostgreSQL:
an answer is for the pair the judge saw (one that comes sooner after its pair was shown than the
minimum is refused and records nothing)."""

from __future__ import annotations

import time

import pytest

from tests.app.test_app_judging import HTMX, answer, field, judge_page, judgments
from tests.support.client import app_on, login


@pytest.fixture
def guarded(engine):
    """The app with the default minimum time between showing a pair and its answer (250 ms)."""
    with app_on(engine, MIN_ANSWER_MS=250) as flask_app:
        yield flask_app


@pytest.mark.parametrize("htmx", [True, False])
def test_an_answer_sooner_than_the_minimum_after_its_pair_is_refused(guarded, project, engine, htmx):
    client = login(guarded.test_client(), "alice")
    page = judge_page(client, project)
    token = field(page.data, "token")
    headers = HTMX if htmx else {}
    refused = answer(client, project, page.data, headers=headers, grade="1")
    assert refused.status_code == 409
    assert b"ms after the pair appeared" in refused.data and b"not recorded" in refused.data
    assert judgments(engine) == []
    time.sleep(0.3)  # the pair has now been on screen longer than the minimum
    accepted = answer(client, project, page.data, headers=headers, grade="1")
    assert accepted.status_code in (200, 303)
    rows = judgments(engine, "alice")
    assert [(r.grade, r.client_token) for r in rows] == [(1, token)]
    assert (rows[0].answered_at - rows[0].shown_at).total_seconds() >= 0.25


def test_the_minimum_comes_from_the_environment(engine, monkeypatch):
    monkeypatch.setenv("GOLDEN_MIN_ANSWER_MS", "400")
    from judging_app import create_app

    url = engine.url.render_as_string(hide_password=False)
    app = create_app({"DATABASE_URL": url, "SECRET_KEY": "t", "TESTING": True})
    try:
        assert app.config["MIN_ANSWER_MS"] == 400
    finally:
        app.extensions["golden_engine"].dispose()
    monkeypatch.setenv("GOLDEN_MIN_ANSWER_MS", "a lot")
    with pytest.raises(ValueError, match="GOLDEN_MIN_ANSWER_MS"):
        create_app({"DATABASE_URL": url, "SECRET_KEY": "t", "TESTING": True})
