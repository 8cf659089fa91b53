"""Every kind of malformed file against every file input of every command.

The table (:data:`INPUTS` x the kinds of :mod:`tests.support.malformed` that make sense for the
input's format) asserts, through the real command line (click's CliRunner) on real files:

- a byte-order mark or CRLF line ends: exit 0 and the clean file's result (the same output file
  bytes, the same printed summary, the same store rows);
- identical duplicate records: exit 0, and the summary counts them ("duplicate");
- anything else (empty, header-only, truncated gzip, wrong delimiter, invalid UTF-8, binary,
  conflicting duplicates with both line numbers, NaN/infinity, a huge line and its limit, missing
  columns): exit 1 with one message naming the file (``file:line`` where there is a line);
- never a traceback (an exception other than SystemExit, or "Traceback" printed), and after a
  refusal no output file written and no store row added or changed (files and row counts compared
  before and after).

A command's store is a copy of one SQLite store built once for the module (project ``p`` from the
clean files), so each case starts from the same rows.
"""

from __future__ import annotations

import re
import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from curation.cli import main
from tests.support import malformed as mf

# The clean files of the module's world: file name -> format.
FILES = {
    "run_a.trec": mf.RUN_A, "run_b.trec": mf.RUN_B, "run_c.trec": mf.RUN_C, "run_d.trec": mf.RUN_D,
    "qrels.txt": mf.QRELS, "queries.jsonl": mf.QUERIES_JSONL, "pool.jsonl": mf.POOL,
    "pool_ext.jsonl": mf.POOL_EXTENDED, "corpus.jsonl": mf.CORPUS_JSONL, "corpus.tsv": mf.CORPUS_TSV,
    "log.csv": mf.LOG_CSV, "handwritten.txt": mf.QUERY_LIST, "exclude.txt": mf.QUERY_LIST,
    "seeds.csv": mf.SEEDS_CSV, "seeds.jsonl": mf.SEEDS_JSONL, "split.jsonl": mf.QUERIES_SPLIT,
    "GUIDELINES.md": mf.GUIDELINES, "grades.json": mf.GRADES_JSON, "pool.meta.json": mf.POOL_META,
}
# The exported version's own qrels and queries (`--qrels FOLDER` reads them), laid over v1/ as these.
EXPORTED = {"v1/qrels.txt": mf.QRELS, "v1/queries.jsonl": mf.QUERIES_JSONL}
STATS = "--qrels {d}/qrels.txt"
DB = "--db {d}/golden.db"


@dataclass(frozen=True)
class Input:
    """One file input of one command: the command line (``{d}``: the case's folder), the file the
    case spoils (a name in :data:`FILES`), and the file the command writes (None: it prints only)."""

    id: str
    file: str
    argv: str
    out: str | None = None
    store: bool = False

    @property
    def fmt(self) -> mf.Fmt:
        return MANIFEST if self.file == MANIFEST_FILE else {**FILES, **EXPORTED}[self.file]


SAMPLE = ("sample queries {d}/log.csv --query-col query --count-col count --size 3 --floor 0 --seed 1 "
          "--handwritten {d}/handwritten.txt --exclude {d}/exclude.txt --out {d}/out.jsonl")
POOL = "pool {d}/run_a.trec {d}/run_b.trec --queries {d}/queries.jsonl --depth 5 --out {d}/out.jsonl"
EXTEND = "pool {d}/run_c.trec --extend {d}/pool.jsonl --depth 5 --out {d}/out.jsonl"
CREATE = ("project create new --queries {d}/queries.jsonl --pool {d}/pool.jsonl --corpus {d}/corpus.jsonl "
          "--guidelines {d}/GUIDELINES.md --grades {d}/grades.json " + DB)
PROJECT_EXTEND = "project extend p --pool {d}/pool_ext.jsonl --corpus {d}/corpus.jsonl " + DB
LEAK = "leakcheck --queries {d}/queries.jsonl --corpus {d}/corpus.jsonl --workers 1 --out {d}/out.jsonl"
CORPUS_SAMPLE = "sample corpus {d}/corpus.tsv --size 4 --keep {d}/pool.jsonl --seed 1 --out {d}/out.jsonl"
COMPARE = ("stats compare {d}/run_a.trec {d}/run_b.trec " + STATS + " --queries {d}/queries.jsonl --resamples 200 "
           "--html {d}/out.html")
