"""Reading ranked runs (TREC and JSONL) and ordering them exactly as trec_eval does.

trec_eval ignores the rank column: within a query it sorts a run's documents by score descending
and breaks ties by docno descending (``comp_sim_docno`` in trec_eval's ``form_res_rels.c``).
Pooling and metrics both use :func:`trec_order`, so the pool holds exactly the documents that the
evaluation later sees in each top-k.

TREC form, one line a result, white-space separated::

    qid Q0 docid rank score tag

JSONL form, one object a line: ``{"qid": "301", "docid": "FT911-3", "score": 12.5}`` (``rank`` and
``run`` optional; ``run`` names the system when the file has no other name).

One module: the one reader of runs, with its fast pyarrow/numpy path and its exact
line-by-line path side by side, so both keep the same rules and messages.
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from curation.formats.fileio import (
    INTEGER_TEXT,
    InputError,
    atomic_write,
    base_suffix,
    decode_text,
    id_value,
    identifier,
    json_number,
    no_records,
    number_text,
    parse_json_text,
    read_whole,
    trec_fields,
)
from curation.formats.limits import check_data_lines

if TYPE_CHECKING:
    import numpy as np


@dataclass
class RankedRun:
    """One system's ranked results: ``rankings[qid]`` is a list of docids in trec_eval order."""

    name: str
    path: str
    sha256: str
    rankings: dict[str, list[str]] = field(default_factory=dict)
    scores: dict[str, list[float]] = field(default_factory=dict)
    #: When set, only each query's first ``depth`` documents were kept (see :func:`read_run`).
    depth: int | None = None
    #: Identical repeated lines (the same docid and score again for a query), dropped.
    repeats: int = 0
    #: Lines with fields after the sixth (ignored, as trec_eval ignores them); first such line.
    extra_fields: int = 0
    extra_first_line: int | None = None

    def summary(self) -> str | None:
        """The file's warnings for a command's summary (repeated lines, fields after the sixth), or None."""
        lines = []
        if self.repeats:
            lines.append(f"{self.path}: {self.repeats} identical duplicate run line(s) dropped")
        if self.extra_fields:
            lines.append(
                f"warning: {self.path}:{self.extra_first_line}: {self.extra_fields} line(s) have fields after the "
                "sixth (qid Q0 docid rank score tag); ignored, as trec_eval ignores them"
            )
        return "\n".join(lines) or None

    def top(self, qid: str, k: int) -> list[str]:
        """The first ``k`` docids of query ``qid`` (empty when the run has no line for it)."""
        return self.rankings.get(qid, [])[:k]

    @property
    def qids(self) -> list[str]:
        return list(self.rankings)


