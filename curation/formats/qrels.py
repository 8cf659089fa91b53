"""Reading and writing TREC qrels (``qid iter docid grade``).

Identifiers stay strings, grades are integers, as trec_eval reads them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from curation.formats.fileio import InputError, open_text


@dataclass(frozen=True)
class QrelLine:
    qid: str
    iteration: str
    docid: str
    grade: int


def iter_qrels(path: str | os.PathLike):
    """Yield :class:`QrelLine` from a TREC qrels file (gzip allowed); blank and ``#`` lines skipped."""
    path = str(path)
    with open_text(path) as fh:
        for lineno, line in enumerate(fh, 1):
            stripped = line.strip()
            if not stripped or stripped.startswith("#"):
                continue
            parts = stripped.split()
            if len(parts) != 4:
                raise InputError(path, lineno, f"has {len(parts)} fields, expected 4 (qid iter docid grade)")
            qid, iteration, docid, raw = parts
            try:
                grade = int(raw)
            except ValueError:
                try:
                    as_float = float(raw)
                except ValueError:
                    raise InputError(path, lineno, f"grade {raw!r} is not an integer") from None
                if not as_float.is_integer():
                    raise InputError(path, lineno, f"grade {raw!r} is not an integer") from None
                grade = int(as_float)
            yield QrelLine(qid, iteration, docid, grade)


def read_qrels(path: str | os.PathLike) -> dict[str, dict[str, int]]:
    """Read a qrels file into ``{qid: {docid: grade}}``.

    When a pair appears more than once (a multi-assessor file), the last line wins; use
    :func:`iter_qrels` to see every line.
    """
    qrels: dict[str, dict[str, int]] = {}
    for q in iter_qrels(path):
        qrels.setdefault(q.qid, {})[q.docid] = q.grade
    return qrels

