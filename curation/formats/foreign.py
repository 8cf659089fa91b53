"""What the readers of other tools' judgment files give: one label a row, with where it was read.

Quepid's CSV (:mod:`curation.formats.quepid`), RRE's ratings (:mod:`curation.formats.rre`) and
learning-to-rank judgment lists (:mod:`curation.formats.ltr`) name a query in their own way: by its
text, by an id, or both. A :class:`ForeignLabel` keeps what the file says (``qid`` when it gives an
id, ``texts`` when it gives text) and the line it came from, so that the import
(:mod:`curation.judge.importing`) can match it to a project's query and report a row it cannot
match with ``file:line``.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ForeignLabel:
    """One (query, document, grade) row of another tool's judgment file."""

    line: int  # where the row is in the file (1-based)
    docid: str
    grade: int
    qid: str | None = None  # the query's id, when the file gives one
    texts: tuple[str, ...] = ()  # the query's text(s), when the file gives them
    rater: str | None = None  # who made the label, when the file says

    def query(self) -> str:
        """The query as the file names it, for messages."""
        parts = ([f"qid {self.qid}"] if self.qid is not None else []) + ([repr(self.texts[0])] if self.texts else [])
        return " ".join(parts) or "(no query)"


@dataclass
class ForeignFile:
    """A judgment file read whole: its labels in file order and what it says about itself."""

    path: str
    format: str  # "quepid", "rre" or "ltr"
    labels: list[ForeignLabel] = field(default_factory=list)
    raters: list[str] = field(default_factory=list)  # the raters named in the file, in order
    unrated: int = 0  # rows that name a query (and a document) but give no rating
    meta: dict = field(default_factory=dict)  # what the file records about itself (relevance level...)
