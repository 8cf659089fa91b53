"""`golden demo` on a folder whose store holds work (re-running it silently wiped the
store): a judge labels a pair in a real Chromium on the demo's store, then `golden demo` on the
same folder refuses and leaves the store as it was; --force replaces it."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner
from sqlmodel import select

from curation.cli import main
from curation.store.engine import make_engine
from curation.store.engine import session as new_session
from curation.store.models import Judgment
from tests.support.browser import golden_serve, log_in, require_chromium

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_the_demo_refuses_to_overwrite_a_judged_store(tmp_path, page):
    from playwright.sync_api import expect

    require_chromium()
    folder = tmp_path / "demo"
    args = ["demo", "--dir", str(folder), "--seed", "4", "--no-serve"]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    password = re.search(r"judge\s+alice\s+password (\S+)", res.output).group(1)
    store = folder / "golden.db"
    url = f"sqlite:///{store}"
    with golden_serve(url, tmp_path, secret="demo-secret") as base:
        log_in(page, base, "alice", password=password)
        page.wait_for_selector("#pair [data-key='1']")
        page.wait_for_load_state("load")
        page.keyboard.press("1")  # alice labels her first pair
        expect(page.locator("#progress-counts")).to_contain_text("1 / ")
    engine = make_engine(url)
    try:
        with new_session(engine) as s:
            assert [j.grade for j in s.exec(select(Judgment)).all()] == [1]
    finally:
        engine.dispose()
    kept = store.read_bytes()

    res = CliRunner().invoke(main, args)
    assert res.exit_code == 1
    assert f"{store} holds work (1 judgment)" in res.output and "--force" in res.output
    assert store.read_bytes() == kept
    res = CliRunner().invoke(main, [*args, "--force"])
    assert res.exit_code == 0, res.output
    engine = make_engine(url)
    try:
        with new_session(engine) as s:
            assert s.exec(select(Judgment)).all() == []
    finally:
        engine.dispose()
