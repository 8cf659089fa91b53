"""Accounts and sessions through Flask's test client, on SQLite and PostgreSQL: a cookie
stops working after logout, a password change, a role change, disable and enable, and a lead's "end
sessions"; sessions expire when idle and absolutely; a cookie of another store is refused; failed
logins are throttled (429 + Retry-After, back-off doubling per account and address, no password
hash while locked, the same for unknown names; tests/app/test_lockout.py has the rest);
--secure-cookies and --proxy-headers; and every one of these lands in the audit trail that admins
see in the app and with `golden admin audit`."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from click.testing import CliRunner
from sqlalchemy import text

import curation.store.users as users_module
from curation.cli import main
from curation.store.engine import session as new_session
from curation.store.models import utcnow
from curation.store.users import add_user, get_user, set_role
from tests.support.client import app_on, csrf, login, post_login
from tests.support.projects import PASSWORD, add_users


@pytest.fixture
def staff(engine):
    """alice and bob (judges), lena (lead), root (admin): no project needed for accounts."""
    add_users(engine, alice="judge", bob="judge", lena="lead", root="admin")
    return engine


def client_from(app, environ: dict):
    """A test client whose requests carry ``environ`` (e.g. another REMOTE_ADDR, proxy headers)."""
    client = app.test_client()
    client.environ_base.update(environ)
    return client


def cli(db_url: str, *args: str):
    res = CliRunner().invoke(main, [*args, "--db", db_url])
    assert res.exit_code == 0, res.output
    return res.output


def db_url_of(engine) -> str:
    return engine.url.render_as_string(hide_password=False)


def cookie_of(client) -> str:
    cookie = client.get_cookie("session")
    assert cookie is not None
    return cookie.value


def with_cookie(app, value: str):
    """A fresh client carrying only this session cookie (an attacker's copy of it)."""
    other = app.test_client()
    other.set_cookie("session", value)
    return other


def signed_in(client) -> bool:
    res = client.get("/admin/users")
    return res.status_code in (200, 403)  # a judge is signed in but may not see the page


def logout(client):
    page = client.get("/admin/users") if signed_in(client) else client.get("/login")
    return client.post("/logout", data={"csrf_token": csrf(page.data)})


# --------------------------------------------------------------------------------- ending sessions


def test_logout_ends_the_session_a_copied_cookie_included(app, staff):
    client = login(app.test_client(), "lena")
    stolen = cookie_of(client)
    other_device = login(app.test_client(), "lena")
    assert signed_in(with_cookie(app, stolen))
    assert logout(client).status_code == 302
    assert not signed_in(with_cookie(app, stolen))  # the old cookie, replayed, is refused
    assert not signed_in(other_device)  # logout ends every session of the user
    assert signed_in(login(app.test_client(), "lena"))


@pytest.mark.parametrize("change", ["passwd", "role", "disable", "enable", "logout"])
def test_user_commands_end_the_users_sessions(app, staff, change):
    client = login(app.test_client(), "alice")
    stolen = cookie_of(client)
    bob = login(app.test_client(), "bob")
    url = db_url_of(staff)
    if change == "passwd":
        cli(url, "admin", "user", "passwd", "alice", "--password", "a-new-long-password")
    elif change == "role":
        cli(url, "admin", "user", "role", "alice", "lead")
    elif change == "disable":
        cli(url, "admin", "user", "disable", "alice")
    elif change == "enable":
        cli(url, "admin", "user", "disable", "alice")
        cli(url, "admin", "user", "enable", "alice")
    else:
        assert "ended 1 session of alice" in cli(url, "admin", "user", "logout", "alice")
    assert not signed_in(client) and not signed_in(with_cookie(app, stolen))
    assert signed_in(bob)  # other users are untouched
    if change == "passwd":
        assert post_login(app.test_client(), "alice").status_code == 401
        assert post_login(app.test_client(), "alice", "a-new-long-password").status_code == 302
    elif change == "disable":
        assert post_login(app.test_client(), "alice").status_code == 401
    else:
        assert post_login(app.test_client(), "alice").status_code == 302
    if change == "role":  # the new role is in force at the next login
        assert login(app.test_client(), "alice").get("/admin/users").status_code == 200


def test_a_role_change_in_the_store_ends_sessions(app, staff):
    client = login(app.test_client(), "lena")
    assert client.get("/admin/users").status_code == 200
    with new_session(staff) as s:
        assert set_role(s, get_user(s, "lena"), "judge")
    assert client.get("/admin/users").status_code == 302  # not a 403 with a stale lead session: logged out


def test_a_lead_ends_a_judges_sessions_from_the_app(app, staff):
    alice = login(app.test_client(), "alice")
    lead = login(app.test_client(), "lena")
    page = lead.get("/admin/users")
    assert page.status_code == 200 and b"alice" in page.data
    with new_session(staff) as s:
        alice_id, root_id = get_user(s, "alice").id, get_user(s, "root").id
    login(app.test_client(), "root")
    res = lead.post(f"/admin/users/{alice_id}/end-sessions", data={"csrf_token": csrf(page.data)})
    assert res.status_code == 302
    assert "Ended 1 session of alice" in lead.get("/admin/users").data.decode()
    assert not signed_in(alice)
    # a lead may not end an admin's sessions; a judge may not open the page at all; CSRF is checked
    assert lead.post(f"/admin/users/{root_id}/end-sessions", data={"csrf_token": csrf(page.data)}).status_code == 403
    assert lead.post(f"/admin/users/{alice_id}/end-sessions").status_code == 400
    judge = login(app.test_client(), "bob")
    assert judge.get("/admin/users").status_code == 403
    assert judge.post(f"/admin/users/{alice_id}/end-sessions", data={"csrf_token": csrf(page.data)}).status_code in (
        400, 403)


def test_sessions_expire_when_idle_and_absolutely(app, staff):
    idle = login(app.test_client(), "alice")
    old = login(app.test_client(), "bob")
    fresh = login(app.test_client(), "lena")
    now = utcnow()
    with staff.begin() as conn:
        idle_limit = timedelta(seconds=app.config["SESSION_IDLE_SECONDS"])
        max_limit = timedelta(seconds=app.config["SESSION_MAX_SECONDS"])
        conn.execute(text('UPDATE loginsession SET last_seen_at = :t WHERE user_id = '
                          '(SELECT id FROM "user" WHERE name = \'alice\')'),
                     {"t": now - idle_limit - timedelta(minutes=1)})
        # bob was active a minute ago, but logged in longer ago than the absolute limit
        conn.execute(text('UPDATE loginsession SET created_at = :c, last_seen_at = :t WHERE user_id = '
                          '(SELECT id FROM "user" WHERE name = \'bob\')'),
                     {"c": now - max_limit - timedelta(minutes=1), "t": now - timedelta(minutes=1)})
    assert not signed_in(idle) and not signed_in(old)
    assert signed_in(fresh)


def test_idle_and_absolute_limits_are_configurable(engine, monkeypatch):
    monkeypatch.setenv("GOLDEN_SESSION_IDLE_HOURS", "0.5")
    monkeypatch.setenv("GOLDEN_SESSION_MAX_HOURS", "10")
    with app_on(engine) as app:
        assert app.config["SESSION_IDLE_SECONDS"] == 1800 and app.config["SESSION_MAX_SECONDS"] == 36000
        assert app.permanent_session_lifetime == timedelta(hours=10)
    monkeypatch.setenv("GOLDEN_SESSION_IDLE_HOURS", "soon")
    with pytest.raises(ValueError, match="GOLDEN_SESSION_IDLE_HOURS"), app_on(engine):
        pass


def test_last_seen_is_written_at_most_once_a_minute(app, staff):
    client = login(app.test_client(), "alice")

    def last_seen():
        with staff.connect() as conn:
            return conn.execute(text("SELECT last_seen_at FROM loginsession")).scalar()

    first = last_seen()
    for _ in range(5):
        assert signed_in(client)
    assert last_seen() == first  # no write per request
    with staff.begin() as conn:
        conn.execute(text("UPDATE loginsession SET last_seen_at = :t"), {"t": utcnow() - timedelta(minutes=5)})
    stale = last_seen()
    assert signed_in(client)
    assert last_seen() != stale  # more than a minute old: written again


# ---------------------------------------------------------------------------------- store secrets


def test_each_store_has_its_own_key_and_refuses_anothers_cookie(tmp_path, monkeypatch):
    from tests.support.projects import sqlite_store

    monkeypatch.delenv("GOLDEN_SECRET_KEY", raising=False)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with sqlite_store(tmp_path / "a") as (_ua, ea), sqlite_store(tmp_path / "b") as (_ub, eb):
        # store A: a judge with id 1; store B: an admin with id 1
        with new_session(ea) as s:
            add_user(s, "alice", role="judge", password=PASSWORD)
        with new_session(eb) as s:
            add_user(s, "root", role="admin", password=PASSWORD)
        urls = [e.url.render_as_string(hide_password=False) for e in (ea, eb)]
        from judging_app import create_app

        app_a = create_app({"DATABASE_URL": urls[0], "TESTING": True})
        app_b = create_app({"DATABASE_URL": urls[1], "TESTING": True})
        app_a2 = create_app({"DATABASE_URL": urls[0], "TESTING": True})  # another process on store A
        try:
            assert app_a.secret_key and app_a.secret_key != app_b.secret_key
            assert app_a2.secret_key == app_a.secret_key
            client = login(app_a.test_client(), "alice")
            cookie = cookie_of(client)
            assert signed_in(with_cookie(app_a2, cookie))  # every process on store A accepts it
            on_b = with_cookie(app_b, cookie)
            res = on_b.get("/admin/audit")
            assert res.status_code == 302 and "/login" in res.headers["Location"]
            monkeypatch.setenv("GOLDEN_SECRET_KEY", "managed-elsewhere")
            app_env = create_app({"DATABASE_URL": urls[1], "TESTING": True})
            assert app_env.secret_key == "managed-elsewhere"
        finally:
            for a in (app_a, app_b, app_a2):
                a.extensions["golden_engine"].dispose()


def test_db_upgrade_makes_the_key(tmp_path):
    url = f"sqlite:///{tmp_path / 'golden.db'}"
    cli(url, "admin", "db", "upgrade")
    from curation.store.engine import make_engine
    from curation.store.settings import store_secret

    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            stored = conn.execute(text("SELECT value FROM storesetting WHERE key = 'secret_key'")).scalar()
        assert len(stored) == 64 and store_secret(engine) == stored
    finally:
        engine.dispose()


# ------------------------------------------------------------------------------------- throttling


def counting_hashes(monkeypatch) -> list:
    calls = []
    real = users_module.check_password_hash

    def counted(*args):
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(users_module, "check_password_hash", counted)
    return calls


def move_locks_to_the_past(engine):
    with engine.begin() as conn:
        conn.execute(text("UPDATE loginthrottle SET locked_until = :t WHERE locked_until IS NOT NULL"),
                     {"t": utcnow() - timedelta(seconds=1)})


@pytest.mark.parametrize("name", ["alice", "nobody-like-this"])
def test_the_sixth_wrong_password_is_429_and_the_right_one_waits(app, staff, monkeypatch, name):
    client = app.test_client()
    hashes = counting_hashes(monkeypatch)
    for _ in range(5):
        res = post_login(client, name, "wrong-password")
        assert res.status_code == 401 and b"do not match" in res.data
    assert len(hashes) == 5  # an unknown name is hashed too (same work, same answer)
    res = post_login(client, name, "wrong-password")
    assert res.status_code == 429
    assert 55 <= int(res.headers["Retry-After"]) <= 60
    assert b"Too many failed logins" in res.data
    res = post_login(client, name, PASSWORD)  # the right password: refused while locked
    assert res.status_code == 429
    assert len(hashes) == 5  # no password hashed while locked
    move_locks_to_the_past(staff)
    if name == "alice":
        assert post_login(client, name, PASSWORD).status_code == 302
    else:
        assert post_login(client, name, PASSWORD).status_code == 401


def test_locks_back_off_exponentially_and_a_login_resets_them(app, staff, monkeypatch):
    import curation.store.throttle as throttle_module

    clock = [utcnow()]
    monkeypatch.setattr(throttle_module, "utcnow", lambda: clock[0])
    client = app.test_client()
    waits = []
    for _ in range(3):
        for _ in range(5):
            post_login(client, "alice", "wrong-password")
        res = post_login(client, "alice", "wrong-password")
        assert res.status_code == 429
        waits.append(int(res.headers["Retry-After"]))
        clock[0] += timedelta(minutes=16)  # past the window: the account's slowdown ends, the pair's locks add up
    assert waits == [60, 120, 240]
    assert post_login(client, "alice", PASSWORD).status_code == 302
    for _ in range(5):
        post_login(app.test_client(), "alice", "wrong-password")
    assert int(post_login(app.test_client(), "alice", "x" * 9).headers["Retry-After"]) == 60


def test_one_address_guessing_many_names_is_slowed_not_locked(app, staff):
    client = app.test_client()
    for i in range(20):
        assert post_login(client, f"guess{i}", "wrong-password").status_code == 401
    res = post_login(client, "bob", PASSWORD)  # from this address, for any name: slowed
    assert res.status_code == 429 and 25 <= int(res.headers["Retry-After"]) <= 30
    other = client_from(app, {"REMOTE_ADDR": "10.0.0.7"})
    assert post_login(other, "bob", PASSWORD).status_code == 302  # another address is not slowed
    assert post_login(app.test_client(), "bob", PASSWORD).status_code == 429
    move_locks_to_the_past(staff)
    assert post_login(app.test_client(), "bob", PASSWORD).status_code == 302  # after the short wait


def test_failures_and_lockouts_are_audited_and_shown_to_admins(app, staff):
    client = app.test_client()
    for _ in range(5):
        post_login(client, "alice", "wrong-password")
    root = login(client_from(app, {"REMOTE_ADDR": "10.0.0.9"}), "root")
    page = root.get("/admin/audit").data.decode()
    assert "account:alice" in page and "address:127.0.0.1" not in page.split("Audit trail")[0]
    assert page.count("audit-login_failed") == 5 and "audit-login_locked" in page
    assert "10.0.0.9" in page  # root's own login, from where
    assert login(app.test_client(), "lena").get("/admin/audit").status_code == 403
    out = json.loads(cli(db_url_of(staff), "admin", "audit", "--json", "--locked", "--action", "login_failed"))
    assert len(out["events"]) == 5 and {e["target"] for e in out["events"]} == {"alice"}
    assert sorted(e["detail"]["failures"] for e in out["events"]) == [1, 2, 3, 4, 5]
    assert {e["address"] for e in out["events"]} == {"127.0.0.1"}
    assert sorted(lk["key"] for lk in out["locked"]) == ["account:alice", "pair:alice|127.0.0.1"]


# ------------------------------------------------------------------------ HTTPS and reverse proxy


def test_secure_cookies_set_the_flag_and_hsts(engine):
    add_users(engine, alice="judge")
    with app_on(engine) as plain:
        res = post_login(plain.test_client(), "alice")
        assert "Secure" not in res.headers["Set-Cookie"] and "Strict-Transport-Security" not in res.headers
    from judging_app import create_app

    secure = create_app({"DATABASE_URL": db_url_of(engine), "SECRET_KEY": "t", "TESTING": True,
                         "SECURE_COOKIES": True})
    try:
        client = secure.test_client()
        res = post_login(client, "alice")
        assert res.status_code == 302
        cookie = res.headers["Set-Cookie"]
        assert "; Secure" in cookie and "HttpOnly" in cookie and "SameSite=Lax" in cookie
        assert res.headers["Strict-Transport-Security"].startswith("max-age=")
    finally:
        secure.extensions["golden_engine"].dispose()


def test_serve_flags_and_environment_reach_the_app(engine, monkeypatch):
    import curation.cli.serve as serve_module

    seen = {}

    def fake_serve(app, **_kwargs):
        seen.update(app.config)
        app.extensions["golden_engine"].dispose()

    monkeypatch.setattr(serve_module, "serve_app", fake_serve)
    url = db_url_of(engine)
    cli(url, "serve", "--secure-cookies", "--proxy-headers", "--session-idle-hours", "2")
    assert seen["SESSION_COOKIE_SECURE"] and seen["PROXY_HEADERS"] and seen["SESSION_IDLE_SECONDS"] == 7200
    seen.clear()
    cli(url, "serve")
    assert not seen["SESSION_COOKIE_SECURE"] and not seen["PROXY_HEADERS"]
    seen.clear()
    monkeypatch.setenv("GOLDEN_SECURE_COOKIES", "1")
    cli(url, "serve")
    assert seen["SESSION_COOKIE_SECURE"]


def test_proxy_headers_give_the_client_address_to_throttling_and_audit(engine):
    add_users(engine, alice="judge", root="admin")
    from judging_app import create_app

    behind = create_app({"DATABASE_URL": db_url_of(engine), "SECRET_KEY": "t", "TESTING": True,
                         "PROXY_HEADERS": True})
    try:
        # (over HTTPS, flask-wtf also checks that the form came from this site: the Referer a browser sends)
        client = client_from(behind, {"HTTP_X_FORWARDED_FOR": "203.0.113.5", "HTTP_X_FORWARDED_PROTO": "https",
                                      "HTTP_REFERER": "https://localhost/login"})
        assert post_login(client, "alice", "wrong-password").status_code == 401
        res = post_login(client, "alice")
        assert res.status_code == 302 and res.headers["Location"].startswith(("/", "https://"))
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT action, address FROM auditevent WHERE action LIKE 'login%' "
                                     "ORDER BY id")).all()
            keys = set(conn.execute(text("SELECT key FROM loginthrottle")).scalars())
        assert [tuple(r) for r in rows] == [("login_failed", "203.0.113.5"), ("login", "203.0.113.5")]
        assert "address:203.0.113.5" in keys
    finally:
        behind.extensions["golden_engine"].dispose()
    with app_on(engine) as direct:  # without --proxy-headers the header is ignored
        client = client_from(direct, {"HTTP_X_FORWARDED_FOR": "203.0.113.5"})
        post_login(client, "alice", "wrong-password")
        with engine.connect() as conn:
            last = conn.execute(text("SELECT address FROM auditevent ORDER BY id DESC")).first()[0]
        assert last == "127.0.0.1"


