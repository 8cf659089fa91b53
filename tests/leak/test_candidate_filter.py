"""The leak check's fast paths give exactly the reference rule's results.

The scan finds candidates by counting, per chunk and query, the query's distinct n-grams the chunk
holds (word ids through prefix tables, or keys), verifies them on word lists cut in one pass, and
takes containment from the exact count. Each of those is checked here against an independent
brute force over plain Python sets of ``normalize_text``'s words, on generated text with
boilerplate, near-duplicates and Unicode (accents, curly quotes, ligatures, "ß", no-break spaces),
with the tables on and off and with hashed keys.
"""

from __future__ import annotations

import json
import re
import string
import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curation.formats.fileio import NestingGuard, is_clean_text
from curation.formats.normalize import normalize_text
from curation.leak.driver import leakcheck
from curation.leak.ngrams import word_ngrams, words_of

# --------------------------------------------------------------------------------------------
# the rule, restated independently


def _reference_normalize(text: str) -> str:
    quotes = {"\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'", "\u201c": '"',
              "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"', "\u00ab": '"', "\u00bb": '"'}
    text = unicodedata.normalize("NFKC", text).casefold()
    text = "".join(quotes.get(c, c) for c in text)
    text = re.sub("[\u00ad\u200b\u200c\u200d\u2060\ufeff]", "", text)
    return re.sub(r"\s+", " ", text).strip()


def _grams(text: str, n: int) -> set:
    toks = re.findall(r"\w+", _reference_normalize(text))
    return {tuple(toks[i : i + n]) for i in range(len(toks) - n + 1)}


def _brute_scores(queries, chunks, *, threshold, n, modes):
    """{(qid, chunk id, mode): score} of every matching pair, by sets (exact: verbatim at word
    boundaries, by regex on the reference normalisation; a query without an n-gram only when the
    chunk is the query)."""
    found = {}
    for qid, qtext in queries:
        q = _grams(qtext, n)
        qn = _reference_normalize(qtext)
        for cid, ctext in chunks:
            c = _grams(ctext, n)
            if "exact" in modes and qn and not q:  # no n-gram: only a chunk equal to it
                if _reference_normalize(ctext) == qn:
                    found[(qid, cid, "exact")] = 1.0
            elif "exact" in modes and qn:
                head = r"(?<!\w)" if re.match(r"\w", qn[0]) else ""
                tail = r"(?!\w)" if re.match(r"\w", qn[-1]) else ""
                if re.search(head + re.escape(qn) + tail, _reference_normalize(ctext)):
                    found[(qid, cid, "exact")] = 1.0
            if q:
                inter = len(q & c)
                if "jaccard" in modes and inter / len(q | c) >= threshold:
                    found[(qid, cid, "jaccard")] = inter / len(q | c)
                if "containment" in modes and inter / len(q) >= threshold:
                    found[(qid, cid, "containment")] = inter / len(q)
    return found


def _scores(report):
    return {(q.qid, m.chunk_id, m.mode): m.score for q in report.queries for m in q.matches}


# --------------------------------------------------------------------------------------------
# generated text shaped like users' data

_WORDS = ("the number of a list can be used page guide release search query index chunk data "
          "value returns Python numpy café naïve Straße ﬁle résumé über cœur İstanbul MAX_LEN x2 "
          "_private it's don't").split()
_GLUE = [" ", " ", " ", "  ", ", ", ". ", "\n", "\u00a0", " \u201c", "\u201d ", " - ", "\u200b", "\t"]
_BOILER = "This page is part of the reference documentation. See the user guide for the number of options."


def _text(draw, k_min, k_max):
    words = draw(st.lists(st.sampled_from(_WORDS), min_size=k_min, max_size=k_max))
    out = []
    for w in words:
        out.append(w.upper() if draw(st.integers(0, 9)) == 0 else w)
        out.append(draw(st.sampled_from(_GLUE)))
    return "".join(out)


@st.composite
def _corpus(draw):
    queries = [(f"q{i}", _text(draw, 1, 10)) for i in range(draw(st.integers(1, 6)))]
    queries.append(("qb", "the number of options described in the user guide"))
    chunks = []
    for i in range(draw(st.integers(1, 25))):
        kind = draw(st.integers(0, 5))
        body = _text(draw, 0, 30)
        if kind == 0:  # a query copied in
            body = f"{body} {draw(st.sampled_from(queries))[1]} {_text(draw, 0, 5)}"
        elif kind == 1 and chunks:  # a near-duplicate of an earlier chunk: one word more
            body = draw(st.sampled_from(chunks))[1] + " " + draw(st.sampled_from(_WORDS))
        elif kind == 2:  # boilerplate
            body = f"{_BOILER} {body}"
        elif kind == 3:  # the chunk is the query
            body = draw(st.sampled_from(queries))[1]
        chunks.append((f"c{i:02d}", body))
    return queries, chunks


def _write(tmp_path, chunks):
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps({"id": c, "text": t}) + "\n" for c, t in chunks), encoding="utf-8")
    return [str(path)]


