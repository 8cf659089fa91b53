"""Form and query-string values the web app must refuse without a 500 and without storing anything:
numbers not written in ASCII digits (``grade=²``, Arabic-Indic and full-width digits, ``1_0``), a
``next=`` holding a control character, guidelines, information needs and adjudication reasons over
the size limits the CLI applies (curation/formats/limits.py), and text holding NUL, which no store
keeps (PostgreSQL cannot; the same refusal on SQLite). On SQLite and PostgreSQL (``engine``)."""

from __future__ import annotations

import pytest
from sqlmodel import func, select

from curation.store.engine import session as new_session
from curation.store.models import Adjudication, GuidelinesVersion, Judgment, QueryNeed
from curation.store.projects import get_project
from tests.app.test_request_params import exported  # noqa: F401 (a fixture)
from tests.support.client import csrf, login, post_login

NOT_ASCII = ["²", "١", "１", "1_0", "+", "0x1", "9" * 5000]


def _count(engine, model) -> int:
    with new_session(engine) as s:
        return s.exec(select(func.count()).select_from(model)).one()


def _pid(engine) -> int:
    with new_session(engine) as s:
        return get_project(s, "p").id


@pytest.mark.parametrize("grade", NOT_ASCII)
def test_a_grade_not_in_ascii_digits_is_refused_on_the_judging_page(app, exported, grade):  # noqa: F811
    client = login(app.test_client(), "alice")
    pid = _pid(exported)
    page = client.get(f"/projects/{pid}/judge")
    token = page.data.decode().split('name="token" value="', 1)[1].split('"', 1)[0]
    before = _count(exported, Judgment)
    for headers in ({}, {"HX-Request": "true"}):
        res = client.post(f"/projects/{pid}/judge", headers=headers,
                          data={"token": token, "grade": grade, "csrf_token": csrf(page.data)})
        assert res.status_code in (400, 422), (grade, res.status_code, res.data[:300])
    assert _count(exported, Judgment) == before


@pytest.mark.parametrize("grade", NOT_ASCII)
def test_a_lead_grade_not_in_ascii_digits_is_refused(app, exported, grade):  # noqa: F811
    client = login(app.test_client(), "lena")
    pid = _pid(exported)
    with new_session(exported) as s:
        from curation.store.models import PoolPair

        pair_id = s.exec(select(PoolPair.id)).first()
    token = csrf(client.get(f"/lead/{pid}/adjudicate").data)
    res = client.post(f"/lead/{pid}/adjudicate", data={"pair_id": str(pair_id), "grade": grade, "reason": "r",
                                                      "csrf_token": token})
    assert res.status_code in (400, 422), (grade, res.status_code)
    assert _count(exported, Adjudication) == 0


@pytest.mark.parametrize("query", ["cut=²", "cut=١", "usable=٠.٥", "usable=0.5_0", "marginal=infinity"])
def test_agreement_settings_not_in_ascii_digits_are_400(app, exported, query):  # noqa: F811
    client = login(app.test_client(), "lena")
    assert client.get(f"/lead/{_pid(exported)}?{query}").status_code == 400


@pytest.mark.parametrize("query", ["idle=²", "idle=١٠"])
def test_progress_idle_not_in_ascii_digits_is_400(app, exported, query):  # noqa: F811
    client = login(app.test_client(), "lena")
    assert client.get(f"/lead/{_pid(exported)}/progress?{query}").status_code == 400


@pytest.mark.parametrize("query", ["page=²", "page=١", "per_page=1_0", "min_score=٠"])
def test_leak_filters_not_in_ascii_digits_are_400(app, exported, query):  # noqa: F811
    client = login(app.test_client(), "lena")
    assert client.get(f"/lead/{_pid(exported)}/leaks?{query}").status_code == 400


@pytest.mark.parametrize("tie", ["٠.٠٣", "0.0_3", "１"])
def test_a_report_tie_not_in_ascii_digits_is_400(app, exported, tie):  # noqa: F811
    client = login(app.test_client(), "lena")
    assert client.get(f"/reports/p/v1/compare?a=runA&b=runB&tie={tie}").status_code == 400


@pytest.mark.parametrize("bad", ["/%0Afoo", "/%0D%0ALocation:%20http://evil", "/%00x", "/a%09b", "/%C2%85x"])
def test_a_next_with_a_control_character_is_dropped(app, exported, bad):  # noqa: F811
    client = app.test_client()
    assert client.get(f"/login?next={bad}").status_code == 200
    page = client.get(f"/login?next={bad}")
    res = client.post(f"/login?next={bad}", data={"username": "alice", "password": "pw-alice-123",
                                                  "csrf_token": csrf(page.data)})
    if res.status_code != 302:  # the fixture's password: log in the usual way instead
        res = post_login(client, "alice")
    assert res.status_code == 302 and "\n" not in res.headers["Location"]
    again = client.get(f"/login?next={bad}")  # logged in: sent on, without the bad next
    assert again.status_code == 302, again.status_code
    assert "foo" not in again.headers["Location"] and "evil" not in again.headers["Location"]


