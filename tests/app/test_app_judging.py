"""The judging app through Flask's test client, on SQLite and PostgreSQL (the ``engine`` fixture):
login, CSRF, access to one's own pairs only, blindness (no provenance, no other judge's label),
idempotent answers, escaping, and the page's parts (grades, guidelines, progress, keys)."""

from __future__ import annotations

import html
import re
from importlib.resources import files
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlmodel import select

from curation.cli import main
from curation.store.engine import make_engine
from curation.store.engine import session as new_session
from curation.store.migrate import SchemaError
from curation.store.models import Assignment, Document, Judgment, PoolPair, User
from judging_app import create_app
from tests.support.client import login, post_login
from tests.support.projects import GUIDELINES, PASSWORD, RUN_NAMES, XSS_TEXT

HTMX = {"HX-Request": "true"}


@pytest.fixture
def setup(project):
    """conftest.py's small judging project, under the name these tests use."""
    return project


def field(body: bytes | str, name: str) -> str:
    text = body.decode() if isinstance(body, bytes) else body
    match = re.search(rf'name="{name}" value="([^"]*)"', text)
    assert match, f"no {name} field in the page"
    return html.unescape(match.group(1))


def doc_text(body: bytes) -> str:
    """The document's text as the page shows it (the query's words are wrapped in <mark>)."""
    inner = re.search(r'id="doc-text">(.*?)</div>', body.decode(), re.S).group(1)
    return re.sub(r'</?mark[^>]*>', "", inner)


def judge_page(client, setup, **params):
    return client.get(f"/projects/{setup.project_id}/judge", query_string=params)


def answer(client, setup, page_body, headers=None, **data):
    data.setdefault("token", field(page_body, "token"))
    data.setdefault("csrf_token", field(page_body, "csrf_token"))
    return client.post(f"/projects/{setup.project_id}/judge", data=data, headers=headers or {})


def judgments(engine, judge: str | None = None) -> list[Judgment]:
    with new_session(engine) as db:
        stmt = select(Judgment).order_by(Judgment.id)
        if judge:
            stmt = stmt.join(User, User.id == Judgment.judge_id).where(User.name == judge)
        return list(db.exec(stmt))


def test_pages_need_a_login(app, setup, engine):
    client = app.test_client()
    response = judge_page(client, setup)
    assert response.status_code == 302 and "/login" in response.headers["Location"]
    response = client.get(f"/projects/{setup.project_id}/judge", headers=HTMX)
    assert response.status_code == 401 and "/login" in response.headers["HX-Redirect"]
    # an anonymous answer is refused before anything is read or written
    response = client.post(f"/projects/{setup.project_id}/judge", data={"token": "x", "grade": "1"})
    assert response.status_code in (302, 400)
    assert judgments(engine) == []
    assert post_login(client, "alice", "wrong-password").status_code == 401
    assert post_login(client, "nobody").status_code == 401
    response = post_login(client, "alice")
    assert response.status_code == 302
    assert judge_page(client, setup).status_code == 200
    client.post("/logout", data={"csrf_token": field(judge_page(client, setup).data, "csrf_token")})
    assert judge_page(client, setup).status_code == 302


def test_a_disabled_judge_is_logged_out_at_the_next_request(app, setup, engine):
    from curation.store.users import get_user, set_active

    client = app.test_client()
    login(client, "alice")
    page = judge_page(client, setup)
    assert page.status_code == 200 and b"alice" in page.data
    with new_session(engine) as db:
        set_active(db, get_user(db, "alice"), False)
    assert judge_page(client, setup).status_code == 302  # the signed cookie alone is not enough
    response = answer(client, setup, page.data, grade="1", headers=HTMX)
    assert response.status_code == 401 and judgments(engine) == []
    with new_session(engine) as db:
        set_active(db, get_user(db, "alice"), True)
    assert judge_page(client, setup).status_code == 302  # enabling ends the old session too
    login(client, "alice")
    assert judge_page(client, setup).status_code == 200


