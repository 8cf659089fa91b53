"""Leak check: find golden queries whose text sits inside the corpus.

A query copied into the corpus (an FAQ page built from the search logs, say) is found by lexical
retrieval for the wrong reason and inflates every score. :func:`leakcheck` compares every query
with every chunk of a corpus under three measures, on the n-gram sets of the normalised texts
(:func:`curation.formats.normalize.normalize_text`, the same normalisation as ``golden sample queries``):

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
memory, and its hashes are never sorted. For each batch a vectorised filter (numpy and pyarrow)
cuts the chunks into words through one byte table, gives each word its id among the queries'
words (-1 for any other word), and follows each run of n word ids through small tables of the
query n-grams' prefixes (one look-up a word: :meth:`QueryIndex.prefix_tables`; 64-bit keys
searched in the sorted query keys when those tables would be too large, and for character
n-grams). It then counts, for every (chunk, query), how many distinct query n-grams the chunk
holds. ``jaccard >= t`` and ``containment >= t`` both imply ``shared / |Q| >= t``, and ``exact``
implies ``shared == |Q|``, so a (chunk, query) pair below that count can never match: the filter
only drops pairs that cannot match (ids are exact, and hashed keys' collisions can only add
candidates). A candidate is then scored exactly: its containment is that count itself when the
ids and keys are exact (the count *is* ``|Q ∩ C|``); otherwise, and for jaccard, on the real
n-gram sets, cut from the chunk's words in one pass (:func:`curation.leak.ngrams.words_of`: a
``str.translate`` and ``str.split`` for ASCII text, the full :func:`normalize_text` otherwise).
A match's span (rapidfuzz) and context are only worked out for the matches kept in the end
among their query's ``max_matches`` best: each piece of the corpus is sent the merged results'
least kept match per query, and a match below it is only counted. Before pyarrow reads a block,
cheap checks send what golden's JSON rules refuse to the exact reader (see
``curation.leak.inputs``). ``tests/leak/test_leakcheck.py`` and
``tests/leak/test_candidate_filter.py`` check every score against a brute-force comparison of
every pair, with and without the tables and with hashed keys.

Chunks that are pure ASCII (most of them) take the vectorised path; a chunk with any other
character is normalised with :func:`normalize_text` in Python and its words' ids join the same
n-gram path, so both paths see the same text.

The scan is a map over *tasks* (byte ranges of a JSONL file, row groups of a Parquet file,
whole gzip or TSV files) followed by a small merge, run in a process pool (``workers``) or on a
Dask cluster (``dask``).

Very common query n-grams ("boilerplate": a template sentence in a large share of the chunks)
are counted during the scan and reported; with ``discount_boilerplate=True`` a first pass counts
them and the second leaves them out of both sets, so one template does not flag every query.

This module owns that filter and the verification, over one batch of chunks and one piece of the
corpus (:func:`scan_task`, the map step). The n-grams are defined in ``curation.leak.ngrams``, the
query index is ``curation.leak.index``, the reading of queries and corpus pieces
``curation.leak.inputs``, the driver (:func:`curation.leak.driver.leakcheck`: the map over the
pieces and the merge) ``curation.leak.driver``, and the results and their file ``curation.leak.report``.
"""

from __future__ import annotations

import heapq
import os
import time
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curation.formats.normalize import normalize_text
from curation.leak.index import HASH_MUL, QueryIndex, arrow_strings
from curation.leak.inputs import CorpusPiece, iter_task_batches
from curation.leak.ngrams import ngram_set, verbatim_pattern, word_ngrams, words_of
from curation.leak.report import MODES, Match, context

# --------------------------------------------------------------------------------------------
# the vectorised filter over one batch of chunks


_WORD_BYTE = np.zeros(256, dtype=np.uint8)
for _c in b"abcdefghijklmnopqrstuvwxyz0123456789_":
    _WORD_BYTE[_c] = _c
