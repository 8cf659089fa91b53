"""Query and text normalisation shared by sampling, pooling and the leak check.

One function decides when two strings are "the same query", so `golden sample queries` and
`golden leakcheck` can never disagree about it.
"""

from __future__ import annotations

import re
import unicodedata

# Curly quotes and similar marks that people and editors put in interchangeably with ASCII ones.
_QUOTE_MAP = str.maketrans(
    {
        "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'",
        "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"',
        "\u00ab": '"', "\u00bb": '"',
    }
)
# Zero-width and invisible format characters (soft hyphen, ZWSP, ZWNJ, ZWJ, word joiner, BOM).
_INVISIBLE = "\u00ad\u200b\u200c\u200d\u2060\ufeff"
# The quotes made straight and the invisible characters dropped, in one str.translate.
_QUOTES_AND_INVISIBLE = {**_QUOTE_MAP, **{ord(c): None for c in _INVISIBLE}}
_QUOTE_OR_INVISIBLE = re.compile("[" + "".join(chr(c) for c in _QUOTES_AND_INVISIBLE) + "]")


def normalize_text(text: str) -> str:
    """Return ``text`` in golden's canonical form.

    Unicode NFKC, then case folding, curly quotes made straight, zero-width characters removed and
    runs of white space collapsed to one space, trimmed at both ends.

    >>> normalize_text("  What\u2019s   the\u200b TIME\\tzone? ")
    "what's the timezone?"
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be str, not {type(text).__name__}")
    # str.split() cuts at exactly the characters \s matches (both ask Py_UNICODE_ISSPACE), so
    # joining its pieces with one space is collapsing the runs and trimming the ends.
    if text.isascii():
        # NFKC leaves ASCII alone, its case folding is lower(), and the quotes and invisible
        # characters above are not ASCII.
        return " ".join(text.lower().split())
    folded = unicodedata.normalize("NFKC", text).casefold()
    if _QUOTE_OR_INVISIBLE.search(folded):  # most text has none: str.translate looks up every character
        folded = folded.translate(_QUOTES_AND_INVISIBLE)
    return " ".join(folded.split())

