"""Size limits on untrusted input, with documented defaults a user can raise.

Each limit is read from an environment variable when a file is read, so one mechanism serves every
command (and the web app) alike; a value over a limit is an :class:`InputError` naming ``file:line``,
the size, the limit and the variable that raises it.

=============================  ==============  ==============================================
variable                       default         what it bounds
=============================  ==============  ==============================================
``GOLDEN_MAX_QUERY_BYTES``     10 000          a query's text (queries.jsonl, query lists)
``GOLDEN_MAX_DOC_BYTES``       10 000 000      a document's text (corpus files)
``GOLDEN_MAX_GUIDELINES_BYTES``  1 000 000     the judging guidelines, and a query's
                                               information need (description, narrative),
                                               from a file or the web app
``GOLDEN_MAX_REASON_BYTES``    10 000          a lead's adjudication reason (CLI or web app)
``GOLDEN_MAX_LINE_BYTES``      1 000 000       one line of any line-oriented file (runs, qrels,
                                               logs, pools, seeds, query lists, JSONL, JSON,
                                               guidelines); a corpus line may also hold a
                                               document: GOLDEN_MAX_DOC_BYTES more
``GOLDEN_MAX_INPUT_BYTES``     150 000 000     one input file once decompressed, for every
                                               reader that keeps what it reads in memory
                                               (runs, qrels, queries, pools, seeds, query
                                               lists, JSON files...); corpora and logs are
                                               streamed (memory per document or distinct
                                               query, not per byte) and not bounded by it
=============================  ==============  ==============================================
"""

from __future__ import annotations

import os

from curation.formats.errors import InputError

DEFAULTS = {
    "GOLDEN_MAX_QUERY_BYTES": 10_000,
    "GOLDEN_MAX_DOC_BYTES": 10_000_000,
    "GOLDEN_MAX_GUIDELINES_BYTES": 1_000_000,
    "GOLDEN_MAX_REASON_BYTES": 10_000,
    "GOLDEN_MAX_LINE_BYTES": 1_000_000,
    "GOLDEN_MAX_INPUT_BYTES": 150_000_000,
}


def limit(name: str) -> int:
    """The limit ``name`` (a key of :data:`DEFAULTS`) in bytes: the environment's value, else the
    default; ValueError naming the variable when it is not a positive whole number."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return DEFAULTS[name]
    try:
        value = int(raw.strip().replace("_", ""))
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"{name}: {raw!r} is not a positive whole number of bytes (default {DEFAULTS[name]})")
    return value


class SizeLimitError(InputError):
    """A text over its size limit (the web app answers it with 413)."""


def check_size(text: str | bytes, name: str, path, lineno: int | None, what: str) -> None:
    """Refuse ``text`` (``what`` names it: "query q1's text") when its UTF-8 size is over the limit ``name``
    (:class:`SizeLimitError`), or when it holds a NUL character: PostgreSQL cannot store one in text
    (SQLite would), so it is refused on every store, before anything is written."""
    at = text.find("\x00" if isinstance(text, str) else b"\x00")
    if at >= 0:
        raise InputError(path, lineno, f"{what} holds a NUL character (U+0000, at character {at + 1}); "
                                       "remove it: no store keeps text with NUL")
    cap = limit(name)
    if len(text) * 4 <= cap:  # a character is at most 4 bytes in UTF-8: no need to encode
        return
    size = len(text) if isinstance(text, bytes) else len(text.encode("utf-8", "surrogatepass"))
    if size > cap:
        raise SizeLimitError(path, lineno, f"{what} is {size} bytes, over the limit of {cap} bytes "
                                           f"(raise it with {name}=N)")


def line_cap(extra: str | None = None) -> int:
    """The longest line a reader takes: GOLDEN_MAX_LINE_BYTES, plus the limit ``extra`` (a corpus line
    holds a document of up to GOLDEN_MAX_DOC_BYTES besides its id and syntax)."""
    return limit("GOLDEN_MAX_LINE_BYTES") + (limit(extra) if extra else 0)


def line_error(path, lineno: int | None, size: int | None, cap: int) -> InputError:
    """A line over ``cap`` bytes; ``size`` None: refused while it is read, before its end."""
    length = f"is {size} bytes, over" if size is not None else "is longer than"
    return InputError(path, lineno, f"the line {length} the limit of {cap} bytes "
                                    "(raise it with GOLDEN_MAX_LINE_BYTES=N)")


def line_at(data: bytes, pos: int) -> int:
    """The number (from 1) of the line of ``data`` that byte ``pos`` lies on, lines ended as
    :func:`~curation.formats.fileio.open_text` ends them (``\\n``, ``\\r\\n`` or a lone ``\\r``)."""
    return data.count(b"\n", 0, pos) + data.count(b"\r", 0, pos) - data.count(b"\r\n", 0, pos) + 1


def input_error(path, lineno: int, cap: int) -> InputError:
    """An input whose decompressed size passes ``cap`` bytes (GOLDEN_MAX_INPUT_BYTES) at line ``lineno``:
    refused there, before the rest of it is read."""
    return InputError(path, lineno, f"the input passes the limit of {cap} bytes (once decompressed) on this "
                                    "line; refused before reading on (raise it with GOLDEN_MAX_INPUT_BYTES=N)")


def check_line(line: str, path, lineno: int | None, cap: int) -> None:
    """Refuse a decoded line over ``cap`` bytes (cheap: only a long line is encoded to be measured)."""
    if len(line) * 4 <= cap:
        return
    size = len(line.encode("utf-8", "surrogatepass"))
    if size > cap:
        raise line_error(path, lineno, size, cap)


def check_data_lines(data: bytes, path, cap: int | None = None) -> None:
    """Refuse the first line of ``data`` (a whole file in memory) over ``cap`` bytes (default
    :func:`line_cap`).

    From a line's start, the last line end within the next ``cap + 1`` bytes (``bytes.rfind``,
    a memrchr) starts the next line to look from: a file is crossed in about ``len(data) / cap``
    jumps, and only a line with no end in its window (too long) is measured and numbered.
    """
    cap = line_cap() if cap is None else cap
    size = len(data)
    start = 0
    while size - start > cap:
        end = data.rfind(b"\n", start, start + cap + 1)
        if end < 0:
            stop = data.find(b"\n", start)
            length = (size if stop < 0 else stop) - start
            raise line_error(path, data.count(b"\n", 0, start) + 1, length, cap)
        start = end + 1


def csv_reader(fh, **kwargs):
    """``csv.reader`` over ``fh`` (lines :func:`open_text` has checked against GOLDEN_MAX_LINE_BYTES), its
    field size limit raised to that cap so a field never fails with csv's own 131072-byte limit."""
    import csv

    csv.field_size_limit(max(csv.field_size_limit(), line_cap()))
    return csv.reader(fh, **kwargs)
