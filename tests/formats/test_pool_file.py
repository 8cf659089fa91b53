"""pool.jsonl and pool.meta.json: the one reader and writer (curation.formats.pool_file), on real files."""

import gzip
import json

import pytest

from curation.formats.fileio import InputError
from curation.formats.pool_file import (
    PoolEntry,
    iter_pool,
    pool_meta_path,
    read_pool,
    read_pool_meta,
    write_pool_file,
)


def _file(tmp_path, *lines, name="pool.jsonl"):
    path = tmp_path / name
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_reads_every_field(tmp_path):
    path = _file(
        tmp_path,
        '{"qid": 301, "docid": "FT1", "order": 2, "systems": {"bm25": 1, "dense": 7}}',
        "",
        '{"qid": "301", "docid": "FT2", "order": 1, "seed_source": "citations"}',
        '{"qid": "q2", "docid": "d"}',
    )
    a, b, c = read_pool(path)
    assert (a.qid, a.docid, a.order, a.systems, a.seed_source) == ("301", "FT1", 2, {"bm25": 1, "dense": 7}, None)
    assert (b.order, b.systems, b.seed_source) == (1, {}, "citations")
    assert (c.qid, c.order) == ("q2", 0)  # order absent: 0


@pytest.mark.parametrize(
    "line, words",
    [
        ('{"docid": "d"}', "missing or empty 'qid'"),
        ('{"qid": "1", "docid": " "}', "missing or empty 'docid'"),
        ('{"qid": "1", "docid": "a", "order": 5}', "pair ('1', 'a') appears twice"),
        ('{"qid": "1", "docid": "b", "order": -1}', "'order' must be an integer >= 0"),
        ('{"qid": "1", "docid": "b", "order": 1.5}', "'order' must be an integer >= 0"),
        ('{"qid": "1", "docid": "b", "order": true}', "'order' must be an integer >= 0"),
        ('{"qid": "1", "docid": "b", "systems": [1]}', "'systems' must be an object"),
        ('{"qid": "1", "docid": "b", "systems": {"bm25": "3"}}', "rank of run 'bm25' must be a positive integer"),
        ('{"qid": "1", "docid": "b", "systems": {"bm25": 0}}', "rank of run 'bm25' must be a positive integer"),
        ('{"qid": "1", "docid": "b", "seed_source": 3}', "'seed_source' must be a string"),
        ('"1 b"', "expected an object with qid, docid and order"),
        ('{"qid": ', "not valid JSON"),
    ],
)
def test_bad_line_names_file_and_line(tmp_path, line, words):
    path = _file(tmp_path, '{"qid": "1", "docid": "a", "order": 1}', "", line)
    with pytest.raises(InputError) as err:
        read_pool(path)
    assert str(err.value).startswith(f"{path}:3: ")
    assert words in str(err.value)


def test_empty_and_missing_files(tmp_path):
    with pytest.raises(InputError, match="no pairs"):
        read_pool(_file(tmp_path, ""))
    with pytest.raises(InputError, match="no such file"):
        read_pool(tmp_path / "absent.jsonl")


def test_reader_streams_and_reads_gzip(tmp_path):
    path = tmp_path / "pool.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write('{"qid": "1", "docid": "a", "order": 1}\n{"qid": "1", "docid": "a", "order": 2}\n')
    entries = iter_pool(path)
    assert next(entries).docid == "a"
    with pytest.raises(InputError, match=r"pool.jsonl.gz:2: pair"):
        next(entries)


def test_meta_path_and_reading(tmp_path):
    assert pool_meta_path(tmp_path / "pool.jsonl.gz") == tmp_path / "pool.meta.json"
    assert pool_meta_path("a/new.pool.jsonl").as_posix() == "a/new.pool.meta.json"
    assert read_pool_meta(tmp_path / "pool.jsonl") == {}
    (tmp_path / "pool.meta.json").write_text('{"depth": 20}', encoding="utf-8")
    assert read_pool_meta(tmp_path / "pool.jsonl") == {"depth": 20}
    (tmp_path / "pool.meta.json").write_text('{"depth": 20,\n}', encoding="utf-8")
    with pytest.raises(InputError, match=r"pool.meta.json:2: not valid JSON"):
        read_pool_meta(tmp_path / "pool.jsonl")
    (tmp_path / "pool.meta.json").write_text("[20]", encoding="utf-8")
    with pytest.raises(InputError, match=r"pool.meta.json: expected a JSON object"):
        read_pool_meta(tmp_path / "pool.jsonl")


