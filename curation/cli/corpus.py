"""``golden sample corpus``: a small comparison corpus that still tells systems apart."""

from __future__ import annotations

import sys

import click

from curation.cli.base import checked_paths, domain_errors, main, on_conflict_option, seed_option


@main.command("corpus-sample")
@click.argument("corpus", nargs=-1, required=True, type=click.Path(exists=True, allow_dash=True, dir_okay=False))
@click.option("--size", required=True, type=click.IntRange(min=1), help="Records in the sample, kept ones included.")
@click.option(
    "--keep",
    "keep_files",
    multiple=True,
    type=click.Path(exists=True, allow_dash=True, dir_okay=False),
    help="Docids to keep: a pool (JSONL), qrels, a run, or one docid a line. Repeatable.",
)
@seed_option
@click.option("--out", required=True, type=click.Path(dir_okay=False),
              help="Sample to write: .jsonl, .jsonl.gz or .parquet.")
@on_conflict_option
@click.option("--dask", "dask_address", metavar="ADDRESS", default=None,
              help="Read the corpus files on a Dask cluster: a scheduler (tcp://host:8786), or local[:N] for N "
                   "local worker processes; its workers must see the same paths. Same sample as without.")
@domain_errors
@checked_paths(inputs=["corpus", "keep_files"], outputs=["out"])
def corpus_sample_cmd(corpus, size, keep_files, seed, out, on_conflict, dask_address):
    """Sample a comparison corpus of SIZE records from CORPUS (JSONL, TSV or Parquet files).

    Every judged or pooled document (--keep) is kept, so the sample can still score and
    compare the systems; the rest is a uniform random draw from the whole corpus (the records
    whose seeded hash of their id is smallest: one pass, memory for SIZE records per file, the
    same sample whatever the order of the records or how the corpus is cut into files), never
    the newest files or one product area. Prints how many records were kept and drawn, and the
    sample's fingerprint (a content hash that ignores record order and file format).

    \b
    Example:
      golden sample corpus corpus.jsonl.gz --size 200000 --keep pool.jsonl --seed 7 --out sample.jsonl.gz
    """
    from tqdm import tqdm

    from curation.formats.conflicts import Dedup
    from curation.formats.corpus import read_docids
    from curation.sample.corpus import sample_corpus

    keep: list[str] = []
    keep_repeats: list[str] = []
    for path in keep_files:
        dedup = Dedup(path, policy=on_conflict, what="pair")
        keep.extend(read_docids(path, dedup=dedup))
        if dedup.summary():
            keep_repeats.append(dedup.summary())
    keep = list(dict.fromkeys(keep))
    bar = tqdm(desc="reading corpus", unit=" docs", file=sys.stderr, disable=not sys.stderr.isatty(), miniters=10_000)
    map_pieces = None
    if dask_address is not None:
        from functools import partial

        from curation.sample.distributed import dask_map

        map_pieces = partial(dask_map, dask_address)
    with bar:
        result = sample_corpus(corpus, keep=keep, size=size, seed=seed, out=out, progress=bar.update,
                               on_conflict=on_conflict, map_pieces=map_pieces)
    echo = click.echo
    echo(f"Read {result.corpus_docs:,} records; corpus fingerprint {result.corpus_fingerprint.sha256}")
    echo(f"Kept  {result.kept:,} judged or pooled documents (of {len(keep):,} listed)")
    if result.repeats:
        echo(f"  {result.repeats}")
    for line in keep_repeats:
        echo(f"  {line}")
    if result.keep_missing:
        shown = ", ".join(result.keep_missing[:10]) + (" ..." if len(result.keep_missing) > 10 else "")
        echo(f"  {len(result.keep_missing):,} listed documents are not in the corpus: {shown}")
    others = result.corpus_docs - result.kept - result.kept_repeats
    echo(f"Drew  {result.drawn:,} of the other {others:,} records uniformly (seed {seed})")
    if result.short:
        echo(f"  the corpus has fewer than {size:,} records: the sample is the whole corpus")
    echo(f"Wrote {out}: {result.fingerprint.docs:,} records, fingerprint {result.fingerprint.sha256}")
