"""What the leak check reads: its queries file, and the corpus cut into pieces (byte ranges of a
JSONL file, row groups of a Parquet file, whole gzip or TSV files) read a batch of (ids, texts)
arrow arrays at a time."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import pyarrow as pa

from curation.formats.corpus import (
    ID_KEYS,
    TEXT_KEYS,
    check_parquet_columns,
    doc_from_mapping,
    iter_corpus_file,
    iter_jsonl_docs,
)
from curation.formats.fileio import (
    MAX_INT_DIGITS,
    InputError,
    NestingGuard,
    base_suffix,
    is_clean_text,
    is_gzip,
    is_stream,
    iter_line_blocks,
    open_binary_from,
    open_input,
)
from curation.formats.limits import limit, line_cap, line_error
from curation.formats.queries import iter_queries


@dataclass(frozen=True)
class CorpusPiece:
    """A piece of the corpus one worker scans: ``kind`` is ``range`` (bytes ``start:end`` of an
    uncompressed JSONL file), ``rowgroup`` (Parquet row group ``start``) or ``file`` (all of it)."""

    path: str
    kind: str
    start: int = 0
    end: int = 0


def plan_tasks(
    paths: Iterable[str | os.PathLike], *, target_bytes: int = 16 << 20
) -> list[CorpusPiece]:
    """Cut the corpus files into tasks of about ``target_bytes`` (JSONL) or a row group (Parquet)."""
    tasks: list[CorpusPiece] = []
    for p in paths:
        path = str(p)
        if not os.path.exists(path):
            raise InputError(path, None, "no such corpus file")
        suffix = base_suffix(path)
        if suffix == ".parquet":
            import pyarrow.parquet as pq

            if is_stream(path):
                raise InputError(path, None, "a Parquet corpus must be a regular file (Parquet is read by seeking), "
                                             "not a pipe or standard input")
            try:
                pf = pq.ParquetFile(path)
            except (pa.ArrowException, OSError) as exc:  # a damaged file: named, not a pyarrow traceback
                raise InputError(path, None, f"not a readable Parquet file ({exc})") from None
            check_parquet_columns(pf.schema_arrow, path)
            n = pf.num_row_groups
            tasks.extend(CorpusPiece(path, "rowgroup", i, i + 1) for i in range(n))
        elif suffix in (".jsonl", ".json", ".ndjson") and not is_stream(path) and not is_gzip(path):
            size = os.path.getsize(path)
            start = 0
            while start < size:
                end = min(size, start + target_bytes)
                tasks.append(CorpusPiece(path, "range", start, end))
                start = end
        elif suffix in (".jsonl", ".json", ".ndjson", ".tsv", ".tab"):
            tasks.append(CorpusPiece(path, "file"))
        else:
            raise InputError(
                path, None, f"unknown corpus format {suffix!r}: use .jsonl, .tsv or .parquet (optionally .gz)"
            )
    return tasks


def _line_aligned(path: str, start: int, end: int) -> bytes:
    """The lines whose first byte lies in ``[start, end)``; a line that runs on past the corpus line
    limit is refused with its line number (never read whole: memory stays bounded)."""
    cap = line_cap("GOLDEN_MAX_DOC_BYTES")
    with open(path, "rb") as fh:
        if start > 0:
            fh.seek(start - 1)
            while True:  # the line holding byte start-1 belongs to the previous range: skipped a block at a time
                block = fh.read(1 << 20)
                cut = block.find(b"\n")
                if not block or cut >= 0:
                    fh.seek(cut + 1 - len(block) if block else 0, os.SEEK_CUR)
                    break
        begin = fh.tell()
        if begin >= end:
            return b""
        data = fh.read(end - begin)
        if not data.endswith(b"\n"):
            data += fh.readline(cap + 2)
            last = data.rfind(b"\n", 0, len(data) - 1) + 1
            if not data.endswith(b"\n") and len(data) - last > cap:
                raise line_error(path, _count_lines(path, begin + last) + 1, None, cap)
        return data


def _count_lines(path: str, upto: int) -> int:
    """Line ends in the first ``upto`` bytes of ``path`` (for an error's line number)."""
    count = 0
    with open(path, "rb") as fh:
        while upto > 0:
            block = fh.read(min(upto, 1 << 20))
            if not block:
                break
            count += block.count(b"\n")
            upto -= len(block)
    return count


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
    for name in ("title", "url"):  # strings or nothing, as the Python reader checks
        if name in names and not (pa.types.is_string(table.column(name).type) or pa.types.is_null(
                table.column(name).type)):
            return None
    if not pa.types.is_string(ids.type):
        ids = ids.cast(pa.string())
    import pyarrow.compute as pc

    # (No Python value handed to pyarrow: converting one, "" say, imports pandas, a third of a second.)
    if len(ids) and pc.min(pc.binary_length(pc.utf8_trim_whitespace(ids))).as_py() == 0:
        return None  # a blank id: the Python reader refuses it with its line
    return _one_array(ids), _one_array(texts)


def _one_array(column: pa.ChunkedArray) -> pa.Array:
    """A column as one array: its only chunk as it is (combine_chunks would copy it)."""
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()


def _json_table(data: bytes) -> pa.Table | None:
    import pyarrow.json as pj

    try:
        return pj.read_json(
            pa.BufferReader(data),  # read where it lies, not copied
            read_options=pj.ReadOptions(use_threads=False, block_size=max(1 << 20, len(data) + 1)),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None


# Every digit made "0" and every other byte a space, so that a run of more digits than golden reads is
# one substring search (a regular expression tried at every byte costs ten times more).
_DIGITS_ONLY = bytes(48 if 48 <= c <= 57 else 32 for c in range(256))
_LONG_DIGITS = b"0" * (MAX_INT_DIGITS + 1)


def _needs_exact_reader(data: bytes) -> bool:
    """True when a block holds what pyarrow's JSON reader would take but golden refuses, or may:
    bytes that are not clean UTF-8, JSON nested deeper than golden reads (pyarrow's reader crashes
    on very deep JSON) and an escaped NUL character (pyarrow keeps it; no store keeps text with NUL).
    The Python reader then decides and names the line; these checks may flag a good block, never
    clear a bad one. (Integers longer than golden reads are looked for once the block is read:
    :func:`_long_integers`.)"""
    return not is_clean_text(data) or NestingGuard().too_deep(data) or b"\\u0000" in data


def _long_integers(table: pa.Table, data: bytes) -> bool:
    """True when the block may hold an integer longer than golden reads. pyarrow reads one as a
    float (an integer column too), so only a block with a floating column can: then its digits are
    looked for."""
    kinds = str(table.schema)
    if not any(k in kinds for k in ("double", "float", "decimal")):
        return False
    return _LONG_DIGITS in data.translate(_DIGITS_ONLY)


def _longest(texts: pa.Array) -> int:
    import pyarrow.compute as pc

    return pc.max(pc.binary_length(texts)).as_py() or 0


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
    table = _json_table(data) if data and not _needs_exact_reader(data) else None
    if table is not None and _long_integers(table, data):
        table = None
    cols = _table_columns(table, path) if table is not None else None
    if cols is not None and len(cols[1]) and _longest(cols[1]) > limit("GOLDEN_MAX_DOC_BYTES"):
        cols = None  # a text over the limit: the Python reader refuses it with its line
    if cols is None:
        docs = iter_jsonl_docs(data.split(b"\n"), path, first_line=first_line)
        yield from _python_batches(docs, batch_size)
        return
    ids, texts = cols
    for s in range(0, len(texts), batch_size):
        yield ids.slice(s, batch_size), texts.slice(s, batch_size)


def iter_task_batches(task: CorpusPiece, *, batch_size: int = 4096) -> Iterator[tuple[pa.Array, pa.Array]]:
    """Yield (ids, texts) string arrays for one task, a batch at a time (constant memory).

    JSONL goes through pyarrow's JSON reader (one block of about 16 MB at a time); a block it
    cannot read as plain ``id``/``text`` columns falls back to the Python reader of
    :mod:`curation.formats.corpus`, whose errors name the file and line.
    """
    path = task.path
    if task.kind == "range":
        data = _line_aligned(path, task.start, task.end)

        def first_line() -> int:  # only counted when an error needs a line number
            if not task.start:
                return 1
            with open(path, "rb") as fh:
                before = fh.read(task.start)
            # A line cut by the range's start belongs to the range before (_line_aligned).
            return before.count(b"\n") + 1 + (not before.endswith(b"\n"))

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
        source, gzipped = open_input(path)  # opened once: a pipe too
        with open_binary_from(source, gzipped) as fh:
            # blocks of whole lines, a line over the limit refused as it is read (never read whole)
            for block in iter_line_blocks(fh, path, line_cap("GOLDEN_MAX_DOC_BYTES"), gzipped=gzipped):
                start_line = lines_before
                yield from _jsonl_block_batches(block, path, batch_size, lambda line=start_line: line)
                lines_before += block.count(b"\n")
    else:
        yield from _python_batches(iter_corpus_file(path), batch_size)


def query_texts(path: str | os.PathLike, dedup=None) -> list[tuple[str, str]]:
    """``(qid, text)`` of each query of a queries.jsonl file (read by :mod:`curation.formats.queries`;
    repeated qids through ``dedup``, a :class:`curation.formats.conflicts.Dedup`)."""
    return [(q.qid, q.text) for q in iter_queries(path, dedup=dedup)]