ATTRIBUTE = "stats attribute {d}/run_a.trec {d}/run_b.trec {d}/run_c.trec {d}/run_d.trec " + STATS + " --resamples 200"
SIMULATE = "decisive simulate {d}/run_a.trec {d}/run_b.trec --qrels {d}/qrels.txt --depth 5 --step 0.5"
MANIFEST_FILE = "v1/manifest.json"

INPUTS = (
    Input("sample-log", "log.csv", SAMPLE, out="out.jsonl"),
    Input("sample-handwritten", "handwritten.txt", SAMPLE, out="out.jsonl"),
    Input("sample-exclude", "exclude.txt", SAMPLE, out="out.jsonl"),
    Input("pool-run", "run_a.trec", POOL, out="out.jsonl"),
    Input("pool-queries", "queries.jsonl", POOL, out="out.jsonl"),
    Input("pool-extend", "pool.jsonl", EXTEND, out="out.jsonl"),
    Input("pool-extend-meta", "pool.meta.json", EXTEND, out="out.jsonl"),
    Input("project-create-queries", "queries.jsonl", CREATE, store=True),
    Input("project-create-pool", "pool.jsonl", CREATE, store=True),
    Input("project-create-corpus", "corpus.jsonl", CREATE, store=True),
    Input("project-create-guidelines", "GUIDELINES.md", CREATE, store=True),
    Input("project-create-grades", "grades.json", CREATE, store=True),
    Input("project-extend-pool", "pool_ext.jsonl", PROJECT_EXTEND, store=True),
    Input("project-extend-corpus", "corpus.jsonl", PROJECT_EXTEND, store=True),
    Input("guidelines-set", "GUIDELINES.md", "project guidelines set {d}/GUIDELINES.md --project p " + DB, store=True),
    Input("import-judgments", "qrels.txt",
          "judging import {d}/qrels.txt --judge nist --create-judge --project p " + DB, store=True),
    Input("seed-judgments", "seeds.csv", "judging seed {d}/seeds.csv --source ticket --project p " + DB,
          store=True),
    Input("seed-judgments-jsonl", "seeds.jsonl", "judging seed {d}/seeds.jsonl --source click --project p " + DB,
          store=True),
    Input("leakcheck-queries", "queries.jsonl", LEAK, out="out.jsonl"),
    Input("leakcheck-corpus", "corpus.jsonl", LEAK, out="out.jsonl"),
    Input("corpus-sample-corpus", "corpus.tsv", CORPUS_SAMPLE, out="out.jsonl"),
    Input("corpus-sample-keep", "pool.jsonl", CORPUS_SAMPLE, out="out.jsonl"),
    Input("coverage-run", "run_a.trec", "stats coverage {d}/run_a.trec " + STATS),
    Input("coverage-qrels", "qrels.txt", "stats coverage {d}/run_a.trec " + STATS),
    Input("metrics-run", "run_a.trec", "stats metrics {d}/run_a.trec " + STATS),
    Input("metrics-qrels", "qrels.txt", "stats metrics {d}/run_a.trec " + STATS),
    Input("compare-run-a", "run_a.trec", COMPARE, out="out.html"),
    Input("compare-run-b", "run_b.trec", COMPARE, out="out.html"),
    Input("compare-qrels", "qrels.txt", COMPARE, out="out.html"),
    Input("compare-queries", "queries.jsonl", COMPARE, out="out.html"),
    Input("metrics-export-qrels", "v1/qrels.txt", "stats metrics {d}/run_a.trec --qrels {d}/v1"),
    Input("compare-export-queries", "v1/queries.jsonl", "stats compare {d}/run_a.trec {d}/run_b.trec --qrels {d}/v1 "
          "--resamples 200"),
    Input("power-run", "run_a.trec", "stats power {d}/run_a.trec {d}/run_b.trec " + STATS),
    Input("power-qrels", "qrels.txt", "stats power {d}/run_a.trec {d}/run_b.trec " + STATS),
    Input("noise-run", "run_a.trec", "stats noise {d}/run_a.trec {d}/run_c.trec " + STATS + " --resamples 200"),
    Input("noise-qrels", "qrels.txt", "stats noise {d}/run_a.trec {d}/run_c.trec " + STATS + " --resamples 200"),
    Input("sweep-run", "run_a.trec",
          "stats sweep {d}/run_a.trec {d}/run_b.trec " + STATS + " --queries {d}/split.jsonl --simulations 100"),
    Input("sweep-qrels", "qrels.txt",
          "stats sweep {d}/run_a.trec {d}/run_b.trec " + STATS + " --queries {d}/split.jsonl --simulations 100"),
    Input("sweep-queries", "split.jsonl",
          "stats sweep {d}/run_a.trec {d}/run_b.trec " + STATS + " --queries {d}/split.jsonl --simulations 100"),
    Input("simulate-judging-run", "run_a.trec", SIMULATE),
    Input("simulate-judging-qrels", "qrels.txt", SIMULATE),
    Input("attribute-base", "run_a.trec", ATTRIBUTE),
    Input("attribute-a-only", "run_b.trec", ATTRIBUTE),
    Input("attribute-b-only", "run_c.trec", ATTRIBUTE),
    Input("attribute-both", "run_d.trec", ATTRIBUTE),
    Input("attribute-qrels", "qrels.txt", ATTRIBUTE),
    Input("verify-manifest", MANIFEST_FILE, "export verify {d}/v1"),
)

