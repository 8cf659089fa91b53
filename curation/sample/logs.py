"""Collapsing search logs to distinct normalised queries.

A log row is one search (or, with a count column, that many searches). Logs (CSV, TSV, JSONL or
Parquet, the text forms maybe gzip-compressed) are read by :mod:`curation.formats.logs` in chunks
with pyarrow's streaming readers, so memory grows with the number of *distinct* queries,
users and (query, user) pairs, never with the number of rows: a 10-million-row log collapses in
about 15 CPU-seconds and under 1 GB peak (see ``bench/bench_sample.py``).

How the collapsing works, per chunk: each distinct raw query string is normalised once
(:func:`curation.formats.normalize.normalize_text`, cached across chunks) and mapped to an integer id of
its normalised form; users and strata are mapped to integer ids the same way (:class:`_Vocab`: the
strings in pyarrow arrays, found by their 64-bit hashes, no Python object per string). Traffic is
summed per (query, stratum) and distinct users are kept as packed (query, user) integer pairs, in
buckets by query, de-duplicated with pandas' hash-based ``unique``. Only the final step builds
strings again.

A query seen under more than one stratum (say "weather" in two markets) belongs to the stratum
where it has the most traffic (ties: the stratum whose values sort first); its traffic and users
count all its searches. Each distinct query is thus one sampling unit with one qid.

Bad input stops with the file and line (``path:line: message``): when the fast reader or a check
on a chunk fails, the file's chunks collapsed so far are dropped and it is read again by the exact
reader (:func:`curation.formats.logs.exact_batches`), which reports which line is wrong.

One module (about 600 lines): the collapse's vocabularies, buckets and user masses are one
streaming pass; the Dask path (curation.sample.distributed) calls the same pieces.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from curation.formats.fileio import InputError
from curation.formats.logs import (
    FAST_READ_ERRORS,
    check_columns,
    count_values,
    exact_batches,
    fast_batches,
    log_fields,
    log_format,
)
from curation.formats.normalize import normalize_text

_STRATUM_BITS = 24  # at most 16,777,216 strata (a few are sensible)
_MERGE_AT = 1 << 23  # merge partial aggregates once they hold this many entries
_PAIR_BUCKETS = 8  # (query, user) pairs are merged in this many buckets (by query)


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
    stratum dimension, in the order given; one row per distinct query, ordered by text.
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
    fast = pc.ascii_lower(values.filter(pa.array(is_ascii)))
    fast = pc.utf8_trim(pc.replace_substring_regex(fast, _ASCII_SPACE, " "), " ")
    if is_ascii.all():
        return fast
    slow = pa.array([normalize_text(v) for v in values.filter(pa.array(~is_ascii)).to_pylist()], pa.string())
    order = np.concatenate([np.flatnonzero(is_ascii), np.flatnonzero(~is_ascii)])
    inverse = np.empty_like(order)
    inverse[order] = np.arange(len(order))
    return pa.concat_arrays([fast.cast(pa.string()), slow]).take(pa.array(inverse))


class _Vocab:
    """Distinct strings seen so far, each with an integer code, without a Python object per string.

    The strings are kept in pyarrow arrays in the order first seen (their *position*); a sorted
    numpy array of their 64-bit keyed hashes (``pandas.util.hash_array``, the same in every
    process), with each hash's position beside it, finds a chunk's distinct values by binary
    search. Every hit is confirmed by comparing the strings themselves (pyarrow), so two strings
    are never merged by a hash collision: a string whose hash another string holds is kept in a
    small dict. Only the strings not seen before are handed, in bulk, to ``make_codes``. (A dict
    of Python strings, as before, took about 130 bytes a string: most of the memory of a
    10-million-row log with 3.9 million distinct raw queries, queries and users.)
    """

    def __init__(self):
        self.hashes = np.zeros(0, dtype=np.uint64)  # sorted
        self.hpos = np.zeros(0, dtype=np.int64)  # the position of the string with each hash
        self.codes = np.zeros(0, dtype=np.int64)  # position -> code
        self.chunks: list[pa.Array] = []  # the strings, by position
        self._joined: pa.Array | None = None
        self.clash: dict[str, int] = {}  # strings whose hash another string holds -> position

    def __len__(self) -> int:
        return len(self.codes)

    def copy(self) -> _Vocab:
        other = _Vocab()  # the arrays are replaced, never changed in place: sharing them is a copy
        other.hashes, other.hpos, other.codes = self.hashes, self.hpos, self.codes
        other.chunks, other._joined, other.clash = list(self.chunks), self._joined, dict(self.clash)
        return other

    def strings(self) -> pa.Array:
        """Every string, by position (one array)."""
        if self._joined is None or len(self._joined) != len(self.codes):
            self._joined = pa.concat_arrays(self.chunks) if self.chunks else pa.array([], pa.string())
            self.chunks = [self._joined]
        return self._joined

    @property
    def values(self) -> list[str]:
        return self.strings().to_pylist()

    def lookup(self, uniques: pa.Array, make_codes: Callable[[pa.Array], np.ndarray]) -> np.ndarray:
        """Codes of distinct ``uniques``; ``make_codes`` gives the codes of strings not seen before."""
        n = len(uniques)
        if n == 0:
            return np.zeros(0, dtype=np.int64)
        if not pa.types.is_string(uniques.type):
            uniques = uniques.cast(pa.string())
        h = pd.util.hash_array(uniques.to_numpy(zero_copy_only=False))
        pos = np.full(n, -1, dtype=np.int64)
        clashing = np.zeros(n, dtype=bool)
        if len(self.hashes):
            at = np.minimum(np.searchsorted(self.hashes, h), len(self.hashes) - 1)
            hit = np.flatnonzero(self.hashes[at] == h)
            if len(hit):
                cand = self.hpos[at[hit]]
                same = pc.equal(uniques.take(pa.array(hit)), self.strings().take(pa.array(cand)))
                same = same.to_numpy(zero_copy_only=False)
                pos[hit[same]] = cand[same]
                clashing[hit[~same]] = True
        if self.clash:
            for j in np.flatnonzero(clashing).tolist():
                pos[j] = self.clash.get(uniques[j].as_py(), -1)
        out = np.where(pos >= 0, self.codes[np.maximum(pos, 0)] if len(self.codes) else -1, -1)
        missing = np.flatnonzero(pos < 0)
        if len(missing):
            new = uniques.take(pa.array(missing))
            codes = np.asarray(make_codes(new), dtype=np.int64)
            out[missing] = codes
            start = len(self.codes)
            new_pos = np.arange(start, start + len(missing), dtype=np.int64)
            self.codes = np.concatenate([self.codes, codes])
            self.chunks.append(new)
            self._joined = None
            hn = h[missing]
            # A new string whose hash is already held (by an older or an earlier new string) goes to the dict.
            order = np.argsort(hn, kind="stable")
            hs, ps = hn[order], new_pos[order]
            first = np.ones(len(hs), dtype=bool)
            first[1:] = hs[1:] != hs[:-1]
            taken = clashing[missing][order] | ~first
            if len(self.hashes):
                at = np.minimum(np.searchsorted(self.hashes, hs), len(self.hashes) - 1)
                taken |= self.hashes[at] == hs
            for p in ps[taken].tolist():
                self.clash[new[int(p - start)].as_py()] = p
            keep = ~taken
            ins = np.searchsorted(self.hashes, hs[keep])
            self.hashes = np.insert(self.hashes, ins, hs[keep])
            self.hpos = np.insert(self.hpos, ins, ps[keep])
        return out


class _Recheck(Exception):
    """A chunk failed a check: read the file again slowly to report the exact line."""


class _Collapser:
    def __init__(self, query_col: str, count_col: str | None, user_col: str | None, strata: Sequence[str]):
        self.query_col, self.count_col, self.user_col, self.strata = query_col, count_col, user_col, tuple(strata)
        self.raw = _Vocab()  # raw query -> id of its normalised form
        self.norms = _Vocab()  # normalised query -> id (its position)
        self.empty_nid: int | None = None
        self.users = _Vocab()  # user -> id, -1 for a blank user
        self.next_user = 0
        self.stratum_ids: dict[str, int] = {}
        self.stratum_values: list[tuple[str, ...]] = []
        self.traffic_parts: list[pd.Series] = []
        self.traffic_len = 0
        self.traffic_merge_at = _MERGE_AT
        # Distinct (query, user) pairs in buckets by query, each merged on its own: a merge's hash
        # table (pd.unique) holds one bucket, not every pair (the peak memory of a big log).
        self.pair_parts: list[list[np.ndarray]] = [[] for _ in range(_PAIR_BUCKETS)]
        self.pairs_len = [0] * _PAIR_BUCKETS
        self.pairs_merge_at = [_MERGE_AT // _PAIR_BUCKETS] * _PAIR_BUCKETS
        self.rows = 0
        self.searches = 0
        self.empty_rows = 0

    @staticmethod
    def _uniques(arr: pa.Array) -> tuple[pa.Array, np.ndarray]:
        """(distinct values, index of each row's value) of a string column, nulls read as ""."""
        if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
            arr = pc.cast(arr, pa.string())
        enc = pc.dictionary_encode(pc.fill_null(arr, ""))
        if isinstance(enc, pa.ChunkedArray):
            enc = enc.combine_chunks()
        return enc.dictionary, enc.indices.to_numpy(zero_copy_only=False)

    @staticmethod
    def _encode(arr: pa.Array, index: dict, new: Callable[[str], int]) -> np.ndarray:
        values, rows = _Collapser._uniques(arr)
        values = values.to_pylist()
        lookup = np.fromiter((index[v] if v in index else new(v) for v in values), dtype=np.int64, count=len(values))
        return lookup[rows]

    def _new_norms(self, norms: pa.Array) -> np.ndarray:
        codes = np.arange(len(self.norms), len(self.norms) + len(norms), dtype=np.int64)
        empty = np.flatnonzero(pc.equal(norms, "").to_numpy(zero_copy_only=False))
        if len(empty):
            self.empty_nid = int(codes[empty[0]])
        return codes

    def _new_raw(self, raws: pa.Array) -> np.ndarray:
        # New raw strings may share a normalised form ("Weather", "weather "): look up each form once.
        values, rows = self._uniques(normalize_many(raws))
        return self.norms.lookup(values, self._new_norms)[rows]

    def _new_users(self, users: pa.Array) -> np.ndarray:
        codes = np.arange(self.next_user, self.next_user + len(users), dtype=np.int64)
        self.next_user += len(users)
        blank = pc.equal(pc.utf8_trim_whitespace(users), "").to_numpy(zero_copy_only=False)
        codes[blank] = -1  # a blank user is no user: the search counts, no one is added
        return codes

    def _new_stratum(self, key: str) -> int:
        sid = self.stratum_ids[key] = len(self.stratum_values)
        if sid >= 1 << _STRATUM_BITS:
            raise ValueError(f"strata: more than {1 << _STRATUM_BITS} combinations; choose coarser --stratum columns")
        self.stratum_values.append(tuple(key.split("\x1f")) if self.strata else ())
        return sid

    def add(self, batch: pa.RecordBatch) -> None:
        n = batch.num_rows
        if n == 0:
            return
        if self.count_col is not None:
            counts = count_values(batch.column(self.count_col))
            if counts is None:
                raise _Recheck()
            counts = counts.to_numpy(zero_copy_only=False)
        else:
            counts = np.ones(n, dtype=np.int64)
        values, rows = self._uniques(batch.column(self.query_col))
        nid = self.raw.lookup(values, self._new_raw)[rows]
        if self.strata:
            cols = [pc.fill_null(pc.cast(batch.column(c), pa.string()), "") for c in self.strata]
            joined = cols[0] if len(cols) == 1 else pc.binary_join_element_wise(*cols, "\x1f")
            sid = self._encode(joined, self.stratum_ids, self._new_stratum)
        else:
            if not self.stratum_values:
                self._new_stratum("")
            sid = np.zeros(n, dtype=np.int64)
        self.rows += n
        self.searches += int(counts.sum())
        empty = self.empty_nid
        if empty is not None:
            is_empty = nid == empty
            if is_empty.any():
                self.empty_rows += int(is_empty.sum())
                keep = ~is_empty
                nid, sid, counts = nid[keep], sid[keep], counts[keep]
                batch = batch.filter(pa.array(keep))
        keys = (nid << _STRATUM_BITS) | sid
        part = pd.Series(counts).groupby(keys, sort=False).sum()
        self.traffic_parts.append(part)
        self.traffic_len += len(part)
        if self.traffic_len > self.traffic_merge_at:  # merge when the parts doubled: amortised linear
            self.traffic_merge_at = max(_MERGE_AT, 2 * len(self._merge_traffic()))
        if self.user_col is not None:
            values, rows = self._uniques(batch.column(self.user_col))
            uid = self.users.lookup(values, self._new_users)[rows]
            known = uid >= 0
            pairs = pd.unique((nid[known] << 32) | uid[known])
            bucket = (pairs >> 32) % _PAIR_BUCKETS
            for b in range(_PAIR_BUCKETS):
                part = pairs[bucket == b]
                self.pair_parts[b].append(part)
                self.pairs_len[b] += len(part)
                if self.pairs_len[b] > self.pairs_merge_at[b]:  # doubled: merge (amortised linear)
                    self.pairs_merge_at[b] = max(_MERGE_AT // _PAIR_BUCKETS, 2 * len(self._merge_bucket(b)))

    def _merge_traffic(self) -> pd.Series:
        if len(self.traffic_parts) != 1:
            merged = pd.concat(self.traffic_parts) if self.traffic_parts else pd.Series([], dtype=np.int64)
            merged = merged.groupby(level=0, sort=False).sum()
            self.traffic_parts = [merged]
        self.traffic_len = len(self.traffic_parts[0])
        return self.traffic_parts[0]

    def _merge_bucket(self, b: int) -> np.ndarray:
        parts = self.pair_parts[b]
        if len(parts) != 1:
            merged = pd.unique(np.concatenate(parts)) if parts else np.zeros(0, np.int64)
            self.pair_parts[b] = [merged]
        self.pairs_len[b] = len(self.pair_parts[b][0])
        return self.pair_parts[b][0]

    def _merge_pairs(self) -> np.ndarray:
        """Every distinct (query << 32 | user) pair, bucket after bucket."""
        return np.concatenate([self._merge_bucket(b) for b in range(_PAIR_BUCKETS)])

    def finish(self) -> CollapsedLog:
        traffic = self._merge_traffic()
        keys = traffic.index.to_numpy(dtype=np.int64)
        nid = keys >> _STRATUM_BITS
        sid = keys & ((1 << _STRATUM_BITS) - 1)
        # Rank strata by their values, so ties never depend on the order of the log's rows.
        order = sorted(range(len(self.stratum_values)), key=self.stratum_values.__getitem__)
        srank = np.empty(len(order), dtype=np.int64)
        srank[order] = np.arange(len(order))
        table = pd.DataFrame({"key": nid, "sid": sid, "traffic": traffic.to_numpy(dtype=np.int64),
                              "srank": srank[sid] if len(sid) else np.zeros(0, np.int64)})
        qn, total, qsid, facts = decide_queries(table)
        zero, multi, moved = facts["zero_traffic"], facts["multi_stratum"], facts["moved"]
        texts = self.norms.strings()
        data = {"text": pd.array(texts.take(pa.array(qn, pa.int64())).to_numpy(zero_copy_only=False), dtype="string"),
                "traffic": total}
        if self.user_col is not None:
            pairs = self._merge_pairs()
            users = np.bincount(pairs >> 32, minlength=len(texts)) if len(pairs) else np.zeros(len(texts), np.int64)
            data["users"] = users[qn].astype(np.int64)
            data["user_mass"] = _user_mass(pairs, len(texts))[qn]
        for j, dim in enumerate(self.strata):
            column = np.array([v[j] for v in self.stratum_values], dtype=object)
            data[dim] = pd.array(column[qsid], dtype="string") if len(qsid) else pd.array([], dtype="string")
        queries = pd.DataFrame(data)
        queries = queries.sort_values("text", kind="stable").reset_index(drop=True)
        mass = queries.pop("user_mass").to_numpy(dtype=np.float64) if "user_mass" in queries else None
        stats = LogStats(rows=self.rows, searches=self.searches, distinct_raw=len(self.raw),
                         empty_rows=self.empty_rows, zero_traffic=zero, multi_stratum=multi, moved_searches=moved)
        return CollapsedLog(queries=queries, has_users=self.user_col is not None, stats=stats, user_mass=mass)


def _user_mass(pairs: np.ndarray, n_texts: int) -> np.ndarray:
    """Each query's share of a user-weighted mean: every user counts once and their distinct
    queries share that one unit equally, so query i gets ``sum over its users u of 1 / |Q_u|``,
    divided by the number of users (the masses sum to 1). From the packed (query, user) pairs."""
    if not len(pairs):
        return np.zeros(n_texts)
    _, inverse, per_user = np.unique(pairs & 0xFFFFFFFF, return_inverse=True, return_counts=True)
    share = 1.0 / per_user[inverse]
    qid = pairs >> 32
    # Summed in one order whatever the log's row order (user ids follow it): by query, then by
    # value, so the same log gives the same masses to the bit.
    order = np.lexsort((share, qid))
    return np.bincount(qid[order], weights=share[order], minlength=n_texts) / len(per_user)


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
    traffic = c._merge_traffic()
    keys = traffic.index.to_numpy(dtype=np.int64)
    nid, sid = keys >> _STRATUM_BITS, keys & ((1 << _STRATUM_BITS) - 1)
    norms = c.norms.strings().to_numpy(zero_copy_only=False)
    labels = np.array(["\x1f".join(v) for v in c.stratum_values], dtype=object)
    frame = pd.DataFrame({"text": norms[nid] if len(nid) else np.zeros(0, object),
                          "stratum": labels[sid] if len(sid) else np.zeros(0, object),
                          "traffic": traffic.to_numpy(dtype=np.int64)})
    pairs = None
    if user_col is not None:
        packed = c._merge_pairs()
        users = c.users.strings().to_numpy(zero_copy_only=False)
        pairs = pd.DataFrame({"text": norms[packed >> 32] if len(packed) else np.zeros(0, object),
                              "user": users[packed & 0xFFFFFFFF] if len(packed) else np.zeros(0, object)})
    raw = pd.DataFrame({"raw": c.raw.strings().to_numpy(zero_copy_only=False)})
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
) -> CollapsedLog:
    """Read one or more log files and collapse them to distinct normalised queries.

    Returns each distinct query (after :func:`~curation.formats.normalize.normalize_text`) with its
    traffic (the number of searches: rows, or the sum of ``count_col``), the number of distinct
    non-empty values of ``user_col`` among its searches, and its stratum (the values of
    ``strata`` columns where it has most traffic). Rows whose query is empty after normalisation
    are skipped and counted in ``stats.empty_rows``. Several files are read as one log.

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
    return collapser.finish()


def _read_path(path: str, columns: list[str], collapser: _Collapser, bar) -> _Collapser:
    if not os.path.exists(path):
        raise InputError(path, None, "no such file")
    fmt = log_format(path)
    try:
        return _read_one(path, fmt, columns, collapser, bar)
    except UnicodeDecodeError as exc:
        raise InputError(path, None, f"not UTF-8 text ({exc.reason}); re-save the log as UTF-8") from None


def _read_one(path: str, fmt: str, columns: list[str], collapser: _Collapser, bar) -> _Collapser:
    """Add one file to a copy of ``collapser`` and return the copy (``collapser`` is left as it was)."""
    query_col, count_col = collapser.query_col, collapser.count_col
    user_col, strata = collapser.user_col, collapser.strata
    present, first = log_fields(path, fmt)
    check_columns(path, fmt, present, columns)
    # Read fast into a scratch collapser; on any doubt, re-read slowly for the exact line.
    attempt = _Collapser(query_col, count_col, user_col, strata)
    _adopt(attempt, collapser)
    try:
        for batch in fast_batches(path, fmt, columns, count_col, first):
            attempt.add(batch)
            bar.update(batch.num_rows)
    except (*FAST_READ_ERRORS, _Recheck):
        attempt = _Collapser(query_col, count_col, user_col, strata)
        _adopt(attempt, collapser)
        for batch in exact_batches(path, fmt, columns, count_col):
            attempt.add(batch)
    return attempt


def _adopt(target: _Collapser, source: _Collapser) -> None:
    """Start ``target`` from ``source``'s state (copies, so a failed attempt leaves ``source`` intact)."""
    target.raw, target.norms, target.users = source.raw.copy(), source.norms.copy(), source.users.copy()
    target.empty_nid, target.next_user = source.empty_nid, source.next_user
    target.stratum_ids, target.stratum_values = dict(source.stratum_ids), list(source.stratum_values)
    target.traffic_parts, target.traffic_len = list(source.traffic_parts), source.traffic_len
    target.pair_parts, target.pairs_len = [list(p) for p in source.pair_parts], list(source.pairs_len)
    target.traffic_merge_at, target.pairs_merge_at = source.traffic_merge_at, list(source.pairs_merge_at)
    target.rows, target.searches, target.empty_rows = source.rows, source.searches, source.empty_rows


def _progress(enabled: bool):
    from tqdm import tqdm

    # disable=None: shown on a terminal only, so piped and test output stays clean.
    return tqdm(total=None, unit=" rows", unit_scale=True, desc="reading log", disable=None if enabled else True)
