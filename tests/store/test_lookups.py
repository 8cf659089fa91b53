"""The shared store lookups: a pool pair with its query and document ids."""

from __future__ import annotations

import json

from sqlmodel import select

from curation.store.engine import session
from curation.store.lookups import join_pair_text, pair_ids, pair_keys
from curation.store.models import Document, PoolPair, Query
from tests.support.projects import counts_project


def test_pair_ids_maps_every_pooled_qid_docid_to_its_pair(engine, tmp_path):
    with session(engine) as s:
        project, paths = counts_project(s, tmp_path, queries={"q1": 3, "q2": 2})
        other, _ = counts_project(s, tmp_path / "other", name="other", queries={"q1": 1})
        ids = pair_ids(s, project)
        pooled = {(r["qid"], r["docid"]) for r in map(json.loads, paths["pool.jsonl"].read_text().splitlines())}
        assert set(ids) == pooled
        for (qid, docid), pid in ids.items():
            pair = s.get(PoolPair, pid)
            assert pair.project_id == project.id
            assert (s.get(Query, pair.query_id).qid, s.get(Document, pair.document_id).docid) == (qid, docid)
        # The other project's pair with the same (qid, docid) is not among them, and vice versa.
        assert set(pair_ids(s, other.id).values()).isdisjoint(ids.values())


def test_join_pair_text_filters_on_query_and_document(engine, tmp_path):
    with session(engine) as s:
        project, _ = counts_project(s, tmp_path, queries={"q1": 3, "q2": 2})
        rows = s.exec(join_pair_text(select(Document.docid).select_from(PoolPair)).where(
            PoolPair.project_id == project.id, Query.qid == "q2")).all()
        assert sorted(rows) == ["q2-d0", "q2-d1"]


def test_pair_keys_is_the_inverse_of_pair_ids_across_batches(engine, tmp_path):
    with session(engine) as s:
        project, _ = counts_project(s, tmp_path, queries={"q1": 3, "q2": 2, "q3": 4})
        ids = pair_ids(s, project)
        wanted = sorted(ids.values())[1:]  # all but one, fetched two ids a statement
        keys = pair_keys(s, wanted, batch=2)
        assert keys == {pid: key for key, pid in ids.items() if pid in wanted}
        assert pair_keys(s, []) == {}
