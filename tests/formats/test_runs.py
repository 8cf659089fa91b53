import gzip
import re

import pytest

from curation.formats.fileio import InputError
from curation.formats.runs import read_run, trec_order


def test_trec_order_breaks_ties_by_docid_descending():
    results = [("b", 1.0), ("a", 2.0), ("c", 1.0), ("d", 0.5)]
    assert [d for d, _ in trec_order(results)] == ["a", "c", "b", "d"]


def test_rank_column_is_ignored(tmp_path):
    path = tmp_path / "run.trec"
    path.write_text("1 Q0 d1 1 0.1 sys\n1 Q0 d2 2 0.9 sys\n1 Q0 d3 3 0.9 sys\n")
    run = read_run(path)
    assert run.name == "sys"
    assert run.rankings["1"] == ["d3", "d2", "d1"]


def test_gzip_and_jsonl(tmp_path):
    gz = tmp_path / "run.trec.gz"
    with gzip.open(gz, "wt") as fh:
        fh.write("7 Q0 x 1 3 s\n7 Q0 y 2 4 s\n")
    assert read_run(gz).rankings == {"7": ["y", "x"]}
    js = tmp_path / "run.jsonl"
    js.write_text('{"qid": 7, "docid": "x", "score": 3}\n{"qid": "7", "docid": "y", "score": 4.5}\n')
    run = read_run(js)
    assert run.rankings == {"7": ["y", "x"]}
    assert run.name == "run"


@pytest.mark.parametrize(
    "content, line, words",
    [
        ("1 Q0 d1 1 0.5 s\n1 Q0 d2 2 0.4\n", 2, "5 fields"),
        ("1 Q0 d1 1 0.5 s\n\n1 Q0 d2 2 high s\n", 3, "not a number"),
        ("1 Q0 d1 1 0.5 s\n1 Q0 d1 2 0.4 s\n", 2, "appears twice"),
    ],
)
def test_bad_lines_name_file_and_line(tmp_path, content, line, words):
    path = tmp_path / "bad.trec"
    path.write_text(content)
    with pytest.raises(InputError) as info:
        read_run(path)
    assert info.value.line == line
    assert str(info.value).startswith(f"{path}:{line}: ")
    assert words in str(info.value)


def test_scores_equal_at_trec_eval_precision_are_ties(tmp_path):
    # trec_eval keeps scores as 32-bit floats: these two differ only beyond float32, so trec_eval
    # sees a tie and puts the larger docid first, although "a" has the larger double.
    path = tmp_path / "run.trec"
    path.write_text("1 Q0 a 1 0.30000001 s\n1 Q0 b 2 0.3 s\n1 Q0 c 3 0.2 s\n")
    assert read_run(path).rankings["1"] == ["b", "a", "c"]


def test_writer_round_trips_in_trec_eval_order(tmp_path):
    from curation.formats.runs import write_run

    path = tmp_path / "out.trec"
    write_run([("1", [("b", 2.5), ("a", 1.0)]), ("2", [("x", 0.125)])], path, tag="sys")
    assert path.read_text() == "1 Q0 b 1 2.5 sys\n1 Q0 a 2 1.0 sys\n2 Q0 x 1 0.125 sys\n"
    run = read_run(path)
    assert run.name == "sys" and run.rankings == {"1": ["b", "a"], "2": ["x"]}
    write_run([("1", [("b", 2.5)])], path, tag="t", precision=3)
    assert path.read_text() == "1 Q0 b 1 2.500 t\n"


# --------------------------------------------------------------------------------------------
# The fast reader (pyarrow's CSV reader + numpy) against expected values worked out by hand


def _tab(text: str) -> str:
    return text.replace(" ", "\t")


