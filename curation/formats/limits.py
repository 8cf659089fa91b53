"""Size limits on untrusted input, with documented defaults a user can raise.

Each limit is read from an environment variable when a file is read, so one mechanism serves every
command (and the web app) alike; a value over a limit is an :class:`InputError` naming ``file:line``,
the size, the limit and the variable that raises it.

=============================  ==============  ==============================================
variable                       default         what it bounds
=============================  ==============  ==============================================
``GOLDEN_MAX_QUERY_BYTES``     10 000          a query's text (queries.jsonl, query lists)
``GOLDEN_MAX_DOC_BYTES``       10 000 000      a document's text (corpus files)
``GOLDEN_MAX_GUIDELINES_BYTES``  1 000 000     the judging guidelines
``GOLDEN_MAX_LINE_BYTES``      1 000 000       one line of a TREC qrels file
=============================  ==============  ==============================================
"""

from __future__ import annotations

import os

from curation.formats.fileio import InputError

DEFAULTS = {
    "GOLDEN_MAX_QUERY_BYTES": 10_000,
    "GOLDEN_MAX_DOC_BYTES": 10_000_000,
    "GOLDEN_MAX_GUIDELINES_BYTES": 1_000_000,
    "GOLDEN_MAX_LINE_BYTES": 1_000_000,
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


def check_size(text: str | bytes, name: str, path, lineno: int | None, what: str) -> None:
    """Refuse ``text`` (``what`` names it: "query q1's text") when its UTF-8 size is over the limit ``name``."""
    cap = limit(name)
    if len(text) * 4 <= cap:  # a character is at most 4 bytes in UTF-8: no need to encode
        return
    size = len(text) if isinstance(text, bytes) else len(text.encode("utf-8", "surrogatepass"))
    if size > cap:
        raise InputError(path, lineno, f"{what} is {size} bytes, over the limit of {cap} bytes "
                                       f"(raise it with {name}=N)")
