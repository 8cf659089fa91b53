"""Each domain rule is written in one module and asked everywhere else: the project's grade scale
(``grades_json``), the pool's provenance (``systems_json``) and who may do what (the roles).

The search runs over the source of ``curation/``, ``judging_app/`` and ``templates/``; the table
definitions (``curation/store/models.py``) and the migrations are the only other places allowed
to name the columns.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TABLES = "curation/store/models.py"

RULES = {
    "grades_json": (re.compile(r"grades_json"), {"curation/store/scale.py", TABLES}),
    "systems_json": (re.compile(r"systems_json"), {"curation/store/provenance.py", TABLES}),
    # a role named in a check: ("lead", "admin"), role == "admin", role in ('lead', ...), ...
    "role literals": (
        re.compile(r"""["']lead["']\s*,\s*["']admin["']|role\s*(?:==|!=|in|not in)\s*[("']"""),
        {"curation/store/roles.py"},
    ),
    "LEAD_ROLES defined": (re.compile(r"^\s*LEAD_ROLES\s*=", re.M), {"curation/store/roles.py"}),
    "is_lead defined": (re.compile(r"def is_lead\b"), {"curation/store/roles.py"}),
    "format_duration defined": (re.compile(r"def format_duration\b"), {"curation/judge/progress.py"}),
    # the web layer's cache of verified signed tokens, and the reading of a token's signing time
    "signed-token cache": (re.compile(r"MAX_REMEMBERED|bytes_to_int"), {"judging_app/tokens.py"}),
    # the web layer's numbers: whole numbers and decimals each by one parser (judging_app/errors.py)
    "web number parsing": (re.compile(r"type=(int|float)\b|\.isdigit\(\)|def (whole_number|finite_float)\b"),
                           {"judging_app/errors.py"}),
    # whether a grade is on a project's scale: one check (curation.store.scale.check_grade), one message
    "grade check": (
        re.compile(r"def check_grade\b|is not (?:on (?:this|the) (?:project's )?scale|a grade of the scale)"),
        {"curation/store/scale.py"},
    ),
    # a stored version's qrels and queries, read in one module
    "exported version read": (re.compile(r"parse_qrels\(|parse_queries\("), {"curation/export/reading.py"}),
}
# where a rule is looked for (default: everywhere)
SCOPES = {
    "web number parsing": ("judging_app/",),
    "exported version read": ("curation/export/", "judging_app/"),
    # where labels are given: judging, adjudication and seeds, and the web app (the export's
    # relevance level and a model's parsed answer are checked by rules of their own)
    "grade check": ("curation/store/", "curation/judge/", "curation/agree/", "curation/pool/", "judging_app/"),
}


def sources():
    for folder in ("curation", "judging_app", "templates"):
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix in (".py", ".html") and path.is_file():
                yield path.relative_to(ROOT).as_posix(), path.read_text(encoding="utf-8")


@pytest.mark.parametrize("rule", sorted(RULES))
def test_a_rule_lives_in_its_home(rule):
    pattern, homes = RULES[rule]
    scope = SCOPES.get(rule, ("",))
    found = sorted({name for name, text in sources() if name.startswith(scope) and pattern.search(text)})
    assert [name for name in found if name not in homes] == []
    assert set(found) & homes, f"{rule}: the pattern no longer finds its home; fix the pattern"


def test_the_role_pattern_finds_the_old_spellings():
    pattern = RULES["role literals"][0]
    for text in ('if lead.role not in ("lead", "admin"):', "{% if g.user.role in ('lead', 'admin') %}",
                 'if g.user.role != "admin":', "actor.role == 'admin'"):
        assert pattern.search(text), text
    assert not pattern.search("if not is_lead(lead):")


def test_the_grade_check_pattern_finds_the_old_spellings():
    pattern = RULES["grade check"][0]
    for text in ('f"grade {grade} is not on this project\'s scale {scale}"',
                 'f"grade: {grade} is not on the project\'s scale {scale}"',
                 'f"grade {grade} is not on the project\'s scale {grades}"',
                 'f"{parameter}: {shown} is not a grade of the scale {scale} "'):
        assert pattern.search(text), text
    assert not pattern.search("grade = check_grade(grade, allowed, scale)")
