"""Sampling a comparison corpus: every judged or pooled document kept, the rest a uniform draw.

The draw keeps the records whose seeded hash of their id (:func:`draw_key`) is smallest, so it
depends neither on the order of the records nor on how the corpus is cut into files; each file is
read on its own (:func:`draw_piece`, the map step) and the pieces merged in file order
(:func:`sample_corpus`). Reading and writing the corpus is :mod:`curation.formats.corpus`'s.
"""

from __future__ import annotations

import hashlib
import heapq
import os
from collections.abc import Iterable
from dataclasses import dataclass, field

from curation.formats.corpus import (
    Doc,
    Fingerprint,
    FingerprintBuilder,
    as_paths,
    iter_numbered_docs,
    write_corpus,
)


@dataclass
class CorpusSample:
    kept: int  # documents kept because they are judged or pooled
    drawn: int  # documents drawn uniformly from the rest
    corpus_docs: int  # records read
    keep_missing: list[str]  # docids to keep that the corpus lacks, sorted
    fingerprint: Fingerprint  # of the sample written
    corpus_fingerprint: Fingerprint  # of the corpus read
    short: bool = False  # the corpus had fewer records than the size asked for
    repeats: str | None = None  # the summary line on repeated kept ids (curation.formats.conflicts)
    kept_repeats: int = 0  # records of kept ids read again (identical or resolved conflicts)


def draw_key(seed: int, docid: str) -> int:
    """The seeded key of a document in the uniform draw: the first 8 bytes of
    ``SHA-256(seed, docid)``. The draw keeps the smallest keys, so it depends neither on the
    order of the records nor on how the corpus is cut into files or partitions."""
    return int.from_bytes(hashlib.sha256(f"{seed}\x00{docid}".encode()).digest()[:8], "big")


@dataclass
class CorpusPieceDraw:
    """What one corpus file gives the draw (the map step of :func:`sample_corpus`): its record
    count and fingerprint sum, every record of a kept id, and its ``k`` records with the smallest
    draw keys among the others. A record's place is (file number, record number in the file)."""

    count: int
    total: int  # the sum of its records' hashes modulo 2**256 (FingerprintBuilder.total)
    kept: list  # (place, line, Doc) of records whose id is kept
    smallest: list  # (key, place, Doc), ascending


def draw_piece(path: str, index: int, keep: frozenset, k: int, seed: int, progress=None) -> CorpusPieceDraw:
    """Read one corpus file for :func:`sample_corpus` (``index``: its number among the files)."""
    builder = FingerprintBuilder()
    kept: list = []
    heap: list = []  # the k smallest (key, place) so far, as a max-heap of negated keys
    for rec, (lineno, doc) in enumerate(iter_numbered_docs(path)):
        builder.add(doc)
        if progress is not None:
            progress()
        place = (index, rec)
        if doc.id in keep:
            kept.append((place, lineno, doc))
            continue
        if k <= 0:
            continue
        item = (-draw_key(seed, doc.id), (-index, -rec), doc)
        if len(heap) < k:
            heapq.heappush(heap, item)
        elif item[:2] > heap[0][:2]:
            heapq.heapreplace(heap, item)
    return CorpusPieceDraw(builder.count, builder.total, kept, _ascending(heap))


def _ascending(heap: list) -> list:
    """The (key, place, Doc) of a max-heap of negated keys and places, smallest key first."""
    return sorted(((-key, (-i, -r), doc) for key, (i, r), doc in heap), key=lambda t: (t[0], t[1]))


