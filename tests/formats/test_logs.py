"""The search-log reader on its own: column names, the fast and the exact reader giving the same
batches, and the exact reader naming the bad line. Expected values are written out from the files."""

from __future__ import annotations

import gzip

import pytest

from curation.formats.fileio import InputError
from curation.formats.logs import check_columns, count_values, exact_batches, fast_batches, log_fields, log_format


def _rows(batches) -> list[dict]:
    return [row for b in batches for row in b.to_pylist()]


def test_fast_and_exact_readers_give_the_same_rows(tmp_path):
    path = tmp_path / "log.csv.gz"
    path.write_bytes(gzip.compress(b'query,n,user\n"a, b",2,u1\nc,0,\n'))
    fmt = log_format(path)
    present, first = log_fields(str(path), fmt)
    assert (fmt, present, first) == ("csv", ["query", "n", "user"], None)
    want = [{"query": "a, b", "n": 2}, {"query": "c", "n": 0}]
    exact = _rows(exact_batches(str(path), fmt, ["query", "n"], "n"))
    assert exact == want
    fast = fast_batches(str(path), fmt, ["query", "n"], "n", first)
    assert [{"query": r["query"], "n": int(r["n"])} for r in _rows(fast)] == want


def test_jsonl_first_object_and_missing_column(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text('{"q": "x", "n": 3}\n\n{"q": "y", "n": 1}\n')
    present, first = log_fields(str(path), "jsonl")
    assert present == ["q", "n"] and first == {"q": "x", "n": 3}
    with pytest.raises(InputError, match=r"log.jsonl:1: no field 'user' \(found: q, n\)"):
        check_columns(str(path), "jsonl", present, ["q", "user"])


def test_the_exact_reader_names_the_bad_line(tmp_path):
    path = tmp_path / "log.tsv"
    path.write_text("query\tn\nok\t1\nbad\t1.5\n")
    with pytest.raises(InputError, match=r"log.tsv:3: count '1.5' is not a whole number of searches"):
        _rows(exact_batches(str(path), "tsv", ["query", "n"], "n"))
    import pyarrow as pa

    assert count_values(pa.array(["1", " 2 ", "1.5"])) is None
    assert count_values(pa.array(["1", " 2 "])).to_pylist() == [1, 2]
