"""Text holding NUL (a JSON ``\\u0000``) is refused with its file and line by every reader whose text
reaches the store, before anything is stored, on SQLite and PostgreSQL alike (PostgreSQL cannot
store it; SQLite could, so the two stores would differ)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from sqlmodel import func, select

from curation.cli import main
from curation.store.engine import session as new_session
from curation.store.models import Document, Project
from tests.support.projects import write_pair_files


def _lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


@pytest.mark.parametrize("where", ["corpus text", "query text", "query narrative", "guidelines"])
def test_text_with_nul_is_refused_at_project_create_on_every_store(db_url, engine, tmp_path, where):
    paths = write_pair_files(tmp_path / "in", [("q1", "d1"), ("q1", "d2"), ("q2", "d3")])
    if where == "guidelines":
        paths["guidelines"].write_text("# Guidelines\n\nrelevant\x00means\n", encoding="utf-8")
        expect = f"{paths['guidelines']}"
    else:
        key = "corpus" if where == "corpus text" else "queries"
        rows = _lines(paths[key])
        rows[1]["narrative" if where == "query narrative" else "text"] = "before\x00after"  # written as \u0000
        _write(paths[key], rows)
        assert "\\u0000" in paths[key].read_text()
        expect = f"{paths[key]}:2"
    res = CliRunner().invoke(main, ["project", "create", "p", "--queries", str(paths["queries"]), "--pool",
                                    str(paths["pool"]), "--corpus", str(paths["corpus"]), "--guidelines",
                                    str(paths["guidelines"]), "--db", db_url])
    assert res.exit_code == 1, res.output
    assert expect in res.output and ("NUL" in res.output), res.output
    assert "bug in golden" not in res.output
    with new_session(engine) as s:
        assert s.exec(select(func.count()).select_from(Project)).one() == 0
        assert s.exec(select(func.count()).select_from(Document)).one() == 0


def test_the_clean_files_load_on_every_store(db_url, engine, tmp_path):
    paths = write_pair_files(tmp_path / "in", [("q1", "d1"), ("q1", "d2"), ("q2", "d3")])
    res = CliRunner().invoke(main, ["project", "create", "p", "--queries", str(paths["queries"]), "--pool",
                                    str(paths["pool"]), "--corpus", str(paths["corpus"]), "--guidelines",
                                    str(paths["guidelines"]), "--db", db_url])
    assert res.exit_code == 0, res.output
    with new_session(engine) as s:
        assert s.exec(select(func.count()).select_from(Document)).one() == 3