def test_guidelines_over_the_limit_are_413_and_not_stored(app, exported, monkeypatch):  # noqa: F811
    client = login(app.test_client(), "lena")
    pid = _pid(exported)
    token = csrf(client.get(f"/lead/{pid}/adjudicate").data)
    before = _count(exported, GuidelinesVersion)
    monkeypatch.setenv("GOLDEN_MAX_GUIDELINES_BYTES", "1000")
    res = client.post(f"/lead/{pid}/guidelines", data={"text": "# G\n\n" + "é" * 600, "csrf_token": token})
    assert res.status_code == 413 and b"over the limit of 1000 bytes" in res.data
    assert b"GOLDEN_MAX_GUIDELINES_BYTES" in res.data
    assert _count(exported, GuidelinesVersion) == before
    res = client.post(f"/lead/{pid}/guidelines", data={"text": "# G\n\n" + "e" * 900, "csrf_token": token})
    assert res.status_code == 302 and _count(exported, GuidelinesVersion) == before + 1


def test_guidelines_of_the_default_limit_pass_and_over_it_are_413(app, exported):  # noqa: F811
    client = login(app.test_client(), "lena")
    pid = _pid(exported)
    token = csrf(client.get(f"/lead/{pid}/adjudicate").data)
    before = _count(exported, GuidelinesVersion)
    res = client.post(f"/lead/{pid}/guidelines", data={"text": "# G\n\n" + "x" * 1_100_000, "csrf_token": token})
    assert res.status_code == 413, res.status_code
    assert _count(exported, GuidelinesVersion) == before
    res = client.post(f"/lead/{pid}/guidelines", data={"text": "x" * 5_000_000, "csrf_token": token})
    assert res.status_code == 413 and b"GOLDEN_MAX_GUIDELINES_BYTES" in res.data  # werkzeug's bound on a form
    # Up to the CLI's limit, the web app takes them too (in a form, a byte of text may take 3 on the wire).
    res = client.post(f"/lead/{pid}/guidelines", data={"text": "# G\n\n" + "é" * 499_000, "csrf_token": token})
    assert res.status_code == 302, res.data[:300]
    assert _count(exported, GuidelinesVersion) == before + 1


def test_an_information_need_over_the_limit_is_413(app, exported, monkeypatch):  # noqa: F811
    client = login(app.test_client(), "lena")
    pid = _pid(exported)
    token = csrf(client.get(f"/lead/{pid}/adjudicate").data)
    monkeypatch.setenv("GOLDEN_MAX_GUIDELINES_BYTES", "500")
    for field in ("description", "narrative"):
        res = client.post(f"/lead/{pid}/need", data={"qid": "q1", field: "n" * 501, "csrf_token": token})
        assert res.status_code == 413 and b"over the limit of 500 bytes" in res.data, res.data[:300]
    assert _count(exported, QueryNeed) == 0
    res = client.post(f"/lead/{pid}/need", data={"qid": "q1", "description": "n" * 500, "csrf_token": token})
    assert res.status_code == 302 and _count(exported, QueryNeed) == 1


def test_an_adjudication_reason_over_the_limit_is_refused_in_the_app_and_the_cli(app, exported, tmp_path):  # noqa: F811
    from click.testing import CliRunner

    from curation.cli import main

    client = login(app.test_client(), "lena")
    pid = _pid(exported)
    with new_session(exported) as s:
        from curation.store.models import PoolPair

        pair_id = s.exec(select(PoolPair.id)).first()
    token = csrf(client.get(f"/lead/{pid}/adjudicate").data)
    res = client.post(f"/lead/{pid}/adjudicate", data={"pair_id": str(pair_id), "grade": "1",
                                                      "reason": "r" * 10_001, "csrf_token": token})
    assert res.status_code in (413, 422) and b"over the limit of 10000 bytes" in res.data
    url = exported.url.render_as_string(hide_password=False)
    cli = CliRunner().invoke(main, ["labels", "adjudicate", "--db", url, "--project", "p", "--lead", "lena",
                                    "--pair", "q1/q1a",
                                    "--grade", "1", "--reason", "r" * 10_001])
    assert cli.exit_code == 1 and "over the limit of 10000 bytes" in cli.output, cli.output
    assert _count(exported, Adjudication) == 0


@pytest.mark.parametrize("field", ["guidelines", "description", "reason"])
def test_text_with_nul_is_refused_in_the_app(app, exported, field):  # noqa: F811
    client = login(app.test_client(), "lena")
    pid = _pid(exported)
    token = csrf(client.get(f"/lead/{pid}/adjudicate").data)
    counts = [_count(exported, m) for m in (GuidelinesVersion, QueryNeed, Adjudication)]
    if field == "guidelines":
        res = client.post(f"/lead/{pid}/guidelines", data={"text": "# G\n\nbad\x00text", "csrf_token": token})
    elif field == "description":
        res = client.post(f"/lead/{pid}/need", data={"qid": "q1", "description": "a\x00b", "csrf_token": token})
    else:
        with new_session(exported) as s:
            from curation.store.models import PoolPair

            pair_id = s.exec(select(PoolPair.id)).first()
        res = client.post(f"/lead/{pid}/adjudicate", data={"pair_id": str(pair_id), "grade": "1",
                                                          "reason": "a\x00b", "csrf_token": token})
    assert res.status_code in (400, 422) and b"NUL" in res.data, (res.status_code, res.data[:300])
    assert [_count(exported, m) for m in (GuidelinesVersion, QueryNeed, Adjudication)] == counts
