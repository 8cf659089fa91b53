"""The names of golden 0.1 still work: each runs the command it became, after one note on stderr that
names the new one, and none of them is listed by `golden --help`."""

from __future__ import annotations

import subprocess
import sys

import pytest
from click.testing import CliRunner

from curation.cli import ALIASES, GROUPS, main

# golden 0.1's flat list of commands, written out here rather than read from the code.
OLD_NAMES = [
    "adjudicate", "agreement", "assign", "attribute", "audit", "calibrate", "compare", "corpus-sample", "coverage",
    "db", "export", "guidelines", "import-judgments", "metrics", "noise", "power", "progress", "release", "sample",
    "seed-judgments", "settle", "simulate-judging", "split", "sweep", "user", "verify",
]
KEPT = ["demo", "pool", "project", "serve", "leakcheck", "machine"]  # at the top: 0.1 names, and the machine group


def _note(old: str) -> str:
    return f"golden: `golden {old}` is now `golden {ALIASES[old]}`; the old name still works for now."


def _usage_and_body(text: str) -> tuple[str, str]:
    usage, _, body = text.partition("\n")
    return usage, body


def test_every_old_name_is_in_the_table_and_nothing_else():
    assert sorted(ALIASES) == sorted(OLD_NAMES)


@pytest.mark.parametrize("old", [n for n in OLD_NAMES if n not in GROUPS])
def test_an_old_name_runs_its_new_command_after_one_note(old):
    res = CliRunner().invoke(main, [old, "--help"], prog_name="golden")
    new = CliRunner().invoke(main, [*ALIASES[old].split(), "--help"], prog_name="golden")
    assert res.exit_code == new.exit_code == 0, res.output
    assert res.stderr.splitlines() == [_note(old)]  # once
    assert new.stderr == ""
    usage, body = _usage_and_body(res.stdout)
    new_usage, new_body = _usage_and_body(new.stdout)
    assert body == new_body  # the same command, its help word for word
    assert usage.startswith(f"Usage: golden {old}") and new_usage.startswith(f"Usage: golden {ALIASES[old]}")


@pytest.mark.parametrize("old", [n for n in OLD_NAMES if n in GROUPS])
def test_an_old_name_that_is_now_a_group_runs_its_old_command_when_given_its_arguments(old, tmp_path):
    # `golden sample LOG ...` and `golden export --version ...`: arguments none of the group's commands
    # is named by run the old command, after the note; `golden sample --help` is the group's help.
    assert "Commands:" in CliRunner().invoke(main, [old, "--help"]).stdout
    args = {"sample": [str(tmp_path / "missing.csv"), "--query-col", "q"],
            "export": ["--version", "v1", "--db", str(tmp_path / "none.db")]}[old]
    res = CliRunner().invoke(main, [old, *args], prog_name="golden")
    new = CliRunner().invoke(main, [*ALIASES[old].split(), *args], prog_name="golden")
    assert res.exit_code == new.exit_code == 2  # the same usage error: a required option is missing
    assert res.stderr.splitlines()[0] == _note(old)
    assert res.stderr.splitlines()[1:] == new.stderr.splitlines()  # with the new name in the usage line
    assert f"Usage: golden {ALIASES[old]} " in res.stderr


def test_an_old_name_computes_what_the_new_one_does(tmp_path):
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d1 1 2.0 a\nq1 Q0 d2 2 1.0 a\nq2 Q0 d3 1 1.0 a\n", encoding="utf-8")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d2 1\nq2 0 d3 2\n", encoding="utf-8")
    args = [str(run), "--qrels", str(qrels), "-m", "mrr@10", "--json"]
    old = CliRunner().invoke(main, ["metrics", *args])
    new = CliRunner().invoke(main, ["stats", "metrics", *args])
    assert old.exit_code == new.exit_code == 0, old.output
    assert old.stdout == new.stdout and '"mrr@10"' in new.stdout
    assert old.stderr == _note("metrics") + "\n" and new.stderr == ""


def test_the_old_sample_command_writes_the_same_file(tmp_path):
    log = tmp_path / "log.csv"
    log.write_text("query\n" + "".join(f"query {i % 9}\n" for i in range(60)), encoding="utf-8")
    outs = []
    for name, cmd in (("old", ["sample"]), ("new", ["sample", "queries"])):
        out = tmp_path / f"{name}.jsonl"
        res = CliRunner().invoke(main, [*cmd, str(log), "--query-col", "query", "--size", "4", "--floor", "0",
                                        "--seed", "2", "--out", str(out)])
        assert res.exit_code == 0, res.output
        outs.append(out.read_bytes())
    assert outs[0] == outs[1] and outs[0]


def test_old_names_are_hidden_and_the_groups_shown():
    res = CliRunner().invoke(main, ["--help"])
    listed = {line.split()[0] for line in res.stdout.split("Commands:")[1].splitlines() if line.startswith("  ")}
    assert listed == {*GROUPS, *KEPT}
    assert not (set(OLD_NAMES) - set(GROUPS)) & listed


def test_python_m_curation_runs_the_cli():
    res = subprocess.run([sys.executable, "-m", "curation", "compare", "--help"], capture_output=True, text=True,
                         timeout=60, check=False)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("Usage: golden compare ")
    assert res.stderr == _note("compare") + "\n"
