"""Collapsing search logs to distinct normalised queries.

A log row is one search (or, with a count column, that many searches). Logs (CSV, TSV, JSONL or
Parquet, the text forms maybe gzip-compressed) are read by :mod:`curation.formats.logs` in chunks
with pyarrow's streaming readers, so memory grows with the number of *distinct* queries,
users and (query, user) pairs, never with the number of rows: a 10-million-row log collapses in
about 17 CPU-seconds and 1.3 GB peak (see ``bench/bench_sample.py``).

How the collapsing works, per chunk: each distinct raw query string is normalised once
(:func:`curation.formats.normalize.normalize_text`, cached across chunks) and mapped to an integer id of
its normalised form; users and strata are mapped to integer ids the same way. Traffic is summed per
(query, stratum) and distinct users are kept as packed (query, user) integer pairs, de-duplicated
with pandas' hash-based ``unique``. Only the final step builds strings again.

A query seen under more than one stratum (say "weather" in two markets) belongs to the stratum
where it has the most traffic (ties: the stratum whose values sort first); its traffic and users
count all its searches. Each distinct query is thus one sampling unit with one qid.

Bad input stops with the file and line (``path:line: message``): when the fast reader or a check
on a chunk fails, the file's chunks collapsed so far are dropped and it is read again by the exact
reader (:func:`curation.formats.logs.exact_batches`), which reports which line is wrong.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
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


class _Recheck(Exception):
    """A chunk failed a check: read the file again slowly to report the exact line."""


def _strings(arr) -> pa.Array:
    """A column as one string array, nulls read as ""."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if not pa.types.is_string(arr.type):
        arr = pc.cast(arr, pa.string())
    return pc.fill_null(arr, "")


def _codes(arr: pa.Array) -> tuple[np.ndarray, pa.Array]:
    """(int64 code of each value, the distinct values): pyarrow's hash-based dictionary encoding."""
    enc = pc.dictionary_encode(arr)
    return enc.indices.to_numpy(zero_copy_only=False).astype(np.int64), enc.dictionary


def _distinct_rows(table: pa.Table, keys: list[str], sums: list[str]) -> pa.Table:
    """``table`` grouped by ``keys`` with ``sums`` summed (pyarrow's hash group-by), columns in
    the order keys then sums."""
    out = table.group_by(keys, use_threads=False).aggregate([(c, "sum") for c in sums])
    return pa.table({**{k: out[k] for k in keys}, **{c: out[f"{c}_sum"] for c in sums}})