@pytest.mark.parametrize("sep", [" ", "\t"])
@pytest.mark.parametrize("compress", [False, True])
def test_plain_and_gzip_tab_and_space_read_alike(tmp_path, sep, compress):
    text = "301 Q0 b 1 2.5 sys\n301 Q0 a 2 2.5 sys\n301 Q0 c 3 1 sys\n302 Q0 z 1 0.5 sys\n".replace(" ", sep)
    path = tmp_path / ("run.trec.gz" if compress else "run.trec")
    path.write_bytes(gzip.compress(text.encode()) if compress else text.encode())
    run = read_run(path)
    assert run.name == "sys"
    assert run.rankings == {"301": ["b", "a", "c"], "302": ["z"]}
    assert run.scores == {"301": [2.5, 2.5, 1.0], "302": [0.5]}
    assert read_run(path, depth=1).rankings == {"301": ["b"], "302": ["z"]}


@pytest.mark.parametrize(
    "depth, expected", [(1, ["b"]), (2, ["b", "d"]), (3, ["b", "d", "c"]), (9, ["b", "d", "c", "a", "e"])]
)
def test_ties_at_the_cut_go_to_the_larger_docid(tmp_path, depth, expected):
    # Scores in file order, three tied at 4: trec_eval keeps d before c before a.
    path = tmp_path / "run.trec"
    path.write_text(_tab("1 Q0 b 1 5 s\n1 Q0 a 2 4 s\n1 Q0 c 3 4 s\n1 Q0 d 4 4 s\n1 Q0 e 5 1 s\n"))
    assert read_run(path, depth=depth).rankings == {"1": expected}


def test_scores_beyond_float32_are_refused_and_3e38_is_kept(tmp_path):
    # The largest float32 is about 3.4028235e38: trec_eval would read 1e39 as +inf and tie it with
    # every other overflow; golden refuses the line instead (a result must not change silently).
    path = tmp_path / "run.trec"
    path.write_text(_tab("1 Q0 a 1 3e38 s\n1 Q0 b 2 -3e38 s\n"))
    run = read_run(path)
    assert run.rankings == {"1": ["a", "b"]}
    assert run.scores["1"][0] == pytest.approx(3e38, rel=1e-7)
    path.write_text(_tab("1 Q0 a 1 3e38 s\n1 Q0 b 2 1e39 s\n"))
    with pytest.raises(InputError, match=rf"^{path}:2: score"):
        read_run(path)


@pytest.mark.parametrize(
    "content, line, words",
    [
        ("1\tQ0\ta\t1\t2\ts\n1\tQ0\tb\t2\t1\n", 2, "has 5 fields"),
        ("1\tQ0\ta\t1\t2\ts\n1\tQ0\tb\t2\t1\n1\tQ0\tc\t2\t1\ts\tx\n", 2, "has 5 fields"),
        ("1\tQ0\ta\t1\t2\ts\n1\t\tb\t2\t1\ts\n", 2, "has 5 fields"),  # an empty q0 field
        ("1\tQ0\ta\t1\t2\ts\n1\tQ0\tb\t\t1\ts\n", 2, "has 5 fields"),  # an empty rank field
        ("1\tQ0\ta\t1\tNA\ts\n", 1, "score 'NA' is not a number"),  # missing to pyarrow
        ("1\tQ0\ta\t1\t2\ts\n1\tQ0\tb\t2\tnan\ts\n", 2, "score is NaN"),
        ("1\tQ0\ta\t1\t2\ts\n2\tQ0\ta\t1\t2\ts\n1\tQ0\ta\t3\t1\ts\n", 3, "docid 'a' appears twice for query '1'"),
        ("7\tQ0\t" + "x" * 70 + "\t1\t2\ts\n7\tQ0\t" + "x" * 70 + "\t2\t1\ts\n", 2, "appears twice"),
    ],
)
def test_malformed_tab_separated_lines_name_file_and_line(tmp_path, content, line, words):
    path = tmp_path / "bad.trec.gz"
    path.write_bytes(gzip.compress(content.encode()))
    with pytest.raises(InputError) as info:
        read_run(path, depth=1)
    assert info.value.line == line
    assert str(info.value).startswith(f"{path}:{line}: ") and words in str(info.value)


