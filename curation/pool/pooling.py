"""Depth-k pooling of candidate systems' runs into one blind judging pool (``golden pool``).

The pool of a query is the union of every run's first ``depth`` documents, each run ordered the
way trec_eval orders it (score descending, ties by docid descending, the rank column ignored; see
:mod:`curation.formats.runs`), so the pool holds exactly the documents a depth-k metric will later see.
This is the TREC pooling method (Sparck Jones & van Rijsbergen 1975; Voorhees & Harman,
*TREC: Experiment and Evaluation in Information Retrieval*, 2005, ch. 2).

Each pair gets an ``order``: its position in the judging queue of its query, a seeded
pseudo-random permutation, so no system's ranking shows through. The order of a document is the
rank of ``SHA-256(seed, qid, docid)`` among the query's documents: it needs no random-number
generator whose stream could change between library versions, and a document's place relative to
another never depends on which other documents are in the pool.

``systems`` maps each run that retrieved the document in its top ``depth`` to the 1-based rank
there. It is for engineers (pool analysis); the judging interface never shows it.

Library entry points::

    from curation.formats.runs import read_runs
    from curation.pool.pooling import make_pool, write_pool

    runs = read_runs(["a.trec.gz", "b.trec.gz"], depth=20)
    pool = make_pool(runs, depth=20, seed=7)
    write_pool(pool, "pool.jsonl")          # and pool.meta.json beside it
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path

import numpy as np

from curation import __version__
from curation.formats.fileio import sha256_file
from curation.formats.pool_file import POOL_FORMAT, PoolEntry, write_pool_file
from curation.formats.runs import RankedRun

ORDERING = "trec_eval: score descending, ties by docid descending, rank column ignored"


@dataclass(frozen=True)
class RunInfo:
    name: str
    path: str
    sha256: str
    queries: int  # queries the run has results for (after --queries)


@dataclass
class PoolStats:
    """What a person needs to judge the pool's size and how correlated the runs are."""

    runs: int
    depth: int
    queries: int  # queries with at least one pooled document
    pairs: int
    per_query_min: int
    per_query_median: float
    per_query_max: int
    ceiling: int  # runs x depth: the pool size of one query if the runs shared nothing
    #: (run a, run b, documents of the pair's top-``depth`` lists they share, summed over queries,
    #: and its mean per pooled query)
    overlap: list[tuple[str, str, int, float]]


@dataclass
class Pool:
    pairs: list[PoolEntry]  # the pairs to write: all of them, or only the new ones when extending
    depth: int
    seed: int
    runs: list[RunInfo]
    stats: PoolStats  # over the pool the given runs make (before removing already pooled pairs)
    qids: list[str]  # pooled queries, in output order
    skipped_qids: list[str] = field(default_factory=list)  # in runs, not in the query list
    empty_qids: list[str] = field(default_factory=list)  # in the query list, no run has results
    already_pooled: int = 0  # pairs found in the pool being extended (not written again)
    queries_file: dict | None = None
    extends: dict | None = None


def qid_sort_key(qid: str):
    """Numbers in numeric order, then other ids in string order: ``2 < 10 < q1``."""
    return (0, int(qid), qid) if qid.isdigit() else (1, 0, qid)


def _median(values: list[int]) -> float | int:
    """The median as ``statistics.median`` gives it (the middle value, or the mean of the two
    middle ones), without importing statistics (and fractions and decimal) for it."""
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def order_key(seed: int, qid: str, docid: str) -> bytes:
    """The sort key behind a pair's ``order``: SHA-256 of the seed, qid and docid (:func:`_order_keys`)."""
    return _order_keys(seed, qid, [docid])[docid]


def _order_keys(seed: int, qid: str, docids: list[str]) -> dict[str, bytes]:
    """The rule of :func:`order_key` for each of ``docids`` (of one query), by docid: SHA-256 of
    ``f"{seed}\\x00{qid}\\x00{docid}"`` in UTF-8, the seed's and query's bytes encoded once (UTF-8 of a
    concatenation is the concatenation of the parts')."""
    sha256 = hashlib.sha256
    prefix = f"{seed}\x00{qid}\x00".encode()
    return {d: sha256(prefix + d.encode()).digest() for d in docids}