# verify reads the manifest of an exported version (made once, see `world`); a manifest is a sealed JSON
# document, so every spoiled manifest but the unreadable ones is sealed again, as an exporter would.
MANIFEST = mf.Fmt(name="manifest.json", records=(), slot="", gzip_ok=False, document=True)
MANIFEST_KINDS = ("clean", "empty", "truncated_gzip", "bom", "crlf", "invalid_utf8", "binary", "nan_inf",
                  "missing_columns")
SEAL = re.compile(rb'"manifest_sha256": "([0-9a-f]{64})"')


def reseal(raw: bytes) -> bytes:
    """``raw`` with its manifest_sha256 set to the sha256 of the bytes with that value as 64 zeros."""
    import hashlib

    m = list(SEAL.finditer(raw))[-1]
    draft = raw[: m.start(1)] + b"0" * 64 + raw[m.end(1):]
    return raw[: m.start(1)] + hashlib.sha256(draft).hexdigest().encode() + raw[m.end(1):]


def corrupt_manifest(raw: bytes, kind: str) -> tuple[bytes, mf.Expect]:
    """The exported manifest ``raw`` (indented JSON, one key a line) spoiled as ``kind``."""
    import json

    if kind in ("empty", "truncated_gzip", "binary"):
        fmt = mf.Fmt(name="manifest.json", records=tuple(raw.decode().splitlines()), slot="", gzip_ok=False,
                     document=True)
        return mf.corrupt(fmt, kind)
    if kind == "clean":
        return raw, mf.Expect(same=True)
    if kind == "bom":
        return reseal(b"\xef\xbb\xbf" + raw), mf.Expect(same=True)
    if kind == "crlf":
        return reseal(raw.replace(b"\n", b"\r\n")), mf.Expect(same=True)
    if kind == "invalid_utf8":
        lines = raw.split(b"\n")
        i = next(n for n, line in enumerate(lines) if line.lstrip().startswith(b'"version": "'))
        at = lines[i].index(b'"version": "') + len(b'"version": "') + 1
        lines[i] = lines[i][:at] + mf.BAD_BYTE + lines[i][at:]
        expect = mf.Expect(line=i + 1, says=(r"not valid UTF-8", r"0xff", rf"column {at + 1}\b"))
        return reseal(b"\n".join(lines)), expect
    manifest = json.loads(raw)
    if kind == "nan_inf":
        manifest["counts"]["pairs"] = float("inf")  # written as Infinity
    elif kind == "missing_columns":  # "files" not an object (verify crashed on it)
        manifest["files"] = sorted(manifest["files"])
    body = json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"
    return reseal(body.encode()), mf.Expect()


