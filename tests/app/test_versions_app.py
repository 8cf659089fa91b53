"""The versions page through Flask's test client, on SQLite and PostgreSQL: who may see it, the
manifest and changes shown as text, and the zip download (the frozen bytes, every time)."""

from __future__ import annotations

import hashlib
import html
import io
import zipfile

import pytest

from curation.export import versions as export
from curation.export.archive import build_archive
from curation.export.manifest import ALL_FILES
from curation.store.engine import session as new_session
from curation.store.projects import get_project
from curation.store.users import add_user
from tests.support.client import login
from tests.support.judgments import judge
from tests.support.projects import PASSWORD, pairs_project, read_files

PAIRS = [("q1", "d1"), ("q1", "d2"), ("q2", "d3")]
EVIL = "<script>window.__x=1</script><img src=x onerror=alert(1)>"
# The tests take conftest.py's ``client`` on the store ``exported`` fills.
pytestmark = pytest.mark.usefixtures("exported")


@pytest.fixture
def exported(engine, tmp_path):
    pairs_project(engine, tmp_path / "in", PAIRS, texts={"q1": "plain query", "q2": "second query"})
    judge(engine, tmp_path, "alice", {("q1", "d1"): 2, ("q1", "d2"): 0})
    with new_session(engine) as s:
        add_user(s, "root", role="admin", password=PASSWORD)
        export.export_version(s, get_project(s, "p"), "v1", out_dir=tmp_path / "out", allow_incomplete=True,
                              created_by=EVIL)
    judge(engine, tmp_path, "alice", {("q2", "d3"): 1})
    with new_session(engine) as s:
        export.export_version(s, get_project(s, "p"), "v2", out_dir=tmp_path / "out", created_by="ana")
    return tmp_path / "out"


def test_only_leads_and_admins_see_versions(client):
    res = client.get("/versions/")
    assert res.status_code == 302 and "/login" in res.headers["Location"]
    login(client, "alice")  # a judge: manifests name judges and carry agreement figures
    assert client.get("/versions/").status_code == 403
    assert client.get("/versions/p/v1.zip").status_code == 403
    for who in ("lena", "root"):
        with client.session_transaction() as sess:
            sess.clear()
        login(client, who)
        assert client.get("/versions/").status_code == 200


def test_the_list_shows_each_version_with_its_manifest_facts(client):
    login(client, "lena")
    page = client.get("/versions/").data.decode()
    assert "v1" in page and "v2" in page and "ana" in page
    assert "1 unjudged, 0 unresolved" in page  # v1 was exported with q2/d3 unjudged
    assert page.count("Download zip") == 2
    assert "<script>window.__x" not in page and "&lt;script&gt;window.__x" in page


def test_the_detail_page_shows_manifest_and_changes_as_text(client, exported):
    login(client, "lena")
    res = client.get("/versions/p/v2")
    assert res.status_code == 200
    page = res.data.decode()
    assert "Changes against v1." in page and "## Pairs added (1)" in page
    manifest_text = (exported / "v2" / "manifest.json").read_text()
    assert html.escape(manifest_text, quote=False) in page.replace("&#34;", '"').replace("&#39;", "'")
    v1 = client.get("/versions/p/v1").data.decode()
    assert "<script>window.__x" not in v1 and "<img src=x" not in v1
    assert "&lt;img src=x onerror=alert(1)&gt;" in v1  # shown as text, in the manifest's created_by
    assert client.get("/versions/p/v9").status_code == 404
    assert client.get("/versions/nope/v1").status_code == 404


def test_download_gives_the_frozen_zip_byte_for_byte(client, engine, exported):
    login(client, "lena")
    first = client.get("/versions/p/v1.zip")
    second = client.get("/versions/p/v1.zip")
    assert first.status_code == 200 and first.mimetype == "application/zip"
    assert first.headers["Content-Disposition"] in ('attachment; filename=p-v1.zip', 'attachment; filename="p-v1.zip"')
    assert first.data == second.data
    assert first.headers["X-Content-SHA256"] == hashlib.sha256(first.data).hexdigest()
    with zipfile.ZipFile(io.BytesIO(first.data)) as zf:
        assert zf.namelist() == [f"v1/{n}" for n in ALL_FILES]
        assert {n.split("/", 1)[1]: zf.read(n) for n in zf.namelist()} == read_files(exported / "v1")
        assert all(i.date_time == (1980, 1, 1, 0, 0, 0) for i in zf.infolist())
    # The zip is the one frozen in the store: a rebuild from the files gives the same bytes.
    assert build_archive("v1", read_files(exported / "v1")) == first.data


def test_versions_are_reachable_from_the_top_bar_and_link_to_the_run_comparison(client):
    login(client, "root")
    home = client.get("/versions/").data.decode()
    assert 'href="/versions/"' in home
    detail = client.get("/versions/p/v2").data.decode()
    assert 'href="/reports/p/v2"' in detail
    assert client.get("/reports/p/v2").status_code == 200
