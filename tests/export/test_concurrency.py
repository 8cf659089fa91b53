"""Two ``golden export create`` of different new versions at once, on SQLite and PostgreSQL: the version
history stays linear (the second records the first as its parent and diffs CHANGES.md against it)."""

from __future__ import annotations

import contextlib
import json
import threading

from sqlmodel import select

from curation.export import versions as export
from curation.store.engine import make_engine
from curation.store.engine import session as new_session
from curation.store.models import ExportVersion
from curation.store.projects import get_project
from tests.export.test_export import complete  # noqa: F401 - the fixture: a project ready to export


def test_two_concurrent_exports_of_new_versions_form_a_linear_history(complete, tmp_path, monkeypatch):  # noqa: F811
    url = complete.url.render_as_string(hide_password=False)
    barrier = threading.Barrier(2)
    real = export.gather_state

    def racing(*args, **kwargs):  # both exports have gathered the state before either stores its version
        state = real(*args, **kwargs)
        with contextlib.suppress(threading.BrokenBarrierError):
            barrier.wait(timeout=3)
        return state

    monkeypatch.setattr(export, "gather_state", racing)
    errors = []

    def one(version):
        eng = make_engine(url)
        try:
            with new_session(eng) as s:
                export.export_version(s, get_project(s, "p"), version, out_dir=tmp_path / "out", created_by="t")
        except Exception as exc:  # collected: the test asserts there is none
            errors.append(exc)
        finally:
            eng.dispose()

    threads = [threading.Thread(target=one, args=(v,)) for v in ("v1", "v2")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert errors == []
    with new_session(complete) as s:
        rows = list(s.exec(select(ExportVersion).order_by(ExportVersion.id)))
    assert [r.parent for r in rows] == [None, rows[0].name]  # linear: the second's parent is the first
    first, second = rows[0].name, rows[1].name
    manifest = json.loads((tmp_path / "out" / second / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["parent"] == first
    changes = (tmp_path / "out" / second / "CHANGES.md").read_text(encoding="utf-8")
    assert first in changes