def cases():
    for inp in INPUTS:
        kinds = MANIFEST_KINDS if inp.file == MANIFEST_FILE else inp.fmt.kinds()
        for kind in kinds:
            marks = [pytest.mark.slow] if kind == "huge_line" else []
            yield pytest.param(inp, kind, id=f"{inp.id}-{kind}", marks=marks)


# ---------------------------------------------------------------------------------------------
# the world: clean files, a store with project p, an exported version


def invoke(argv: str, folder: Path):
    return CliRunner().invoke(main, argv.format(d=folder).split(), catch_exceptions=True)


def write_clean(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, fmt in FILES.items():
        (folder / name).write_bytes(mf.corrupt(fmt, "clean")[0])


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A folder with the clean files, golden.db (project p: the queries, pool, corpus and guidelines)
    and v1/ (a version of p exported after importing the qrels as judgments)."""
    root = tmp_path_factory.mktemp("world")
    write_clean(root)
    for argv in ("admin db upgrade " + DB,
                 "project create p --queries {d}/queries.jsonl --pool {d}/pool.jsonl --corpus {d}/corpus.jsonl "
                 "--guidelines {d}/GUIDELINES.md " + DB):
        result = invoke(argv, root)
        assert result.exit_code == 0, result.output
    exporting = tmp_path_factory.mktemp("exporting")
    write_clean(exporting)
    shutil.copy(root / "golden.db", exporting / "golden.db")
    for argv in ("judging import {d}/qrels.txt --judge nist --create-judge --project p " + DB,
                 "export create --version v1 --policy majority --allow-incomplete --by tester --project p "
                 "--out {d}/exports " + DB):
        result = invoke(argv, exporting)
        assert result.exit_code == 0, result.output
    shutil.copytree(exporting / "exports" / "v1", root / "v1")
    return root


# ---------------------------------------------------------------------------------------------
# one case


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file of ``folder`` but the store, by relative path, with its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.name.startswith("golden.db")}


def row_counts(db: Path) -> dict[str, int]:
    """Rows of each table of the SQLite store (read with the standard library, not the code under test)."""
    if not db.exists():
        return {}
    with sqlite3.connect(db) as con:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {t: con.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in tables}


# Durations and rates in a summary ("in 0.2 s (2,880 chunks/s)"): not part of a result.
TIMING = re.compile(r"\b[\d.,]+ ?(?:s|ms|[a-z]+/s)\b")


# What a store row may hold that is not part of a result: when it was written, a file's sha256 (or another
# hex digest or token), a salted password hash.
VOLATILE = re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d[.\d]*|\b[0-9a-f]{16,}\b"
                      r"|^(?:pbkdf2|scrypt)[:$].*$")

def store_rows(db: Path) -> dict[str, list]:
    """Every row of every table (times and sha256 digests masked), sorted, to compare two stores' contents."""
    if not db.exists():
        return {}
    with sqlite3.connect(db) as con:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {t: sorted(tuple(VOLATILE.sub("<V>", str(v)) for v in row)
                          for row in con.execute(f'SELECT * FROM "{t}"')) for t in tables}


@dataclass
class Outcome:
    code: int
    output: str  # stdout and stderr, the case's folder written as <DIR>
    written: bytes | None  # the command's output file (None: not written)
    rows: dict[str, int]
    contents: dict[str, list]


def run_case(world: Path, folder: Path, inp: Input, data: bytes | None) -> tuple[Outcome, object]:
    """Lay the clean world in ``folder``, put ``data`` in the input's file, run the command."""
    write_clean(folder)
    shutil.copytree(world / "v1", folder / "v1")
    if inp.store:
        shutil.copy(world / "golden.db", folder / "golden.db")
    if data is not None:
        (folder / inp.file).write_bytes(data)
    before = snapshot(folder)
    result = invoke(inp.argv, folder)
    output = TIMING.sub("<TIME>", result.output.replace(str(folder), "<DIR>"))
    out = folder / inp.out if inp.out else None
    written = out.read_bytes() if out is not None and out.exists() else None
    after = snapshot(folder)  # after a refusal, equal to before: no output file (nor its .meta.json) either
    db = folder / "golden.db"
    return Outcome(result.exit_code, output, written, row_counts(db), store_rows(db)), (result, before, after)


_CLEAN: dict[str, Outcome] = {}


def clean_outcome(world: Path, inp: Input, tmp_path_factory) -> Outcome:
    """The command's answer to the clean files (once per input)."""
    if inp.id not in _CLEAN:
        folder = tmp_path_factory.mktemp(f"clean-{inp.id}")
        _CLEAN[inp.id], _ = run_case(world, folder, inp, spoil(world, inp, "clean")[0])
    return _CLEAN[inp.id]


def spoil(world: Path, inp: Input, kind: str) -> tuple[bytes, mf.Expect]:
    if inp.file == MANIFEST_FILE:
        return corrupt_manifest((world / MANIFEST_FILE).read_bytes(), kind)
    return mf.corrupt(inp.fmt, kind)


@pytest.mark.parametrize(("inp", "kind"), list(cases()))
def test_malformed_input(world, tmp_path, tmp_path_factory, inp, kind):
    data, expect = spoil(world, inp, kind)
    got, (result, before, after) = run_case(world, tmp_path, inp, data)
    path = str(tmp_path / inp.file)

    # never a traceback, whatever the input
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"{type(result.exception).__name__}: {result.exception}\n{got.output[-2000:]}")
    assert "Traceback" not in result.output

    if expect.same or expect.ok:
        clean = clean_outcome(world, inp, tmp_path_factory)
        assert clean.code == 0, f"the clean files fail: {clean.output}"
        assert got.code == 0, got.output[-2000:]
        if expect.same:  # a byte-order mark or CRLF line ends: the clean file's result, byte for byte
            assert got.written == clean.written
            assert got.output == clean.output
            assert got.rows == clean.rows
            assert got.contents == clean.contents
        for word in expect.says:  # identical duplicates: counted in the summary
            assert re.search(word, got.output, re.IGNORECASE), got.output[-2000:]
        return

    assert got.code == expect.code, got.output[-2000:]
    message = result.output
    lines = [line for line in message.splitlines() if path in line]
    assert lines, f"no message names {path}:\n{message[-2000:]}"
    if expect.line is not None:
        assert f"{path}:{expect.line}" in message, message[-2000:]
    if expect.some_line:
        assert re.search(re.escape(path) + r":\d+", message), message[-2000:]
    named = "\n".join(lines)
    for word in expect.says:
        assert re.search(word, named, re.IGNORECASE), named[-2000:]
    for n in expect.lines:  # conflicting duplicates: both lines
        assert re.search(rf"(?<![\d.]){n}(?![\d.])", named.replace(path, "FILE")), named[-2000:]
    # nothing partial: no output file, the other files as they were, the store's rows as they were
    assert got.written is None
    assert after == before
    if inp.store:
        assert got.rows == row_counts(world / "golden.db")