def test_answers_need_the_csrf_token(app, setup, engine):
    client = app.test_client()
    login(client, "alice")
    page = judge_page(client, setup)
    response = client.post(f"/projects/{setup.project_id}/judge",
                           data={"token": field(page.data, "token"), "grade": "2"})
    assert response.status_code == 400 and b"Page expired" in response.data
    response = client.post(
        f"/projects/{setup.project_id}/judge", headers=HTMX,
        data={"token": field(page.data, "token"), "grade": "2", "csrf_token": "forged"},
    )
    assert response.status_code == 400
    assert response.headers["HX-Retarget"] == "#messages" and b"<html" not in response.data
    assert judgments(engine) == []
    # the same answer with the token in htmx's header (hx-headers on <body>) is accepted
    response = client.post(
        f"/projects/{setup.project_id}/judge", data={"token": field(page.data, "token"), "grade": "2"},
        headers={**HTMX, "X-CSRFToken": field(page.data, "csrf_token")},
    )
    assert response.status_code == 200
    assert [(j.grade, j.skipped) for j in judgments(engine)] == [(2, False)]


def test_login_cannot_be_forged_either(app):
    client = app.test_client()
    response = client.post("/login", data={"username": "alice", "password": PASSWORD})
    assert response.status_code == 400
    assert client.get("/").status_code == 302  # still logged out


def test_a_label_moves_on_and_a_double_submit_records_once(app, setup, engine):
    client = app.test_client()
    login(client, "alice")
    page = judge_page(client, setup)
    first_doc = doc_text(page.data)
    response = answer(client, setup, page.data, grade="1")
    assert response.status_code == 303  # without htmx: post/redirect/get
    again = answer(client, setup, page.data, grade="1")  # the browser resends the same form
    assert again.status_code == 303
    rows = judgments(engine, "alice")
    assert len(rows) == 1 and rows[0].grade == 1 and not rows[0].unsure
    assert rows[0].shown_at is not None and rows[0].answered_at >= rows[0].shown_at
    assert rows[0].guidelines_version_id is not None
    nxt = judge_page(client, setup)
    assert doc_text(nxt.data) != first_doc
    assert b"1 / " in nxt.data and b"left at your pace" in nxt.data  # progress counts the label

    # htmx: the answer returns only the swappable part, with the next pair's token
    response = answer(client, setup, nxt.data, headers=HTMX, grade="0")
    assert response.status_code == 200
    body = response.data.decode()
    assert body.lstrip().startswith('<div id="pair"') and "<html" not in body
    assert field(body, "token") != field(nxt.data, "token")
    assert "2 / " in body
    # a double click: the same token twice in a row records one judgment
    answer(client, setup, body, headers=HTMX, grade="2")
    answer(client, setup, body, headers=HTMX, grade="2")
    assert [j.grade for j in judgments(engine, "alice")] == [1, 0, 2]


def test_skip_unsure_and_back(app, setup, engine):
    client = app.test_client()
    login(client, "alice")
    page = judge_page(client, setup)
    position = int(re.search(r"before=(\d+)", page.data.decode()).group(1))
    # an unsure answer without the judge's best grade is refused, and records nothing
    assert answer(client, setup, page.data, action="unsure", note="is a recipe blog a source?").status_code == 400
    assert judgments(engine, "alice") == []
    answer(client, setup, page.data, action="unsure", note="is a recipe blog a source?", grade="1")
    page2 = judge_page(client, setup)
    answer(client, setup, page2.data, action="skip")
    rows = judgments(engine, "alice")
    assert [(j.grade, j.unsure, j.skipped, j.note) for j in rows] == [
        (1, True, False, "is a recipe blog a source?"),
        (None, False, True, None),
    ]
    # back from the third pair: the skipped one, then the unsure one with its note kept
    page3 = judge_page(client, setup)
    back = client.get(f"/projects/{setup.project_id}/judge",
                      query_string={"before": re.search(r"before=(\d+)", page3.data.decode()).group(1)}, headers=HTMX)
    assert back.status_code == 200 and doc_text(back.data) == doc_text(page2.data)
    back2 = client.get(f"/projects/{setup.project_id}/judge",
                       query_string={"before": re.search(r"before=(\d+)", back.data.decode()).group(1)})
    assert doc_text(back2.data) == doc_text(page.data)
    assert b"You answered this pair before" in back2.data and b"(unsure)" in back2.data
    assert b"is a recipe blog a source?" in back2.data
    assert f"before={position}".encode() in back2.data
    # relabelling appends a row; the history is kept
    answer(client, setup, back2.data, grade="2")
    assert [j.grade for j in judgments(engine, "alice")] == [1, None, 2]
    assert b"out of range" not in judge_page(client, setup).data


