"""Query and text normalisation shared by sampling, pooling and the leak check.

One function decides when two strings are "the same query", so `golden sample` and
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
_INVISIBLE = re.compile("[\u00ad\u200b\u200c\u200d\u2060\ufeff]")
_SPACE = re.compile(r"\s+")


def normalize_text(text: str) -> str:
    """Return ``text`` in golden's canonical form.

    Unicode NFKC, then case folding, curly quotes made straight, zero-width characters removed and
    runs of white space collapsed to one space, trimmed at both ends.

    >>> normalize_text("  What\u2019s   the\u200b TIME\\tzone? ")
    "what's the timezone?"
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be str, not {type(text).__name__}")
    if text.isascii():
        # The same rule in one cheap pass: NFKC leaves ASCII alone, its case folding is lower(), the
        # quotes and invisible characters above are not ASCII, and str.split() splits on exactly
        # the ASCII characters \s matches (\t \n \v \f \r, \x1c-\x1f and space).
        return " ".join(text.lower().split())
    text = unicodedata.normalize("NFKC", text)
    text = text.casefold().translate(_QUOTE_MAP)
    text = _INVISIBLE.sub("", text)
    return _SPACE.sub(" ", text).strip()

