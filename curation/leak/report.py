"""The leak check's results: a match, one query's result, the whole report, and the report file
(one JSON object a line per query) that ``golden leakcheck`` writes and the findings are read from."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from curation.formats.fileio import InputError, iter_jsonl

MODES = ("exact", "jaccard", "containment")
CONTEXT = 200  # characters of the chunk kept on either side of a match


def context(norm: str, start: int, end: int, width: int = CONTEXT) -> tuple[str, str]:
    """Up to ``width`` characters of ``norm`` before ``start`` and after ``end``, cut at a space
    when there is one (no half words), with "…" where the chunk goes on."""
    a = max(0, start - width)
    before = norm[a:start]
    if a > 0:
        cut = before.find(" ")
        before = "…" + (before[cut + 1:] if 0 <= cut < len(before) - 1 else before)
    b = min(len(norm), end + width)
    after = norm[end:b]
    if b < len(norm):
        cut = after.rfind(" ")
        after = (after[:cut] if cut > 0 else after) + "…"
    return before, after


def whole_words(before: str | None, span: str | None, after: str | None) -> tuple[str | None, str | None, str | None]:
    """``(before, span, after)`` with the span widened to whole words (an aligned span can
    start or end inside a word, "a**dmins can create**"): the letters and digits of a word cut by
    the span's start or end move from the context into the span. Nothing changes without a span."""
    if not span:
        return before, span, after
    before, after = before or "", after or ""
    head = len(before)
    while head > 0 and before[head - 1].isalnum() and span[0].isalnum():
        head -= 1
    tail = 0
    while tail < len(after) and after[tail].isalnum() and span[-1].isalnum():
        tail += 1
    return before[:head], before[head:] + span + after[:tail], after[tail:]


STATUSES = ("leak", "too_short", "clean")


@dataclass(frozen=True)
class Match:
    """One chunk that matches one query under one mode, with the exact score.

    ``span`` is the matched stretch of the *normalised* chunk (``span_start:span_end``), from the
    verbatim position for ``exact`` and from rapidfuzz's ``partial_ratio_alignment`` otherwise;
    ``before`` and ``after`` are up to :data:`CONTEXT` characters of the normalised chunk on either
    side (cut at a word), so a lead sees the match in context (a how-to that quotes the question
    reads differently from a page that is the question).
    """

    qid: str
    chunk_id: str
    mode: str
    score: float
    span: str
    span_start: int
    span_end: int
    source: str
    before: str = ""
    after: str = ""

    def as_dict(self) -> dict:
        return {
            "chunk_id": self.chunk_id,
            "mode": self.mode,
            "score": round(self.score, 6),
            "span": self.span,
            "span_start": self.span_start,
            "span_end": self.span_end,
            "source": self.source,
            "before": self.before,
            "after": self.after,
        }


@dataclass
class QueryResult:
    """What the leak check found for one query."""

    qid: str
    text: str
    status: str  # "leak", "too_short" or "clean"
    ngrams: int  # size of the n-gram set compared (after any boilerplate discount)
    boilerplate: list[str] = field(default_factory=list)
    matches: list[Match] = field(default_factory=list)  # best first, at most max_matches
    n_matches: int = 0  # all matches, also those beyond max_matches
    modes: dict[str, int] = field(default_factory=dict)  # matches per mode
    reason: str | None = None

    def as_dict(self) -> dict:
        return {
            "qid": self.qid,
            "text": self.text,
            "status": self.status,
            "reason": self.reason,
            "ngrams": self.ngrams,
            "boilerplate_ngrams": self.boilerplate,
            "n_matches": self.n_matches,
            "matches_by_mode": self.modes,
            "matches": [m.as_dict() for m in self.matches],
        }


@dataclass
class LeakReport:
    """The whole result: one :class:`QueryResult` per query, in input order, and the scan's figures."""

    queries: list[QueryResult]
    modes: tuple[str, ...]
    threshold: float
    ngram: str
    chunks: int
    seconds: float
    boilerplate: list[tuple[str, int]]  # (n-gram, chunks holding it), most common first
    boilerplate_share: float
    discounted: bool
    tasks: int = 0  # pieces of the corpus scanned
    processes: int = 0  # distinct processes that scanned them
    #: Whether some chunk id occurs more than once in the corpus (found by the scan itself; the
    #: command then reads the corpus for the repeats' lines and policy, :func:`check_repeats`).
    ids_repeat: bool = False

    @property
    def leaked(self) -> list[QueryResult]:
        return [q for q in self.queries if q.status == "leak"]

    def counts(self) -> dict[str, int]:
        out = {s: 0 for s in STATUSES}
        for q in self.queries:
            out[q.status] += 1
        return out

    def summary_rows(self) -> list[tuple[str, int, str]]:
        """(what, number, share of queries) rows for the summary table."""
        total = len(self.queries) or 1
        rows = []
        for status in STATUSES:
            n = sum(q.status == status for q in self.queries)
            label = {"too_short": "too short to judge"}.get(status, status)
            rows.append((label, n, f"{n / total:.1%}"))
        for mode in self.modes:
            n = sum(1 for q in self.queries if q.modes.get(mode))
            rows.append((f"  flagged by {mode}", n, f"{n / total:.1%}"))
        return rows


def write_report(report: LeakReport, path: str | os.PathLike) -> None:
    """Write one JSON object a line per query (all statuses), whole or not at all."""
    from curation.formats.fileio import atomic_write

    with atomic_write(path) as fh:
        for q in report.queries:
            fh.write(json.dumps(q.as_dict(), ensure_ascii=False) + "\n")


def read_report(path: str | os.PathLike) -> list[dict]:
    """Read a file written by :func:`write_report` back as dicts."""
    path = str(path)
    out = []
    expect = "a leak-check record with qid and status"
    for lineno, obj in iter_jsonl(path, expect=expect):
        if "qid" not in obj or "status" not in obj:
            raise InputError(path, lineno, f"expected {expect}")
        out.append(obj)
    return out
