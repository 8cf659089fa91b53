"""curation.judge.highlight: which query words are marked, and the pieces of a text."""

from __future__ import annotations

from curation.formats.normalize import normalize_text
from curation.judge.highlight import STOP_WORDS, mark, query_terms


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