def sample_corpus(
    paths: Iterable[str | os.PathLike],
    *,
    keep: Iterable[str],
    size: int,
    seed: int,
    out: str | os.PathLike,
    progress=None,
    on_conflict: str = "error",
    map_pieces=None,
) -> CorpusSample:
    """Write a comparison corpus of ``size`` records: all of ``keep``, the rest a uniform draw.

    Every record whose id is in ``keep`` (judged or pooled documents) is written; the remaining
    ``size - kept`` records are a uniform random sample without replacement of all other records
    of the corpus: those with the smallest seeded hash of their id (:func:`draw_key`; ties by
    place in the corpus), so no part of the corpus (the newest files, one product area) is
    favoured and the draw does not depend on the order of the records or on how the corpus is cut
    into files. One pass; memory holds ``size`` records per file, never the corpus. Records are
    written in corpus order. Same seed and input, same output bytes. A kept id repeated in the
    corpus is written once: identical repeats are counted, another text is an
    :class:`InputError` naming both lines unless ``on_conflict`` is ``first`` or ``last``.

    Each file is read on its own (:func:`draw_piece`) and the pieces merged in file order.
    ``map_pieces(fn, argument tuples)``, when given, runs ``fn`` over the files elsewhere and
    yields the results in the order given (``curation.sample.distributed.dask_map``: on a Dask
    cluster whose workers see the same paths): the same sample and fingerprints as one process.
    """
    from curation.formats.conflicts import Dedup

    keep_set = _checked_keep(keep, size)
    paths = as_paths(paths)
    dedup = Dedup(paths[0] if paths else "corpus", policy=on_conflict, what="document")
    if map_pieces is None:
        pieces = (draw_piece(p, i, keep_set, size, seed, progress) for i, p in enumerate(paths))
    else:
        pieces = map_pieces(draw_piece, [(p, i, keep_set, size, seed) for i, p in enumerate(paths)])
    merged = _Merged(size)
    for piece in pieces:
        merged.add(piece, dedup, paths)
    drawn = _ascending(merged.best)[: size - len(merged.kept)]
    chosen = sorted([*merged.kept, *((place, doc) for _, place, doc in drawn)], key=lambda item: item[0])
    fingerprint = write_corpus((doc for _, doc in chosen), out)
    return CorpusSample(
        kept=len(merged.kept),
        drawn=len(drawn),
        corpus_docs=merged.corpus.count,
        keep_missing=sorted(keep_set - merged.kept_ids.keys()),
        fingerprint=fingerprint,
        corpus_fingerprint=merged.corpus.result(),
        short=merged.corpus.count < size,
        repeats=dedup.summary(),
        kept_repeats=dedup.repeats + dedup.conflicts,
    )


def _checked_keep(keep: Iterable[str], size: int) -> frozenset:
    """The ids to keep, when ``size`` is a positive integer that holds them all (else ValueError)."""
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        raise ValueError(f"size must be a positive integer, not {size!r}")
    keep_set = frozenset(str(d) for d in keep)
    if len(keep_set) > size:
        raise ValueError(
            f"size: {size:,} is smaller than the {len(keep_set):,} documents to keep; "
            f"raise --size above {len(keep_set):,}"
        )
    return keep_set


@dataclass
class _Merged:
    """The pieces read so far, merged in file order: the corpus's fingerprint, each kept id's
    record (once), and the ``size`` records with the smallest draw keys as a max-heap."""

    size: int
    corpus: FingerprintBuilder = field(default_factory=FingerprintBuilder)
    kept: list[tuple[tuple, Doc]] = field(default_factory=list)  # (place, doc)
    kept_ids: dict[str, int] = field(default_factory=dict)  # kept id -> its index in kept
    best: list = field(default_factory=list)  # (-key, negated place, doc)

    def add(self, piece: CorpusPieceDraw, dedup, paths: list[str]) -> None:
        self.corpus.merge(piece.count, piece.total)
        for place, lineno, doc in piece.kept:
            if dedup.add(doc.id, doc, lineno, label=doc.text, path=paths[place[0]]):  # kept once, or replaced
                if doc.id in self.kept_ids:
                    self.kept[self.kept_ids[doc.id]] = (self.kept[self.kept_ids[doc.id]][0], doc)
                else:
                    self.kept_ids[doc.id] = len(self.kept)
                    self.kept.append((place, doc))
        for key, place, doc in piece.smallest:
            item = (-key, (-place[0], -place[1]), doc)
            if len(self.best) < self.size:
                heapq.heappush(self.best, item)
            elif item[:2] > self.best[0][:2]:
                heapq.heapreplace(self.best, item)
            else:
                break  # the piece's keys only grow from here
