"""Reading a stored version's data files, in one place: its qrels, its labels and its queries, each
by the one reader of its format (:mod:`curation.formats.qrels`, :mod:`curation.formats.queries`).

``files`` maps a file's name to its bytes (a version's files as stored, or any mapping of them);
:func:`qrels_file_triples` reads a qrels.txt being written, from its path.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from curation.formats.fileio import open_text
from curation.formats.qrels import parse_label_records, parse_qrels, qrels_dict
from curation.formats.queries import QueryRecord, parse_queries


def version_qrels(files: Mapping[str, bytes]) -> dict[str, dict[str, int]]:
    """``{qid: {docid: grade}}`` of the version's qrels.txt."""
    return qrels_dict(parse_qrels(files["qrels.txt"].decode("utf-8").splitlines(), "qrels.txt"))


def qrels_file_triples(path: Path) -> list[tuple[str, str, int]]:
    """``(qid, docid, grade)`` of each line of a version's qrels.txt written at ``path``, in file order
    (errors name the path)."""
    with open_text(path) as fh:
        return [(q.qid, q.docid, q.grade) for q in parse_qrels(fh, path)]


def version_labels(files: Mapping[str, bytes]) -> dict[tuple[str, str], dict]:
    """``{(qid, docid): qrels.jsonl record}`` of the version's labels."""
    return {(r["qid"], r["docid"]): r for r in parse_label_records(lines(files["qrels.jsonl"]), "qrels.jsonl")}


def version_queries(text: bytes) -> dict[str, QueryRecord]:
    """``{qid: QueryRecord}`` of a version's queries.jsonl (its bytes; a version may have none)."""
    return {q.qid: q for q in parse_queries(lines(text), "queries.jsonl")} if text.strip() else {}


def lines(data: bytes) -> list[str]:
    """A stored file's lines, split on "\\n" only: str.splitlines would also split inside a text
    holding U+2028 or U+0085."""
    return data.decode("utf-8").split("\n")