@pytest.mark.parametrize("paths", ["tables", "keys", "hashed"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=_corpus(), threshold=st.sampled_from([0.3, 0.6, 0.85, 1.0]), n=st.integers(1, 3))
def test_scores_equal_brute_force_on_generated_text(tmp_path, monkeypatch, paths, data, threshold, n):
    from curation.leak import index as lk

    if paths != "tables":
        monkeypatch.setattr(lk, "_PREFIX_TABLE_LIMIT", 0)
    if paths == "hashed":
        monkeypatch.setattr(lk, "_POSITIONAL_LIMIT", 0)
    queries, chunks = data
    files = _write(tmp_path, chunks)
    for modes in (("containment",), ("exact", "jaccard", "containment")):
        report = leakcheck(queries, files, modes=modes, threshold=threshold, ngram=f"word:{n}", workers=1,
                           max_matches=10_000)
        assert _scores(report) == _brute_scores(queries, chunks, threshold=threshold, n=n, modes=modes)


def test_kept_matches_are_the_best_whatever_spans_are_skipped(tmp_path):
    """Only the ``max_matches`` best of each query are kept (score, then mode, then chunk id):
    matches that cannot enter that list get no span, but the list and the counts are unchanged."""
    queries = [("q", "the number of options described here")]
    chunks = [(f"c{i:03d}", f"intro {i} the number of options described here and more") for i in range(60)]
    chunks += [(f"b{i:03d}", f"the number of options described there {i}") for i in range(40)]
    files = _write(tmp_path, chunks)
    full = leakcheck(queries, files, modes=("containment", "jaccard"), threshold=0.5, workers=1, max_matches=1000)
    few = leakcheck(queries, files, modes=("containment", "jaccard"), threshold=0.5, workers=1, max_matches=7)
    ranked = sorted(full.queries[0].matches, key=lambda m: (-m.score, m.mode != "jaccard", m.chunk_id))
    assert few.queries[0].matches == ranked[:7]
    assert few.queries[0].n_matches == full.queries[0].n_matches == len(ranked) == 200


# --------------------------------------------------------------------------------------------
# the one-pass normaliser and word cutter


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(string.printable + "\x0b\x0c\x1c\x1d\x1e\x1f\x00\x7f")))
def test_ascii_fast_normalisation_is_the_full_rule(text):
    assert normalize_text(text) == _reference_normalize(text)


@settings(max_examples=500, deadline=None)
@given(st.text() | st.text(alphabet=st.sampled_from(" \t\u00a0\u2028\u3000\u200b\u00adAaßİﬁ\u2019\u201c\u0301")))
def test_normalisation_in_one_translate_and_split_is_the_full_rule(text):
    assert normalize_text(text) == _reference_normalize(text)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(string.printable + "\u00a0\u2019\u201cßﬁéİ\u200b\u00ad\u3000\u2028")))
def test_words_in_one_pass_are_the_rules_words(text):
    words = words_of(text)
    assert words == re.findall(r"\w+", _reference_normalize(text))
    assert word_ngrams(words, 3) == _grams(text, 3)


