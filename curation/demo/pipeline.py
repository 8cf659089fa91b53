"""The demo's path: a folder made ready, the data generated, the log sampled, the runs pooled, and
the project loaded into a judging store with two judges, a lead and an overlap set, ready to serve."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from curation.demo.content import POOL_DEPTH, SAMPLE_FLOOR, SAMPLE_SIZE
from curation.demo.generator import DemoResult, generate_demo_data
from curation.demo.machine import DEMO_MACHINE, write_machine_judge
from curation.formats.corpus import fetch_docs


def refuse_to_overwrite_work(folder: str | os.PathLike) -> None:
    """ValueError when ``folder`` already has a demo store (``golden.db``) with work in it (judgments,
    adjudications, imports, leak decisions, guidelines versions, export versions): `golden demo`
    would replace it. ``--force`` skips this check. A store that cannot be read is refused too."""
    from curation.store.engine import make_engine, session
    from curation.store.work import work_counts

    store = Path(folder) / "golden.db"
    if not store.is_file():
        return
    engine = make_engine(f"sqlite:///{store.resolve()}")
    try:
        with session(engine) as db:
            counts = work_counts(db)
    except Exception as exc:  # any failure to read: we cannot vouch that it holds no work
        raise ValueError(f"folder: {store} exists and cannot be read as a golden store ({type(exc).__name__}); "
                         "pass --force to replace it, or pick another folder with --dir") from None
    finally:
        engine.dispose()
    if counts:
        what = ", ".join(f"{n} {kind if n != 1 else kind[:-1]}" for kind, n in counts.items())
        raise ValueError(f"folder: {store} holds work ({what}); re-running the demo would replace it. "
                         "Pass --force to replace it anyway, or pick another folder with --dir")


# --------------------------------------------------------------------------------------------
# The demo path: generate, sample, pool


def build_demo(folder: str | os.PathLike, *, seed: int = 0) -> DemoResult:
    """Generate the demo data in ``folder``, sample queries from its log and pool its runs.

    Writes ``queries.jsonl`` (``SAMPLE_SIZE`` logged queries over surface x shape strata, floor
    ``SAMPLE_FLOOR``, plus the hand-written ones) and ``pool.jsonl`` with ``pool.meta.json``
    (depth ``POOL_DEPTH``). Returns what was done, paths included.
    """
    from curation.formats.queries import write_queries
    from curation.formats.runs import read_runs
    from curation.pool.pooling import file_info, make_pool, write_pool
    from curation.sample.sampling import sample_queries

    data = generate_demo_data(folder, seed=seed)
    paths = data.paths
    paths.queries = paths.folder / "queries.jsonl"
    paths.pool = paths.folder / "pool.jsonl"
    sample = sample_queries(
        paths.log, query_col="query", user_col="user_id", strata=["surface"], shape=True,
        size=SAMPLE_SIZE, floor=SAMPLE_FLOOR, seed=seed, handwritten=paths.handwritten,
    )
    write_queries(sample.rows, paths.queries)
    qids = [row["qid"] for row in sample.rows]
    runs = read_runs(paths.runs, depth=POOL_DEPTH)
    pool = make_pool(runs, depth=POOL_DEPTH, seed=seed, qids=qids)
    pool.queries_file = file_info(paths.queries, queries=len(qids))
    paths.pool_meta = write_pool(pool, paths.pool)
    fetched = fetch_docs([paths.corpus], {p.docid for p in pool.pairs})
    result = DemoResult(data=data, sample=sample, pool=pool, fetched=fetched)
    paths.machine = write_machine_judge(result, seed=seed)
    return result


# --------------------------------------------------------------------------------------------
# The demo project in a judging store: two judges and a lead, an overlap set, ready to serve

DEMO_JUDGES, DEMO_LEAD, DEMO_OVERLAP, DEMO_PROJECT = ("alice", "bob"), "lena", 60, "demo"


@dataclass
class DemoStore:
    path: Path  # the SQLite file
    url: str
    project: str
    logins: list[tuple[str, str, str]]  # (name, role, password)
    assigned: object  # curation.judge.assignment.AssignReport
    machine: object = None  # curation.machine.labels.MachineImportReport: the simulated machine judge


def load_demo_store(result: DemoResult, *, seed: int = 0, overlap: int = DEMO_OVERLAP) -> DemoStore:
    """Load the demo project into a new SQLite store ``golden.db`` in the demo folder: the sampled
    queries, the pool with its hidden provenance, the pooled documents and the guidelines (0-2
    scale); add the judges ``DEMO_JUDGES`` and the lead ``DEMO_LEAD`` with random passwords; assign
    the pool with an overlap set of ``overlap`` pairs (main pairs held until the lead releases them).

    The store is built under a temporary name and renamed into place, so an earlier demo's store is
    replaced whole or not at all."""
    from curation.judge import assignment
    from curation.store import projects, users
    from curation.store.engine import make_engine, session
    from curation.store.migrate import upgrade

    paths = result.data.paths
    final = paths.folder / "golden.db"
    tmp = paths.folder / f".golden.db.{os.getpid()}.tmp"
    for stale in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
        stale.unlink(missing_ok=True)
    engine = make_engine(f"sqlite:///{tmp.resolve()}")
    try:
        upgrade(engine)
        with session(engine) as db:
            projects.create_project(
                db, DEMO_PROJECT, queries_path=paths.queries, pool_path=paths.pool, corpus_paths=[paths.corpus],
                guidelines_path=paths.guidelines, scale="0-2", allow_missing=bool(result.fetched.missing),
            )
            logins = []
            for name, role in [(j, "judge") for j in DEMO_JUDGES] + [(DEMO_LEAD, "lead")]:
                password = users.generate_password()  # secrets, not the seed: a password is never reproducible
                users.add_user(db, name, role=role, password=password)
                logins.append((name, role, password))
            project = projects.get_project(db, DEMO_PROJECT)
            report = assignment.assign(db, project, list(DEMO_JUDGES), overlap=overlap, seed=seed)
            machine = None
            if paths.machine is not None:
                from curation.machine.labels import import_machine_labels

                machine = import_machine_labels(db, paths.machine, machine=DEMO_MACHINE, project=DEMO_PROJECT)
        with engine.connect() as conn:  # fold the WAL into the file before it is renamed
            conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    except BaseException:
        engine.dispose()
        for stale in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
            stale.unlink(missing_ok=True)
        raise
    engine.dispose()
    for stale in (Path(f"{final}-wal"), Path(f"{final}-shm"), Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
        stale.unlink(missing_ok=True)
    os.replace(tmp, final)
    return DemoStore(path=final, url=f"sqlite:///{final.resolve()}", project=DEMO_PROJECT, logins=logins,
                     assigned=report, machine=machine)
