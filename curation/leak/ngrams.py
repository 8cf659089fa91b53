"""N-grams as the leak check defines them (the reference definition every faster path must equal):
the spec (``word:3``, ``char:5``), the n-gram set of a normalised text, and the pattern of a query
found verbatim."""

from __future__ import annotations

import re
from dataclasses import dataclass

from curation.formats.normalize import normalize_text

_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class NgramSpec:
    """Which n-grams to compare: ``unit`` is ``"word"`` or ``"char"``, ``n`` their length."""

    unit: str
    n: int

    def __str__(self) -> str:
        return f"{self.unit}:{self.n}"


def parse_ngram(spec: str | NgramSpec) -> NgramSpec:
    """Parse ``"word:3"`` or ``"char:5"`` (a bare number means words)."""
    if isinstance(spec, NgramSpec):
        return spec
    text = str(spec).strip().lower()
    unit, _, n = text.rpartition(":") if ":" in text else ("word", ":", text)
    if unit not in ("word", "char") or not n.isdigit() or int(n) < 1:
        raise ValueError(f"ngram: {spec!r} is not an n-gram spec; use word:N or char:N, e.g. word:3 or char:5")
    return NgramSpec(unit, int(n))


def ngram_set(normalized: str, spec: NgramSpec) -> set:
    """The set of n-grams of an already normalised text: tuples of words, or substrings."""
    n = spec.n
    if spec.unit == "word":
        toks = _WORD.findall(normalized)
        return {tuple(toks[i : i + n]) for i in range(len(toks) - n + 1)}
    return {normalized[i : i + n] for i in range(len(normalized) - n + 1)}


# ASCII text's words in one pass: upper case made lower, every other non-word character a space.
_ASCII_WORDS = str.maketrans(
    {chr(c): (chr(c).lower() if chr(c).isalnum() or chr(c) == "_" else " ") for c in range(128)}
)


def words_of(text: str) -> list[str]:
    """The words (``\\w+`` runs) of ``normalize_text(text)``, as :func:`ngram_set` cuts them.

    ASCII text takes one ``str.translate`` and ``str.split`` (normalising ASCII only lowers it and
    collapses spaces, neither of which moves a word); other text the full rule.
    """
    if text.isascii():
        return text.translate(_ASCII_WORDS).split()
    return _WORD.findall(normalize_text(text))


def words_of_normalized(normalized: str) -> list[str]:
    """The words of an already normalised text (as :func:`ngram_set` cuts them)."""
    return _WORD.findall(normalized)


def word_ngrams(words: list[str], n: int) -> set:
    """The set of word n-grams (tuples) of a list of words; equal to :func:`ngram_set`'s."""
    if n == 1:
        return {(w,) for w in words}
    return set(zip(*(words[i:] for i in range(n))))


def verbatim_pattern(normalized_query: str) -> re.Pattern:
    """Regex for the query inside a chunk, not glued to a longer word on either side."""
    head = r"(?<!\w)" if _WORD.match(normalized_query[:1]) else ""
    tail = r"(?!\w)" if _WORD.match(normalized_query[-1:]) else ""
    return re.compile(head + re.escape(normalized_query) + tail)


def gram_text(gram, spec: NgramSpec) -> str:
    return " ".join(gram) if spec.unit == "word" else gram
