"""Inputs through pipes and standard input, on the real command line: ``golden stats metrics RUN
--qrels <(cat qrels)`` and ``--qrels -`` give the file's numbers (the gzip sniff opened a pipe twice and
lost its first buffer: 758 queries instead of 764, exit 0); ``import-judgments`` through a pipe stores
what the file stores; a corpus whose values a file must not hold, or a Parquet corpus column of the wrong
type, leaves the store and the outputs as they were, on SQLite and PostgreSQL."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from curation.cli import main

ROOT = Path(__file__).resolve().parents[2]
# Enough lines that one read of a pipe (64 KiB) cannot hold them all: a lost buffer loses queries.
QRELS = "".join(f"q{q} 0 d{d} {(q * d) % 3}\n" for q in range(1, 301) for d in range(1, 21))
RUN = "".join(f"q{q} Q0 d{d} {d} {30 - d}.25 sys\n" for q in range(1, 301) for d in range(1, 31))


def _golden(*args: str, stdin=None, pass_fds=()) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from curation.cli import main; main()", *args], stdin=stdin,
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          pass_fds=pass_fds, timeout=300)


def _pipe_of(data: bytes) -> int:
    """The read end of a pipe another process fills with ``data`` (as bash's ``<(cat file)``)."""
    import threading

    read_fd, write_fd = os.pipe()
    writer = subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=write_fd)
    os.close(write_fd)

    def feed():  # in a thread: the pipe holds 64 KiB until golden reads it
        writer.stdin.write(data)
        writer.stdin.close()
        writer.wait()

    threading.Thread(target=feed, daemon=True).start()
    return read_fd


@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
def test_metrics_gives_the_files_numbers_through_a_pipe_and_standard_input(tmp_path, compress):
    data = gzip.compress(QRELS.encode(), mtime=0) if compress else QRELS.encode()
    qrels = tmp_path / "qrels.txt"
    qrels.write_bytes(data)
    run = tmp_path / "run.trec"
    run.write_text(RUN)
    from_file = _golden("stats", "metrics", str(run), "--qrels", str(qrels), "--json")
    assert from_file.returncode == 0, from_file.stderr
    assert '"queries": 300' in from_file.stdout or "300" in from_file.stdout

    fd = _pipe_of(data)
    try:
        through_pipe = _golden("stats", "metrics", str(run), "--qrels", f"/dev/fd/{fd}", "--json", pass_fds=(fd,))
    finally:
        os.close(fd)
    assert through_pipe.returncode == 0, through_pipe.stderr
    assert through_pipe.stdout == from_file.stdout

    with open(qrels, "rb") as fh:
        from_stdin = _golden("stats", "metrics", str(run), "--qrels", "-", "--json", stdin=fh)
    assert from_stdin.returncode == 0, from_stdin.stderr
    assert from_stdin.stdout == from_file.stdout

    fd = _pipe_of(RUN.encode())  # a run through a pipe: the same numbers too
    try:
        run_piped = _golden("stats", "metrics", f"/dev/fd/{fd}", "--qrels", str(qrels), "--json", pass_fds=(fd,))
    finally:
        os.close(fd)
    assert run_piped.returncode == 0, run_piped.stderr
    assert run_piped.stdout == from_file.stdout


def _project(tmp_path: Path, db_url: str) -> dict[str, Path]:
    from tests.support.projects import write_inputs

    paths = write_inputs(tmp_path / "in")
    res = CliRunner().invoke(main, ["project", "create", "p", "--queries", str(paths["queries.jsonl"]), "--pool",
                                    str(paths["pool.jsonl"]), "--corpus", str(paths["corpus.jsonl"]),
                                    "--guidelines", str(paths["GUIDELINES.md"]), "--db", db_url])
    assert res.exit_code == 0, res.output
    return paths


def _rows(engine) -> dict[str, list]:
    from sqlalchemy import inspect, text

    with engine.connect() as con:
        return {t: sorted(map(str, con.execute(text(f'SELECT * FROM "{t}"')).all()))
                for t in inspect(engine).get_table_names() if t != "alembic_version"}


