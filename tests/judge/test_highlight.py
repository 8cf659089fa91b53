"""curation.judge.highlight: which query words are marked, and the pieces of a text."""

from __future__ import annotations

from curation.formats.normalize import normalize_text
from curation.judge.highlight import _WORD, STOP_WORDS, _stem, mark, query_terms


def test_query_terms_follow_golden_normalisation_minus_stop_words():
    assert query_terms("How do I reset my PASSWORDS?") == {"reset", "password"}
    # NFKC and case folding as normalize_text does them: full-width letters, curly apostrophes
    assert query_terms("\uff32\uff45\uff53\uff45\uff54 the user\u2019s 2FA") == {"reset", "user", "2fa"}
    assert query_terms("a I of to") == frozenset() and "the" in STOP_WORDS
    assert query_terms("x 5 ok") == {"ok"}  # single characters are not marked


def test_pieces_join_back_to_the_text_and_mark_whole_words_only():
    text = "Passwords: RESET yours (resetting is not reset\u2019s). <b>reset</b>"
    pieces = mark(text, query_terms("reset password"))
    assert "".join(p for p, _ in pieces) == text
    assert [p for p, hit in pieces if hit] == ["Passwords", "RESET", "reset\u2019s", "reset"]
    # every marked piece equals a query term after the same normalisation (and the plural rule)
    terms = query_terms("reset password")
    assert all(normalize_text(p).removesuffix("\u2019s").removesuffix("'s").rstrip("s") in terms
               for p, hit in pieces if hit)
    assert mark("", terms) == [] and mark("no match here", terms) == [("no match here", False)]
    assert mark("anything", frozenset()) == [("anything", False)]


def _word_by_word(text: str, terms: frozenset[str]) -> list[str]:
    """The marked words by the rule itself: every word whose normalised, stemmed form is a term."""
    return [w for w in _WORD.findall(text) if _stem(normalize_text(w)) in terms]


def test_ascii_text_is_marked_exactly_as_word_by_word():
    # the compiled pattern of the terms' possible words must find every word the rule marks, and
    # keep only those: a word's tail after an apostrophe, "buss" for "bus", any case, "'s" and "s"
    text = ("O'Brien's BUS, the buss and buses; o'bus bus'y don't DON'S dons don_s "
            "passwords PASSWORD's password'S xpassword passwordx 2fa 2FAs _reset reset_ reset's'")
    for query in ("bus", "O'Brien", "don", "password", "2FA reset", "buses bus", "brien", "s'"):
        terms = query_terms(query)
        pieces = mark(text, terms)
        assert "".join(p for p, _ in pieces) == text
        assert [p for p, hit in pieces if hit] == _word_by_word(text, terms), query
    # non-ASCII text takes the word-by-word path: full-width and curly forms still match
    assert [p for p, hit in mark("\uff22\uff35\uff33 and bus\u2019s", query_terms("bus")) if hit] == [
        "\uff22\uff35\uff33", "bus\u2019s"]
    assert mark("no ascii term matches here", query_terms("caf\u00e9")) == [("no ascii term matches here", False)]
