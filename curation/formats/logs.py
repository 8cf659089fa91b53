"""Search logs (``golden sample queries``'s input): the one reader of CSV, TSV, JSONL and Parquet logs.

A log row is one search (or, with a count column, that many searches); the text forms may be
gzip-compressed (detected by content). Each file is read in chunks by pyarrow's streaming readers
(:func:`fast_batches`), so memory does not grow with the number of rows. Those readers report a bad
row only vaguely, so a file whose fast read fails (one of :data:`FAST_READ_ERRORS`, or a count that
:func:`count_values` refuses) is read again by :func:`exact_batches`, which goes through Python's
``csv``/``json`` readers and names ``path:line`` of the first bad row. The fields kept are strings;
the count column is a non-negative whole number.

Collapsing the rows to distinct normalised queries is :mod:`curation.sample.logs`.
"""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curation.formats.fileio import (
    GuardedJson,
    InputError,
    base_suffix,
    is_stream,
    iter_jsonl_lines,
    no_records,
    open_binary_from,
    open_input,
    open_text,
    parse_json_text,
)
from curation.formats.limits import csv_reader, line_cap

FORMATS = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl",
           ".parquet": "parquet", ".pq": "parquet"}
_BLOCK_BYTES = 1 << 25  # 32 MiB per CSV/JSON block (about 700,000 log rows; the reader holds a few ahead)
_PARQUET_ROWS = 1 << 20
_SLOW_ROWS = 1 << 16


def log_format(path: str | os.PathLike) -> str:
    """``csv``, ``tsv``, ``jsonl`` or ``parquet`` from the file name (a ``.gz`` is looked through)."""
    suffix = base_suffix(path)
    if suffix not in FORMATS and is_stream(path):
        raise InputError(path, None, "a log's format is told by its name, and a pipe or standard input has none: "
                                     "name a FIFO with .csv, .tsv or .jsonl (mkfifo log.csv), or give the file")
    if suffix not in FORMATS:
        raise InputError(path, None, f"unknown log format {suffix!r}: use .csv, .tsv, .jsonl or .parquet "
                                     "(text forms may be .gz)")
    return FORMATS[suffix]


def log_fields(path: str, fmt: str) -> tuple[list[str], dict | None]:
    """The log's column names (a JSONL log: the first object's keys) and, for JSONL, its first object
    (whose value types :func:`fast_batches` reads the columns as); InputError for an empty or unreadable log."""
    if fmt == "parquet":
        import pyarrow.parquet as pq

        try:
            return pq.ParquetFile(path).schema_arrow.names, None
        except (pa.ArrowInvalid, OSError) as exc:
            raise InputError(path, None, f"not a readable Parquet file ({exc})") from None
    present = _read_header(path, fmt)
    if fmt != "jsonl":
        return present, None
    with open_text(path, encoding="utf-8-sig", streamed=True) as fh:
        return present, next(parse_json_text(line, path, n) for n, line in enumerate(fh, 1) if line.strip())


# --------------------------------------------------------------------------------------------
# Readers: each yields pyarrow record batches of the wanted columns (strings; the count column int64).


MAX_COUNT = 10**15  # searches a log row may stand for: beyond, the value is broken (and floats lose whole numbers)


