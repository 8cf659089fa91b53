"""File helpers: transparent gzip, whole-or-nothing writes, and input errors that name file and line.

Every text file golden reads goes through :func:`open_text` (or :func:`decode_text` for bytes already
in memory), which decodes strictly: invalid UTF-8 is ``path:line: not valid UTF-8 (byte 0xff at
column 17)``, a NUL byte means binary data and is refused as such, a UTF-8 byte-order mark at the
start is dropped (so a BOM + CRLF file gives the same records as the clean one), and a truncated or
corrupt gzip stream names the file and the last complete line read. A reader that finds no record
calls :func:`no_records`.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import math
import os
import re
import stat
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from curation.formats.errors import InputError

STDIN_NAMES = ("-", "/dev/stdin")  # the names of standard input as an input file


def is_stdin(path: str | os.PathLike) -> bool:
    """True for ``-`` and ``/dev/stdin``: standard input, read as one stream."""
    return str(path) in STDIN_NAMES


def is_stream(path: str | os.PathLike) -> bool:
    """True when ``path`` is read as one stream, not a file that can be opened again: standard input,
    a pipe (``<(cat file)``, a FIFO), a character device (``/dev/zero``) or a socket."""
    if is_stdin(path):
        return True
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


#: Seconds a FIFO may stay without a writer before golden says it is waiting for one.
FIFO_PATIENCE = 1.0


def _wait_for_writer(fd: int, path: str) -> None:
    """Wait until the pipe ``fd`` (opened without blocking) has data or its writer closed it; after
    :data:`FIFO_PATIENCE` seconds say on stderr that golden waits, so a FIFO nobody writes to never
    hangs silently (Ctrl-C stops the wait)."""
    import select
    import sys

    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP)
    if not poller.poll(int(FIFO_PATIENCE * 1000)):
        print(f"golden: waiting for data on {path} (a pipe or FIFO with no writer yet; "
              "Ctrl-C to stop)", file=sys.stderr, flush=True)
        while not poller.poll(1000):
            pass


#: The SHA-256 of each stream read to its end in this process, by the name it was given (``-``,
#: ``/dev/fd/63``): a stream cannot be read again to be hashed, so :func:`sha256_file` answers from here.
_STREAM_DIGESTS: dict[str, str] = {}


class _Unclosed:
    """A file whose ``close`` does nothing (standard input, read but not ours to close)."""

    def __init__(self, fh):
        self._fh = fh

    def read(self, n: int = -1) -> bytes:
        return self._fh.read(n)

    def readinto(self, buffer) -> int:
        data = self._fh.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        pass


class _Replay(io.RawIOBase):
    """A raw stream that gives back ``head`` (bytes already read to sniff the format) and then the rest
    of ``fh``: a stream is read once, and what the sniff read is not lost."""

    def __init__(self, head: bytes, fh, name: str):
        self._head = head
        self._fh = fh
        self._name = name
        self._digest = hashlib.sha256(head)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self._head:
            n = min(len(buffer), len(self._head))
            buffer[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        n = self._fh.readinto(buffer)
        if n:
            self._digest.update(memoryview(buffer)[:n])
        elif n == 0:  # the end: what was read is the stream's content, whose digest sha256_file gives
            _STREAM_DIGESTS[self._name] = self._digest.hexdigest()
        return n

    def close(self) -> None:
        if not self.closed:
            self._fh.close()
        super().close()


def open_input(path: str | os.PathLike) -> tuple[IO[bytes], bool]:
    """``(binary file, gzipped)``: ``path`` opened once for reading, and whether it starts with gzip's
    magic bytes.

    A regular file is opened and sniffed with ``peek`` (no second open). Standard input (``-``,
    ``/dev/stdin``), a pipe, a FIFO or a device is read as one stream: the bytes read to sniff are
    given back first, so nothing is lost; a FIFO with no writer makes golden say on stderr that it
    waits (:func:`_wait_for_writer`).
    """
    import sys

    name = str(path)
    if not is_stream(name):
        fh = open(name, "rb")  # noqa: SIM115 - returned to the caller, who closes it
        return fh, fh.peek(2)[:2] == b"\x1f\x8b"
    if name == "-":
        raw = _Unclosed(sys.stdin.buffer)  # standard input stays open for whoever reads it next
    else:
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO opens at once, writer or not
        except OSError:
            fd = None
        if fd is not None and stat.S_ISFIFO(os.fstat(fd).st_mode):
            try:
                _wait_for_writer(fd, name)
                os.set_blocking(fd, True)
            except BaseException:
                os.close(fd)
                raise
            raw = os.fdopen(fd, "rb", buffering=0)
        else:
            if fd is not None:
                os.close(fd)
            raw = open(name, "rb", buffering=0)  # noqa: SIM115
    head = b""
    while len(head) < 2:
        more = raw.read(2 - len(head))
        if not more:
            break
        head += more
    return io.BufferedReader(_Replay(head, raw, name), buffer_size=_BLOCK), head == b"\x1f\x8b"


def is_gzip(path: str | os.PathLike) -> bool:
    """True when the regular file ``path`` starts with gzip's magic bytes (whatever its name); a reader
    of a stream sniffs with :func:`open_input` instead."""
    with open(path, "rb") as fh:
        return fh.read(2) == b"\x1f\x8b"


def open_binary(path: str | os.PathLike) -> IO[bytes]:
    """Open an input for reading bytes, opened once (:func:`open_input`), gzip decompressed transparently."""
    return open_binary_from(*open_input(path))


def open_binary_from(fh: IO[bytes], gzipped: bool) -> IO[bytes]:
    """What :func:`open_input` gave, gzip decompressed when it is gzip."""
    return _Gunzip(fh) if gzipped else fh


class _Gunzip(gzip.GzipFile):
    """A gzip stream over an open file, which closes that file too (``GzipFile`` leaves it open)."""

    def __init__(self, fh):
        super().__init__(fileobj=fh, mode="rb")
        self._source = fh

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._source.close()


_BLOCK = 1 << 20  # bytes decoded at a time by open_text
#: What reading a damaged gzip stream raises (the standard library's gzip and ISA-L's igzip alike).
GZIP_ERRORS = (EOFError, gzip.BadGzipFile, zlib.error)


def no_records(path: str | os.PathLike, hint: str = "") -> InputError:
    """The error of a file that holds no record (empty, blank lines, or a header only): ``path: no records``,
    followed by ``hint`` when given (what the file should hold)."""
    return InputError(path, None, "no records" + (f" ({hint})" if hint else ""))


_CONTROL = bytes(b for b in range(32) if b not in b"\t\n\r\x0c")


def _looks_binary(window: bytes) -> bool:
    """True when bytes around a decoding error look like binary data rather than text in another
    encoding (Latin-1, say): a NUL byte, or 8 or more and over 15% of them control characters or not UTF-8."""
    if b"\x00" in window:
        return True
    controls = len(window) - len(window.translate(None, _CONTROL))
    invalid = window.decode("utf-8", errors="replace").count("\ufffd")
    return controls + invalid >= max(8, 0.15 * len(window))


def _line_and_column(text: str) -> tuple[int, int]:
    """(lines completed, column) of the position just after ``text``, lines counted as ``newline=""``
    counts them (``\\n``, ``\\r\\n`` and a lone ``\\r`` each end one)."""
    lines = io.StringIO(text, newline="").readlines()
    if lines and lines[-1].endswith(("\n", "\r")):
        return len(lines), 1
    return max(len(lines) - 1, 0), (len(lines[-1]) if lines else 0) + 1


def _decode_block(block: bytes, path: str, first_line: int) -> str:
    """``block`` (whole lines, from line ``first_line``) decoded strictly; InputError for invalid UTF-8
    or a NUL byte, naming the line and the column (in characters) where it is."""
    try:
        text = block.decode("utf-8")
    except UnicodeDecodeError as exc:
        done, column = _line_and_column(block[: exc.start].decode("utf-8"))
        if b"\x00" in block[: exc.start]:
            text = block[: exc.start].decode("utf-8")
        elif _looks_binary(block[max(exc.start - 256, 0) : exc.start + 256]):
            raise InputError(
                path, first_line + done, f"binary data, not text (byte 0x{block[exc.start]:02x} at column {column} "
                "is not UTF-8); expected a UTF-8 text file"
            ) from None
        else:
            raise InputError(
                path, first_line + done, f"not valid UTF-8 (byte 0x{block[exc.start]:02x} at column {column}); "
                "save the file as UTF-8"
            ) from None
    at = text.find("\x00")
    if at >= 0:
        done, column = _line_and_column(text[:at])
        raise InputError(
            path, first_line + done,
            f"binary data, not text (a NUL byte at column {column}); expected a UTF-8 text file",
        )
    at = text.find("\ufeff")
    if at >= 0:  # one at the very start was dropped before: another is two files joined, or a stray mark
        done, column = _line_and_column(text[:at])
        raise InputError(
            path, first_line + done,
            f"a byte-order mark (U+FEFF) at column {column}; only the first bytes of a file may hold one "
            "(two files joined with cat?)",
        )
    return text


def _read_block(fh, path: str, gzipped: bool, lines_done: int) -> bytes:
    try:
        return fh.read1(_BLOCK) if gzipped else fh.read(_BLOCK)  # read1: what is decompressed so far
    except GZIP_ERRORS as exc:
        if not gzipped:
            raise
        raise InputError(path, None, gzip_damage(lines_done, exc)) from None


def _refuse_long_line(start: bytes, path: str, lineno: int, cap: int, first: bool) -> None:
    """Refuse line ``lineno``, of which ``start`` (over ``cap`` bytes, no line end yet) is read: as
    binary data when it holds a NUL byte (``/dev/zero``), else as over the limit, without reading on."""
    from curation.formats.limits import line_error

    if first and start.startswith(b"\xef\xbb\xbf"):
        start = start[3:]
    nul = start.find(b"\x00")
    if nul >= 0:
        _decode_block(start[: nul + 1], path, lineno)
    raise line_error(path, lineno, None, cap)


def iter_line_blocks(fh, path: str | os.PathLike, cap: int, *, size: int = 16 << 20, gzipped: bool = False,
                     first_line: int = 1, lines_yielded=None) -> Iterator[bytes]:
    """Blocks of whole lines (about ``size`` bytes each, the last one maybe without a line end) read
    from the binary file ``fh``, holding at most about ``size`` + ``cap`` bytes: a line still unfinished
    after ``cap`` bytes is refused then (:func:`_refuse_long_line`), never read whole (a finished line
    over ``cap`` is the caller's to refuse, with the rest of its checks). Lines are counted from
    ``first_line`` for the error; ``gzipped``: a damaged stream is named as such, with the last complete
    line read (a gzip stream is read with ``read1``: what is decompressed so far, up to the damage).
    ``lines_yielded``: a caller that keeps the blocks may pass a function giving the number of lines
    in those yielded so far; they are then counted only for an error (a pass over every byte spared)."""
    path_s = str(path)
    counted = first_line - 1  # lines in the blocks yielded (when they are counted here)

    def yielded() -> int:
        return counted if lines_yielded is None else first_line - 1 + lines_yielded()

    pieces: list[bytes] = []  # read, not yielded yet
    held = 0  # their size
    since = 0  # bytes after their last line end: the line not finished yet
    first = True  # no block yielded yet
    while True:
        try:
            chunk = fh.read1(size) if gzipped else fh.read(size)
        except GZIP_ERRORS + (OSError, _isal_error()) as exc:  # OSError: BadGzipFile; ISA-L's own error
            if not gzipped:
                raise
            if not is_stream(path_s):  # a file: the lines that do decompress counted afresh, exactly
                raise gzip_file_damage(path_s, exc) from None
            done = yielded() - (first_line - 1) + sum(p.count(b"\n") for p in pieces)
            raise InputError(path_s, None, gzip_damage(done, exc)) from None
        if chunk:
            pieces.append(chunk)
            held += len(chunk)
            cut = chunk.rfind(b"\n")
            since = since + len(chunk) if cut < 0 else len(chunk) - cut - 1
            if since > cap + 2:  # the line end (\r\n) is not part of the line
                block = b"".join(pieces)
                start = len(block) - since
                _refuse_long_line(block[start:], path_s, yielded() + block.count(b"\n", 0, start) + 1, cap,
                                  first and start == 0)
            if held < size:
                continue
        block = b"".join(pieces)
        if not block:
            return
        cut = len(block) - since if chunk else len(block)
        out, rest = block[:cut], block[cut:]
        if lines_yielded is None:
            counted += out.count(b"\n")
        pieces, held = ([rest], len(rest)) if rest else ([], 0)
        if out:
            first = False
            yield out
        if not chunk:
            return


def _isal_error() -> type[Exception]:
    """What ISA-L's gzip raises for a damaged stream, besides the standard library's errors."""
    from isal import isal_zlib

    return isal_zlib.error


class _Hashing:
    """A binary file whose bytes, as read, are added to a SHA-256 digest (``digest``)."""

    def __init__(self, fh):
        self._fh = fh
        self.digest = hashlib.sha256()

    def read(self, n: int = -1) -> bytes:
        data = self._fh.read(n)
        self.digest.update(data)
        return data

    def readinto(self, buffer) -> int:
        n = self._fh.readinto(buffer)
        self.digest.update(memoryview(buffer)[:n])
        return n

    def close(self) -> None:
        self._fh.close()


def _content_size_hint(source, gzipped: bool) -> int | None:
    """The size of a regular file's content, for the size of the reads that take it in: the file's size,
    or for a gzip file the ISIZE field of its trailer (the size of the last member modulo 2**32, which
    a file may get wrong: a hint, never trusted for anything else); None for a stream."""
    try:
        fd = source.fileno()
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        if not gzipped:
            return info.st_size
        tail = os.pread(fd, 4, info.st_size - 4) if info.st_size >= 18 else b""  # 18: gzip's smallest member
    except (AttributeError, OSError, ValueError):
        return None
    return int.from_bytes(tail, "little") if len(tail) == 4 else None


def read_whole(path: str | os.PathLike, cap: int | None = None, total: int | None = None) -> tuple[str, bytes]:
    """``(sha256 of the bytes as stored, content)``: an input read whole, opened once
    (:func:`open_input`: a pipe or standard input too), gunzipped (ISA-L), a line over ``cap`` bytes
    (default GOLDEN_MAX_LINE_BYTES) refused while reading (:func:`iter_line_blocks`), so ``/dev/zero``
    or a gzip stream that inflates to one endless line costs about ``cap`` bytes of memory, not more;
    and content over ``total`` bytes (default GOLDEN_MAX_INPUT_BYTES), however valid its lines (a gzip
    bomb of run lines), refused at the line where it passes the limit, having held about that much."""
    from curation.formats.limits import input_error, limit, line_at, line_cap

    cap = line_cap() if cap is None else cap
    total = limit("GOLDEN_MAX_INPUT_BYTES") if total is None else total
    source, gzipped = open_input(path)
    size = min(16 << 20, total + 1)
    hint = _content_size_hint(source, gzipped)
    if hint is not None:  # one read of the right size: a buffer of 16 MB, shrunk, fragments the heap
        size = min(size, max(hint + 1, 1 << 16))
    raw = _Hashing(source)
    blocks: list[bytes] = []
    held = 0  # bytes in blocks (their lines are counted only for an error)

    def lines() -> int:
        return sum(b.count(b"\n") + b.count(b"\r") - b.count(b"\r\n") for b in blocks)

    try:
        if gzipped:
            from isal import igzip  # ISA-L's gzip: the same format as the standard library's, about twice as fast

            fh = igzip.GzipFile(fileobj=raw, mode="rb")
        else:
            fh = contextlib.nullcontext(raw)
        with fh as stream:
            for block in iter_line_blocks(stream, path, cap, gzipped=gzipped, size=size,
                                          lines_yielded=lambda: sum(b.count(b"\n") for b in blocks)):
                if held + len(block) > total:
                    raise input_error(path, lines() + line_at(block, total - held), total)
                blocks.append(block)
                held += len(block)
    finally:
        raw.close()
    return raw.digest.hexdigest(), b"".join(blocks)


def gzip_damage(lines_done: int, exc: BaseException | None = None) -> str:
    """The message for a truncated or corrupt gzip stream, after ``lines_done`` complete lines."""
    last = f"the last complete line read is line {lines_done}" if lines_done else "no complete line could be read"
    cause = f" ({exc})" if exc is not None and str(exc) else ""
    return f"truncated or corrupt gzip data{cause}; {last}"


def iter_text_lines(path: str | os.PathLike, max_line: int | None = None, max_total: int | None = None
                    ) -> Iterator[str]:
    """The lines of a text file (gzip allowed), each with its line end as in the file, decoded strictly
    (see the module's docstring); lines end at ``\\n``, ``\\r\\n`` or a lone ``\\r`` (``newline=""``).
    A line over ``max_line`` bytes (default GOLDEN_MAX_LINE_BYTES, :mod:`curation.formats.limits`) is
    refused with ``path:line`` and the limit; so is, at the line where it passes it, an input over
    ``max_total`` bytes once decompressed (None: no such bound)."""
    from curation.formats.limits import check_line, input_error, line_at, line_cap

    cap = line_cap() if max_line is None else max_line
    path_s = str(path)
    lineno = 0  # lines yielded
    read = 0  # bytes read (decompressed)
    source, gzipped = open_input(path)
    with open_binary_from(source, gzipped) as fh:
        pending: list[bytes] = []  # the start of a line not ended yet (a long line spans several reads)
        waiting = 0  # its size: over the cap, the line is refused before the rest of it is read
        first = True
        while True:
            chunk = _read_block(fh, path_s, gzipped, lineno)
            if max_total is not None and read + len(chunk) > max_total:  # the line of byte max_total + 1
                unread = b"".join(pending) + chunk
                raise input_error(path_s, lineno + line_at(unread, max_total - (read - waiting)), max_total)
            read += len(chunk)
            if chunk:
                cut = chunk.rfind(b"\n") + 1
                if not cut:
                    pending.append(chunk)
                    waiting += len(chunk)
                    if waiting > cap + 2:  # the line end (\r\n) is not part of the line
                        _refuse_long_line(b"".join(pending), path_s, lineno + 1, cap, first)
                    continue
                waiting = len(chunk) - cut
                pending.append(chunk[:cut])
                block, pending = b"".join(pending), [chunk[cut:]]
            else:
                block, pending = b"".join(pending), []
                if not block:
                    return
            if first:
                first = False
                if block.startswith(b"\xef\xbb\xbf"):
                    block = block[3:]
            for line in io.StringIO(_decode_block(block, path_s, lineno + 1), newline=""):
                lineno += 1
                check_line(line.rstrip("\r\n"), path_s, lineno, cap)
                yield line


class _TextLines:
    """What :func:`open_text` returns: an iterator of lines, a context manager, and ``read()``."""

    def __init__(self, path: str | os.PathLike, max_line: int | None = None, max_total: int | None = None):
        self._lines = iter_text_lines(path, max_line, max_total)

    def __iter__(self):
        return self._lines

    def __next__(self) -> str:
        return next(self._lines)

    def read(self) -> str:
        return "".join(self._lines)

    def close(self) -> None:
        self._lines.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def open_text(path: str | os.PathLike, encoding: str = "utf-8", max_line: int | None = None, *,
              streamed: bool = False) -> _TextLines:
    """Open a text file for reading lines (gzip allowed), strictly decoded as UTF-8 with any byte-order
    mark dropped (:func:`iter_text_lines`); ``encoding`` may only name UTF-8 (``utf-8-sig`` included).
    The input is bounded by GOLDEN_MAX_INPUT_BYTES once decompressed, unless ``streamed``: a reader whose
    memory does not grow with the bytes it reads (a corpus, a log) may read any amount."""
    from curation.formats.limits import limit

    if encoding.lower().replace("_", "-") not in ("utf-8", "utf8", "utf-8-sig"):
        raise ValueError(f"open_text reads UTF-8 only, not {encoding!r}")
    return _TextLines(path, max_line, None if streamed else limit("GOLDEN_MAX_INPUT_BYTES"))


def decode_text(data: bytes, path: str | os.PathLike) -> str:
    """Bytes already in memory (decompressed), decoded as :func:`open_text` decodes a file: strict UTF-8,
    no NUL byte, a leading byte-order mark dropped."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    return _decode_block(data, str(path), 1)


def is_clean_text(data: bytes) -> bool:
    """True when ``data`` is valid UTF-8 without a NUL byte: what a fast reader that does not check
    (pyarrow's JSON reader) may take; otherwise the exact reader must report the line."""
    if b"\x00" in data or b"\xef\xbb\xbf" in data:  # a NUL, or a byte-order mark (refused past the start)
        return False
    if data.isascii():
        return True
    # Arrow's UTF-8 validation over the bytes as they are (one string, no copy): a tenth of the time
    # of decoding, and it refuses what decode refuses (overlong forms, surrogates, beyond U+10FFFF).
    import numpy as np
    import pyarrow as pa

    offsets = pa.py_buffer(np.array([0, len(data)], dtype=np.int64))
    whole = pa.LargeStringArray.from_buffers(1, offsets, pa.py_buffer(data))
    try:
        whole.validate(full=True)
    except pa.ArrowInvalid:
        return False
    return True


def decompress_all(raw: bytes, path: str | os.PathLike) -> bytes:
    """The content of a whole file read in memory: gunzipped when it starts with gzip's magic bytes,
    InputError naming the path and the last complete line for a truncated or corrupt stream."""
    if raw[:2] != b"\x1f\x8b":
        return raw
    from isal import igzip  # ISA-L's gzip: the same format as the standard library's, about twice as fast

    try:
        return igzip.decompress(raw)
    except GZIP_ERRORS + (OSError,) as exc:
        raise InputError(path, None, gzip_damage(_gunzip_lines(raw), exc)) from None


def gzip_file_damage(path: str | os.PathLike, exc: BaseException) -> InputError:
    """The error for a gzip file whose stream broke while being read as a whole (the lines that do
    decompress are counted afresh, so the last complete line is exact)."""
    with open(path, "rb") as fh:
        complete = _gunzip_lines(fh.read())
    return InputError(path, None, gzip_damage(complete, exc))


def _gunzip_lines(raw: bytes) -> int:
    """The line ends in as much of a damaged gzip stream as decompresses, counted piece by piece (a
    damaged bomb is not inflated in memory)."""
    return sum(piece.count(b"\n") for piece in _gunzip_pieces(raw))


def _gunzip_pieces(raw: bytes) -> Iterator[bytes]:
    inflate = zlib.decompressobj(wbits=31)
    try:
        for at in range(0, len(raw), 4096):
            yield inflate.decompress(raw[at : at + 4096])
            if inflate.eof:
                break
    except zlib.error:
        pass


def base_suffix(path: str | os.PathLike) -> str:
    """The file's format suffix with any ``.gz`` removed: ``log.csv.gz`` -> ``.csv``."""
    name = Path(path).name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    return Path(name).suffix


def sha256_file(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file's bytes as stored (compressed files are hashed compressed); for a stream
    (standard input, a pipe), of the bytes read from it, which a reader must have read to the end."""
    if is_stream(path):  # read once already (by the reader that took its records): hashed then
        if str(path) not in _STREAM_DIGESTS:
            raise InputError(path, None, "a pipe or standard input is read once; its content was not read to the end")
        return _STREAM_DIGESTS[str(path)]
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(chunk), b""):
            digest.update(block)
    return digest.hexdigest()


def default_mode(*, directory: bool = False) -> int:
    """The permission bits a plain ``open()`` (or ``mkdir``) would give under the current umask.

    ``tempfile`` creates files 0600 and folders 0700; what golden writes through a temporary name
    gets these bits before it is renamed, so other users and CI can read the output as usual.
    """
    mask = os.umask(0)
    os.umask(mask)
    return (0o777 if directory else 0o666) & ~mask


class WriteError(OSError):
    """An OS error (a full disk, a permission, a read-only or missing folder) while writing
    ``filename``: ``golden`` shows it as "cannot write PATH: cause"."""


def write_error(exc: OSError, path: str | os.PathLike) -> OSError:
    """``exc`` as a :class:`WriteError` naming ``path`` (the file the user asked for, not a temporary
    one); an error that names another file (e.g. an input read inside the block) is kept as is."""
    if isinstance(exc, WriteError) or exc.errno is None:
        return exc
    return WriteError(exc.errno, exc.strerror or str(exc), str(path))


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Write ``path`` whole or not at all.

    The content goes to a temporary file in the same folder, which replaces ``path`` only when the
    block finishes without an exception; on an exception the temporary file is removed and ``path``
    is left as it was. An OS error of the writing itself (no space left, no permission, ...) is
    raised as a :class:`WriteError` naming ``path``.
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise write_error(exc, path) from exc
    try:
        if "b" in mode:
            fh = os.fdopen(fd, mode)
        else:
            fh = os.fdopen(fd, mode, encoding=encoding, newline="\n")
        with fh:
            yield fh
        os.chmod(tmp, default_mode())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.filename in (None, tmp):
            raise write_error(exc, path) from exc
        raise


class OutputClash(ValueError):
    """An output path a command must not write: one of its inputs (or an input's side file), another of
    its outputs, a folder, a device node or a FIFO."""


def _identity(path: str) -> tuple[str, tuple[int, int] | None, os.stat_result | None]:
    """(resolved path, (device, inode) or None, stat or None) of ``path``, following links."""
    real = os.path.realpath(path)
    try:
        st = os.stat(path)
    except OSError:
        return real, None, None
    return real, (st.st_dev, st.st_ino), st


def check_outputs(outputs: list[tuple[str, str, bool]], inputs: list[tuple[str, str]]) -> None:
    """Refuse, before a command does any work, an output that would replace or read into one of its inputs.

    ``outputs``: (label, path, stdout_ok) for every file the command writes, side files included
    (``pool.meta.json``); ``inputs``: (label, path) for every file or folder it reads, side files
    included. An output is refused (:class:`OutputClash`, naming both) when it is the same file as an
    input (same device and inode: a hard or symbolic link too) or the same resolved path, when it lies
    inside an input folder, when two outputs are the same file, and when it exists as a folder, a FIFO,
    a socket or a device node (golden writes regular files, by a temporary name renamed into place,
    which would replace the node). ``-`` is standard output where ``stdout_ok``, else refused.
    """
    seen_in = []
    for label, path in inputs:
        if path in (None, "", "-"):
            continue
        real, ident, st = _identity(str(path))
        seen_in.append((label, str(path), real, ident, st is not None and stat.S_ISDIR(st.st_mode)))
    seen_out: list[tuple[str, str, str, tuple[int, int] | None]] = []
    for label, path, stdout_ok in outputs:
        path = str(path)
        if path == "-":
            if stdout_ok:
                continue
            raise OutputClash(f"{label} -: this command cannot write to standard output; name a file")
        real, ident, st = _identity(path)
        if st is not None:
            mode = st.st_mode
            kind = ("a folder" if stat.S_ISDIR(mode) else "a FIFO (named pipe)" if stat.S_ISFIFO(mode)
                    else "a device node" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
                    else "a socket" if stat.S_ISSOCK(mode) else None)
            if kind:
                raise OutputClash(f"{label} {path}: is {kind}, not a regular file; name a file to write")
        for in_label, in_path, in_real, in_ident, is_dir in seen_in:
            same = real == in_real or (ident is not None and ident == in_ident)
            inside = is_dir and real.startswith(in_real.rstrip(os.sep) + os.sep)
            if same or inside:
                how = "is inside the input folder" if inside and not same else "is the input"
                raise OutputClash(
                    f"{label} {path} {how} {in_label} {in_path}: golden never writes over what it reads; "
                    "write the output to another path"
                )
        for out_label, out_path, out_real, out_ident in seen_out:
            if real == out_real or (ident is not None and ident == out_ident):
                raise OutputClash(f"{label} {path} and {out_label} {out_path} are the same file; give two paths")
        seen_out.append((label, path, real, ident))


class _NonFinite(ValueError):
    def __init__(self, raw: str):
        super().__init__(raw)
        self.raw = raw


def _finite_float(raw: str) -> float:
    value = float(raw)
    if not math.isfinite(value):  # an overflow such as 1e400
        raise _NonFinite(raw)
    return value


def _no_constant(raw: str):  # NaN, Infinity, -Infinity
    raise _NonFinite(raw)


def _non_finite(raw: str) -> str:
    return f"{raw[:30]} is not a finite number (NaN, Infinity and overflows such as 1e400 are refused)"


#: How deep JSON may nest (objects and arrays in one another): golden's files need 3 or 4 levels.
MAX_JSON_DEPTH = 64
#: The most digits a JSON integer may have (a 64-bit integer has 19 or 20): beyond, it is no id, count or grade.
MAX_INT_DIGITS = 40


class _JsonRefused(ValueError):
    """A JSON value golden refuses (its message says why; ``at``: its text, to find its line)."""

    def __init__(self, message: str, at: str | None = None):
        super().__init__(message)
        self.message = message
        self.at = at


def _unique_pairs(pairs: list) -> dict:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set = set()
        key = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise _JsonRefused(f"duplicate key {key[:50]!r} in one object (which value is meant?)", json.dumps(key))
    return obj


def _bounded_int(raw: str) -> int:
    if len(raw) - raw.startswith("-") > MAX_INT_DIGITS:
        raise _JsonRefused(f"an integer of {len(raw) - raw.startswith('-')} digits (at most {MAX_INT_DIGITS})",
                           raw[:MAX_INT_DIGITS])
    return int(raw)


# One decoder for every JSON golden reads (the standard library's, its hooks set once): duplicate keys,
# NaN and Infinity, overflowing floats refused; a second one also bounds integers, used only when a line
# holds a run of more than MAX_INT_DIGITS digits (rare, and a hook per integer costs time).
# (key: finite, bounded): ``finite`` refuses NaN, Infinity and overflowing floats anywhere; without it, they
# are read as floats for the reader's own check of each field, which names the field.
_DECODERS = {
    (finite, bounded): json.JSONDecoder(
        object_pairs_hook=_unique_pairs,
        **({"parse_float": _finite_float, "parse_constant": _no_constant} if finite else {}),
        **({"parse_int": _bounded_int} if bounded else {}),
    )
    for finite in (False, True) for bounded in (False, True)
}
_LONG_DIGITS = re.compile(rf"[0-9]{{{MAX_INT_DIGITS + 1}}}")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


_NOT_BRACKETS = bytes(c for c in range(256) if c not in b"[]{}\n")


class NestingGuard:
    """A bound on how deep JSON lines nest, over their bytes, for a fast reader that does not bound it
    itself (pyarrow's JSON reader crashes the process on JSON nested 100,000 deep). :meth:`too_deep`
    takes the bytes in order, in blocks cut anywhere; it counts brackets per line with numpy, those
    inside strings too, so it may overestimate, never underestimate: a line it flags goes to the exact
    reader (:func:`loads_json`), which decides and names the line."""

    def __init__(self, limit: int = MAX_JSON_DEPTH):
        self.limit = limit
        self._carry = 0  # the depth reached by the line not ended yet

    def too_deep(self, data: bytes) -> bool:
        if not data:
            return False
        # Only the brackets and line ends matter to the depths: one pass keeps them (a small share of
        # the bytes), and the rest works on those alone.
        data = data.translate(None, _NOT_BRACKETS)
        opened = data.count(b"[") + data.count(b"{")
        if opened + self._carry <= self.limit:  # nothing can go deeper: the usual case, no numpy
            cut = data.rfind(b"\n")  # the line not ended yet carries at most its opening brackets
            self._carry = (self._carry if cut < 0 else 0) + data.count(b"[", cut + 1) + data.count(b"{", cut + 1)
            return False
        import numpy as np

        # A line can only nest deeper than the limit if it opens more brackets than that: the opening
        # brackets are counted per line, and the depth is followed only on the lines that open that many.
        raw = np.frombuffer(data, dtype=np.uint8)
        ends = np.flatnonzero(raw == ord("\n"))
        opens = np.flatnonzero((raw == ord("[")) | (raw == ord("{")))
        per_line = np.bincount(np.searchsorted(ends, opens), minlength=len(ends) + 1)
        per_line[0] += self._carry
        starts = np.concatenate(([0], ends + 1))
        last = len(ends)  # the line not ended in this block (empty when the block ends a line)
        for i in np.flatnonzero(per_line > self.limit).tolist():
            depth = self._depths(raw[starts[i] : ends[i] if i < last else len(raw)], self._carry if i == 0 else 0)
            if depth.max() > self.limit:
                return True
        if last == 0:
            self._carry = int(self._depths(raw, self._carry)[-1])
        elif data.endswith(b"\n"):
            self._carry = 0
        else:
            self._carry = int(self._depths(raw[starts[last] :], 0)[-1])
        return False

    @staticmethod
    def _depths(raw, carry: int):
        """The bracket depth after each byte of one line (brackets inside strings counted too)."""
        import numpy as np

        step = ((raw == ord("[")) | (raw == ord("{"))).astype(np.int32)
        step -= ((raw == ord("]")) | (raw == ord("}")))
        return np.cumsum(step) + carry


class GuardedJson:
    """A binary file read by pyarrow's JSON reader through :class:`NestingGuard`: a read whose bytes
    nest too deep raises OSError (the fast read fails, and the exact reader names the line)."""

    def __init__(self, fh):
        self._fh = fh
        self._guard = NestingGuard()
        self.closed = False

    def read(self, n: int = -1) -> bytes:
        try:
            data = self._fh.read(n)
        except GZIP_ERRORS as exc:  # a damaged gzip stream: a fast read error too (the exact reader names it)
            raise OSError(str(exc)) from None
        if self._guard.too_deep(data):
            raise OSError(f"JSON nested more than {MAX_JSON_DEPTH} levels deep")  # a fast read error: read exactly
        return data

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def close(self) -> None:
        self.closed = True
        self._fh.close()


def _depth(text: str) -> int:
    """How deep ``text``'s arrays and objects nest (brackets inside strings not counted)."""
    depth = deepest = 0
    for ch in _JSON_STRING.sub("", text):
        if ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def _has_lone_surrogate(value) -> bool:
    if isinstance(value, str):
        return bool(_SURROGATE.search(value))
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_lone_surrogate(v) for v in value)
    return False


def loads_json(text: str, *, finite: bool = True):
    """``text`` parsed as JSON by golden's rules: duplicate keys, NaN, Infinity and overflowing floats,
    integers over :data:`MAX_INT_DIGITS` digits, nesting deeper than :data:`MAX_JSON_DEPTH` and a lone
    surrogate (``"\\ud800"``, no character) are refused (``_JsonRefused``, ``_NonFinite``), besides what is
    not JSON (``json.JSONDecodeError``). Without ``finite``, NaN, Infinity and 1e400 are read as floats,
    for a reader that checks each number itself (and names its field)."""
    if text.count("[") + text.count("{") > MAX_JSON_DEPTH and _depth(text) > MAX_JSON_DEPTH:
        raise _JsonRefused(f"JSON nested more than {MAX_JSON_DEPTH} levels deep")
    decoder = _DECODERS[finite, bool(_LONG_DIGITS.search(text))]
    try:
        value = decoder.decode(text)
    except RecursionError:  # brackets the depth count could not see (never expected): refused all the same
        raise _JsonRefused(f"JSON nested more than {MAX_JSON_DEPTH} levels deep") from None
    if "\\u" in text and _SURROGATE_ESCAPE.search(text) and _has_lone_surrogate(value):
        raise _JsonRefused("a lone surrogate escape (such as \\ud800) that is no character")
    return value


def loads_finite(text: str):
    """:func:`loads_json` refusing a non-finite number (``_NonFinite`` carries its text)."""
    return loads_json(text, finite=True)


def iter_jsonl_lines(
    lines, path: str | os.PathLike, *, expect: str = "a JSON object", finite: bool = False
) -> Iterator[tuple[int, dict]]:
    """Yield ``(line number, object)`` for each non-blank line of JSON-lines text, parsed by
    :func:`loads_json` (``finite``: a non-finite number anywhere in a line is refused, for readers that
    do not check each field; without it, each field's check names the field).

    A line that is not valid JSON, or not an object, raises :class:`InputError` naming ``path`` and
    the line; ``expect`` completes the message "expected ..." for the second case.
    """
    for lineno, line in enumerate(lines, 1):
        if isinstance(line, bytes):  # lines read as bytes (a fast path): decoded as open_text decodes
            line = decode_text(line, path) if lineno == 1 else _decode_block(line, str(path), lineno)
        if not line.strip():
            continue
        obj = parse_json_text(line, path, lineno, finite=finite)
        if not isinstance(obj, dict):
            raise InputError(path, lineno, f"expected {expect}")
        yield lineno, obj


def parse_json_text(text: str, path: str | os.PathLike, lineno: int | None = None, *, finite: bool = True):
    """:func:`loads_json` of ``text`` (one line ``lineno`` of a file, or a whole document when
    ``lineno`` is None), every refusal an :class:`InputError` naming ``path`` and the line."""

    def where(at: str | None, fallback: int | None = None) -> int | None:
        if lineno is not None:
            return lineno
        pos = text.find(at) if at else -1
        if pos >= 0 and at and at.startswith('"'):  # a duplicate key: its second place
            pos = text.find(at, pos + 1) if text.find(at, pos + 1) >= 0 else pos
        return text.count("\n", 0, pos) + 1 if pos >= 0 else fallback

    try:
        return loads_json(text, finite=finite)
    except json.JSONDecodeError as exc:
        line = lineno if lineno is not None else exc.lineno
        raise InputError(path, line, f"not valid JSON ({exc.msg})") from None
    except _NonFinite as exc:
        raise InputError(path, where(exc.raw), _non_finite(exc.raw)) from None
    except _JsonRefused as exc:
        raise InputError(path, where(exc.at), exc.message) from None


def identifier(obj: dict, key: str, path: str | os.PathLike, lineno: int | None) -> str:
    """``obj[key]`` as an identifier (qid, docid): a non-empty string, or an integer (written as in the
    file: ``7`` is ``"7"``); null, booleans, floats, objects, lists and blank strings are an
    :class:`InputError` naming ``path:lineno``."""
    return id_value(obj.get(key), key, path, lineno)


def id_value(value, key: str, path: str | os.PathLike, lineno: int | None) -> str:
    """:func:`identifier` of a value already taken from its record (a JSON object, a Parquet row)."""
    if isinstance(value, str):
        if value.strip():
            return value
        raise InputError(path, lineno, f"missing or empty {key!r}")
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if value is None:
        raise InputError(path, lineno, f"missing or empty {key!r}")
    kind = {bool: "a boolean", float: "a number that is not an integer", dict: "an object", list: "a list",
            bytes: "binary data"}.get(type(value), type(value).__name__)
    raise InputError(path, lineno, f"{key!r} is {kind} ({_shown(value)}); an id is a non-empty string or an integer")


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


#: A score in a text file: ASCII decimal or scientific notation (no ``_``, no other digits, no ``nan``/``inf``).
SCORE_TEXT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
#: An integer in a text file (a grade, a rank): ASCII digits with an optional sign.
INTEGER_TEXT = re.compile(r"[+-]?[0-9]+")
#: What a TREC line's fields are separated by: ASCII space and tab only (not NBSP, U+001F, U+2028...).
TREC_SPACE = re.compile(r"[ \t]+")


def trec_fields(line: str) -> list[str]:
    """The fields of a line of a white-space separated file (TREC runs and qrels, lists of ids): split on
    ASCII spaces and tabs only, as trec_eval splits; ``[]`` for a blank line."""
    stripped = line.strip(" \t\r\n")
    return TREC_SPACE.split(stripped) if stripped else []


def number_text(raw: str, what: str, path: str | os.PathLike, lineno: int | None) -> float:
    """A number written in a text field (a score): :data:`SCORE_TEXT`, else an :class:`InputError`."""
    if raw.lstrip("+-").lower() == "nan":
        raise InputError(path, lineno, f"{what} is NaN")
    if raw.lstrip("+-").lower() in ("inf", "infinity"):
        raise InputError(path, lineno, f"{what} {raw!r} is not a finite number")
    if not SCORE_TEXT.fullmatch(raw):
        raise InputError(path, lineno, f"{what} {_shown(raw)} is not a number (ASCII digits, a point, an exponent)")
    return float(raw)


def json_number(value, what: str, path: str | os.PathLike, lineno: int | None) -> float:
    """A JSON number (an integer or a float; not a boolean, not a string holding one)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        kind = ("a boolean" if isinstance(value, bool) else "a string" if isinstance(value, str)
                else type(value).__name__)
        raise InputError(path, lineno, f"{what} {_shown(value)} is {kind}, not a number")
    return float(value)


def iter_jsonl(
    path: str | os.PathLike, *, expect: str = "a JSON object", encoding: str = "utf-8"
) -> Iterator[tuple[int, dict]]:
    """:func:`iter_jsonl_lines` over a file (gzip allowed)."""
    with open_text(path, encoding=encoding) as fh:
        yield from iter_jsonl_lines(fh, path, expect=expect)


def load_json(path: str | os.PathLike):
    """A whole JSON file (gzip allowed), decoded as :func:`open_text` decodes (strict UTF-8, a byte-order
    mark dropped); InputError naming ``path:line`` for text that is not JSON."""
    with open_text(path) as fh:
        text = fh.read()
    return parse_json_text(text, path)


def json_line(obj, *, spaced: bool = False) -> str:
    """One JSON-lines line, without newline: key order as given, non-ASCII kept, so it is byte-for-byte stable.

    Compact (``,`` and ``:`` between items) unless ``spaced``: ``, `` and ``: ``, the layout of an exported
    version's ``queries.jsonl`` and ``qrels.jsonl``, whose bytes are recorded (the manifest's checksums and the
    frozen state hash) and so must not change.
    """
    return json.dumps(obj, ensure_ascii=False, separators=(", ", ": ") if spaced else (",", ":"))
