"""`golden sample queries --dask`: on a local cluster, byte for byte the file one process writes."""

from __future__ import annotations

import gzip
import json
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from curation.cli import main
from curation.formats.fileio import InputError

pytestmark = pytest.mark.slow


def _rows(n, seed):
    """Log rows with a Zipf-like head, raw variants of one query (case, spaces, curly quotes,
    non-ASCII), queries in several markets, blank users, empty queries and zero counts."""
    rng = random.Random(seed)
    words = "weather news how do i return shoes cheap flights café \u201cquoted\u201d login reset".split()
    vocab = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 4))) for _ in range(300)]
    out = []
    for _ in range(n):
        q = vocab[min(int(rng.paretovariate(0.5)) - 1, len(vocab) - 1)]
        r = rng.random()
        if r < 0.1:
            q = q.upper()
        elif r < 0.15:
            q = f"  {q} "
        elif r < 0.16:
            q = ""
        market = rng.choice(["us", "us", "uk", "de"]) if rng.random() < 0.2 else ["us", "uk", "de"][len(q) % 3]
        user = "" if rng.random() < 0.05 else f"u{rng.randint(0, 80)}"
        out.append({"query": q, "user": user, "market": market, "n": rng.choice([1, 1, 1, 2, 0])})
    return out


@pytest.fixture(scope="module")
def log_parts(tmp_path_factory):
    """One log written as uneven pieces in several formats: a CSV, a gzip JSONL, a Parquet
    dataset folder of files with uneven row groups, and a tiny CSV."""
    folder = tmp_path_factory.mktemp("dasklog")
    rows = _rows(6000, 11)
    cuts = [0, 2500, 3100, 5990, 6000]
    a, b, c, d = (rows[cuts[i]:cuts[i + 1]] for i in range(4))

    def csv_text(rs):
        return "query,user,market,n\n" + "".join(
            '"{}",{},{},{}\n'.format(r["query"].replace('"', '""'), r["user"], r["market"], r["n"]) for r in rs)

    (folder / "a.csv").write_text(csv_text(a), encoding="utf-8")
    with gzip.open(folder / "b.jsonl.gz", "wt", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in b)
    ds = folder / "dataset" / "day=2"
    ds.mkdir(parents=True)
    for k, (lo, hi, group) in enumerate([(0, 400, 97), (400, 2890, 1000)]):
        part = c[lo:hi]
        table = pa.table({key: [r[key] for r in part] for key in ("query", "user", "market", "n")})
        pq.write_table(table, ds / f"part-{k}.parquet", row_group_size=group)
    (folder / "d.csv").write_text(csv_text(d), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=4, threads_per_worker=1, processes=True, dashboard_address=None) as c:
        yield c


ARGS = ["--query-col", "query", "--user-col", "user", "--count-col", "n", "--stratum", "market", "--shape",
        "--size", "40", "--floor", "3", "--seed", "9"]


