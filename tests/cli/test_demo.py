"""golden demo: the generated data look like the real thing, and the path runs on them."""

from __future__ import annotations

import json
import shlex

import ir_measures
import pandas as pd
import pytest
from click.testing import CliRunner
from ir_measures import nDCG
from sqlmodel import select

from curation.cli import main
from curation.cli.demo import demo_commands
from curation.demo import SYSTEMS, build_demo, generate_demo_data, prepare_folder
from curation.formats.normalize import normalize_text


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return build_demo(tmp_path_factory.mktemp("demo") / "golden-demo", seed=3)


def test_log_has_heavy_head_long_tail_and_strata(demo):
    log = pd.read_csv(demo.data.paths.log, dtype=str)
    assert list(log.columns) == ["ts", "user_id", "surface", "query"]
    traffic = log["query"].map(normalize_text).value_counts()
    assert 300 <= len(traffic) <= 900  # a few hundred distinct queries
    top_tenth = traffic.iloc[: len(traffic) // 10].sum() / traffic.sum()
    assert top_tenth > 0.5  # heavy head
    assert (traffic <= 3).mean() > 0.4  # long tail
    shares = log["surface"].value_counts(normalize=True)
    assert set(shares.index) == {"web", "app", "chat"}
    assert shares.min() > 0.05 and shares.max() / shares.min() > 1.5  # strata of different traffic
    # A query's stratum is a property of the query: nearly all its searches come from one surface.
    by_query = log.groupby(log["query"].map(normalize_text))["surface"]
    home_share = by_query.agg(lambda s: s.value_counts().iloc[0] / len(s))
    assert (home_share * traffic.reindex(home_share.index)).sum() / traffic.sum() > 0.9
    # People type the same query differently; normalisation collapses them.
    assert log["query"].nunique() > len(traffic)


def test_corpus_and_guidelines(demo):
    rows = [json.loads(line) for line in demo.data.paths.corpus.read_text(encoding="utf-8").splitlines()]
    assert 2000 <= len(rows) <= 6000
    assert len({r["id"] for r in rows}) == len(rows)
    assert all(r["text"] and r["title"] and r["url"].startswith("https://") for r in rows)
    guidelines = demo.data.paths.guidelines.read_text()
    assert all(f"**{g}:" in guidelines for g in (0, 1, 2))


def test_runs_differ_clearly_in_quality(demo):
    qrels = list(ir_measures.read_trec_qrels(str(demo.data.paths.hidden_qrels)))
    score = {}
    for name, path in zip(SYSTEMS, demo.data.paths.runs):
        run = list(ir_measures.read_trec_run(str(path)))
        score[name] = ir_measures.calc_aggregate([nDCG @ 10], qrels, run)[nDCG @ 10]
    assert score["hybrid-v2"] - score["bm25"] > 0.1
    assert score["bm25"] - score["embed-small"] > 0.1


def test_sample_and_pool_are_what_the_printed_commands_make(demo, tmp_path):
    paths = demo.data.paths
    rows = [json.loads(line) for line in paths.queries.read_text(encoding="utf-8").splitlines()]
    assert sum(1 for r in rows if r["stratum"] != {"source": "handwritten"}) == 40
    assert sum(1 for r in rows if r["stratum"] == {"source": "handwritten"}) == 5
    pool = [json.loads(line) for line in paths.pool.read_text().splitlines()]
    assert {p["qid"] for p in pool} <= {r["qid"] for r in rows}
    assert not demo.fetched.missing
    meta = json.loads(paths.pool_meta.read_text())
    assert meta["depth"] == 10 and [r["name"] for r in meta["runs"]] == list(SYSTEMS)
    runner = CliRunner()
    for key, path in (("sample", paths.queries), ("pool", paths.pool)):
        args = shlex.split(demo_commands(demo)[key])[1:]
        out_at = args.index("--out") + 1
        args[out_at] = str(tmp_path / f"{key}.jsonl")
        res = runner.invoke(main, args)
        assert res.exit_code == 0, res.output
        assert (tmp_path / f"{key}.jsonl").read_bytes() == path.read_bytes()


@pytest.mark.slow
def test_same_seed_same_bytes(demo, tmp_path):
    again = generate_demo_data(tmp_path / "again", seed=3)
    first = demo.data.paths
    for a, b in [(first.log, again.paths.log), (first.corpus, again.paths.corpus),
                 (first.hidden_qrels, again.paths.hidden_qrels),
                 *zip(first.runs, again.paths.runs)]:
        assert a.read_bytes() == b.read_bytes(), a.name
    other = generate_demo_data(tmp_path / "other", seed=4)
    assert other.paths.log.read_bytes() != first.log.read_bytes()


def test_demo_command(tmp_path):
    folder = tmp_path / "d"
    res = CliRunner().invoke(main, ["demo", "--dir", str(folder), "--seed", "1", "--no-serve"])
    assert res.exit_code == 0, res.output
    assert "Sampled the log, as:" in res.output and "Pooled the runs for those queries, as:" in res.output
    assert "pooled documents are in the corpus" in res.output
    assert "not part of the demo yet" not in res.output
    # An earlier demo folder can be written again; any other non-empty folder is refused.
    assert prepare_folder(folder) == folder
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "thesis.tex").write_text("keep me")
    res = CliRunner().invoke(main, ["demo", "--dir", str(busy)])
    assert res.exit_code == 1 and "not a golden demo folder" in res.output
    assert [p.name for p in busy.iterdir()] == ["thesis.tex"]


@pytest.mark.slow  # four demo runs
def test_demo_refuses_to_overwrite_a_store_with_work_unless_forced(tmp_path):
    """Before, re-running `golden demo` on a folder silently replaced its store, judgments and all."""
    from curation.judge import judging
    from curation.store import projects, users
    from curation.store.engine import make_engine
    from curation.store.engine import session as new_session
    from curation.store.models import Judgment

    folder = tmp_path / "d"
    args = ["demo", "--dir", str(folder), "--seed", "2", "--no-serve"]
    assert CliRunner().invoke(main, args).exit_code == 0
    # No work yet: running it again is allowed (a fresh store, new passwords).
    again = CliRunner().invoke(main, args)
    assert again.exit_code == 0, again.output

    store = folder / "golden.db"
    engine = make_engine(f"sqlite:///{store}")
    with new_session(engine) as s:  # alice judges one pair, through the API the judging page uses
        alice = users.get_user(s, "alice")
        task = judging.next_task(s, projects.get_project(s, "demo").id, alice)
        judging.submit(s, alice, task.token, grade=1)
    engine.dispose()
    before = store.read_bytes()

    res = CliRunner().invoke(main, args)
    assert res.exit_code == 1
    assert f"{store} holds work (1 judgment)" in res.output and "--force" in res.output
    assert store.read_bytes() == before  # untouched

    res = CliRunner().invoke(main, [*args, "--force"])
    assert res.exit_code == 0, res.output
    engine = make_engine(f"sqlite:///{store}")
    with new_session(engine) as s:
        assert s.exec(select(Judgment)).all() == []  # replaced, as asked
    engine.dispose()

    # A golden.db that is not a store at all is refused too (nothing to vouch for).
    (folder / "golden.db").write_bytes(b"not a database")
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 1 and "cannot be read as a golden store" in res.output