def test_import_judgments_from_standard_input_stores_what_the_file_stores(engine, db_url, tmp_path):
    """The same labels from the file and from standard input, on SQLite and PostgreSQL."""
    from sqlmodel import select

    from curation.store.engine import session
    from curation.store.models import Judgment, User

    paths = _project(tmp_path, db_url)
    lines = "".join(f"{line.split()[0]} 0 {line.split()[1]} 1\n" for line in
                    (f"q{q} q{q}-d{i}" for q, n in ((1, 4), (2, 3), (3, 5), (4, 2)) for i in range(n)))
    qrels = tmp_path / "qrels.txt"
    qrels.write_text(lines)
    assert paths
    runner = CliRunner()
    res = runner.invoke(main, ["judging", "import", str(qrels), "--judge", "nist", "--create-judge", "--project", "p",
                               "--db", db_url])
    assert res.exit_code == 0, res.output
    res = runner.invoke(main, ["judging", "import", "-", "--judge", "piped", "--create-judge", "--project", "p",
                               "--db", db_url], input=gzip.compress(lines.encode()))
    assert res.exit_code == 0, res.output
    with session(engine) as s:
        by_judge = {}
        for j, name in s.exec(select(Judgment, User.name).join(User, User.id == Judgment.judge_id)):
            by_judge.setdefault(name, set()).add((j.pair_id, j.grade))
    assert len(by_judge["nist"]) == 14
    assert by_judge["piped"] == by_judge["nist"]


@pytest.mark.parametrize("spoiled", [
    '{"id": "q1-d0", "text": "a", "text": "b"}',
    '{"id": {"k": "q1-d0"}, "text": "a"}',
    '{"id": "q1-d0", "text": "a\\ud800"}',
    '{"id": "q1-d0", "text": "a", "n": ' + "9" * 5000 + "}",
], ids=["duplicate-key", "object-id", "lone-surrogate", "5000-digits"])
def test_a_corpus_value_a_file_must_not_hold_leaves_the_store_as_it_was(engine, db_url, tmp_path, spoiled):
    """`project extend` with a spoiled corpus line: refused with file:line, no row added or changed."""
    from tests.support.projects import write_inputs

    _project(tmp_path, db_url)
    more = write_inputs(tmp_path / "more", queries={"q1": 6, "q2": 3, "q3": 5, "q4": 2})  # q1 gains two documents
    corpus = more["corpus.jsonl"]
    lines = corpus.read_text().splitlines()
    lines.insert(1, spoiled)
    corpus.write_text("\n".join(lines) + "\n")
    before = _rows(engine)
    res = CliRunner().invoke(main, ["project", "extend", "p", "--pool", str(more["pool.jsonl"]), "--corpus",
                                    str(corpus), "--db", db_url])
    assert res.exit_code == 1, res.output
    assert f"{corpus}:2:" in res.output and "Traceback" not in res.output
    assert _rows(engine) == before


