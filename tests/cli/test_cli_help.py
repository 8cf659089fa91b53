"""Every `golden` command, subcommands included, explains itself with an example in --help."""

import click
import pytest
from click.testing import CliRunner

from curation.cli import main


def _commands(group: click.Group, prefix=()):
    for name, command in sorted(group.commands.items()):
        path = prefix + (name,)
        yield path
        if isinstance(command, click.Group):
            yield from _commands(command, path)


ALL = list(_commands(main))


def test_the_pipeline_commands_are_all_there():
    assert {("sample", "queries"), ("pool",), ("demo",), ("serve",), ("judging", "assign"), ("labels", "agreement"),
            ("leakcheck",), ("stats", "coverage"), ("export", "create"), ("export", "verify"), ("stats", "compare"),
            ("stats", "power")} <= set(ALL)


@pytest.mark.parametrize("path", ALL, ids=" ".join)
def test_help_explains_with_an_example(path):
    result = CliRunner().invoke(main, [*path, "--help"])
    assert result.exit_code == 0, result.output
    text = result.output
    assert "example" in text.lower(), f"`golden {' '.join(path)} --help` has no example"
    # A first line that says what the command does, not just its usage line.
    body = text.split("\n\n", 2)
    assert len(body) >= 2 and len(body[1].strip()) > 15
