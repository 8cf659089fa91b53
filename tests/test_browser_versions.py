"""The versions page in a real Chromium against `golden serve`: a lead opens the list, reads a
manifest whose untrusted fields run nothing, and downloads the frozen zip byte for byte."""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from curation import export
from curation.migrate import upgrade
from curation.projects import get_project
from curation.store import make_engine
from curation.store import session as new_session

from export_setup import PASSWORD, judge, make_project
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


def wait_until_up(url: str, proc: subprocess.Popen, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"golden serve exited with {proc.returncode}: {proc.stderr.read().decode()}")
        try:
            with urllib.request.urlopen(url, timeout=1) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"golden serve did not answer at {url} within {timeout} s")

EVIL = '<script>window.__x = 1</script><img src=x onerror="window.__x = 2">'


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed (.ci/run installs it)")
    folder = tmp_path_factory.mktemp("versions")
    url = f"sqlite:///{folder / 'golden.db'}"
    engine = make_engine(url)
    upgrade(engine)
    make_project(engine, folder / "in", [("q1", "d1"), ("q1", "d2"), ("q2", "d3")], texts={"q1": EVIL})
    judge(engine, folder, "alice", {("q1", "d1"): 2, ("q1", "d2"): 0, ("q2", "d3"): 1})
    with new_session(engine) as s:
        export.export_version(s, get_project(s, "p"), "v1", out_dir=folder / "out", created_by=EVIL)
    port = free_port()
    env = {**os.environ, "GOLDEN_SECRET_KEY": "browser-test-secret"}
    proc = subprocess.Popen(
        [sys.executable, "-c", "from curation.cli import main; main()", "serve", "--db", url, "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(base + "/login", proc)
        yield {"base": base, "engine": engine, "folder": folder}
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


def test_a_lead_reads_versions_and_downloads_the_frozen_zip(server, browser, tmp_path):
    context = browser.new_context(accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(10_000)
    try:
        page.goto(server["base"] + "/login")
        page.fill("#username", "lena")
        page.fill("#password", PASSWORD)
        page.press("#password", "Enter")
        page.wait_for_load_state("load")
        page.goto(server["base"] + "/versions/")
        assert page.locator("table.versions-table tbody tr").count() == 1
        assert EVIL in page.inner_text("table.versions-table")  # created_by shown as text
        page.click("text=v1")
        page.wait_for_selector("pre.text-file")
        assert '"version": "v1"' in page.inner_text("body")
        assert page.evaluate("window.__x === undefined")
        with page.expect_download() as info:
            page.click("text=Download p-v1.zip")
        saved = tmp_path / "p-v1.zip"
        info.value.save_as(saved)
        with new_session(server["engine"]) as s:
            row = export.get_version(s, get_project(s, "p"), "v1")
            assert saved.read_bytes() == row.archive
        assert hashlib.sha256(saved.read_bytes()).hexdigest() in page.inner_text("body")
    finally:
        context.close()
