"""Inputs read as one stream: pipes, FIFOs, ``-`` and ``/dev/stdin`` give the records the
file gives, gzip sniffed from the bytes already read; a FIFO with no writer says golden waits; a line
over the limit, ``/dev/zero`` and a gzip stream that inflates to one endless line are refused with the
file and line while reading, memory bounded; Parquet and TSV columns of the wrong type are named."""

from __future__ import annotations

import gzip
import io
import os
import sys
import threading
import time

import pytest

from curation.formats import fileio
from curation.formats.corpus import iter_corpus_file
from curation.formats.fileio import InputError, open_input, read_whole
from curation.formats.qrels import read_qrels
from curation.formats.queries import read_queries
from curation.formats.runs import read_run

# Enough lines that one read of a pipe (64 KiB) or of golden's buffers cannot hold them all.
QRELS = "".join(f"q{q} 0 d{d} {(q + d) % 3}\n" for q in range(60) for d in range(40))
RUN = "".join(f"q{q} Q0 d{d} {d + 1} {100 - d}.5 sys\n" for q in range(60) for d in range(40))


def _pipe(data: bytes, delay: float = 0.0) -> str:
    """A /dev/fd path reading a pipe that a thread fills with ``data`` (after ``delay`` seconds)."""
    read_fd, write_fd = os.pipe()

    def write():
        time.sleep(delay)
        with os.fdopen(write_fd, "wb") as fh:
            fh.write(data)

    threading.Thread(target=write, daemon=True).start()
    return f"/dev/fd/{read_fd}"


def _close(path: str) -> None:
    try:
        os.close(int(path.rsplit("/", 1)[1]))
    except OSError:
        pass


@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
def test_qrels_and_run_through_a_pipe_are_the_files_records(tmp_path, compress):
    pack = (lambda b: gzip.compress(b, mtime=0)) if compress else (lambda b: b)
    (tmp_path / "qrels.txt").write_bytes(pack(QRELS.encode()))
    (tmp_path / "run.trec").write_bytes(pack(RUN.encode()))
    expected_qrels = read_qrels(tmp_path / "qrels.txt")
    expected_run = read_run(tmp_path / "run.trec")
    assert sum(map(len, expected_qrels.values())) == 2400

    path = _pipe(pack(QRELS.encode()))
    try:
        assert read_qrels(path) == expected_qrels
    finally:
        _close(path)
    path = _pipe(pack(RUN.encode()))
    try:
        run = read_run(path)
    finally:
        _close(path)
    assert run.rankings == expected_run.rankings and run.scores == expected_run.scores
    assert run.sha256 == expected_run.sha256  # the bytes as stored, hashed while read


def test_dash_reads_standard_input_once(tmp_path, monkeypatch):
    (tmp_path / "qrels.txt").write_text(QRELS)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(gzip.compress(QRELS.encode()))))
    assert read_qrels("-") == read_qrels(tmp_path / "qrels.txt")


