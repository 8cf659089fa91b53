"""Leak check: find golden queries whose text sits inside the corpus.

A query copied into the corpus (an FAQ page built from the search logs, say) is found by lexical
retrieval for the wrong reason and inflates every score. :func:`leakcheck` compares every query
with every chunk of a corpus under three measures, on the n-gram sets of the normalised texts
(:func:`curation.formats.normalize.normalize_text`, the same normalisation as ``golden sample``):

``exact``
    the normalised query appears verbatim in the normalised chunk, at word boundaries (a chunk
    equal to the query included). Score 1.0.
``jaccard``
    ``|Q ∩ C| / |Q ∪ C|`` of the query's and the chunk's n-gram sets (Broder 1997, "On the
    resemblance and containment of documents"): the query *is* the chunk, near enough.
``containment``
    ``|Q ∩ C| / |Q|`` (Broder 1997): the share of the query's n-grams found in the chunk, for a
    question quoted inside a long page.

N-grams are word n-grams by default (``word:3``: words are the ``\\w+`` runs of the normalised
text) or character n-grams (``char:N``, over the normalised text, spaces included).

How it stays exact and fast
---------------------------
The queries are indexed, not the corpus: the corpus is streamed once, in batches, in constant
memory. For each batch a vectorised filter (numpy and pyarrow) turns the chunks' n-grams into
integer keys and looks them up among the queries' n-grams, counting for every (chunk, query)
how many distinct query n-grams the chunk holds. ``jaccard >= t`` and ``containment >= t`` both
imply ``shared / |Q| >= t``, and ``exact`` implies ``shared == |Q|``, so a (chunk, query) pair
below that count can never match: the filter only drops pairs that cannot match (keys are exact
vocabulary ids, or hashes whose collisions can only add candidates). Every candidate is then
verified on the real n-gram sets (Python tuples and strings) and only that exact score is
reported: the filter chooses, it never decides. ``tests/leak/test_leakcheck.py`` checks the result
against a brute-force comparison of every pair.

Chunks that are pure ASCII (most of them) take the vectorised path; a chunk with any other
character is normalised with :func:`normalize_text` in Python, so both paths see the same text.

The scan is a map over *tasks* (byte ranges of a JSONL file, row groups of a Parquet file,
whole gzip or TSV files) followed by a small merge, run in a process pool (``workers``) or on a
Dask cluster (``dask``).

Very common query n-grams ("boilerplate": a template sentence in a large share of the chunks)
are counted during the scan and reported; with ``discount_boilerplate=True`` a first pass counts
them and the second leaves them out of both sets, so one template does not flag every query.
"""

from __future__ import annotations

import heapq
import io
import json
import math
import os
import re
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curation.formats.corpus import ID_KEYS, TEXT_KEYS, doc_from_mapping, iter_corpus_file, iter_jsonl_docs
from curation.formats.fileio import InputError, base_suffix, is_gzip, iter_jsonl, open_binary
from curation.formats.normalize import normalize_text
from curation.formats.queries import iter_queries

MODES = ("exact", "jaccard", "containment")
STATUSES = ("leak", "too_short", "clean")
_WORD = re.compile(r"\w+")
_MIN_CHAR_CONTAINMENT = 5
_SMALL_CORPUS = 8 << 20  # bytes on disk under which one process scans everything
_MASK64 = (1 << 64) - 1
_POSITIONAL_LIMIT = 2**62  # keys below this are exact positional numbers, else 64-bit hashes
_HASH_MUL = 0x9E3779B97F4A7C15  # odd 64-bit multiplier (golden ratio), for keys that do not fit


# --------------------------------------------------------------------------------------------
# n-grams, the reference definition


@dataclass(frozen=True)
class NgramSpec:
    """Which n-grams to compare: ``unit`` is ``"word"`` or ``"char"``, ``n`` their length."""

    unit: str
    n: int

    def __str__(self) -> str:
        return f"{self.unit}:{self.n}"


def parse_ngram(spec: str | NgramSpec) -> NgramSpec:
    """Parse ``"word:3"`` or ``"char:5"`` (a bare number means words)."""
    if isinstance(spec, NgramSpec):
        return spec
    text = str(spec).strip().lower()
    unit, _, n = text.rpartition(":") if ":" in text else ("word", ":", text)
    if unit not in ("word", "char") or not n.isdigit() or int(n) < 1:
        raise ValueError(f"ngram: {spec!r} is not an n-gram spec; use word:N or char:N, e.g. word:3 or char:5")
    return NgramSpec(unit, int(n))


def words(normalized: str) -> list[str]:
    """The words of a normalised text: its ``\\w+`` runs."""
    return _WORD.findall(normalized)


def ngram_set(normalized: str, spec: NgramSpec) -> set:
    """The set of n-grams of an already normalised text: tuples of words, or substrings."""
    n = spec.n
    if spec.unit == "word":
        toks = _WORD.findall(normalized)
        return {tuple(toks[i : i + n]) for i in range(len(toks) - n + 1)}
    return {normalized[i : i + n] for i in range(len(normalized) - n + 1)}


