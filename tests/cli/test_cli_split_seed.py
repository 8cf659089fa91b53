"""`golden export split --seed` defaults to 0 like every other --seed (it used to default to None and show
no default); on a project already split, leaving --seed out keeps the project's seed."""

from click.testing import CliRunner
from sqlmodel import select

from curation.cli import main
from curation.export.split import SplitQuery, assign_splits
from curation.store.engine import session as new_session
from curation.store.models import Query
from tests.support.projects import pairs_project

PAIRS = [(f"q{i:02d}", f"d{i % 5}") for i in range(12)]


def _splits(engine) -> dict[str, str | None]:
    with new_session(engine) as s:
        return {q.qid: q.split for q in s.exec(select(Query))}


def test_split_seed_defaults_to_0_and_a_split_project_keeps_its_seed(engine, tmp_path):
    pairs_project(engine, tmp_path / "in", PAIRS)
    url = engine.url.render_as_string(hide_password=False)
    runner = CliRunner()
    assert "[default: 0]" in " ".join(runner.invoke(main, ["export", "split", "--help"]).output.split())
    res = runner.invoke(main, ["export", "split", "--db", url, "--holdout", "0.35"])
    assert res.exit_code == 0 and "holdout 0.35, seed 0;" in res.output, res.output
    # The split assign_splits draws with seed 0 for the same queries, computed apart from the CLI.
    with new_session(engine) as s:
        queries = [SplitQuery(q.qid, q.stratum_key or "", None) for q in s.exec(select(Query))]
    assert _splits(engine) == assign_splits(queries, holdout=0.35, seed=0)
    res = runner.invoke(main, ["export", "split", "--db", url])
    assert res.exit_code == 0 and "seed 0; assigned 0 new queries" in res.output, res.output
    res = runner.invoke(main, ["export", "split", "--db", url, "--seed", "5"])
    assert res.exit_code == 1 and "already split with seed 0" in res.output


def test_a_project_split_with_another_seed_keeps_it_when_seed_is_left_out(engine, tmp_path):
    pairs_project(engine, tmp_path / "in", PAIRS)
    url = engine.url.render_as_string(hide_password=False)
    runner = CliRunner()
    res = runner.invoke(main, ["export", "split", "--db", url, "--holdout", "0.35", "--seed", "3"])
    assert res.exit_code == 0, res.output
    before = _splits(engine)
    res = runner.invoke(main, ["export", "split", "--db", url])  # the default 0 must not contradict the stored 3
    assert res.exit_code == 0 and "seed 3; assigned 0 new queries" in res.output, res.output
    assert _splits(engine) == before
