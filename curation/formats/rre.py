"""Rated Ranking Evaluator's ratings file (JSON): the one reader and writer.

RRE (SeaseLtd/rated-ranking-evaluator) reads its ground truth from a JSON ratings file: the index,
the document id field, then query groups (inside ``topics``, or at the top level), each with the
queries that share its ratings (a search template and its placeholders, the query text among them)
and its ``relevant_documents``. The reader takes the layouts RRE and Quepid write:

* ``"relevant_documents": {"doc1": {"gain": 3}, "doc2": {"gain": 0}}`` (document -> gain);
* ``"relevant_documents": {"3": ["doc1", "doc5"], "1": ["doc2"]}`` (gain -> documents, Quepid's
  RRE export);
* ``"relevant_documents": [{"doc1": {"gain": 3}}, ...]`` (a list of the first form);

and a rated query at the top level (``"queries": [{"placeholders": {...}, "relevant_documents": ...}]``).
A group is named by its ``name`` (taken as a query id when a project has such a query) and by its
queries' texts: the placeholder named by the file's ``query_placeholder``, else ``$query`` or
``query``. Gains are integer grades (:func:`curation.formats.qrels.parse_grade`). A label's line is the
line of its document in the file. Errors name ``file:line``.

:func:`rre_json_text` writes one query group per query (its ``name`` the qid, one query with the
``$query`` placeholder, document -> gain), and a ``golden`` object with the version, scale and
relevance level: RRE reads the file as a JSON tree and looks only for the keys it knows.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator

from curation.formats.fileio import InputError, identifier, load_json, no_records, open_text
from curation.formats.foreign import ForeignFile, ForeignLabel
from curation.formats.qrels import parse_grade

_UNIT_KEY = re.compile(r'"relevant_documents"\s*:')
_TEXT_KEYS = ("$query", "query")


def _line_at(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _units(node, path: tuple = ()) -> Iterator[tuple[dict, tuple]]:
    """The rated units (objects holding ``relevant_documents``) of a ratings file, in file order."""
    if isinstance(node, dict):
        if "relevant_documents" in node:
            yield node, path
        for key, value in node.items():
            if key != "relevant_documents":
                yield from _units(value, path + (key,))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _units(value, path + (i,))


def _texts(unit: dict, placeholder: str | None, path: str, lineno: int | None) -> list[str]:
    keys = (placeholder,) if placeholder else _TEXT_KEYS
    queries = unit.get("queries")
    sources = queries if isinstance(queries, list) else [unit]
    out = []
    for q in sources:
        holders = q.get("placeholders") if isinstance(q, dict) else None
        if not isinstance(holders, dict):
            continue
        for key in keys:
            value = holders.get(key)
            if isinstance(value, str) and value.strip():
                out.append(value)
            elif value is not None and not isinstance(value, str):
                raise InputError(path, lineno, f"placeholder {key!r} must be a string, got {value!r:.40}")
    return out


def _documents(rel, path: str, lineno: int | None) -> Iterator[tuple[str, object]]:
    """(docid, raw gain) of a ``relevant_documents`` value in any of the three layouts."""
    entries = rel if isinstance(rel, list) else [rel]
    for entry in entries:
        if not isinstance(entry, dict):
            raise InputError(path, lineno, "relevant_documents must map documents to {\"gain\": N}, or gains to "
                                           "lists of documents")
        for key, value in entry.items():
            if isinstance(value, list):  # gain -> [documents]
                for docid in value:
                    yield identifier({"docid": docid}, "docid", path, lineno), key
            elif isinstance(value, dict):  # document -> {"gain": N}
                if "gain" not in value:
                    raise InputError(path, lineno, f"document {key!r}: no \"gain\"")
                yield identifier({"docid": key}, "docid", path, lineno), value["gain"]
            else:
                raise InputError(path, lineno, f"relevant_documents: {key!r}: expected {{\"gain\": N}} or a list of "
                                               f"documents, got {value!r:.40}")


def read_rre(path: str | os.PathLike, *, allow_empty: bool = False) -> ForeignFile:
    """Every rating of an RRE ratings file, in file order: a
    :class:`~curation.formats.foreign.ForeignLabel` per (query group, document), named by the group's
    name (``qid``) and its queries' texts. ``meta`` holds the file's ``golden`` object when it has one.
    :class:`InputError` naming ``file:line`` for a gain that is not an integer or a malformed group;
    ``path: no records`` for a file without a rating unless ``allow_empty``."""
    path = str(path)
    data = load_json(path)
    if not isinstance(data, dict):
        raise InputError(path, 1, "expected an RRE ratings object (index, id_field, query groups)")
    with open_text(path) as fh:
        text = fh.read()
    out = ForeignFile(path, "rre", meta=data.get("golden") if isinstance(data.get("golden"), dict) else {})
    placeholder = data.get("query_placeholder") if isinstance(data.get("query_placeholder"), str) else None
    starts = [m.start() for m in _UNIT_KEY.finditer(text)]
    units = list(_units(data))
    exact = len(starts) == len(units)
    for i, (unit, _where) in enumerate(units):
        pos = starts[i] if exact else None
        unit_line = _line_at(text, pos) if pos is not None else None
        name = unit.get("name")
        qid = str(name) if isinstance(name, (str, int)) and not isinstance(name, bool) and str(name).strip() else None
        texts = _texts(unit, placeholder, path, unit_line)
        if qid is not None:
            texts.append(qid)  # a group's name may be the query's text
        if qid is None and not texts:
            raise InputError(path, unit_line, "a rated query group with neither a name nor a query text")
        for docid, raw in _documents(unit["relevant_documents"], path, unit_line):
            lineno = unit_line
            if pos is not None:
                at = text.find(json.dumps(docid, ensure_ascii=False), pos)
                lineno = _line_at(text, at) if at >= 0 else unit_line
            out.labels.append(ForeignLabel(lineno or 1, docid, parse_grade(raw, path, lineno),
                                           qid=qid, texts=tuple(dict.fromkeys(texts))))
    if not out.labels and not allow_empty:
        raise no_records(path, "expected query groups with relevant_documents")
    return out


def rre_json_text(groups: Iterable[tuple[str, str, list[tuple[str, int]]]], *, index: str, golden: dict) -> str:
    """An RRE ratings file of ``(qid, query text, [(docid, grade), ...])`` groups, in the order given:
    ``index``, ``id_field`` ``id``, the ``golden`` object (version, scale, relevance level), and
    ``query_groups``, each named by its qid with one query (template ``only_q.json``, placeholder
    ``$query``) and its documents -> gains. Two-space indented, keys in this order, ``\\n`` ends."""
    body = {
        "index": index,
        "id_field": "id",
        "golden": golden,
        "query_groups": [
            {"name": qid, "queries": [{"template": "only_q.json", "placeholders": {"$query": text}}],
             "relevant_documents": {docid: {"gain": int(grade)} for docid, grade in docs}}
            for qid, text, docs in groups
        ],
    }
    return json.dumps(body, ensure_ascii=False, indent=2) + "\n"