def _verbatim_pattern(normalized_query: str) -> re.Pattern:
    """Regex for the query inside a chunk, not glued to a longer word on either side."""
    head = r"(?<!\w)" if _WORD.match(normalized_query[:1]) else ""
    tail = r"(?!\w)" if _WORD.match(normalized_query[-1:]) else ""
    return re.compile(head + re.escape(normalized_query) + tail)


# --------------------------------------------------------------------------------------------
# records


@dataclass(frozen=True)
class Match:
    """One chunk that matches one query under one mode, with the exact score.

    ``span`` is the matched stretch of the *normalised* chunk (``span_start:span_end``), from the
    verbatim position for ``exact`` and from rapidfuzz's ``partial_ratio_alignment`` otherwise.
    """

    qid: str
    chunk_id: str
    mode: str
    score: float
    span: str
    span_start: int
    span_end: int
    source: str

    def as_dict(self) -> dict:
        return {
            "chunk_id": self.chunk_id,
            "mode": self.mode,
            "score": round(self.score, 6),
            "span": self.span,
            "span_start": self.span_start,
            "span_end": self.span_end,
            "source": self.source,
        }


@dataclass
class QueryResult:
    """What the leak check found for one query."""

    qid: str
    text: str
    status: str  # "leak", "too_short" or "clean"
    ngrams: int  # size of the n-gram set compared (after any boilerplate discount)
    boilerplate: list[str] = field(default_factory=list)
    matches: list[Match] = field(default_factory=list)  # best first, at most max_matches
    n_matches: int = 0  # all matches, also those beyond max_matches
    modes: dict[str, int] = field(default_factory=dict)  # matches per mode
    reason: str | None = None

    def as_dict(self) -> dict:
        return {
            "qid": self.qid,
            "text": self.text,
            "status": self.status,
            "reason": self.reason,
            "ngrams": self.ngrams,
            "boilerplate_ngrams": self.boilerplate,
            "n_matches": self.n_matches,
            "matches_by_mode": self.modes,
            "matches": [m.as_dict() for m in self.matches],
        }


@dataclass
class LeakReport:
    """The whole result: one :class:`QueryResult` per query, in input order, and the scan's figures."""

    queries: list[QueryResult]
    modes: tuple[str, ...]
    threshold: float
    ngram: str
    chunks: int
    seconds: float
    boilerplate: list[tuple[str, int]]  # (n-gram, chunks holding it), most common first
    boilerplate_share: float
    discounted: bool
    tasks: int = 0  # pieces of the corpus scanned
    processes: int = 0  # distinct processes that scanned them

    @property
    def leaked(self) -> list[QueryResult]:
        return [q for q in self.queries if q.status == "leak"]

    def counts(self) -> dict[str, int]:
        out = {s: 0 for s in STATUSES}
        for q in self.queries:
            out[q.status] += 1
        return out

    def summary_rows(self) -> list[tuple[str, int, str]]:
        """(what, number, share of queries) rows for the summary table."""
        total = len(self.queries) or 1
        rows = []
        for status in STATUSES:
            n = sum(q.status == status for q in self.queries)
            label = {"too_short": "too short to judge"}.get(status, status)
            rows.append((label, n, f"{n / total:.1%}"))
        for mode in self.modes:
            n = sum(1 for q in self.queries if q.modes.get(mode))
            rows.append((f"  flagged by {mode}", n, f"{n / total:.1%}"))
        return rows


# --------------------------------------------------------------------------------------------
# the query index


