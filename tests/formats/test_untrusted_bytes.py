"""Every reader of curation/formats against untrusted bytes (encoding, compression, empty input).

For each reader: a byte-order mark, CRLF line ends, or both give exactly the clean file's records; invalid
UTF-8 is ``file:line: not valid UTF-8 (byte 0x.. at column N)``; binary data (a NUL byte) is refused as
such; gzip is found by its magic bytes and a truncated stream names the path and the last complete line;
an empty or header-only file is ``file: no records``. Property tests (hypothesis) feed any bytes to each
reader: it returns records or raises InputError whose message starts with the path, nothing else.
"""

from __future__ import annotations

import gzip
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curation.formats.corpus import iter_corpus_file
from curation.formats.fileio import InputError, open_text
from curation.formats.pool_file import read_pool
from curation.formats.qrels import parse_label_records, read_qrels
from curation.formats.queries import read_queries, read_query_ids
from curation.formats.query_list import read_query_list
from curation.formats.runs import read_run
from curation.formats.seeds_file import read_seeds
from curation.sample.logs import collapse_log


def _label_records(path):
    with open_text(path) as fh:
        return [(r["qid"], r["docid"], r["grade"]) for r in parse_label_records(fh, path)]


def _guidelines(path):
    """The guidelines file is read whole by open_text (curation/store/projects.py)."""
    with open_text(path) as fh:
        return fh.read().replace("\r\n", "\n")


@dataclass(frozen=True)
class Reader:
    name: str
    filename: str
    clean: bytes  # lines end with \n; a header line first when ``header``
    read: object  # path -> comparable records
    header: bool = False
    empty_is_error: bool = True


READERS = [
    Reader("queries", "queries.jsonl", '{"qid": "1", "text": "wéather"}\n{"qid": "2", "text": "news"}\n'.encode(),
           lambda p: [(q.qid, q.text) for q in read_queries(p)]),
    Reader("query-ids", "ids.txt", b"q1\nq2\n", read_query_ids),
    Reader("pool", "pool.jsonl", b'{"qid": "1", "docid": "d1", "order": 0}\n{"qid": "1", "docid": "d2", "order": 1}\n',
           lambda p: [(e.qid, e.docid, e.order) for e in read_pool(p)]),
    Reader("run-fast", "run.trec", b"1 Q0 d1 1 2.5 sys\n1 Q0 d2 2 1.5 sys\n2 Q0 d3 1 1.0 sys\n",
           lambda p: (read_run(p).rankings, read_run(p).scores)),
    Reader("run-exact", "run.trec", "1 Q0 dé 1 2.5 sys\n1  Q0 d2 2 1.5 sys\n2 Q0 d3 1 1.0 sys\n".encode(),
           lambda p: (read_run(p).rankings, read_run(p).scores)),
    Reader("run-jsonl", "run.jsonl",
           b'{"qid": "1", "docid": "d1", "score": 2}\n{"qid": "1", "docid": "d2", "score": 1}\n',
           lambda p: read_run(p).rankings),
    Reader("qrels", "qrels.txt", "1 0 dé 2\n1 0 d2 0\n".encode(), read_qrels),
    Reader("qrels-jsonl", "qrels.jsonl", b'{"qid": "1", "docid": "d1", "grade": 2}\n', _label_records,
           empty_is_error=False),
    Reader("corpus-jsonl", "corpus.jsonl", '{"id": "d1", "text": "café"}\n{"id": "d2", "text": "b"}\n'.encode(),
           lambda p: list(iter_corpus_file(p))),
    Reader("corpus-tsv", "corpus.tsv", "id\ttext\nd1\tcafé\nd2\tb\n".encode(), lambda p: list(iter_corpus_file(p)),
           header=True),
    Reader("log-csv", "log.csv", "query,user\nwéather,a\nnews,b\n".encode(),
           lambda p: collapse_log(p, query_col="query").queries.to_dict("records"), header=True),
    Reader("log-tsv", "log.tsv", "query\tuser\nwéather\ta\nnews\tb\n".encode(),
           lambda p: collapse_log(p, query_col="query").queries.to_dict("records"), header=True),
    Reader("log-jsonl", "log.jsonl", '{"query": "wéather"}\n{"query": "news"}\n'.encode(),
           lambda p: collapse_log(p, query_col="query").queries.to_dict("records")),
    Reader("seeds", "seeds.tsv", b"qid\tdocid\n1\td1\n2\td2\n", lambda p: list(read_seeds(p)), header=True),
    Reader("seeds-jsonl", "seeds.jsonl", b'{"qid": "1", "docid": "d1"}\n', lambda p: list(read_seeds(p))),
    Reader("query-list", "list.txt", "Wéather\nnews\n".encode(), read_query_list),
    Reader("query-list-csv", "list.csv", b"text\nWeather\nnews\n", read_query_list, header=True),
    Reader("guidelines", "guidelines.md", "# Relevance\nA document is relevant when…\n".encode(), _guidelines,
           empty_is_error=False),
]
IDS = [r.name for r in READERS]


