"""No 500 from a request parameter: every route with an integer or float in its path, and
the ids and positions read from query strings and forms, answer 404 (an id that names nothing) or
400 (a number that is not a finite number in range) for values past 64 bits; comparison reports
refuse tie=inf / 1e308 with a 400; project names are checked at creation; and a version of a
project called ``проект€``, one holding ``/`` and one holding a newline (as older stores may have)
can be opened and downloaded, with an RFC 5987 ``filename*``."""

from __future__ import annotations

import io
import re
import urllib.parse
import zipfile

import pytest
from sqlalchemy import text
from werkzeug.routing.converters import IntegerConverter, NumberConverter

from curation.export import versions as export
from curation.judge.assignment import assign
from curation.store.engine import session as new_session
from curation.store.projects import check_project_name, get_project
from judging_app.errors import MAX_STORE_INT
from tests.support.client import csrf, login
from tests.support.judgments import judge
from tests.support.projects import add_users, create_from_files, pairs_project, write_jsonl, write_pair_files

HUGE = [str(2**64), str(MAX_STORE_INT + 1), "9" * 40]
PAIRS = [("q1", "d1"), ("q1", "d2"), ("q2", "d3")]


@pytest.fixture
def exported(engine, tmp_path):
    """Project "p" pooled from runA and runB, judged in part and exported as v1; lena is its lead,
    alice a judge with work in it."""
    pool = [{"qid": q, "docid": f"{q}{d}", "order": i, "systems": {"runA": i + 1, "runB": 3 - i}}
            for q in ("q1", "q2") for i, d in enumerate("abc")]
    paths = write_pair_files(tmp_path / "in", [(p["qid"], p["docid"]) for p in pool],
                             runs=[{"name": "runA"}, {"name": "runB"}], depth=3)
    write_jsonl(paths["pool"], pool)
    create_from_files(engine, "p", paths)
    add_users(engine, alice="judge", lena="lead")
    with new_session(engine) as s:
        project = get_project(s, "p")
        assign(s, project, ["alice"], overlap=0, hold=False)
    judge(engine, tmp_path, "alice", {("q1", "q1a"): 2, ("q1", "q1b"): 0})
    with new_session(engine) as s:
        export.export_version(s, get_project(s, "p"), "v1", out_dir=tmp_path / "out", allow_incomplete=True)
    return engine


def _routes_with_numbers(app):
    """(rule, converter of each number argument) for every rule with an int or float argument."""
    out = []
    for rule in app.url_map.iter_rules():
        numeric = {arg: "int" if isinstance(conv, IntegerConverter) else "float"
                   for arg, conv in rule._converters.items() if isinstance(conv, NumberConverter)}
        if numeric:
            out.append((rule, numeric))
    return out


def test_every_numeric_route_is_enumerated(app):
    rules = {r.rule for r, _ in _routes_with_numbers(app)}
    # the judging page, the lead pages and the leak decisions at least
    assert {"/projects/<int:project_id>/judge", "/lead/<int:project_id>",
            "/lead/<int:project_id>/leaks/<int:finding_id>"} <= rules


def _build(rule, numeric: dict[str, str], big: str) -> str:
    values = {}
    for arg in rule.arguments:
        if arg in numeric:
            values[arg] = big if numeric[arg] == "int" else "1e400"
        else:
            values[arg] = "x"
    path = rule.rule
    for arg, value in values.items():
        path = re.sub(rf"<(?:[a-z]+:)?{arg}>", value, path)
    return path


@pytest.mark.parametrize("big", HUGE)
def test_every_route_with_a_number_answers_404_past_64_bits(app, exported, big):
    """Enumerates app.url_map: each route with an integer or float argument, called with a number
    past the store's integers (and each method it accepts), is a 404, never a 500."""
    client = app.test_client()
    login(client, "lena")  # a lead: every route is open to her
    app.config["WTF_CSRF_ENABLED"] = False  # the parameter is checked before the form's token matters
    checked = 0
    for rule, numeric in _routes_with_numbers(app):
        path = _build(rule, numeric, big)
        for method in sorted(rule.methods - {"HEAD", "OPTIONS"}):
            res = client.open(path, method=method, data={"decision": "keep"})
            assert res.status_code == 404, (method, path, res.status_code, res.data[:200])
            checked += 1
    assert checked >= 8


