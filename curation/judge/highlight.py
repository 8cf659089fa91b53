"""The query's words marked in the document a judge reads: which words count, and where
they are in a text, as plain (text, is_match) pieces. The pieces are strings of the untrusted
document; the page prints each one through Jinja's autoescaping and wraps the matches in
``<mark>``, so highlighting never turns document text into markup.

A word of the query counts after golden's normalisation (:func:`curation.formats.normalize.normalize_text`:
NFKC, case folding, straight quotes), unless it is in :data:`STOP_WORDS` or a single character. A
word of the document matches a query word when the two are equal after the same normalisation and
after a light plural rule (a final "'s", or a final "s" of a word of four letters or more but not
"ss", dropped), so "passwords" marks "password" and back.
"""

from __future__ import annotations

import re
from functools import lru_cache

from curation.formats.normalize import normalize_text

# A short English stop-word list: words too common to be worth marking in a passage.
STOP_WORDS = frozenset("""
a about after all also an and any are as at be been but by can cannot could did do does doing for
from had has have how i if in into is it its me my no not of off on or our out over so than that
the their them then there these they this those to too up us was we were what when where which who
whom why will with would you your
""".split())

_WORD = re.compile(r"\w+(?:['\u2019]\w+)*")


def _stem(word: str) -> str:
    if word.endswith("'s"):  # a possessive: "user's" marks "user" and "users"
        return word[:-2]
    return word[:-1] if len(word) >= 4 and word.endswith("s") and not word.endswith("ss") else word


@lru_cache(maxsize=4096)
def _key(word: str) -> str:
    return _stem(normalize_text(word))


@lru_cache(maxsize=1024)
def query_terms(query: str) -> frozenset[str]:
    """The words of ``query`` worth marking, in their matching form (normalised, stemmed)."""
    words = _WORD.findall(normalize_text(query or ""))
    return frozenset(_stem(w) for w in words if w not in STOP_WORDS and len(w) > 1)


@lru_cache(maxsize=1024)
def _ascii_candidates(terms: frozenset[str]) -> re.Pattern | None:
    """One compiled pattern per set of terms that finds, in ASCII text, every word (a whole match
    of ``_WORD``) that may match one of the terms: a term, or a term followed by "s" or "'s" (the
    only words the plural rule maps to it), in any case. It may find more (``"bus"`` finds
    ``"buss"``): :func:`mark` keeps a found word only when its key is a term, as for any word.
    None when no term is ASCII (no ASCII word can match one)."""
    words = sorted((t for t in terms if t.isascii()), key=len, reverse=True)
    if not words:
        return None
    # A whole word: not preceded by a word character (nor by one and an apostrophe, which would make
    # it the tail of a word like "o'brien"), and not followed by one (nor by an apostrophe and one).
    alternatives = "|".join(map(re.escape, words))
    return re.compile(rf"(?<!\w)(?<!\w')(?:{alternatives})(?:'?s)?(?!\w)(?!'\w)", re.ASCII | re.IGNORECASE)


def mark(text: str | None, terms: frozenset[str]) -> list[tuple[str, bool]]:
    """``text`` cut into consecutive pieces ``(piece, matches)``; joined, the pieces are ``text``.
    ASCII text (most documents) is searched for the terms' possible words with one compiled pattern
    (:func:`_ascii_candidates`) instead of looking at every word; other text word by word. Both
    mark exactly the words whose key is a term."""
    if not text:
        return []
    if not terms:
        return [(text, False)]
    if text.isascii():
        pattern = _ascii_candidates(terms)
        words = pattern.finditer(text) if pattern is not None else ()
    else:
        words = _WORD.finditer(text)
    out: list[tuple[str, bool]] = []
    last = 0
    for m in words:
        if _key(m.group()) in terms:
            if m.start() > last:
                out.append((text[last:m.start()], False))
            out.append((m.group(), True))
            last = m.end()
    if last < len(text):
        out.append((text[last:], False))
    return out
