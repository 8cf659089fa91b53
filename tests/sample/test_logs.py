"""Reading search logs: formats, normalisation and collapsing, bounded chunks, bad input with file:line."""

from __future__ import annotations

import collections
import gzip
import json
import random

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from curation.formats import logs as log_reader
from curation.formats.fileio import InputError
from curation.formats.logs import log_format
from curation.formats.normalize import normalize_text
from curation.sample import logs
from curation.sample.logs import collapse_log

# (query, user, market, count): one search row each, `count` searches.
ROWS = [
    ("Weather ", "a", "us", 3),
    ("weather", "b", "us", 1),
    ("WEATHER\u200b", "a", "uk", 1),
    ("what\u2019s new", "c", "uk", 2),
    ("What's   New", "", "uk", 1),
    ("news", "z", "us", 5),
    ("  ", "a", "us", 4),
]
# Hand count: weather = 3+1+1 = 5 searches, users {a, b} = 2, stratum us (4 vs 1);
# "what's new" = 3 searches, users {c} = 1 (blank user not counted), uk; news = 5, {z}, us;
# the blank query row is skipped.
EXPECTED = [
    {"text": "news", "traffic": 5, "users": 1, "market": "us"},
    {"text": "weather", "traffic": 5, "users": 2, "market": "us"},
    {"text": "what's new", "traffic": 3, "users": 1, "market": "uk"},
]


def write_log(path, rows=ROWS, fmt=None):
    fmt = fmt or log_format(path)
    header = ["query", "user", "market", "n"]
    if fmt == "parquet":
        cols = list(zip(*rows))
        pq.write_table(pa.table({h: list(c) for h, c in zip(header, cols)}), path)
        return path
    if fmt == "jsonl":
        text = "".join(json.dumps(dict(zip(header, r))) + "\n" for r in rows)
    else:
        sep = "\t" if fmt == "tsv" else ","
        lines = [sep.join(header)] + [sep.join(str(v) for v in r) for r in rows]
        text = "\n".join(lines) + "\n"
    if str(path).endswith(".gz"):
        with gzip.open(path, "wt", encoding="utf-8") as fh:
            fh.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "name", ["log.csv", "log.tsv", "log.jsonl", "log.parquet", "log.csv.gz", "log.jsonl.gz", "log.tsv.gz"]
)
def test_every_format_collapses_to_the_hand_counted_queries(tmp_path, name):
    path = write_log(tmp_path / name)
    result = collapse_log(path, query_col="query", user_col="user", count_col="n", strata=["market"])
    assert result.queries.to_dict("records") == EXPECTED
    assert result.stats.rows == 7 and result.stats.searches == 17
    assert result.stats.empty_rows == 1
    assert result.stats.multi_stratum == 1  # weather: us and uk


def test_without_count_or_user_a_row_is_one_search(tmp_path):
    path = write_log(tmp_path / "log.csv")
    result = collapse_log(path, query_col="query")
    assert result.queries.to_dict("records") == [
        {"text": "news", "traffic": 1}, {"text": "weather", "traffic": 3}, {"text": "what's new", "traffic": 2},
    ]
    assert not result.has_users


def test_a_query_in_two_strata_belongs_where_it_has_most_traffic_and_ties_go_to_the_first_value(tmp_path):
    rows = [("a", "u1", "zz", 2), ("a", "u2", "mm", 2), ("a", "u3", "aa", 1), ("b", "u1", "zz", 1)]
    path = write_log(tmp_path / "log.csv", rows)
    q = collapse_log(path, query_col="query", count_col="n", strata=["market"]).queries
    # a: mm and zz tie at 2 searches -> "mm" sorts first; its traffic counts all 5 searches
    assert q.to_dict("records") == [
        {"text": "a", "traffic": 5, "market": "mm"}, {"text": "b", "traffic": 1, "market": "zz"}]


def test_several_files_are_read_as_one_log(tmp_path):
    a = write_log(tmp_path / "a.csv", ROWS[:3])
    b = write_log(tmp_path / "b.jsonl", ROWS[3:])
    result = collapse_log([a, b], query_col="query", user_col="user", count_col="n", strata=["market"])
    assert result.queries.to_dict("records") == EXPECTED


