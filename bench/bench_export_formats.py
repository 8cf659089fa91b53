"""Export formats benchmark: the CPU time of ``golden export`` with and without
``--format quepid --format rre --format ltr --format hf`` on one judged project, in the same run.

    python bench/bench_export_formats.py 2000 50     # 2,000 queries x 50 documents = 100,000 pairs

Builds the project of :func:`tests.support.rich_store.judged_project` (SQLite in a temporary folder),
then exports four versions of the same state, alternating without and with the four formats, and
prints each one's CPU time (this process, ``time.process_time``), wall time and the load average, the
ratio of the means, and the size of each format's file. pyarrow is imported before the clock starts.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

FOUR = ("quepid", "rre", "ltr", "hf")


def main(n_queries: int, n_docs: int) -> None:
    import pyarrow.parquet  # noqa: F401  (paid once by any run that writes hf/)

    from curation.export.versions import export_version
    from curation.store.engine import make_engine
    from curation.store.engine import session as new_session
    from curation.store.migrate import upgrade
    from curation.store.projects import get_project
    from tests.support.rich_store import judged_project

    folder = Path(tempfile.mkdtemp())
    engine = make_engine(f"sqlite:///{folder / 'golden.db'}")
    upgrade(engine)
    judged_project(engine, folder / "in", n_queries=n_queries, docs=n_docs)
    cpu = {(): [], FOUR: []}
    for i, formats in enumerate(((), FOUR, (), FOUR), 1):
        with new_session(engine) as s:
            c0, w0 = time.process_time(), time.perf_counter()
            export_version(s, get_project(s, "p"), f"v{i}", out_dir=folder / "out", created_by="bench",
                           formats=formats, allow_incomplete=True)
            c, w = time.process_time() - c0, time.perf_counter() - w0
        cpu[formats].append(c)
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        print(f"v{i} formats={','.join(formats) or '-'}: CPU {c:.2f} s, wall {w:.2f} s (load {load})")
    base, full = sum(cpu[()]) / 2, sum(cpu[FOUR]) / 2
    print(f"{n_queries * n_docs} pairs: CPU with the four formats {full:.2f} s, without {base:.2f} s "
          f"(ratio {full / base:.2f}; the formats add {full - base:.2f} s)")
    for name in ("qrels.jsonl", "quepid.csv", "rre.json", "ltr.txt", "hf/data/test-00000-of-00001.parquet"):
        print(f"  {name}: {(folder / 'out' / 'v2' / name).stat().st_size} bytes")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000, int(sys.argv[2]) if len(sys.argv) > 2 else 50)