def trec_order(results: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """Sort ``(docid, score)`` pairs as trec_eval does: score descending, then docid descending.

    Scores should already be at trec_eval's precision (:func:`as_trec_score`), so that two scores
    trec_eval sees as tied are tied here too.
    """
    # Two stable sorts: docid descending first, then score descending keeps docid order on ties.
    ordered = sorted(results, key=lambda r: r[0], reverse=True)
    ordered.sort(key=lambda r: r[1], reverse=True)
    return ordered


def as_trec_score(score: float) -> float:
    """``score`` rounded to a 32-bit float, the precision trec_eval keeps (``float sim`` in its
    results struct): scores that differ only beyond it are ties there, broken by docid."""
    import numpy as np  # imported on first use: `golden pool` imports it while its first runs load

    with np.errstate(over="ignore"):  # beyond float32 is inf, refused by the readers
        return float(np.float32(score))


def _parse_score(raw, path, lineno) -> float:
    """A score: a TREC field (ASCII decimal or scientific notation: :data:`~curation.formats.fileio.SCORE_TEXT`)
    or a JSON number (not a boolean, not a string), at trec_eval's precision."""
    value = number_text(raw, "score", path, lineno) if isinstance(raw, str) else raw
    try:
        score = as_trec_score(value)
    except (TypeError, ValueError, OverflowError):
        raise InputError(path, lineno, f"score {str(raw)[:30]!r} is not a number") from None
    if math.isnan(score):
        raise InputError(path, lineno, "score is NaN")
    if math.isinf(score):  # inf, 1e400, or beyond the 32-bit float trec_eval keeps (about 3.4e38)
        raise InputError(path, lineno, f"score {str(raw)[:30]!r} is not a finite number (at most about 3.4e38)")
    return score


def read_run(path: str | os.PathLike, *, name: str | None = None, depth: int | None = None) -> RankedRun:
    """Read a TREC or JSONL run file (gzip allowed) into a :class:`RankedRun` in trec_eval order.

    The format is taken from the name (``.jsonl``/``.json`` means JSONL, anything else TREC).
    Raises :class:`InputError` naming the file and line for a line with fewer than 6 fields,
    a score that is not a number, or a docid repeated within one query. Fields after the sixth are
    ignored, as trec_eval ignores them (its own ``results.trunc`` has some); the run counts those
    lines (:attr:`RankedRun.extra_fields`) and :meth:`RankedRun.summary` warns once per file.

    ``depth`` keeps only each query's first ``depth`` documents (in trec_eval order); every line
    is still read and checked. Pooling at depth k needs no more, and it is much faster.

    A plain ASCII TREC file is parsed with pyarrow's CSV reader and numpy (the fast path); a file
    the fast path cannot vouch for (other white space, a bad line, a repeated docid...) is read
    line by line, which gives the same result or the error with its file and line.
    """
    _check_depth(depth)
    return _parse_loaded(_load(path), name, depth)


def _check_depth(depth) -> None:
    if depth is not None and (not isinstance(depth, int) or depth < 1):
        raise ValueError(f"depth must be a positive integer or None, not {depth!r}")


@dataclass
class _Loaded:
    """A run file in memory, checked as text: what :func:`_load` gives :func:`_parse_loaded`."""

    path: str
    sha256: str
    data: bytes  # gunzipped, without a byte-order mark; ASCII or valid UTF-8, no NUL, no line over the cap
    ascii: bool  # every byte of data is ASCII


def _load(path: str | os.PathLike) -> _Loaded:
    """Read a run file whole: its SHA-256, gunzipped (ISA-L), and checked as text. The slow parts
    (reading, hashing, inflating) run in C without holding the GIL, so threads overlap them."""
    path = str(path)
    sha256, data = read_whole(path)  # one open (a pipe too); a line over the limit refused while reading
    if data.startswith(b"\xef\xbb\xbf"):  # a byte-order mark: dropped, as by every text reader
        data = data[3:]
    ascii = data.isascii()
    if not ascii or b"\x00" in data:
        decode_text(data, path)  # invalid UTF-8 or binary data: refused with file:line
    check_data_lines(data, path)  # a line over GOLDEN_MAX_LINE_BYTES, on both paths
    return _Loaded(path, sha256, data, ascii)


def _parse_loaded(loaded: _Loaded, name: str | None, depth: int | None) -> RankedRun:
    """The :class:`RankedRun` of a loaded file: the fast path, else the exact line-by-line reader."""
    path, data = loaded.path, loaded.data
    is_jsonl = base_suffix(path) in (".jsonl", ".json", ".ndjson")
    parsed = None if is_jsonl or not loaded.ascii else _parse_trec_fast(data, depth)
    if parsed is None:
        parsed = _parse_lines(data, path, is_jsonl, depth)
    rankings, scores, tags, *rest = parsed
    if not rankings:
        raise no_records(path, "expected qid Q0 docid rank score tag lines")
    if name is None:
        name = next(iter(tags)) if len(tags) == 1 else _name_from_path(path)
    repeats, extra, extra_first = rest[0] if rest else (0, 0, None)
    return RankedRun(name=name, path=path, sha256=loaded.sha256, rankings=rankings, scores=scores, depth=depth,
                     repeats=repeats, extra_fields=extra, extra_first_line=extra_first)


def write_run(
    rankings: Iterable[tuple[str, Sequence[tuple[str, float]]]], path: str | os.PathLike, *, tag: str,
    precision: int | None = None,
) -> None:
    """Write a TREC run, whole or not at all: for each ``(qid, [(docid, score), ...])``, one line
    ``qid Q0 docid rank score tag`` per result, ranks from 1 in the order given. ``precision``:
    digits after the point of the scores (default: Python's shortest repr)."""
    with atomic_write(path) as fh:
        for qid, results in rankings:
            for rank, (docid, score) in enumerate(results, 1):
                shown = repr(float(score)) if precision is None else f"{score:.{precision}f}"
                fh.write(f"{qid} Q0 {docid} {rank} {shown} {tag}\n")


def read_runs(
    paths: list[str | os.PathLike],
    *,
    names: list[str | None] | None = None,
    depth: int | None = None,
    workers: int | None = None,
    progress=None,
) -> list[RankedRun]:
    """Read several runs as :func:`read_run` does, in parallel threads, in the order given.

    Each file is first loaded (read, hashed, gunzipped: C code that releases the GIL), then parsed
    (pyarrow's CSV reader, which releases it too, and numpy). The loads start at once, a bounded
    amount of data ahead of the parsing, while this thread imports numpy and pyarrow: in a fresh
    process (``golden pool``) the imports and the first inflating overlap on two cores.
    When several files are bad, the error of the first one in ``paths`` order is raised.
    ``progress``, when given, is called with each :class:`RankedRun` as it is read (e.g. to tick a bar).
    """
    _check_depth(depth)
    paths = list(paths)
    if names is None:
        names = [None] * len(paths)
    if len(names) != len(paths):
        raise ValueError(f"names must have one entry per path ({len(paths)}), not {len(names)}")
    if workers is None:
        workers = min(len(paths), os.cpu_count() or 1, 8)
    if workers <= 1 or len(paths) <= 1:
        out = []
        for path, name in zip(paths, names):
            out.append(_parse_loaded(_load(path), name, depth))
            if progress is not None:
                progress(out[-1])
        return out
    return _read_threaded(paths, names, depth, workers, progress)


#: How much gunzipped data (estimated from the files' sizes) may wait loaded ahead of the parsing:
#: a few files, so that the memory of parsed files is reused rather than new pages faulted in. A
#: whole golden pool of the 17 robust03 runs at load ~3, best of 11 (wall / CPU): 8 MB 0.584 /
#: 0.589 s, 16 MB 0.542 / 0.607, 32 MB 0.597 / 0.606, 64 MB 0.639 / 0.640 (more inflating beside
#: the imports did not pay for its page faults).
_LOAD_AHEAD_BYTES = 16 << 20


def _estimated_size(path) -> int:
    """The size of a file once gunzipped, guessed from its size on disk (for the load-ahead bound)."""
    try:
        size = os.path.getsize(path)
    except OSError:
        return 0  # the load reports the error
    return size * 5 if str(path).endswith(".gz") else size


def _read_threaded(paths: list, names: list, depth: int | None, workers: int, progress) -> list[RankedRun]:
    from concurrent.futures import ThreadPoolExecutor

    sizes = [_estimated_size(p) for p in paths]
    # The largest files first, so that the threads end together rather than one waiting on a
    # large file taken last; the results keep the order given.
    order = sorted(range(len(paths)), key=lambda i: -sizes[i])
    loads: dict[int, object] = {}
    parses: dict[int, object] = {}
    with ThreadPoolExecutor(max_workers=workers) as pool:
        queued = ahead = 0

        def load_ahead(parsing: int) -> None:
            nonlocal queued, ahead
            # Load within the bound, and always a few files beyond the one being parsed.
            while queued < len(order) and (ahead < _LOAD_AHEAD_BYTES or queued <= parsing + workers):
                i = order[queued]
                ahead += sizes[i]
                loads[i] = pool.submit(_load, paths[i])
                queued += 1

        try:
            load_ahead(0)
            _import_parsers()  # here, while the pool's threads load the first files
            for k, i in enumerate(order):
                load_ahead(k)
                loaded = loads.pop(i)
                if loaded.exception() is not None:  # waits for the load; its error is raised below
                    parses[i] = loaded
                else:
                    parses[i] = pool.submit(_parse_loaded, loaded.result(), names[i], depth)
                ahead -= sizes[i]
            out = []
            for i in range(len(paths)):
                out.append(parses[i].result())  # raises the first error in paths order
                if progress is not None:
                    progress(out[-1])
            return out
        finally:
            for future in [*loads.values(), *parses.values()]:
                future.cancel()


def _import_parsers() -> None:
    """Import what the fast path parses with (numpy, pyarrow's CSV reader)."""
    import numpy  # noqa: F401 - imported for the import's cost, paid while the loads run
    import pyarrow.csv  # noqa: F401 - the same


def _parse_lines(data: bytes, path: str, is_jsonl: bool, depth: int | None):
    """The exact reader: line by line, every error with its line number."""
    per_query: dict[str, list[tuple[str, float]]] = {}
    seen: dict[str, dict[str, tuple]] = {}
    tags: set[str] = set()
    repeats = extra = 0
    extra_first = None
    text = io.StringIO(decode_text(data, path), newline="")
    for lineno, line in enumerate(text, 1):
        if not line.strip(" \t\r\n"):
            continue
        if is_jsonl:
            obj = parse_json_text(line, path, lineno, finite=False)
            if not isinstance(obj, dict) or "qid" not in obj or "docid" not in obj or "score" not in obj:
                raise InputError(path, lineno, "expected an object with qid, docid and score")
            qid, docid = identifier(obj, "qid", path, lineno), identifier(obj, "docid", path, lineno)
            score = _parse_score(json_number(obj["score"], "score", path, lineno), path, lineno)
            if obj.get("run") is not None:
                tags.add(id_value(obj["run"], "run", path, lineno))
            value = (score, obj.get("run"))
        else:
            parts = trec_fields(line)
            if len(parts) < 6:
                raise InputError(
                    path, lineno, f"has {len(parts)} fields, expected 6 (qid Q0 docid rank score tag)"
                )
            if len(parts) > 6:  # trec_eval reads six fields and ignores the rest of the line
                extra += 1
                extra_first = extra_first or lineno
                parts = parts[:6]
            qid, _, docid, rank, raw_score, tag = parts
            if not INTEGER_TEXT.fullmatch(rank):
                raise InputError(path, lineno, f"rank {rank[:30]!r} is not an integer (ASCII digits, an optional sign)")
            score = _parse_score(raw_score, path, lineno)
            tags.add(tag)
            value = (parts[3], score, tag)
        docs = seen.setdefault(qid, {})
        if docid in docs:
            if docs[docid] == value:  # the same line again: dropped and counted
                repeats += 1
                continue
            raise InputError(path, lineno,
                             f"docid {docid!r} appears twice for query {qid!r} with another rank or score")
        docs[docid] = value
        per_query.setdefault(qid, []).append((docid, score))
    rankings: dict[str, list[str]] = {}
    scores: dict[str, list[float]] = {}
    for qid, results in per_query.items():
        ordered = trec_order(results)[:depth]
        rankings[qid] = [d for d, _ in ordered]
        scores[qid] = [s for _, s in ordered]
    return rankings, scores, tags, (repeats, extra, extra_first)


_TREC_COLUMNS = ["qid", "q0", "docid", "rank", "score", "tag"]
# Only qid, docid, score and tag are used; q0 and rank are read as text to be checked (pyarrow checks
# that each line has 6 fields). numpy arrays are views of pyarrow's buffers: some of pyarrow's own
# conversions to numpy import pandas, and pyarrow.compute is imported only where numpy cannot
# decide alone; each import costs a fresh `golden pool` process ~0.1-0.4 s.
_CONVERTED = {"qid": "string", "docid": "string", "score": "float64", "tag": "string"}
# The rank is only checked (an integer, as the exact reader wants it), never used: trec_eval orders by
# score. It is read as text and its bytes checked with numpy (:func:`_all_integers`): pyarrow's int64
# conversion cost about twice as much as copying the text. q0 is only checked not to be empty.
_CHECKED = {"rank": "string", "q0": "string"}


def _parse_trec_fast(data: bytes, depth: int | None):
    """Parse a TREC run with pyarrow's CSV reader + numpy, or return None when the exact reader must decide.

    Used only when every line is ASCII (``data`` must be: the caller checks it) and fields are
    separated by exactly one tab (or one space), so pyarrow's fields are exactly those the exact
    reader splits (:func:`~curation.formats.fileio.trec_fields`: on spaces and tabs).
    Anything unusual (a wrong field count, an empty field, a score that is not a number or is NaN, a
    repeated docid) returns None and the line-by-line reader reports it precisely.

    One function on purpose: the hot path of reading a run, a few whole-column pyarrow and numpy
    steps on arrays it shares; split, it would gain calls but no clearer step.
    """
    import numpy as np
    import pyarrow as pa

    first = data[: data.find(b"\n")]
    delimiter, other = (b"\t", b" ") if b"\t" in first else (b" ", b"\t")
    # The exact reader splits a line on spaces and tabs only (trec_fields), so the other delimiter is
    # the one byte that would split a field pyarrow keeps whole. Other ASCII white space (\x0b, \x0c,
    # \x1c-\x1f) is part of a field on both paths, and neither path ends a line on it: no scan for it.
    if data.find(other) >= 0:
        return None

    # Fields after the sixth (trec_eval ignores them): when every line has as many as the first,
    # pyarrow reads them as columns of their own, and only the last is looked at (an empty last
    # field is a delimiter at the end of the line, which trec_fields would not count).
    width = first.rstrip(b"\r").count(delimiter) + 1
    extra = [f"extra{i}" for i in range(width - len(_TREC_COLUMNS))]
    types = {c: pa.type_for_alias(t) for c, t in (_CONVERTED | _CHECKED).items()} | {c: pa.string() for c in extra[-1:]}
    table = _read_columns(data, delimiter, _TREC_COLUMNS + extra, types)
    if table is None:
        return None
    n = table.num_rows
    if n == 0:
        return {}, {}, set()
    if extra:
        last = _column(table, extra[-1])
        off = _offsets(last)
        if last.null_count or (off[1:] == off[:-1]).any():
            return None
    cols = {c: _column(table, c) for c in _CONVERTED}
    if not _all_integers(_column(table, "rank")):
        return None  # a rank that is not ASCII digits with an optional sign: the exact path names it
    q0 = _column(table, "q0")
    del table
    # An empty field (two delimiters in a row, or one at a line's start): trec_fields would count one
    # field fewer. The rank's emptiness is checked above; q0 is converted for this check only (cheaper
    # than looking for a doubled delimiter in every byte of the file).
    for col in (cols["qid"], cols["docid"], cols["tag"], q0):
        off = _offsets(col)
        if (off[1:] == off[:-1]).any():
            return None  # an empty field: trec_fields would count one field fewer
    score_arr = cols["score"]
    if score_arr.null_count:
        return None
    score = np.frombuffer(score_arr.buffers()[1], dtype=np.float64, count=n, offset=score_arr.offset * 8)
    with np.errstate(over="ignore"):  # beyond float32 becomes inf: refused just below
        score = score.astype(np.float32).astype(np.float64)  # trec_eval's precision: see as_trec_score
    if not np.isfinite(score).all():  # NaN or infinite: the exact path names the line
        return None
    docid = cols["docid"]
    # Group rows by query. Runs usually list each query in one block: then block b is query b.
    contiguous = False
    qid_words = _words(cols["qid"])
    if qid_words is not None:
        lengths, words = qid_words
        change = lengths[1:] != lengths[:-1]
        for word in words:
            change |= word[1:] != word[:-1]
        starts = np.r_[0, np.flatnonzero(change) + 1]
        qids = _strings(cols["qid"], starts)
        contiguous = len(set(qids)) == len(qids)
    if contiguous:
        order = None
        sorted_q = qc = np.repeat(np.arange(len(starts), dtype=np.int32), np.diff(np.r_[starts, n]))
    else:
        import pyarrow.compute as pc

        qcol = pc.dictionary_encode(cols["qid"])
        qc = _indices(qcol)  # codes numbered in order of first appearance
        qids = qcol.dictionary.to_pylist()
        order = np.argsort(qc, kind="stable")
        sorted_q = qc[order]
        starts = np.flatnonzero(np.r_[True, sorted_q[1:] != sorted_q[:-1]])
    if _repeated_docid(docid, qc, len(qids)):
        return None  # a docid repeated within a query
    ends = np.r_[starts[1:], n]
    tags = _distinct(cols["tag"])
    ranked = _top_presorted(score, docid, starts, ends, depth) if contiguous else None
    if ranked is None:
        if order is None:
            order = np.arange(n)
        ranked = _top_any_order(score, docid, order, starts, ends, depth)
    rankings: dict[str, list[str]] = {}
    scores: dict[str, list[float]] = {}
    for s, (docs, values) in zip(starts.tolist(), ranked):
        qid = qids[int(sorted_q[s])]
        rankings[qid] = docs
        scores[qid] = values
    if extra:
        return rankings, scores, tags, (0, n, 1)
    return rankings, scores, tags


def _read_columns(data: bytes, delimiter: bytes, names: list[str], types: dict):
    """pyarrow's CSV reader over ``data`` (one block, one thread: the runs are read in parallel
    instead), converting only the columns of ``types``; None when pyarrow refuses a line."""
    import pyarrow as pa
    import pyarrow.csv as pa_csv

    try:
        return pa_csv.read_csv(
            pa.py_buffer(data),
            read_options=pa_csv.ReadOptions(column_names=names, use_threads=False, block_size=len(data) + 1),
            parse_options=pa_csv.ParseOptions(
                delimiter=delimiter.decode(), quote_char=False, escape_char=False, newlines_in_values=False
            ),
            convert_options=pa_csv.ConvertOptions(
                include_columns=list(types), column_types=types,
                check_utf8=False,  # the bytes are ASCII (checked by the caller)
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None


def _column(table, name: str):
    """A column of a table read in one block as one array (no copy when it has one chunk)."""
    col = table.column(name)
    return col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()


def _all_integers(col) -> bool:
    """True when every value of the string column ``col`` is ASCII digits with an optional sign
    (:data:`~curation.formats.fileio.INTEGER_TEXT`): every byte a digit, but for a ``+`` or ``-`` as
    the first byte of a value of two bytes or more."""
    import numpy as np

    off = _offsets(col)
    lengths = off[1:] - off[:-1]
    if (lengths == 0).any():
        return False
    text = np.frombuffer(col.buffers()[2], dtype=np.uint8)[off[0] : off[-1]]
    not_digit = (text - np.uint8(48)) > 9  # bytes below "0" wrap around to large values
    if not not_digit.any():
        return True
    at = np.flatnonzero(not_digit) + off[0]  # offsets of the other bytes
    value = np.searchsorted(off[:-1], at, side="right") - 1  # the value each one is in
    sign = (text[at - off[0]] == ord("+")) | (text[at - off[0]] == ord("-"))
    return bool((sign & (at == off[value]) & (lengths[value] >= 2)).all())


def _distinct(col) -> set[str]:
    """The distinct values of a string column (usually one: a run's tag)."""
    off = _offsets(col)
    size = int(off[1] - off[0])
    if size and (off[1:] - off[:-1] == size).all():  # all of one length: one value repeated, byte for byte?
        values = col.buffers()[2].to_pybytes()[off[0] : off[-1]]
        if values == values[:size] * len(col):
            return {col[0].as_py()}
    import pyarrow.compute as pc

    return set(pc.unique(col).to_pylist())


def _words(col):
    """A pyarrow string array's values as 64-bit words for numpy to compare or hash: (lengths,
    [word 0 of every value, word 1, ...]), the bytes past a value's end zeroed; None when some
    value is longer than 64 bytes. Two values are equal iff their lengths and all words are."""
    import numpy as np

    off = _offsets(col)
    lengths = off[1:] - off[:-1]
    width = -(-int(lengths.max()) // 8) * 8
    if width > 64:
        return None
    buf = np.frombuffer(col.buffers()[2], dtype=np.uint8)[: off[-1]]
    size = int(lengths[0])
    if (lengths == size).all():  # all of one length (a run's qids and tag usually are): no masks
        rows = np.zeros((len(lengths), width), dtype=np.uint8)
        rows[:, :size] = buf[off[0] :].reshape(-1, size)
        return lengths, list(rows.view("<u8").T)
    padded = np.concatenate([buf, np.zeros(width, dtype=np.uint8)])
    # Row i: value i's bytes and whatever follows them; what follows is masked off word by word
    # (little-endian: a word's first byte is its lowest). The rows are gathered as items of
    # ``width`` bytes from a view whose item k starts at byte k: one copy an item, where indexing
    # a sliding window view of bytes copied byte by byte (2.3x as long, for 20,000 docids).
    windows = np.ndarray(buffer=padded, dtype=f"V{width}", shape=(len(padded) - width + 1,), strides=(1,))
    rows = windows[off[:-1]].view("<u8").reshape(len(lengths), width // 8)
    low = np.array(_LOW_BYTES, dtype=np.uint64)
    return lengths, [rows[:, j] & low[np.clip(lengths - 8 * j, 0, 8)] for j in range(width // 8)]


def _strings(col, rows: np.ndarray) -> list[str]:
    """The values of a pyarrow string array at ``rows``."""
    if len(rows) * 4 >= len(col):
        values = col.to_pylist()
        return [values[r] for r in rows.tolist()]
    off = _offsets(col)
    buf = col.buffers()[2].to_pybytes()
    return [buf[a:b].decode("ascii") for a, b in zip(off[rows].tolist(), off[rows + 1].tolist())]


# Constants of a multiply-xorshift hash (the mixing steps of splitmix64, Steele et al. 2014).
_MUL1, _MUL2, _MUL3 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB, 0x9E3779B97F4A7C15
_LOW_BYTES = [(1 << (8 * k)) - 1 for k in range(9)]  # masks of the k lowest bytes


def _repeated_docid(docid, qc: np.ndarray, n_queries: int) -> bool:
    """True when some docid occurs twice within one query (``qc``: each row's query code).

    First a 64-bit hash of (query, docid) per row, computed with numpy from the string column's
    bytes: no two rows hash alike in a run without repeats, bar a rare collision. Only when two do
    is the question settled exactly, by dictionary-encoding the docids (pyarrow.compute), which
    costs about three times as much (0.25 s against 0.075 s CPU for the 17 robust03 runs).
    """
    import numpy as np

    got = _words(docid)
    if got is not None:
        lengths, words = got
        mul1, mul2, mul3 = np.uint64(_MUL1), np.uint64(_MUL2), np.uint64(_MUL3)
        h = qc.astype(np.uint64) * mul3 + lengths.astype(np.uint64)
        for word in words:
            h = (h ^ word) * mul1
            h ^= h >> np.uint64(31)
            h *= mul2
        if not _equal_pairs(h):
            return False
    import pyarrow.compute as pc

    encoded = pc.dictionary_encode(docid)
    universe = len(encoded.dictionary)
    return _has_repeats(qc.astype(np.int64) * universe + _indices(encoded), n_queries * universe)


#: Above this many 32-bit halves shared by two values, :func:`_equal_pairs` sorts the whole words.
_SHARED_HALVES_MAX = 32


def _equal_pairs(h) -> bool:
    """True when two of the 64-bit values ``h`` are equal: sorted (numpy's vectorised sort), then
    neighbours compared (three times as fast as bucketing the values by their top bits first).

    One 32-bit half of each value is sorted first, a third less work than the whole words (3.1
    against 4.9 ms for 90,000 values): two equal values have equal halves, so when no two halves
    are equal nor are the values. Among ~90,000 random values one pair of halves is alike about
    every other time; then only the values with such a half are compared whole."""
    import numpy as np

    h = np.ascontiguousarray(h, dtype=np.uint64)
    halves = h.view(np.uint32)[::2]  # either half will do (the low one on a little-endian machine)
    ordered = np.sort(halves)
    same = ordered[1:] == ordered[:-1]
    if not same.any():
        return False
    shared = ordered[1:][same]
    if len(shared) > _SHARED_HALVES_MAX:  # many: not worth a pass over halves for each
        whole = np.sort(h)
    else:
        candidates = np.zeros(len(h), dtype=np.bool_)
        for half in shared.tolist():
            candidates |= halves == half
        whole = np.sort(h[candidates])
    return bool((whole[1:] == whole[:-1]).any())


def _top_any_order(score, docid, order, starts, ends, depth):
    """Per query block, the first ``depth`` (docid, score) in trec_eval order, whatever the file order."""
    import numpy as np

    picks = []
    for s, e in zip(starts.tolist(), ends.tolist()):
        seg = order[s:e]
        if depth is not None and e - s > depth:
            # Everything scoring at least the depth-th best score; ties at the cut are settled
            # below by trec_order (docid descending).
            sc = score[seg]
            threshold = np.partition(sc, e - s - depth)[e - s - depth]
            seg = seg[sc >= threshold]
        picks.append(seg)
    rows = np.concatenate(picks)
    docids = _strings(docid, rows)
    values = score[rows].tolist()
    out = []
    at = 0
    for seg in picks:
        m = len(seg)
        ordered = trec_order(list(zip(docids[at : at + m], values[at : at + m])))[:depth]
        at += m
        out.append(([d for d, _ in ordered], [v for _, v in ordered]))
    return out


def _top_presorted(score, docid, starts, ends, depth):
    """The same as :func:`_top_any_order` for a file whose queries come in blocks already in
    descending score order (as runs are usually written), mostly without a Python loop; None
    when a block is not in that order. Only the kept rows (about ``depth`` a block) are handled
    after the one pass over the file that checks the order."""
    import numpy as np

    # Compared, not subtracted: inf - inf is NaN, and two infinite scores are a tie.
    rising = score[1:] > score[:-1]
    rising[starts[1:] - 1] = False  # pairs of rows that straddle two queries
    if rising.any():
        return None
    counts = ends - starts
    take = counts.copy() if depth is None else np.minimum(counts, depth)
    if depth is not None:
        # Rows tied with the last one kept are candidates too (trec_order settles them).
        longer = np.flatnonzero(counts > depth)
        cut = starts[longer] + depth
        for b in longer[score[cut] == score[cut - 1]].tolist():
            s, e = int(starts[b]), int(ends[b])
            stop = s + depth
            while stop < e and score[stop] == score[stop - 1]:
                stop += 1
            take[b] = stop - s
    first = np.cumsum(take) - take  # where each block's kept rows begin among all kept rows
    rows = np.arange(int(take.sum())) + np.repeat(starts - first, take)
    docids = _strings(docid, rows)
    kept = score[rows]
    values = kept.tolist()
    tie = np.zeros(len(rows), dtype=np.bool_)
    tie[:-1] = kept[1:] == kept[:-1]
    tie[first[1:] - 1] = False  # pairs of kept rows of two blocks
    has_tie = np.add.reduceat(tie, first) > 0
    out = []
    at = 0
    for m, tied in zip(take.tolist(), has_tie.tolist()):
        docs, vals = docids[at : at + m], values[at : at + m]
        at += m
        if tied:
            ordered = trec_order(list(zip(docs, vals)))[:depth]
            docs, vals = [d for d, _ in ordered], [v for _, v in ordered]
        out.append((docs, vals))
    return out


def _has_repeats(keys: np.ndarray, universe: int) -> bool:
    """True when some value occurs twice in ``keys`` (all in ``range(universe)``)."""
    import numpy as np

    if universe <= 1 << 25:  # a byte map is cheaper than sorting
        seen = np.zeros(universe, dtype=np.bool_)
        seen[keys] = True
        return int(np.count_nonzero(seen)) != len(keys)
    keys = np.sort(keys)
    return bool((keys[1:] == keys[:-1]).any())


def _offsets(arr) -> np.ndarray:
    """The int32 value offsets of a string array as a numpy view (no copy)."""
    import numpy as np

    return np.frombuffer(arr.buffers()[1], dtype=np.int32, count=len(arr) + 1, offset=arr.offset * 4)


def _indices(arr) -> np.ndarray:
    """The int32 codes of a dictionary array as a numpy view (no copy)."""
    import numpy as np

    ind = arr.indices
    return np.frombuffer(ind.buffers()[1], dtype=np.int32, count=len(ind), offset=ind.offset * 4)


def _name_from_path(path: str) -> str:
    name = Path(path).name
    for suffix in (".gz", ".jsonl", ".json", ".trec", ".txt", ".run"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name.removeprefix("input.")
