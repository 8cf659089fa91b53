"""The leak check's driver: :func:`leakcheck` checks the options, plans the corpus pieces, runs
:func:`curation.leak.scan.scan_task` over them (one process, a process pool or a Dask cluster),
merges the results and decides each query's status. The method is described in
:mod:`curation.leak.scan`."""

from __future__ import annotations

import heapq
import os
import time
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

import numpy as np

from curation.formats.fileio import no_records
from curation.leak.index import QueryIndex
from curation.leak.inputs import plan_tasks
from curation.leak.ngrams import NgramSpec, gram_text, ngram_set, parse_ngram
from curation.leak.report import MODES, LeakReport, QueryResult
from curation.leak.scan import finish_matches, scan_task

_MIN_CHAR_CONTAINMENT = 5
_SMALL_CORPUS = 8 << 20  # bytes on disk under which one process scans everything
_BYTES_PER_WORKER = 64 << 20  # by default, a process more only for each such share of the corpus


def _check_options(modes, threshold, spec: NgramSpec, boilerplate_share, workers, max_matches):
    modes = tuple(dict.fromkeys(modes))
    if not modes:
        raise ValueError("modes: give at least one of " + ", ".join(MODES))
    for m in modes:
        if m not in MODES:
            raise ValueError(f"modes: unknown mode {m!r}; use one or more of " + ", ".join(MODES))
    if not (isinstance(threshold, (int, float)) and 0 < threshold <= 1):
        raise ValueError(f"threshold: must be in (0, 1], got {threshold!r}")
    if spec.unit == "char" and spec.n < _MIN_CHAR_CONTAINMENT and "containment" in modes:
        raise ValueError(
            f"ngram: character {spec.n}-grams against long chunks mostly match noise (almost any page "
            f"holds every short letter sequence); use char:{_MIN_CHAR_CONTAINMENT} or more, or word:3, "
            "for containment"
        )
    if not 0 < boilerplate_share <= 1:
        raise ValueError(f"boilerplate_share: must be in (0, 1], got {boilerplate_share!r}")
    if workers is not None and workers < 1:
        raise ValueError(f"workers: must be at least 1, got {workers!r}")
    if max_matches < 1:
        raise ValueError(f"max_matches: must be at least 1, got {max_matches!r}")
    return modes


def _available_cores() -> int:
    """Cores this process may run on (its CPU affinity where the OS tells it, else all)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def default_workers(corpus_bytes: int) -> int:
    """The processes to scan with when not told: one per core this process may run on (its CPU
    affinity) that the machine's load leaves idle (cores less the 1-minute load average, rounded),
    at most one per 64 MB of corpus, and at least one. A second process only pays for its start and
    merge when it gets a core of its own: on a busy machine the processes share the same CPU time,
    and one process scans fastest."""
    cores = _available_cores()
    try:
        idle = round(cores - os.getloadavg()[0])
    except (AttributeError, OSError):  # no load average on this system
        idle = cores
    return max(1, min(cores, idle, corpus_bytes // _BYTES_PER_WORKER))


def _mp_context():
    """``fork`` where it is safe (POSIX, no other thread alive yet): workers start at once with
    everything imported. Otherwise ``forkserver``/``spawn``, whose workers re-import the program."""
    import multiprocessing as mp
    import threading

    methods = mp.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        return mp.get_context("fork")
    if "forkserver" in methods:
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(["curation.leak.scan"])
        return ctx
    return mp.get_context("spawn")


def _run_map(tasks, index, *, workers, dask, batch_size, max_matches, progress, desc, floors=dict):
    """Run :func:`scan_task` over the tasks and yield results as they finish; ``floors()`` gives the
    merged results' floors (:meth:`_Scanned.floors`) when a piece is sent."""
    bar = None

    def make_bar():
        # Made once the workers are up: tqdm's monitor thread must not exist when the pool forks.
        if not progress:
            return None
        from tqdm import tqdm

        return tqdm(desc=desc, unit=" chunks", unit_scale=True, smoothing=0.1, leave=True, dynamic_ncols=True)

    try:
        if dask:
            bar = make_bar()
            try:
                from distributed import Client
                from distributed import as_completed as dask_completed
            except ImportError:
                raise ValueError("dask: the Dask scan needs dask.distributed: pip install 'golden[dask]'") from None

            if isinstance(dask, str):
                try:
                    client = Client(dask, timeout="20s")
                except (OSError, TimeoutError) as exc:
                    raise ValueError(f"dask: cannot reach the scheduler at {dask!r} ({exc})") from None
            else:
                client = dask
            try:
                [shared] = client.scatter([index], broadcast=True)
                futures = client.map(
                    scan_task, tasks, index=shared, batch_size=batch_size, max_matches=max_matches, pure=False
                )
                for fut in dask_completed(futures):
                    res = fut.result()
                    if bar is not None:
                        bar.update(res.chunks)
                    yield res
            finally:
                if isinstance(dask, str):
                    client.close()
        elif workers == 1 or len(tasks) <= 1:
            # In this process: the kept matches get their span once all pieces are merged (finish_matches).
            bar = make_bar()
            for task in tasks:
                res = scan_task(task, index, batch_size=batch_size, max_matches=max_matches, floors=floors(),
                                finish=False)
                if bar is not None:
                    bar.update(res.chunks)
                yield res
        else:
            # A few pieces in flight at a time, each sent with the merged results' floors so far.
            with ProcessPoolExecutor(max_workers=workers, mp_context=_mp_context()) as pool:
                todo, running = iter(tasks), set()

                def submit() -> None:
                    task = next(todo, None)
                    if task is not None:
                        running.add(pool.submit(scan_task, task, index, batch_size=batch_size,
                                                max_matches=max_matches, floors=floors()))

                for _ in range(2 * workers):
                    submit()
                bar = make_bar()
                while running:
                    done, running = wait(running, return_when=FIRST_COMPLETED)
                    for fut in done:
                        res = fut.result()
                        if bar is not None:
                            bar.update(res.chunks)
                        yield res  # merged by the caller before the next piece is sent
                        submit()
    finally:
        if bar is not None:
            bar.close()