def test_zero_counts_drop_the_query(tmp_path):
    path = write_log(tmp_path / "log.csv", [("a", "u", "x", 0), ("b", "u", "x", 2)])
    result = collapse_log(path, query_col="query", count_col="n")
    assert result.queries["text"].tolist() == ["b"] and result.stats.zero_traffic == 1


def test_quoted_commas_and_newlines_in_csv(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text('query,n\n"a, b",1\n"two\nlines",2\n', encoding="utf-8")
    q = collapse_log(path, query_col="query", count_col="n").queries
    assert q.to_dict("records") == [{"text": "a, b", "traffic": 1}, {"text": "two lines", "traffic": 2}]


def test_chunked_reading_and_merging_match_a_plain_python_count(tmp_path, monkeypatch):
    """Tiny blocks and merge thresholds force many chunks and merges; a Counter is the reference."""
    monkeypatch.setattr(log_reader, "_BLOCK_BYTES", 4096)
    monkeypatch.setattr(logs, "_MERGE_AT", 50)
    rnd = random.Random(5)
    words = ["Alpha", "beta", "GAMMA ", "delta\u00a0x", "\uff45psilon", "zeta?"]
    rows = []
    for _ in range(5000):
        q = " ".join(rnd.choice(words) for _ in range(rnd.randint(1, 2)))
        rows.append((q, f"u{rnd.randint(0, 300)}", rnd.choice("ab"), rnd.randint(1, 3)))
    path = write_log(tmp_path / "log.csv", rows)
    result = collapse_log(path, query_col="query", user_col="user", count_col="n", strata=["market"])

    traffic, users, by_stratum = collections.Counter(), collections.defaultdict(set), collections.Counter()
    for q, u, m, n in rows:
        t = normalize_text(q)
        traffic[t] += n
        users[t].add(u)
        by_stratum[t, m] += n
    expected = []
    for t in sorted(traffic):
        best = min("ab", key=lambda m: (-by_stratum[t, m], m))
        expected.append({"text": t, "traffic": traffic[t], "users": len(users[t]), "market": best})
    assert result.queries.to_dict("records") == expected


# ---- bad input: file and line ------------------------------------------------------------------


def _error(path, **kw) -> InputError:
    kw.setdefault("query_col", "query")
    with pytest.raises(InputError) as info:
        collapse_log(path, **kw)
    return info.value


def test_wrong_number_of_fields_names_the_line(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text("query,n\na,1\nb,1\nc,1,9\n", encoding="utf-8")
    err = _error(path, count_col="n")
    assert (err.path, err.line) == (str(path), 4) and "3 fields, expected 2" in err.message


def test_wrong_number_of_fields_in_tsv(tmp_path):
    path = tmp_path / "log.tsv"
    path.write_text('query\tn\n"quoted" query\t1\nb\n', encoding="utf-8")
    err = _error(path, count_col="n")
    assert err.line == 3 and "1 fields, expected 2" in err.message


@pytest.mark.parametrize(
    "bad, why", [("x", "not a number"), ("-2", "whole number"), ("1.5", "whole number"), ("", "empty")]
)
def test_bad_count_names_the_line_even_after_a_multiline_record(tmp_path, bad, why):
    path = tmp_path / "log.csv.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write(f'query,n\n"two\nlines",1\nb,2\nc,{bad}\n')
    err = _error(path, count_col="n")
    assert err.line == 5 and why in err.message
    assert str(err).startswith(f"{path}:5: ")


def test_bad_json_line(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text('{"query": "a"}\n\n{"query": "b"\n', encoding="utf-8")
    err = _error(path)
    assert err.line == 3 and "not valid JSON" in err.message


def test_json_value_that_is_not_an_object_or_not_a_string(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text('{"query": "a"}\n[1, 2]\n', encoding="utf-8")
    assert _error(path).line == 2
    path.write_text('{"query": "a"}\n{"query": ["x"]}\n', encoding="utf-8")
    err = _error(path)
    assert err.line == 2 and "expected a string" in err.message


def test_json_count_that_is_a_word(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text('{"query": "a", "n": 1}\n{"query": "b", "n": "many"}\n', encoding="utf-8")
    err = _error(path, count_col="n")
    assert err.line == 2 and "not a number" in err.message


def test_missing_column_is_reported_against_the_header(tmp_path):
    path = write_log(tmp_path / "log.csv")
    err = _error(path, query_col="q")
    assert err.line == 1 and "no column 'q'" in err.message and "query, user, market, n" in err.message
    err = _error(write_log(tmp_path / "log.jsonl"), query_col="query", user_col="who")
    assert err.line == 1 and "no field 'who'" in err.message


def test_parquet_bad_count_names_the_row(tmp_path):
    path = tmp_path / "log.parquet"
    pq.write_table(pa.table({"query": ["a", "b", "c"], "n": [1, 2, -1]}), path)
    err = _error(path, count_col="n")
    assert err.line is None and err.message.startswith("row 3: ")


def test_unknown_format_and_missing_file(tmp_path):
    path = tmp_path / "log.xlsx"
    path.write_text("x", encoding="utf-8")
    assert "unknown log format" in _error(path).message
    assert "no such file" in _error(tmp_path / "nope.csv").message


def test_not_utf8(tmp_path):
    path = tmp_path / "log.csv"
    path.write_bytes(b"query\nabc\n\xff\xfe bad\n")
    assert "UTF-8" in str(_error(path))


def test_options_naming_the_same_column_twice_are_refused(tmp_path):
    path = write_log(tmp_path / "log.csv")
    with pytest.raises(ValueError, match="different columns"):
        collapse_log(path, query_col="query", user_col="query")


# ---- bulk normalisation agrees with the one-by-one contract -----------------------------------

_ALPHABET = st.sampled_from(
    list("aB Z9?'\t\n\x0b\x0c\r\x1c\x1f") + ["\u00a0", "\u2019", "\u200b", "\u00df", "\uff21", "\u0130", "\u2003"]
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.text(_ALPHABET, max_size=12), st.text(max_size=8)), max_size=30))
def test_normalize_many_matches_normalize_text(texts):
    out = logs.normalize_many(pa.array(texts, pa.string())).to_pylist()
    assert out == [normalize_text(t) for t in texts]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(st.sampled_from(list("ab ?\t\n\x0b\x0c\r\x1c\x1d\x1f\x08\x0e\x1b")), max_size=8),
                max_size=30), st.integers(0, 3))
def test_messy_space_from_the_bytes_is_the_regex(texts, skip):
    """The white space normalize_many tidies, found from the bytes (any slice of an array), is what
    the regex it replaced finds: no string missed (it would stay untidy) and none extra."""
    import re

    messy = re.compile(r"[\t\n\x0b\x0c\r\x1c-\x1f]|  |^ | $")
    from curation.sample import draw

    arr = pa.array(["  ", *texts], pa.string()).slice(min(skip, len(texts)))
    expected = [messy.search(t) is not None for t in arr.to_pylist()]
    assert logs._messy_space(arr).tolist() == expected
    chunk, shapes = draw._BYTES_CHUNK, draw.is_question(arr).tolist()
    try:  # read a few strings at a time: the same
        draw._BYTES_CHUNK = 3
        assert logs._messy_space(arr).tolist() == expected
        assert draw.is_question(arr).tolist() == shapes
    finally:
        draw._BYTES_CHUNK = chunk


# ---- the collapse against a plain Python reference, and its settings that must not matter ------

_TRICKY = ["Weather", "weather ", "WEATHER\u200b", "what\u2019s", "What's", "\uff37eather", "stra\u00dfe", "STRASSE",
           "\u0130stanbul", "istanbul", "caf\u00e9", "cafe\u0301", "a\u00a0b", "a\tb", "x\x1cy", " ", "", "\u2003",
           "how", "can i", "?", "news", "\ufb01le", "file", "\u00bdcup", "\u201cquote\u201d", '"quote"',
           "soft\u00adhyphen", "softhyphen", "\u03a3\u03af\u03c3\u03c5\u03c6\u03bf\u03c2",
           "\u03a3\u038a\u03a3\u03a5\u03a6\u039f\u03a3",
           "emoji \U0001f600", "\u212bngstrom", "\u00c5ngstrom", "  two  spaces ", "Tab\tand\nnewline"]


def tricky_rows(n, seed):
    rnd = random.Random(seed)
    rows = []
    for _ in range(n):
        q = " ".join(rnd.choice(_TRICKY) for _ in range(rnd.randint(1, 3)))
        if rnd.random() < 0.3:
            q += f" {rnd.randint(0, 40)}"
        user = rnd.choice(["", " ", f"u{rnd.randint(0, 60)}", f"U{rnd.randint(0, 5)}", "\u00e9l\u00e8ve"])
        rows.append((q, user, rnd.choice(["us", "uk", "de", "us "]), rnd.choice([0, 1, 1, 2, 7])))
    return rows


def write_tricky(path, rows):
    """A log of ``rows``; CSV written by pyarrow's writer, which quotes commas, quotes and newlines."""
    if not str(path).endswith(".csv"):
        return write_log(path, rows)
    import pyarrow.csv as pacsv

    cols = list(zip(*rows))
    pacsv.write_csv(pa.table({h: list(c) for h, c in zip(["query", "user", "market", "n"], cols)}), path)
    return path


def reference_collapse(rows):
    """The collapse written plainly: normalize_text per row, dicts and sets, fractions for the user mass."""
    from fractions import Fraction

    traffic, by_stratum, users = collections.Counter(), collections.Counter(), collections.defaultdict(set)
    empty = 0
    for q, u, m, n in rows:
        t = normalize_text(q)
        if not t:
            empty += 1
            continue
        traffic[t] += n
        by_stratum[t, m] += n
        if u.strip():
            users[t].add(u)
    queries_of = collections.defaultdict(set)
    for t, us in users.items():
        for u in us:
            queries_of[u].add(t)
    records, mass, zero = [], [], 0
    for t in sorted(traffic):
        if traffic[t] == 0:
            zero += 1
            continue
        seen = [m for (text, m) in by_stratum if text == t]
        best = min(seen, key=lambda m: (-by_stratum[t, m], m))
        records.append({"text": t, "traffic": traffic[t], "users": len(users[t]), "market": best})
        mass.append(sum((Fraction(1, len(queries_of[u])) for u in users[t]), Fraction(0)) / len(queries_of))
    multi = sum(1 for t in traffic if len([1 for (text, _) in by_stratum if text == t]) > 1)
    return records, [float(x) for x in mass], {"empty_rows": empty, "zero_traffic": zero, "multi_stratum": multi,
                                               "distinct_raw": len({q for q, *_ in rows})}


@pytest.mark.parametrize("name", ["log.csv", "log.jsonl", "log.parquet"])
def test_tricky_unicode_log_matches_a_plain_python_reference(tmp_path, name):
    """Case, NFKC forms, curly quotes, zero-width and odd white space, blank users, zero counts:
    traffic, distinct users, stratum, user mass and the counts of LogStats as a plain reference says."""
    rows = tricky_rows(4000, seed=11)
    path = write_tricky(tmp_path / name, rows)
    result = collapse_log(path, query_col="query", user_col="user", count_col="n", strata=["market"])
    records, mass, facts = reference_collapse(rows)
    assert result.queries.to_dict("records") == records
    assert result.user_mass == pytest.approx(mass, rel=1e-12, abs=0)
    st_ = result.stats
    assert (st_.rows, st_.searches) == (len(rows), sum(r[3] for r in rows))
    assert {k: getattr(st_, k) for k in facts} == facts


@pytest.mark.parametrize("dense_cells", [0, 40, 1 << 23])
def test_windows_blocks_and_the_traffic_layout_never_change_the_collapse(tmp_path, monkeypatch, dense_cells):
    """Tiny blocks and windows (strings met again in later windows, new ones among them), sparse
    traffic or a switch to it midway, small pair buckets merged often: the same result, to the bit."""
    rows = tricky_rows(6000, seed=12)
    path = write_tricky(tmp_path / "log.csv", rows)
    kw = dict(query_col="query", user_col="user", count_col="n", strata=["market"])
    expected = collapse_log(path, **kw)
    monkeypatch.setattr(log_reader, "_BLOCK_BYTES", 2048)
    monkeypatch.setattr(logs, "_WINDOW_BYTES", 5000)
    monkeypatch.setattr(logs, "_DENSE_CELLS", dense_cells)
    monkeypatch.setattr(logs, "_MERGE_AT", 64)
    got = collapse_log(path, **kw)
    assert got.queries.equals(expected.queries) and got.stats == expected.stats
    assert got.user_mass.tobytes() == expected.user_mass.tobytes()
    # Unordered (as the sampler asks): the same rows and masses, in the collapse's own order.
    loose = collapse_log(path, **kw, ordered=False)
    order = np.argsort(loose.queries["text"].to_numpy(dtype=object), kind="stable")
    assert loose.queries.iloc[order].reset_index(drop=True).equals(expected.queries) and loose.stats == expected.stats
    assert loose.user_mass[order].tobytes() == expected.user_mass.tobytes()


def test_strings_keep_their_ids_and_new_ones_come_next_in_order_of_appearance():
    strings = logs._Strings()
    first = strings.ids([pa.array(["b", "a", "b", ""]), pa.array(["a", "c"])])
    assert [f.tolist() for f in first] == [[0, 1, 0, 2], [1, 3]]
    again = strings.ids([pa.array(["c", "a\u0301", "\u00e1", "b", "d"])])  # two ways to write one letter: two strings
    assert again[0].tolist() == [3, 4, 5, 0, 6]
    assert strings.values.to_pylist() == ["b", "a", "", "c", "a\u0301", "\u00e1", "d"]


def test_huge_counts_are_summed_exactly(tmp_path):
    """Counts whose sums pass 2**53 (where float sums lose whole numbers) are summed as integers."""
    big = 10**15 - 1
    rows = [("a", "u1", "x", big)] * 11 + [("a", "u3", "y", 1), ("b", "u1", "x", 3)]
    path = write_log(tmp_path / "log.csv", rows)
    q = collapse_log(path, query_col="query", count_col="n", strata=["market"]).queries
    assert 11 * big > 2**53 and float(11 * big) != 11 * big
    assert q.to_dict("records") == [{"text": "a", "traffic": 11 * big + 1, "market": "x"},
                                    {"text": "b", "traffic": 3, "market": "x"}]


def test_a_log_normalised_at_first_then_not_collapses_as_one_read_whole(tmp_path, monkeypatch):
    """Windows of queries already in their normalised form (their forms numbered without a hash
    pass), then raw variants of them and new ones: the same queries as in one window."""
    head = [f"query {i % 700}" for i in range(3000)]
    tail = [q for i in range(1500) for q in (f"  Query {i % 900} ", f"query {i % 900}", f"NEW {i}")]
    path = tmp_path / "log.csv"
    path.write_text("query,user\n" + "".join(f"{q},u{i % 37}\n" for i, q in enumerate(head + tail)),
                    encoding="utf-8")
    expected = collapse_log(path, query_col="query", user_col="user")
    monkeypatch.setattr(log_reader, "_BLOCK_BYTES", 2048)
    monkeypatch.setattr(logs, "_WINDOW_BYTES", 5000)
    got = collapse_log(path, query_col="query", user_col="user")
    assert got.queries.equals(expected.queries) and got.stats == expected.stats
    assert len(got.queries) == 900 + 1500 and got.stats.distinct_raw == 900 + 900 + 1500
    # "query 5": 5 rows in the head; in the tail 2 rows of each of its 2 raw forms.
    assert got.queries.set_index("text").loc["query 5", "traffic"] == 5 + 2 * 2
