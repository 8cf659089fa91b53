"""The judging page in a real Chromium (Playwright driving Debian's /usr/bin/chromium) against
`golden serve` (waitress) on a free port: keyboard-only labelling that survives a reload, and
untrusted documents shown as text that runs nothing."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from sqlmodel import select

from curation.migrate import upgrade
from curation.models import Judgment, User
from curation.store import make_engine, session as new_session
from judging_setup import PASSWORD, build_project

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until_up(url: str, proc: subprocess.Popen, log: Path | None = None, timeout: float = 60.0) -> None:
    """Poll ``url`` until it answers 200; fail with the server's output (``log``, else its stderr
    pipe) when it exits first. Other browser tests import this too."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            output = log.read_text() if log else (proc.stderr.read().decode() if proc.stderr else "")
            raise RuntimeError(f"golden serve exited with {proc.returncode}: {output}")
        try:
            with urllib.request.urlopen(url, timeout=1) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"golden serve did not answer at {url} within {timeout} s")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed (.ci/run installs it)")
    folder = tmp_path_factory.mktemp("browser")
    url = f"sqlite:///{folder / 'golden.db'}"
    engine = make_engine(url)
    upgrade(engine)
    main = build_project(engine, folder / "recipes", name="recipes", n_queries=8, docs_per_query=4, overlap=3)
    untrusted = build_project(engine, folder / "untrusted", name="untrusted", n_queries=1, docs_per_query=3,
                              judges=("carol",), overlap=0)
    port = free_port()
    env = {**os.environ, "GOLDEN_SECRET_KEY": "browser-test-secret"}
    log = folder / "serve.log"  # a file, not a pipe: an unread pipe fills up and blocks the server
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-c", "from curation.cli import main; main()", "serve",
             "--db", url, "--port", str(port), "--threads", "4"],
            stdout=err, stderr=err, env=env,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(base + "/login", proc, log)
        yield {"base": base, "engine": engine, "main": main, "untrusted": untrusted}
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        engine.dispose()


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(10_000)
    yield page
    context.close()


def log_in(page, base: str, name: str) -> None:
    page.goto(base + "/")
    page.fill("#username", name)
    page.fill("#password", PASSWORD)
    page.press("#password", "Enter")
    page.wait_for_selector("#pair")
    page.wait_for_load_state("load")  # htmx and the key handler are in place


def counts(page) -> str:
    return page.inner_text("#progress-counts")


def judged(engine, name: str) -> list[Judgment]:
    with new_session(engine) as db:
        return list(db.exec(select(Judgment).join(User, User.id == Judgment.judge_id).where(User.name == name).order_by(Judgment.id)))


def test_ten_pairs_by_keyboard_alone_survive_a_reload(server, page):
    from playwright.sync_api import expect

    log_in(page, server["base"], "alice")
    expect(page.locator("#progress-counts")).to_contain_text("0 / ")
    page.evaluate("window.__sameDocument = true")  # gone if any key caused a full page load
    shown = []
    for i in range(10):
        shown.append(page.inner_text("#doc-text"))
        page.keyboard.press(str(i % 3))
        expect(page.locator("#progress-counts")).to_contain_text(f"{i + 1} / ")
    assert page.evaluate("window.__sameDocument") is True
    assert len(set(shown)) == 10  # ten different pairs

    # the guidelines are one key away, and Escape closes them
    page.keyboard.press("g")
    expect(page.locator("dialog#guidelines")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator("dialog#guidelines")).to_be_hidden()

    # back: the last pair again, with alice's own answer marked; a new digit relabels it
    page.keyboard.press("b")
    expect(page.locator(".revisit")).to_contain_text("You answered this pair before")
    assert page.inner_text("#doc-text") == shown[-1]
    page.keyboard.press("2")
    expect(page.locator(".revisit")).to_have_count(0)

    # unsure with a note, from the keyboard
    page.keyboard.press("u")
    expect(page.locator("#note")).to_be_focused()
    page.keyboard.type("two readings of the query")
    page.keyboard.press("Enter")
    expect(page.locator("#progress-counts")).to_contain_text("11 / ")
    assert page.evaluate("window.__sameDocument") is True

    page.reload()
    expect(page.locator("#progress-counts")).to_contain_text("11 / ")
    assert page.evaluate("window.__sameDocument") is None  # it really was a reload
    assert page.inner_text("#doc-text") not in shown  # the next unanswered pair, not an old one

    rows = judged(server["engine"], "alice")
    assert [r.grade for r in rows] == [i % 3 for i in range(10)] + [2, None]
    assert rows[-1].unsure and rows[-1].note == "two readings of the query"


def test_a_document_with_script_is_shown_as_text_and_runs_nothing(server, page):
    from playwright.sync_api import expect

    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    log_in(page, server["base"], "carol")
    for _ in range(3):  # skip (S) until the hostile document is on screen (the order is shuffled)
        if "Cooking tips." in page.inner_text("#doc-text"):
            break
        before = counts(page)
        page.keyboard.press("s")
        page.wait_for_function("b => document.querySelector('#progress-counts').innerText !== b || "
                               "document.querySelector('#doc-text').innerText.includes('Cooking tips.')", arg=before)
    for reload in (False, True):  # as swapped in by htmx, then as a full page
        if reload:
            page.reload()
        text = page.inner_text("#doc-text")
        assert "<script>window.__xss = 1;" in text and '<img src=x onerror="window.__xss = 2">' in text
        assert page.evaluate("typeof window.__xss") == "undefined"
        assert page.title() != "pwned"
        assert page.locator("#doc-text img").count() == 0 and page.locator("#doc-text script").count() == 0
    page.keyboard.press("g")
    expect(page.locator("dialog#guidelines")).to_contain_text("<script>window.__xss = 3</script>")
    assert page.locator("dialog#guidelines a[href^='javascript']").count() == 0
    assert page.evaluate("typeof window.__xss") == "undefined"
    assert dialogs == []
