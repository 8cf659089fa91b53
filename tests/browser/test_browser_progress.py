"""The lead's progress page in a real Chromium against `golden serve`: every judge's figures equal
an independent count from the store's tables (plain SQL), the idle judge is marked, the charts are
drawn (inline SVG, no script library)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from curation.store.models import utcnow
from tests.support.browser import golden_serve, log_in, require_chromium
from tests.support.judgments import judge_queue
from tests.support.projects import assigned_project, sqlite_store

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    require_chromium()
    folder = tmp_path_factory.mktemp("progress")
    with sqlite_store(folder) as (url, engine):
        setup = assigned_project(engine, folder / "recipes", n_queries=6, docs_per_query=5, overlap=12, hold=True,
                                 judges=("alice", "bob", "carol"))
        now = utcnow()
        # alice: 10 of her 12 overlap pairs, the last over 2 hours ago; bob: 8 answers in the last
        # 20 minutes; carol: none. (Main pairs are held, so only the overlap pairs can be judged now.)
        judge_queue(engine, setup.project_id, "alice", lambda d: int(d[-1]) % 3, start=now - timedelta(hours=3),
                    seconds=300.0, limit=10)
        judge_queue(engine, setup.project_id, "bob", lambda d: 1, start=now - timedelta(minutes=20), seconds=45.0,
                    limit=8)
        with golden_serve(url, folder, secret="browser-progress-secret") as base:
            yield {"base": base, "engine": engine, "setup": setup}


def _store_counts(engine, project_id):
    """Per judge: assigned, labelled, main (held) rows, answers in the last hour, last answer."""
    hour_ago = datetime.now(UTC) - timedelta(hours=1)
    with engine.connect() as conn:
        rows = conn.execute(text(
            "SELECT u.name, COUNT(*), SUM(CASE WHEN a.done_at IS NOT NULL THEN 1 ELSE 0 END), "
            "SUM(CASE WHEN a.kind = 'main' THEN 1 ELSE 0 END) FROM assignment a JOIN user u ON u.id = a.judge_id "
            "WHERE a.project_id = :p GROUP BY u.name"), {"p": project_id}).all()
        answers = conn.execute(text(
            "SELECT u.name, j.answered_at FROM judgment j JOIN user u ON u.id = j.judge_id WHERE j.project_id = :p"),
            {"p": project_id}).all()
    last_hour = {}
    for name, at in answers:
        at = datetime.fromisoformat(str(at)).replace(tzinfo=UTC)
        last_hour[name] = last_hour.get(name, 0) + (at > hour_ago)
    return {name: dict(assigned=int(n), done=int(d), held=int(m), hour=last_hour.get(name, 0))
            for name, n, d, m in rows}


def test_progress_figures_equal_an_independent_count(server, page):
    from playwright.sync_api import expect

    base, engine, setup = server["base"], server["engine"], server["setup"]
    log_in(page, base, "lena", path=f"/login?next=/lead/{setup.project_id}/progress")
    expect(page.locator("[data-testid=judges-table]")).to_be_visible()
    counts = _store_counts(engine, setup.project_id)
    assert set(counts) == {"alice", "bob", "carol"}
    for name, c in counts.items():
        row = page.locator(f"tr[data-judge={name}]")
        shown = {col: row.locator(f"td[data-col={col}]").inner_text() for col in ("done", "assigned", "held",
                                                                                  "per-hour-hour")}
        assert shown == {"done": str(c["done"]), "assigned": str(c["assigned"]), "held": str(c["held"]),
                         "per-hour-hour": str(c["hour"])}, name
    assert (counts["alice"]["done"], counts["bob"]["done"], counts["bob"]["hour"]) == (10, 8, 8)
    # alice (2 h since her last answer) and carol (never) are idle; bob is not.
    assert page.locator("tr.idle").evaluate_all("rows => rows.map(r => r.dataset.judge)") == ["alice", "carol"]
    expect(page.locator("tr[data-judge=carol] td[data-col=last]")).to_have_text("never")
    expect(page.locator("tr[data-judge=bob] td[data-col=median]")).to_have_text("45.0")
    # Project: overlap set state from the store too.
    with engine.connect() as conn:
        overlap = conn.execute(text("SELECT COUNT(DISTINCT pair_id) FROM assignment WHERE project_id = :p "
                                    "AND kind = 'overlap'"), {"p": setup.project_id}).scalar()
    expect(page.locator("[data-testid=overlap-pairs]")).to_have_text(str(overlap))
    # The pace over the last hour with answers: bob's 8 answers, 45 s apart (alice's are over 2 h old).
    expect(page.locator("[data-testid=pace]")).to_have_text(f"{7 / (7 * 45 / 3600):.1f}")
    assert page.locator("svg[data-chart=progress] g[data-part=done]").count() == 2  # alice and bob have done some
    assert page.locator("svg[data-chart=hourly] rect").count() >= 2
    # A longer idle time: alice is no longer idle.
    page.fill("#idle", "180")
    page.click("text=Apply")
    expect(page.locator("tr[data-judge=alice]")).not_to_have_class("idle")
    assert page.locator("tr.idle").evaluate_all("rows => rows.map(r => r.dataset.judge)") == ["carol"]
