"""Quepid's judgements CSV: the one reader and writer.

Quepid (o19s/quepid) writes ratings as CSV with a header row, in two layouts, both read here:

* a case's ratings, ``query,docid,rating``: one rating a row; a query with no rating is a row with
  the query alone;
* a book's judgements, ``query,docid,<rater>,<rater>...``: one row per query/document pair, one
  column per rater (named by the rater's name or e-mail), an empty cell where that rater gave no
  judgement.

The query is named by its text (Quepid has no query id in these files); a text Quepid made safe for
spreadsheets (a space put before a leading ``-``, ``=``, ``+`` or ``@``) matches the same query,
since queries are matched on :func:`curation.formats.normalize.normalize_text`. Ratings are integer
grades (:func:`curation.formats.qrels.parse_grade`). Errors name ``file:line``.

:func:`quepid_csv_text` writes the first layout (what Quepid imports as a case's ratings), from
golden's final labels.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterable

from curation.formats.fileio import InputError, identifier, no_records, open_text
from curation.formats.foreign import ForeignFile, ForeignLabel
from curation.formats.limits import check_size, csv_reader
from curation.formats.qrels import parse_grade

HEADER = ("query", "docid", "rating")
_DOCID_NAMES = ("docid", "doc_id")
_UNSAFE_START = ("-", "=", "+", "@")  # what a spreadsheet reads as a formula


def read_quepid(path: str | os.PathLike, *, allow_empty: bool = False) -> ForeignFile:
    """Every rating of a Quepid judgements CSV (either layout, see the module docstring), in file order:
    a :class:`~curation.formats.foreign.ForeignLabel` each, with the query's text and, in a book's
    layout, the rater. :class:`InputError` naming ``file:line`` for a missing header, a row with a
    rating but no document, or a rating that is not an integer; ``path: no records`` for a file
    without a rating unless ``allow_empty``."""
    path = str(path)
    out = ForeignFile(path, "quepid")
    with open_text(path) as fh:
        rows = csv_reader(fh)
        header = next(rows, None)
        names = [h.strip().lower() for h in header] if header else []
        if len(names) < 3 or names[0] != "query" or names[1] not in _DOCID_NAMES:
            raise InputError(path, 1, f"expected a header 'query,docid,rating' or 'query,docid,<rater>...', "
                                      f"got {','.join(header or [])[:80]!r}")
        raters = [None] if names[2:] == ["rating"] else [h.strip() or "Unknown" for h in header[2:]]
        out.raters = [r for r in raters if r is not None]
        for row in rows:
            lineno = rows.line_num
            if not row or not any(cell.strip() for cell in row):
                continue
            query = row[0]
            check_size(query, "GOLDEN_MAX_QUERY_BYTES", path, lineno, "the query's text")
            if not query.strip():
                raise InputError(path, lineno, "missing the query's text (first column)")
            docid = row[1].strip() if len(row) > 1 else ""
            cells = row[2:]
            if len(cells) > len(raters):
                raise InputError(path, lineno, f"has {len(row)} fields, the header has {len(raters) + 2}")
            if not docid:
                if any(c.strip() for c in cells):
                    raise InputError(path, lineno, "a rating without a document id (second column)")
                out.unrated += 1  # a query Quepid lists without any rating
                continue
            docid = identifier({"docid": docid}, "docid", path, lineno)  # the one rule for ids (formats.fileio)
            rated = False
            for rater, cell in zip(raters, cells):
                if not cell.strip():
                    continue
                rated = True
                out.labels.append(ForeignLabel(lineno, docid, parse_grade(cell.strip(), path, lineno),
                                               texts=(query,), rater=rater))
            if not rated:
                out.unrated += 1
    if not out.labels and not allow_empty:
        raise no_records(path, "expected query,docid,rating rows")
    return out


def _safe(text: str) -> str:
    return " " + text if text.startswith(_UNSAFE_START) else text


def quepid_csv_text(rows: Iterable[tuple[str, str, int]]) -> str:
    """Quepid's ``query,docid,rating`` CSV of ``(query text, docid, grade)`` rows, in the order given
    (Python's ``csv`` module quotes what needs it; ``\\n`` line ends); a text starting with ``-``,
    ``=``, ``+`` or ``@`` gets a leading space, as Quepid writes it, so no spreadsheet runs it."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(HEADER)
    for text, docid, grade in rows:
        writer.writerow((_safe(text), docid, int(grade)))
    return buf.getvalue()
