"""Learning-to-rank judgment lists (RankLib / SVMrank / LETOR lines): the one reader and writer.

A line is ``<grade> qid:<qid> [<feature>:<value> ...] # <docid> [<query text>]``: the grade first,
then the query's id, optional features (RankLib's and SVMrank's training data), and after ``#`` the
document id and, as Quepid and the OpenSearch LTR plugin write it, the query's text. Lines starting
with ``#`` are comments (RankLib and SVMrank skip them); golden's own header comments are read back:

* ``# golden version=v1 scale=0-2 relevance_level=1`` (the version, its scale, and the lowest grade
  counted relevant by binary metrics);
* ``# qid:1 = q-17`` (the project's qid behind a number: RankLib and SVMrank want numbers).

The query is matched by its id (through a ``qid:`` header when there is one) and, failing that, by
the text after the document id. Grades are integers (:func:`curation.formats.qrels.parse_grade`);
features are checked (``<positive integer>:<finite number>``) and not kept: golden holds no
features. Errors name ``file:line``.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable

from curation.formats.fileio import InputError, identifier, no_records, open_text
from curation.formats.foreign import ForeignFile, ForeignLabel
from curation.formats.limits import check_size
from curation.formats.qrels import parse_grade

_HEADER = re.compile(r"^#\s*golden\b(.*)$")
_SETTING = re.compile(r"(\w+)=(\S+)")
_QID_MAP = re.compile(r"^#\s*qid:(\S+)\s*=\s*(\S+)\s*$")


def _feature(token: str, path: str, lineno: int) -> None:
    name, sep, value = token.partition(":")
    try:
        ok = sep and name.isdigit() and int(name) > 0 and math.isfinite(float(value))
    except ValueError:
        ok = False
    if not ok:
        raise InputError(path, lineno, f"{token[:40]!r} is not a feature (<positive integer>:<finite number>)")


def read_ltr(path: str | os.PathLike, *, allow_empty: bool = False) -> ForeignFile:
    """Every judgment of a learning-to-rank judgment list, in file order: a
    :class:`~curation.formats.foreign.ForeignLabel` a line, with the query's id (mapped back through
    golden's ``# qid:N = QID`` headers) and its text when the comment gives one. ``meta`` holds the
    settings of a ``# golden ...`` header (``relevance_level`` as an integer). :class:`InputError`
    naming ``file:line`` for a line without ``qid:``, without ``# docid``, with a grade that is not an
    integer or a malformed feature; ``path: no records`` for a file without a judgment unless
    ``allow_empty``."""
    path = str(path)
    out = ForeignFile(path, "ltr")
    numbers: dict[str, str] = {}
    with open_text(path) as fh:
        for lineno, line in enumerate(fh, 1):
            stripped = line.strip()
            if not stripped:
                continue
            if stripped.startswith("#"):
                head = _HEADER.match(stripped)
                if head:
                    for key, value in _SETTING.findall(head.group(1)):
                        out.meta[key] = parse_grade(value, path, lineno) if key == "relevance_level" else value
                mapped = _QID_MAP.match(stripped)
                if mapped:
                    numbers[mapped.group(1)] = mapped.group(2)
                continue
            data, hashed, comment = stripped.partition("#")
            fields = data.split()
            if len(fields) < 2 or not fields[1].startswith("qid:") or len(fields[1]) == 4:
                raise InputError(path, lineno, "expected '<grade> qid:<qid> [features] # <docid>'")
            grade = parse_grade(fields[0], path, lineno)
            for token in fields[2:]:
                _feature(token, path, lineno)
            info = comment.split(None, 1)
            if not hashed or not info:
                raise InputError(path, lineno, "no document id: expected '# <docid>' after the features")
            text = info[1].strip() if len(info) > 1 else ""
            check_size(text, "GOLDEN_MAX_QUERY_BYTES", path, lineno, "the query's text")
            number = fields[1][4:]
            docid = identifier({"docid": info[0]}, "docid", path, lineno)  # the one rule for ids (formats.fileio)
            qid = identifier({"qid": numbers.get(number, number)}, "qid", path, lineno)
            out.labels.append(ForeignLabel(lineno, docid, grade, qid=qid, texts=(text,) if text else ()))
    if not out.labels and not allow_empty:
        raise no_records(path, "expected '<grade> qid:<qid> # <docid>' lines")
    return out


def _plain_id(qid: str) -> bool:
    return qid.isdigit() and qid.isascii() and int(qid) > 0


def ltr_text(rows: Iterable[tuple[str, str, str, int]], *, header: dict) -> str:
    """A judgment list of ``(qid, query text, docid, grade)`` rows, in the order given (one query's rows
    together, as RankLib wants them): a ``# golden k=v ...`` header of ``header`` (version, scale,
    relevance_level), then ``<grade> qid:<n> # <docid> <query text>`` lines. The qids are written as
    they are when every one is a positive integer; otherwise each query is numbered 1, 2, ... in the
    order given, with a ``# qid:<n> = <qid>`` header line, so the qid comes back on import. A text's
    line breaks and tabs become spaces (a line holds one judgment)."""
    rows = list(rows)
    qids = list(dict.fromkeys(q for q, _, _, _ in rows))
    plain = all(_plain_id(q) for q in qids)
    number = {q: q if plain else str(i) for i, q in enumerate(qids, 1)}
    out = ["# golden " + " ".join(f"{k}={v}" for k, v in header.items()) + "\n"]
    if not plain:
        out += [f"# qid:{number[q]} = {q}\n" for q in qids]
    for qid, text, docid, grade in rows:
        flat = " ".join(text.split())
        out.append(f"{int(grade)} qid:{number[qid]} # {docid}{' ' + flat if flat else ''}\n")
    return "".join(out)