@pytest.mark.parametrize("column", ["text-binary", "id-list", "text-struct"])
def test_a_parquet_corpus_column_of_the_wrong_type_is_refused_by_every_command(engine, db_url, tmp_path, column):
    """`project create`, `leakcheck` and `corpus-sample` name the column and its type (binary texts were
    stored as "b'From the...'", list ids as "['kb-...']", struct texts as "{'t': ...}"); no project, no
    output file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tests.support.projects import write_inputs

    paths = write_inputs(tmp_path / "in")
    rows = [json.loads(line) for line in paths["corpus.jsonl"].read_text().splitlines()]
    ids = pa.array([r["id"] for r in rows])
    texts = pa.array([r["text"] for r in rows])
    name, kind = column.split("-")
    bad = {"binary": pa.array([r[name].encode() for r in rows]), "list": pa.array([[r[name]] for r in rows]),
           "struct": pa.array([{"t": r[name]} for r in rows])}[kind]
    corpus = tmp_path / "corpus.parquet"
    pq.write_table(pa.table({"id": bad if name == "id" else ids, "text": bad if name == "text" else texts}), corpus)
    runner = CliRunner()
    before = _rows(engine)
    for argv, out in (
        (["project", "create", "p", "--queries", str(paths["queries.jsonl"]), "--pool", str(paths["pool.jsonl"]),
          "--corpus", str(corpus), "--guidelines", str(paths["GUIDELINES.md"]), "--db", db_url], None),
        (["leakcheck", "--queries", str(paths["queries.jsonl"]), "--corpus", str(corpus), "--workers", "1",
          "--out", str(tmp_path / "leak.jsonl")], tmp_path / "leak.jsonl"),
        (["corpus-sample", str(corpus), "--size", "2", "--seed", "1", "--out", str(tmp_path / "sample.jsonl")],
         tmp_path / "sample.jsonl"),
    ):
        res = runner.invoke(main, argv)
        assert res.exit_code == 1, res.output
        assert f"{corpus}: column '{name}' is {kind}" in res.output, res.output
        assert out is None or not out.exists()
    assert _rows(engine) == before


def _fifo_fed(folder: Path, name: str, data: bytes):
    """A FIFO named ``name`` (its suffix tells the format) in ``folder``, and the thread that writes
    ``data`` into it once a reader opens it (join it after the command)."""
    import threading

    fifo = folder / name
    os.mkfifo(fifo)

    def write():
        with open(fifo, "wb") as fh:  # blocks until golden opens the FIFO for reading
            fh.write(data)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    return fifo, writer


LOG = "query,market\n" + "".join(f"recipe {i % 97} for {i % 13},{'us' if i % 3 else 'de'}\n" for i in range(5000))


@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
def test_sample_queries_reads_a_log_from_a_fifo_named_with_its_format(tmp_path, compress):
    """``mkfifo log.csv``: the log's format is told by the FIFO's name, and the sample is the file's, byte
    for byte (the bytes read to sniff gzip and the header are not lost)."""
    data = gzip.compress(LOG.encode(), mtime=0) if compress else LOG.encode()
    name = "log.csv.gz" if compress else "log.csv"
    (tmp_path / "file").mkdir()
    (tmp_path / "file" / name).write_bytes(data)
    args = ["--query-col", "query", "--stratum", "market", "--size", "20", "--floor", "5", "--seed", "3"]
    from_file = _golden("sample", "queries", str(tmp_path / "file" / name), *args, "--out", str(tmp_path / "a.jsonl"))
    assert from_file.returncode == 0, from_file.stderr
    fifo, writer = _fifo_fed(tmp_path, name, data)
    from_fifo = _golden("sample", "queries", str(fifo), *args, "--out", str(tmp_path / "b.jsonl"))
    writer.join(timeout=60)
    assert not writer.is_alive()  # golden read the FIFO to its end
    assert from_fifo.returncode == 0, from_fifo.stderr
    assert len((tmp_path / "a.jsonl").read_text().splitlines()) == 20
    assert (tmp_path / "b.jsonl").read_bytes() == (tmp_path / "a.jsonl").read_bytes()


def test_project_create_reads_a_corpus_from_a_fifo_named_with_its_format(engine, db_url, tmp_path):
    """``mkfifo corpus.jsonl``: ``project create --corpus`` stores the documents the file gives, on SQLite and
    PostgreSQL (two projects, one from the file, one from the FIFO, hold the same documents)."""
    from sqlalchemy import text

    from tests.support.projects import write_inputs

    paths = write_inputs(tmp_path / "in")
    fifo, writer = _fifo_fed(tmp_path, "corpus.jsonl", paths["corpus.jsonl"].read_bytes())
    for project, corpus in (("from-file", paths["corpus.jsonl"]), ("from-fifo", fifo)):
        res = CliRunner().invoke(main, ["project", "create", project, "--queries", str(paths["queries.jsonl"]),
                                        "--pool", str(paths["pool.jsonl"]), "--corpus", str(corpus),
                                        "--guidelines", str(paths["GUIDELINES.md"]), "--db", db_url])
        assert res.exit_code == 0, res.output
    writer.join(timeout=60)
    assert not writer.is_alive()  # golden read the FIFO to its end
    with engine.connect() as con:
        stored = {name: sorted(con.execute(text(
            "SELECT d.docid, d.text FROM document d JOIN project p ON p.id = d.project_id WHERE p.name = :n"),
            {"n": name}).all()) for name in ("from-file", "from-fifo")}
    assert len(stored["from-file"]) == len(paths["corpus.jsonl"].read_text().splitlines())
    assert stored["from-fifo"] == stored["from-file"]