def test_a_grade_outside_the_scale_is_refused(app, setup, engine):
    client = app.test_client()
    login(client, "alice")
    page = judge_page(client, setup)
    assert answer(client, setup, page.data, grade="7").status_code == 400
    assert answer(client, setup, page.data, grade="x").status_code == 400
    assert judgments(engine) == []


def test_a_judge_cannot_reach_another_judges_pairs(app, setup, engine):
    alice, bob = app.test_client(), app.test_client()
    login(alice, "alice")
    login(bob, "bob")
    bob_page = judge_page(bob, setup)
    alice_page = judge_page(alice, setup)
    # alice posts an answer carrying bob's token (with her own valid CSRF token)
    response = answer(alice, setup, alice_page.data, token=field(bob_page.data, "token"), grade="2")
    assert response.status_code == 404
    assert judgments(engine) == []
    # alice edits the URL to one of bob's main pairs, or to a pair that does not exist
    with new_session(engine) as db:
        ids = dict(db.exec(select(User.name, User.id)).all())

        def queue(name):  # position -> docid of a judge's main pairs
            return {
                a.position: d for a, d in db.exec(
                    select(Assignment, Document.docid).join(PoolPair, PoolPair.id == Assignment.pair_id)
                    .join(Document, Document.id == PoolPair.document_id)
                    .where(Assignment.judge_id == ids[name], Assignment.kind == "main"))
            }

        bob_queue, alice_queue = queue("bob"), queue("alice")
    # positions are per judge: where alice has none, bob's position is a 404; where she has one,
    # she gets her own pair there; never bob's document
    for position, docid in bob_queue.items():
        response = judge_page(alice, setup, at=position)
        assert docid.encode() not in response.data
        if position in alice_queue:
            assert response.status_code == 200 and alice_queue[position].encode() in response.data
        else:
            assert response.status_code == 404
            assert b"doc-text" not in response.data and b'name="token"' not in response.data
    assert judge_page(alice, setup, at=999_999_999).status_code == 404
    # a project she has no work in, and one that does not exist, look the same
    assert alice.get("/projects/999/judge").status_code == 404
    assert alice.get("/projects/999/guidelines").status_code == 404
    # a lead with no assignments sees no pair either: a page that sends her to the lead pages
    lead = app.test_client()
    login(lead, "lena")
    response = judge_page(lead, setup)
    assert b"No pairs of yours to judge here" in response.data and b'name="token"' not in response.data
    assert lead.get("/").headers["Location"].endswith("/lead/")  # she lands on the lead pages
    assert alice.get("/").headers["Location"].endswith(f"/projects/{setup.project_id}/judge")


def test_no_response_reveals_provenance_or_other_judges_labels(app, setup, engine):
    bob = app.test_client()
    login(bob, "bob")
    secret_note = "BOB-ONLY-NOTE-31337"
    page = judge_page(bob, setup)
    answer(bob, setup, page.data, action="unsure", note=secret_note, grade="2")
    assert judgments(engine, "bob")[0].note == secret_note

    alice = app.test_client()
    login(alice, "alice")
    seen = [alice.get("/").data, alice.get(f"/projects/{setup.project_id}/guidelines").data]
    forward = []  # pairs offered to her as new (not reached with the back key)
    page = judge_page(alice, setup)
    for step in range(12):  # walk her whole queue: pages, htmx partials, back
        seen.append(page.data)
        forward.append(page.data.decode())
        if b'name="token"' not in page.data:
            break
        if step % 3 == 2:
            back = re.search(r'href="([^"]*before=\d+)"', page.data.decode()).group(1)
            seen.append(alice.get(html.unescape(back), headers=HTMX).data)
        page = answer(alice, setup, page.data, headers=HTMX, grade=str(step % 3))
    else:
        pytest.fail("alice's queue did not end")
    assert b"All done" in seen[-1]
    for body in seen:
        text = body.decode()
        for run in RUN_NAMES:
            assert run not in text
        assert "systems" not in text and "rank" not in text.lower()
        assert secret_note not in text
    # the overlap pair bob labelled is offered to alice as new: his label is not "hers before"
    assert not any("You answered this pair before" in text for text in forward)