for _c in b"ABCDEFGHIJKLMNOPQRSTUVWXYZ":
    _WORD_BYTE[_c] = _c + 32
_IS_WORD_TABLE = (_WORD_BYTE != 0).astype(np.uint8).tobytes()
_LOWER_TABLE = bytes(c + 32 if 65 <= c <= 90 else c for c in range(256))
_NON_WORD_BYTES = bytes(c for c in range(256) if not _WORD_BYTE[c])
# The same where every byte >= 0x80 belongs to a word (UTF-8 text whose other characters are all word characters).
_IS_WORD_TABLE_UTF8 = bytes(1 if c >= 128 or _WORD_BYTE[c] else 0 for c in range(256))
_NON_WORD_BYTES_UTF8 = bytes(c for c in range(128) if not _WORD_BYTE[c])
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


# pyarrow.array() imports pandas on its first call (a quarter of a second or more), so the scan
# builds its few arrow arrays from buffers.
def _arrow_ints(values: np.ndarray) -> pa.Array:
    """An int64 numpy array as an arrow array (no copy)."""
    values = np.ascontiguousarray(values, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(values), [None, pa.py_buffer(values)])


def _ascii_rows(texts: pa.Array) -> np.ndarray:
    """Which strings are pure ASCII (a null counts as ASCII): the bytes >= 0x80 found in one pass
    over the data buffer and mapped to their strings."""
    off, data, _ = _string_parts(texts)
    mask = np.ones(len(texts), dtype=bool)
    high = np.flatnonzero(data[int(off[0]) : int(off[-1])] >= 0x80) + off[0]
    if len(high):
        mask[np.searchsorted(off, high, side="right") - 1] = False
    return mask


