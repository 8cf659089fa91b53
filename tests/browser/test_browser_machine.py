"""The lead's "Machine judges" panel in a real Chromium against `golden serve`: a machine judge
derived from the robust03 qrels with a lean towards long documents shows its agreement next to the
humans' on the overlap set (the same figures `golden labels calibrate --json` gives), the verdict and its
rule, and the bias checks with the length check flagged; a judge gets 403."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from curation.cli import main
from curation.machine.labels import import_machine_labels
from curation.store.engine import session as new_session
from curation.store.projects import get_project
from tests.conftest import shared_path
from tests.support.browser import golden_serve, log_in, require_chromium
from tests.support.machine import machine_rows, robust_project, write_machine
from tests.support.projects import sqlite_store

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    require_chromium()
    folder = tmp_path_factory.mktemp("machine")
    with sqlite_store(folder) as (url, engine):
        truth, facts = robust_project(engine, shared_path, folder)
        with new_session(engine) as s:
            import_machine_labels(s, write_machine(folder / "long.jsonl", machine_rows(truth, facts, "long")),
                                  machine="llm-<b>long</b>", project="r3")
            pid = get_project(s, "r3").id
        report = json.loads(CliRunner().invoke(main, ["labels", "calibrate", "--machine", "llm-<b>long</b>", "--json",
                                                      "--db", url]).output)
        with golden_serve(url, folder, secret="browser-machine-secret", threads=4) as base:
            yield {"base": base, "pid": pid, "report": report}


def test_lead_sees_machine_figures_next_to_the_humans_and_the_bias_checks(server, page):
    from playwright.sync_api import expect

    base, pid, r = server["base"], server["pid"], server["report"]
    log_in(page, base, "lena", path=f"/login?next=/lead/{pid}")
    expect(page.locator("[data-testid=machine-link]")).to_have_text("llm-<b>long</b>")  # named on the dashboard
    page.click("[data-testid=machine-link]")
    panel = page.locator("[data-testid=machine-panel]")
    expect(panel).to_be_visible()
    expect(page.locator("[data-testid=machine-name]")).to_have_text("llm-<b>long</b>")  # shown as text, not markup
    assert page.locator("[data-testid=machine-name] b").count() == 0
    table = page.locator("[data-testid=machine-agreement]")
    expect(table).to_contain_text("Humans vs humans (overlap set, 150 pairs)")
    machine_pct = f"{100 * r['agreement']['measures']['agreement']['value']:.1f}%"
    human_pct = f"{100 * r['human_human']['measures']['agreement']['value']:.1f}%"
    row = table.locator("tr", has_text="Percent agreement")
    expect(row).to_contain_text(machine_pct)
    expect(row).to_contain_text(human_pct)
    kappa = table.locator("tr", has_text="Cohen's kappa").first
    expect(kappa).to_contain_text(f"{r['agreement']['measures']['kappa']['value']:.3f}")
    expect(page.locator("[data-testid=machine-verdict]")).to_contain_text(r["verdict"]["band"])
    expect(page.locator("[data-testid=machine-verdict]")).to_contain_text("Rule:")
    length = page.locator("[data-testid=check-length]")
    expect(length).to_have_class("flagged")
    expect(length).to_contain_text("more lenient on longer documents")
    expect(page.locator("[data-testid=check-run]")).to_have_class("ok")
    expect(page.locator("[data-testid=check-stratum]")).to_have_class("ok")
    expect(page.locator("[data-testid=check-repeats]")).to_have_class("ok")
    expect(page.locator("[data-testid=failed-checks]")).to_have_text("Failed checks: length")
    page.locator("[data-testid=check-length] summary").click()
    expect(length.locator("tr.flagged")).to_contain_text("from decile")


def test_a_judge_who_opens_the_machine_panel_gets_403(server, page):
    base, pid = server["base"], server["pid"]
    log_in(page, base, "alice")
    res = page.goto(f"{base}/lead/{pid}/machines")
    assert res.status == 403