def test_a_fifo_without_a_writer_says_golden_waits(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(fileio, "FIFO_PATIENCE", 0.2)
    fifo = tmp_path / "qrels.fifo"
    os.mkfifo(fifo)

    def write():
        time.sleep(1.0)
        with open(fifo, "wb") as fh:
            fh.write(QRELS.encode())

    writer = threading.Thread(target=write)
    writer.start()
    try:
        got = read_qrels(fifo)
    finally:
        writer.join()
    assert "waiting for data on " + str(fifo) in capsys.readouterr().err
    (tmp_path / "qrels.txt").write_text(QRELS)
    assert got == read_qrels(tmp_path / "qrels.txt")


def test_a_regular_file_is_opened_once(tmp_path, monkeypatch):
    path = tmp_path / "qrels.txt.gz"
    path.write_bytes(gzip.compress(QRELS.encode()))
    opened = []
    real_open = open

    def counting_open(file, *args, **kwargs):
        if str(file) == str(path):
            opened.append(file)
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr("builtins.open", counting_open)
    assert len(read_qrels(path)) == 60
    assert len(opened) == 1


# ---------------------------------------------------------------------------------------------
# bounded reading


def _readers():
    return {
        "qrels": read_qrels,
        "run": read_run,
        "queries": lambda p: list(read_queries(p)),
        "corpus": lambda p: list(iter_corpus_file(p)),
    }


@pytest.mark.parametrize("reader", ["qrels", "run", "queries", "corpus"])
def test_dev_zero_is_refused_as_binary_at_line_1(reader, tmp_path):
    name = {"corpus": "corpus.jsonl"}.get(reader)
    path = "/dev/zero"
    if name:  # the corpus reader tells the format by the name: a link named as a corpus
        (tmp_path / name).symlink_to("/dev/zero")
        path = str(tmp_path / name)
    with pytest.raises(InputError, match=rf"^{path}:1: binary data"):
        _readers()[reader](path)


@pytest.mark.parametrize("reader", ["qrels", "run", "queries", "corpus"])
def test_a_gzip_stream_of_one_endless_line_is_refused_while_read(reader, tmp_path, monkeypatch):
    monkeypatch.setenv("GOLDEN_MAX_LINE_BYTES", "100000")
    monkeypatch.setenv("GOLDEN_MAX_DOC_BYTES", "100000")
    name = {"corpus": "corpus.jsonl.gz", "queries": "queries.jsonl.gz"}.get(reader, f"{reader}.gz")
    path = tmp_path / name
    first = {"queries": b'{"qid": "q1", "text": "one"}\n', "corpus": b'{"id": "d1", "text": "one"}\n'}.get(reader, b"")
    with gzip.open(path, "wb", compresslevel=1) as fh:
        fh.write(first)
        for _ in range(64):  # 64 MB in one line, about 64 KB on disk
            fh.write(b"x" * (1 << 20))
    line = 2 if first else 1
    with pytest.raises(InputError, match=rf"^{path}:{line}: the line is longer than the limit"):
        _readers()[reader](path)


def test_read_whole_holds_about_the_limit_before_refusing(monkeypatch):
    """A stream with no line end is refused after about the limit, not read to its end (here endless)."""
    monkeypatch.setenv("GOLDEN_MAX_LINE_BYTES", "1000")
    with pytest.raises(InputError, match=r"^/dev/zero:1: binary data"):
        read_whole("/dev/zero")
    source, gzipped = open_input("/dev/zero")
    with source:
        assert not gzipped


@pytest.fixture(scope="module")
def four_gb_line(tmp_path_factory):
    """A gzip file of about 4 MB holding one line of 4 GiB ("x" repeated, no line end)."""
    import zlib

    path = tmp_path_factory.mktemp("bomb") / "line.gz"
    with open(path, "wb") as out:
        deflate = zlib.compressobj(9, zlib.DEFLATED, 31)
        block = b"x" * (1 << 24)
        for _ in range(256):
            out.write(deflate.compress(block))
        out.write(deflate.flush())
    return path


def _golden_peak(args: list[str], env: dict | None = None):
    """``golden ARGS`` in a process of its own under ``/usr/bin/time -f %M``: (result, peak resident KB)."""
    import shutil
    import subprocess

    if shutil.which("/usr/bin/time") is None:
        pytest.skip("/usr/bin/time is not installed (apt-get install time)")
    golden = [sys.executable, "-c", "from curation.cli import main; main()"]
    env = {**os.environ, "PYTHONPATH": os.getcwd(), **(env or {})}
    done = subprocess.run(["/usr/bin/time", "-f", "PEAK %M", *golden, *args], env=env, capture_output=True,
                          text=True, timeout=600)
    return done, int(done.stderr.rsplit("PEAK ", 1)[1].split()[0])


_BOMB_NAMES = {"metrics-run": "run.gz", "metrics-qrels": "qrels.gz", "pool-queries": "queries.jsonl.gz",
               "project-corpus": "corpus.jsonl.gz", "sample-log": "log.csv.gz", "leakcheck-corpus": "corpus.jsonl.gz",
               "sample-corpus": "corpus.jsonl.gz"}


def _small_inputs(tmp_path) -> dict[str, list[str]]:
    """Small valid inputs beside a spoiled one, and each command's arguments (``{x}``: the spoiled input)."""
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\n")
    (tmp_path / "run.trec").write_text("q1 Q0 d1 1 1.0 sys\n")
    (tmp_path / "queries.jsonl").write_text('{"qid": "q1", "text": "one two three four"}\n')
    (tmp_path / "pool.jsonl").write_text('{"qid": "q1", "docid": "d1", "order": 1}\n')
    (tmp_path / "G.md").write_text("# Guidelines\n")
    return {
        "metrics-run": ["stats", "metrics", "{x}", "--qrels", str(tmp_path / "qrels.txt")],
        "metrics-qrels": ["stats", "metrics", str(tmp_path / "run.trec"), "--qrels", "{x}"],
        "pool-queries": ["pool", str(tmp_path / "run.trec"), "--queries", "{x}", "--depth", "5", "--out",
                         str(tmp_path / "out.jsonl")],
        "project-corpus": ["project", "create", "p", "--queries", str(tmp_path / "queries.jsonl"), "--pool",
                           str(tmp_path / "pool.jsonl"), "--corpus", "{x}", "--guidelines", str(tmp_path / "G.md"),
                           "--db", f"sqlite:///{tmp_path / 'golden.db'}"],
        "sample-log": ["sample", "queries", "{x}", "--query-col", "query", "--size", "1", "--out",
                       str(tmp_path / "out.jsonl")],
        "leakcheck-corpus": ["leakcheck", "--queries", str(tmp_path / "queries.jsonl"), "--corpus", "{x}", "--out",
                             str(tmp_path / "leaks.jsonl")],
        "sample-corpus": ["sample", "corpus", "{x}", "--size", "1", "--out", str(tmp_path / "out.jsonl")],
    }


@pytest.mark.slow
@pytest.mark.parametrize("command", list(_BOMB_NAMES))
def test_a_4_gb_line_and_dev_zero_peak_under_300_mb(command, tmp_path, four_gb_line):
    """A 4 GB decompressed line (a 4 MB .gz) and /dev/zero through the real command line: refused with
    the file and line, the process's peak resident memory (/usr/bin/time -f %M) under 300 MB."""
    import subprocess

    bomb = tmp_path / _BOMB_NAMES[command]
    bomb.symlink_to(four_gb_line)  # the name tells the reader the format
    argv = _small_inputs(tmp_path)[command]
    zero = tmp_path / ("zero" + "".join(bomb.suffixes[:-1]))  # /dev/zero under a name that tells the format
    zero.symlink_to("/dev/zero")
    golden = [sys.executable, "-c", "from curation.cli import main; main()"]
    for spoiled in (bomb, zero):
        if command == "project-corpus":
            subprocess.run([*golden, "admin", "db", "upgrade", "--db", f"sqlite:///{tmp_path / 'golden.db'}"],
                           env={**os.environ, "PYTHONPATH": os.getcwd()}, check=True, capture_output=True)
        done, peak_kb = _golden_peak([a.replace("{x}", str(spoiled)) for a in argv])
        assert done.returncode == 1, done.stderr[-2000:]
        print(f"{command} {spoiled.name}: peak {peak_kb / 1000:.0f} MB, load {os.getloadavg()[0]:.2f}")
        assert f"{spoiled}:1:" in done.stderr + done.stdout, done.stderr[-2000:]
        assert peak_kb < 300_000, (spoiled, peak_kb)


# ---------------------------------------------------------------------------------------------
# the decompressed size of an input held in memory (GOLDEN_MAX_INPUT_BYTES)

_VALID_BLOCKS = {  # whole valid lines of each format; repeated, they are identical repeats (read once, counted)
    "run": "".join(f"q{q} Q0 d{d} {d + 1} {50 - d}.25 sys\n" for q in range(3) for d in range(40)).encode(),
    "qrels": "".join(f"q{q} 0 d{d} {d % 3}\n" for q in range(3) for d in range(40)).encode(),
    "queries": "".join(f'{{"qid": "q{q}", "text": "query number {q}"}}\n' for q in range(60)).encode(),
}


def _line_of_byte(block: bytes, at: int) -> int:
    """The line (from 1) holding byte ``at`` (from 0) of ``block`` repeated without end."""
    whole, rest = divmod(at, len(block))
    return whole * block.count(b"\n") + block[:rest].count(b"\n") + 1


def _valid_lines_bomb(path, block: bytes, size: int) -> None:
    """A gzip file of ``block`` repeated to about ``size`` bytes once decompressed: one gzip member of
    ``block`` repeated to 16 MiB, written again and again (a gzip file may hold many members, and every
    reader inflates them all), so 4 GiB of valid lines take some 30 MB on disk and a second to write."""
    member = gzip.compress(block * ((16 << 20) // len(block)), compresslevel=9, mtime=0)
    inflated = (16 << 20) // len(block) * len(block)
    with open(path, "wb") as out:
        for _ in range(-(-size // inflated)):
            out.write(member)


@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
def test_a_run_over_the_input_limit_is_refused_at_the_line_passing_it(tmp_path, monkeypatch, compress):
    block = _VALID_BLOCKS["run"]
    data = block * 50
    path = tmp_path / "run.trec"
    path.write_bytes(gzip.compress(data) if compress else data)
    monkeypatch.setenv("GOLDEN_MAX_INPUT_BYTES", str(len(data)))
    run = read_run(path)  # at the limit: read, its repeats counted
    assert run.repeats == 49 * 120 and len(run.rankings["q0"]) == 40
    for limit in (len(data) - 1, 100_000, 12_345):
        monkeypatch.setenv("GOLDEN_MAX_INPUT_BYTES", str(limit))
        line = _line_of_byte(block, limit)
        with pytest.raises(InputError, match=rf"^{path}:{line}: the input passes the limit of {limit} bytes"):
            read_run(path)


@pytest.mark.parametrize("reader", ["qrels", "queries"])
def test_a_line_reader_over_the_input_limit_is_refused_at_the_line_passing_it(reader, tmp_path, monkeypatch):
    block = _VALID_BLOCKS[reader]
    path = tmp_path / ("queries.jsonl.gz" if reader == "queries" else "qrels.gz")
    path.write_bytes(gzip.compress(block * 30))
    monkeypatch.setenv("GOLDEN_MAX_INPUT_BYTES", str(len(block) * 30))
    assert len(_readers()[reader](path)) in (3, 60)
    limit = len(block) * 7 + 11
    monkeypatch.setenv("GOLDEN_MAX_INPUT_BYTES", str(limit))
    line = _line_of_byte(block, limit)
    with pytest.raises(InputError, match=rf"^{path}:{line}: the input passes the limit of {limit} bytes"):
        _readers()[reader](path)


def test_a_corpus_is_streamed_and_not_bounded_by_the_input_limit(tmp_path, monkeypatch):
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(f'{{"id": "d{i}", "text": "document {i}"}}\n' for i in range(2000)))
    monkeypatch.setenv("GOLDEN_MAX_INPUT_BYTES", "1000")
    assert len(list(iter_corpus_file(path))) == 2000


def test_the_input_limit_must_be_a_positive_number(tmp_path, monkeypatch):
    (tmp_path / "qrels.txt").write_text(QRELS)
    monkeypatch.setenv("GOLDEN_MAX_INPUT_BYTES", "0")
    with pytest.raises(ValueError, match="GOLDEN_MAX_INPUT_BYTES"):
        read_qrels(tmp_path / "qrels.txt")


@pytest.mark.slow
@pytest.mark.parametrize("command", ["metrics-run", "metrics-qrels", "pool-queries"])
def test_4_gb_of_valid_lines_is_refused_at_the_input_limit_in_bounded_memory(command, tmp_path):
    """A gzip of 4 GiB of valid lines once decompressed (a run, qrels, queries), through the real command
    line with GOLDEN_MAX_INPUT_BYTES set to 64 MB: refused with the file and the line where the input passes
    the limit, the peak resident memory under 300 MB; the same file cut to the limit is read."""
    reader = {"metrics-run": "run", "metrics-qrels": "qrels", "pool-queries": "queries"}[command]
    block = _VALID_BLOCKS[reader]
    bomb = tmp_path / _BOMB_NAMES[command]
    _valid_lines_bomb(bomb, block, 4 << 30)
    limit = 64_000_000
    argv = [a.replace("{x}", str(bomb)) for a in _small_inputs(tmp_path)[command]]
    done, peak_kb = _golden_peak(argv, {"GOLDEN_MAX_INPUT_BYTES": str(limit)})
    print(f"{command}: {bomb.stat().st_size / 1e6:.0f} MB on disk, peak {peak_kb / 1000:.0f} MB, "
          f"load {os.getloadavg()[0]:.2f}")
    assert done.returncode == 1, done.stderr[-2000:]
    line = _line_of_byte(block, limit)
    assert f"{bomb}:{line}: the input passes the limit of {limit} bytes" in done.stderr, done.stderr[-2000:]
    assert peak_kb < 300_000, peak_kb
    # The lines are valid: two members (32 MiB) under the limit are read (identical repeats, counted).
    small = tmp_path / ("small" + "".join(bomb.suffixes))
    _valid_lines_bomb(small, block, 32 << 20)
    done, _ = _golden_peak([a.replace(str(bomb), str(small)) for a in argv], {"GOLDEN_MAX_INPUT_BYTES": str(limit)})
    assert done.returncode == 0, done.stderr[-2000:]


def test_read_whole_takes_a_size_hint_for_a_hint_only(tmp_path):
    """A gzip file's trailer gives the size of its last member only: with several members, the hint is
    far too small (here 5 bytes for 2 MB), and the file is still read whole, the same bytes; so is a
    plain file, and an empty gzip file."""
    first = RUN.encode() * 30  # about 2 MB
    path = tmp_path / "members.gz"
    path.write_bytes(gzip.compress(first) + gzip.compress(b"tail\n"))
    source, gzipped = open_input(path)
    with source:
        assert gzipped and fileio._content_size_hint(source, gzipped) == 5
    assert read_whole(path)[1] == first + b"tail\n"
    plain = tmp_path / "plain.trec"
    plain.write_bytes(first)
    source, gzipped = open_input(plain)
    with source:
        assert fileio._content_size_hint(source, gzipped) == len(first)
    assert read_whole(plain)[1] == first
    empty = tmp_path / "empty.gz"
    empty.write_bytes(gzip.compress(b""))
    assert read_whole(empty)[1] == b""
