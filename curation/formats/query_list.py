"""Query lists: the queries ``golden sample queries --exclude`` leaves out and ``--handwritten`` adds, as texts.

One query a line, in one of these forms (by the name's suffix, gzip read transparently, a UTF-8
byte-order mark allowed)::

    .txt (or no suffix)  the query text
    .jsonl               an object with ``text`` (or ``query``) holding a string; other fields
                         (a ``qid``...) are ignored, so an earlier ``queries.jsonl`` is a list too;
                         ``description`` and ``narrative`` (a query's information need, as in
                         queries.jsonl) are read by :func:`read_query_needs`
    .csv / .tsv          a header row with a ``text`` (or ``query``) column

Texts are normalised (:func:`curation.formats.normalize.normalize_text`); empty ones are skipped,
longer ones than GOLDEN_MAX_QUERY_BYTES refused (:mod:`curation.formats.limits`).
Errors name ``file:line``.
"""

from __future__ import annotations

import csv
import os

from curation.formats.fileio import InputError, base_suffix, is_stdin, iter_jsonl_lines, no_records, open_text
from curation.formats.limits import check_size, csv_reader
from curation.formats.normalize import normalize_text


def read_query_list(path: str | os.PathLike) -> list[tuple[int, str]]:
    """(line, normalised text) for each query in a list file, in file order; empty lines skipped.

    ``.txt``: one query per line. ``.jsonl``: objects with ``text`` (or ``query``), such as an
    earlier ``golden sample queries`` output. ``.csv``/``.tsv``: a header row with a ``text`` or
    ``query`` column. Gzip is read transparently.
    """
    path = str(path)
    if not os.path.exists(path) and not is_stdin(path):
        raise InputError(path, None, "no such file")
    suffix = base_suffix(path)
    out: list[tuple[int, str]] = []
    with open_text(path, encoding="utf-8-sig") as fh:
        if suffix in (".jsonl", ".ndjson", ".json"):
            for lineno, obj in iter_jsonl_lines(fh, path, expect='a JSON object with a "text" field'):
                text = obj.get("text", obj.get("query"))
                if not isinstance(text, str):
                    raise InputError(path, lineno, "needs a \"text\" (or \"query\") field holding a string")
                out.append((lineno, normalize_text(text)))
        elif suffix in (".csv", ".tsv", ".tab"):
            kwargs = {"delimiter": "\t", "quoting": csv.QUOTE_NONE} if suffix != ".csv" else {}
            reader = csv_reader(fh, **kwargs)
            header = next(reader, None)
            if header is None:
                raise no_records(path, "expected a header row with a \"text\" or \"query\" column, then the queries")
            col = next((header.index(c) for c in ("text", "query") if c in header), None)
            if col is None:
                raise InputError(path, 1, "needs a header row with a \"text\" or \"query\" column")
            start = reader.line_num + 1
            for row in reader:
                if row:
                    if len(row) != len(header):
                        raise InputError(path, start, f"has {len(row)} fields, expected {len(header)}")
                    out.append((start, normalize_text(row[col])))
                start = reader.line_num + 1
        elif suffix in (".txt", ""):
            for lineno, line in enumerate(fh, 1):
                out.append((lineno, normalize_text(line)))
        else:
            raise InputError(path, None, f"unknown query list format {suffix!r}: use .txt, .jsonl, .csv or .tsv")
    for line, text in out:
        check_size(text, "GOLDEN_MAX_QUERY_BYTES", path, line, "query's text")
    out = [(line, text) for line, text in out if text]
    if not out:
        raise no_records(path, "expected one query a line")
    return out


def read_query_needs(path: str | os.PathLike) -> dict[str, dict]:
    """``{normalised text: {"description", "narrative"}}`` of the queries of a ``.jsonl`` list that
    carry an information need (``golden sample queries --handwritten`` passes them on to queries.jsonl);
    ``{}`` for the other list formats. The fields are checked as queries.jsonl's are."""
    from curation.formats.queries import _need_text

    path = str(path)
    if base_suffix(path) not in (".jsonl", ".ndjson", ".json"):
        return {}
    out: dict[str, dict] = {}
    with open_text(path, encoding="utf-8-sig") as fh:
        for lineno, obj in iter_jsonl_lines(fh, path, expect='a JSON object with a "text" field'):
            text = obj.get("text", obj.get("query"))
            need = {key: _need_text(obj, key, path, lineno) for key in ("description", "narrative")}
            if isinstance(text, str) and any(need.values()):
                out.setdefault(normalize_text(text), {k: v for k, v in need.items() if v})
    return out
