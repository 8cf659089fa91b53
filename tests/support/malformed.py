"""Malformed input files for the table-driven test of every command that reads files
(tests/cli/test_malformed_inputs.py).

A :class:`Fmt` is one file format as a command reads it: a few clean record lines, and the lines that
turn them into each kind of malformed file (:data:`KINDS`). :func:`corrupt` renders a format as one
kind of file and says what the answer must be (:class:`Expect`): the same result as the clean file
(a byte-order mark, CRLF line ends), a refusal naming the file (and the line, where there is one), or
a success that counts the identical duplicates. Line numbers are 1-based and counted here from the
lines written, independently of the readers.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass, field

# The kinds of malformed file, and the clean file every other one is compared with.
KINDS = (
    "clean", "empty", "header_only", "truncated_gzip", "wrong_delimiter", "bom", "crlf", "invalid_utf8",
    "binary", "duplicate_ids", "conflicting_duplicates", "nan_inf", "huge_line", "missing_columns",
)
# A huge line: 50 MB in one field, as in the issue ("a 50 MB line as a hand-written query").
HUGE_CHARS = 50_000_000
# The byte that makes a line invalid UTF-8 (never valid as a single byte, nor as a lead byte).
BAD_BYTE = b"\xff"
# Binary garbage: every byte value, NULs first, as a file that is no text at all.
BINARY = bytes(range(256)) * 8


@dataclass(frozen=True)
class Fmt:
    """A file format, as clean lines and the lines that spoil it.

    ``records`` are the clean record lines (without line ends), after the ``header`` line when the
    format has one; ``records[1]`` holds ``slot`` once, a place inside a text field where the invalid
    byte and the huge text go. ``None`` for a spoiling line: that kind makes no sense for the format
    (no numbers to make non-finite, no ids to repeat...), and the table leaves it out.
    """

    name: str
    records: tuple[str, ...]
    slot: str
    header: str | None = None
    conflict: str | None = None  # a line that gives records[0]'s id another value
    nan: str | None = None  # records[1] with a non-finite number
    missing: str | None = None  # records[1] lacking a required column or field
    delimiter: tuple[str, str] | None = None  # (the format's separator, a wrong one)
    duplicates: bool = True  # whether an identical repeated record is a duplicate (not so for log rows)
    opening: str | None = None  # a JSON document: the line before the records ("["), records joined by ","
    closing: str | None = None
    gzip_ok: bool = True  # the format may be gzip-compressed
    document: bool = False  # one document (guidelines, a JSON file), not a file of records

    def render(self, records, header: str | None = None) -> str:
        lines = list(records)
        if self.opening is not None:
            lines = [self.opening] + [r + ("," if i < len(lines) - 1 else "") for i, r in enumerate(lines)]
            lines.append(self.closing)
        head = self.header if header is None else header
        if head:
            lines.insert(0, head)
        return "".join(line + "\n" for line in lines)

    def line_of(self, index: int) -> int:
        """The 1-based line number of records[index] in :meth:`render`'s output."""
        return index + 1 + (self.header is not None) + (self.opening is not None)

    def kinds(self) -> list[str]:
        """The kinds of malformed file that make sense for this format."""
        skip = {
            "header_only": self.header is None,
            "wrong_delimiter": self.delimiter is None,
            "duplicate_ids": not self.duplicates,
            "conflicting_duplicates": self.conflict is None,
            "nan_inf": self.nan is None,
            "missing_columns": self.missing is None,
        }
        return [k for k in KINDS if not skip.get(k, False)]


@dataclass(frozen=True)
class Expect:
    """What a command must answer to one kind of file.

    ``same``: exit 0 with the clean file's result. ``ok``: exit 0 (``says``: words the output must
    hold). Else a refusal: exit ``code`` with a message naming the file, at ``line`` when given
    (``path:line``; ``some_line``: at some line), holding each regex of ``says`` (case-insensitive)
    and each number of ``lines``.
    """

    same: bool = False
    ok: bool = False
    code: int = 1
    line: int | None = None
    some_line: bool = False
    says: tuple[str, ...] = ()
    lines: tuple[int, ...] = field(default=())


