"""Migration 0022 (machine runs) on SQLite and PostgreSQL: a store at 0020 holding an imported
machine label is upgraded with the label intact (its provenance columns empty: imported labels have
no run), downgraded back to 0020 with the label still there, and upgraded again."""

from __future__ import annotations

from alembic import command
from sqlalchemy import inspect, text

from curation.store.engine import make_engine
from curation.store.migrate import alembic_config


def test_0022_upgrades_and_downgrades_with_labels_kept(db_url, tmp_path):
    from tests.support.projects import pairs_project

    cfg = alembic_config(db_url)
    command.upgrade(cfg, "0020")
    eng = make_engine(db_url)
    try:
        # a project and an imported label at 0020, written with plain SQL (the models are at head)
        command.upgrade(cfg, "head")
        pairs_project(eng, tmp_path, [("q1", "d1")])
        command.downgrade(cfg, "0020")
        with eng.begin() as conn:
            pair = conn.execute(text("SELECT id, project_id FROM poolpair")).one()
            conn.execute(text("INSERT INTO machinejudge (name, kind, created_at) VALUES ('m', 'machine', "
                              "CURRENT_TIMESTAMP)"))
            mid = conn.execute(text("SELECT id FROM machinejudge")).scalar()
            conn.execute(text("INSERT INTO machinelabel (project_id, pair_id, machine_id, grade, sample, model, "
                              "prompt_version, token, imported_at) VALUES (:p, :pair, :m, 2, 0, 'x', 'v1', 't', "
                              "CURRENT_TIMESTAMP)"), {"p": pair.project_id, "pair": pair.id, "m": mid})
        command.upgrade(cfg, "head")
        insp = inspect(eng)
        assert {"machinerun", "machinefailure"} <= set(insp.get_table_names())
        cols = {c["name"] for c in insp.get_columns("machinelabel")}
        assert {"run_id", "need_version", "served_model", "sampling_json", "raw_response", "tokens_in", "tokens_out",
                "latency_ms"} <= cols
        assert "model" in {c["name"] for c in insp.get_columns("run")}
        with eng.connect() as conn:
            assert conn.execute(text("SELECT grade, prompt_version, run_id, raw_response FROM machinelabel")).one() \
                == (2, "v1", None, None)
        command.downgrade(cfg, "0020")
        insp = inspect(eng)
        assert "machinerun" not in insp.get_table_names()
        assert "run_id" not in {c["name"] for c in insp.get_columns("machinelabel")}
        with eng.connect() as conn:
            assert conn.execute(text("SELECT grade FROM machinelabel")).scalar() == 2
        command.upgrade(cfg, "head")
    finally:
        eng.dispose()