# ---------------------------------------------------------------------------------------------
# the table itself: complete, and its line numbers right


def _commands(group, prefix=()):
    import click

    for name, cmd in group.commands.items():
        if isinstance(cmd, click.Group):
            yield from _commands(cmd, prefix + (name,))
        else:
            yield " ".join(prefix + (name,)), cmd


def test_every_command_that_reads_files_is_in_the_table():
    """A command with an existing-path parameter (or `golden sample queries`, whose LOG may be a glob) has a row."""
    import click

    readers = {name for name, cmd in _commands(main)
               if any(isinstance(p.type, click.Path) and p.type.exists for p in cmd.params)}
    covered = {name for name, _ in _commands(main) for inp in INPUTS if inp.argv.startswith(name + " ")}
    assert readers | {"sample queries"} <= covered, sorted(readers - covered)


@pytest.mark.parametrize("fmt", sorted({*FILES.values()}, key=lambda f: f.name), ids=lambda f: f.name)
def test_expected_lines_are_where_the_spoiled_lines_are(fmt):
    """The line numbers the table expects, checked against the bytes with Python's own decoder."""
    for kind in fmt.kinds():
        data, expect = mf.corrupt(fmt, kind)
        if kind == "invalid_utf8":
            with pytest.raises(UnicodeDecodeError) as exc:
                data.decode("utf-8")
            line = data[: exc.value.start].count(b"\n") + 1
            column = exc.value.start - (data.rfind(b"\n", 0, exc.value.start) + 1) + 1
            assert expect.line == line
            assert re.search(expect.says[-1], f"column {column}")
        elif kind in ("nan_inf", "missing_columns", "conflicting_duplicates"):
            spoiled = {"nan_inf": fmt.nan, "missing_columns": fmt.missing, "conflicting_duplicates": fmt.conflict}[kind]
            lines = data.decode().splitlines()
            assert lines[expect.line - 1].rstrip(",") == spoiled
            if kind == "conflicting_duplicates":
                first = lines[expect.lines[0] - 1].rstrip(",")
                assert first == fmt.records[0] and first != spoiled
        elif kind in ("bom", "crlf"):
            clean = mf.corrupt(fmt, "clean")[0]
            assert data.decode("utf-8-sig").replace("\r\n", "\n") == clean.decode()