def corrupt(fmt: Fmt, kind: str) -> tuple[bytes, Expect]:
    """The bytes of ``fmt`` as a file of ``kind``, and the answer a command must give to it."""
    clean = fmt.render(fmt.records)
    rec = list(fmt.records)
    second = fmt.line_of(1)
    if kind == "clean":
        return clean.encode(), Expect(same=True)
    if kind == "empty":  # a file of records says so; a single document (guidelines, JSON) is named
        return b"", Expect(says=() if fmt.document else ("no records",))
    if kind == "header_only":
        return fmt.render([]).encode(), Expect(says=("no records",))
    if kind == "truncated_gzip":
        # a download cut short: the last bytes of the stream (the CRC and size trailer, some data) are missing
        data = gzip.compress(clean.encode(), mtime=0)
        if not fmt.gzip_ok:  # not a gzip format: refused as binary will do
            return data[:-10], Expect(says=(r"gzip|truncat|compress|binary",))
        # "refused with its path and the last complete line read"
        return data[:-10], Expect(says=(r"gzip|truncat|compress", r"line \d+|:\d+"))
    if kind == "wrong_delimiter":
        # the header (or the first record) is one column: which of the first lines is named is the reader's call
        good, bad = fmt.delimiter
        return clean.replace(good, bad).encode(), Expect(some_line=True)
    if kind == "bom":
        return b"\xef\xbb\xbf" + clean.encode(), Expect(same=True)
    if kind == "crlf":
        return clean.replace("\n", "\r\n").encode(), Expect(same=True)
    if kind == "invalid_utf8":
        at = rec[1].index(fmt.slot) + 1
        line = rec[1][:at].encode() + BAD_BYTE + rec[1][at:].encode()
        lines = clean.encode().split(b"\n")
        lines[second - 1] = line
        # column: the 1-based place of the bad byte in its line (ASCII before it, so bytes = characters)
        return b"\n".join(lines), Expect(line=second, says=(r"not valid UTF-8", r"0xff", rf"column {at + 1}\b"))
    if kind == "binary":
        return BINARY, Expect(says=("binary",))
    if kind == "duplicate_ids":
        return fmt.render(rec + [rec[0]]).encode(), Expect(ok=True, says=("duplicate",))
    if kind == "conflicting_duplicates":
        last = fmt.line_of(len(rec))
        return fmt.render(rec + [fmt.conflict]).encode(), Expect(line=last, lines=(fmt.line_of(0), last))
    if kind == "nan_inf":
        rec[1] = fmt.nan
        return fmt.render(rec).encode(), Expect(line=second)
    if kind == "huge_line":
        rec[1] = rec[1].replace(fmt.slot, fmt.slot + "x" * HUGE_CHARS, 1)
        return fmt.render(rec).encode(), Expect(line=second, says=(r"limit|longer than|too long|max",))
    if kind == "missing_columns":
        rec[1] = fmt.missing
        return fmt.render(rec).encode(), Expect(line=second)
    raise ValueError(f"unknown kind {kind!r}")


# ---------------------------------------------------------------------------------------------
# The clean data: three queries, six documents, one project. Every format below is a view of it.

QUERIES = (("q1", "sourdough bread starter"), ("q2", "pasta carbonara recipe"), ("q3", "green tea brewing"),
           ("q4", "rye bread baking"))
DOCS = (
    ("d1", "Feed the sourdough starter flour and water every day."),
    ("d2", "A rye bread needs a long proof."),
    ("d3", "Carbonara is pasta with egg, cheese and guanciale."),
    ("d4", "Boil pasta in salted water."),
    ("d5", "Brew green tea at eighty degrees."),
    ("d6", "Black tea takes boiling water."),
    ("d7", "Bake rye bread in a tin at two hundred degrees."),
    ("d8", "Rye flour holds less gluten."),
)
# (qid, docid, grade) of the qrels; the runs rank the same pairs.
GRADES = (("q1", "d1", 2), ("q1", "d2", 1), ("q2", "d3", 2), ("q2", "d4", 0), ("q3", "d5", 1), ("q3", "d6", 0),
          ("q4", "d7", 2), ("q4", "d8", 1))