def count_values(values: pa.Array) -> pa.Array | None:
    """The count column as int64, or None when some value is not a whole number from 0 to :data:`MAX_COUNT`."""
    try:
        if pa.types.is_string(values.type) or pa.types.is_large_string(values.type):
            values = pc.cast(pc.utf8_trim_whitespace(values), pa.float64())
        else:
            values = pc.cast(values, pa.float64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    if values.null_count:
        return None
    arr = values.to_numpy(zero_copy_only=False)
    if arr.size and (not np.all(np.isfinite(arr)) or arr.min() < 0 or arr.max() > MAX_COUNT
                     or not np.all(arr == np.floor(arr))):
        return None
    return pa.array(arr.astype(np.int64))


def _parse_count(raw, path: str, line: int | None, where: str) -> int:
    """One count value, or an InputError naming the place."""
    if isinstance(raw, bool) or raw is None or (isinstance(raw, str) and not raw.strip()):
        raise InputError(path, line, f"{where}count is empty; every row needs a whole number of searches")
    try:
        value = float(raw.strip() if isinstance(raw, str) else raw)
    except (TypeError, ValueError):
        raise InputError(path, line, f"{where}count {raw!r} is not a number") from None
    if not math.isfinite(value) or value < 0 or value > MAX_COUNT or value != math.floor(value):
        raise InputError(path, line, f"{where}count {raw!r} is not a whole number of searches (0 to {MAX_COUNT})")
    return int(value)


def _to_str(value, path: str, line: int, name: str) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, float) and math.isfinite(value):
        return str(value)
    if isinstance(value, float):
        raise InputError(path, line, f"field {name!r} is {value}, not a finite number nor a string")
    raise InputError(path, line, f"field {name!r} is a {type(value).__name__}, expected a string")


def _read_header(path: str, fmt: str) -> list[str]:
    with open_text(path, encoding="utf-8-sig", streamed=True) as fh:
        if fmt == "jsonl":
            for _, obj in iter_jsonl_lines(fh, path):
                return list(obj)
            raise no_records(path, "the log is empty")
        kwargs = {"delimiter": "\t", "quoting": csv.QUOTE_NONE} if fmt == "tsv" else {}
        row = next(csv_reader(fh, **kwargs), None)
        if row is None:
            raise no_records(path, "the log is empty; expected a header row naming the columns, then one row a search")
        return row


def check_columns(path: str, fmt: str, present: Sequence[str], wanted: Sequence[str]) -> None:
    line = None if fmt == "parquet" else 1
    if fmt in ("csv", "tsv"):
        for name in wanted:
            if present.count(name) > 1:
                raise InputError(path, line, f"column {name!r} appears twice in the header")
    for name in wanted:
        if name not in present:
            shown = ", ".join(present[:20]) + (", ..." if len(present) > 20 else "")
            what = "field" if fmt == "jsonl" else "column"
            raise InputError(path, line, f"no {what} {name!r} (found: {shown})")


def check_parquet_types(path: str, columns: Sequence[str], count_col: str | None) -> None:
    """Refuse a Parquet log whose wanted columns have a type golden does not read as text: the count
    column a number (or a string holding one), the others strings or integers; a binary, list or
    struct column is named with its type, never turned into text."""
    import pyarrow.parquet as pq

    try:
        schema = pq.ParquetFile(path).schema_arrow
    except (pa.ArrowException, OSError) as exc:
        raise InputError(path, None, f"not a readable Parquet file ({exc})") from None
    for name in dict.fromkeys(columns):
        if name not in schema.names:
            continue  # check_columns names it
        kind = schema.field(name).type
        text = pa.types.is_string(kind) or pa.types.is_large_string(kind)
        number = pa.types.is_integer(kind) or pa.types.is_floating(kind)
        if name == count_col and not (number or text):
            raise InputError(path, None, f"column {name!r} is {kind}; a count column holds numbers")
        if name != count_col and not (text or pa.types.is_integer(kind)):
            raise InputError(path, None, f"column {name!r} is {kind}; expected a string column "
                                         "(binary, list and struct columns are not read as text)")


