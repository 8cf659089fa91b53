"""No command writes over what it reads: an output naming one of the command's inputs (or an input's
side file, or the same file by another name), a folder, a FIFO or a device node is refused before
any work, as a usage error naming both, and every file of the folder keeps its bytes.

Run through the real command line (click's CliRunner) on the clean files of
:mod:`tests.support.malformed`.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from curation.cli import main
from tests.cli.test_malformed_inputs import write_clean

POOL = "pool {d}/run_a.trec {d}/run_b.trec --queries {d}/queries.jsonl --depth 5 --out {out}"
LEAK = "leakcheck --queries {d}/queries.jsonl --corpus {d}/corpus.jsonl --workers 1 --out {out}"
SAMPLE = "sample {d}/log.csv --query-col query --count-col count --size 3 --floor 0 --seed 1 --out {out}"
CORPUS = "corpus-sample {d}/corpus.tsv {d}/corpus.jsonl --size 4 --keep {d}/pool.jsonl --seed 1 --out {out}"
COMPARE = "compare {d}/run_a.trec {d}/run_b.trec --qrels {d}/qrels.txt --resamples 200 --html {out}"
EXTEND = "pool {d}/run_c.trec --extend {d}/pool.jsonl --depth 5 --out {out}"

# (command line, output path, words the refusal must hold)
CASES = {
    "pool-out-is-run": (POOL, "run_a.trec", "is the input RUN"),
    "pool-out-is-queries": (POOL, "queries.jsonl", "is the input --queries"),
    "pool-extend-out-is-extend": (EXTEND, "pool.jsonl", "is the input --extend"),
    "pool-extend-gz-meta": (EXTEND, "pool.jsonl.gz", "--out's side file"),
    "corpus-sample-out-is-corpus": (CORPUS, "corpus.jsonl", "is the input CORPUS"),
    "leakcheck-out-is-corpus": (LEAK, "corpus.jsonl", "is the input --corpus"),
    "leakcheck-out-is-queries": (LEAK, "queries.jsonl", "is the input --queries"),
    "sample-out-is-log": (SAMPLE, "log.csv", "is the input LOG"),
    "compare-html-is-run": (COMPARE, "run_b.trec", "is the input RUNS"),
    "compare-html-is-qrels": (COMPARE, "qrels.txt", "is the input --qrels"),
    "leakcheck-out-is-db": (LEAK + " --db {d}/golden.db", "golden.db", "is the input --db"),
}


def _snapshot(folder: Path) -> dict[str, bytes | str]:
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_symlink():
            out[str(p.relative_to(folder))] = os.readlink(p)
        elif p.is_file():
            out[str(p.relative_to(folder))] = p.read_bytes()
    return out


def _run(argv: str, folder: Path, out: str):
    return CliRunner().invoke(main, argv.format(d=folder, out=out).split(), catch_exceptions=True)


@pytest.fixture
def folder(tmp_path):
    write_clean(tmp_path)
    (tmp_path / "golden.db").write_bytes(b"not touched")
    return tmp_path


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_output_naming_an_input_is_refused_and_nothing_changes(folder, case):
    argv, out, words = CASES[case]
    before = _snapshot(folder)
    res = _run(argv, folder, str(folder / out))
    assert res.exit_code == 2, res.output
    assert words in res.output and "never writes over what it reads" in res.output
    assert _snapshot(folder) == before


@pytest.mark.parametrize("link", ["hard", "symbolic"])
def test_an_output_that_is_an_input_by_another_name_is_refused(folder, link):
    other = folder / "sub" / "alias.trec"
    other.parent.mkdir()
    (os.link if link == "hard" else os.symlink)(folder / "run_a.trec", other)
    before = _snapshot(folder)
    res = _run(POOL, folder, str(other))
    assert res.exit_code == 2 and "is the input RUN" in res.output, res.output
    assert _snapshot(folder) == before


def test_the_same_path_spelled_differently_is_the_same_input(folder, monkeypatch):
    monkeypatch.chdir(folder)
    before = _snapshot(folder)
    res = CliRunner().invoke(main, ["pool", "run_a.trec", "--depth", "5", "--out", f"../{folder.name}/./run_a.trec"])
    assert res.exit_code == 2 and "is the input RUN" in res.output, res.output
    assert _snapshot(folder) == before


def test_a_run_named_name_equals_path_is_an_input(folder):
    before = _snapshot(folder)
    res = CliRunner().invoke(main, ["pool", f"a={folder}/run_a.trec", "--out", f"{folder}/run_a.trec"])
    assert res.exit_code == 2 and "is the input RUN" in res.output, res.output
    assert _snapshot(folder) == before


def test_an_output_inside_a_log_folder_is_refused(folder):
    logs = folder / "logs"
    logs.mkdir()
    shutil.copy(folder / "log.csv", logs / "part-1.csv")
    before = _snapshot(folder)
    res = _run(SAMPLE.replace("{d}/log.csv", "{d}/logs"), folder, str(logs / "queries.jsonl"))
    assert res.exit_code == 2 and "is inside the input folder LOG" in res.output, res.output
    assert _snapshot(folder) == before


def test_a_fifo_is_refused_as_an_output_and_stays_a_fifo(folder):
    fifo = folder / "out.fifo"
    os.mkfifo(fifo)
    res = _run(POOL, folder, str(fifo))
    assert res.exit_code == 2 and "is a FIFO" in res.output, res.output
    assert fifo.is_fifo()


@pytest.mark.parametrize("argv", [POOL, LEAK, SAMPLE, CORPUS, COMPARE], ids=["pool", "leak", "sample", "corpus", "cmp"])
def test_a_device_node_is_refused_as_an_output(folder, argv):
    # A private null device (not the system's /dev/null: code that replaces its output would replace it).
    node = folder / "null"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("creating a device node needs CAP_MKNOD")
    res = _run(argv, folder, str(node))
    assert res.exit_code == 2 and "is a device node" in res.output, res.output
    assert node.is_char_device()


def test_a_folder_or_stdout_is_refused_as_an_output_where_the_command_writes_a_file(folder):
    res = _run(LEAK, folder, str(folder))
    assert res.exit_code == 2 and "is a directory" in res.output, res.output  # click's own check
    res = _run(POOL, folder, "-")
    assert res.exit_code == 2 and "cannot write to standard output" in res.output, res.output
    assert not (folder.parent / "-").exists() and not Path("-").exists()


def test_the_clean_command_still_writes_its_output(folder):
    res = _run(EXTEND, folder, str(folder / "new.jsonl.gz"))
    assert res.exit_code == 0, res.output
    assert (folder / "new.jsonl.gz").exists() and (folder / "new.meta.json").exists()