def _write(tmp_path: Path, reader: Reader, data: bytes, name: str | None = None) -> Path:
    path = tmp_path / (name or reader.filename)
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("reader", READERS, ids=IDS)
@pytest.mark.parametrize("variant", ["bom", "crlf", "bom+crlf", "gzip", "gzip-no-suffix"])
def test_bom_crlf_and_gzip_give_the_clean_records(tmp_path, reader, variant):
    (tmp_path / "clean").mkdir()
    expected = reader.read(_write(tmp_path / "clean", reader, reader.clean))
    data = reader.clean
    if "crlf" in variant:
        data = data.replace(b"\n", b"\r\n")
    if "bom" in variant:
        data = b"\xef\xbb\xbf" + data
    name = None
    if variant == "gzip":
        data, name = gzip.compress(data), reader.filename + ".gz"
    elif variant == "gzip-no-suffix":  # gzip is known by its magic bytes, not its name
        data = gzip.compress(data)
    assert reader.read(_write(tmp_path, reader, data, name)) == expected


@pytest.mark.parametrize("reader", READERS, ids=IDS)
def test_invalid_utf8_names_file_line_and_column(tmp_path, reader):
    lines = reader.clean.split(b"\n")
    # Line 2 (the empty line after a one-line file), after its first 2 characters (columns count characters).
    prefix = lines[1].decode("utf-8")[:2]
    lines[1] = prefix.encode("utf-8") + b"\xff" + lines[1][len(prefix.encode("utf-8")):]
    path = _write(tmp_path, reader, b"\n".join(lines))
    with pytest.raises(InputError) as err:
        reader.read(path)
    column = len(prefix) + 1
    assert str(err.value) == f"{path}:2: not valid UTF-8 (byte 0xff at column {column}); save the file as UTF-8"


@pytest.mark.parametrize("reader", READERS, ids=IDS)
def test_binary_garbage_is_refused_as_binary(tmp_path, reader):
    path = _write(tmp_path, reader, reader.clean + b"PK\x03\x04\x00\x00\x08\x00garbage\n")
    n = reader.clean.count(b"\n") + 1
    with pytest.raises(InputError) as err:
        reader.read(path)
    assert str(err.value).startswith(f"{path}:{n}: binary data, not text (a NUL byte at column 5)")


@pytest.mark.parametrize("reader", READERS, ids=IDS)
def test_random_bytes_are_refused_as_binary(tmp_path, reader):
    import random

    # Bytes 0x80-0xff and control characters: binary, not text in another encoding (no NUL among them).
    noise = bytes(random.Random(7).choice(list(range(1, 9)) + list(range(0x80, 0x100))) for _ in range(300))
    path = _write(tmp_path, reader, noise)
    with pytest.raises(InputError) as err:
        reader.read(path)
    assert str(err.value).startswith(f"{path}:1: binary data, not text")


def test_latin1_text_is_named_not_utf8_not_binary(tmp_path):
    path = tmp_path / "queries.jsonl"
    path.write_bytes('{"qid": "1", "text": "café"}\n'.encode("latin-1"))
    with pytest.raises(InputError) as err:
        read_queries(path)
    assert str(err.value) == f"{path}:1: not valid UTF-8 (byte 0xe9 at column 26); save the file as UTF-8"


@pytest.mark.parametrize("reader", READERS, ids=IDS)
def test_truncated_gzip_names_path_and_last_complete_line(tmp_path, reader):
    data = gzip.compress(reader.clean, mtime=0)
    path = _write(tmp_path, reader, data[: len(data) - 6], reader.filename + ".gz")  # the trailer cut off
    with pytest.raises(InputError) as err:
        reader.read(path)
    message = str(err.value)
    assert message.startswith(f"{path}: truncated or corrupt gzip data")
    assert "last complete line read is line" in message or "no complete line could be read" in message