def leakcheck(
    queries: Sequence[tuple[str, str]],
    corpus: Sequence[str | os.PathLike],
    *,
    modes: Sequence[str] = MODES,
    threshold: float = 0.85,
    ngram: str | NgramSpec = "word:3",
    workers: int | None = None,
    dask=None,
    boilerplate_share: float = 0.05,
    discount_boilerplate: bool = False,
    max_matches: int = 100,
    batch_size: int = 1024,
    progress: bool = False,
) -> LeakReport:
    """Compare every query with every chunk of the corpus files; see the module docstring.

    ``queries`` are ``(qid, text)`` pairs; ``corpus`` files are JSONL, TSV or Parquet (gzip for
    the text forms). A query with no n-gram (fewer than ``n`` words or characters after
    normalisation) is reported ``too_short`` unless ``exact`` finds a chunk equal to it. A query
    n-gram held by at least ``boilerplate_share`` of the chunks is reported as boilerplate; with
    ``discount_boilerplate`` it is left out of the query's and every chunk's set (two passes).
    ``workers`` processes (default: :func:`default_workers`) scan the tasks of :func:`plan_tasks`; ``dask``
    (a scheduler address or a ``distributed.Client``) runs the same map on a Dask cluster, whose
    workers must see the corpus files at the same paths. Each query keeps its ``max_matches``
    best matches (all are counted).
    """
    spec = parse_ngram(ngram)
    modes = _check_options(modes, threshold, spec, boilerplate_share, workers, max_matches)
    queries = [(str(q), str(t)) for q, t in queries]
    if len({q for q, _ in queries}) != len(queries):
        raise ValueError("queries: qids must be unique")
    tasks = plan_tasks(corpus)
    corpus_bytes = sum(os.path.getsize(p) for p in {t.path for t in tasks})
    workers = workers or default_workers(corpus_bytes)
    if dask is None and corpus_bytes < _SMALL_CORPUS:
        workers = 1  # starting processes would cost more than the scan
    t0 = time.perf_counter()
    run = dict(workers=workers, dask=dask, batch_size=batch_size, max_matches=max_matches, progress=progress)

    skip: frozenset = frozenset()
    if discount_boilerplate:
        skip, first_df = _boilerplate_pass(queries, spec, modes, threshold, tasks, boilerplate_share, run)

    index = QueryIndex(queries, spec=spec, modes=modes, threshold=threshold, skip=skip)
    scanned = _Scanned(index.G, {str(c): 0 for c in corpus})
    for res in _run_map(tasks, index, desc="leak check", floors=lambda: scanned.floors(max_matches), **run):
        scanned.add(res, max_matches)
    finish_matches(index, scanned.heaps)
    scanned.check(corpus)
    chunks = scanned.chunks
    ids_repeat = _any_repeat(scanned.id_parts)
    if discount_boilerplate:
        gram_df = first_df
    else:
        gram_df = {index.grams[g]: int(scanned.df[g]) for g in range(index.G)}
    limit = boilerplate_share * max(chunks, 1)
    common = sorted(
        ((gram_text(g, spec), c) for g, c in gram_df.items() if chunks and c >= limit), key=lambda x: (-x[1], x[0])
    )
    common_set = {g for g, _ in common}
    results = [_query_result(index, spec, scanned, common_set, qi, qid, text) for qi, (qid, text) in enumerate(queries)]
    return LeakReport(
        queries=results,
        modes=modes,
        threshold=float(threshold),
        ngram=str(spec),
        chunks=chunks,
        seconds=time.perf_counter() - t0,
        boilerplate=common,
        boilerplate_share=boilerplate_share,
        discounted=discount_boilerplate,
        tasks=len(tasks),
        processes=len(scanned.pids),
        ids_repeat=ids_repeat,
    )