def make_pool(
    runs: Sequence[RankedRun],
    *,
    depth: int,
    seed: int,
    qids: Sequence[str] | None = None,
    existing: Iterable[PoolEntry] | None = None,
) -> Pool:
    """Pool the first ``depth`` documents of each run for each query.

    ``runs`` must already be in trec_eval order (as :func:`curation.formats.runs.read_run` gives them).
    ``qids``, when given, restricts the pool to those queries, in that order; queries of the runs
    not in it are skipped and listed in ``Pool.skipped_qids``. ``existing`` is a pool being
    extended: its pairs are left out of ``Pool.pairs`` and the new pairs of each query are
    ordered after its existing ones, so the old pairs keep their order.
    """
    _check_pool_arguments(runs, depth, seed)
    wanted, skipped = _wanted_qids(runs, qids)
    old_order: dict[str, dict[str, int]] = {}
    if existing is not None:
        for p in existing:
            old_order.setdefault(p.qid, {})[p.docid] = p.order

    pairs: list[PoolEntry] = []
    pooled_qids: list[str] = []
    empty: list[str] = []
    sizes: list[int] = []
    already = 0
    # Which runs retrieved each pooled pair (pair numbers, one list per run); the documents two runs
    # share, summed over queries, are then one product of the incidence matrix (pairs x runs).
    hits: list[list[int]] = [[] for _ in runs]
    n_pooled = 0
    new_entry = PoolEntry.new  # the entries of a pool are built by the thousand
    for qid in wanted:
        systems, tops = _query_systems(runs, qid, depth)
        if not systems:
            empty.append(qid)
            continue
        pooled_qids.append(qid)
        sizes.append(len(systems))
        number = {docid: i for i, docid in enumerate(systems, n_pooled)}
        for found, top in zip(hits, tops):
            found.extend([number[d] for d in top])
        n_pooled += len(systems)
        old = old_order.get(qid, {})
        new_docs = [d for d in systems if d not in old] if old else list(systems)
        already += len(systems) - len(new_docs)
        new_docs.sort(key=_order_keys(seed, qid, new_docs).__getitem__)
        start = max(old.values(), default=0)
        pairs.extend([new_entry(qid, docid, i, systems[docid]) for i, docid in enumerate(new_docs, start + 1)])
    # In floating point, through BLAS: 0.3 against 4.4 ms for numpy's own integer loop (11,235 pairs x
    # 17 runs, one BLAS thread as `golden pool` starts it), on the command's serial tail. Exact: each
    # entry is a count of 0/1 products, at most the number of pairs, far below 2**53.
    incidence = np.zeros((n_pooled, len(runs)), dtype=np.float64)
    incidence[np.concatenate([np.array(h, dtype=np.intp) for h in hits]),
              np.repeat(np.arange(len(runs)), [len(h) for h in hits])] = 1.0
    shared = (incidence.T @ incidence).astype(np.int64)
    stats = _pool_stats(runs, depth, len(pooled_qids), sizes, shared)
    infos = [RunInfo(r.name, r.path, r.sha256, sum(1 for q in pooled_qids if r.rankings.get(q))) for r in runs]
    return Pool(
        pairs=pairs,
        depth=depth,
        seed=seed,
        runs=infos,
        stats=stats,
        qids=pooled_qids,
        skipped_qids=skipped,
        empty_qids=empty,
        already_pooled=already,
    )


