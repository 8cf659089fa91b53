"""Lead pages in a real Chromium against `golden serve`, on a store with two pooled runs, an
incomplete exported version and leak findings:

- incompleteness shown where decisions are made: the version page shows each run's judged top-10
  coverage with a warning below 90%, the comparison report warns above its verdict and links back;
- at 375 px (a phone) no lead page, admin page (as a lead and as an admin) or the Export button's
  result page scrolls sideways (``document.documentElement.scrollWidth <= 375``; wide tables scroll
  in their own focusable, labelled box) and "Log out" sits inside the header;
- axe-core (its axe.min.js from the axe-core-python package or an npm node_modules folder: not part
  of golden) finds no WCAG 2.1 A/AA violation on those pages.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from curation.cli import main as golden
from curation.export import versions as export
from curation.judge.assignment import assign
from curation.store.engine import session as new_session
from curation.store.projects import get_project
from tests.support.browser import golden_serve, log_in, new_page, require_chromium
from tests.support.judgments import judge
from tests.support.projects import add_users, create_from_files, write_pair_files

pytestmark = [pytest.mark.browser, pytest.mark.slow]

QIDS = [f"q{i}" for i in range(6)]
RUNS = ("bm25-baseline-with-a-long-name", "dense-candidate-with-a-long-name")
PHONE = {"width": 375, "height": 740}
# The elements that stick out past the viewport (deepest first), to name them when a page is too wide.
WIDE = """Array.from(document.querySelectorAll('body *')).filter(e => e.getBoundingClientRect().right > 376
  && !Array.from(e.children).some(c => c.getBoundingClientRect().right > 376))
  .slice(0, 5).map(e => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right))"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    require_chromium()
    folder = tmp_path_factory.mktemp("lead-pages")
    from tests.support.projects import sqlite_store

    with sqlite_store(folder) as (url, engine):
        # Each run ranks the 4 documents of a query (reverse orders); "d" documents stay unjudged.
        pairs = [(q, f"{q}-doc-{d}") for q in QIDS for d in "abcd"]
        texts = {q: f"how do I export the invoices of {q} to a spreadsheet every month" for q in QIDS}
        paths = write_pair_files(folder / "in", pairs, texts=texts, runs=[{"name": r} for r in RUNS], depth=4)
        pool = [{"qid": q, "docid": f"{q}-doc-{d}", "order": i, "systems": {RUNS[0]: i + 1, RUNS[1]: 4 - i}}
                for q in QIDS for i, d in enumerate("abcd")]
        paths["pool"].write_text("".join(json.dumps(p) + "\n" for p in pool))
        create_from_files(engine, "p", paths)
        add_users(engine, alice="judge", bob="judge", lena="lead", ada="admin")
        labels = {(q, f"{q}-doc-{d}"): g for q in QIDS for d, g in zip("abc", (2, 1, 0))}
        judge(engine, folder, "alice", labels)
        # bob agrees with alice but on q0-doc-a: a disagreement (unresolved under the majority policy)
        judge(engine, folder, "bob", {**dict(list(labels.items())[:6]), ("q0", "q0-doc-a"): 0})
        with new_session(engine) as s:
            project = get_project(s, "p")
            assign(s, project, ["alice", "bob"], overlap=6, seed=1)
            export.export_version(s, project, "v1", out_dir=folder / "out", allow_incomplete=True, policy="majority")
        corpus = folder / "corpus.jsonl"
        corpus.write_text(json.dumps({"id": "kb-" + "x" * 80, "text": "Support article. " * 30 + texts["q1"]
                                      + ". Open Billing, choose Export. " * 20}) + "\n")
        from curation.machine.labels import import_machine_labels
        from tests.support.machine import write_machine

        rows = [{"qid": q, "docid": d, "grade": g} for (q, d), g in labels.items()]
        machine = write_machine(folder / "m.jsonl", rows)
        with new_session(engine) as s:
            import_machine_labels(s, machine, machine="llm-with-a-rather-long-name", project="p")
        res = CliRunner().invoke(golden, ["leakcheck", "--queries", str(paths["queries"]), "--corpus", str(corpus),
                                          "--out", str(folder / "leaks.jsonl"), "--project", "p", "--db", url,
                                          "--workers", "1"])
        assert res.exit_code == 0, res.output
        with golden_serve(url, folder, secret="lead-pages-secret") as base:
            with new_session(engine) as s:
                pid = get_project(s, "p").id
            yield {"base": base, "engine": engine, "project_id": pid}


def test_version_page_and_report_flag_incomplete_coverage(server, page):
    from playwright.sync_api import expect

    base = server["base"]
    log_in(page, base, "lena", path="/login?next=/versions/p/v1")
    expect(page.get_by_test_id("incomplete")).to_contain_text("pooled pairs unjudged")
    table = page.get_by_test_id("coverage")
    # Each run's top 4 of 6 queries: the "d" documents and the unresolved q0-doc-a are not in the
    # version's qrels, so 7 of 24 unjudged: 70.8% judged, under 90%.
    for run in RUNS:
        expect(table.locator(f'tr[data-run="{run}"]')).to_contain_text("70.8% of top-4")
        expect(table.locator(f'tr[data-run="{run}"]')).to_contain_text("7 of 24")
    expect(table.get_by_test_id("coverage-warning")).to_have_count(2)
    page.click("text=Compare two pooled runs on this version")
    page.select_option("select[name=a]", RUNS[0])
    page.select_option("select[name=b]", RUNS[1])
    page.fill("input[name=metric]", "ndcg@4")
    page.click("text=Show the comparison")
    expect(page.locator("[data-coverage-warning]")).to_have_count(2)
    expect(page.locator("[data-coverage-warning]").first).to_contain_text("70.8%")
    page.click("text=Back to p · v1 in golden")
    expect(page.get_by_test_id("coverage")).to_be_visible()
    assert page.url.endswith("/versions/p/v1")


