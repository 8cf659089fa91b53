"""The comparison report in the app: two pooled runs of an exported version, leads and admins only,
on SQLite and PostgreSQL, with values checked by hand."""

from __future__ import annotations

import json

import pytest

from curation.export import versions as export
from curation.export.version_compare import pooled_runs
from curation.store.engine import session as new_session
from curation.store.projects import get_project
from tests.support.client import login
from tests.support.judgments import judge
from tests.support.projects import add_users, create_from_files, write_pair_files

EVIL = "runB<script>alert(1)</script>"
QIDS = ["q1", "q2", "q3", "q4"]
# The tests take conftest.py's ``client`` on the store ``exported`` fills.
pytestmark = pytest.mark.usefixtures("exported")


@pytest.fixture
def exported(engine, tmp_path):
    # runA ranks a, b, c; runB ranks c, b, a; only "a" is relevant (grade 2), "b" is judged 0.
    pairs = [(q, f"{q}{d}") for q in QIDS for d in "abc"]
    paths = write_pair_files(tmp_path / "in", pairs, runs=[{"name": "runA"}, {"name": EVIL}], depth=3)
    pool = []
    for q in QIDS:
        for i, d in enumerate("abc"):
            pool.append({"qid": q, "docid": f"{q}{d}", "order": i, "systems": {"runA": i + 1, EVIL: 3 - i}})
    paths["pool"].write_text("".join(json.dumps(p) + "\n" for p in pool))
    create_from_files(engine, "p", paths)
    add_users(engine, alice="judge", lena="lead")
    judge(engine, tmp_path, "alice", {**{(q, f"{q}a"): 2 for q in QIDS}, **{(q, f"{q}b"): 0 for q in QIDS}})
    with new_session(engine) as s:
        export.export_version(s, get_project(s, "p"), "v1", out_dir=tmp_path / "out", allow_incomplete=True)
    return engine


def test_pooled_runs_are_rebuilt_from_the_pool(exported):
    with new_session(exported) as s:
        runs = pooled_runs(s, "p")
    assert set(runs) == {"runA", EVIL}
    assert runs["runA"].rankings["q2"] == ["q2a", "q2b", "q2c"] and runs[EVIL].rankings["q2"] == ["q2c", "q2b", "q2a"]
    assert runs["runA"].depth == 3


def test_only_leads_and_admins_see_reports(client):
    assert client.get("/reports/p/v1").status_code == 302
    login(client, "alice")
    assert client.get("/reports/p/v1").status_code == 403
    assert client.get("/reports/p/v1/compare?a=runA&b=x").status_code == 403


def test_the_report_compares_two_pooled_runs(client):
    login(client, "lena")
    page = client.get("/reports/p/v1").data.decode()
    assert "runA" in page and "<script>alert" not in page and "runB&lt;script&gt;" in page
    res = client.get("/reports/p/v1/compare", query_string={"a": EVIL, "b": "runA", "metric": "ndcg@3"})
    assert res.status_code == 200
    text = res.data.decode()
    # nDCG@3 per query: runA has the grade-2 document first -> 1; runB has it third -> 2/log2(4) / 2 = 0.5
    assert "+0.5000 [+0.5000, +0.5000]" in text and "B better" in text
    assert "<script>alert" not in text and "runB&lt;script&gt;alert(1)&lt;/script&gt;" in text
    csp = res.headers["Content-Security-Policy"]
    assert "default-src 'none'" in csp and "script-src" not in csp


def test_bad_choices_come_back_to_the_form_with_the_reason(client):
    login(client, "lena")
    res = client.get("/reports/p/v1/compare", query_string={"a": "runA", "b": EVIL, "metric": "p@10"})
    assert res.status_code == 400 and "k &lt;= 3" in res.data.decode()
    res = client.get("/reports/p/v1/compare", query_string={"a": "runA", "b": "runA"})
    assert res.status_code == 400 and "two different runs" in res.data.decode()
    assert client.get("/reports/p/v9/compare", query_string={"a": "runA", "b": EVIL}).status_code == 404
    assert client.get("/reports/nope/v1").status_code == 404


def test_the_report_compares_several_runs_as_a_family_and_names_the_correction(client):
    login(client, "lena")
    page = client.get("/reports/p/v1").data.decode()
    assert 'name="runs"' in page and 'name="correction"' in page and "Tukey" in page
    res = client.get("/reports/p/v1/compare", query_string=[("runs", "runA"), ("runs", EVIL), ("metric", "ndcg@3"),
                                                            ("correction", "bonferroni")])
    assert res.status_code == 200, res.data.decode()[:500]
    text = res.data.decode()
    # one comparison (runB - runA = -0.5 on every query: no spread), corrected as a family of 1
    assert 'data-correction="bonferroni"' in text and "correction for 1 comparison: Bonferroni" in text
    assert "A better" in text and "<script>alert" not in text and "runB&lt;script&gt;" in text
    assert "script-src" not in res.headers["Content-Security-Policy"]
    res = client.get("/reports/p/v1/compare", query_string=[("runs", "runA"), ("runs", EVIL), ("baseline", "nope")])
    assert res.status_code == 400 and "baseline" in res.data.decode()
    res = client.get("/reports/p/v1/compare", query_string=[("runs", "runA")])
    assert res.status_code == 400 and "at least two" in res.data.decode()
    res = client.get("/reports/p/v1/compare", query_string=[("runs", "runA"), ("runs", EVIL), ("correction", "x")])
    assert res.status_code == 400 and "correction" in res.data.decode()
