"""Collapsing search logs to distinct normalised queries.

A log row is one search (or, with a count column, that many searches). Logs (CSV, TSV, JSONL or
Parquet, the text forms maybe gzip-compressed) are read by :mod:`curation.formats.logs` in chunks
with pyarrow's streaming readers, so memory grows with the number of *distinct* queries,
users and (query, user) pairs, and a window of rows of fixed size, never with the number of rows:
a 10-million-row log collapses in about 8 CPU-seconds and under 900 MB peak (see
``bench/bench_sample.py``).

How the collapsing works: chunks are held until :data:`_WINDOW_BYTES` of query and user text has
come; then the raw queries of the whole window are encoded by one pyarrow ``dictionary_encode``
behind the raw strings seen so far (:class:`_Strings`), which gives every row its raw query's
log-wide position with one hash per row, and the users the same way (in a second thread). Raw
queries not seen before are normalised once each, in bulk (:func:`normalize_many`), and their
normalised forms numbered the same way. From there everything is integers: traffic is summed per
(query, stratum) with ``numpy.bincount``, distinct users are kept as packed (query, user)
integer pairs in buckets by query, de-duplicated with pandas' hash-based ``unique``. Only the
final step builds strings again.

A query seen under more than one stratum (say "weather" in two markets) belongs to the stratum
where it has the most traffic (ties: the stratum whose values sort first); its traffic and users
count all its searches. Each distinct query is thus one sampling unit with one qid.

Bad input stops with the file and line (``path:line: message``): when the fast reader or a check
on a chunk fails, the file's chunks collapsed so far are dropped and it is read again by the exact
reader (:func:`curation.formats.logs.exact_batches`), which reports which line is wrong.

One module: the collapse's string ids, buckets and user masses are one
streaming pass; the Dask path (curation.sample.distributed) calls the same pieces.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from curation.formats.fileio import InputError, is_stdin, is_stream
from curation.formats.logs import (
    FAST_READ_ERRORS,
    check_columns,
    check_parquet_types,
    count_values,
    exact_batches,
    fast_batches,
    log_fields,
    log_format,
)
from curation.formats.normalize import normalize_text

_STRATUM_BITS = 24  # at most 16,777,216 strata (a few are sensible)
_MERGE_AT = 1 << 23  # merge partial aggregates once they hold this many entries
_WINDOW_BYTES = 1 << 28  # encode the batches held once their query and user text reaches 256 MiB
_DENSE_CELLS = 1 << 23  # traffic in a queries x strata matrix while it has at most this many cells
_PAIR_BUCKETS = 256  # (query, user) pairs are merged in this many buckets (by query): small hash tables


@dataclass(frozen=True)
class LogStats:
    """What reading the log found."""

    rows: int  # log rows read
    searches: int  # searches they stand for (sum of the count column, else rows)
    distinct_raw: int  # distinct query strings before normalisation
    empty_rows: int  # rows whose query is empty after normalisation (skipped)
    zero_traffic: int  # distinct queries whose searches sum to 0 (dropped)
    multi_stratum: int  # distinct queries seen under more than one stratum
    moved_searches: int = 0  # searches counted in their query's stratum rather than their own row's


@dataclass
class CollapsedLog:
    """Distinct normalised queries of a log.

    ``queries`` is a DataFrame with columns ``text`` (normalised), ``traffic`` (searches, int64),
    ``users`` (distinct users, int64; absent without a user column) and one string column per
    stratum dimension, in the order given; one row per distinct query, ordered by text (unless
    :func:`collapse_log` was asked not to order them).
    """

    queries: pd.DataFrame
    has_users: bool
    stats: LogStats
    #: Per row of ``queries``: its share of a user-weighted mean (:func:`_user_mass`); None without users.
    user_mass: np.ndarray | None = None


# --------------------------------------------------------------------------------------------
# Collapsing


_ASCII_SPACE = r"[\t\n\x0b\x0c\r\x1c-\x1f ]+"  # what Python's \s matches among ASCII characters


def normalize_many(values: pa.Array) -> pa.Array:
    """:func:`~curation.formats.normalize.normalize_text` of every string in ``values``, in bulk.

    Pure-ASCII strings (most of a log) are normalised with pyarrow kernels: for ASCII text NFKC
    changes nothing, case folding is lower-casing, and there are no curly quotes or zero-width
    characters, so only lower-casing and white-space collapsing remain. The rest goes through
    ``normalize_text`` one by one. The two agree exactly (tested with hypothesis).
    """
    values = pc.fill_null(values, "")
    is_ascii = pc.string_is_ascii(values).to_numpy(zero_copy_only=False)
    fast = pc.ascii_lower(values if is_ascii.all() else values.filter(pa.array(is_ascii)))
    # White space to collapse or trim: only those strings go through the (slower) replacement.
    messy = _messy_space(fast)
    if messy.any():
        messy = pa.array(messy)
        tidy = pc.utf8_trim(pc.replace_substring_regex(fast.filter(messy), _ASCII_SPACE, " "), " ")
        fast = pc.replace_with_mask(fast, messy, tidy)
    if is_ascii.all():
        return fast
    slow = pa.array([normalize_text(v) for v in values.filter(pa.array(~is_ascii)).to_pylist()], pa.string())
    order = np.concatenate([np.flatnonzero(is_ascii), np.flatnonzero(~is_ascii)])
    inverse = np.empty_like(order)
    inverse[order] = np.arange(len(order))
    return pa.concat_arrays([fast.cast(pa.string()), slow]).take(pa.array(inverse))


def _messy_space(values: pa.Array) -> np.ndarray:
    """Whether each ASCII string holds white space other than single spaces between words: a
    character of ``_ASCII_SPACE`` but the space, two spaces running, or a space first or last (what
    the regex ``[\\t\\n\\x0b\\x0c\\r\\x1c-\\x1f]|  |^ | $`` finds), from the bytes with numpy (a
    fifth of the regex's time). Two spaces across two strings mark the first, which ends in one."""
    from curation.sample.draw import by_bytes, strings_holding

    def messy(data: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        space = data == 32
        odd = ((data >= 9) & (data <= 13)) | ((data >= 0x1C) & (data <= 0x1F))
        odd[:-1] |= space[:-1] & space[1:]
        out = strings_holding(offsets, np.flatnonzero(odd))
        filled = offsets[1:] > offsets[:-1]
        out[filled] |= space[offsets[:-1][filled]] | space[offsets[1:][filled] - 1]
        return out

    return by_bytes(values.cast(pa.string()), messy)


class _Strings:
    """Distinct strings, each identified by its position, in one pyarrow array (no Python object per string).

    :meth:`ids` finds the position of every value of some arrays with one
    ``pyarrow.compute.dictionary_encode`` over the strings known so far followed by those arrays:
    Arrow's hash table numbers distinct values in order of first appearance, so a known string
    gets its position back and a new one the next free position. Strings are compared whole, so
    two strings are never merged by a hash collision.
    """

    def __init__(self):
        self.values = pa.array([], pa.string())

    def __len__(self) -> int:
        return len(self.values)

    def ids(self, arrays: Sequence[pa.Array]) -> list[np.ndarray]:
        """The position of each value of each array (int32); strings not seen before are added."""
        if not arrays:
            return []
        known = len(self.values)
        head = [self.values] if known else []
        enc = pc.dictionary_encode(pa.chunked_array([*head, *arrays], type=pa.string()))
        if enc.num_chunks != len(head) + len(arrays):  # Arrow keeps the chunks; the ids below rely on it
            raise AssertionError("dictionary_encode changed the chunks")
        if known and not np.array_equal(enc.chunk(0).indices.to_numpy(zero_copy_only=False), np.arange(known)):
            raise AssertionError("dictionary_encode renumbered the known strings")
        self.values = enc.chunk(enc.num_chunks - 1).dictionary
        return [c.indices.to_numpy(zero_copy_only=False) for c in enc.chunks[len(head):]]


class _Recheck(Exception):
    """A chunk failed a check: read the file again slowly to report the exact line."""


def _as_strings(arr) -> pa.Array:
    """A column as ``string`` values, nulls read as ""."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if not pa.types.is_string(arr.type):
        arr = pc.cast(arr, pa.string())
    return pc.fill_null(arr, "") if arr.null_count else arr


class _Collapser:
    """The collapse of one log: fed record batches (:meth:`add`), read at the end (:meth:`finish`).

    Batches are held until about :data:`_WINDOW_BYTES` of query and user text has come, then
    encoded together (:meth:`_flush`): one hash pass over the raw queries and one over the users
    of the whole window give every row its raw query's and user's position in the log-wide
    :class:`_Strings`. Raw queries not seen before are normalised (in bulk, once each) and their
    normalised forms numbered the same way. Traffic is then summed per (query, stratum) with
    ``numpy.bincount`` and the (query, user) pairs packed into integers.
    """

    def __init__(self, query_col: str, count_col: str | None, user_col: str | None, strata: Sequence[str]):
        self.query_col, self.count_col, self.user_col, self.strata = query_col, count_col, user_col, tuple(strata)
        self.raw = _Strings()  # distinct raw query strings
        self.raw_nid = np.zeros(0, dtype=np.int64)  # raw position -> id of its normalised form
        self.norms = _Strings()  # distinct normalised queries (id = position)
        self.norms_are_raw = True  # every raw query so far was its own normalised form (norms == raw)
        self.empty_nid: int | None = None  # the id of "" among them
        self.users = _Strings()  # distinct users (id = position)
        self.user_blank = np.zeros(0, dtype=bool)  # per user id: blank, so no user (the search still counts)
        self.stratum_ids: dict[str, int] = {}
        self.stratum_values: list[tuple[str, ...]] = []
        # Traffic per (query, stratum): dense matrices while queries x strata is small, else summed pandas parts.
        self.dense_traffic = np.zeros((0, 1), dtype=np.int64)
        self.dense_seen = np.zeros((0, 1), dtype=bool)  # a pair seen with 0 searches still counts as seen
        # Sparse: each query's first stratum seen and its traffic there in two arrays by query id (most
        # queries have one stratum), the other (query, stratum) pairs in Series by (nid << 24 | sid).
        self.traffic_parts: list[pd.Series] | None = None
        self.first_sid = np.zeros(0, dtype=np.int32)  # -1: not seen (strata ids fit 24 bits)
        self.first_traffic = np.zeros(0, dtype=np.int64)
        self.traffic_len = 0
        self.traffic_merge_at = _MERGE_AT
        # Distinct (query, user) pairs in buckets by query, each merged on its own: a merge's hash
        # table (pd.unique) holds one bucket, not every pair (the peak memory of a big log).
        self.pair_parts: list[list[np.ndarray]] = [[] for _ in range(_PAIR_BUCKETS)]
        self.pairs_len = [0] * _PAIR_BUCKETS
        self.pairs_merge_at = [_MERGE_AT // _PAIR_BUCKETS] * _PAIR_BUCKETS
        self.pairs_unique = [True] * _PAIR_BUCKETS  # the bucket is one part without repeats
        self.rows = 0
        self.searches = 0
        self.empty_rows = 0
        # The window of batches not yet encoded: (queries, users, stratum ids, counts) per batch.
        self.pending: list[tuple[pa.Array, pa.Array | None, np.ndarray, np.ndarray | None]] = []
        self.pending_bytes = 0

    def copy(self) -> _Collapser:
        """An independent copy (arrays that are only ever replaced are shared)."""
        if self.pending:
            raise AssertionError("copy a collapser between files only")
        other = _Collapser(self.query_col, self.count_col, self.user_col, self.strata)
        other.raw.values, other.raw_nid = self.raw.values, self.raw_nid
        other.norms.values, other.empty_nid = self.norms.values, self.empty_nid
        other.norms_are_raw = self.norms_are_raw
        other.users.values, other.user_blank = self.users.values, self.user_blank
        other.stratum_ids, other.stratum_values = dict(self.stratum_ids), list(self.stratum_values)
        other.dense_traffic, other.dense_seen = self.dense_traffic.copy(), self.dense_seen.copy()
        other.traffic_parts = None if self.traffic_parts is None else list(self.traffic_parts)
        other.first_sid, other.first_traffic = self.first_sid.copy(), self.first_traffic.copy()
        other.traffic_len, other.traffic_merge_at = self.traffic_len, self.traffic_merge_at
        other.pair_parts, other.pairs_len = [list(p) for p in self.pair_parts], list(self.pairs_len)
        other.pairs_merge_at, other.pairs_unique = list(self.pairs_merge_at), list(self.pairs_unique)
        other.rows, other.searches, other.empty_rows = self.rows, self.searches, self.empty_rows
        return other

    def _new_stratum(self, key: str) -> int:
        sid = self.stratum_ids[key] = len(self.stratum_values)
        if sid >= 1 << _STRATUM_BITS:
            raise ValueError(f"strata: more than {1 << _STRATUM_BITS} combinations; choose coarser --stratum columns")
        self.stratum_values.append(tuple(key.split("\x1f")) if self.strata else ())
        return sid

    def _stratum_of_rows(self, batch: pa.RecordBatch) -> np.ndarray:
        n = batch.num_rows
        if not self.strata:
            if not self.stratum_values:
                self._new_stratum("")
            return np.zeros(n, dtype=np.int64)
        cols = [_as_strings(batch.column(c)) for c in self.strata]
        joined = cols[0] if len(cols) == 1 else pc.binary_join_element_wise(*cols, "\x1f")
        enc = pc.dictionary_encode(joined)  # a few distinct values: each looked up once
        lookup = np.array([self.stratum_ids[v] if v in self.stratum_ids else self._new_stratum(v)
                           for v in enc.dictionary.to_pylist()], dtype=np.int64)
        return lookup[enc.indices.to_numpy(zero_copy_only=False)]

    def add(self, batch: pa.RecordBatch) -> None:
        n = batch.num_rows
        if n == 0:
            return
        counts = None
        if self.count_col is not None:
            values = count_values(batch.column(self.count_col))
            if values is None:
                raise _Recheck()
            counts = values.to_numpy(zero_copy_only=False)
        sid = self._stratum_of_rows(batch)
        queries = _as_strings(batch.column(self.query_col))
        users = _as_strings(batch.column(self.user_col)) if self.user_col is not None else None
        self.rows += n
        self.searches += n if counts is None else int(counts.sum())
        self.pending.append((queries, users, sid, counts))
        self.pending_bytes += queries.nbytes + (0 if users is None else users.nbytes)
        if self.pending_bytes >= _WINDOW_BYTES:
            self.flush()

    def flush(self) -> None:
        """Encode the batches held and add them to the totals."""
        if not self.pending:
            return
        queries = [p[0] for p in self.pending]
        users = [p[1] for p in self.pending]
        rest = [(p[2], p[3]) for p in self.pending]  # stratum ids, counts
        self.pending, self.pending_bytes = [], 0
        # The users are encoded in a second thread while the queries are (pyarrow lets go of the GIL).
        with ThreadPoolExecutor(1) as pool:
            user_known = len(self.users)
            users_done = pool.submit(self.users.ids, users) if self.user_col is not None else None
            raw_known = len(self.raw)
            raw_ids = self.raw.ids(queries)
            del queries[:]  # the window's text is freed as soon as it is encoded
            if len(self.raw) > raw_known:  # new raw strings: normalise each once, number their forms
                fresh = self.raw.values.slice(raw_known)
                norms = normalize_many(fresh)
                norm_known = len(self.norms)
                if self.norms_are_raw and pc.all(pc.equal(norms, fresh)).as_py() is not False:
                    # Every raw string so far was already normalised, so the forms are the raw strings,
                    # in the same order, and these new ones are new forms: numbered without a hash pass.
                    self.norms.values = self.raw.values
                    nid = np.arange(norm_known, norm_known + len(fresh), dtype=np.int64)
                else:
                    self.norms_are_raw = False
                    nid = self.norms.ids([norms])[0].astype(np.int64)
                if self.empty_nid is None:
                    empty = pc.equal(self.norms.values.slice(norm_known), "").to_numpy(zero_copy_only=False)
                    if empty.any():
                        self.empty_nid = norm_known + int(np.flatnonzero(empty)[0])
                self.raw_nid = np.concatenate([self.raw_nid, nid])
            user_ids = users_done.result() if users_done is not None else None
        del users[:]
        if len(self.users) > user_known:
            blank = pc.equal(pc.utf8_trim_whitespace(self.users.values.slice(user_known)), "")
            self.user_blank = np.concatenate([self.user_blank, blank.to_numpy(zero_copy_only=False)])
        pa.default_memory_pool().release_unused()  # hand the text's memory back (mimalloc keeps freed pages)
        for j, (sid, counts) in enumerate(rest):
            nid = self.raw_nid[raw_ids[j]]
            keep = None
            if self.empty_nid is not None:
                keep = nid != self.empty_nid
                if keep.all():
                    keep = None
                else:
                    self.empty_rows += int(len(keep) - keep.sum())
                    nid, sid = nid[keep], sid[keep]
                    counts = None if counts is None else counts[keep]
            self._add_traffic(nid, sid, counts)
            if user_ids is not None:
                uid = (user_ids[j] if keep is None else user_ids[j][keep]).astype(np.int64)
                if self.user_blank.any():
                    known = ~self.user_blank[uid]
                    nid, uid = nid[known], uid[known]
                self._add_pairs((nid << 32) | uid)

    def _add_traffic(self, nid: np.ndarray, sid: np.ndarray, counts: np.ndarray | None) -> None:
        n_norms, n_strata = len(self.norms), len(self.stratum_values)
        if self.traffic_parts is None and n_norms * n_strata > _DENSE_CELLS:
            self._go_sparse()
        if self.traffic_parts is None:
            rows, cols = self.dense_traffic.shape
            if rows < n_norms or cols < n_strata:  # grow (the rows by doubling)
                shape = (max(n_norms, 2 * rows) if rows < n_norms else rows, max(cols, n_strata))
                if shape[0] * shape[1] > _DENSE_CELLS:
                    shape = (n_norms, max(cols, n_strata))
                traffic, seen = np.zeros(shape, dtype=np.int64), np.zeros(shape, dtype=bool)
                traffic[:rows, :cols], seen[:rows, :cols] = self.dense_traffic, self.dense_seen
                self.dense_traffic, self.dense_seen = traffic, seen
            width = self.dense_traffic.shape[1]
            keys = nid * width + sid
            self.dense_seen.reshape(-1)[keys] = True
            _add_counts(self.dense_traffic.reshape(-1), keys, counts)
            return
        first = self._first_strata(nid, sid)
        _add_counts(self.first_traffic, nid[first], None if counts is None else counts[first])
        if first.all():
            return
        other = ~first
        nid, sid = nid[other], sid[other]
        keys = (nid << _STRATUM_BITS) | sid
        ones = np.ones(len(nid), np.int64) if counts is None else counts[other]
        part = pd.Series(ones).groupby(keys, sort=False).sum()
        self.traffic_parts.append(part)
        self.traffic_len += len(part)
        if self.traffic_len > self.traffic_merge_at:  # merge when the parts doubled: amortised linear
            self.traffic_merge_at = max(_MERGE_AT, 2 * len(self._merge_traffic()))

    def _first_strata(self, nid: np.ndarray, sid: np.ndarray) -> np.ndarray:
        """Whether each row's stratum is its query's first stratum (given now to the queries not seen
        before: a row's stratum among theirs); the arrays grow to every query id."""
        n_norms = len(self.norms)
        if len(self.first_sid) < n_norms:
            grow = max(n_norms, 2 * len(self.first_sid)) - len(self.first_sid)
            self.first_sid = np.concatenate([self.first_sid, np.full(grow, -1, np.int32)])
            self.first_traffic = np.concatenate([self.first_traffic, np.zeros(grow, np.int64)])
        first = self.first_sid[nid]
        new = first < 0
        if new.any():
            self.first_sid[nid[new]] = sid[new]
            first = self.first_sid[nid]
        return first == sid

    def _go_sparse(self) -> None:
        nid, sid, traffic = self._dense_table()
        self.traffic_parts, self.traffic_len = [], 0
        self.first_sid, self.first_traffic = np.zeros(0, np.int32), np.zeros(0, np.int64)
        self.dense_traffic, self.dense_seen = np.zeros((0, 1), np.int64), np.zeros((0, 1), bool)
        if len(nid):
            self._add_traffic(nid, sid, traffic)

    def _dense_table(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        cells = np.flatnonzero(self.dense_seen.reshape(-1))
        width = self.dense_traffic.shape[1]
        return cells // width, cells % width, self.dense_traffic.reshape(-1)[cells]

    def _add_pairs(self, pairs: np.ndarray) -> None:
        bucket = ((pairs >> 32) % _PAIR_BUCKETS).astype(np.uint8)
        ends = np.cumsum(np.bincount(bucket, minlength=_PAIR_BUCKETS))
        pairs = pairs[np.argsort(bucket, kind="stable")]  # by bucket (a radix sort of bytes)
        for b in range(_PAIR_BUCKETS):
            part = pairs[(ends[b - 1] if b else 0):ends[b]]
            self.pair_parts[b].append(part)
            self.pairs_len[b] += len(part)
            self.pairs_unique[b] = False
            if self.pairs_len[b] > self.pairs_merge_at[b]:  # doubled: merge (amortised linear)
                self.pairs_merge_at[b] = max(_MERGE_AT // _PAIR_BUCKETS, 2 * len(self._merge_bucket(b)))

    def _merge_traffic(self) -> pd.Series:
        if len(self.traffic_parts) != 1:
            merged = pd.concat(self.traffic_parts) if self.traffic_parts else pd.Series([], dtype=np.int64)
            merged = merged.groupby(level=0, sort=False).sum()
            self.traffic_parts = [merged]
        self.traffic_len = len(self.traffic_parts[0])
        return self.traffic_parts[0]

    def traffic_table(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(query id, stratum id, searches) of every (query, stratum) seen (with 0 searches too)."""
        self.flush()
        if self.traffic_parts is None:
            return self._dense_table()
        first_nid = np.flatnonzero(self.first_sid >= 0)
        traffic = self._merge_traffic()
        keys = traffic.index.to_numpy(dtype=np.int64)
        return (np.concatenate([first_nid, keys >> _STRATUM_BITS]),
                np.concatenate([self.first_sid[first_nid], keys & ((1 << _STRATUM_BITS) - 1)]),
                np.concatenate([self.first_traffic[first_nid], traffic.to_numpy(dtype=np.int64)]))

    def _merge_bucket(self, b: int) -> np.ndarray:
        parts = self.pair_parts[b]
        if not self.pairs_unique[b]:
            merged = pd.unique(np.concatenate(parts)) if parts else np.zeros(0, np.int64)
            self.pair_parts[b], self.pairs_unique[b] = [merged], True
        elif not parts:
            self.pair_parts[b] = [np.zeros(0, np.int64)]
        self.pairs_len[b] = len(self.pair_parts[b][0])
        return self.pair_parts[b][0]

    def _merge_pairs(self) -> np.ndarray:
        """Every distinct (query << 32 | user) pair, bucket after bucket."""
        self.flush()
        return np.concatenate([self._merge_bucket(b) for b in range(_PAIR_BUCKETS)])

    def _decide(self):
        """Each query's traffic and stratum (:func:`decide_queries`): (query ids, traffic, stratum
        ids, facts). In the sparse layout only the queries seen under more than one stratum go
        through the table; a query of one stratum is decided by its one (query, stratum) total,
        as the rule decides it (its only stratum is its dominant one; dropped at 0 searches)."""
        self.flush()
        if self.traffic_parts is None:
            nid, sid, traffic = self._dense_table()
            single = np.zeros(0, np.int64)
        else:
            merged = self._merge_traffic()
            side = merged.index.to_numpy(dtype=np.int64)
            multi = np.zeros(len(self.first_sid), dtype=bool)
            multi[side >> _STRATUM_BITS] = True
            single = np.flatnonzero((self.first_sid >= 0) & ~multi)
            first = np.flatnonzero(multi)
            nid = np.concatenate([first, side >> _STRATUM_BITS])
            sid = np.concatenate([self.first_sid[first], side & ((1 << _STRATUM_BITS) - 1)])
            traffic = np.concatenate([self.first_traffic[first], merged.to_numpy(dtype=np.int64)])
        # Rank strata by their values, so ties never depend on the order of the log's rows.
        order = sorted(range(len(self.stratum_values)), key=self.stratum_values.__getitem__)
        srank = np.empty(len(order), dtype=np.int64)
        srank[order] = np.arange(len(order))
        table = pd.DataFrame({"key": nid, "sid": sid, "traffic": traffic,
                              "srank": srank[sid] if len(sid) else np.zeros(0, np.int64)})
        qn, total, qsid, facts = decide_queries(table)
        if len(single):
            single_total = self.first_traffic[single]
            keep = single_total > 0
            facts["zero_traffic"] += int(len(keep) - keep.sum())
            qn = np.concatenate([single[keep], qn])
            total = np.concatenate([single_total[keep], total])
            qsid = np.concatenate([self.first_sid[single[keep]], qsid])
        return qn, total, qsid, facts

    def finish(self, ordered: bool = True) -> CollapsedLog:
        qn, total, qsid, facts = self._decide()
        zero, multi, moved = facts["zero_traffic"], facts["multi_stratum"], facts["moved"]
        chosen = self.norms.values.take(pa.array(qn, pa.int64()))
        if ordered:  # by text (pyarrow sorts the strings: code point order, as Python's), built sorted
            order = pc.sort_indices(chosen).to_numpy(zero_copy_only=False)
            qn, total, qsid, chosen = qn[order], total[order], qsid[order], chosen.take(pa.array(order))
        data = {"text": pd.array(chosen, dtype="string"), "traffic": total}
        mass = None
        if self.user_col is not None:
            self.flush()
            buckets = [self._merge_bucket(b) for b in range(_PAIR_BUCKETS)]
            users, mass = _users_and_mass(buckets, len(self.norms), len(self.users))
            data["users"], mass = users[qn], mass[qn]
        for j, dim in enumerate(self.strata):
            column = pa.array([v[j] for v in self.stratum_values], pa.string())
            data[dim] = pd.array(column.take(pa.array(qsid, pa.int64())), dtype="string")
        queries = pd.DataFrame(data)
        stats = LogStats(rows=self.rows, searches=self.searches, distinct_raw=len(self.raw),
                         empty_rows=self.empty_rows, zero_traffic=zero, multi_stratum=multi, moved_searches=moved)
        return CollapsedLog(queries=queries, has_users=self.user_col is not None, stats=stats, user_mass=mass)


def _add_counts(totals: np.ndarray, keys: np.ndarray, counts: np.ndarray | None) -> None:
    """Add each row's searches (1 a row, or its count) to ``totals`` at its key, exactly."""
    if counts is None:
        totals += np.bincount(keys, minlength=len(totals))
    elif len(counts) and int(counts.max()) * len(counts) < 1 << 53:  # float sums are exact
        totals += np.bincount(keys, weights=counts, minlength=len(totals)).astype(np.int64)
    else:
        np.add.at(totals, keys, counts)


def _pair_groups(buckets: Sequence[np.ndarray], size: int = 1 << 20):
    """The pairs of consecutive buckets joined into arrays of about ``size`` (a query stays in one)."""
    group: list[np.ndarray] = []
    held = 0
    for pairs in buckets:
        group.append(pairs)
        held += len(pairs)
        if held >= size:
            yield np.concatenate(group)
            group, held = [], 0
    if held:
        yield np.concatenate(group)


def _users_and_mass(buckets: Sequence[np.ndarray], n_texts: int, n_users: int) -> tuple[np.ndarray, np.ndarray]:
    """Each query's distinct users and its share of a user-weighted mean, from the distinct packed
    (query, user) pairs in buckets by query (user ids below ``n_users``). The share: every user
    counts once and their distinct queries share that one unit equally, so query i gets ``sum
    over its users u of 1 / |Q_u|``, divided by the number of users (the masses sum to 1)."""
    users = np.zeros(n_texts, dtype=np.int64)
    per_user = np.zeros(n_users, dtype=np.int64)
    for pairs in _pair_groups(buckets):
        users += np.bincount(pairs >> 32, minlength=n_texts)
        per_user += np.bincount(pairs & 0xFFFFFFFF, minlength=n_users)
    n = int(np.count_nonzero(per_user))
    mass = np.zeros(n_texts)
    if not n:
        return users, mass
    for pairs in _pair_groups(buckets):  # a group at a time: the arrays below are a group long
        c = per_user[pairs & 0xFFFFFFFF]
        # Each query's shares are added in one order whatever the log's row order (user ids
        # follow it): from the smallest share up, so the same log gives the same masses to the
        # bit. np.bincount adds a bin's weights in array order, so sorting the group by the share
        # alone orders every query's additions (a stable radix sort when the counts fit 16 bits);
        # a query's pairs are all in one group, so adding the groups' sums adds 0 to the others.
        key = c.max() - c
        order = np.argsort(key.astype(np.uint16) if key.max() < 1 << 16 else key, kind="stable")
        del key
        qid = pairs[order] >> 32
        share = 1.0 / c[order]
        del c, order
        mass += np.bincount(qid, weights=share, minlength=n_texts)
    return users, mass / n


def decide_queries(table: pd.DataFrame):
    """Each query's traffic and stratum from its (query, stratum) traffic: the one rule of
    :class:`CollapsedLog`, used by one process and by each bucket of the Dask collapse.

    ``table`` has columns ``key`` (the query), ``sid`` (its stratum), ``traffic`` and ``srank``
    (the stratum's rank by its values). Returns (keys, total traffic, dominant sid, facts) for
    the queries with traffic > 0: the dominant stratum has the most traffic, ties to the lower
    ``srank``. ``facts``: ``zero_traffic``, ``multi_stratum`` and ``moved`` searches."""
    per_query = table.groupby("key", sort=False)["traffic"].agg(["sum", "size"])
    multi = int((per_query["size"] > 1).sum())
    dominant = table.sort_values(["key", "traffic", "srank"], ascending=[True, False, True], kind="stable")
    dominant = dominant.drop_duplicates("key", keep="first")
    qn = dominant["key"].to_numpy()
    moved = int(table["traffic"].sum()) - int(dominant["traffic"].sum())
    total = per_query["sum"].reindex(qn).to_numpy(dtype=np.int64)
    keep = total > 0
    zero = int((~keep).sum())
    facts = {"zero_traffic": zero, "multi_stratum": multi, "moved": moved}
    return qn[keep], total[keep], dominant["sid"].to_numpy()[keep], facts


def check_log_request(paths, query_col, count_col, user_col, strata) -> tuple[list[str], tuple[str, ...]]:
    """The checks of :func:`collapse_log`'s arguments: (the log files, strata as a tuple)."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    paths = expand_log_paths(paths)
    if not paths:
        raise ValueError("paths: give at least one log file")
    if not query_col:
        raise ValueError("query_col: name the column that holds the query text")
    strata = tuple(strata)
    named = [query_col, *strata] + [c for c in (count_col, user_col) if c]
    if len(set(named)) != len(named):
        raise ValueError(f"query_col, count_col, user_col and strata must name different columns (got {named})")
    return paths, strata


def expand_log_paths(paths) -> list[str]:
    """The log files that paths name: a file as it is; a folder (a partitioned dataset) as every
    file under it with a log suffix, in path order; a glob pattern matching no file by its own
    name as the files it matches, in order."""
    import glob

    from curation.formats.fileio import base_suffix
    from curation.formats.logs import FORMATS

    out: list[str] = []
    for p in paths:
        p = str(p)
        if os.path.isdir(p):
            found = sorted(str(f) for f in Path(p).rglob("*") if f.is_file() and base_suffix(f) in FORMATS
                           and not f.name.startswith((".", "_")))
            if not found:
                raise InputError(p, None, "a folder without log files (.csv, .tsv, .jsonl or .parquet)")
            out.extend(found)
        elif not os.path.exists(p) and glob.has_magic(p):
            found = sorted(glob.glob(p, recursive=True))
            if not found:
                raise InputError(p, None, "no file matches this pattern")
            out.extend(found)
        else:
            out.append(p)
    return out


@dataclass
class PieceCollapse:
    """One log file collapsed with strings for keys (the map step of the Dask collapse)."""

    traffic: pd.DataFrame  # text, stratum (values joined by \x1f), traffic
    pairs: pd.DataFrame | None  # distinct text, user (non-blank users); None without a user column
    raw: pd.DataFrame  # raw: the distinct raw query strings
    counts: dict  # rows, searches, empty_rows


def collapse_piece(path: str, *, query_col: str, count_col: str | None, user_col: str | None,
                   strata: Sequence[str]) -> PieceCollapse:
    """Read and collapse one log file as :func:`collapse_log` does, keyed by strings, not by
    this process's integer codes, so pieces read in other processes can be merged."""
    strata = tuple(strata)
    columns = [query_col, *strata] + [c for c in (count_col, user_col) if c]
    c = _read_path(path, columns, _Collapser(query_col, count_col, user_col, strata), _progress(False))
    nid, sid, traffic = c.traffic_table()
    norms = c.norms.values.to_numpy(zero_copy_only=False)
    labels = np.array(["\x1f".join(v) for v in c.stratum_values], dtype=object)
    frame = pd.DataFrame({"text": norms[nid] if len(nid) else np.zeros(0, object),
                          "stratum": labels[sid] if len(sid) else np.zeros(0, object),
                          "traffic": traffic})
    pairs = None
    if user_col is not None:
        packed = c._merge_pairs()
        users = c.users.values.to_numpy(zero_copy_only=False)
        pairs = pd.DataFrame({"text": norms[packed >> 32] if len(packed) else np.zeros(0, object),
                              "user": users[packed & 0xFFFFFFFF] if len(packed) else np.zeros(0, object)})
    raw = pd.DataFrame({"raw": c.raw.values.to_numpy(zero_copy_only=False)})
    return PieceCollapse(traffic=frame, pairs=pairs, raw=raw,
                         counts={"rows": c.rows, "searches": c.searches, "empty_rows": c.empty_rows})


def resolve_queries(traffic: pd.DataFrame, pairs: pd.DataFrame | None, *, strata: Sequence[str]):
    """Distinct queries from string-keyed (text, stratum, traffic) rows and (text, user) pairs
    holding every row of their queries: the columns of :attr:`CollapsedLog.queries` (unsorted),
    and the facts of :func:`decide_queries`."""
    strata = tuple(strata)
    labels = sorted(set(traffic["stratum"].tolist()), key=lambda k: tuple(k.split("\x1f")) if strata else ())
    rank = {k: i for i, k in enumerate(labels)}
    table = pd.DataFrame({"key": traffic["text"].to_numpy(dtype=object),
                          "sid": traffic["stratum"].to_numpy(dtype=object),
                          "traffic": traffic["traffic"].to_numpy(dtype=np.int64),
                          "srank": np.array([rank[k] for k in traffic["stratum"].tolist()], dtype=np.int64)})
    texts, total, qsid, facts = decide_queries(table)
    data = {"text": pd.array(texts, dtype="string"), "traffic": total}
    if pairs is not None:
        per_text = pairs["text"].value_counts()
        data["users"] = per_text.reindex(texts).fillna(0).to_numpy(dtype=np.int64)
    for j, dim in enumerate(strata):
        data[dim] = pd.array([k.split("\x1f")[j] for k in qsid.tolist()], dtype="string")
    return pd.DataFrame(data), facts


def collapse_log(
    paths: str | os.PathLike | Sequence[str | os.PathLike],
    *,
    query_col: str,
    count_col: str | None = None,
    user_col: str | None = None,
    strata: Sequence[str] = (),
    progress: bool = False,
    ordered: bool = True,
) -> CollapsedLog:
    """Read one or more log files and collapse them to distinct normalised queries.

    Returns each distinct query (after :func:`~curation.formats.normalize.normalize_text`) with its
    traffic (the number of searches: rows, or the sum of ``count_col``), the number of distinct
    non-empty values of ``user_col`` among its searches, and its stratum (the values of
    ``strata`` columns where it has most traffic). Rows whose query is empty after normalisation
    are skipped and counted in ``stats.empty_rows``. Several files are read as one log. The
    queries come ordered by text; with ``ordered=False`` in an order of the collapse's own (the
    same for the same log), which spares sorting them all (the sampler needs no text order).

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "log.csv"
    >>> _ = p.write_text("q,u\\nWeather ,a\\nweather,b\\nweather,a\\nNews,a\\n")
    >>> collapse_log(p, query_col="q", user_col="u").queries.to_dict("records")
    [{'text': 'news', 'traffic': 1, 'users': 1}, {'text': 'weather', 'traffic': 3, 'users': 2}]
    """
    paths, strata = check_log_request(paths, query_col, count_col, user_col, strata)
    columns = [query_col, *strata] + [c for c in (count_col, user_col) if c]
    collapser = _Collapser(query_col, count_col, user_col, strata)
    bar = _progress(progress)
    try:
        for path in paths:
            collapser = _read_path(path, columns, collapser, bar)
    finally:
        bar.close()
    return collapser.finish(ordered)


def _read_path(path: str, columns: list[str], collapser: _Collapser, bar) -> _Collapser:
    if not os.path.exists(path) and not is_stdin(path):
        raise InputError(path, None, "no such file")
    fmt = log_format(path)
    try:
        return _read_one(path, fmt, columns, collapser, bar)
    except UnicodeDecodeError as exc:
        raise InputError(path, None, f"not UTF-8 text ({exc.reason}); re-save the log as UTF-8") from None


def _read_one(path: str, fmt: str, columns: list[str], collapser: _Collapser, bar) -> _Collapser:
    """Add one file to a copy of ``collapser`` and return the copy (``collapser`` is left as it was)."""
    count_col = collapser.count_col
    if is_stream(path):  # a pipe is read once: by the exact reader, which checks the header as it comes
        if fmt == "parquet":
            raise InputError(path, None, "a Parquet log must be a regular file (Parquet is read by seeking), "
                                         "not a pipe or standard input")
        attempt = collapser.copy()
        for batch in exact_batches(path, fmt, columns, count_col,
                                   lambda present: check_columns(path, fmt, present, columns)):
            attempt.add(batch)
            bar.update(batch.num_rows)
        attempt.flush()
        return attempt
    present, first = log_fields(path, fmt)
    check_columns(path, fmt, present, columns)
    if fmt == "parquet":
        check_parquet_types(path, columns, count_col)
    # Read fast into a copy of the collapser; on any doubt, re-read slowly for the exact line.
    attempt = collapser.copy()
    try:
        for batch in _read_ahead(fast_batches(path, fmt, columns, count_col, first)):
            attempt.add(batch)
            bar.update(batch.num_rows)
        attempt.flush()
    except (*FAST_READ_ERRORS, _Recheck):
        attempt = collapser.copy()
        for batch in exact_batches(path, fmt, columns, count_col):
            attempt.add(batch)
        attempt.flush()
    return attempt


def _read_ahead(batches):
    """``batches``, read one ahead in a second thread: pyarrow's streaming readers parse a block
    only when asked, so this lets the next block be read while the last one is collapsed. An
    error of the reader is raised here, in the caller's thread."""
    import queue
    import threading

    slot: queue.Queue = queue.Queue(1)
    stop = threading.Event()
    done = object()

    def hand(item) -> bool:
        while not stop.is_set():
            try:
                slot.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def work():
        try:
            for batch in batches:
                if not hand((batch, None)):
                    return
            hand((done, None))
        except BaseException as exc:  # handed to the caller, which raises it
            hand((None, exc))

    worker = threading.Thread(target=work, name="golden-log-reader", daemon=True)
    worker.start()
    try:
        while True:
            batch, exc = slot.get()
            if exc is not None:
                raise exc
            if batch is done:
                return
            yield batch
    finally:
        stop.set()
        worker.join()


def _progress(enabled: bool):
    from tqdm import tqdm

    # disable=None: shown on a terminal only, so piped and test output stays clean.
    return tqdm(total=None, unit=" rows", unit_scale=True, desc="reading log", disable=None if enabled else True)
