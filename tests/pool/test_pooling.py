"""Pooling: trec_eval order, the union of top-k, blind order, --queries, --extend, bad input, robust03."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import statistics
from itertools import combinations
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from curation.cli import main
from curation.formats.fileio import InputError
from curation.formats.pool_file import pool_meta_path, read_pool
from curation.formats.runs import _parse_lines, read_run, read_runs
from curation.pool.pooling import make_pool

# Two small runs. In run A, query 1 has a tie at the depth-2 cut: d2 and d3 both score 0.8, so
# trec_eval's order (docid descending) puts d3 before d2, whatever the rank column says.
RUN_A = """1 Q0 d1 1 0.9 A
1 Q0 d2 2 0.8 A
1 Q0 d3 3 0.8 A
1 Q0 d4 4 0.1 A
2 Q0 x1 1 5 A
2 Q0 x2 2 4 A
"""
RUN_B = """1 Q0 d5 1 3.0 B
1 Q0 d1 2 2.0 B
1 Q0 d2 3 1.0 B
3 Q0 y1 1 1 B
"""


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.fixture
def two_runs(tmp_path):
    return write(tmp_path / "a.trec", RUN_A), write(tmp_path / "b.trec", RUN_B)


def test_pool_is_union_of_top_k_in_trec_eval_order(two_runs):
    runs = [read_run(p) for p in two_runs]
    pool = make_pool(runs, depth=2, seed=0)
    got = {(p.qid, p.docid): p.systems for p in pool.pairs}
    # By hand: A's top 2 for query 1 is d1, d3 (tie broken by docid descending); B's is d5, d1.
    assert got == {
        ("1", "d1"): {"A": 1, "B": 2},
        ("1", "d3"): {"A": 2},
        ("1", "d5"): {"B": 1},
        ("2", "x1"): {"A": 1},
        ("2", "x2"): {"A": 2},
        ("3", "y1"): {"B": 1},
    }
    st = pool.stats
    assert (st.queries, st.pairs, st.per_query_min, st.per_query_median, st.per_query_max) == (3, 6, 1, 2, 3)
    assert st.ceiling == 4
    # Shared top-2 documents: query 1 shares d1; queries 2 and 3 share nothing. Mean over 3 queries.
    assert st.overlap == [("A", "B", 1, pytest.approx(1 / 3))]


def test_order_is_a_seeded_permutation_independent_of_run_order(two_runs):
    runs = [read_run(p) for p in two_runs]
    pool = make_pool(runs, depth=3, seed=5)
    by_q: dict[str, list[int]] = {}
    for p in pool.pairs:
        by_q.setdefault(p.qid, []).append(p.order)
    assert all(sorted(v) == list(range(1, len(v) + 1)) for v in by_q.values())
    # The order of a query is the docids sorted by sha256(seed, qid, docid) (checked by hand here).
    q1 = [p.docid for p in sorted((p for p in pool.pairs if p.qid == "1"), key=lambda p: p.order)]
    expect = sorted(["d1", "d2", "d3", "d5"], key=lambda d: hashlib.sha256(f"5\x001\x00{d}".encode()).digest())
    assert q1 == expect
    again = make_pool(list(reversed(runs)), depth=3, seed=5)
    assert {(p.qid, p.docid, p.order) for p in again.pairs} == {(p.qid, p.docid, p.order) for p in pool.pairs}


def test_order_changes_with_the_seed(tmp_path):
    lines = "".join(f"1 Q0 doc{i:03d} {i} {100 - i} s\n" for i in range(50))
    run = read_run(write(tmp_path / "r.trec", lines))
    orders = [tuple(p.docid for p in make_pool([run], depth=50, seed=s).pairs) for s in range(3)]
    assert len(set(orders)) == 3
    # Not the system's ranking either.
    assert list(orders[0]) != [f"doc{i:03d}" for i in range(50)]


def test_queries_restrict_and_count_skipped(two_runs, tmp_path):
    queries = write(tmp_path / "q.jsonl", '{"qid": "2", "text": "x"}\n{"qid": "9", "text": "none"}\n')
    out = tmp_path / "pool.jsonl"
    res = CliRunner().invoke(
        main, ["pool", *map(str, two_runs), "--depth", "2", "--queries", str(queries), "--out", str(out)]
    )
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert {r["qid"] for r in rows} == {"2"}
    assert "2 queries of the runs are not in" in res.output  # queries 1 and 3
    assert "1 queries of" in res.output and "no results in any run: 9" in res.output
    meta = json.loads(pool_meta_path(out).read_text())
    assert meta["skipped_qids"] == ["1", "3"] and meta["queries_without_results"] == ["9"]
    assert meta["queries_file"]["sha256"] == hashlib.sha256(queries.read_bytes()).hexdigest()


def test_cli_writes_pool_and_metadata(two_runs, tmp_path):
    out = tmp_path / "out" / "pool.jsonl"
    res = CliRunner().invoke(main, ["pool", *map(str, two_runs), "--depth", "2", "--seed", "3", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "pairs per query: min 1, median 2, max 3; ceiling 2 runs x 2 = 4" in res.output
    # A has no line for query 3, B none for query 2.
    assert "runs with results for only some of the pooled queries: A (2 of 3), B (2 of 3)" in res.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [list(r) for r in rows[:1]] == [["qid", "docid", "order", "systems"]]
    assert len(rows) == 6
    meta = json.loads((tmp_path / "out" / "pool.meta.json").read_text())
    assert (meta["depth"], meta["seed"], meta["pairs"]) == (2, 3, 6)
    assert [(r["name"], r["path"]) for r in meta["runs"]] == [("A", "../a.trec"), ("B", "../b.trec")]
    assert meta["runs"][0]["sha256"] == hashlib.sha256(two_runs[0].read_bytes()).hexdigest()
    # Same seed, same bytes.
    out2 = tmp_path / "again.jsonl"
    CliRunner().invoke(main, ["pool", *map(str, two_runs), "--depth", "2", "--seed", "3", "--out", str(out2)])
    assert out2.read_bytes() == out.read_bytes()


def test_help_states_trec_eval_order():
    res = CliRunner().invoke(main, ["pool", "--help"])
    assert res.exit_code == 0
    text = " ".join(res.output.split())
    assert "score descending, ties broken by docid descending, the rank column ignored" in text
    assert "Example:" in res.output


def test_extend_writes_only_new_pairs_after_the_old_order(two_runs, tmp_path):
    first = tmp_path / "pool.jsonl"
    runner = CliRunner()
    assert runner.invoke(main, ["pool", str(two_runs[0]), "--depth", "2", "--out", str(first)]).exit_code == 0
    old = {(p.qid, p.docid): p.order for p in read_pool(first)}
    new_path = tmp_path / "pool-new.jsonl"
    res = runner.invoke(
        main, ["pool", str(two_runs[1]), "--depth", "2", "--extend", str(first), "--out", str(new_path)]
    )
    assert res.exit_code == 0, res.output
    new = read_pool(new_path)
    # B's top 2: query 1 -> d5, d1 (d1 already pooled by A); query 3 -> y1.
    assert {(p.qid, p.docid) for p in new} == {("1", "d5"), ("3", "y1")}
    max_old = {q: max(o for (qq, _), o in old.items() if qq == q) for q, _ in old}
    for p in new:
        assert p.order == max_old.get(p.qid, 0) + 1
    assert "1 of these pairs are already in" in res.output
    meta = json.loads(pool_meta_path(new_path).read_text())
    assert meta["extends"]["pairs"] == len(old)
    # Extending at another depth would mix depths in one pool.
    res = runner.invoke(
        main, ["pool", str(two_runs[1]), "--depth", "3", "--extend", str(first), "--out", str(tmp_path / "x.jsonl")]
    )
    assert res.exit_code == 1 and "was pooled at depth 2: extend it with --depth 2" in res.output
    assert not (tmp_path / "x.jsonl").exists()
    # The old pool is untouched and --out cannot overwrite it.
    before = first.read_bytes()
    res = runner.invoke(main, ["pool", str(two_runs[1]), "--extend", str(first), "--out", str(first)])
    assert res.exit_code == 2 and f"--out {first} is the input --extend {first}" in res.output
    assert first.read_bytes() == before


@pytest.mark.parametrize(
    "bad, line, words",
    [
        ("1 Q0 d1 1 0.5 s\n1 Q0 d2 2 0.4\n", 2, "has 5 fields, expected 6"),
        ("1 Q0 d1 1 0.5 s extra\n1 Q0 d2 2 0.4\n", 2, "has 5 fields, expected 6"),  # extra fields: ignored
        ("1 Q0 d1 1 0.5 s\n1 Q0 d2 2 high s\n", 2, "score 'high' is not a number"),
        ("1 Q0 d1 1 0.5 s\n1 Q0 d2 2 NA s\n", 2, "score 'NA' is not a number"),
        ("1 Q0 d1 1 0.5 s\n2 Q0 d1 1 0.5 s\n1 Q0 d1 2 0.4 s\n", 3, "docid 'd1' appears twice for query '1'"),
        ("1\tQ0\td1\t1\t0.5\ts\n1\tQ0\t\t2\t0.4\ts\n", 2, "has 5 fields, expected 6"),
        ("1 Q0 d1 1 0.5 s\n1 Q0 d2 2 nan s\n", 2, "score is NaN"),
    ],
)
def test_bad_run_stops_with_file_and_line_and_writes_nothing(tmp_path, two_runs, bad, line, words):
    bad_path = tmp_path / "bad.trec.gz"
    with gzip.open(bad_path, "wt") as fh:
        fh.write(bad)
    out = tmp_path / "pool.jsonl"
    res = CliRunner().invoke(main, ["pool", str(two_runs[0]), str(bad_path), "--out", str(out)])
    assert res.exit_code == 1
    assert f"Error: {bad_path}:{line}: {words}" in res.output
    assert not out.exists() and not pool_meta_path(out).exists()
    assert list(tmp_path.glob(".pool*")) == []  # no temporary file left behind


def test_duplicate_run_names_must_be_named_apart(tmp_path):
    a = write(tmp_path / "a.trec", "1 Q0 d1 1 1 same\n")
    b = write(tmp_path / "b.trec", "1 Q0 d2 1 1 same\n")
    out = tmp_path / "pool.jsonl"
    res = CliRunner().invoke(main, ["pool", str(a), str(b), "--out", str(out)])
    assert res.exit_code == 1 and "NAME=PATH" in res.output and not out.exists()
    res = CliRunner().invoke(main, ["pool", f"first={a}", f"second={b}", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert {tuple(r["systems"]) for r in map(json.loads, out.read_text().splitlines())} == {("first",), ("second",)}


def test_jsonl_runs_pool_like_trec(tmp_path):
    js = write(
        tmp_path / "sys.jsonl",
        "".join(json.dumps({"qid": 1, "docid": d, "score": s}) + "\n" for d, s in [("a", 1), ("b", 3), ("c", 3)]),
    )
    pool = make_pool([read_run(js)], depth=2, seed=0)
    assert {p.docid: p.systems["sys"] for p in pool.pairs} == {"c": 1, "b": 2}


@pytest.mark.parametrize(
    "text",
    [
        # tabs, interleaved qids
        "1\tQ0\td1\t1\t0.5\ts\n1\tQ0\td2\t2\t0.5\ts\n2\tQ0\td1\t1\t1e3\ts\n1\tQ0\td0\t3\t0.5\ts\n",
        "1 Q0 b 1 2 s\r\n1 Q0 a 2 2 s\r\n1 Q0 c 3 -1.5 s\r\n",  # spaces, CRLF
        "1 Q0 b 1 2 s \n1  Q0 a 2 2 s\n",  # trailing and double spaces
        "1 Q0 caf\u00e9 1 2 s\n1 Q0 cafe 2 2 s\n",  # non-ASCII docid
        "1 Q0 a 1 2 s1\n1 Q0 b 2 3 s2\n",  # two tags: the name comes from the file
        # sorted, ties at the cut
        "1\tQ0\tb\t1\t5\ts\n1\tQ0\ta\t2\t4\ts\n1\tQ0\tc\t3\t4\ts\n1\tQ0\td\t4\t4\ts\n2\tQ0\tz\t1\t1\ts\n",
        # sorted, ties inside
        "1\tQ0\ta\t1\t3\ts\n1\tQ0\tb\t2\t3\ts\n1\tQ0\tc\t3\t1\ts\n2\tQ0\tx\t1\t2\ts\n2\tQ0\ty\t2\t2\ts\n",
        "1\tQ0\ta\t1\t1\ts\n1\tQ0\tb\t2\t3\ts\n1\tQ0\tc\t3\t2\ts\n2\tQ0\tx\t1\t2\ts\n",  # blocks, not sorted
        # interleaved, last row last group
        "1\tQ0\ta\t1\t1\ts\n2\tQ0\tb\t1\t3\ts\n1\tQ0\tc\t2\t2\ts\n2\tQ0\td\t2\t5\ts\n",
    ],
)
@pytest.mark.parametrize("depth", [None, 1, 2])
def test_fast_reader_equals_line_by_line_reader(tmp_path, text, depth):
    path = tmp_path / "run.trec"
    path.write_bytes(text.encode("utf-8"))
    run = read_run(path, depth=depth)
    rankings, scores, tags, _ = _parse_lines(path.read_bytes(), str(path), False, depth)
    assert run.rankings == rankings and run.scores == scores
    assert run.name == (next(iter(tags)) if len(tags) == 1 else "run")


def test_multi_member_gzip(tmp_path):
    path = tmp_path / "run.gz"
    path.write_bytes(gzip.compress(b"1\tQ0\ta\t1\t1\ts\n") + gzip.compress(b"1\tQ0\tb\t2\t2\ts\n"))
    assert read_run(path).rankings == {"1": ["b", "a"]}


# --------------------------------------------------------------------------------------------
# The real TREC 2003 Robust runs, checked against an independent pandas computation


def _pandas_top(path: Path, depth: int) -> pd.DataFrame:
    df = pd.read_csv(path, sep=r"\s+", header=None, names=["q", "q0", "d", "r", "s", "t"], dtype={"q": str, "d": str})
    df = df.sort_values(["q", "s", "d"], ascending=[True, False, False])
    df["rank"] = df.groupby("q").cumcount() + 1
    return df[df["rank"] <= depth]


@pytest.fixture
def robust_runs(shared):
    """Six of the 17 TREC 2003 Robust runs (skipped where ../shared/data is absent)."""
    return sorted(shared("robust03", "runs").glob("input.*.gz"))[:6]


def test_robust03_pool_matches_pandas(robust_runs):
    depth = 20
    runs = read_runs(robust_runs, depth=depth)
    pool = make_pool(runs, depth=depth, seed=11)
    tops = {run.name: _pandas_top(path, depth) for run, path in zip(runs, robust_runs)}
    expected: dict[tuple[str, str], dict[str, int]] = {}
    for name, top in tops.items():
        for q, d, r in zip(top["q"], top["d"], top["rank"]):
            expected.setdefault((q, d), {})[name] = int(r)
    assert {(p.qid, p.docid): p.systems for p in pool.pairs} == expected
    sizes = pd.Series([q for q, _ in expected]).value_counts()
    assert (pool.stats.per_query_min, pool.stats.per_query_max) == (sizes.min(), sizes.max())
    assert pool.stats.per_query_median == statistics.median(sizes.tolist())
    for a, b, total, _ in pool.stats.overlap:
        ta = set(zip(tops[a]["q"], tops[a]["d"]))
        tb = set(zip(tops[b]["q"], tops[b]["d"]))
        assert total == len(ta & tb), (a, b)
    assert len(pool.stats.overlap) == len(list(combinations(runs, 2)))


def test_robust03_full_read_matches_line_reader(robust_runs):
    for path in robust_runs[:3]:
        run = read_run(path)
        rankings, scores, _, _ = _parse_lines(gzip.decompress(path.read_bytes()), str(path), False, None)
        assert run.rankings == rankings and run.scores == scores


def test_robust03_extend_keeps_old_order(robust_runs, tmp_path):
    runner = CliRunner()
    first, new = tmp_path / "p.jsonl", tmp_path / "p-new.jsonl"
    res = runner.invoke(main, ["pool", *map(str, robust_runs[:3]), "--depth", "10", "--out", str(first)])
    assert res.exit_code == 0, res.output
    res = runner.invoke(
        main, ["pool", *map(str, robust_runs[3:]), "--depth", "10", "--extend", str(first), "--out", str(new)]
    )
    assert res.exit_code == 0, res.output
    old, added = read_pool(first), read_pool(new)
    union = make_pool(read_runs(robust_runs, depth=10), depth=10, seed=0)
    assert {(p.qid, p.docid) for p in old} | {(p.qid, p.docid) for p in added} == {
        (p.qid, p.docid) for p in union.pairs
    }
    assert not {(p.qid, p.docid) for p in old} & {(p.qid, p.docid) for p in added}
    # Per query, old orders are 1..n and the new ones continue from n + 1.
    for q in {p.qid for p in added}:
        n_old = sum(1 for p in old if p.qid == q)
        assert sorted(p.order for p in added if p.qid == q) == list(
            range(n_old + 1, n_old + 1 + sum(1 for p in added if p.qid == q))
        )


def test_read_pool_rejects_bad_lines(tmp_path):
    path = write(
        tmp_path / "p.jsonl", '{"qid": "1", "docid": "a", "order": 1}\n{"qid": "1", "docid": "a", "order": 2}\n'
    )
    with pytest.raises(InputError, match=r"p.jsonl:2: pair \('1', 'a'\) appears twice"):
        read_pool(path)


def test_written_files_get_the_usual_permissions_not_tempfiles(tmp_path):
    import os
    import stat

    from curation.formats.fileio import atomic_write

    old = os.umask(0o022)
    try:
        with atomic_write(tmp_path / "out.jsonl") as fh:
            fh.write("{}\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "out.jsonl").stat().st_mode) == 0o644


@pytest.mark.parametrize("ahead", [None, 1])  # the default bound, and one byte: files load just ahead
def test_runs_read_in_threads_equal_one_by_one(robust_runs, monkeypatch, ahead):
    import curation.formats.runs as runs_module

    if ahead is not None:
        monkeypatch.setattr(runs_module, "_LOAD_AHEAD_BYTES", ahead)
    ticked = []
    got = read_runs(robust_runs, depth=20, workers=3, progress=lambda r: ticked.append(r.name))
    alone = [read_run(p, depth=20) for p in robust_runs]
    assert [[r.name, r.path, r.sha256, r.depth, r.rankings, r.scores] for r in got] == [
        [r.name, r.path, r.sha256, r.depth, r.rankings, r.scores] for r in alone
    ]
    assert ticked == [r.name for r in alone]  # in order


@pytest.mark.parametrize("kinds", [("parse", "parse"), ("gzip", "parse"), ("parse", "gzip"), ("gzip", "gzip")])
def test_threaded_read_raises_the_first_bad_file_in_order(tmp_path, kinds):
    # A file can fail while loading (a corrupt gzip stream) or while parsing (a bad line); whichever
    # way each fails, the error is that of the first bad file in the order given.
    good = "".join(f"1 Q0 d{i} {i} {100 - i} A\n" for i in range(1, 40))
    paths = [write(tmp_path / "good1.trec", good)]
    for k, kind in enumerate(kinds, 1):
        if kind == "gzip":
            path = tmp_path / f"bad{k}.trec.gz"
            path.write_bytes(gzip.compress(good.encode())[:-12])
        else:
            path = write(tmp_path / f"bad{k}.trec", good + f"1 Q0 z{k} 1 not-a-score A\n")
        paths.append(path)
    paths.append(write(tmp_path / "good2.trec", good))
    with pytest.raises(InputError) as alone:
        read_run(paths[1])
    with pytest.raises(InputError) as threaded:
        read_runs(paths, workers=2)
    assert str(threaded.value) == str(alone.value) and "bad1.trec" in str(alone.value)


def test_cli_restores_the_garbage_collector_after_pooling(two_runs, tmp_path):
    # golden pool pauses the cyclic garbage collector while it works; in-process callers get it back,
    # whether the command succeeds or fails.
    import gc

    assert gc.isenabled()
    out = tmp_path / "pool.jsonl"
    res = CliRunner().invoke(main, ["pool", *map(str, two_runs), "--depth", "2", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert gc.isenabled()
    bad = write(tmp_path / "bad.trec", "1 Q0 d1 1 high A\n")
    res = CliRunner().invoke(main, ["pool", str(bad), "--out", str(tmp_path / "p2.jsonl")])
    assert res.exit_code == 1 and "bad.trec:1:" in res.output
    assert gc.isenabled()


def test_cli_freezes_the_objects_left_only_as_the_process_ends(two_runs, tmp_path):
    # The interpreter's last collection would walk every object left (numpy's and pyarrow's
    # modules): golden pool moves them out of its sight at exit (gc.freeze), not before, so an
    # in-process caller keeps a collector that sees everything. An exit handler registered before
    # the command runs after golden's (last in, first out) and sees what it did.
    import subprocess
    import sys

    script = (
        "import atexit, gc, os, sys\n"
        "from curation.cli import main\n"
        "atexit.register(lambda: print('at exit', gc.get_freeze_count() > 0, flush=True))\n"
        "main.main(sys.argv[1:], standalone_mode=False)\n"
        "print('after the command', gc.get_freeze_count(), gc.isenabled(), flush=True)\n"
    )
    out = tmp_path / "pool.jsonl"
    root = Path(__file__).resolve().parents[2]
    cmd = [sys.executable, "-c", script, "pool", *map(str, two_runs), "--depth", "2", "--out", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=root, env={**os.environ, "PYTHONPATH": str(root)})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[-2:] == ["after the command 0 True", "at exit True"]
    assert out.exists()


def test_median_is_statistics_median():
    import random

    from curation.pool.pooling import _median

    rng = random.Random(3)
    for n in range(1, 40):
        values = [rng.randint(0, 50) for _ in range(n)]
        got, expected = _median(values), statistics.median(values)
        assert got == expected and type(got) is type(expected)