def _word_tokens_ascii(index: QueryIndex, arr: pa.Array, rows: np.ndarray, *, utf8: bool = False):
    """Vocabulary ids and row numbers of every word of the (ASCII) strings ``arr`` (with ``utf8``:
    UTF-8 strings whose characters other than ASCII are all word characters, each byte >= 0x80
    then a word byte).

    The bytes cut into ``[a-zA-Z0-9_]+`` runs (numpy over a word-byte mask), the runs lower-cased
    and looked up among the query words with ``pyarrow.compute.index_in`` (-1 for other words).
    Returns int32 ids and int64 rows.
    """
    if arr.null_count:
        arr = arr.fill_null("")
    off, data, _ = _string_parts(arr)
    lo, hi = int(off[0]), int(off[-1])
    # Two passes of bytes.translate (several times quicker than numpy's take or a boolean mask): which
    # bytes are word bytes (a-z, A-Z, 0-9, _), and the word bytes alone, lower-cased, end to end.
    raw = data[lo:hi].tobytes()
    isw = np.frombuffer(raw.translate(_IS_WORD_TABLE_UTF8 if utf8 else _IS_WORD_TABLE), dtype=np.bool_)
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
    if len(edge) > 1:  # empty strings between two others repeat a boundary: one word cut there
        edge = edge[np.concatenate([[True], edge[1:] != edge[:-1]])]
    if len(edge):  # sorted already: merged in by position, no sort
        starts = np.insert(starts, np.searchsorted(starts, edge), edge)
        ends = np.insert(ends, np.searchsorted(ends, edge), edge)
    if len(starts) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    if index.vocab:
        # The words alone, packed into a new string array, looked up among the query words.
        lengths = ends - starts
        offsets = np.zeros(len(starts) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        packed = raw.translate(_LOWER_TABLE, _NON_WORD_BYTES_UTF8 if utf8 else _NON_WORD_BYTES)
        words_arr = pa.LargeStringArray.from_buffers(len(starts), pa.py_buffer(offsets), pa.py_buffer(packed))
        ids = _ids_or_minus_one(pc.index_in(words_arr, value_set=index.vocab_array()))
    else:
        ids = np.full(len(starts), -1, dtype=np.int32)
    # Strings' word counts from where each string starts among the words (starts are sorted).
    per_string = np.diff(np.searchsorted(starts, off - lo))
    local_row = np.repeat(np.arange(len(per_string)), per_string)
    return ids, rows[local_row]


def _ids_or_minus_one(arr: pa.Array) -> np.ndarray:
    """An int32 arrow array as numpy, nulls as -1 (read from its buffers)."""
    validity, values = arr.buffers()[0], arr.buffers()[1]
    out = np.frombuffer(values, dtype=np.int32)[arr.offset : arr.offset + len(arr)]
    if validity is None or not arr.null_count:
        return out
    bits = np.unpackbits(np.frombuffer(validity, np.uint8), count=arr.offset + len(arr), bitorder="little")
    return np.where(bits[arr.offset :].view(bool), out, np.int32(-1))


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
    steps = index.prefix_tables()
    if steps is not None:
        # Word by word through the query n-grams' prefixes: each step one look-up in a table of
        # (prefix, word) -> longer prefix (the last step gives the n-gram), dropping dead ends.
        V = max(len(index.vocab), 1)
        state = ids[pos].astype(np.int64)
        r = row[pos]
        for j, table in enumerate(steps, start=1):
            state = table[state * V + ids[pos + j]]
            live = state >= 0
            pos, state, r = pos[live], state[live], r[live]
        return r.astype(np.int64), state.astype(np.int64)
    if index.positional:
        key = ids[pos].astype(np.uint64)
        for j in range(1, n):
            key = key * np.uint64(index.base) + ids[pos + j].astype(np.uint64)
    else:
        key = np.zeros(len(pos), dtype=np.uint64)
        with np.errstate(over="ignore"):
            for j in range(n):
                key = (key ^ (ids[pos + j].astype(np.uint64) + np.uint64(1))) * np.uint64(HASH_MUL)
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
                key = (key ^ (d[j : j + L] + np.uint64(1))) * np.uint64(HASH_MUL)
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
    ids: list = field(default_factory=list)  # the chunks' ids, batch by batch (repeated ids are looked for)
    #: qi -> the least kept item's key (score, mode, chunk id, file) of the merged results so far, for a
    #: query whose heap is full there: a match below it can never be among the best, so it is only counted.
    floors: dict = field(default_factory=dict)


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
    out.ids.append(ids)
    if nrows == 0:
        return
    ascii_mask = _ascii_rows(texts)
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
        a_texts = texts.take(_arrow_ints(a_rows))
        py_ids = _non_ascii_hits(index, texts, ascii_mask, norms, py_rows, py_g, short_rows)
    if spec.unit == "word":
        wid, wrow = _word_tokens_ascii(index, a_texts, a_rows) if len(a_rows) else (np.zeros(0, np.int32),) * 2
        if py_rows:
            wid = np.concatenate([wid, np.array(py_ids, wid.dtype)])
            wrow = np.concatenate([wrow, np.array(py_rows, wrow.dtype)])
            py_rows = []
        h_row, h_g = _word_gram_hits(index, wid, wrow)
        if index.short_exact:
            per_row = np.bincount(wrow, minlength=nrows)
            short_rows.extend(np.flatnonzero(per_row < spec.n).tolist())
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
    counts: dict[tuple[int, int], int] = {}
    if not index.count_only and len(pair):
        rr, qq, shared = _shared_enough(index, p_row, p_g)
        exact_counts = index.positional and spec.unit == "word"  # the count is |Q ∩ C| itself
        if exact_counts and index.modes == ("containment",):
            if len(rr):
                _keep_counted(index, out, rr, qq, shared, ids, texts, source, max_matches)
            return
        candidates = list(zip(rr.tolist(), qq.tolist()))
        if exact_counts:
            counts = dict(zip(candidates, shared.tolist()))
    for r in short_rows:
        norm = norms.get(r)
        if norm is None:
            norm = normalize_text(texts[r].as_py() or "")
            norms[r] = norm
        for qi in index.short_exact.get(norm, ()):
            candidates.append((r, qi))
    if not candidates:
        return
    _verify(index, candidates, counts, ids, texts, norms, source, out, max_matches)


def _non_ascii_hits(index: QueryIndex, texts: pa.Array, ascii_mask: np.ndarray, norms: dict[int, str],
                    py_rows: list[int], py_g: list[int], short_rows: list[int]) -> list[int]:
    """The Python path of a batch's non-ASCII chunks: each normalised (kept in ``norms``); for word
    n-grams, returns its words' vocabulary ids (their rows appended to ``py_rows``) to join the
    vectorised path's; for character n-grams, appends its hits to ``py_rows``/``py_g`` and its row to
    ``short_rows`` when it has no n-gram."""
    spec = index.spec
    rows = np.flatnonzero(~ascii_mask)
    py_text = texts.take(_arrow_ints(rows)).to_pylist()
    words_text: list[str] = []
    for r, t in zip(rows.tolist(), py_text):
        norm = normalize_text(t or "")
        norms[r] = norm
        if spec.unit == "word":
            words_text.append(_word_chars_only(norm))
        else:
            size = _python_gram_hits(index, norm, r, py_rows, py_g)
            if size == 0:
                short_rows.append(r)
    if not words_text:
        return []
    # The words' ids join the vectorised path's: cut from the UTF-8 bytes by the same numpy path,
    # every byte of another character than ASCII counted a word byte (all are word characters now).
    ids, word_rows = _word_tokens_ascii(index, arrow_strings(words_text), rows, utf8=True)
    py_rows.extend(word_rows.tolist())
    return ids


def _word_chars_only(normalized: str) -> str:
    """A normalised text with every character other than ASCII that is no word character (a dash,
    an ellipsis: ``\\w`` is ``str.isalnum`` and ``_``) made a space: its ``\\w+`` runs are then the
    runs of ASCII word characters and characters other than ASCII, the same words."""
    for c in {c for c in set(normalized) if ord(c) > 127 and not c.isalnum()}:
        normalized = normalized.replace(c, " ")
    return normalized


def _shared_enough(index: QueryIndex, p_row: np.ndarray, p_g: np.ndarray):
    """From the distinct (chunk, query n-gram) pairs, the (chunk, query) pairs that share enough
    n-grams to be verified, with the number they share: three arrays (rows, queries, counts)."""
    per = index.q_ptr[p_g + 1] - index.q_ptr[p_g]
    total = int(per.sum())
    if not total:
        empty = np.zeros(0, np.int64)
        return empty, empty, empty
    rep_row = np.repeat(p_row, per)
    first = np.repeat(index.q_ptr[p_g] - np.concatenate([[0], np.cumsum(per)[:-1]]), per)
    q = index.q_list[np.arange(total) + first]
    Q = len(index.qids)
    rq, shared = np.unique(rep_row * Q + q, return_counts=True)
    keep = shared >= index.need[rq % Q]
    rq = rq[keep]
    return rq // Q, rq % Q, shared[keep]


def _verify(index: QueryIndex, candidates, counts, ids, texts, norms, source, out: _BatchOut, max_matches: int):
    """Exact scores on the real n-gram sets for each candidate (chunk, query); keep the matches.

    A chunk's n-grams come from its words in one pass (:func:`words_of`); its normalised text is
    made only when a mode needs it. A match enters its query's heap of the ``max_matches`` best only
    when it ranks above the heap's least item (and the merged results' floor) on its score, mode,
    chunk id and file; otherwise it would be dropped whatever its span, so it is only counted. Spans
    and contexts are made for the matches kept at the end (:func:`finish_matches`). The kept
    matches and every count are the same as with every span made.
    """
    t = index.threshold
    spec = index.spec
    exact_mode = "exact" in index.modes
    set_modes = [m for m in ("jaccard", "containment") if m in index.modes]
    by_row: dict[int, list[int]] = {}
    for r, qi in sorted(set(candidates)):
        by_row.setdefault(r, []).append(qi)
    rows = list(by_row)
    picked = _arrow_ints(np.array(rows, np.int64))
    raw = dict(zip(rows, texts.take(picked).to_pylist()))
    chunk_ids = ids.take(picked).to_pylist()
    for r, chunk_id in zip(rows, chunk_ids):
        chunk_id = "" if chunk_id is None else str(chunk_id)
        text = raw[r] or ""
        norm = norms.get(r)
        cset = None
        for qi in by_row[r]:
            qnorm = index.norms[qi]
            found: list[tuple[str, float, tuple[int, int] | None]] = []
            if exact_mode and qnorm:
                if norm is None:
                    norm = norms[r] = normalize_text(text)
                m = verbatim_pattern(qnorm).search(norm)
                if m:
                    found.append(("exact", 1.0, (m.start(), m.end())))
            qset_size = int(index.sizes[qi])
            if qset_size and set_modes == ["containment"] and (r, qi) in counts:
                inter = counts[(r, qi)]
                if inter / qset_size >= t:
                    found.append(("containment", inter / qset_size, None))
            elif qset_size and set_modes:
                if cset is None:
                    if spec.unit == "word":
                        cset = word_ngrams(words_of(text), spec.n)
                    else:
                        if norm is None:
                            norm = norms[r] = normalize_text(text)
                        cset = ngram_set(norm, spec)
                    if index.skip:
                        cset -= index.skip
                inter = len(_query_set(index, qi) & cset)
                if inter:
                    for mode in set_modes:
                        if mode == "jaccard":
                            score = inter / (qset_size + len(cset) - inter)
                        else:
                            score = inter / qset_size
                        if score >= t:
                            found.append((mode, score, None))
            if found:  # one call per (chunk, query) that matches, none for the others
                _keep(out, qi, found, chunk_id, source, text, norm, max_matches)


def _keep(out: _BatchOut, qi: int, found, chunk_id: str, source: str, text: str, norm: str | None,
          max_matches: int) -> None:
    """Count the matches ``found`` of query ``qi`` in one chunk and push those that can enter its
    heap of the ``max_matches`` best. A match's span and context wait until the scan of the piece
    ends (:func:`finish_matches`): only the matches still among the best then need them."""
    for mode, score, at in found:
        out.n_matches[qi] = out.n_matches.get(qi, 0) + 1
        heap = out.matches.setdefault(qi, [])
        full = len(heap) >= max_matches
        key = (score, -_MODE_RANK[mode], _Rev(chunk_id), _Rev(source))
        if (full and key < heap[0][:4]) or (qi in out.floors and key < out.floors[qi]):
            continue  # below the heap's least item whatever its span: counted, not kept
        item = (score, -_MODE_RANK[mode], _Rev(chunk_id), _Rev(source), 0, _Pending(qi, mode, text, norm, at))
        if full:
            heapq.heappushpop(heap, item)
        else:
            heapq.heappush(heap, item)


def _keep_counted(index: QueryIndex, out: _BatchOut, rr: np.ndarray, qq: np.ndarray, shared: np.ndarray,
                  ids: pa.Array, texts: pa.Array, source: str, max_matches: int) -> None:
    """:func:`_keep` for containment alone taken from exact counts, where every candidate matches:
    the matches are counted per query at once, and a candidate goes on only when it can enter its
    query's heap (its score above the least kept one's, or equal with a chunk id not after it)."""
    queries, counts = np.unique(qq, return_counts=True)
    for q, c in zip(queries.tolist(), counts.tolist()):
        out.n_matches[q] = out.n_matches.get(q, 0) + c
    scores = shared / index.sizes[qq]  # as the Python division of the same integers
    rank = -_MODE_RANK["containment"]
    heaps = out.matches
    cids = None
    floors = out.floors
    for r, q, score in zip(rr.tolist(), qq.tolist(), scores.tolist()):
        heap = heaps.get(q)
        if heap is None:
            heap = heaps[q] = []
        full = len(heap) >= max_matches
        least = heap[0][:4] if full else None
        floor = floors.get(q)
        if floor is not None and (least is None or least < floor):
            least = floor
        if least is not None and score <= least[0]:
            if score < least[0]:
                continue
            if cids is None:
                cids = ["" if c is None else str(c) for c in ids.to_pylist()]
            if (score, rank, _Rev(cids[r]), _Rev(source)) < least:
                continue
        if cids is None:
            cids = ["" if c is None else str(c) for c in ids.to_pylist()]
        item = (score, rank, _Rev(cids[r]), _Rev(source), 0,
                _Pending(q, "containment", texts[r].as_py() or "", None, None))
        if full:
            heapq.heappushpop(heap, item)
        else:
            heapq.heappush(heap, item)


def finish_matches(index: QueryIndex, heaps: dict) -> None:
    """Give each kept match its span and context (rapidfuzz's ``partial_ratio_alignment`` on the
    normalised chunk for the set modes, once per chunk and query), in place."""
    from rapidfuzz import fuzz

    spans: dict = {}
    for qi, heap in heaps.items():
        for k, item in enumerate(heap):
            pending = item[-1]
            if not isinstance(pending, _Pending):
                continue
            chunk_id = item[2].s
            norm = pending.norm if pending.norm is not None else normalize_text(pending.text)
            at = pending.at
            if at is None:
                key = (qi, chunk_id, item[3].s, id(pending.text))
                at = spans.get(key)
                if at is None:
                    al = fuzz.partial_ratio_alignment(index.norms[qi], norm)
                    at = spans[key] = (al.dest_start, al.dest_end)
            a, b = at
            before, after = context(norm, a, b)
            match = Match(index.qids[qi], chunk_id, pending.mode, item[0], norm[a:b], a, b, item[3].s, before, after)
            heap[k] = _heap_item(match)


class _Pending:
    """A kept match whose span waits for the end of the piece's scan (no part in the comparison)."""

    __slots__ = ("qi", "mode", "text", "norm", "at")

    def __init__(self, qi, mode, text, norm, at):
        self.qi, self.mode, self.text, self.norm, self.at = qi, mode, text, norm, at

    def __lt__(self, other):
        return False

    def __eq__(self, other):
        return True


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


@dataclass
class TaskResult:
    """What one task sends back to the merge: small whatever the size of the corpus piece."""

    chunks: int
    df: np.ndarray
    matches: dict
    n_matches: dict
    seconds: float
    pid: int
    path: str = ""  # the corpus file the piece is part of
    #: The chunks' ids (a string array), for the driver to find ids repeated across the corpus
    #: without reading it a second time.
    ids: pa.Array | None = None


def scan_task(
    task: CorpusPiece, index: QueryIndex, *, batch_size: int = 1024, max_matches: int = 100,
    floors: dict | None = None, finish: bool = True,
) -> TaskResult:
    """Scan one piece of the corpus against the query index (the map step). ``floors``: each
    query's least kept match so far where its merged heap is full (see :class:`_BatchOut`). With
    ``finish`` false the kept matches come back without their span and context (and with their
    chunk's text), for a caller in the same process to finish once all pieces are merged
    (:func:`finish_matches`)."""
    t0 = time.perf_counter()
    out = _BatchOut(df=np.zeros(index.G, dtype=np.int64), floors=floors or {})
    for ids, texts in iter_task_batches(task, batch_size=batch_size):
        _scan_batch(index, ids, texts, task.path, out, max_matches)
    if finish:
        finish_matches(index, out.matches)
    ids = pa.concat_arrays([a.cast(pa.string()) for a in out.ids]) if out.ids else arrow_strings([])
    return TaskResult(out.chunks, out.df, out.matches, out.n_matches, time.perf_counter() - t0, os.getpid(),
                      task.path, ids)