class QueryIndex:
    """The queries' n-grams as lookup tables, small enough to ship to every worker.

    ``grams`` lists the distinct query n-grams (``g`` = position); ``q_ptr``/``q_list`` give the
    queries holding each (CSR); ``need[q]`` is the fewest shared n-grams a chunk must hold to be
    a candidate for query ``q``. Keys: for word n-grams, the words' ids in ``vocab`` combined
    positionally (exact) or by a 64-bit multiplicative hash when ``len(vocab) ** n`` does not fit
    (collisions checked absent among the query n-grams; elsewhere they can only add candidates);
    for character n-grams of ASCII text, the bytes packed into an integer (n <= 8) or hashed.
    """

    def __init__(self, queries, *, spec, modes, threshold, skip=frozenset(), count_only=False):
        self.spec = spec
        self.modes = tuple(modes)
        self.threshold = threshold
        self.skip = frozenset(skip)
        self.count_only = count_only
        self.qids = [q for q, _ in queries]
        self.texts = [t for _, t in queries]
        self.norms = [normalize_text(t) for t in self.texts]
        qsets = [ngram_set(n, spec) - self.skip for n in self.norms]
        self.sizes = np.array([len(s) for s in qsets], dtype=np.int64)
        grams: dict = {}
        pairs: list[tuple[int, int]] = []
        for qi, s in enumerate(qsets):
            for g in s:
                gi = grams.setdefault(g, len(grams))
                pairs.append((gi, qi))
        self.grams = list(grams)
        self.gram_ids = grams
        self.G = len(self.grams)
        pairs.sort()
        counts = np.bincount([g for g, _ in pairs], minlength=self.G) if pairs else np.zeros(self.G, np.int64)
        self.q_ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        self.q_list = np.array([q for _, q in pairs], dtype=np.int64)
        self.need = np.array([_needed(int(s), threshold, self.modes) for s in self.sizes], dtype=np.int64)
        # Queries with no n-gram can still equal a whole (short) chunk: exact mode checks those.
        self.short_exact: dict[str, list[int]] = {}
        if "exact" in self.modes and not count_only:
            for qi, (norm, size) in enumerate(zip(self.norms, self.sizes)):
                if size == 0 and norm and not ngram_set(norm, spec):
                    self.short_exact.setdefault(norm, []).append(qi)
        self._build_keys()

    def vocab_array(self) -> pa.Array:
        cached = self.__dict__.get("_vocab_array")
        if cached is None:
            cached = self.__dict__["_vocab_array"] = pa.array(self.vocab, pa.large_string())
        return cached

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_vocab_array", None)
        state.pop("_qset_cache", None)
        return state

    # keys -------------------------------------------------------------------------------
    def _build_keys(self):
        n = self.spec.n
        if self.spec.unit == "word":
            vocab = sorted({w for g in self.grams for w in g})
            self.vocab = vocab
            self.vocab_ids = {w: i for i, w in enumerate(vocab)}
            V = max(len(vocab), 1)
            self.positional = V**n < _POSITIONAL_LIMIT
            self.base = V
            keys = [self._word_key([self.vocab_ids[w] for w in g]) for g in self.grams]
            key_gram = {}
        else:
            self.vocab, self.vocab_ids = [], {}
            self.positional = 256**n < _POSITIONAL_LIMIT  # n <= 7 bytes
            keys, key_gram = [], {}
            for gi, g in enumerate(self.grams):
                raw = g.encode("utf-8")
                if len(raw) != n:  # non-ASCII n-gram: never in an ASCII chunk, looked up in Python
                    continue
                keys.append(self._char_key(raw))
                key_gram[len(keys) - 1] = gi
        keys = np.array(keys, dtype=np.uint64)
        gram_of = (
            np.arange(len(keys), dtype=np.int64)
            if self.spec.unit == "word"
            else np.array([key_gram[i] for i in range(len(keys))], dtype=np.int64)
        )
        order = np.argsort(keys, kind="stable")
        self.keys = keys[order]
        self.key_gram = gram_of[order]
        if len(self.keys) > 1 and np.any(self.keys[1:] == self.keys[:-1]):
            raise RuntimeError("hash collision among the queries' n-grams; use a shorter n")  # pragma: no cover

    def _word_key(self, ids: Sequence[int]) -> int:
        key = 0
        for i in ids:
            key = key * self.base + i if self.positional else ((key ^ (i + 1)) * _HASH_MUL) & _MASK64
        return key

    def _char_key(self, raw: bytes) -> int:
        key = 0
        for b in raw:
            key = (key << 8) | b if self.positional else ((key ^ (b + 1)) * _HASH_MUL) & _MASK64
        return key


def _needed(size: int, threshold: float, modes: Sequence[str]) -> int:
    """Fewest shared n-grams for a candidate: the least k with k / size >= threshold (as floats,
    exactly as the verified score is compared), or ``size`` when only ``exact`` is asked."""
    if size == 0:
        return 1 << 62  # nothing to share: never a candidate through n-grams
    if not any(m in ("jaccard", "containment") for m in modes):
        return size
    k = max(0, math.floor(threshold * size) - 1)
    while k < size and k / size < threshold:
        k += 1
    return max(k, 1)


# --------------------------------------------------------------------------------------------
# the vectorised filter over one batch of chunks