def test_docids_alike_in_their_first_bytes_or_in_other_queries_are_not_repeats(tmp_path):
    # Docids that differ only after the first 8 bytes, or only in length, or that are longer
    # than 64 bytes (read another way), and the same docid in two queries are all fine.
    long = "y" * 80
    rows = [
        ("1", "abcdefgh1", 3),
        ("1", "abcdefgh2", 2),
        ("1", "abcdefgh", 1),
        ("2", "abcdefgh1", 1),
        ("3", long, 2),
        ("3", long + "z", 1),
    ]
    path = tmp_path / "run.trec"
    path.write_text("".join(f"{q}\tQ0\t{d}\t1\t{s}\ts\n" for q, d, s in rows))
    assert read_run(path).rankings == {
        "1": ["abcdefgh1", "abcdefgh2", "abcdefgh"],
        "2": ["abcdefgh1"],
        "3": [long, long + "z"],
    }


def test_queries_out_of_blocks_and_of_mixed_lengths(tmp_path):
    path = tmp_path / "run.trec"
    path.write_text(_tab("10 Q0 a 1 1 s\n9 Q0 b 1 2 s\n10 Q0 c 2 3 s\n9 Q0 a 2 1 s\n100 Q0 a 1 1 s\n"))
    run = read_run(path, depth=1)
    assert run.rankings == {"10": ["c"], "9": ["b"], "100": ["a"]}
    assert list(run.rankings) == ["10", "9", "100"]  # in order of first appearance


def test_tags_of_one_length_told_apart(tmp_path):
    path = tmp_path / "mixed.trec"
    path.write_text(_tab("1 Q0 a 1 1 s1\n1 Q0 b 2 0 s2\n"))
    assert read_run(path).name == "mixed"
    path.write_text(_tab("1 Q0 a 1 1 s1\n1 Q0 b 2 0 s1\n"))
    assert read_run(path).name == "s1"


def test_fields_after_the_sixth_are_ignored_with_one_warning_per_file(shared, tmp_path):
    # trec_eval's own results.trunc has junk after the tag on 5 lines; trec_eval reads six fields
    # and ignores the rest, and so does golden, warning once for the file.
    d = shared("trec_eval_tests")
    run = read_run(d / "results.trunc")
    clean = tmp_path / "clean.trec"
    clean.write_text("".join("\t".join(line.split()[:6]) + "\n" for line in open(d / "results.trunc")))
    ref = read_run(clean)
    assert run.rankings == ref.rankings and run.scores == ref.scores and run.name == ref.name
    assert run.extra_fields == 5 and ref.extra_fields == 0 and ref.summary() is None
    warning = run.summary()
    assert warning.count("\n") == 0 and warning.startswith(f"warning: {d / 'results.trunc'}:1: 5 line(s)")
    assert "ignored, as trec_eval ignores them" in warning


@pytest.mark.parametrize("sep", [" ", "\t"])
def test_extra_fields_keep_the_tag_and_scores_of_the_first_six(tmp_path, sep):
    path = tmp_path / "x.trec"
    path.write_text(sep.join(["1", "Q0", "a", "1", "2.5", "sys", "comment", "here"]) + "\n"
                    + sep.join(["1", "Q0", "b", "2", "3.5", "sys"]) + "\n")
    run = read_run(path)
    assert run.name == "sys" and run.rankings == {"1": ["b", "a"]} and run.scores == {"1": [3.5, 2.5]}
    assert run.extra_fields == 1 and run.extra_first_line == 1


@pytest.mark.parametrize("sep", [" ", "\t"])
@pytest.mark.parametrize("tail", ["{sep}junk", "{sep}more{sep}junk", "{sep}x{sep}", "{sep}"])
def test_extra_fields_on_every_line_read_like_the_line_reader(tmp_path, sep, tail):
    # Every line with the same extra fields: the fast reader takes them (and ignores them) itself;
    # whatever it decides must be what the exact line-by-line reader gives.
    from curation.formats.runs import _parse_lines

    lines = [sep.join([str(q), "Q0", f"d{d}", str(d), str(1.0 / (d + 1)), "sys"]) + tail.format(sep=sep)
             for q in range(3) for d in range(5)]
    path = tmp_path / "x.trec"
    path.write_bytes(("\n".join(lines) + "\n").encode())
    run = read_run(path)
    rankings, scores, tags, (repeats, extra, first) = _parse_lines(path.read_bytes(), str(path), False, None)
    assert run.rankings == rankings and run.scores == scores and run.name == "sys"
    assert (run.extra_fields, run.extra_first_line) == (extra, first)
    assert extra == (0 if tail == "{sep}" else 15)