def test_a_release_in_the_app_is_audited_with_the_leads_address(app, project, engine):
    lead = login(client_from(app, {"REMOTE_ADDR": "192.0.2.44"}), "lena")
    page = lead.get(f"/lead/{project.project_id}")
    res = lead.post(f"/lead/{project.project_id}/release", data={"csrf_token": csrf(page.data), "confirm": "yes",
                                                                 "reason": "pilot"})
    assert res.status_code == 302
    with engine.connect() as conn:
        row = conn.execute(text("SELECT actor, target, address, project_id FROM auditevent "
                                "WHERE action = 'release'")).one()
    assert tuple(row) == ("lena", project.project_name, "192.0.2.44", project.project_id)


def test_sessions_and_throttling_are_shared_by_every_server_process(app, staff):
    """Two apps on one store stand for two `golden serve` processes: nothing is kept in memory."""
    with app_on(staff) as other:
        client = login(app.test_client(), "lena")
        cookie = cookie_of(client)
        assert signed_in(with_cookie(other, cookie))
        assert logout(with_cookie(other, cookie)).status_code == 302  # logged out through the other process
        assert not signed_in(client)
        for i in range(5):  # failures spread over both processes count together
            assert post_login((app if i % 2 else other).test_client(), "bob", "wrong-password").status_code == 401
        assert post_login(app.test_client(), "bob").status_code == 429
        assert post_login(other.test_client(), "bob").status_code == 429