def test_truncated_gzip_reports_the_last_complete_line(tmp_path):
    lines = b"".join(b'{"qid": "%d", "text": "q %s"}\n' % (i, os.urandom(8).hex().encode()) for i in range(20000))
    data = gzip.compress(lines)
    path = tmp_path / "queries.jsonl.gz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError) as err:
        read_queries(path)
    # Independent count: what zlib gives of the same half stream, complete lines only.
    import zlib

    partial = zlib.decompressobj(wbits=31).decompress(data[: len(data) // 2])
    complete = partial.count(b"\n")
    shown = int(str(err.value).rsplit("line ", 1)[1])
    assert 0 < shown <= complete and complete - shown < 2000  # gzip's reader stops a block short at most


@pytest.mark.parametrize("reader", [r for r in READERS if r.empty_is_error], ids=[r.name for r in READERS
                                                                                  if r.empty_is_error])
@pytest.mark.parametrize("content", ["empty", "blank", "header-only"])
def test_empty_input_is_no_records(tmp_path, reader, content):
    if content == "header-only" and not reader.header:
        pytest.skip("the format has no header")
    data = {"empty": b"", "blank": b"\n\r\n  \n", "header-only": reader.clean.split(b"\n", 1)[0] + b"\n"}[content]
    if content == "blank" and reader.header:
        data = b"\xef\xbb\xbf"  # a BOM alone is empty too
    path = _write(tmp_path, reader, data)
    with pytest.raises(InputError) as err:
        reader.read(path)
    assert str(err.value).startswith(f"{path}: no records")


def test_parquet_corpus_without_rows_is_no_records(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "corpus.parquet"
    pq.write_table(pa.table({"id": pa.array([], pa.string()), "text": pa.array([], pa.string())}), path)
    with pytest.raises(InputError, match="no records"):
        list(iter_corpus_file(path))


# ---------------------------------------------------------------------------------------------
# Property tests: any bytes, and any bytes after a valid file


def _outcome(reader: Reader, data: bytes, name: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        path.write_bytes(data)
        try:
            reader.read(path)
        except InputError as exc:
            assert str(exc).startswith(str(path)), str(exc)


_PROPERTY = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_BYTES = st.one_of(
    st.binary(max_size=200),
    st.lists(st.sampled_from([b"\xef\xbb\xbf", b"\r\n", b"\n", b"\r", b"\x00", b"\xff", b"\xc3", b"\t", b" ", b",",
                              b'"', b"{", b"}", b'"qid"', b":", b"1", b"Q0", b"d1", b"2.5", b"\x1f\x8b", b"nan",
                              b"\xe2\x80\xa8", b"#"]), max_size=40).map(b"".join),
)


@pytest.mark.parametrize("reader", READERS, ids=IDS)
@_PROPERTY
@given(data=_BYTES)
def test_any_bytes_give_records_or_an_input_error(reader, data):
    _outcome(reader, data, reader.filename)


@pytest.mark.parametrize("reader", READERS, ids=IDS)
@_PROPERTY
@given(tail=_BYTES, compress=st.booleans(), cut=st.integers(min_value=0, max_value=40))
def test_any_bytes_after_a_valid_file_give_records_or_an_input_error(reader, tail, compress, cut):
    data = reader.clean + tail
    if compress:
        data = gzip.compress(data)
        data = data[: max(len(data) - cut, 0)]
    _outcome(reader, data, reader.filename)


# ---------------------------------------------------------------------------------------------
# The leak check reads corpus JSONL its own way (pyarrow by byte ranges): the same answers


def _half(data: bytes) -> bytes:
    return data[: len(data) // 2]


@pytest.mark.parametrize("variant", ["empty", "blank", "nul", "invalid-utf8", "truncated-gzip", "bom+crlf"])
def test_leak_check_corpus_reader(tmp_path, variant):
    from curation.leak.driver import leakcheck

    clean = b'{"id": "d1", "text": "the weather in paris today"}\n{"id": "d2", "text": "news"}\n'
    data, name = {
        "empty": (b"", "c.jsonl"),
        "blank": (b"\n\n", "c.jsonl"),
        "nul": (clean + b'{"id": "d3", "text": "a\x00b"}\n', "c.jsonl"),
        "invalid-utf8": (clean + b'{"id": "d3", "text": "a\xffb"}\n', "c.jsonl"),
        "truncated-gzip": (_half(gzip.compress(clean * 2000)), "c.jsonl.gz"),
        "bom+crlf": (b"\xef\xbb\xbf" + clean.replace(b"\n", b"\r\n"), "c.jsonl"),
    }[variant]
    path = tmp_path / name
    path.write_bytes(data)
    queries = [("q1", "the weather in paris today")]
    expected = {
        "empty": f"{path}: no records",
        "blank": f"{path}: no records",
        "nul": f"{path}:3: binary data, not text (a NUL byte at column 24)",
        "invalid-utf8": f"{path}:3: not valid UTF-8 (byte 0xff at column 24)",
        "truncated-gzip": f"{path}: truncated or corrupt gzip data",
    }
    if variant == "truncated-gzip":  # the last complete line, counted independently by zlib
        import zlib

        complete = zlib.decompressobj(wbits=31).decompress(data).count(b"\n")
        expected[variant] += f" (Compressed file ended before the end-of-stream marker was reached); " \
                             f"the last complete line read is line {complete}"
    if variant == "bom+crlf":
        (tmp_path / "clean.jsonl").write_bytes(clean)
        report = leakcheck(queries, [path], workers=1)
        expected_report = leakcheck(queries, [tmp_path / "clean.jsonl"], workers=1)
        assert {m.chunk_id for m in report.queries[0].matches} == {"d1"}
        assert [(m.chunk_id, m.mode) for m in report.queries[0].matches] == [
            (m.chunk_id, m.mode) for m in expected_report.queries[0].matches
        ]
        return
    with pytest.raises(InputError) as err:
        leakcheck(queries, [path], workers=1)
    assert str(err.value).startswith(expected[variant])


# ---------------------------------------------------------------------------------------------
# The guidelines file (read in curation/store/projects.py and by `golden project guidelines set`)


def test_guidelines_file_bom_is_dropped_and_bad_bytes_named(engine, db_url, tmp_path):
    from click.testing import CliRunner
    from sqlmodel import select

    from curation.cli import main
    from curation.store.engine import session
    from curation.store.models import GuidelinesVersion, Project
    from tests.support.projects import GUIDELINES, write_inputs

    paths = write_inputs(tmp_path / "in")
    with_bom = tmp_path / "G.md"
    with_bom.write_bytes(b"\xef\xbb\xbf" + GUIDELINES.encode("utf-8"))
    runner = CliRunner()
    args = ["--queries", str(paths["queries.jsonl"]), "--pool", str(paths["pool.jsonl"]),
            "--corpus", str(paths["corpus.jsonl"]), "--db", db_url]
    bad = tmp_path / "bad.md"
    bad.write_bytes(b"# Relevance\nab\xffc\n")
    res = runner.invoke(main, ["project", "create", "broken", "--guidelines", str(bad), *args])
    assert res.exit_code == 1, res.output
    assert f"{bad}:2: not valid UTF-8 (byte 0xff at column 3)" in res.output and "Traceback" not in res.output
    res = runner.invoke(main, ["project", "create", "news", "--guidelines", str(with_bom), *args])
    assert res.exit_code == 0, res.output
    with session(engine) as s:
        assert [p.name for p in s.exec(select(Project))] == ["news"]
        assert [g.text for g in s.exec(select(GuidelinesVersion))] == [GUIDELINES]
    # The same text without the mark is the same guidelines; invalid bytes are named by `guidelines set` too.
    clean = tmp_path / "clean.md"
    clean.write_bytes(GUIDELINES.encode("utf-8"))
    res = runner.invoke(main, ["project", "guidelines", "set", str(clean), "--db", db_url])
    assert res.exit_code == 0 and "unchanged (still v1)" in res.output, res.output
    res = runner.invoke(main, ["project", "guidelines", "set", str(bad), "--db", db_url])
    assert res.exit_code == 1 and f"{bad}:2: not valid UTF-8" in res.output and "Traceback" not in res.output


# ---------------------------------------------------------------------------------------------
# Whole JSON files: pool.meta.json and a project's grades file


def test_pool_meta_and_grades_file_are_decoded_strictly(tmp_path):
    from click.testing import CliRunner

    from curation.cli import main
    from curation.formats.pool_file import read_pool_meta
    from tests.support.projects import write_inputs

    meta = tmp_path / "pool.meta.json"
    meta.write_bytes(b'\xef\xbb\xbf{\r\n "depth": 10\r\n}\r\n')
    assert read_pool_meta(tmp_path / "pool.jsonl") == {"depth": 10}
    meta.write_bytes(b'{\n "depth": "\xff"\n}\n')
    with pytest.raises(InputError) as err:
        read_pool_meta(tmp_path / "pool.jsonl")
    assert str(err.value).startswith(f"{meta}:2: not valid UTF-8 (byte 0xff at column 12)")
    grades = tmp_path / "grades.json"
    grades.write_bytes(b'[{"grade": 0, "name": "n\xff"}]')
    paths = write_inputs(tmp_path / "in")
    res = CliRunner().invoke(main, ["project", "create", "x", "--queries", str(paths["queries.jsonl"]),
                                    "--pool", str(paths["pool.jsonl"]), "--corpus", str(paths["corpus.jsonl"]),
                                    "--guidelines", str(paths["GUIDELINES.md"]), "--grades", str(grades),
                                    "--db", f"sqlite:///{tmp_path / 'g.db'}"])
    assert res.exit_code != 0 and "Traceback" not in res.output
    assert f"{grades}:1: not valid UTF-8 (byte 0xff at column 25)" in res.output, res.output


# ---------------------------------------------------------------------------------------------
# Where an empty file is legitimate, a named flag allows it: `golden judging import --allow-empty`


def test_import_judgments_refuses_an_empty_qrels_file_unless_allow_empty(engine, db_url, tmp_path):
    from click.testing import CliRunner
    from sqlmodel import select

    from curation.cli import main
    from curation.store.engine import session
    from curation.store.models import Judgment
    from tests.support.projects import add_users, pairs_project

    pairs_project(engine, tmp_path / "p", [("q1", "d1")], scale="0-2")
    add_users(engine, alice="judge")
    empty = tmp_path / "qrels.txt"
    empty.write_bytes(b"\xef\xbb\xbf# no judgments this week\r\n\r\n")
    runner = CliRunner()
    res = runner.invoke(main, ["judging", "import", str(empty), "--judge", "alice", "--db", db_url])
    assert res.exit_code == 1 and f"{empty}: no records" in res.output and "Traceback" not in res.output
    res = runner.invoke(main, ["judging", "import", str(empty), "--judge", "alice", "--allow-empty", "--db", db_url])
    assert res.exit_code == 0, res.output
    with session(engine) as s:
        assert s.exec(select(Judgment)).all() == []


# ---------------------------------------------------------------------------------------------
# Parquet (corpus and log): any bytes, a valid file cut short or with bytes after it


def _parquet_bytes() -> bytes:
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = io.BytesIO()
    pq.write_table(pa.table({"id": ["d1", "d2"], "text": ["a b", "c"], "query": ["x", "y"]}), sink)
    return sink.getvalue()


PARQUET = [
    Reader("corpus-parquet", "corpus.parquet", b"", lambda p: list(iter_corpus_file(p))),
    Reader("log-parquet", "log.parquet", b"", lambda p: collapse_log(p, query_col="query").queries),
]


@pytest.mark.parametrize("reader", PARQUET, ids=[r.name for r in PARQUET])
@_PROPERTY
@given(data=_BYTES, cut=st.integers(min_value=0, max_value=2000), append=st.booleans())
def test_any_parquet_bytes_give_records_or_an_input_error(reader, data, cut, append):
    valid = _parquet_bytes()
    _outcome(reader, data, reader.filename)
    _outcome(reader, valid + data if append else valid[: max(len(valid) - cut, 0)], reader.filename)


@pytest.mark.parametrize("reader", PARQUET, ids=[r.name for r in PARQUET])
def test_damaged_parquet_is_named(tmp_path, reader):
    valid = _parquet_bytes()
    path = tmp_path / reader.filename
    path.write_bytes(valid[:8] + b"\x00" * (len(valid) - 16) + valid[-8:])  # header and footer magic kept
    with pytest.raises(InputError) as err:
        reader.read(path)
    assert str(err.value).startswith(f"{path}: not a readable Parquet file")


def test_leak_check_names_a_damaged_parquet_corpus(tmp_path):
    from curation.leak.driver import leakcheck

    path = tmp_path / "corpus.parquet"
    path.write_bytes(b"PAR1" + b"\x07" * 64)
    with pytest.raises(InputError) as err:
        leakcheck([("q1", "some words here")], [path], workers=1)
    assert str(err.value).startswith(f"{path}: not a readable Parquet file")


def test_seed_judgments_refuses_an_empty_file_unless_allow_empty(engine, db_url, tmp_path):
    from click.testing import CliRunner
    from sqlmodel import select

    from curation.cli import main
    from curation.store.engine import session
    from curation.store.models import SeedJudgment
    from tests.support.projects import pairs_project

    pairs_project(engine, tmp_path / "p", [("q1", "d1")], scale="0-2")
    empty = tmp_path / "tickets.tsv"
    empty.write_bytes(b"\xef\xbb\xbfqid\tdocid\r\n")  # a header only
    runner = CliRunner()
    res = runner.invoke(main, ["judging", "seed", str(empty), "--source", "ticket", "--db", db_url])
    assert res.exit_code == 1 and f"{empty}: no records" in res.output and "Traceback" not in res.output
    res = runner.invoke(main, ["judging", "seed", str(empty), "--source", "ticket", "--allow-empty", "--db", db_url])
    assert res.exit_code == 0 and "0 lines" in res.output, res.output
    with session(engine) as s:
        assert s.exec(select(SeedJudgment)).all() == []