def fast_batches(path: str, fmt: str, columns: Sequence[str], count_col: str | None, first: dict | None):
    """pyarrow streaming readers; raise one of :data:`FAST_READ_ERRORS` on anything suspicious (then
    read the file again with :func:`exact_batches` for the exact line). A log without a row is
    ``path: no records``."""
    rows = 0
    long_field = line_cap() // max(1, len(columns))  # a line may be over GOLDEN_MAX_LINE_BYTES: read it exactly
    for batch in _fast_batches(path, fmt, columns, count_col, first):
        rows += batch.num_rows
        if fmt in ("csv", "tsv") and batch.num_rows and _repeats_header(batch):
            raise pa.ArrowInvalid("the header again")  # two logs joined: the exact reader names the line
        if fmt != "parquet":
            for col in batch.columns:  # a NUL byte (binary data): the exact reader refuses it with its line
                if pa.types.is_string(col.type) and _has_nul(col):
                    raise pa.ArrowInvalid("a NUL byte")
                if pa.types.is_string(col.type) and pc.any(pc.match_substring(col, "\ufeff")).as_py():
                    raise pa.ArrowInvalid("a byte-order mark past the start")
                if pa.types.is_string(col.type) and (pc.max(pc.binary_length(col)).as_py() or 0) > long_field:
                    raise pa.ArrowInvalid("a long line")
        yield batch
    if not rows:
        raise no_records(path, "no row after the header" if fmt in ("csv", "tsv") else "no row")


def _repeats_header(batch: pa.RecordBatch) -> bool:
    """Whether a row of ``batch`` holds each column's own name: the header line again."""
    same = None
    for name, col in zip(batch.schema.names, batch.columns):
        if not pa.types.is_string(col.type):
            return False
        equal = pc.equal(col, name)
        same = equal if same is None else pc.and_(same, equal)
    return same is not None and bool(pc.any(same).as_py())


def _has_nul(col: pa.Array) -> bool:
    """Whether a string array holds a NUL character (numpy over its character buffer)."""
    if len(col) == 0:
        return False
    offsets = np.frombuffer(col.buffers()[1], dtype=np.int32)[col.offset:col.offset + len(col) + 1]
    chars = np.frombuffer(col.buffers()[2], dtype=np.uint8)[offsets[0]:offsets[-1]] if col.buffers()[2] else ()
    return len(chars) > 0 and not chars.all()


def _fast_batches(path: str, fmt: str, columns: Sequence[str], count_col: str | None, first: dict | None):
    if fmt == "parquet":
        import pyarrow.parquet as pq

        pf = pq.ParquetFile(path)
        for batch in pf.iter_batches(batch_size=_PARQUET_ROWS, columns=list(dict.fromkeys(columns))):
            yield batch
        return
    source, gzipped = open_input(path)  # opened and sniffed once
    if fmt == "jsonl":  # pyarrow's JSON reader crashes on very deep JSON: the guard fails the fast read first
        stream = pa.input_stream(GuardedJson(open_binary_from(source, gzipped)))
    else:
        stream = pa.input_stream(source, compression="gzip" if gzipped else None)
    if fmt in ("csv", "tsv"):
        import pyarrow.csv as pacsv

        types = {c: pa.string() for c in columns}
        if fmt == "tsv":
            parse = pacsv.ParseOptions(delimiter="\t", quote_char=False)
        else:
            parse = pacsv.ParseOptions(newlines_in_values=True)
        reader = pacsv.open_csv(
            stream,
            read_options=pacsv.ReadOptions(block_size=_BLOCK_BYTES),
            parse_options=parse,
            convert_options=pacsv.ConvertOptions(
                include_columns=list(dict.fromkeys(columns)), column_types=types,
                strings_can_be_null=False, quoted_strings_can_be_null=False,
            ),
        )
    else:
        import pyarrow.json as pajson

        fields = []
        for c in dict.fromkeys(columns):
            if c == count_col:
                fields.append((c, pa.float64()))
            else:
                sample = (first or {}).get(c)
                kind = pa.int64() if isinstance(sample, int) and not isinstance(sample, bool) else (
                    pa.float64() if isinstance(sample, float) else pa.string())
                fields.append((c, kind))
        reader = pajson.open_json(
            stream,
            read_options=pajson.ReadOptions(block_size=_BLOCK_BYTES),
            parse_options=pajson.ParseOptions(explicit_schema=pa.schema(fields), unexpected_field_behavior="ignore"),
        )
    with stream:
        for batch in reader:
            yield batch


