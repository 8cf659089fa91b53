"""The audit trail in the store and through `golden admin audit`, on SQLite and PostgreSQL:
releases, exports, adjudications and user changes made by commands are recorded with who, when and
from where (cli:USER@HOST); an event is stored with the change it describes (a failed change leaves
none); and the store keeps working for a store migrated from before (session versions start at 0,
the signing key is made)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from click.testing import CliRunner
from sqlalchemy import text

from curation.cli import audit as audit_cli
from curation.cli import main
from curation.store import audit
from curation.store.engine import make_engine
from curation.store.engine import session as new_session
from curation.store.migrate import upgrade
from curation.store.models import utcnow
from curation.store.projects import get_project
from curation.store.users import add_user, get_user
from tests.support.judgments import judge
from tests.support.projects import PASSWORD, pairs_project


def run(db_url: str, *args: str) -> str:
    res = CliRunner().invoke(main, [*args, "--db", db_url])
    assert res.exit_code == 0, res.output
    return res.output


def url_of(engine) -> str:
    return engine.url.render_as_string(hide_password=False)


def events(engine, **kwargs):
    with new_session(engine) as s:
        return audit.list_audit(s, **kwargs)


def test_the_cli_knows_every_action():
    assert audit_cli.ACTION_NAMES == tuple(audit.ACTIONS)


def test_release_export_and_adjudication_commands_are_audited(engine, tmp_path):
    pairs_project(engine, tmp_path / "in", [("q1", "d1"), ("q1", "d2")])
    judge(engine, tmp_path, "alice", {("q1", "d1"): 2, ("q1", "d2"): 0})
    judge(engine, tmp_path, "bob", {("q1", "d1"): 0, ("q1", "d2"): 0})
    url = url_of(engine)
    # two shared pairs are too few for a usable verdict: the release is forced, and says why
    run(url, "judging", "release", "--lead", "lena", "--agreement", "0.5", "--force", "--reason", "pilot")
    run(url, "labels", "adjudicate", "--lead", "lena", "--pair", "q1/d1", "--grade", "1", "--reason", "partly")
    run(url, "export", "create", "--version", "v1", "--out", str(tmp_path / "out"), "--by", "ana")
    run(url, "export", "create", "--version", "v1", "--out", str(tmp_path / "out2"), "--by",
        "ana")  # same state: written again, and recorded
    rows = {e.action: e for e in events(engine)}  # newest first: the first event of each kind wins
    assert {"release", "adjudicate", "export"} <= set(rows)
    assert rows["release"].actor == "lena" and rows["release"].target == "p"
    assert json.loads(rows["release"].detail) == {"agreement": 0.5, "forced": "pilot"}
    assert rows["adjudicate"].actor == "lena" and json.loads(rows["adjudicate"].detail) == {"grade": 1}
    assert rows["export"].actor == "ana" and rows["export"].target == "p v1"
    again, first = events(engine, action="export")
    assert json.loads(again.detail)["written_again"].endswith("out2/v1") and "written_again" not in first.detail
    with new_session(engine) as s:
        pid = get_project(s, "p").id
    for e in (rows["release"], rows["adjudicate"], rows["export"]):
        assert e.address == audit.cli_origin() and e.address.startswith("cli:")
        assert e.project_id == pid
        assert abs(e.at - utcnow()) < timedelta(minutes=5)


def test_a_refused_change_leaves_no_event(engine, tmp_path):
    pairs_project(engine, tmp_path / "in", [("q1", "d1")])
    res = CliRunner().invoke(main, ["judging", "release", "--lead", "alice", "--db", url_of(engine)])  # a judge cannot
    assert res.exit_code == 1
    res = CliRunner().invoke(main, ["labels", "adjudicate", "--lead", "lena", "--pair", "q1/d1", "--grade", "7",
                                    "--reason", "x", "--db", url_of(engine)])
    assert res.exit_code == 1
    assert events(engine, action="release") == [] and events(engine, action="adjudicate") == []


def test_user_commands_are_audited_and_golden_audit_shows_them(engine):
    url = url_of(engine)
    run(url, "admin", "user", "add", "alice", "--role", "judge", "--password", PASSWORD)
    run(url, "admin", "user", "role", "alice", "lead")
    run(url, "admin", "user", "role", "alice", "lead")  # no change: no event
    run(url, "admin", "user", "disable", "alice")
    run(url, "admin", "user", "enable", "alice")
    run(url, "admin", "user", "passwd", "alice", "--password", "another-password")
    run(url, "admin", "user", "logout", "alice")
    got = [e.action for e in events(engine, actor="alice")]
    assert got == ["sessions_ended", "password_changed", "user_enabled", "user_disabled", "role_changed",
                   "user_added"]
    out = json.loads(run(url, "admin", "audit", "--json", "--user", "alice"))
    role = next(e for e in out["events"] if e["action"] == "role_changed")
    assert role["detail"] == {"from": "judge", "to": "lead"} and role["target"] == "alice"
    assert role["address"].startswith("cli:") and role["at"].endswith("+00:00")
    text_out = run(url, "admin", "audit", "--action", "user_disabled")
    assert "user_disabled" in text_out and "alice" in text_out and "from cli:" in text_out
    assert run(url, "admin", "audit", "--action", "release").strip() == "no audit events of that kind"
    res = CliRunner().invoke(main, ["admin", "audit", "--action", "nonsense", "--db", url])
    assert res.exit_code == 2


def test_user_list_shows_roles_states_and_sessions(engine):
    url = url_of(engine)
    run(url, "admin", "user", "add", "alice", "--role", "judge", "--password", PASSWORD)
    run(url, "admin", "user", "add", "lena", "--role", "lead", "--password", PASSWORD)
    run(url, "admin", "user", "disable", "alice")
    from curation.store.sessions import start_session

    with new_session(engine) as s:
        start_session(s, get_user(s, "lena"), address="10.1.2.3")
    rows = {r["name"]: r for r in json.loads(run(url, "admin", "user", "list", "--json"))}
    assert rows["alice"]["active"] is False and rows["alice"]["sessions"] == 0
    assert rows["lena"]["sessions"] == 1 and rows["lena"]["last_address"] == "10.1.2.3"
    listing = run(url, "admin", "user", "list")
    assert "(disabled)" in listing and "1 session" in listing


def test_unknown_actions_are_refused(engine):
    with new_session(engine) as s, pytest.raises(ValueError, match="action"):
        audit.record_audit(s, "made-up")


def test_a_store_from_before_upgrades_keeping_its_users(tmp_path):
    """A store at revision 0001 with users: after `golden admin db upgrade` the users log in as before
    (session version 0) and the store has its own signing key."""
    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = make_engine(url)
    try:
        upgrade(engine, "0001")
        with engine.begin() as conn:
            conn.execute(text("INSERT INTO \"user\" (name, role, password_hash, active, created_at) "
                              "VALUES ('old', 'judge', 'x', 1, '2026-01-01 00:00:00.000000')"))
            conn.execute(text("INSERT INTO project (name, scale, grades_json, hold_main, created_at) "
                              "VALUES ('team/old\nname', '0-2', '[]', 0, '2026-01-01 00:00:00.000000')"))
        run(url, "admin", "db", "upgrade")
        with engine.connect() as conn:
            assert conn.execute(text("SELECT session_version FROM \"user\" WHERE name = 'old'")).scalar() == 0
            assert len(conn.execute(text("SELECT value FROM storesetting")).scalar()) == 64
        with new_session(engine) as s:
            assert get_project(s, "team/old\nname").name == "team/old\nname"  # refused today, kept working
            add_user(s, "new", password=PASSWORD)
    finally:
        engine.dispose()


def test_golden_audit_prints_one_line_per_event(engine):
    with new_session(engine) as s:
        audit.record_audit(s, "login_failed", target="two\nlines", address="10.0.0.1", commit=True)
    out = run(url_of(engine), "admin", "audit")
    assert out.count("\n") == 1 and "two\\nlines" in out and "from 10.0.0.1" in out


def test_old_login_failures_are_forgotten_at_the_next_login(engine):
    from curation.store import throttle

    day_ago = utcnow() - timedelta(days=2)
    with new_session(engine) as s:
        throttle.record_failure(s, throttle.keys_for("ghost", "10.0.0.1"), now=day_ago)
        throttle.record_failure(s, throttle.keys_for("alice", "10.0.0.2"))
        throttle.record_success(s, "bob")
    with engine.connect() as conn:
        keys = set(conn.execute(text("SELECT key FROM loginthrottle")).scalars())
    assert keys == {"account:alice", "address:10.0.0.2", "pair:alice|10.0.0.2"}