def _run(tag: str, swap: bool = False) -> Fmt:
    """A TREC run over the six pairs (``swap``: the two documents of each query change places)."""
    lines = []
    for i, (qid, docid, _) in enumerate(GRADES):
        first = (i % 2 == 0) != swap
        lines.append(f"{qid} Q0 {docid} {1 if first else 2} {3.0 if first else 2.0} {tag}")
    second = lines[1].split()
    return Fmt(
        name="trec run",
        records=tuple(lines),
        slot=second[2],
        conflict=f"{GRADES[0][0]} Q0 {GRADES[0][1]} 7 0.5 {tag}",
        nan=" ".join(second[:4] + ["inf", tag]),
        missing=" ".join(second[:4]),
        delimiter=(" ", ","),
    )


RUN_A = _run("bm25")
RUN_B = _run("dense", swap=True)
RUN_C = _run("hybrid")
RUN_D = _run("both", swap=True)

QRELS = Fmt(
    name="trec qrels",
    records=tuple(f"{q} 0 {d} {g}" for q, d, g in GRADES),
    slot="d2",
    conflict="q1 0 d1 0",
    nan="q1 0 d2 1e400",
    missing="q1 0 d2",
    delimiter=(" ", ","),
)

QUERIES_JSONL = Fmt(
    name="queries.jsonl",
    records=tuple(f'{{"qid": "{q}", "text": "{t}", "traffic": {4 - i}}}' for i, (q, t) in enumerate(QUERIES)),
    slot="carbonara",
    conflict='{"qid": "q1", "text": "rye bread", "traffic": 4}',
    nan='{"qid": "q2", "text": "pasta carbonara recipe", "traffic": NaN}',
    missing='{"qid": "q2", "traffic": 3}',
)


def _pool(pairs) -> Fmt:
    return Fmt(
        name="pool.jsonl",
        records=tuple(f'{{"qid": "{q}", "docid": "{d}", "order": {i % 2 + 1}}}' for i, (q, d, _) in enumerate(pairs)),
        slot="d2",
        conflict=f'{{"qid": "{pairs[0][0]}", "docid": "{pairs[0][1]}", "order": 9}}',
        nan='{"qid": "q1", "docid": "d2", "order": 1e400}',
        missing='{"qid": "q1", "order": 2}',
    )


POOL = _pool(GRADES[:4])  # the project's pool: the pairs of q1 and q2
POOL_EXTENDED = _pool(GRADES)  # and those of q3 and q4: `project extend` adds four pairs

CORPUS_JSONL = Fmt(
    name="corpus.jsonl",
    records=tuple(f'{{"id": "{d}", "text": "{t}"}}' for d, t in DOCS),
    slot="rye",
    conflict='{"id": "d1", "text": "Another text for d1."}',
    missing='{"id": "d2"}',
)

CORPUS_TSV = Fmt(
    name="corpus.tsv",
    header="id\ttext",
    records=tuple(f"{d}\t{t}" for d, t in DOCS),
    slot="rye",
    conflict="d1\tAnother text for d1.",
    missing="d2",
    delimiter=("\t", ","),
)

# A search log: one row a search, so a repeated row is more traffic, not a duplicate.
LOG_CSV = Fmt(
    name="log.csv",
    header="query,count",
    records=("sourdough bread starter,3", "pasta carbonara recipe,2", "green tea brewing,1", "rye bread,4"),
    slot="carbonara",
    nan="pasta carbonara recipe,inf",
    missing="pasta carbonara recipe",
    delimiter=(",", ";"),
    duplicates=False,
)

QUERY_LIST = Fmt(name="query list", records=("how long to knead dough", "iced tea with lemon"), slot="tea")

SEEDS_CSV = Fmt(
    name="seeds.csv",
    header="qid,docid,grade",
    records=("q1,d1,2", "q1,d2,1", "q2,d3,2"),
    slot="d2",
    conflict="q1,d1,0",
    nan="q1,d2,1e400",
    missing="q1",
    delimiter=(",", ";"),
)

