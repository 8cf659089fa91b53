"""Lockout that an attacker cannot hold: failed logins lock the pair of account and
address, only slow the account and the address, and a browser that logged in to the account before
(its device cookie) is counted on its own. Through Flask's test client on SQLite and PostgreSQL,
with the throttle's clock injected (no real sleeps)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from sqlalchemy import text

import curation.store.throttle as throttle_module
from curation.store.models import utcnow
from tests.support.client import csrf, login, post_login
from tests.support.projects import PASSWORD, add_users


class Clock:
    def __init__(self):
        self.now = utcnow()

    def __call__(self):
        return self.now

    def advance(self, seconds: float):
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def clock(monkeypatch):
    c = Clock()
    monkeypatch.setattr(throttle_module, "utcnow", c)
    return c


@pytest.fixture
def staff(engine):
    add_users(engine, alice="judge", bob="judge", carol="judge", lena="lead", root="admin")
    return engine


def from_address(app, address: str):
    client = app.test_client()
    client.environ_base["REMOTE_ADDR"] = address
    return client


def log_out(client):
    page = client.get("/admin/users")
    client.post("/logout", data={"csrf_token": csrf(page.data)})


def login_within(client, clock, name: str, *, limit: float) -> float:
    """Log in with the right password, waiting out each Retry-After on the clock; the seconds it took."""
    waited = 0.0
    while True:
        res = post_login(client, name, PASSWORD)
        if res.status_code == 302:
            return waited
        assert res.status_code == 429, res.status_code
        wait = int(res.headers["Retry-After"])
        waited += wait
        assert waited <= limit, f"{name} still held after {waited} s"
        clock.advance(wait)


def test_five_wrong_passwords_an_hour_for_a_day_never_keep_the_real_user_out(app, staff, clock):
    laptop = from_address(app, "10.1.0.5")
    login(laptop, "alice")  # the real user's browser: a known device from now on
    log_out(laptop)
    newcomer_hours = []
    for hour in range(24):
        # The attacker's five wrong passwords at once, from its own address or from the office's.
        attacker = from_address(app, "198.51.100.7" if hour % 2 else "10.1.0.5")
        for _ in range(5):
            assert post_login(attacker, "alice", "wrong-password").status_code in (401, 429)
        clock.advance(1)
        # On her own browser: in at once, whatever the attacker did, from home or from the office.
        assert post_login(laptop, "alice", PASSWORD).status_code == 302
        log_out(laptop)
        # From a browser she never used, at another address: in within a minute.
        newcomer = from_address(app, f"192.0.2.{hour + 1}")
        newcomer_hours.append(login_within(newcomer, clock, "alice", limit=60))
        log_out(newcomer)
        clock.advance(3600 - 1 - newcomer_hours[-1])
    assert max(newcomer_hours) <= 30


def test_twenty_failures_from_a_shared_address_lock_nobody_else_behind_it(app, staff, clock):
    office = "10.2.0.1"
    bobs = from_address(app, office)
    login(bobs, "bob")
    log_out(bobs)
    attacker = from_address(app, office)
    for i in range(20):
        post_login(attacker, f"guess{i}" if i % 2 else "alice", "wrong-password")
    # Behind the same address: bob on his browser at once, carol (never logged in) within the slowdown.
    assert post_login(bobs, "bob", PASSWORD).status_code == 302
    assert login_within(from_address(app, office), clock, "carol", limit=30) <= 30
    # The attacker's own pair with alice is locked; her account elsewhere is only slowed.
    assert post_login(attacker, "alice", PASSWORD).status_code == 429
    assert login_within(from_address(app, "10.9.9.9"), clock, "alice", limit=30) <= 30


def test_the_throttle_still_slows_the_attacker(app, staff, clock):
    """One address guessing one account gets locks that double; guesses from many addresses are
    slowed to one per slowdown; a guess while held is refused without checking the password."""
    attacker = from_address(app, "198.51.100.7")
    waits = []
    for _ in range(4):
        for _ in range(5):
            assert post_login(attacker, "alice", "wrong-password").status_code == 401
        res = post_login(attacker, "alice", PASSWORD)  # even the right password is refused while locked
        assert res.status_code == 429
        waits.append(int(res.headers["Retry-After"]))
        clock.advance(16 * 60)  # past the window: the account's slowdown is forgotten, the pair's locks not
    assert waits == [60, 120, 240, 480]
    clock.advance(24 * 3600)
    tried = 0
    for i in range(200):  # a botnet: every guess from a new address, each respecting Retry-After
        res = post_login(from_address(app, f"203.0.113.{i}"), "bob", "wrong-password")
        if res.status_code == 401:
            tried += 1
        else:
            assert res.status_code == 429 and 1 <= int(res.headers["Retry-After"]) <= 30
            clock.advance(int(res.headers["Retry-After"]))
    # Four free guesses, then one per 30 s: about half of the 200 requests were refused unchecked.
    assert 100 <= tried <= 105


def test_a_known_device_is_locked_on_its_own(app, staff, clock):
    laptop = from_address(app, "10.3.0.1")
    login(laptop, "alice")
    log_out(laptop)
    for _ in range(5):
        assert post_login(laptop, "alice", "wrong-password").status_code == 401
    assert post_login(laptop, "alice", PASSWORD).status_code == 429  # someone at her laptop guessing
    assert post_login(from_address(app, "10.3.0.1"), "alice", PASSWORD).status_code == 302  # another browser
    forged = app.test_client()
    forged.set_cookie("golden_device", laptop.get_cookie("golden_device").value[:-2] + "xx")
    forged.environ_base["REMOTE_ADDR"] = "10.4.0.1"
    for _ in range(5):
        post_login(forged, "bob", "wrong-password")
    assert post_login(forged, "bob", PASSWORD).status_code == 429  # a forged cookie is no known device


def test_unlock_by_command_by_a_lead_and_by_a_new_password(app, staff, clock):
    from click.testing import CliRunner

    from curation.cli import main

    url = staff.url.render_as_string(hide_password=False)

    def lock(name):
        client = from_address(app, "198.51.100.9")
        for _ in range(6):
            post_login(client, name, "wrong-password")
        assert post_login(client, name, PASSWORD).status_code == 429
        return client

    client = lock("alice")
    res = CliRunner().invoke(main, ["admin", "user", "unlock", "alice", "--db", url])
    assert res.exit_code == 0 and "unlocked alice" in res.output, res.output
    assert post_login(client, "alice", PASSWORD).status_code == 302

    client = lock("bob")
    res = CliRunner().invoke(main, ["admin", "user", "passwd", "bob", "--password", PASSWORD, "--db", url])
    assert res.exit_code == 0, res.output
    assert post_login(client, "bob", PASSWORD).status_code == 302

    client = lock("carol")
    lead = login(from_address(app, "10.5.0.1"), "lena")
    page = lead.get("/admin/users")
    assert b"carol" in page.data and b"Unlock" in page.data
    with staff.connect() as conn:
        carol_id = conn.execute(text("SELECT id FROM user WHERE name = 'carol'")
                                if staff.dialect.name == "sqlite" else
                                text('SELECT id FROM "user" WHERE name = \'carol\'')).scalar_one()
    assert lead.post(f"/admin/users/{carol_id}/unlock").status_code == 400  # no CSRF token
    res = lead.post(f"/admin/users/{carol_id}/unlock", data={"csrf_token": csrf(page.data)})
    assert res.status_code == 302
    assert post_login(client, "carol", PASSWORD).status_code == 302
    with staff.connect() as conn:
        rows = conn.execute(text("SELECT actor, target FROM auditevent WHERE action = 'unlock' ORDER BY id")).all()
        changed = conn.execute(text("SELECT detail FROM auditevent WHERE action = 'password_changed'")).scalar_one()
    assert [r[1] for r in rows] == ["alice", "carol"] and rows[1][0] == "lena"
    assert json.loads(changed) == {"unlocked": 2}  # bob's pair and account, cleared by the new password


def test_unlocking_one_account_leaves_names_that_only_look_alike(engine):
    """'_' and '%' in a name are no LIKE wildcards: unlocking a_b leaves axb's and a_bc's locks."""
    from curation.store.engine import session as new_session

    with new_session(engine) as s:
        for name in ("a_b", "axb", "a_bc"):
            for _ in range(5):
                throttle_module.record_failure(s, throttle_module.keys_for(name, "10.6.0.1"))
        assert throttle_module.unlock_account(s, "A_B", commit=True) == 2  # its pair and its account
        held = throttle_module.held_accounts(s)
    assert set(held) == {"axb", "a_bc"}