class _Collapser:
    """Partial aggregates of the log, keyed by strings, in pyarrow tables.

    Per chunk, the raw queries, strata and users are dictionary-encoded (pyarrow), each distinct
    raw query is normalised once (:func:`normalize_many`), and the chunk is reduced to its
    (normalised query, stratum) traffic and rows and its distinct (normalised query, user) pairs,
    with integer keys local to the chunk. Partials are merged by pyarrow's hash group-by when they
    have doubled, so memory follows the distinct queries and pairs, never the rows, and no Python
    object is made per distinct string. :meth:`finish` decides each query with
    :func:`resolve_queries`, the rule the Dask collapse uses too.
    """

    def __init__(self, query_col: str, count_col: str | None, user_col: str | None, strata: Sequence[str]):
        self.query_col, self.count_col, self.user_col, self.strata = query_col, count_col, user_col, tuple(strata)
        self.traffic_parts: list[pa.Table] = []  # text, stratum, traffic, rows
        self.pair_parts: list[pa.Table] = []  # text, user
        self.raw_parts: list[pa.Array] = []  # distinct raw query strings
        self.sizes = {"traffic": 0, "pairs": 0, "raw": 0}
        self.merge_at = {"traffic": _MERGE_AT, "pairs": _MERGE_AT, "raw": _MERGE_AT}
        self.rows = 0
        self.searches = 0
        self.empty_rows = 0

    def add(self, batch: pa.RecordBatch) -> None:
        n = batch.num_rows
        if n == 0:
            return
        if self.count_col is not None:
            counts = count_values(batch.column(self.count_col))
            if counts is None:
                raise _Recheck()
            counts = counts.to_numpy(zero_copy_only=False).astype(np.int64)
        else:
            counts = np.ones(n, dtype=np.int64)
        raw_code, raws = _codes(_strings(batch.column(self.query_col)))
        norm_of_raw, norms = _codes(normalize_many(raws))
        nid = norm_of_raw[raw_code]  # each row's normalised query, as a code local to this chunk
        if self.strata:
            cols = [_strings(batch.column(c)) for c in self.strata]
            joined = cols[0] if len(cols) == 1 else pc.binary_join_element_wise(*cols, "\x1f")
            sid, labels = _codes(joined)
        else:
            sid, labels = np.zeros(n, dtype=np.int64), pa.array([""], pa.string())
        self.rows += n
        self.searches += int(counts.sum())
        empty = np.flatnonzero(pc.equal(norms, "").to_numpy(zero_copy_only=False))
        keep = None
        if len(empty):
            is_empty = nid == int(empty[0])
            self.empty_rows += int(is_empty.sum())
            keep = ~is_empty
            nid, sid, counts = nid[keep], sid[keep], counts[keep]
        nl = max(len(labels), 1)
        key = nid * nl + sid
        inverse, uniq = pd.factorize(key)  # hash-based: the chunk's distinct (query, stratum)
        rows = np.bincount(inverse, minlength=len(uniq)).astype(np.int64)
        if self.count_col is None:
            sums = rows
        elif int(counts.sum()) < 1 << 53:  # float64 sums of whole numbers are exact below 2**53
            sums = np.bincount(inverse, weights=counts, minlength=len(uniq)).astype(np.int64)
        else:
            sums = np.zeros(len(uniq), dtype=np.int64)
            np.add.at(sums, inverse, counts)
        part = pa.table({"text": norms.take(pa.array(uniq // nl)), "stratum": labels.take(pa.array(uniq % nl)),
                         "traffic": sums, "rows": rows})
        self._append("traffic", part)
        self._append("raw", raws)
        if self.user_col is not None:
            users = _strings(batch.column(self.user_col))
            if keep is not None:
                users = users.filter(pa.array(keep))
            uid, names = _codes(users)
            blank = pc.equal(pc.utf8_trim_whitespace(names), "").to_numpy(zero_copy_only=False)
            known = ~blank[uid]  # a blank user is no user: the search counts, no one is added
            pairs = pd.unique((nid[known] << 32) | uid[known])
            self._append("pairs", pa.table({"text": norms.take(pa.array(pairs >> 32)),
                                            "user": names.take(pa.array(pairs & 0xFFFFFFFF))}))

    def _append(self, kind: str, part) -> None:
        parts = {"traffic": self.traffic_parts, "pairs": self.pair_parts, "raw": self.raw_parts}[kind]
        parts.append(part)
        self.sizes[kind] += len(part)
        if self.sizes[kind] > self.merge_at[kind]:  # merge when the parts doubled: amortised linear
            self.merge_at[kind] = max(_MERGE_AT, 2 * len(self._merged(kind)))

    def _merged(self, kind: str):
        if kind == "traffic":
            parts = self.traffic_parts
            if len(parts) != 1:
                whole = pa.concat_tables(parts) if parts else pa.table(
                    {"text": pa.array([], pa.string()), "stratum": pa.array([], pa.string()),
                     "traffic": pa.array([], pa.int64()), "rows": pa.array([], pa.int64())})
                parts[:] = [_distinct_rows(whole, ["text", "stratum"], ["traffic", "rows"])]
        elif kind == "pairs":
            parts = self.pair_parts
            if len(parts) != 1:
                whole = pa.concat_tables(parts) if parts else pa.table(
                    {"text": pa.array([], pa.string()), "user": pa.array([], pa.string())})
                parts[:] = [_distinct_rows(whole, ["text", "user"], [])]
        else:
            parts = self.raw_parts
            if len(parts) != 1:
                parts[:] = [pc.unique(pa.concat_arrays(parts)) if parts else pa.array([], pa.string())]
        self.sizes[kind] = len(parts[0])
        return parts[0]

    def partial(self) -> PieceCollapse:
        """The merged partials, as the Dask collapse's map step sends them."""
        traffic = self._merged("traffic")
        frame = pd.DataFrame({"text": traffic["text"].to_numpy(zero_copy_only=False),
                              "stratum": traffic["stratum"].to_numpy(zero_copy_only=False),
                              "traffic": traffic["traffic"].to_numpy(zero_copy_only=False).astype(np.int64)})
        pairs = None
        if self.user_col is not None:
            p = self._merged("pairs")
            pairs = pd.DataFrame({"text": p["text"].to_numpy(zero_copy_only=False),
                                  "user": p["user"].to_numpy(zero_copy_only=False)})
        raw = pd.DataFrame({"raw": self._merged("raw").to_numpy(zero_copy_only=False)})
        return PieceCollapse(traffic=frame, pairs=pairs, raw=raw,
                             counts={"rows": self.rows, "searches": self.searches, "empty_rows": self.empty_rows})

    def finish(self) -> CollapsedLog:
        users = None
        if self.user_col is not None:
            users = self._merged("pairs").group_by(["text"], use_threads=False).aggregate([("user", "count")])
            users = users.rename_columns(["users" if c == "user_count" else c for c in users.column_names])
        queries, facts = resolve_queries(self._merged("traffic"), users, strata=self.strata)
        queries = queries.sort_values("text", kind="stable").reset_index(drop=True)
        stats = LogStats(rows=self.rows, searches=self.searches, distinct_raw=len(self._merged("raw")),
                         empty_rows=self.empty_rows, zero_traffic=facts["zero_traffic"],
                         multi_stratum=facts["multi_stratum"], moved_searches=facts["moved"])
        return CollapsedLog(queries=queries, has_users=self.user_col is not None, stats=stats)


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
    """Read and collapse one log file as :func:`collapse_log` does, keyed by strings, so pieces
    read in other processes can be merged (the map step of the Dask collapse)."""
    strata = tuple(strata)
    columns = [query_col, *strata] + [c for c in (count_col, user_col) if c]
    return _read_path(path, columns, _Collapser(query_col, count_col, user_col, strata), _progress(False)).partial()


def resolve_queries(traffic: pa.Table, users: pa.Table | None, *, strata: Sequence[str]):
    """Distinct queries from (text, stratum, traffic) rows holding every search of their queries
    and, with a user column, each text's distinct users (text, users): the columns of
    :attr:`CollapsedLog.queries` (unsorted) and the facts of :func:`decide_queries`. The one
    decision of one process (:meth:`_Collapser.finish`) and of each bucket on Dask."""
    strata = tuple(strata)
    key, texts = _codes(_strings(traffic["text"]))
    sid, labels = _codes(_strings(traffic["stratum"]))
    values = [tuple(v.split("\x1f")) if strata else () for v in labels.to_pylist()]
    order = sorted(range(len(values)), key=values.__getitem__)
    srank = np.empty(len(order), dtype=np.int64)
    srank[order] = np.arange(len(order))
    table = pd.DataFrame({"key": key, "sid": sid, "srank": srank[sid] if len(sid) else np.zeros(0, np.int64),
                          "traffic": pa.chunked_array(traffic["traffic"]).to_numpy().astype(np.int64)})
    qn, total, qsid, facts = decide_queries(table)
    qtexts = texts.take(pa.array(qn, pa.int64()))
    data = {"text": pd.array(qtexts.to_numpy(zero_copy_only=False), dtype="string"), "traffic": total}
    if users is not None:
        at = pc.index_in(qtexts, value_set=_strings(users["text"]))
        counts = pc.fill_null(pa.chunked_array(users["users"]).combine_chunks().take(at), 0)
        data["users"] = counts.to_numpy(zero_copy_only=False).astype(np.int64)
    for j, dim in enumerate(strata):
        column = np.array([v[j] for v in values], dtype=object)
        data[dim] = pd.array(column[qsid], dtype="string") if len(qsid) else pd.array([], dtype="string")
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
    target.traffic_parts, target.pair_parts = list(source.traffic_parts), list(source.pair_parts)
    target.raw_parts, target.sizes, target.merge_at = list(source.raw_parts), dict(source.sizes), dict(source.merge_at)
    target.rows, target.searches, target.empty_rows = source.rows, source.searches, source.empty_rows


def _progress(enabled: bool):
    from tqdm import tqdm

    # disable=None: shown on a terminal only, so piped and test output stays clean.
    return tqdm(total=None, unit=" rows", unit_scale=True, desc="reading log", disable=None if enabled else True)
