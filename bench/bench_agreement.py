"""Agreement at scale: the query bootstrap, and the lead's pages on a large store.

Part 1 (no store): two assessments of the same pairs (the two robust03 qrels files, 128,796
pairs in 100 queries, when ../shared/data is present; else a synthetic pair of the same shape).
Times :func:`curation.agree.measures.compare_pair` with 1,000 query resamples (every figure: percent
agreement, three kappas, two alphas, and the binary three), against the obvious way: resampling the
pairs of the drawn queries and calling scikit-learn's ``cohen_kappa_score`` and ``krippendorff.alpha``
on each resample (timed on ``--naive`` resamples and scaled to 1,000). Also checks that the
vectorised replicates equal the libraries' on those resamples.

Part 2 (store): a project of ``--queries x --docs`` pairs on SQLite (``--db URL`` for another
database) with two judges' labels imported from qrels (``golden judging import``), then times
the import, loading the judgments, the agreement report (on the loaded records, then whole as
``golden labels agreement`` and the dashboard build it: :func:`curation.agree.agreement.build_agreement_report`),
the adjudication queue, the final labels, and the lead's dashboard and queue pages through Flask's
test client.

    python bench/bench_agreement.py
    python bench/bench_agreement.py --queries 1000 --docs 100 --naive 20
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SHARED = Path(os.environ.get("GOLDEN_SHARED_DATA", ROOT.parent / "shared" / "data"))


def _read(path):
    out = {}
    for line in open(path):
        q, _, d, g = line.split()
        out[(q, d)] = int(g)
    return out


def two_assessments():
    qrels = SHARED / "robust03" / "qrels"
    if (qrels / "robust03_qrels.txt").exists():
        return _read(qrels / "robust03_qrels.txt"), _read(qrels / "mod_robust03_qrels.txt"), "robust03 (real)"
    rng = np.random.default_rng(0)
    a, b = {}, {}
    for q in range(100):
        for d in range(1288):
            g = int(rng.choice(3, p=[0.95, 0.04, 0.01]))
            a[(str(q), f"d{d}")] = g
            b[(str(q), f"d{d}")] = g if rng.random() > 0.05 else int(rng.integers(0, 3))
    return a, b, "synthetic, robust03's shape"


def part1(naive: int, resamples: int) -> None:
    import krippendorff
    from sklearn.metrics import cohen_kappa_score

    from curation.agree.labels import Label, latest_labels
    from curation.agree.measures import compare_pair

    a, b, what = two_assessments()
    recs = [Label(q, d, "a", g) for (q, d), g in a.items()] + [Label(q, d, "b", g) for (q, d), g in b.items()]
    labels = latest_labels(recs)
    units = sorted(set(a) & set(b))
    scale = [0, 1, 2]
    print(f"part 1: {what}: {len(units):,} pairs in {len({u[0] for u in units})} queries, {resamples} resamples")
    t = time.perf_counter()
    c = compare_pair(labels, "a", "b", scale=scale, cut=1, resamples=resamples, seed=0)
    ours = time.perf_counter() - t
    print(f"  compare_pair (9 figures, points by the libraries, vectorised replicates): {ours:.2f} s")

    qids = sorted({u[0] for u in units})
    by_q = defaultdict(list)
    for i, u in enumerate(units):
        by_q[u[0]].append(i)
    y1 = np.array([a[u] for u in units])
    y2 = np.array([b[u] for u in units])
    draws = np.random.default_rng(0).integers(0, len(qids), size=(resamples, len(qids)))
    kappas = []
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for row in draws[:naive]:
            idx = np.concatenate([by_q[qids[q]] for q in row])
            r1, r2 = y1[idx], y2[idx]
            kappas.append(cohen_kappa_score(r1, r2, labels=scale))
            cohen_kappa_score(r1, r2, labels=scale, weights="linear")
            cohen_kappa_score(r1, r2, labels=scale, weights="quadratic")
            krippendorff.alpha(reliability_data=np.vstack([r1, r2]).astype(float), value_domain=scale,
                               level_of_measurement="nominal")
            krippendorff.alpha(reliability_data=np.vstack([r1, r2]).astype(float), value_domain=scale,
                               level_of_measurement="ordinal")
            b1, b2 = (r1 >= 1).astype(int), (r2 >= 1).astype(int)
            cohen_kappa_score(b1, b2, labels=[0, 1])
            krippendorff.alpha(reliability_data=np.vstack([b1, b2]).astype(float), value_domain=[0, 1],
                               level_of_measurement="nominal")
    per = (time.perf_counter() - t) / naive
    print(f"  libraries on each resample: {per * 1000:.0f} ms per resample -> {per * resamples:.1f} s for "
          f"{resamples} (measured on {naive}); ratio {per * resamples / ours:.0f}x")
    # The vectorised replicates reproduce the library on these resamples (same draws, same order).
    from curation.agree.measures import _kappa_from_confusion

    conf = np.zeros((len(qids), 3, 3))
    qindex = {q: i for i, q in enumerate(qids)}
    qi = np.array([qindex[u[0]] for u in units])
    np.add.at(conf, (qi, y1, y2), 1.0)
    counts = np.zeros((naive, len(qids)))
    for r, row in enumerate(draws[:naive]):
        np.add.at(counts[r], row, 1.0)
    vec = _kappa_from_confusion(np.einsum("bq,qij->bij", counts, conf), None)
    err = float(np.nanmax(np.abs(vec - np.array(kappas))))
    print(f"  max |vectorised - sklearn| kappa over {naive} resamples: {err:.1e}")
    k = c.measures["kappa"]
    print(f"  kappa {k.value:.4f} [{k.low:.4f}, {k.high:.4f}]")


def part2(queries: int, docs: int, db: str | None) -> None:
    from curation.agree.adjudication import disagreements
    from curation.agree.agreement import agreement_report, build_agreement_report
    from curation.agree.labels import final_labels, load_judgments
    from curation.judge.importing import import_judgments
    from curation.store import projects
    from curation.store.engine import make_engine
    from curation.store.engine import session as new_session
    from curation.store.migrate import upgrade
    from tests.support.judgments import write_qrels
    from tests.support.projects import add_users, write_project_files

    tmp = Path(tempfile.mkdtemp(prefix="bench-agreement-"))
    url = db or f"sqlite:///{tmp / 'golden.db'}"
    engine = make_engine(url)
    upgrade(engine)
    pairs = [(f"q{q:05d}", f"d{q:05d}_{d:03d}") for q in range(queries) for d in range(docs)]
    paths = write_project_files(tmp / "p", pairs)
    t = time.perf_counter()
    with new_session(engine) as s:
        projects.create_project(s, "bench", queries_path=paths["queries"], pool_path=paths["pool"],
                                corpus_paths=[paths["corpus"]], guidelines_path=paths["guidelines"], scale="0-2")
    print(f"part 2: {url.split('://')[0]}: {len(pairs):,} pairs ({queries} queries x {docs}); "
          f"project created in {time.perf_counter() - t:.1f} s")
    add_users(engine, lena="lead")
    rng = np.random.default_rng(1)
    ga = rng.choice(3, size=len(pairs), p=[0.7, 0.2, 0.1])
    gb = np.where(rng.random(len(pairs)) < 0.85, ga, rng.integers(0, 3, size=len(pairs)))
    for name, grades in (("alice", ga), ("bob", gb)):
        path = write_qrels(tmp / f"{name}.qrels", [(q, 0, d, int(g)) for (q, d), g in zip(pairs, grades)])
        t = time.perf_counter()
        with new_session(engine) as s:
            r = import_judgments(s, path, judge=name, create_judge=True)
        print(f"  import-judgments {name}: {r.imported:,} judgments in {time.perf_counter() - t:.2f} s")

    def timed(label, fn):
        t = time.perf_counter()
        out = fn()
        print(f"  {label}: {time.perf_counter() - t:.2f} s")
        return out

    with new_session(engine) as s:
        project = projects.get_project(s, "bench")
        recs = timed("load_judgments (overlap)", lambda: load_judgments(s, project, overlap_only=True))
        timed("agreement_report, 1000 resamples", lambda: agreement_report(recs, scale=[0, 1, 2], cut=1))
        timed("build_agreement_report (golden labels agreement's and /lead's: loads + report)",
              lambda: build_agreement_report(s, project))
        queue = timed("disagreements (queue)", lambda: disagreements(s, project))
        labels = timed("final_labels", lambda: final_labels(s, project))
    print(f"  {len(recs):,} judgments, {len(queue):,} disagreements, {len(labels):,} final labels")

    from judging_app import create_app

    app = create_app({"DATABASE_URL": url, "SECRET_KEY": "bench", "WTF_CSRF_ENABLED": False})
    client = app.test_client()
    client.post("/login", data={"username": "lena", "password": "correct-horse-battery"})
    for label, path in (("GET /lead/<id> (dashboard)", f"/lead/{project.id}"),
                        ("GET /lead/<id>/adjudicate", f"/lead/{project.id}/adjudicate")):
        t = time.perf_counter()
        resp = client.get(path)
        print(f"  {label}: {time.perf_counter() - t:.2f} s (HTTP {resp.status_code}, {len(resp.data):,} bytes)")
    app.extensions["golden_engine"].dispose()
    engine.dispose()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--naive", type=int, default=20, help="library resamples to time (scaled to --resamples)")
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--docs", type=int, default=50)
    ap.add_argument("--db", default=None, help="an empty database URL (default: a temporary SQLite file)")
    ap.add_argument("--skip-store", action="store_true")
    args = ap.parse_args()
    print(f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} CPUs (shared: timings are noisy)")
    part1(args.naive, args.resamples)
    if not args.skip_store:
        part2(args.queries, args.docs, args.db)


if __name__ == "__main__":
    main()
