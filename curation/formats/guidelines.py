"""The guidelines file (Markdown): the one reader of the written definition of relevance."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from curation.formats.fileio import InputError, open_text
from curation.formats.limits import check_size

LIMIT = "GOLDEN_MAX_GUIDELINES_BYTES"


def read_guidelines(path: str | os.PathLike) -> str:
    """The text of the guidelines file ``path``: strict UTF-8 (a byte-order mark dropped), line ends made
    ``\\n`` (a CRLF file is the same text as the clean one); InputError naming the file when it is empty
    and when it passes the size limit ``GOLDEN_MAX_GUIDELINES_BYTES``."""
    with open_text(path) as fh:
        text = "".join(line.rstrip("\r\n") + "\n" if line.endswith(("\r", "\n")) else line for line in fh)
    check_size(text, LIMIT, path, None, "the guidelines text")
    if not text.strip():
        raise InputError(path, None, "the guidelines are empty; write the definition of relevance")
    return text


# A "Grades" section: a heading whose text starts with "grade" (## Grades, ### Grade scale, ...),
# then one list item per grade, the number and name in bold: "- **2: Answers it.** What it means",
# "- **1 - Related**: what it means". Lines indented under an item continue its description.
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_ITEM = re.compile(r"^\s{0,3}[-*+]\s+\*\*\s*(\d+)\s*[:.)\u2013\u2014-]\s*(.+?)\s*\*\*\s*[:.\u2013\u2014-]?\s*(.*)$")


@dataclass(frozen=True)
class GradesSection:
    """Where the guidelines define the scale: the grades and the section's lines (0-based, end excluded)."""

    grades: list[dict]  # {"grade", "name", "description"}, in the order written
    start: int
    end: int


def find_grades_section(text: str, path: str | os.PathLike | None = None) -> GradesSection | None:
    """The grade definitions written in the guidelines, or None when they have no "Grades" section
    (or one without a ``- **N: Name.** description`` item). The one place the guidelines' scale is
    read: ``golden project create`` takes the project's grade names and descriptions from it (unless a
    grades file gives them), so the buttons, the guidelines page and the exports show one definition.
    InputError naming ``path:line`` when a grade number is written twice."""
    lines = text.split("\n")
    start = None
    for i, line in enumerate(lines):
        m = _HEADING.match(line)
        if m and m.group(2).strip().lower().startswith("grade"):
            start, level = i, len(m.group(1))
            break
    if start is None:
        return None
    end = len(lines)
    grades: list[dict] = []
    seen: dict[int, int] = {}
    current = None
    for i in range(start + 1, len(lines)):
        line = lines[i]
        m = _HEADING.match(line)
        if m and len(m.group(1)) <= level:
            end = i
            break
        item = _ITEM.match(line)
        if item:
            number = int(item.group(1))
            if number in seen:
                raise InputError(path or "guidelines", i + 1,
                                 f"grade {number} is defined twice (first on line {seen[number]})")
            seen[number] = i + 1
            name = item.group(2).rstrip(" .:")
            current = {"grade": number, "name": name, "description": item.group(3).strip()}
            grades.append(current)
        elif current is not None and line.startswith((" ", "\t")) and line.strip():
            current["description"] = (current["description"] + " " + line.strip()).strip()
        elif line.strip():
            current = None
    if not grades:
        return None
    return GradesSection(grades, start, end)


def grades_in_guidelines(text: str, path: str | os.PathLike | None = None) -> list[dict] | None:
    """The grades the guidelines define (:func:`find_grades_section`), or None."""
    section = find_grades_section(text, path)
    return section.grades if section else None


def without_grades_section(text: str) -> str:
    """The guidelines without their "Grades" section, for pages that show the project's scale as a
    table in its place (so a grade is never shown with two definitions)."""
    section = find_grades_section(text)
    if section is None:
        return text
    lines = text.split("\n")
    return "\n".join(lines[:section.start] + lines[section.end:])