_IS_WORD = np.zeros(256, dtype=bool)
_IS_WORD[np.frombuffer(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_", np.uint8)] = True
# Python's \s over ASCII (what normalize_text collapses): \t \n \v \f \r, \x1c-\x1f and space.
_ASCII_SPACE = r"[\t\n\x0b\x0c\r\x1c-\x1f ]+"


def _string_parts(arr: pa.Array) -> tuple[np.ndarray, np.ndarray, pa.Buffer]:
    """(offsets relative to the data buffer, data bytes, data buffer) of a string array."""
    if pa.types.is_large_string(arr.type):
        off_type = np.int64
    else:
        off_type = np.int32
    bufs = arr.buffers()
    off = np.frombuffer(bufs[1], dtype=off_type)[arr.offset : arr.offset + len(arr) + 1].astype(np.int64)
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    return off, data, bufs[2]


def _word_tokens_ascii(index: QueryIndex, arr: pa.Array, rows: np.ndarray):
    """Vocabulary ids and row numbers of every word of the (ASCII) strings ``arr``.

    Lower-cased by pyarrow, cut into ``[a-z0-9_]+`` runs by numpy over the raw bytes, and looked
    up among the query words with ``pyarrow.compute.index_in`` (-1 for other words).
    """
    arr = pc.ascii_lower(arr.fill_null(""))
    if not isinstance(arr, pa.StringArray):
        arr = arr.cast(pa.string())
    off, data, _ = _string_parts(arr)
    lo, hi = int(off[0]), int(off[-1])
    d = data[lo:hi]
    # Word bytes of lower-cased ASCII: a-z, 0-9 and _ (uint8 arithmetic wraps, so one compare each).
    isw = ((d - np.uint8(97)) < 26) | ((d - np.uint8(48)) < 10) | (d == 95)
    flips = np.flatnonzero(isw[1:] != isw[:-1]) + 1
    if len(isw) and isw[0]:
        flips = np.concatenate([[0], flips])
    if len(isw) and isw[-1]:
        flips = np.concatenate([flips, [len(isw)]])
    starts, ends = flips[0::2], flips[1::2]
    # A word never runs from one string into the next.
    inner = off[1:-1] - lo
    edge = inner[(inner > 0) & (inner < hi - lo)]
    edge = edge[isw[edge] & isw[edge - 1]]
    if len(edge):
        starts = np.sort(np.concatenate([starts, edge]))
        ends = np.sort(np.concatenate([ends, edge]))
    if len(starts) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    if index.vocab:
        # The words alone, packed into a new string array, looked up among the query words.
        lengths = ends - starts
        offsets = np.zeros(len(starts) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        words_arr = pa.LargeStringArray.from_buffers(len(starts), pa.py_buffer(offsets), pa.py_buffer(d[isw]))
        ids = _int_values(pc.index_in(words_arr, value_set=index.vocab_array()))
    else:
        ids = np.full(len(starts), -1, dtype=np.int64)
    # Strings' word counts from where each string starts among the words (starts are sorted).
    per_string = np.diff(np.searchsorted(starts, off - lo))
    local_row = np.repeat(np.arange(len(per_string)), per_string)
    return ids, rows[local_row]


def _int_values(arr: pa.Array) -> np.ndarray:
    """An int32 arrow array as int64 numpy, nulls as -1 (read from the buffers, no fill pass)."""
    validity, values = arr.buffers()[0], arr.buffers()[1]
    out = np.frombuffer(values, dtype=np.int32)[arr.offset : arr.offset + len(arr)].astype(np.int64)
    if validity is not None and arr.null_count:
        bits = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), bitorder="little")
        out[~bits[arr.offset : arr.offset + len(arr)].astype(bool)] = -1
    return out


def _word_gram_hits(index: QueryIndex, ids: np.ndarray, row: np.ndarray):
    """(row, g) of every n-gram position whose n words are query words and whose key is a
    query n-gram's key."""
    n = index.spec.n
    L = len(ids) - n + 1
    if L <= 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    valid = (ids[:L] >= 0) & (row[:L] == row[n - 1 :])
    for j in range(1, n):
        valid &= ids[j : j + L] >= 0
    pos = np.flatnonzero(valid)
    if len(pos) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    if index.positional:
        key = ids[pos].astype(np.uint64)
        for j in range(1, n):
            key = key * np.uint64(index.base) + ids[pos + j].astype(np.uint64)
    else:
        key = np.zeros(len(pos), dtype=np.uint64)
        with np.errstate(over="ignore"):
            for j in range(n):
                key = (key ^ (ids[pos + j].astype(np.uint64) + np.uint64(1))) * np.uint64(_HASH_MUL)
    return _lookup(index, key, row[pos])


def _char_gram_hits_ascii(index: QueryIndex, arr: pa.Array, rows: np.ndarray):
    """(row, g) hits of the character n-grams of ASCII strings, and each string's normalised length."""
    n = index.spec.n
    arr = pc.ascii_lower(arr.fill_null(""))
    arr = pc.utf8_trim(pc.replace_substring_regex(arr, _ASCII_SPACE, " "), " ")
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    off, data, _ = _string_parts(arr)
    lengths = np.diff(off)
    lo, hi = int(off[0]), int(off[-1])
    d = data[lo:hi].astype(np.uint64)
    L = len(d) - n + 1
    if L <= 0 or len(index.keys) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), lengths
    if index.positional:
        key = d[:L].copy()
        for j in range(1, n):
            key = (key << np.uint64(8)) | d[j : j + L]
    else:
        key = np.zeros(L, dtype=np.uint64)
        with np.errstate(over="ignore"):
            for j in range(n):
                key = (key ^ (d[j : j + L] + np.uint64(1))) * np.uint64(_HASH_MUL)
    local_row = np.repeat(np.arange(len(lengths)), lengths)
    ok = local_row[:L] == local_row[n - 1 :]
    pos = np.flatnonzero(ok)
    g_row, g = _lookup(index, key[pos], rows[local_row[pos]])
    return g_row, g, lengths


def _lookup(index: QueryIndex, key: np.ndarray, row: np.ndarray):
    if len(index.keys) == 0 or len(key) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    at = np.searchsorted(index.keys, key)
    at_c = np.minimum(at, len(index.keys) - 1)
    hit = index.keys[at_c] == key
    return row[hit].astype(np.int64), index.key_gram[at_c[hit]]