def _exact_rows(path: str, fmt: str, columns: Sequence[str], count_col: str | None,
                on_header=None) -> Iterator[tuple[int, list]]:
    """(line, [values in ``columns`` order]) for each data row, with exact line numbers; raises InputError.
    ``on_header``: called with the column names (a JSONL log: the first object's keys) before the first
    row, for a log read in one pass (a pipe)."""
    if fmt == "parquet":
        import pyarrow.parquet as pq

        row = 0
        try:  # a damaged file: named, not a pyarrow traceback
            for batch in pq.ParquetFile(path).iter_batches(batch_size=_SLOW_ROWS, columns=list(dict.fromkeys(columns))):
                data = batch.to_pydict()
                for i in range(batch.num_rows):
                    row += 1
                    yield row, [data[c][i] for c in columns]
        except (pa.ArrowException, OSError) as exc:
            raise InputError(path, None, f"not a readable Parquet file ({exc})") from None
        return
    with open_text(path, encoding="utf-8-sig", streamed=True) as fh:
        if fmt == "jsonl":
            for lineno, obj in iter_jsonl_lines(fh, path):
                if on_header is not None:
                    on_header(list(obj))
                    on_header = None
                yield lineno, [obj.get(c) for c in columns]
            if on_header is not None:
                raise no_records(path, "the log is empty")
            return
        kwargs = {"delimiter": "\t", "quoting": csv.QUOTE_NONE} if fmt == "tsv" else {}
        reader = csv_reader(fh, **kwargs)
        try:
            header = next(reader)
        except StopIteration:
            if on_header is not None:
                raise no_records(path, "the log is empty; expected a header row naming the columns, "
                                       "then one row a search") from None
            return
        if on_header is not None:
            on_header(header)
        index = [header.index(c) for c in columns]
        start = reader.line_num + 1
        try:
            for row in reader:
                if row:
                    if row == header:
                        raise InputError(path, start, "the header line again, inside the log (two logs joined "
                                                      "with cat?): keep the first header only")
                    if len(row) != len(header):
                        raise InputError(path, start,
                                         f"has {len(row)} fields, expected {len(header)} (as in the header)")
                    yield start, [row[i] for i in index]
                start = reader.line_num + 1
        except csv.Error as exc:
            raise InputError(path, reader.line_num, f"not valid {fmt.upper()} ({exc})") from None


def exact_batches(path: str, fmt: str, columns: Sequence[str], count_col: str | None, on_header=None):
    """The same batches as the fast readers, built row by row with every check and exact lines
    (``path: no records`` for a log without a row); ``on_header`` as for :func:`_exact_rows` (a log
    given as a pipe is read this way only, in one pass)."""
    where = "" if fmt != "parquet" else "row {}: "
    names = list(dict.fromkeys(columns))
    buf: list[list] = []

    def flush():
        data = {}
        for j, name in enumerate(names):
            col = [r[j] for r in buf]
            data[name] = pa.array(col, type=pa.int64() if name == count_col else pa.string())
        buf.clear()
        return pa.RecordBatch.from_pydict(data)

    any_row = False
    for line, values in _exact_rows(path, fmt, names, count_col, on_header):
        any_row = True
        out = []
        for name, value in zip(names, values):
            lineno = None if fmt == "parquet" else line
            prefix = where.format(line)
            if name == count_col:
                out.append(_parse_count(value, path, lineno, prefix))
            else:
                try:
                    out.append(_to_str(value, path, line, name))
                except InputError as exc:
                    raise InputError(path, lineno, prefix + exc.message) from None
        buf.append(out)
        if len(buf) >= _SLOW_ROWS:
            yield flush()
    if buf:
        yield flush()
    elif not any_row:
        raise no_records(path, "no row after the header" if fmt in ("csv", "tsv") else "no row")


#: What a fast read raises on input it cannot take; the file is then read by :func:`exact_batches`.
#: (OSError: a truncated or corrupt gzip stream, which the exact reader names with its last line.)
FAST_READ_ERRORS = (pa.ArrowInvalid, pa.ArrowTypeError, UnicodeDecodeError, OSError)
