"""Accounts and sessions in a real Chromium against `golden serve`: every page a judge, a
lead and an admin open logs no console error (the strict CSP holds, /favicon.ico is served); and a
logged-in browser is sent back to the login page at its next request after logout (on another
device), a password change, a role change, disable, and a lead's "end sessions"."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from curation.cli import main
from curation.export import versions as export
from curation.store.engine import session as new_session
from curation.store.projects import get_project
from curation.store.users import add_user
from tests.support.browser import golden_serve, log_in, new_page, require_chromium
from tests.support.projects import PASSWORD, assigned_project, sqlite_store

pytestmark = [pytest.mark.browser, pytest.mark.slow]  # each module starts golden serve and Chromium


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    require_chromium()
    folder = tmp_path_factory.mktemp("accounts")
    with sqlite_store(folder) as (url, engine):
        setup = assigned_project(engine, folder / "project")
        with new_session(engine) as s:
            add_user(s, "root", role="admin", password=PASSWORD)
            for name in ("carl", "dora", "emil", "fred", "gina"):
                add_user(s, name, role="judge", password=PASSWORD)
        with new_session(engine) as s:
            export.export_version(s, get_project(s, setup.project_name), "v1", out_dir=folder / "out",
                                  allow_incomplete=True)
        with golden_serve(url, folder, secret="browser-test-secret") as base:
            yield {"base": base, "engine": engine, "url": url, "setup": setup}


def watch_console(page) -> list[str]:
    """Every console error and uncaught exception of ``page`` (CSP violations are console errors)."""
    errors: list[str] = []
    page.on("console", lambda msg: errors.append(f"{page.url}: {msg.text}") if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(f"{page.url}: {exc}"))
    return errors


def test_no_console_errors_on_any_page(server, browser):
    base, setup = server["base"], server["setup"]
    pid = setup.project_id
    visits = {
        "alice": [f"/projects/{pid}/judge", f"/projects/{pid}/guidelines", "/no-such-page"],
        "lena": [f"/lead/{pid}", f"/lead/{pid}/adjudicate", f"/lead/{pid}/leaks", "/versions/",
                 f"/versions/{setup.project_name}/v1", f"/reports/{setup.project_name}/v1", "/admin/users"],
        "root": ["/admin/users", "/admin/audit", "/admin/audit?action=login"],
    }
    for who, paths in visits.items():
        with new_page(browser) as page:
            errors = watch_console(page)
            log_in(page, base, who)
            for path in paths:
                page.goto(base + path)
                page.wait_for_load_state("load")
            if who == "alice":  # an htmx swap: answer a pair with a key press
                page.goto(base + f"/projects/{pid}/judge")
                page.keyboard.press("1")
                page.wait_for_load_state("networkidle")
            # the one console line a 404 page must give: Chromium's note that the document was a 404
            errors = [e for e in errors if not (e.startswith(base + "/no-such-page") and "status of 404" in e)]
            assert errors == [], errors
    with new_page(browser) as page:  # logged out: the login page itself, and a failed login
        errors = watch_console(page)
        page.goto(base + "/login")
        page.fill("#username", "alice")
        page.fill("#password", "wrong-password")
        page.press("#password", "Enter")
        page.wait_for_load_state("load")
        assert "do not match" in page.inner_text("body")
        # the one console line a refused login must give: Chromium's note that the answer was a 401
        errors = [e for e in errors if not (e.startswith(base + "/login") and "status of 401" in e)]
        assert errors == [], errors


def test_the_favicon_is_served(server, browser):
    with new_page(browser) as page:
        page.goto(server["base"] + "/login")
        icon = page.request.get(server["base"] + "/favicon.ico")
        assert icon.status == 200 and icon.headers["content-type"] in ("image/vnd.microsoft.icon", "image/x-icon")
        assert icon.body()[:4] == b"\x00\x00\x01\x00"  # an ICO file
        href = page.get_attribute("link[rel=icon]", "href")
        svg = page.request.get(server["base"] + href)
        assert svg.status == 200 and svg.headers["content-type"].startswith("image/svg+xml")


def _cli(server, *args):
    res = CliRunner().invoke(main, [*args, "--db", server["url"]])
    assert res.exit_code == 0, res.output


def _is_logged_out(page, url: str) -> bool:
    page.goto(url)
    page.wait_for_load_state("load")
    return "/login" in page.url and page.locator("#password").count() == 1


@pytest.mark.parametrize("who,change", [("carl", "logout"), ("dora", "passwd"), ("emil", "role"),
                                        ("fred", "disable"), ("gina", "end-sessions")])
def test_a_logged_in_browser_is_sent_to_the_login_page(server, browser, who, change):
    base = server["base"]
    with new_page(browser) as page, new_page(browser) as other:
        errors = watch_console(page)
        log_in(page, base, who)
        assert not _is_logged_out(page, base + "/")
        if change == "logout":  # logging out on another device ends this one too
            log_in(other, base, who)
            other.click("text=Log out")
            other.wait_for_load_state("load")
        elif change == "passwd":
            _cli(server, "admin", "user", "passwd", who, "--password", "a-brand-new-password")
        elif change == "role":
            _cli(server, "admin", "user", "role", who, "lead")
        elif change == "disable":
            _cli(server, "admin", "user", "disable", who)
        else:  # a lead, in her browser, ends the judge's sessions
            log_in(other, base, "lena")
            other.goto(base + "/admin/users")
            other.locator("tr", has_text=who).locator("button", has_text="End sessions").click()
            other.wait_for_load_state("load")
            assert f"of {who}" in other.inner_text("#messages")
        assert _is_logged_out(page, base + "/")
        assert errors == [], errors