def _python_gram_hits(index: QueryIndex, norm: str, row: int, out_rows: list, out_g: list) -> int:
    """Hits of one chunk normalised in Python (chunks with non-ASCII text). Returns its size."""
    grams = ngram_set(norm, index.spec)
    ids = index.gram_ids
    for gram in grams:
        gi = ids.get(gram)
        if gi is not None:
            out_rows.append(row)
            out_g.append(gi)
    return len(grams)


@dataclass
class _BatchOut:
    chunks: int = 0
    df: np.ndarray | None = None
    matches: dict = field(default_factory=dict)  # qi -> list of (score, Match) heap items
    n_matches: dict = field(default_factory=dict)  # qi -> count


def _scan_batch(index: QueryIndex, ids: pa.Array, texts: pa.Array, source: str, out: _BatchOut, max_matches: int):
    """Filter one batch of chunks against the index, verify the candidates, add to ``out``."""
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    if isinstance(ids, pa.ChunkedArray):
        ids = ids.combine_chunks()
    if pa.types.is_large_string(texts.type) or pa.types.is_string_view(texts.type):
        texts = texts.cast(pa.string())
    nrows = len(texts)
    out.chunks += nrows
    if nrows == 0:
        return
    ascii_mask = pc.fill_null(pc.string_is_ascii(texts), True).to_numpy(zero_copy_only=False)
    all_rows = np.arange(nrows, dtype=np.int64)
    spec = index.spec
    py_rows: list[int] = []
    py_g: list[int] = []
    norms: dict[int, str] = {}
    short_rows: list[int] = []

    if ascii_mask.all():
        a_rows, a_texts = all_rows, texts
    else:
        a_rows = np.flatnonzero(ascii_mask)
        a_texts = texts.filter(pa.array(ascii_mask))
        py_text = texts.filter(pa.array(~ascii_mask)).to_pylist()
        for r, t in zip(np.flatnonzero(~ascii_mask).tolist(), py_text):
            norm = normalize_text(t or "")
            norms[r] = norm
            size = _python_gram_hits(index, norm, r, py_rows, py_g)
            if size == 0:
                short_rows.append(r)
    if spec.unit == "word":
        wid, wrow = _word_tokens_ascii(index, a_texts, a_rows) if len(a_rows) else (np.zeros(0, np.int64),) * 2
        h_row, h_g = _word_gram_hits(index, wid, wrow)
        if index.short_exact and len(a_rows):
            per_row = np.bincount(wrow, minlength=nrows)[a_rows]
            short_rows.extend(a_rows[per_row < spec.n].tolist())
    else:
        if len(a_rows):
            h_row, h_g, lengths = _char_gram_hits_ascii(index, a_texts, a_rows)
            if index.short_exact:
                short_rows.extend(a_rows[lengths < spec.n].tolist())
        else:
            h_row, h_g = np.zeros(0, np.int64), np.zeros(0, np.int64)
    if py_rows:
        h_row = np.concatenate([h_row, np.array(py_rows, np.int64)])
        h_g = np.concatenate([h_g, np.array(py_g, np.int64)])

    # Distinct (chunk, query n-gram) pairs: document frequencies, then shared counts per query.
    G = max(index.G, 1)
    pair = np.unique(h_row * G + h_g)
    p_row, p_g = pair // G, pair % G
    if index.G:
        out.df += np.bincount(p_g, minlength=index.G)
    candidates: list[tuple[int, int]] = []
    if not index.count_only and len(pair):
        per = index.q_ptr[p_g + 1] - index.q_ptr[p_g]
        total = int(per.sum())
        if total:
            rep_row = np.repeat(p_row, per)
            first = np.repeat(index.q_ptr[p_g] - np.concatenate([[0], np.cumsum(per)[:-1]]), per)
            q = index.q_list[np.arange(total) + first]
            Q = len(index.qids)
            rq, shared = np.unique(rep_row * Q + q, return_counts=True)
            rr, qq = rq // Q, rq % Q
            keep = shared >= index.need[qq]
            candidates = list(zip(rr[keep].tolist(), qq[keep].tolist()))
    for r in short_rows:
        norm = norms.get(r)
        if norm is None:
            norm = normalize_text(texts[r].as_py() or "")
            norms[r] = norm
        for qi in index.short_exact.get(norm, ()):
            candidates.append((r, qi))
    if not candidates:
        return
    _verify(index, candidates, ids, texts, norms, source, out, max_matches)


