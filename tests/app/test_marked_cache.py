"""The judge page's marked-HTML cache (``judging_app.judge._marked``): short texts are kept and
served again, identical; a text longer than MARKED_CACHE_TEXT is marked every time and never kept,
so long documents cannot swell a worker's memory; markup in a text stays escaped either way."""

from __future__ import annotations

from curation.judge import highlight
from judging_app import judge


def test_short_texts_are_kept_and_long_ones_are_not():
    terms = frozenset({"river"})
    short = "The <b>river</b> bank & the river mouth"
    long = ("a river runs <script>x()</script> " * 2000)[: judge.MARKED_CACHE_TEXT + 100]
    judge._marked_kept.cache_clear()
    first = judge._marked(short, terms)
    again = judge._marked(short, terms)
    info = judge._marked_kept.cache_info()
    assert (info.hits, info.currsize) == (1, 1)
    assert first == again == judge.marked(highlight.mark(short, terms))
    assert "<b>" not in first and "&lt;b&gt;" in first and "<mark" in first
    got = judge._marked(long, terms)
    assert judge._marked_kept.cache_info().currsize == 1  # the long text was not kept
    assert got == judge.marked(highlight.mark(long, terms))
    assert "<script>" not in got and "&lt;script&gt;" in got