@pytest.mark.parametrize("weighting,draw_key", [("traffic", "v2"), ("uniform", "v2"), ("traffic", "v1")])
def test_dask_sample_is_byte_identical_to_one_process(log_parts, cluster, tmp_path, weighting, draw_key):
    inputs = [str(log_parts / "a.csv"), str(log_parts / "b.jsonl.gz"), str(log_parts / "dataset"),
              str(log_parts / "d.*")]
    runner = CliRunner()
    one, many = tmp_path / "one.jsonl", tmp_path / "dask.jsonl"
    args = [*ARGS, "--weighting", weighting, "--draw-key", draw_key]
    res1 = runner.invoke(main, ["sample", "queries", *inputs, *args, "--out", str(one)])
    assert res1.exit_code == 0, res1.output
    res2 = runner.invoke(main, ["sample", "queries", *inputs, *args, "--out", str(many),
                                "--dask", cluster.scheduler_address])
    assert res2.exit_code == 0, res2.output
    assert one.read_bytes() == many.read_bytes()
    assert res1.stdout.replace(str(one), "OUT") == res2.stdout.replace(str(many), "OUT")  # same table, same facts
    assert f"draw key {draw_key}-" in res1.stdout  # the rule that ordered the draw is named
    rows = [json.loads(line) for line in one.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 40
    if weighting == "traffic":  # (uniform Horvitz-Thompson weights sum to 1 only on average)
        assert abs(sum(r["weight"] for r in rows) - 1) < 1e-9


@pytest.mark.parametrize("weighting", ["traffic", "uniform"])
@pytest.mark.parametrize("strata,shape,user", [(("market",), True, "user"), ((), False, None)])
def test_dask_draw_equals_one_process_for_any_bucket_count(log_parts, cluster, tmp_path, weighting, strata, shape,
                                                           user):
    """The draw spread over 1, 3 or 16 key ranges (certainty units, systematic points crossing
    buckets, --exclude and --handwritten queries) gives one process's rows exactly."""
    from curation.sample.distributed import DaskPool
    from curation.sample.sampling import _sample, sample_queries

    paths = [str(log_parts / "a.csv"), str(log_parts / "b.jsonl.gz"), str(log_parts / "dataset")]
    kw = dict(query_col="query", count_col="n", user_col=user, strata=strata)
    one = sample_queries(paths, **kw, shape=shape, size=60, floor=2, seed=4, weighting=weighting)
    texts = [r["text"] for r in one.rows]
    (tmp_path / "hand.txt").write_text(f"{texts[0]}\nmy own query\n", encoding="utf-8")
    (tmp_path / "ex.txt").write_text("\n".join(texts[1:6]) + "\n", encoding="utf-8")
    lists = dict(handwritten=str(tmp_path / "hand.txt"), exclude=[str(tmp_path / "ex.txt")])
    expected = sample_queries(paths, **kw, shape=shape, size=60, floor=2, seed=4, weighting=weighting, **lists)
    inclusion = [r["inclusion"] for r in expected.rows if r["stratum"] != {"source": "handwritten"}]
    assert 1.0 in inclusion and min(inclusion) < 0.5  # certainty units (a uniform draw's head) and drawn ones
    if weighting == "uniform":
        assert all(r["stratum_traffic_sq"] > r["stratum_traffic"] for r in expected.rows if r["inclusion"] < 1)
    assert any("--exclude" in w for w in expected.warnings) and any("also occur" in w for w in expected.warnings)
    for buckets in (1, 3, 16):
        with DaskPool(paths, **kw, seed=4, dask=cluster.scheduler_address, buckets=buckets) as pool:
            got = _sample(pool, strata=strata, shape=shape, size=60, floor=2, seed=4, weighting=weighting,
                          warnings=[], **lists)
        assert got.rows == expected.rows
        assert got.strata == expected.strata and got.stats == expected.stats and got.warnings == expected.warnings


def test_dask_driver_gathers_totals_and_the_sample_not_the_queries(tmp_path, cluster, monkeypatch):
    """What the driver receives from the cluster is per-stratum totals and candidates, a small
    fraction of the log's distinct queries (which one process holds whole)."""
    import pickle

    import distributed

    from curation.sample.logs import collapse_log
    from curation.sample.sampling import sample_queries

    rng = random.Random(2)
    log = tmp_path / "wide.csv"
    head = [f"head {i}" for i in range(50)]
    rows = [f"{rng.choice(head) if rng.random() < 0.3 else f'query {rng.randint(0, 60000)}'},u{rng.randint(0, 5000)},"
            f"{'ab'[i % 2]}" for i in range(60000)]
    log.write_text("query,user,market\n" + "\n".join(rows) + "\n", encoding="utf-8")
    kw = dict(query_col="query", user_col="user", strata=["market"], shape=True, size=30, floor=3, seed=1)
    distinct = collapse_log(str(log), query_col="query", user_col="user", strata=["market"]).queries
    received = []
    gather = distributed.Client.gather

    def counting_gather(self, futures, *args, **kwargs):
        out = gather(self, futures, *args, **kwargs)
        received.append(len(pickle.dumps(out)))
        return out

    monkeypatch.setattr(distributed.Client, "gather", counting_gather)
    got = sample_queries(str(log), dask=cluster.scheduler_address, **kw)
    monkeypatch.undo()
    assert got.rows == sample_queries(str(log), **kw).rows
    assert len(distinct) > 20000 and received
    assert sum(received) < len(pickle.dumps(distinct)) / 20, (sum(received), len(pickle.dumps(distinct)))


def test_dask_collapse_equals_one_process_with_other_bucket_counts(log_parts, cluster):
    from curation.sample.distributed import collapse_log_dask
    from curation.sample.logs import collapse_log

    paths = [str(log_parts / "a.csv"), str(log_parts / "b.jsonl.gz"), str(log_parts / "dataset")]
    kw = dict(query_col="query", count_col="n", user_col="user", strata=["market"])
    one = collapse_log(paths, **kw)
    for buckets in (1, 3, 16):
        got = collapse_log_dask(paths, dask=cluster.scheduler_address, buckets=buckets, **kw)
        assert got.stats == one.stats
        assert got.queries.equals(one.queries)
        assert list(got.queries.dtypes) == list(one.queries.dtypes)


def test_dask_bad_line_is_named_as_in_one_process(log_parts, cluster, tmp_path):
    from curation.sample.distributed import collapse_log_dask
    from curation.sample.logs import collapse_log

    bad = tmp_path / "bad.csv"
    bad.write_text("query,user,market,n\nweather,u1,us,1\nnews,u2,us,lots\n", encoding="utf-8")
    kw = dict(query_col="query", count_col="n", user_col="user", strata=["market"])
    paths = [str(log_parts / "a.csv"), str(bad)]
    with pytest.raises(InputError) as one:
        collapse_log(paths, **kw)
    with pytest.raises(InputError) as dask:
        collapse_log_dask(paths, dask=cluster.scheduler_address, **kw)
    assert str(dask.value) == str(one.value) and f"{bad}:3" in str(one.value)


def test_local_address_is_parsed():
    from curation.sample.distributed import parse_address

    assert parse_address("local") == ("local", None)
    assert parse_address("local:4") == ("local", 4)
    assert parse_address("tcp://10.0.0.5:8786") is None
    with pytest.raises(ValueError, match="local:N"):
        parse_address("local:zero")


@pytest.fixture(scope="module")
def corpus_parts(tmp_path_factory):
    """A corpus cut into uneven files of every format, a kept document repeated in two of them."""
    folder = tmp_path_factory.mktemp("daskcorpus")
    docs = [{"id": f"doc{i:04d}", "text": f"text of document {i} caf\u00e9" if i % 7 == 0 else f"text {i}"}
            for i in range(900)]
    a, b, c, d = docs[:37], docs[37:500], docs[500:880], docs[880:]
    (folder / "a.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in a), encoding="utf-8")
    with gzip.open(folder / "b.jsonl.gz", "wt", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in b + [a[3]])  # a kept id again, identical
    pq.write_table(pa.table({"id": [r["id"] for r in c], "text": [r["text"] for r in c]}), folder / "c.parquet",
                   row_group_size=50)
    (folder / "d.tsv").write_text("id\ttext\n" + "".join(f"{r['id']}\t{r['text']}\n" for r in d), encoding="utf-8")
    keep = folder / "keep.txt"
    keep.write_text("doc0003\ndoc0600\ndoc0899\nmissing\n", encoding="utf-8")
    files = [str(folder / n) for n in ("a.jsonl", "b.jsonl.gz", "c.parquet", "d.tsv")]
    return files, keep


def test_dask_corpus_sample_is_byte_identical_to_one_process(corpus_parts, cluster, tmp_path):
    files, keep = corpus_parts
    runner = CliRunner()
    one, many = tmp_path / "one.jsonl", tmp_path / "dask.jsonl"
    args = ["sample", "corpus", *files, "--size", "60", "--keep", str(keep), "--seed", "5"]
    res1 = runner.invoke(main, [*args, "--out", str(one)])
    assert res1.exit_code == 0, res1.output
    res2 = runner.invoke(main, [*args, "--out", str(many), "--dask", cluster.scheduler_address])
    assert res2.exit_code == 0, res2.output
    assert one.read_bytes() == many.read_bytes()
    assert res1.output.replace(str(one), "OUT") == res2.output.replace(str(many), "OUT")
    assert "Kept  3 judged or pooled documents (of 4 listed)" in res1.output
    assert "1 identical duplicate document line(s) dropped" in res1.output
    ids = [json.loads(line)["id"] for line in one.read_text(encoding="utf-8").splitlines()]
    assert len(ids) == 60 and {"doc0003", "doc0600", "doc0899"} <= set(ids)


def test_dask_corpus_sample_bad_file_is_named_as_in_one_process(corpus_parts, cluster, tmp_path):
    from curation.sample.corpus import sample_corpus
    from curation.sample.distributed import dask_map

    files, _ = corpus_parts
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "text": "fine"}\n{"text": "no id"}\n', encoding="utf-8")
    paths = [files[0], str(bad), files[2]]
    with pytest.raises(InputError) as one:
        sample_corpus(paths, keep=[], size=10, seed=1, out=tmp_path / "o1.jsonl")
    with pytest.raises(InputError) as dask:
        sample_corpus(paths, keep=[], size=10, seed=1, out=tmp_path / "o2.jsonl",
                      map_pieces=lambda fn, args: dask_map(cluster.scheduler_address, fn, args))
    assert str(dask.value) == str(one.value) and str(one.value).startswith(f"{bad}:2: record has no id")
    assert not (tmp_path / "o1.jsonl").exists() and not (tmp_path / "o2.jsonl").exists()