def test_untrusted_text_is_escaped_and_the_page_has_its_parts(app, setup):
    client = app.test_client()
    login(client, "alice")
    # find the document carrying the script: walk until it is on screen
    page = judge_page(client, setup)
    for _ in range(20):
        if b"Cooking tips." in page.data:
            break
        page = answer(client, setup, page.data, headers=HTMX, action="skip")
    else:
        pytest.fail("the document with a <script> was never shown")
    full = judge_page(client, setup)
    body = full.data.decode()
    assert html.escape(XSS_TEXT, quote=False) in body.replace("&#34;", '"').replace("&#39;", "'")
    assert "<script>window.__xss" not in body and "<img src=x" not in body
    # grade names and descriptions, the guidelines (safe Markdown subset), a progress bar, the keys
    for name in ("Not relevant", "Partially relevant", "Highly relevant", "On topic, but answers only part"):
        assert name in body
    assert "<strong>document</strong>" in body  # Markdown rendered
    assert "&lt;script&gt;window.__xss = 3" in body  # raw HTML in the guidelines escaped
    assert 'href="javascript:' not in body
    assert "<progress" in body
    for key in ("<kbd>B</kbd>", "<kbd>S</kbd>", "<kbd>U</kbd>", "<kbd>G</kbd>", "<kbd>0</kbd>", "<kbd>2</kbd>"):
        assert key in body
    assert "Content-Security-Policy" in full.headers and "script-src 'self'" in full.headers["Content-Security-Policy"]
    assert GUIDELINES.splitlines()[0].lstrip("# ") in body


def test_htmx_is_served_from_the_wheel(app):
    response = app.test_client().get("/vendor/htmx.min.js")
    import js_lib_htmx

    on_disk = Path(js_lib_htmx.__file__).parent / "static" / "htmx" / "htmx.min.js"
    assert response.status_code == 200 and response.mimetype == "text/javascript"
    assert response.data == on_disk.read_bytes()
    assert b"htmx" in response.data[:2000]
    again = app.test_client().get("/vendor/htmx.min.js", headers={"If-None-Match": response.headers["ETag"]})
    assert again.status_code == 304
    assert files("js_lib_htmx").joinpath("static/htmx/htmx.min.js").is_file()


def test_errors_render_as_pages_or_htmx_messages(app, setup):
    client = app.test_client()
    login(client, "alice")
    page = client.get("/no/such/page")
    assert page.status_code == 404 and b"<html" in page.data and b"There is nothing here" in page.data
    partial = client.get("/no/such/page", headers=HTMX)
    assert partial.status_code == 404 and b"<html" not in partial.data and partial.headers["HX-Reswap"] == "innerHTML"


def test_the_app_refuses_an_out_of_date_schema(db_url):
    engine = make_engine(db_url)
    try:
        with pytest.raises(SchemaError, match="golden admin db upgrade"):
            create_app({"DATABASE_URL": db_url, "SECRET_KEY": "x"})
    finally:
        engine.dispose()
    result = CliRunner().invoke(main, ["serve", "--db", db_url, "--port", "0"])
    assert result.exit_code == 1 and "golden admin db upgrade" in result.output


def test_serve_help_has_an_example():
    result = CliRunner().invoke(main, ["serve", "--help"])
    assert result.exit_code == 0 and "golden serve --db" in result.output
    assert "granian" in result.output and "gunicorn" in result.output


def test_serve_says_when_the_port_is_taken(engine):
    import socket

    url = engine.url.render_as_string(hide_password=False)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        result = CliRunner().invoke(main, ["serve", "--db", url, "--port", str(port)])
    assert result.exit_code == 1 and f"cannot listen on 127.0.0.1:{port}" in result.output and "--port" in result.output


def test_serving_a_missing_store_says_how_to_create_it_and_creates_nothing(tmp_path):
    from click.testing import CliRunner

    from curation.cli import main

    missing = tmp_path / "old.db"
    result = CliRunner().invoke(main, ["serve", "--db", str(missing), "--port", "0"])
    assert result.exit_code != 0
    assert "golden admin db upgrade" in result.output
    assert not missing.exists()