@pytest.mark.parametrize("big", HUGE)
def test_ids_and_positions_in_query_strings_and_forms_past_64_bits(app, exported, big):
    client = app.test_client()
    with new_session(exported) as s:
        pid = get_project(s, "p").id
    login(client, "alice")
    assert client.get(f"/projects/{pid}/judge?at={big}").status_code == 404
    assert client.get(f"/projects/{pid}/judge?at=-{big}").status_code == 404
    assert client.get(f"/projects/{pid}/judge?before={big}").status_code == 200  # no earlier pair: the current one
    client = app.test_client()
    login(client, "lena")
    assert client.get(f"/lead/{pid}/adjudicate?pair={big}").status_code in (200, 404)
    page = client.get(f"/lead/{pid}/adjudicate")
    token = csrf(page.data)
    res = client.post(f"/lead/{pid}/adjudicate",
                      data={"pair_id": big, "grade": "1", "reason": "r", "csrf_token": token})
    assert res.status_code == 400
    res = client.post(f"/lead/{pid}/guidelines", data={"text": "# New\n\nrules", "back": big, "csrf_token": token})
    assert res.status_code == 302  # the guidelines are saved; the unusable "back" is dropped
    assert res.headers["Location"].endswith(f"/lead/{pid}/adjudicate")


@pytest.mark.parametrize("big", HUGE)
def test_the_unsure_queue_need_form_and_progress_page_refuse_numbers_past_their_range(app, exported, big):
    """The unsure queue, the need form and the progress page take ids and minutes like the others: no 500."""
    client = app.test_client()
    with new_session(exported) as s:
        pid = get_project(s, "p").id
    login(client, "lena")
    assert client.get(f"/lead/{pid}/unsure?pair={big}").status_code == 200  # as an unknown pair: the queue's head
    token = csrf(client.get(f"/lead/{pid}/unsure").data)
    res = client.post(f"/lead/{pid}/unsure", data={"pair_id": big, "grade": "1", "csrf_token": token})
    assert res.status_code == 400
    res = client.post(f"/lead/{pid}/need", data={"qid": "q1", "description": "what", "pair": big, "csrf_token": token})
    assert res.status_code in (302, 400)
    assert client.get(f"/lead/{pid}/progress?idle={big}").status_code == 400
    assert client.get(f"/lead/{pid}/progress?idle=60").status_code == 200


@pytest.mark.parametrize("query", ["usable=inf", "usable=nan", "marginal=-inf", "usable=1e308", "usable=1e400",
                                   "cut=" + str(2**70)])
def test_agreement_settings_out_of_range_are_400(app, exported, query):
    client = app.test_client()
    with new_session(exported) as s:
        pid = get_project(s, "p").id
    login(client, "lena")
    assert client.get(f"/lead/{pid}?{query}").status_code == 400


@pytest.mark.parametrize("tie", ["inf", "-inf", "nan", "1e308", "1e400", "-0.5", "0"])
def test_a_report_with_a_non_finite_or_out_of_range_tie_is_400(app, exported, tie):
    client = app.test_client()
    login(client, "lena")
    res = client.get(f"/reports/p/v1/compare?a=runA&b=runB&tie={tie}")
    assert res.status_code == 400, res.data[:300]
    assert b"tie" in res.data


@pytest.mark.parametrize("name", ["a/b", "a\\b", "line\nbreak", "tab\there", "zero\u200bwidth", "x" * 101, "  "])
def test_project_names_are_checked_at_creation(name, engine, tmp_path):
    with pytest.raises(ValueError, match="name"):
        check_project_name(name)
    with pytest.raises(ValueError, match="name"):
        pairs_project(engine, tmp_path, PAIRS, name=name)


def test_a_unicode_project_name_is_accepted(engine, tmp_path):
    pairs_project(engine, tmp_path, PAIRS, name="проект€ 2026")
    with new_session(engine) as s:
        assert get_project(s, "проект€ 2026").name == "проект€ 2026"


@pytest.mark.parametrize("name", ["проект€", "team/recipes", "two\nlines", 'quo"te'])
def test_any_project_name_downloads_its_zip(app, exported, name):
    """Names an older store may hold (the ``/`` and the newline are refused for new projects): the
    version page and the zip are reachable through the links the versions page gives."""
    with exported.begin() as conn:
        conn.execute(text("UPDATE project SET name = :n WHERE name = 'p'"), {"n": name})
    client = app.test_client()
    login(client, "lena")
    listing = client.get("/versions/").data.decode()
    links = re.findall(r'href="(/versions/[^"]+)"', listing)
    detail = next(link for link in links if not link.endswith(".zip"))
    download = next(link for link in links if link.endswith(".zip"))
    assert client.get(detail).status_code == 200
    res = client.get(download)
    assert res.status_code == 200, res.data[:300]
    with zipfile.ZipFile(io.BytesIO(res.data)) as zf:
        assert "v1/qrels.txt" in zf.namelist()
    disposition = res.headers["Content-Disposition"]
    assert "\n" not in disposition and disposition.startswith("attachment;")
    safe = name.replace("/", "_").replace("\n", "_").replace('"', "_")
    if safe.isascii():
        assert f"filename={safe}-v1.zip" in disposition or f'filename="{safe}-v1.zip"' in disposition
    else:  # RFC 5987: the UTF-8 name, percent-encoded, as filename*
        assert f"filename*=UTF-8''{urllib.parse.quote(safe)}-v1.zip" in disposition
    # the report picker of the same version is reachable too
    assert client.get(detail.replace("/versions/", "/reports/", 1)).status_code == 200