def _check_pool_arguments(runs: Sequence[RankedRun], depth: int, seed: int) -> None:
    """ValueError naming what is wrong with the pool's depth, seed or runs (none, two of one name,
    one read less deep than the pool)."""
    if not isinstance(depth, int) or isinstance(depth, bool) or depth < 1:
        raise ValueError(f"depth must be a positive integer, not {depth!r}")
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise ValueError(f"seed must be an integer, not {seed!r}")
    if not runs:
        raise ValueError("runs must hold at least one run")
    names = [r.name for r in runs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        paths = [r.path for r in runs if r.name in dupes]
        raise ValueError(
            f"runs: several runs are named {', '.join(map(repr, dupes))} ({', '.join(paths)}); "
            "name them apart with NAME=PATH"
        )
    for r in runs:
        if r.depth is not None and r.depth < depth:
            raise ValueError(f"run {r.name!r} was read to depth {r.depth}, less than the pool depth {depth}")


def _wanted_qids(runs: Sequence[RankedRun], qids: Sequence[str] | None) -> tuple[list[str], list[str]]:
    """The queries to pool, in order (``qids`` when given, else every query of the runs in qid
    order), and the runs' queries left out, sorted."""
    run_qids: set[str] = set()
    for r in runs:
        run_qids.update(r.rankings)
    if qids is None:
        return sorted(run_qids, key=qid_sort_key), []
    wanted = list(dict.fromkeys(qids))
    return wanted, sorted(run_qids - set(wanted), key=qid_sort_key)


def _query_systems(runs: Sequence[RankedRun], qid: str, depth: int) -> tuple[dict[str, dict[str, int]], list]:
    """``{docid: {run name: rank}}`` of the first ``depth`` documents of each run for ``qid``, in
    the order the runs first retrieve them; and each run's first ``depth`` docids (a list a run)."""
    systems: dict[str, dict[str, int]] = {}
    tops = []
    for r in runs:
        top = r.rankings.get(qid, ())[:depth]
        tops.append(top)
        name = r.name
        for rank, docid in enumerate(top, 1):
            got = systems.get(docid)
            if got is None:
                systems[docid] = {name: rank}
            else:
                got[name] = rank
    return systems, tops


def _pool_stats(runs: Sequence[RankedRun], depth: int, n_q: int, sizes: list[int], shared: np.ndarray) -> PoolStats:
    """The pool's figures: its size per query, and for each two runs the documents they share
    (``shared``, runs x runs, summed over the ``n_q`` pooled queries)."""
    return PoolStats(
        runs=len(runs),
        depth=depth,
        queries=n_q,
        pairs=sum(sizes),
        per_query_min=min(sizes, default=0),
        per_query_median=_median(sizes) if sizes else 0,
        per_query_max=max(sizes, default=0),
        ceiling=len(runs) * depth,
        overlap=[
            (runs[a].name, runs[b].name, int(shared[a, b]), int(shared[a, b]) / n_q if n_q else 0.0)
            for a, b in combinations(range(len(runs)), 2)
        ],
    )


# --------------------------------------------------------------------------------------------
# Files: the pool (JSONL), its metadata (JSON beside it), and query lists


def pool_metadata(pool: Pool, pool_path: str | os.PathLike) -> dict:
    """The facts a later step needs about how the pool was made (``golden project create``).

    Paths are relative to the folder of the pool file when they can be, so a folder holding runs
    and pool can be moved as a whole.
    """
    folder = Path(pool_path).resolve().parent

    def rel(path: str) -> str:
        try:
            return os.path.relpath(Path(path).resolve(), folder)
        except ValueError:  # another drive on Windows
            return str(Path(path).resolve())

    def with_rel(info: dict | None) -> dict | None:
        return None if info is None else {**info, "path": rel(info["path"])}

    return {
        "format": POOL_FORMAT,
        "created_by": f"golden {__version__}",
        "depth": pool.depth,
        "seed": pool.seed,
        "ordering": ORDERING,
        "order": "rank of sha256(seed, qid, docid) within the query, after any existing pairs",
        "runs": [{"name": r.name, "path": rel(r.path), "sha256": r.sha256, "queries": r.queries} for r in pool.runs],
        "queries_file": with_rel(pool.queries_file),
        "extends": with_rel(pool.extends),
        "pairs": len(pool.pairs),
        "queries": len({p.qid for p in pool.pairs}),
        "skipped_qids": pool.skipped_qids,
        "queries_without_results": pool.empty_qids,
    }


def write_pool(pool: Pool, path: str | os.PathLike) -> Path:
    """Write ``pool.pairs`` as ``pool.jsonl`` and its metadata beside it, both whole or neither
    (:func:`curation.formats.pool_file.write_pool_file`). Returns the metadata path."""
    return write_pool_file(pool.pairs, pool_metadata(pool, path), path)


def file_info(path: str | os.PathLike, **extra) -> dict:
    """``{"path", "sha256", ...}`` for the metadata of an input file."""
    return {"path": str(path), "sha256": sha256_file(path), **extra}