# ---------------------------------------------------------------------------------------------
# values a file must not hold: every input of the table, each value its format can hold


STRICT_SKIP = {MANIFEST_FILE, "GUIDELINES.md", "handwritten.txt", "exclude.txt", "pool.meta.json"}
# Values some readers refused already before this table (a JSON id that is null, an object, a boolean or
# blank; a line starting with a byte-order mark, which is no JSON): left out for those inputs, so each
# case of the table is one the readers took silently or crashed on.
_ID_KINDS = {"null", "object", "boolean", "blank"}
ALREADY_REFUSED = {
    "queries.jsonl": {f"qid_{k}" for k in _ID_KINDS} | {"bom_inside"},
    "split.jsonl": {f"qid_{k}" for k in _ID_KINDS} | {"bom_inside"},
    "v1/queries.jsonl": {f"qid_{k}" for k in _ID_KINDS} | {"bom_inside"},
    "pool.jsonl": {f"docid_{k}" for k in _ID_KINDS} | {"bom_inside"},
    "pool_ext.jsonl": {f"docid_{k}" for k in _ID_KINDS} | {"bom_inside"},
    "corpus.jsonl": {"id_null", "bom_inside"},
    "seeds.jsonl": {"qid_null", "bom_inside"},
    "seeds.csv": {"grade_underscore"},  # read as 10: not a grade of the scale
    "log.csv": {"header_again"},  # the count column's "count" is no number (tests/formats/test_logs.py has it)
}
# corpus-sample reads only the pool's docids, which it took as they came (null became "None")
ALREADY_REFUSED_BY = {"corpus-sample-keep": {"docid_nan", "bom_inside"}}


def strict_cases():
    for inp in INPUTS:
        if inp.file in STRICT_SKIP:
            continue
        skip = ALREADY_REFUSED_BY.get(inp.id, ALREADY_REFUSED.get(inp.file, set()))
        for kind, data, expect in mf.strict_cases(inp.fmt):
            if kind not in skip:
                yield pytest.param(inp, data, expect, id=f"{inp.id}-{kind}")


@pytest.mark.parametrize(("inp", "data", "expect"), list(strict_cases()))
def test_value_a_file_must_not_hold_is_refused(world, tmp_path, inp, data, expect):
    """Grades and ranks of ASCII digits only, scores in ASCII notation, TREC fields split on space and tab
    only, no byte-order mark past the first byte, JSON ids that are strings or integers, no duplicate
    key, no integer of hundreds of digits, no JSON nested 100,000 deep, no lone surrogate, a TSV row with
    its header's fields, no second header in a log: each refused with file:line, nothing written, no row
    added (today's code took each silently, or crashed)."""
    got, (result, before, after) = run_case(world, tmp_path, inp, data)
    path = str(tmp_path / inp.file)
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"{type(result.exception).__name__}: {result.exception}\n{got.output[-2000:]}")
    assert "Traceback" not in result.output
    assert got.code == 1, got.output[-2000:]
    assert f"{path}:{expect.line}:" in result.output, result.output[-2000:]
    assert got.written is None
    assert after == before
    if inp.store:
        assert got.rows == row_counts(world / "golden.db")
        assert got.contents == store_rows(world / "golden.db")
