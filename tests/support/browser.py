"""What the browser tests share: Debian's Chromium driven by Python Playwright, `golden serve`
(granian) started on a free port with its output in a log file, and the login form filled in.
The fixtures ``browser`` (one Chromium per test module) and ``page`` (a fresh context per test) that
wrap ``chromium`` and ``new_page`` are in conftest.py."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.projects import PASSWORD

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]


def require_chromium() -> None:
    """Skip the calling test (or fixture) when Chromium is not installed."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed (.ci/run installs it)")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until_up(url: str, proc: subprocess.Popen, log: Path, timeout: float = 60.0) -> None:
    """Poll ``url`` until it answers 200; fail with the server's output (``log``) when it exits first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"golden serve exited with {proc.returncode}: {log.read_text()}")
        try:
            with urllib.request.urlopen(url, timeout=1) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"golden serve did not answer at {url} within {timeout} s; its output is in {log}")


@contextmanager
def golden_serve(db_url: str, folder: Path, *, secret: str, threads: int | None = None,
                 min_answer_ms: int = 0) -> Iterator[str]:
    """Run `golden serve --db db_url` on a free port until the block ends; yields its base URL.
    Tests press keys as soon as a pair is on screen, so the page's and the server's minimum time
    between showing a pair and its answer (``GOLDEN_MIN_ANSWER_MS``) is ``min_answer_ms``: 0 unless
    a test of that guard asks for the real one.
    Its stdout and stderr go to ``folder / "serve.log"``: a file, not a pipe, since an unread pipe
    fills up and blocks the server."""
    port = free_port()
    command = [sys.executable, "-c", "from curation.cli import main; main()", "serve", "--db", db_url,
               "--port", str(port)]
    if threads is not None:
        command += ["--threads", str(threads)]
    log = folder / "serve.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=out, env={**os.environ, "GOLDEN_SECRET_KEY": secret,
                                                                "GOLDEN_MIN_ANSWER_MS": str(min_answer_ms)})
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(base + "/login", proc, log)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@contextmanager
def chromium():
    """Chromium launched by Playwright (headless, at /usr/bin/chromium, never `playwright install`'s)."""
    require_chromium()
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@contextmanager
def new_page(browser, **context_options):
    """A page in a fresh browser context (no cookies shared with other pages), 10 s timeouts."""
    context = browser.new_context(**context_options)
    page = context.new_page()
    page.set_default_timeout(10_000)
    try:
        yield page
    finally:
        context.close()


def log_in(page, base: str, name: str, *, path: str = "/login", password: str = PASSWORD) -> None:
    """Open ``base + path`` (a page that shows the login form) and log in as ``name``."""
    page.goto(base + path)
    page.fill("#username", name)
    page.fill("#password", password)
    page.press("#password", "Enter")
    page.wait_for_load_state("load")