@pytest.mark.parametrize("sep", [" ", "\t"])
@pytest.mark.parametrize("pad", ["", "x"])  # the doubled separator at an even and at an odd byte offset
def test_a_doubled_separator_is_an_empty_field_wherever_it_falls(tmp_path, sep, pad):
    # Two separators in a row make an empty q0 or rank field: str.split() sees five fields, and so
    # must the fast reader, whether the pair starts at an even or an odd offset of the file.
    first = sep.join(["1", "Q0", "a" + pad, "1", "2", "s"]) + "\n"
    for bad in (sep.join(["1", "", "b", "2", "1", "s"]), sep.join(["1", "Q0", "b", "", "1", "s"])):
        path = tmp_path / "bad.trec"
        path.write_text(first + bad + "\n")
        with pytest.raises(InputError, match=rf"^{path}:2: has 5 fields"):
            read_run(path)


def test_equal_pairs_finds_a_repeat_among_values_that_share_buckets():
    import numpy as np

    from curation.formats.runs import _equal_pairs

    rng = np.random.default_rng(5)
    values = rng.integers(0, 2**63, size=50_000, dtype=np.int64).astype(np.uint64) * np.uint64(2)
    assert not _equal_pairs(np.unique(values))
    # Values alike in their top bits (one bucket) but all different: no repeat.
    same_bucket = np.arange(1, 1000, dtype=np.uint64)
    assert not _equal_pairs(np.concatenate([np.unique(values), same_bucket]))
    for at in (0, 123, 49_999):
        planted = np.unique(values)
        planted = np.concatenate([planted, planted[at : at + 1]])
        rng.shuffle(planted)
        assert _equal_pairs(planted)
    assert not _equal_pairs(np.array([7], dtype=np.uint64))


@pytest.mark.parametrize("seed", range(40))
def test_fast_reader_equals_line_reader_on_random_runs(tmp_path, seed):
    # Random runs in the shapes the fast path takes apart: queries in blocks or interleaved, scores
    # sorted or not, many ties (few distinct scores), ties straddling the depth cut, blocks shorter
    # than the depth, docids of mixed lengths (some over 64 bytes), one tag or two.
    import random

    from curation.formats.runs import _parse_lines, _parse_trec_fast

    rng = random.Random(seed)
    sep = rng.choice([" ", "\t"])
    lines = []
    for q in rng.sample(range(1, 400), rng.randint(1, 6)):
        docs = rng.sample(range(10_000), rng.randint(1, 40))
        scores = [rng.choice([1.0, 2.5, 2.5, 3.0, 0.1 * rng.randint(0, 9)]) for _ in docs]
        if rng.random() < 0.7:
            scores.sort(reverse=True)
        for d, s in zip(docs, scores):
            docid = f"D{d}-" + "x" * rng.choice([0, 3, 9, 70])
            lines.append((q, docid, s))
    if rng.random() < 0.3:
        rng.shuffle(lines)
    tags = ["run"] if rng.random() < 0.8 else ["run", "other"]
    text = "".join(sep.join([str(q), "Q0", d, str(r), repr(s), rng.choice(tags)]) + "\n"
                   for r, (q, d, s) in enumerate(lines, 1))
    path = tmp_path / "run.trec"
    path.write_text(text)
    for depth in (None, 1, 3, 10):
        run = read_run(path, depth=depth)
        rankings, scores, got_tags, _ = _parse_lines(text.encode(), str(path), False, depth)
        assert _parse_trec_fast(text.encode(), depth) is not None  # the fast path took the file
        assert run.rankings == rankings and run.scores == scores
        assert list(run.rankings) == list(rankings)
        assert run.name == (next(iter(got_tags)) if len(got_tags) == 1 else "run")


