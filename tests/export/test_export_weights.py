"""An export's queries.jsonl carries what the statistics need to weight as they do on the sample:
each stratum's known share of the traffic."""

from __future__ import annotations

from curation.evaluate.stats import design
from curation.export import versions as export
from curation.formats.queries import read_queries
from curation.store.engine import session as new_session
from curation.store.models import Query
from curation.store.projects import get_project
from tests.support.projects import counts_project


def _export(engine, tmp_path, name="demo"):
    with new_session(engine) as s:
        export.export_version(s, get_project(s, name), "v1", out_dir=tmp_path / "out", created_by="t",
                              allow_incomplete=True)
    return {r.qid: r for r in read_queries(tmp_path / "out" / "v1" / "queries.jsonl")}


def test_the_export_states_each_strata_known_share_so_compare_uses_horvitz_thompson(engine, tmp_path):
    with new_session(engine) as s:
        counts_project(s, tmp_path / "in")  # four queries in two strata, stratum_share 0.5 each
    recs = _export(engine, tmp_path)
    assert {r.stratum_share for r in recs.values()} == {0.5}
    d = design(sorted(recs), recs, "traffic")
    assert d.estimator.startswith("Horvitz-Thompson")
    assert not d.notes  # no "does not state its strata's shares" fallback to the ratio mean


def test_queries_without_a_known_share_keep_the_ratio_mean_and_say_so(engine, tmp_path):
    with new_session(engine) as s:
        project, _ = counts_project(s, tmp_path / "in")
        for q in s.exec(Query.__table__.select().where(Query.project_id == project.id)).all():
            s.get(Query, q.id).stratum_share = 0.0  # a store loaded from a file without shares
        s.commit()
    recs = _export(engine, tmp_path)
    assert all(r.stratum_share is None for r in recs.values())
    d = design(sorted(recs), recs, "traffic")
    assert d.estimator.startswith("ratio") and any("does not state" in n for n in d.notes)