def test_every_lead_page_fits_a_phone(server, browser):
    """Every lead page, the project's settings, the admin pages (as a lead and as an admin, with a
    locked account listed) and the Export button's result page."""
    base, pid = server["base"], server["project_id"]
    compare = f"/reports/p/v1/compare?a={RUNS[0]}&b={RUNS[1]}&metric=ndcg@4"
    paths = [f"/lead/{pid}", f"/lead/{pid}/adjudicate", f"/lead/{pid}/unsure", f"/lead/{pid}/progress",
             f"/lead/{pid}/leaks", f"/lead/{pid}/machines", f"/lead/{pid}/settings", "/versions/", "/versions/p/v1",
             "/reports/p/v1", compare, "/admin/users"]
    axe = _axe_source()
    found = {"too wide": {}, "axe": {}}
    with new_page(browser, viewport=PHONE) as page:
        log_in(page, base, "lena")
        for path in paths:
            response = page.goto(base + path)
            assert response.status == 200, path
            _check_phone_page(page, path, axe, found, header=path != compare)  # the report stands alone
        # The dashboard's Export button, and the summary page it answers with.
        page.goto(base + f"/lead/{pid}#export")
        page.fill("#export-version", "v-phone")
        page.check("input[name=allow_incomplete]")
        page.get_by_role("button", name="Export", exact=True).click()
        page.wait_for_load_state("load")
        assert page.get_by_test_id("export-summary").is_visible()
        _check_phone_page(page, "export result", axe, found)
    with new_page(browser, viewport=PHONE) as page:
        for _ in range(5):  # bob's logins locked (a minute) from this address: the users page offers Unlock
            page.goto(base + "/login")
            page.fill("#username", "bob")
            page.fill("#password", "not bob's password")
            page.press("#password", "Enter")
            page.wait_for_load_state("load")
    with new_page(browser, viewport=PHONE) as page:
        log_in(page, base, "ada")
        page.goto(base + "/admin/users")
        assert page.get_by_role("button", name="Unlock bob").is_visible()
        for path in ("/admin/users", "/admin/audit", "/admin/audit?action=login_failed"):
            response = page.goto(base + path)
            assert response.status == 200, path
            _check_phone_page(page, "admin " + path, axe, found)
    assert found == {"too wide": {}, "axe": {}}
    if axe is None:
        pytest.skip("axe-core is not installed (pip install axe-core-python): the WCAG check did not run")


def _check_phone_page(page, name: str, axe: str | None, found: dict, *, header: bool = True) -> None:
    """The open page at 375 px: no page-level sideways scrolling (recorded in ``found``), every
    sideways-scrolling box focusable and named, axe-core's WCAG A/AA violations (recorded), and
    "Log out" inside the header (``header``: the page has the app's header)."""
    page.wait_for_load_state("load")
    width = page.evaluate("document.documentElement.scrollWidth")
    if width > PHONE["width"]:
        found["too wide"][name] = (width, page.evaluate(WIDE))
    # A box that scrolls sideways is reachable by keyboard and named (axe: scrollable-region-focusable).
    unnamed = page.evaluate(SCROLLERS)
    assert unnamed == [], (name, unnamed)
    if axe is not None:
        violations = _axe_violations(page, axe)
        if violations:
            found["axe"][name] = violations
    if not header:
        return
    bar = page.locator("header.topbar").bounding_box()
    logout = page.get_by_role("button", name="Log out").bounding_box()
    assert logout["x"] >= 0 and logout["x"] + logout["width"] <= PHONE["width"], name
    assert bar["y"] <= logout["y"] and logout["y"] + logout["height"] <= bar["y"] + bar["height"], name


# Elements that scroll sideways (content wider than the box) without tabindex, a role and a label.
SCROLLERS = """Array.from(document.querySelectorAll('body *')).filter(e => e.scrollWidth > e.clientWidth + 1
  && ['auto', 'scroll'].includes(getComputedStyle(e).overflowX)
  && !(e.tabIndex >= 0 && e.getAttribute('role') === 'region' && e.getAttribute('aria-label')))
  .map(e => e.tagName + '.' + e.className)"""


def _axe_source() -> str | None:
    """axe-core's script, from the axe-core-python package or a node_modules folder; None if absent."""
    from importlib.util import find_spec
    from pathlib import Path

    spec = find_spec("axe_core_python")
    candidates = [Path(spec.origin).parent / "axe.min.js"] if spec and spec.origin else []
    candidates.append(Path(__file__).resolve().parents[2] / "node_modules" / "axe-core" / "axe.min.js")
    for path in candidates:
        if path.is_file():
            return path.read_text(encoding="utf-8")
    return None


def _axe_violations(page, source: str) -> list[str]:
    """axe-core's WCAG 2.0/2.1 A and AA violations on the page: rule id and the first offending nodes.
    The script is evaluated through the DevTools protocol, so the page's CSP does not block it."""
    page.evaluate(source)
    result = page.evaluate("""async () => {
      const r = await axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']}});
      return r.violations.map(v => v.id + ': ' + v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(', '));
    }""")
    return result