def test_writer_writes_both_files_and_round_trips(tmp_path):
    entries = [PoolEntry("1", "é", 2, {"run": 3}), PoolEntry("1", "b", 1, {}, "seeds.tsv")]
    path = tmp_path / "pool.jsonl"
    meta = write_pool_file(entries, {"depth": 3}, path)
    assert meta == tmp_path / "pool.meta.json" and json.loads(meta.read_text()) == {"depth": 3}
    assert path.read_text(encoding="utf-8") == (
        '{"qid":"1","docid":"é","order":2,"systems":{"run":3}}\n'
        '{"qid":"1","docid":"b","order":1,"systems":{},"seed_source":"seeds.tsv"}\n'
    )
    back = read_pool(path)
    assert back == entries and [e.as_dict() for e in back] == [e.as_dict() for e in entries]


def test_writer_leaves_nothing_on_error(tmp_path):
    def entries():
        yield PoolEntry("1", "a", 1)
        raise RuntimeError("stop")

    with pytest.raises(RuntimeError):
        write_pool_file(entries(), {}, tmp_path / "pool.jsonl")
    assert list(tmp_path.iterdir()) == []


def test_pool_extend_reads_the_pool_by_the_same_rules(tmp_path):
    """`golden pool --extend` refused orders from 0 (and absent ones) that `golden project create` took."""
    from click.testing import CliRunner

    from curation.cli import main

    run = tmp_path / "new.trec"
    run.write_text("1 Q0 a 1 3 new\n1 Q0 c 2 2 new\n2 Q0 x 1 1 new\n", encoding="utf-8")
    old = _file(tmp_path, '{"qid": "1", "docid": "a", "order": 0}', '{"qid": "1", "docid": "b", "order": 1}',
                '{"qid": "2", "docid": "y"}')
    out = tmp_path / "more.jsonl"
    res = CliRunner().invoke(main, ["pool", str(run), "--depth", "2", "--extend", str(old), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert {(e.qid, e.docid, e.order) for e in read_pool(out)} == {("1", "c", 2), ("2", "x", 1)}


def test_project_create_refuses_a_rank_that_is_not_a_positive_integer(tmp_path):
    """The store kept whatever 'systems' held; `golden pool --extend` crashed on a non-integer rank."""
    from curation.store.engine import session
    from curation.store.projects import create_project
    from tests.support.projects import sqlite_store, write_inputs

    paths = write_inputs(tmp_path / "in", queries={"q1": 1})
    _file(tmp_path / "in", '{"qid": "q1", "docid": "q1-d0", "order": 1, "systems": {"bm25": "first"}}')
    with sqlite_store(tmp_path) as (_, engine), session(engine) as s:
        with pytest.raises(InputError, match=r"pool.jsonl:1: rank of run 'bm25'"):
            create_project(s, "p", queries_path=paths["queries.jsonl"], pool_path=paths["pool.jsonl"],
                           corpus_paths=[paths["corpus.jsonl"]], guidelines_path=paths["GUIDELINES.md"])


def test_new_builds_the_entry_the_constructor_builds():
    """PoolEntry.new (make_pool's fast constructor) gives an entry equal to PoolEntry(...) in every field."""
    systems = {"bm25": 3, "dense": 1}
    fast, slow = PoolEntry.new("301", "FT911-3", 7, systems), PoolEntry("301", "FT911-3", 7, systems)
    assert fast == slow and hash(fast) == hash(slow) and repr(fast) == repr(slow)
    assert vars(fast) == vars(slow) and fast.as_dict() == slow.as_dict()
    with pytest.raises(AttributeError):
        fast.order = 8  # frozen like any other entry