GUIDELINES = Fmt(
    name="guidelines",
    records=("# How to judge", "Judge the document against the query as a searcher would.", "- 2: answers it"),
    slot="document",
    duplicates=False,
    gzip_ok=False,
    document=True,
)

GRADES_JSON = Fmt(
    name="grades.json",
    opening="[",
    closing="]",
    records=(
        '{"grade": 0, "name": "off topic", "description": "Nothing to do with the query."}',
        '{"grade": 1, "name": "related", "description": "On the topic, does not answer."}',
        '{"grade": 2, "name": "answers", "description": "Answers the query."}',
    ),
    slot="related",
    conflict='{"grade": 0, "name": "wrong", "description": "Another name for grade 0."}',
    nan='{"grade": 1e400, "name": "related", "description": "On the topic, does not answer."}',
    missing='{"name": "related", "description": "On the topic, does not answer."}',
    duplicates=False,
    gzip_ok=False,
    document=True,
)

# The query set after `golden export split` (what `golden stats sweep` reads): q1 and q3 to tune on, q2 and q4 held out.
_SPLITS = ("tune", "holdout", "tune", "holdout")
QUERIES_SPLIT = Fmt(
    name="queries.jsonl (split)",
    records=tuple(f'{{"qid": "{q}", "text": "{t}", "traffic": {4 - i}, "split": "{_SPLITS[i]}"}}'
                  for i, (q, t) in enumerate(QUERIES)),
    slot="carbonara",
    conflict='{"qid": "q1", "text": "rye bread", "traffic": 4, "split": "tune"}',
    nan='{"qid": "q2", "text": "pasta carbonara recipe", "traffic": Infinity, "split": "holdout"}',
    missing='{"qid": "q2", "traffic": 3, "split": "holdout"}',
)

# pool.meta.json beside pool.jsonl (`golden pool --extend` checks the depth it records).
POOL_META = Fmt(
    name="pool.meta.json",
    opening="{",
    closing="}",
    records=('"format": "golden.pool/1"', '"note": "pooled for the tests"', '"seed": 0'),
    slot="pooled",
    nan='"depth": 1e400',
    duplicates=False,
    gzip_ok=False,
    document=True,
)

SEEDS_JSONL = Fmt(
    name="seeds.jsonl",
    records=('{"qid": "q1", "docid": "d1", "grade": 2}', '{"qid": "q1", "docid": "d2", "grade": 1}',
             '{"qid": "q2", "docid": "d3"}'),
    slot="d2",
    conflict='{"qid": "q1", "docid": "d1", "grade": 0}',
    nan='{"qid": "q1", "docid": "d2", "grade": 1e400}',
    missing='{"qid": "q1", "grade": 1}',
)


# ---------------------------------------------------------------------------------------------
# Values a file must not hold: each is a clean file with one record spoiled, refused with the
# file and the spoiled record's line. The lists say, per format, which record (by its index in
# ``records``) becomes which line; :func:`strict_cases` renders them.

BOM = "\ufeff"
DEEP = "[" * 100_000 + "]" * 100_000  # JSON nested 100,000 deep
HUGE_INT = "1" * 401  # overflows a float (OverflowError on today's code)
HUGER_INT = "7" * 5_000  # past Python's 4,300-digit limit for int() (a message with no file on today's code)

_TREC_QRELS = {
    "grade_underscore": "q1 0 d2 1_0",  # int() reads it as 10
    "grade_exponent": "q1 0 d2 1e0",  # float() reads it as 1
    "grade_arabic_indic": "q1 0 d2 \u0661",
    "grade_full_width": "q1 0 d2 \uff11",
    "nbsp_separator": "q1\u00a00 d2 1",  # str.split() splits on NBSP
    "unit_separator": "q1 0\x1fd2 1",
    "line_separator": "q1 0 d2\u20281",
    "bom_inside": BOM + "q1 0 d2 1",  # a BOM at the start of a later line: a new qid
}


