"""The versions page in a real Chromium against `golden serve`: a lead opens the list, reads a
manifest whose untrusted fields run nothing, and downloads the frozen zip byte for byte."""

from __future__ import annotations

import hashlib

import pytest

from curation.export import versions as export
from curation.store.engine import session as new_session
from curation.store.projects import get_project
from tests.support.browser import golden_serve, log_in, new_page, require_chromium
from tests.support.judgments import judge
from tests.support.projects import pairs_project, sqlite_store

pytestmark = [pytest.mark.browser, pytest.mark.slow]  # each module starts golden serve and Chromium

EVIL = '<script>window.__x = 1</script><img src=x onerror="window.__x = 2">'


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    require_chromium()
    folder = tmp_path_factory.mktemp("versions")
    with sqlite_store(folder) as (url, engine):
        pairs_project(engine, folder / "in", [("q1", "d1"), ("q1", "d2"), ("q2", "d3")], texts={"q1": EVIL})
        judge(engine, folder, "alice", {("q1", "d1"): 2, ("q1", "d2"): 0, ("q2", "d3"): 1})
        with new_session(engine) as s:
            export.export_version(s, get_project(s, "p"), "v1", out_dir=folder / "out", created_by=EVIL)
        with golden_serve(url, folder, secret="browser-test-secret") as base:
            yield {"base": base, "engine": engine, "folder": folder}


def test_a_lead_reads_versions_and_downloads_the_frozen_zip(server, browser, tmp_path):
    with new_page(browser, accept_downloads=True) as page:
        log_in(page, server["base"], "lena")
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
        from curation.store.archives import iter_chunks

        with new_session(server["engine"]) as s:
            row = export.get_version(s, get_project(s, "p"), "v1")
            assert saved.read_bytes() == b"".join(iter_chunks(s, row.id))
        assert hashlib.sha256(saved.read_bytes()).hexdigest() in page.inner_text("body")
