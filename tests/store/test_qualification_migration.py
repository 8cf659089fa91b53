"""Migration 0024 (qualification attempts and answers) on SQLite and PostgreSQL: down to 0023 drops
its two tables and leaves the known-answer set as it was; up again brings them back, empty."""

from __future__ import annotations

from alembic import command
from sqlalchemy import inspect, text

from curation.store.engine import make_engine
from curation.store.migrate import alembic_config, current_revision


def test_0024_downgrades_and_upgrades(db_url, tmp_path):
    from tests.support.projects import assigned_project
    from tests.support.qualified import add_known_pairs

    cfg = alembic_config(db_url)
    command.upgrade(cfg, "head")
    eng = make_engine(db_url)
    try:
        s = assigned_project(eng, tmp_path / "p", judges=("alice", "nina"))
        known = add_known_pairs(eng, s.project_id, avoid_judge="nina", n=3)
        command.downgrade(cfg, "0023")
        assert current_revision(eng) == "0023"
        tables = set(inspect(eng).get_table_names())
        assert "knownanswer" in tables and not {"qualificationattempt", "qualificationanswer"} & tables
        with eng.connect() as conn:
            assert conn.execute(text("SELECT COUNT(*) FROM knownanswer")).scalar() == len(known)
        command.upgrade(cfg, "0024")  # this migration alone (later ones follow it)
        assert current_revision(eng) == "0024"
        insp = inspect(eng)
        assert {"judge_id", "attempt", "pairs", "pass_mark", "finished_at", "passed", "granted_by_id"} <= {
            c["name"] for c in insp.get_columns("qualificationattempt")}
        with eng.connect() as conn:
            assert conn.execute(text("SELECT COUNT(*) FROM qualificationanswer")).scalar() == 0
        command.upgrade(cfg, "head")
    finally:
        eng.dispose()