def _verify(index: QueryIndex, candidates, ids, texts, norms, source, out: _BatchOut, max_matches: int):
    """Exact scores on the real n-gram sets for each candidate (chunk, query); keep the matches."""
    from rapidfuzz import fuzz  # rapidfuzz's alignment gives the matched span

    t = index.threshold
    sets: dict[int, set] = {}
    for r, qi in sorted(set(candidates)):
        norm = norms.get(r)
        if norm is None:
            norm = normalize_text(texts[r].as_py() or "")
            norms[r] = norm
        chunk_id = ids[r].as_py()
        chunk_id = "" if chunk_id is None else str(chunk_id)
        qnorm = index.norms[qi]
        found: list[tuple[str, float, int, int]] = []
        if "exact" in index.modes and qnorm:
            m = _verbatim_pattern(qnorm).search(norm)
            if m:
                found.append(("exact", 1.0, m.start(), m.end()))
        qset_size = int(index.sizes[qi])
        if qset_size and any(mode in index.modes for mode in ("jaccard", "containment")):
            cset = sets.get(r)
            if cset is None:
                cset = ngram_set(norm, index.spec) - index.skip
                sets[r] = cset
            qset = _query_set(index, qi)
            inter = len(qset & cset)
            if inter:
                span = None
                for mode in ("jaccard", "containment"):
                    if mode not in index.modes:
                        continue
                    if mode == "jaccard":
                        score = inter / (qset_size + len(cset) - inter)
                    else:
                        score = inter / qset_size
                    if score >= t:
                        if span is None:
                            al = fuzz.partial_ratio_alignment(qnorm, norm)
                            span = (al.dest_start, al.dest_end)
                        found.append((mode, score, span[0], span[1]))
        for mode, score, a, b in found:
            match = Match(index.qids[qi], chunk_id, mode, score, norm[a:b], a, b, source)
            out.n_matches[qi] = out.n_matches.get(qi, 0) + 1
            heap = out.matches.setdefault(qi, [])
            item = _heap_item(match)
            if len(heap) < max_matches:
                heapq.heappush(heap, item)
            else:
                heapq.heappushpop(heap, item)


def _query_set(index: QueryIndex, qi: int) -> set:
    cache = index.__dict__.setdefault("_qset_cache", {})
    s = cache.get(qi)
    if s is None:
        s = ngram_set(index.norms[qi], index.spec) - index.skip
        cache[qi] = s
    return s


_MODE_RANK = {m: i for i, m in enumerate(MODES)}


def _heap_item(m: Match):
    # The heap keeps the best: highest score, then exact before jaccard before containment, then
    # the smaller chunk id (then file, then position), so the kept set does not depend on order.
    return (m.score, -_MODE_RANK[m.mode], _Rev(m.chunk_id), _Rev(m.source), -m.span_start, _Payload(m))


class _Payload:
    """Carries the match through the heap without taking part in the comparison."""

    __slots__ = ("match",)

    def __init__(self, match):
        self.match = match

    def __lt__(self, other):
        return False

    def __eq__(self, other):
        return True


class _Rev:
    """Wraps a string so that heap order puts smaller ids last (kept ahead of larger ones)."""

    __slots__ = ("s",)

    def __init__(self, s):
        self.s = s

    def __lt__(self, other):
        return self.s > other.s

    def __eq__(self, other):
        return self.s == other.s


# --------------------------------------------------------------------------------------------
# tasks: the map over the corpus


@dataclass(frozen=True)
class Task:
    """A piece of the corpus one worker scans: ``kind`` is ``range`` (bytes ``start:end`` of an
    uncompressed JSONL file), ``rowgroup`` (Parquet row group ``start``) or ``file`` (all of it)."""

    path: str
    kind: str
    start: int = 0
    end: int = 0


def plan_tasks(paths: Iterable[str | os.PathLike], *, target_bytes: int = 16 << 20) -> list[Task]:
    """Cut the corpus files into tasks of about ``target_bytes`` (JSONL) or a row group (Parquet)."""
    tasks: list[Task] = []
    for p in paths:
        path = str(p)
        if not os.path.exists(path):
            raise InputError(path, None, "no such corpus file")
        suffix = base_suffix(path)
        if suffix == ".parquet":
            import pyarrow.parquet as pq

            n = pq.ParquetFile(path).num_row_groups
            tasks.extend(Task(path, "rowgroup", i, i + 1) for i in range(n))
        elif suffix in (".jsonl", ".json", ".ndjson") and not is_gzip(path):
            size = os.path.getsize(path)
            start = 0
            while start < size:
                end = min(size, start + target_bytes)
                tasks.append(Task(path, "range", start, end))
                start = end
        elif suffix in (".jsonl", ".json", ".ndjson", ".tsv", ".tab"):
            tasks.append(Task(path, "file"))
        else:
            raise InputError(path, None, f"unknown corpus format {suffix!r}: use .jsonl, .tsv or .parquet (optionally .gz)")
    return tasks


def _line_aligned(path: str, start: int, end: int) -> bytes:
    """The lines whose first byte lies in ``[start, end)``."""
    with open(path, "rb") as fh:
        if start > 0:
            fh.seek(start - 1)
            fh.readline()  # the line holding byte start-1 belongs to the previous range
        begin = fh.tell()
        if begin >= end:
            return b""
        data = fh.read(end - begin)
        if not data.endswith(b"\n"):
            data += fh.readline()
        return data


def _table_columns(table: pa.Table, path: str) -> tuple[pa.Array, pa.Array] | None:
    """(ids as strings, texts) from a table read by pyarrow, or None when the Python reader must
    decide (no usable column, nulls, nested values)."""
    names = set(table.column_names)
    id_col = next((k for k in ID_KEYS if k in names), None)
    text_col = next((k for k in TEXT_KEYS if k in names), None)
    if id_col is None or text_col is None:
        return None
    ids, texts = table.column(id_col), table.column(text_col)
    if ids.null_count or texts.null_count:
        return None
    if not (pa.types.is_string(texts.type) or pa.types.is_large_string(texts.type)):
        return None
    if not (pa.types.is_string(ids.type) or pa.types.is_integer(ids.type)):
        return None
    if not pa.types.is_string(ids.type):
        ids = ids.cast(pa.string())
    return ids.combine_chunks(), texts.combine_chunks()


