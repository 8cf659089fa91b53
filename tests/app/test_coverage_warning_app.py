"""Incompleteness shown where decisions are made: a version's page and the comparison
report show how much of each pooled run's top-10 the version judges, warn below 90%, and the report
links back to the app. The store of test_reports_app: each run's top 3 of 4 queries, the "c"
documents unjudged, so 8 of 12 judged (66.7%) for both runs, worked out by hand."""

from __future__ import annotations

import html
import re

import pytest

from curation.export.version_compare import version_coverage
from curation.store.engine import session as new_session
from tests.app.test_reports_app import EVIL, exported  # noqa: F401 - the fixture
from tests.support.client import login

pytestmark = pytest.mark.usefixtures("exported")


def test_version_coverage_by_hand(exported):  # noqa: F811
    with new_session(exported) as s:
        cov = version_coverage(s, "p", "v1")
    assert {(r.name, r.depth, r.retrieved, r.unjudged, r.holes) for r in cov} == {
        ("runA", 3, 12, 4, True), (EVIL, 3, 12, 4, True)}


def test_the_version_page_shows_coverage_and_what_is_missing(client):
    login(client, "lena")
    page = client.get("/versions/p/v1").data.decode()
    table = page.split('data-testid="coverage"')[1].split("</table>")[0]
    assert table.count("66.7% of top-3") == 2 and table.count("4 of 12") == 2
    assert page.count('data-testid="coverage-warning"') == 2
    assert "runB&lt;script&gt;" in table and "<script>alert" not in page
    # The export was allowed with the "c" documents unjudged: the page says so.
    box = page.split('data-testid="incomplete"')[1].split("</div>")[0]
    assert "4 pooled pairs unjudged" in re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", box)))


def test_the_report_warns_before_its_verdict_and_links_back(client):
    login(client, "lena")
    r = client.get("/reports/p/v1/compare?a=runA&b=" + EVIL.replace("<", "%3C").replace(">", "%3E")
                   + "&metric=ndcg@3")
    assert r.status_code == 200
    body = r.data.decode()
    warnings = re.findall(r'data-coverage-warning="([^"]*)"', body)
    assert sorted(html.unescape(w) for w in warnings) == sorted(["runA", EVIL])
    assert "only 66.7% of runA's top-3 is judged (below 90%)" in body
    assert body.index("data-coverage-warning") < body.index('class="verdict')
    assert '<a href="/versions/p/v1">Back to p · v1 in golden</a>' in body
    assert "<script>alert" not in body
