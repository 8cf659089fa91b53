"""File helpers: transparent gzip, whole-or-nothing writes, and input errors that name file and line."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO


class InputError(ValueError):
    """Bad input in a file, reported as ``path:line: message`` so a person can go straight to it."""

    def __init__(self, path: str | os.PathLike, line: int | None, message: str):
        self.path = str(path)
        self.line = line
        self.message = message
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")


def is_gzip(path: str | os.PathLike) -> bool:
    """True when the file starts with gzip's magic bytes (whatever its name)."""
    with open(path, "rb") as fh:
        return fh.read(2) == b"\x1f\x8b"


def open_binary(path: str | os.PathLike) -> IO[bytes]:
    """Open a file for reading bytes, decompressing gzip transparently."""
    return gzip.open(path, "rb") if is_gzip(path) else open(path, "rb")


def open_text(path: str | os.PathLike, encoding: str = "utf-8") -> IO[str]:
    """Open a file for reading text, decompressing gzip transparently."""
    return io.TextIOWrapper(open_binary(path), encoding=encoding, newline="")


def base_suffix(path: str | os.PathLike) -> str:
    """The file's format suffix with any ``.gz`` removed: ``log.csv.gz`` -> ``.csv``."""
    name = Path(path).name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    return Path(name).suffix


def sha256_file(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file's bytes as stored (compressed files are hashed compressed)."""
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


def iter_jsonl_lines(lines, path: str | os.PathLike, *, expect: str = "a JSON object") -> Iterator[tuple[int, dict]]:
    """Yield ``(line number, object)`` for each non-blank line of JSON-lines text.

    A line that is not valid JSON, or not an object, raises :class:`InputError` naming ``path`` and
    the line; ``expect`` completes the message "expected ..." for the second case.
    """
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(path, lineno, f"not valid JSON ({exc.msg})") from None
        if not isinstance(obj, dict):
            raise InputError(path, lineno, f"expected {expect}")
        yield lineno, obj


def iter_jsonl(
    path: str | os.PathLike, *, expect: str = "a JSON object", encoding: str = "utf-8"
) -> Iterator[tuple[int, dict]]:
    """:func:`iter_jsonl_lines` over a file (gzip allowed)."""
    with open_text(path, encoding=encoding) as fh:
        yield from iter_jsonl_lines(fh, path, expect=expect)


def json_line(obj, *, spaced: bool = False) -> str:
    """One JSON-lines line, without newline: key order as given, non-ASCII kept, so it is byte-for-byte stable.

    Compact (``,`` and ``:`` between items) unless ``spaced``: ``, `` and ``: ``, the layout of an exported
    version's ``queries.jsonl`` and ``qrels.jsonl``, whose bytes are recorded (the manifest's checksums and the
    frozen state hash) and so must not change.
    """
    return json.dumps(obj, ensure_ascii=False, separators=(", ", ": ") if spaced else (",", ":"))