def _json_table(data: bytes) -> pa.Table | None:
    import pyarrow.json as pj

    try:
        return pj.read_json(
            io.BytesIO(data),
            read_options=pj.ReadOptions(use_threads=False, block_size=max(1 << 20, len(data) + 1)),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None


def _python_batches(docs: Iterator, batch_size: int):
    ids: list[str] = []
    texts: list[str] = []
    for doc in docs:
        ids.append(doc.id)
        texts.append(doc.text)
        if len(ids) >= batch_size:
            yield pa.array(ids, pa.string()), pa.array(texts, pa.string())
            ids, texts = [], []
    if ids:
        yield pa.array(ids, pa.string()), pa.array(texts, pa.string())


def _jsonl_block_batches(data: bytes, path: str, batch_size: int, first_line: Callable[[], int]):
    table = _json_table(data) if data else None
    cols = _table_columns(table, path) if table is not None else None
    if cols is None:
        docs = iter_jsonl_docs(data.split(b"\n"), path, first_line=first_line)
        yield from _python_batches(docs, batch_size)
        return
    ids, texts = cols
    for s in range(0, len(texts), batch_size):
        yield ids.slice(s, batch_size), texts.slice(s, batch_size)


def iter_task_batches(task: Task, *, batch_size: int = 4096) -> Iterator[tuple[pa.Array, pa.Array]]:
    """Yield (ids, texts) string arrays for one task, a batch at a time (constant memory).

    JSONL goes through pyarrow's JSON reader (one block of about 16 MB at a time); a block it
    cannot read as plain ``id``/``text`` columns falls back to the Python reader of
    :mod:`curation.formats.corpus`, whose errors name the file and line.
    """
    path = task.path
    if task.kind == "range":
        data = _line_aligned(path, task.start, task.end)

        def first_line() -> int:  # only counted when an error needs a line number
            with open(path, "rb") as fh:
                return fh.read(task.start).count(b"\n") + 1 if task.start else 1

        yield from _jsonl_block_batches(data, path, batch_size, first_line)
    elif task.kind == "rowgroup":
        import pyarrow.parquet as pq

        pf = pq.ParquetFile(path)
        for batch in pf.iter_batches(batch_size=batch_size, row_groups=[task.start]):
            table = pa.Table.from_batches([batch])
            cols = _table_columns(table, path)
            if cols is None:
                yield from _python_batches((doc_from_mapping(r, path, None) for r in batch.to_pylist()), batch_size)
            else:
                yield cols
    elif base_suffix(path) in (".jsonl", ".json", ".ndjson"):  # gzip: one stream, blocks of lines
        lines_before = 1
        with open_binary(path) as fh:
            while True:
                block = b"".join(fh.readlines(16 << 20))
                if not block:
                    break
                start_line = lines_before
                yield from _jsonl_block_batches(block, path, batch_size, lambda: start_line)
                lines_before += block.count(b"\n")
    else:
        yield from _python_batches(iter_corpus_file(path), batch_size)


@dataclass
class TaskResult:
    """What one task sends back to the merge: small whatever the size of the corpus piece."""

    chunks: int
    df: np.ndarray
    matches: dict
    n_matches: dict
    seconds: float
    pid: int


def scan_task(task: Task, index: QueryIndex, *, batch_size: int = 4096, max_matches: int = 100) -> TaskResult:
    """Scan one piece of the corpus against the query index (the map step)."""
    t0 = time.perf_counter()
    out = _BatchOut(df=np.zeros(index.G, dtype=np.int64))
    for ids, texts in iter_task_batches(task, batch_size=batch_size):
        _scan_batch(index, ids, texts, task.path, out, max_matches)
    return TaskResult(out.chunks, out.df, out.matches, out.n_matches, time.perf_counter() - t0, os.getpid())


# --------------------------------------------------------------------------------------------
# the driver


def read_queries(path: str | os.PathLike) -> list[tuple[str, str]]:
    """``(qid, text)`` of each line of a queries.jsonl file (read by :mod:`curation.formats.queries`)."""
    return [(q.qid, q.text) for q in iter_queries(path)]


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


def _run_map(tasks, index, *, workers, dask, batch_size, max_matches, progress, desc):
    """Run :func:`scan_task` over the tasks and yield results as they finish."""
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
                from distributed import Client, as_completed as dask_completed
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
            bar = make_bar()
            for task in tasks:
                res = scan_task(task, index, batch_size=batch_size, max_matches=max_matches)
                if bar is not None:
                    bar.update(res.chunks)
                yield res
        else:
            with ProcessPoolExecutor(max_workers=workers, mp_context=_mp_context()) as pool:
                futures = [pool.submit(scan_task, t, index, batch_size=batch_size, max_matches=max_matches) for t in tasks]
                bar = make_bar()
                for fut in as_completed(futures):
                    res = fut.result()
                    if bar is not None:
                        bar.update(res.chunks)
                    yield res
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
    batch_size: int = 4096,
    progress: bool = False,
) -> LeakReport:
    """Compare every query with every chunk of the corpus files; see the module docstring.

    ``queries`` are ``(qid, text)`` pairs; ``corpus`` files are JSONL, TSV or Parquet (gzip for
    the text forms). A query with no n-gram (fewer than ``n`` words or characters after
    normalisation) is reported ``too_short`` unless ``exact`` finds a chunk equal to it. A query
    n-gram held by at least ``boilerplate_share`` of the chunks is reported as boilerplate; with
    ``discount_boilerplate`` it is left out of the query's and every chunk's set (two passes).
    ``workers`` processes (default: all cores) scan the tasks of :func:`plan_tasks`; ``dask``
    (a scheduler address or a ``distributed.Client``) runs the same map on a Dask cluster, whose
    workers must see the corpus files at the same paths. Each query keeps its ``max_matches``
    best matches (all are counted).
    """
    spec = parse_ngram(ngram)
    modes = _check_options(modes, threshold, spec, boilerplate_share, workers, max_matches)
    queries = [(str(q), str(t)) for q, t in queries]
    if len({q for q, _ in queries}) != len(queries):
        raise ValueError("queries: qids must be unique")
    workers = workers or _available_cores()
    tasks = plan_tasks(corpus)
    if dask is None and sum(os.path.getsize(p) for p in {t.path for t in tasks}) < _SMALL_CORPUS:
        workers = 1  # starting processes would cost more than the scan
    t0 = time.perf_counter()
    run = dict(workers=workers, dask=dask, batch_size=batch_size, max_matches=max_matches, progress=progress)

    skip: frozenset = frozenset()
    if discount_boilerplate:
        counting = QueryIndex(queries, spec=spec, modes=modes, threshold=threshold, count_only=True)
        df = np.zeros(counting.G, dtype=np.int64)
        chunks = 0
        for res in _run_map(tasks, counting, desc="counting n-grams", **run):
            df += res.df
            chunks += res.chunks
        limit = boilerplate_share * max(chunks, 1)
        skip = frozenset(counting.grams[g] for g in np.flatnonzero(df >= limit).tolist()) if chunks else frozenset()
        first_df = {counting.grams[g]: int(df[g]) for g in range(counting.G)}

    index = QueryIndex(queries, spec=spec, modes=modes, threshold=threshold, skip=skip)
    df = np.zeros(index.G, dtype=np.int64)
    chunks = 0
    heaps: dict[int, list] = {}
    n_matches: dict[int, int] = {}
    pids = set()
    for res in _run_map(tasks, index, desc="leak check", **run):
        pids.add(res.pid)
        chunks += res.chunks
        df += res.df
        for qi, items in res.matches.items():
            heap = heaps.setdefault(qi, [])
            for item in items:
                if len(heap) < max_matches:
                    heapq.heappush(heap, item)
                else:
                    heapq.heappushpop(heap, item)
        for qi, n in res.n_matches.items():
            n_matches[qi] = n_matches.get(qi, 0) + n

    if discount_boilerplate:
        gram_df = first_df
    else:
        gram_df = {index.grams[g]: int(df[g]) for g in range(index.G)}
    limit = boilerplate_share * max(chunks, 1)
    common = sorted(
        ((_gram_text(g, spec), c) for g, c in gram_df.items() if chunks and c >= limit), key=lambda x: (-x[1], x[0])
    )
    common_set = {g for g, _ in common}

    results = []
    for qi, (qid, text) in enumerate(queries):
        items = sorted(heaps.get(qi, []), reverse=True)
        matches = [it[-1].match for it in items]
        by_mode: dict[str, int] = {}
        for m in matches:
            by_mode[m.mode] = by_mode.get(m.mode, 0) + 1
        size = int(index.sizes[qi])
        full = ngram_set(index.norms[qi], spec)
        bp = sorted(_gram_text(g, spec) for g in full if _gram_text(g, spec) in common_set)
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
        results.append(
            QueryResult(qid, text, status, size, bp, matches, n_matches.get(qi, 0), by_mode, reason)
        )
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
        processes=len(pids),
    )


def _gram_text(gram, spec: NgramSpec) -> str:
    return " ".join(gram) if spec.unit == "word" else gram


def write_report(report: LeakReport, path: str | os.PathLike) -> None:
    """Write one JSON object a line per query (all statuses), whole or not at all."""
    from curation.formats.fileio import atomic_write

    with atomic_write(path) as fh:
        for q in report.queries:
            fh.write(json.dumps(q.as_dict(), ensure_ascii=False) + "\n")


def read_report(path: str | os.PathLike) -> list[dict]:
    """Read a file written by :func:`write_report` back as dicts."""
    path = str(path)
    out = []
    expect = "a leak-check record with qid and status"
    for lineno, obj in iter_jsonl(path, expect=expect):
        if "qid" not in obj or "status" not in obj:
            raise InputError(path, lineno, f"expected {expect}")
        out.append(obj)
    return out