def _boilerplate_pass(queries, spec: NgramSpec, modes, threshold: float, tasks, share: float, run: dict
                      ) -> tuple[frozenset, dict]:
    """The first of two passes (``discount_boilerplate``): the query n-grams held by at least
    ``share`` of the chunks, to leave out, and every query n-gram's chunk count."""
    counting = QueryIndex(queries, spec=spec, modes=modes, threshold=threshold, count_only=True)
    df = np.zeros(counting.G, dtype=np.int64)
    chunks = 0
    for res in _run_map(tasks, counting, desc="counting n-grams", **run):
        df += res.df
        chunks += res.chunks
    limit = share * max(chunks, 1)
    skip = frozenset(counting.grams[g] for g in np.flatnonzero(df >= limit).tolist()) if chunks else frozenset()
    return skip, {counting.grams[g]: int(df[g]) for g in range(counting.G)}


class _Scanned:
    """The scan's results merged task by task: chunk counts (per file too), n-gram chunk counts,
    each query's best matches (a min-heap of ``max_matches``) and match count, the chunk ids
    read and the processes that ran."""

    def __init__(self, grams: int, per_file: dict[str, int]) -> None:
        self.df = np.zeros(grams, dtype=np.int64)
        self.chunks = 0
        self.heaps: dict[int, list] = {}
        self.n_matches: dict[int, int] = {}
        self.pids: set = set()
        self.any_chunk = False
        self.per_file = per_file
        self.id_parts: list = []

    def add(self, res, max_matches: int) -> None:
        self.any_chunk = self.any_chunk or res.chunks > 0
        self.pids.add(res.pid)
        self.chunks += res.chunks
        self.per_file[res.path] = self.per_file.get(res.path, 0) + res.chunks
        if res.ids is not None and len(res.ids):
            self.id_parts.append(res.ids)
        self.df += res.df
        for qi, items in res.matches.items():
            heap = self.heaps.setdefault(qi, [])
            for item in items:
                if len(heap) < max_matches:
                    heapq.heappush(heap, item)
                else:
                    heapq.heappushpop(heap, item)
        for qi, n in res.n_matches.items():
            self.n_matches[qi] = self.n_matches.get(qi, 0) + n

    def floors(self, max_matches: int) -> dict:
        """Each query's least kept item's key where its heap is full: a match below it is only counted."""
        return {qi: heap[0][:4] for qi, heap in self.heaps.items() if len(heap) >= max_matches}

    def check(self, corpus) -> None:
        """``no records`` for a corpus without a document, or naming a file without one."""
        if not self.any_chunk:  # an empty corpus would report every query clean
            raise no_records(", ".join(dict.fromkeys(str(c) for c in corpus)), "the corpus holds no document")
        empty = [p for p, n in self.per_file.items() if n == 0]
        if empty:  # as the corpus reader says of a file without a document
            raise no_records(empty[0], "expected one document a line with id and text")


def _query_result(index: QueryIndex, spec: NgramSpec, scanned: _Scanned, common_set: set, qi: int, qid: str,
                  text: str) -> QueryResult:
    """Query ``qi``'s verdict: its best matches (a leak), too short (no n-gram left), or clean."""
    items = sorted(scanned.heaps.get(qi, []), reverse=True)
    matches = [it[-1].match for it in items]
    by_mode: dict[str, int] = {}
    for m in matches:
        by_mode[m.mode] = by_mode.get(m.mode, 0) + 1
    size = int(index.sizes[qi])
    full = ngram_set(index.norms[qi], spec)
    bp = sorted(gram_text(g, spec) for g in full if gram_text(g, spec) in common_set)
    if matches:
        status, reason = "leak", None
    elif size == 0:
        status = "too_short"
        reason = (
            f"all {len(full)} of its {spec} n-grams are boilerplate (discounted)"
            if full
            else f"fewer than {spec.n} {'words' if spec.unit == 'word' else 'characters'} after normalisation"
        )
    else:
        status, reason = "clean", None
    return QueryResult(qid, text, status, size, bp, matches, scanned.n_matches.get(qi, 0), by_mode, reason)


def _any_repeat(id_parts) -> bool:
    """True when some chunk id occurs twice among the scanned pieces' ids (string arrays)."""
    if not id_parts:
        return False
    import pyarrow as pa
    import pyarrow.compute as pc

    ids = pa.chunked_array(id_parts, pa.string())
    return len(pc.unique(ids)) < len(ids)
