"""``golden pool``: candidate systems' runs -> one blind judging pool."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager

import click

from curation.cli.base import checked_paths, domain_errors, main, pool_files, run_files, seed_option


def _split_run_arg(arg: str) -> tuple[str | None, str]:
    """``PATH`` or ``NAME=PATH`` -> (name or None, path)."""
    if os.path.exists(arg):
        return None, arg
    name, sep, path = arg.partition("=")
    if sep and name and os.path.exists(path):
        return name, path
    raise click.BadParameter(f"{arg}: no such run file", param_hint="RUN")


@contextmanager
def _no_cyclic_gc():
    """Python's cyclic garbage collector paused for the command: importing numpy and pyarrow and
    building the pool make many objects and no cycles to speak of, and the collections it would run
    cost ~7% of a `golden pool` of the 17 robust03 runs (perf). Restored afterwards.

    The interpreter's last full collection, as the process ends, would still walk every object
    left (numpy's and pyarrow's modules): the objects alive then are moved out of its sight
    (``gc.freeze``, at exit only, so in-process callers keep a collector that sees everything).
    That was two thirds of the time the process took to end (0.10 -> 0.03 s of CPU at load 12)."""
    import atexit
    import gc

    atexit.unregister(gc.freeze)  # registered once, however many commands a process runs
    atexit.register(gc.freeze)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# mallopt's parameters (glibc's malloc.h) and the values golden pool sets.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_KEEP_BYTES = 256 << 20


@contextmanager
def _reuse_freed_memory():
    """glibc's malloc told (mallopt, through ctypes) to keep freed memory for reuse instead of giving
    it back to the system: reading a run allocates and frees buffers of megabytes, and by default
    each one is a fresh mmap whose pages fault in one by one (~5 us each in a virtual machine): a
    sixth of the CPU time of a `golden pool` of the 17 robust03 runs (perf stat). Afterwards the
    default thresholds are set back (128 KiB; glibc then no longer adapts them). Elsewhere than
    glibc, nothing is done."""
    try:
        import ctypes

        mallopt = ctypes.CDLL(None).mallopt
    except (AttributeError, OSError, ImportError):
        yield
        return
    mallopt(_M_MMAP_THRESHOLD, _KEEP_BYTES)
    mallopt(_M_TRIM_THRESHOLD, _KEEP_BYTES)
    try:
        yield
    finally:
        mallopt(_M_MMAP_THRESHOLD, 128 << 10)
        mallopt(_M_TRIM_THRESHOLD, 128 << 10)


@contextmanager
def _one_blas_thread():
    """Importing numpy here starts OpenBLAS with one thread instead of one per core: pooling does
    no floating-point linear algebra, and starting the threads cost 0.06 s of a 1 s `golden pool`
    (CPU and wall clock, measured). The environment is restored afterwards; a numpy already
    imported (tests, `golden demo`) is left as it is."""
    if "numpy" in sys.modules:
        yield
        return
    before = os.environ.get("OPENBLAS_NUM_THREADS")
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        yield
    finally:
        if before is None:
            del os.environ["OPENBLAS_NUM_THREADS"]
        else:
            os.environ["OPENBLAS_NUM_THREADS"] = before


def _fmt_num(x: float) -> str:
    return f"{x:g}" if isinstance(x, float) and not x.is_integer() else f"{int(x):,}"


def _overlap_table(stats) -> list[str]:
    """Mean top-k documents shared per query, as a lower-triangular matrix of run numbers."""
    names = []
    for a, b, _, _ in stats.overlap:
        for n in (a, b):
            if n not in names:
                names.append(n)
    mean = {}
    for a, b, _, m in stats.overlap:
        mean[(a, b)] = mean[(b, a)] = m
    width = max(len(n) for n in names)
    lines = [" " * (width + 6) + "".join(f"{j:>6}" for j in range(1, len(names)))]
    for i, n in enumerate(names, 1):
        if i == 1:
            continue
        cells = "".join(f"{mean[(n, names[j])]:6.1f}" for j in range(i - 1))
        lines.append(f"  {i:>2} {n:<{width}} {cells}")
    lines.insert(1, f"   1 {names[0]}")
    return lines


@main.command("pool")
@click.argument("runs", nargs=-1, required=True, metavar="RUN...")
@click.option(
    "--queries",
    type=click.Path(exists=True, allow_dash=True, dir_okay=False),
    help="Pool only these queries (queries.jsonl, or .txt with one qid a line); other qids are skipped and counted.",
)
@click.option("--depth", type=click.IntRange(min=1), default=20, show_default=True, help="Top-k of each run to pool.")
@seed_option
@click.option(
    "--extend",
    type=click.Path(exists=True, allow_dash=True, dir_okay=False),
    help="An existing pool: write only the pairs it lacks, ordered after its own (which keep their order).",
)
@click.option("--out", required=True, type=click.Path(dir_okay=False), help="Pool file to write (JSONL).")
@domain_errors
@checked_paths(inputs=[("runs", run_files), "queries", ("extend", pool_files)], outputs=[("out", pool_files)])
def pool_cmd(runs, queries, depth, seed, extend, out):
    """Pool the top DEPTH documents of each RUN into one blind judging pool.

    Each RUN is a TREC run file (`qid Q0 docid rank score tag`, gzip allowed) or JSONL
    (`{"qid", "docid", "score"}`); write NAME=PATH to name a run yourself (else its tag).
    Documents are ordered as trec_eval orders them: score descending, ties broken by
    docid descending, the rank column ignored. So the pool holds exactly the documents
    that a depth-DEPTH metric will later see.

    Each output line has qid, docid, order (a seeded shuffle within the query, so no
    system's ranking shows through) and systems (run name -> rank; for engineers only,
    never shown to judges). The pool's metadata (depth, seed, runs with their sha256)
    goes to POOL.meta.json beside it. A bad line stops the command with its file and
    line, and nothing is written.

    \b
    Example:
      golden pool runs/*.trec.gz --queries queries.jsonl --depth 20 --seed 7 --out pool.jsonl
      golden pool new=runs/new.trec --extend pool.jsonl --depth 20 --out pool-new.jsonl
    """
    with _no_cyclic_gc(), _reuse_freed_memory():
        _pool(runs, queries, depth, seed, extend, out)


def _pool(runs, queries, depth, seed, extend, out):
    # Imported here, not at the top: `golden --help` and the other commands need none of it. numpy and
    # pyarrow are imported by read_runs, while its threads load the first runs; the pool's modules
    # after it, and the readers of --queries and --extend only when they are given.
    from curation.formats.runs import read_runs

    parsed = [_split_run_arg(a) for a in runs]
    qids = existing = None
    if queries or extend:
        from curation.formats.conflicts import Dedup
    if queries:
        from curation.formats.queries import read_query_ids

        query_dedup = Dedup(queries, what="qid")
        qids = read_query_ids(queries, dedup=query_dedup)
        if query_dedup.summary():
            click.echo(query_dedup.summary())
    if extend:
        from curation.formats.pool_file import read_pool, read_pool_meta

        pool_dedup = Dedup(extend, what="pair")
        existing = read_pool(extend, dedup=pool_dedup)
        if pool_dedup.summary():
            click.echo(pool_dedup.summary())
        old_depth = read_pool_meta(extend).get("depth")
        if isinstance(old_depth, int) and old_depth != depth:
            raise click.ClickException(
                f"{extend} was pooled at depth {old_depth}: extend it with --depth {old_depth}, "
                f"or pool all the runs again at depth {depth}"
            )
    bar = None
    if sys.stderr.isatty():  # a bar for people; scripts and pipes neither see it nor import tqdm
        from tqdm import tqdm

        tqdm.monitor_interval = 0  # no monitor thread: nothing to watch in a command this short
        bar = tqdm(total=len(parsed), desc="reading runs", unit="run", file=sys.stderr)

    def progress(_):
        # From the first run read on: the others are still being parsed in read_runs' threads, and this thread
        # only waits for them, so the pool's modules are imported now rather than after the last one.
        import curation.pool.pooling  # noqa: F401 - imported for the import's cost, paid while parsing

        if bar is not None:
            bar.update()

    try:
        with _one_blas_thread():  # read_runs imports numpy
            run_list = read_runs([p for _, p in parsed], names=[n for n, _ in parsed], depth=depth,
                                 progress=progress)
    finally:
        if bar is not None:
            bar.close()
    from curation.pool.pooling import file_info, make_pool, write_pool

    for run in run_list:
        if run.summary():
            click.echo(run.summary())
    pool = make_pool(run_list, depth=depth, seed=seed, qids=qids, existing=existing)
    if queries:
        pool.queries_file = file_info(queries, queries=len(qids))
    if extend:
        pool.extends = file_info(extend, pairs=len(existing))
    meta = write_pool(pool, out)

    for line in pool_summary(pool, queries=queries, extend=extend):
        click.echo(line)
    click.echo(f"Wrote {out} ({len(pool.pairs):,} pairs) and {meta}.")


def pool_summary(pool, *, queries: str | None = None, extend: str | None = None) -> list[str]:
    """The lines `golden pool` prints about a pool: sizes, ceiling, skipped queries, overlap."""
    st = pool.stats
    depth = pool.depth
    runs = f"{st.runs} run" + ("s" if st.runs != 1 else "")
    lines = [
        f"Pooled {st.queries:,} queries from {runs} at depth {depth}: {st.pairs:,} pairs.",
        f"  pairs per query: min {st.per_query_min}, median {_fmt_num(float(st.per_query_median))}, "
        f"max {st.per_query_max}; ceiling {runs} x {depth} = {st.ceiling}",
    ]
    if queries:
        lines.append(f"  {len(pool.skipped_qids):,} queries of the runs are not in {queries}: skipped")
        if pool.empty_qids:
            shown = ", ".join(pool.empty_qids[:5]) + (" ..." if len(pool.empty_qids) > 5 else "")
            lines.append(f"  {len(pool.empty_qids):,} queries of {queries} have no results in any run: {shown}")
    partial = [f"{r.name} ({r.queries:,} of {st.queries:,})" for r in pool.runs if r.queries < st.queries]
    if partial:
        lines.append(f"  runs with results for only some of the pooled queries: {', '.join(partial)}")
    if st.runs > 1:
        lines.append(f"Top-{depth} documents two runs share, mean per query (max {depth}):")
        lines.extend(_overlap_table(st))
    if extend:
        lines.append(f"{pool.already_pooled:,} of these pairs are already in {extend}; {len(pool.pairs):,} are new.")
    return lines

__all__ = ["pool_cmd", "pool_summary"]
