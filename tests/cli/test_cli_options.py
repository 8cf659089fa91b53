"""Options several commands share are declared once (curation/cli/base.py) and read the same
everywhere: --project, --json, --seed."""

import json

import click
import numpy as np
import pytest
from click.testing import CliRunner

from curation.cli import main
from curation.cli.base import echo_json


def _commands(group: click.Group, prefix=()):
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            yield from _commands(command, prefix + (name,))
        else:
            yield " ".join(prefix + (name,)), command


def _options(dest: str):
    return {path: p for path, command in _commands(main) for p in command.params if p.name == dest}


# The two commands where naming a project switches something on say what it switches on.
PURPOSE = {"stats coverage", "leakcheck"}


def test_project_is_one_option_with_one_wording():
    found = _options("project_name")
    assert len(found) >= 11
    for path, p in found.items():
        assert (p.opts, p.metavar, p.default, p.required) == (["--project"], "NAME", None, False), path
    wordings = {p.help for path, p in found.items() if path not in PURPOSE}
    assert len(wordings) == 1
    assert "only project" in wordings.pop()
    assert {p.help for path, p in found.items() if path in PURPOSE}.isdisjoint(wordings)


def test_json_is_one_flag_with_one_wording():
    found = _options("as_json")
    assert {"labels agreement", "labels adjudicate", "stats coverage", "stats metrics", "stats compare", "stats power",
            "stats noise", "stats sweep", "stats attribute"} <= set(found)
    assert {(tuple(p.opts), p.is_flag, p.help) for p in found.values()} == {
        (("--json",), True, "Print the result as JSON instead of text, for scripts.")}


def test_echo_json_writes_valid_json_for_nan_numpy_and_non_ascii():
    @click.command()
    def show():
        echo_json({"alpha": float("nan"), "inf": float("inf"), "v": np.array([1, 2]), "n": np.int64(3),
                   "w": np.array([0.5, np.nan]), "x": np.float64("nan"), "note": "réponse"})

    out = CliRunner().invoke(show).output
    assert json.loads(out) == {"alpha": None, "inf": None, "v": [1, 2], "n": 3, "w": [0.5, None], "x": None,
                               "note": "réponse"}
    assert "NaN" not in out and "Infinity" not in out  # what json.loads accepts but JSON does not
    assert "réponse" in out  # UTF-8, not \u escapes


@pytest.mark.parametrize("path", ["stats coverage", "labels adjudicate"])
def test_json_help_reads_the_same_in_every_command(path):
    text = CliRunner().invoke(main, [*path.split(), "--help"]).output
    assert "Print the result as JSON instead of text, for scripts." in " ".join(text.split())


def test_every_seed_defaults_to_zero_and_shows_it():
    found = _options("seed")
    assert {"export split", "judging seed", "judging assign", "pool", "sample queries", "stats compare",
            "demo"} <= set(found)
    for path, p in found.items():
        assert (p.opts, p.type, p.default, p.show_default) == (["--seed"], click.INT, 0, True), path