_UTF8_PIECES = [b"a", b"\xc3\xa9", b"\xed\xa0\x80", b"\xc0\xaf", b"\xf4\x90\x80\x80", b"\xf0\x9f\x98\x80",
                b"\xe2\x82", b"\x80", b"\xff", b"\xef\xbf\xbf", b"\xe0\x80\x80", b"\xed\x9f\xbf", b"\xef\xbb\xbf"]


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=24) | st.text(max_size=12).map(lambda t: t.encode("utf-8", "surrogatepass"))
       | st.lists(st.sampled_from(_UTF8_PIECES), max_size=8).map(b"".join))
def test_utf8_check_is_decode(data):
    """Arrow's UTF-8 validation refuses what decode refuses: overlong forms, surrogates, code
    points past U+10FFFF, cut sequences (and the check refuses NUL and a byte-order mark)."""
    try:
        data.decode("utf-8")
        clean = b"\x00" not in data and b"\xef\xbb\xbf" not in data
    except UnicodeDecodeError:
        clean = False
    assert is_clean_text(data) == clean


def _deepest_per_line(data: bytes) -> int:
    deepest = 0
    for line in data.split(b"\n"):
        depth = 0
        for c in line:
            depth += (c in b"[{") - (c in b"]}")
            deepest = max(deepest, depth)
    return deepest


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="[]{}\nab ", max_size=300), st.integers(1, 12), st.lists(st.integers(0, 300), max_size=4))
def test_nesting_guard_is_exact_on_whole_lines_and_never_misses(text, limit, cuts):
    """The guard on a block of whole lines says exactly whether a line nests deeper than the limit
    (brackets in strings counted too); fed the same bytes cut anywhere, it never misses one."""
    data = text.encode()
    deep = _deepest_per_line(data) > limit
    assert NestingGuard(limit).too_deep(data) == deep
    guard = NestingGuard(limit)
    edges = sorted({min(c, len(data)) for c in cuts})
    pieces = [data[a:b] for a, b in zip([0, *edges], [*edges, len(data)])]
    assert any(guard.too_deep(p) for p in pieces) or not deep


_REFUSED_LINES = {
    "an escaped NUL": '{"id": "x", "text": "b\\u0000c"}',
    "a non-string title": '{"id": "x", "text": "b", "title": 5}',
    "a non-string url": '{"id": "x", "text": "b", "url": ["u"]}',
    "a long integer": '{"id": "x", "text": "b", "n": ' + "1" * 45 + "}",
    "a long integer among floats": '{"id": "x", "text": "b", "n": [1.5, ' + "2" * 45 + "]}",
    "deep nesting": '{"id": "x", "text": "b", "n": ' + "[" * 70 + "]" * 70 + "}",
    "a lone surrogate": '{"id": "x", "text": "b\\udc00"}',
    "a duplicate key": '{"id": "x", "text": "b", "text": "c"}',
    "a blank id": '{"id": " ", "text": "b"}',
    "invalid UTF-8": b'{"id": "x", "text": "b\xc0\xaf"}',
}


@pytest.mark.parametrize("line", list(_REFUSED_LINES.values()), ids=list(_REFUSED_LINES))
def test_the_scan_refuses_what_the_corpus_reader_refuses(tmp_path, line):
    """A block that pyarrow's reader would take but golden refuses goes to the exact reader: the
    leak check names the same line as the corpus reader, in a block of good lines."""
    from curation.formats.corpus import iter_corpus_file
    from curation.formats.fileio import InputError

    good = "".join(json.dumps({"id": f"d{i}", "text": f"some words {i}", "n": 1.5}) + "\n" for i in range(50))
    path = tmp_path / "corpus.jsonl"
    raw = line if isinstance(line, bytes) else line.encode()
    path.write_bytes(good.encode() + raw + b"\n" + good.replace('"d', '"e').encode())
    with pytest.raises(InputError) as exact:
        list(iter_corpus_file(path))
    with pytest.raises(InputError) as scan:
        leakcheck([("q", "some words here")], [str(path)], workers=1)
    assert (scan.value.line, scan.value.message) == (exact.value.line, exact.value.message) == (51, scan.value.message)
