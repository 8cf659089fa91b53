"""One definition of the grades: the guidelines' "Grades" section is read by
curation.formats.guidelines, becomes the project's scale (buttons, guidelines page, exports), and a
grades file that says otherwise, or a section whose numbers are not the scale's, is refused."""

from __future__ import annotations

import json

import pytest

from curation.demo import GUIDELINES as DEMO_GUIDELINES
from curation.formats.fileio import InputError
from curation.formats.guidelines import find_grades_section, grades_in_guidelines, without_grades_section
from curation.store.engine import session
from curation.store.projects import create_project, current_guidelines, get_project, grades, set_guidelines
from tests.support.projects import write_inputs

SECTION = """# Guidelines

Read the query first.

### Grade scale

- **0 - Off topic**: nothing to do with it.
* **1: On topic.** Mentions the thing,
  but does not answer.
- **2) Answer** It answers the query.

## Tips

- **3: Not a grade.** outside the section
"""


def test_the_grades_section_is_read_with_its_continuation_lines():
    section = find_grades_section(SECTION, "g.md")
    assert section.grades == [
        {"grade": 0, "name": "Off topic", "description": "nothing to do with it."},
        {"grade": 1, "name": "On topic", "description": "Mentions the thing, but does not answer."},
        {"grade": 2, "name": "Answer", "description": "It answers the query."},
    ]
    rest = without_grades_section(SECTION)
    assert "Off topic" not in rest and "Read the query first." in rest and "## Tips" in rest
    assert grades_in_guidelines("# Guidelines\n\nNo scale here.\n") is None
    assert grades_in_guidelines("## Grades\n\nA table we cannot read.\n") is None
    with pytest.raises(InputError, match=r"g\.md:4: grade 1 is defined twice \(first on line 3\)"):
        find_grades_section("## Grades\n\n- **1: A.** a\n- **1: B.** b\n", "g.md")


def test_the_demo_guidelines_define_the_demo_scale():
    assert [(g["grade"], g["name"]) for g in grades_in_guidelines(DEMO_GUIDELINES)] == [
        (2, "Answers it"), (1, "Related, partly useful"), (0, "Not useful")]
    assert "Answers it" not in without_grades_section(DEMO_GUIDELINES)


def _project(s, folder, text: str, name: str = "p", **kwargs):
    paths = write_inputs(folder)
    guidelines = folder / "g.md"
    guidelines.write_text(text, encoding="utf-8")
    create_project(s, name, queries_path=paths["queries.jsonl"], pool_path=paths["pool.jsonl"],
                   corpus_paths=[paths["corpus.jsonl"]], guidelines_path=guidelines, **kwargs)
    return get_project(s, name)


def test_a_project_takes_its_grades_from_the_guidelines(sqlite_engine, tmp_path):
    with session(sqlite_engine) as s:
        project = _project(s, tmp_path / "p", SECTION)
        assert [(g.grade, g.name, g.description) for g in grades(project)] == [
            (0, "Off topic", "nothing to do with it."), (1, "On topic", "Mentions the thing, but does not answer."),
            (2, "Answer", "It answers the query.")]
        # a new guidelines version that renames a grade renames the buttons too
        set_guidelines(s, project, SECTION.replace("**2) Answer**", "**2) Full answer**"))
        assert grades(project)[2].name == "Full answer" and current_guidelines(s, project).version == 2
        with pytest.raises(ValueError, match="does not match the scale"):
            set_guidelines(s, project, "## Grades\n\n- **0: No.** x\n- **5: Yes.** y\n")
        assert current_guidelines(s, project).version == 2  # nothing recorded
        assert grades(project)[2].name == "Full answer"


def test_a_second_definition_or_other_numbers_are_refused(sqlite_engine, tmp_path):
    with session(sqlite_engine) as s:
        with pytest.raises(InputError, match=r"g\.md:5: the Grades section defines the grades differently from the "
                                             r"grades file \(0: Not relevant; 1: Useful; 2: Highly relevant\)"):
            _project(s, tmp_path / "a", SECTION, grades=[{"grade": 1, "name": "Useful"}, {"grade": 0}, {"grade": 2}])
        with pytest.raises(InputError, match=r"g\.md:5: the Grades section does not match the scale: "
                                             r"scale binary has grades \[0, 1\], got \[0, 1, 2\]"):
            _project(s, tmp_path / "b", SECTION, scale="binary")
        # the same definition twice is not a second definition
        same = [{"grade": 0, "name": "Off topic", "description": "nothing to do with it."},
                {"grade": 1, "name": "On topic", "description": "Mentions the thing, but does not answer."},
                {"grade": 2, "name": "Answer", "description": "It answers the query."}]
        project = _project(s, tmp_path / "c", SECTION, grades=same)
        assert json.loads(project.grades_json) == same
