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


def test_grade_buttons_are_kept_per_scale_escaped_and_read_afresh_while_templates_reload():
    from flask import Flask
    from markupsafe import Markup

    from curation.store.scale import Grade
    from judging_app import asset_dir

    env = Flask(__name__, template_folder=str(asset_dir("templates"))).jinja_env
    grades = (Grade(0, "No <b>use</b>", 'none & "nothing"'), Grade(1, "Some", "part"), Grade(2, "All", "whole"))
    judge._kept_grade_buttons.cache_clear()
    env.auto_reload = False
    first = judge.grade_buttons(env, "answer", grades, 1)
    assert judge.grade_buttons(env, "answer", grades, 1) is first  # kept: rendered once
    assert isinstance(first, Markup) and "<b>" not in first and "No &lt;b&gt;use&lt;/b&gt;" in first
    assert "none &amp; &#34;nothing&#34;" in first
    assert first.count(" current") == 1 and 'value="1" data-key="1"\n                  class="grade current"' in first
    assert " current" not in judge.grade_buttons(env, "answer", grades, None)
    unsure = judge.grade_buttons(env, "unsure", grades)
    assert unsure.count("data-unsure-key=") == 3 and "No &lt;b&gt;use&lt;/b&gt;" in unsure
    other = (Grade(0, "No", "n"), Grade(1, "Yes", "y"))  # another scale gets its own buttons
    assert judge.grade_buttons(env, "answer", other, None).count("<button") == 2
    assert judge._kept_grade_buttons.cache_info().currsize == 4
    env.auto_reload = True  # while templates reload, nothing is served from what was kept
    assert judge.grade_buttons(env, "answer", grades, 1) == first
    assert judge._kept_grade_buttons.cache_info().currsize == 4
    judge._kept_grade_buttons.cache_clear()
