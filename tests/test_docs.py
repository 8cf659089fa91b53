"""The README stays short and starts with the two set-up commands; the docs site (docs/, mkdocs.yml)
names commands that exist, its CLI reference is generated, and it builds in strict mode."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest

from curation.cli import ALIASES, main

ROOT = Path(__file__).resolve().parents[1]
DEMO = "pip install -e . && golden demo"
TESTS = "pip install -e '.[test]' && python -m pytest"


def _code_blocks(text: str) -> list[str]:
    return [m.group(1).strip() for m in re.finditer(r"^```[a-z]*\n(.*?)^```", text, flags=re.M | re.S)]


def _pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def test_the_readme_is_short_and_starts_with_the_demo_and_the_tests():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) < 200
    assert _code_blocks(readme)[:2] == [DEMO, TESTS]


def test_ci_runs_the_readmes_test_command_verbatim_and_builds_the_docs():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert TESTS in ci
    build = next(i for i, line in enumerate(ci)
                 if "mkdocs build --strict" in line and not line.lstrip().startswith(("#", "echo")))
    assert next(i for i, line in enumerate(ci) if line.startswith("ruff check")) < build < ci.index(TESTS)


def _command_words(text: str) -> list[str]:
    """What follows `golden` where a page runs it: in code spans and at the start of code lines."""
    found = re.findall(r"`golden ([^`]*)`", text)
    for block in _code_blocks(text):
        found += re.findall(r"^(?:\$ )?golden (.*)$", block, flags=re.M)
    return found


def _resolves(words: list[str]) -> bool:
    """Whether ``golden WORDS`` reaches a command: a group is followed by one of its commands (or
    --help, or a placeholder such as COMMAND), never by the arguments of the old command of its name
    (`golden export --version v1`, `golden sample log.csv`)."""
    command = main
    for word in words:
        if not isinstance(command, click.Group):
            return True  # the command's options and arguments
        if word in ("-h", "--help") or word.isupper() or "|" in word:
            return True  # help, a placeholder, or a list of the group's commands (`sample queries|corpus`)
        command = command.commands.get(word)
        if command is None:
            return False
    return True


def test_the_docs_name_only_commands_that_exist_by_their_new_names():
    unknown = {}
    for page in _pages():
        for words in _command_words(page.read_text(encoding="utf-8")):
            first = (words.split() or [""])[0]
            if first in ALIASES and first not in main.commands:  # an old name, working but not to be taught
                unknown.setdefault(page.name, []).append(words)
            elif first and first[0].isalpha() and not _resolves(words.split()):
                unknown.setdefault(page.name, []).append(words)
    assert unknown == {}


def test_the_cli_reference_is_generated_from_the_commands_help():
    page = (ROOT / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
    assert re.search(r"^::: mkdocs-click\n    :module: curation\.cli\n    :command: main\n", page, flags=re.M)
    handwritten = [p.name for p in _pages() if "Usage: golden" in p.read_text(encoding="utf-8")]
    assert handwritten == []


def test_every_page_is_in_the_nav():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = {str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md")}
    listed = set(re.findall(r"([\w/-]+\.md)\s*$", nav, flags=re.M))
    assert pages == listed


@pytest.mark.slow
def test_mkdocs_builds_the_site_in_strict_mode(tmp_path):
    if shutil.which("mkdocs") is None:
        pytest.skip("mkdocs is not installed (pip install -e '.[test]' installs it)")
    res = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                         cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
                         env={**__import__("os").environ, "NO_MKDOCS_2_WARNING": "1"})
    assert res.returncode == 0, res.stderr[-3000:]
    cli = (tmp_path / "site" / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    assert "golden stats compare" in cli and "Paired comparison of runs" in cli