def _trec_run(fmt: Fmt) -> dict[str, str]:
    qid, q0, docid, rank, score, tag = fmt.records[1].split()
    return {
        "score_underscore": f"{qid} {q0} {docid} {rank} 2.0_1 {tag}",
        "score_arabic_indic": f"{qid} {q0} {docid} {rank} \u0662.0 {tag}",
        "rank_full_width": f"{qid} {q0} {docid} \uff12 {score} {tag}",
        "nbsp_separator": f"{qid}\u00a0{q0} {docid} {rank} {score} {tag}",
        "unit_separator": f"{qid} {q0}\x1f{docid} {rank} {score} {tag}",
        "bom_inside": BOM + fmt.records[1],
    }


def _json_ids(record: str, key: str) -> dict[str, str]:
    """``record`` (a JSON object holding ``"key": "..."``) with that id spoiled each way."""
    import json
    import re

    obj = json.loads(record)
    value = json.dumps(obj[key])
    at = f'"{key}": {value}'
    assert at in record, (record, at)

    def swap(new: str) -> str:
        return record.replace(at, f'"{key}": {new}', 1)

    return {
        f"{key}_null": swap("null"),  # becomes "None" on today's code
        f"{key}_object": swap('{"a": 1}'),
        f"{key}_boolean": swap("true"),
        f"{key}_float": swap("1.5"),
        f"{key}_blank": swap('"  "'),
        f"{key}_nan": swap("NaN"),
        f"{key}_lone_surrogate": swap('"\\ud800"'),
        "duplicate_key": re.sub(r"\}$", f', "{key}": {value}' + "}", record),  # the last value silently won
        "deep_nesting": re.sub(r"\}$", f', "x": {DEEP}' + "}", record),
        "huge_integer": re.sub(r"\}$", f', "x": {HUGE_INT}' + "}", record),
        "huger_integer": re.sub(r"\}$", f', "x": {HUGER_INT}' + "}", record),
        "bom_inside": BOM + record,
    }


def strict_cases(fmt: Fmt) -> list[tuple[str, bytes, Expect]]:
    """``(kind, file bytes, answer)`` for each value that ``fmt`` must refuse: the clean
    file with ``records[1]`` replaced, refused at that record's line."""
    spoiled: dict[str, str] = {}
    if fmt is QRELS:
        spoiled = dict(_TREC_QRELS)
    elif fmt.name == "trec run":
        spoiled = _trec_run(fmt)
    elif fmt in (QUERIES_JSONL, QUERIES_SPLIT):
        spoiled = _json_ids(fmt.records[1], "qid")
    elif fmt.name == "pool.jsonl":
        spoiled = _json_ids(fmt.records[1], "docid")
    elif fmt is SEEDS_JSONL:
        spoiled = _json_ids(fmt.records[1], "qid")
        spoiled["grade_string"] = fmt.records[1].replace('"grade": 1', '"grade": "1"')
    elif fmt is CORPUS_JSONL:
        spoiled = _json_ids(fmt.records[1], "id")
        spoiled["text_number"] = '{"id": "d2", "text": 42}'
    elif fmt is CORPUS_TSV:
        spoiled = {"tab_in_text": "d2\tA rye bread\tneeds a long proof.", "bom_inside": BOM + fmt.records[1]}
    elif fmt is LOG_CSV:
        spoiled = {"header_again": fmt.header, "bom_inside": BOM + fmt.records[1]}
    elif fmt is SEEDS_CSV:
        spoiled = {"grade_underscore": "q1,d2,1_0", "grade_arabic_indic": "q1,d2,\u0661", "bom_inside": BOM + "q1,d2,1"}
    elif fmt is GRADES_JSON:
        spoiled = {"grade_string": fmt.records[1].replace('"grade": 1', '"grade": "1"'),
                   "grade_boolean": fmt.records[1].replace('"grade": 1', '"grade": true'),
                   "duplicate_key": fmt.records[1].replace('"grade": 1', '"grade": 1, "grade": 1'),
                   "huger_integer": fmt.records[1].replace('"grade": 1', f'"grade": {HUGER_INT}'),
                   "name_number": fmt.records[1].replace('"name": "related"', '"name": 7')}
    out = []
    for kind, line in spoiled.items():
        rec = list(fmt.records)
        rec[1] = line
        out.append((kind, fmt.render(rec).encode(), Expect(line=fmt.line_of(1))))
    return out
