"""The error every reader raises on bad input: ``path:line: message``.

Its own module, below :mod:`curation.formats.fileio` and :mod:`curation.formats.limits`, so that
both can raise it without importing each other.
"""

from __future__ import annotations

import os


class InputError(ValueError):
    """Bad input in a file, reported as ``path:line: message`` so a person can go straight to it."""

    def __init__(self, path: str | os.PathLike, line: int | None, message: str):
        self.path = str(path)
        self.line = line
        self.message = message
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")

    def __reduce__(self):
        # Rebuilt from its three parts, so the error crosses a process boundary (a scan worker's
        # error reaches the command as it was raised).
        return type(self), (self.path, self.line, self.message)