@pytest.mark.parametrize("rank", ["+3", "-2", "007", "-0", "99999999999999999999999",
                                  "1.0", "1e3", "+", "-", "3-", "+-5", "12a", "x"])
@pytest.mark.parametrize("where", [0, 1, 2])  # the first, a middle or the last line
def test_ranks_are_checked_alike_by_the_fast_and_the_exact_reader(tmp_path, rank, where):
    # The fast reader checks the rank column's bytes (digits, a sign first); whatever it decides
    # must be what the exact reader decides: the same run, or the error naming the line.
    from curation.formats.runs import _parse_lines, _parse_trec_fast

    ranks = ["1", "2", "3"]
    ranks[where] = rank
    text = "".join(f"7\tQ0\td{i}\t{r}\t{3 - i}\ts\n" for i, r in enumerate(ranks))
    path = tmp_path / "run.trec"
    path.write_text(text)
    valid = re.fullmatch(r"[+-]?[0-9]+", rank) is not None
    assert (_parse_trec_fast(text.encode(), None) is not None) == valid
    if valid:
        rankings, scores, _, _ = _parse_lines(text.encode(), str(path), False, None)
        run = read_run(path)
        assert run.rankings == rankings == {"7": ["d0", "d1", "d2"]} and run.scores == scores
    else:
        with pytest.raises(InputError, match=rf"^{path}:{where + 1}: rank"):
            read_run(path)


def test_equal_pairs_tells_equal_values_from_values_sharing_a_half():
    """Values alike in one 32-bit half but different in the other are no repeat, however many
    share halves (a few, or more than are compared one half at a time); an equal pair among them is."""
    import numpy as np

    from curation.formats.runs import _SHARED_HALVES_MAX, _equal_pairs

    rng = np.random.default_rng(11)
    base = np.unique(rng.integers(0, 2**63, size=20_000, dtype=np.int64).astype(np.uint64))
    for sharing in (1, 3, _SHARED_HALVES_MAX + 5):
        # Each of the first ``sharing`` values again with only its high half changed, and again
        # with only its low half changed: both halves shared, no value repeated.
        picked = base[:sharing]
        high_changed = picked ^ np.uint64(1 << 40)
        low_changed = picked ^ np.uint64(1 << 3)
        values = np.concatenate([base, high_changed, low_changed])
        assert len(np.unique(values)) == len(values)
        assert not _equal_pairs(values)
        assert _equal_pairs(np.concatenate([values, values[-1:]]))
        assert _equal_pairs(np.concatenate([values[:1], values]))
    assert not _equal_pairs(np.array([], dtype=np.uint64))


@pytest.mark.parametrize("odd", ["\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f"])
@pytest.mark.parametrize("sep", ["\t", " "])
def test_other_ascii_white_space_is_read_alike_by_the_fast_and_the_exact_reader(tmp_path, odd, sep):
    # The exact reader splits fields on spaces and tabs only: \x0b, \x0c and \x1c-\x1f belong to the
    # field they are in, on both paths (the fast path no longer looks for them). In a score they are
    # refused by both, naming the line.
    from curation.formats.runs import _parse_lines, _parse_trec_fast

    rows = [("7", f"d{odd}1", "3.5"), (f"7{odd}", "d2", "2.5"), ("7", "d3", "1.5")]
    text = "".join(sep.join([q, "Q0", d, str(i), s, f"t{odd}"]) + "\n" for i, (q, d, s) in enumerate(rows, 1))
    path = tmp_path / "run.trec"
    path.write_bytes(text.encode())
    assert _parse_trec_fast(text.encode(), None) is not None  # the fast path took the file
    rankings, scores, _, _ = _parse_lines(text.encode(), str(path), False, None)
    run = read_run(path)
    assert run.rankings == rankings == {"7": [f"d{odd}1", "d3"], f"7{odd}": ["d2"]}
    assert run.scores == scores and run.name == f"t{odd}"
    bad = text.replace("2.5", "2.5" + odd)
    path.write_bytes(bad.encode())
    assert _parse_trec_fast(bad.encode(), None) is None
    with pytest.raises(InputError, match=rf"^{re.escape(str(path))}:2: score"):
        read_run(path)
