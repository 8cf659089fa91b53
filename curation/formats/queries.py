"""``queries.jsonl``: the query set, one JSON object per line (written by ``golden sample queries`` and by an export).

Fields and rules (one set, for every command that reads the file)::

    qid            required; a non-empty string or number (read as a string); a qid repeated with
                   the same line is read once (counted), with another one refused naming both
                   lines unless ``on_conflict`` is first or last (:mod:`curation.formats.conflicts`)
    text           required; a string with something besides white space, at most
                   GOLDEN_MAX_QUERY_BYTES (:mod:`curation.formats.limits`). ``query`` is accepted
                   as another name for it when ``text`` is absent (files from other tools use it)
    stratum        optional object (dimension -> value); absent or null: ``{}``
    traffic        optional finite non-negative number (searches of the query in the log)
    weight         optional non-negative number (its weight for traffic-weighted means)
    stratum_share  optional non-negative number
    users          optional non-negative integer
    pii            optional; anything (the PII flags ``golden sample queries`` found)
    split          optional; null, ``"tune"`` or ``"holdout"`` (``golden export split``'s values)
    description    optional; null or a string: the query's information need in a sentence, as a
                   TREC topic's description ("Find how to reset a forgotten password")
    narrative      optional; null or a string: what makes a document relevant or not, as a TREC
                   topic's narrative. Each at most GOLDEN_MAX_GUIDELINES_BYTES; blank means none.

Blank lines are skipped, gzip is read transparently, a UTF-8 byte-order mark is allowed; any other
field is kept in :attr:`QueryRecord.extra`. A file with no query at all is an error. Every error
names ``file:line``.

A plain query-id list (``.txt``: one qid per line), as ``golden pool --queries`` also takes, is read
by :func:`read_query_ids`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from curation.formats.conflicts import Dedup
from curation.formats.fileio import (
    InputError,
    atomic_write,
    identifier,
    is_stdin,
    iter_jsonl_lines,
    json_line,
    no_records,
    open_text,
)
from curation.formats.limits import check_size

SPLITS = ("tune", "holdout")
_EXPECT = "an object with qid and text"


@dataclass(frozen=True)
class QueryRecord:
    """One line of ``queries.jsonl``."""

    qid: str
    text: str
    stratum: dict = field(default_factory=dict)
    traffic: float | None = None
    weight: float | None = None
    stratum_share: float | None = None
    users: int | None = None
    pii: object = None
    split: str | None = None
    description: str | None = None  # the information need (TREC topic description), None when absent
    narrative: str | None = None  # what is relevant and what is not (TREC topic narrative)
    extra: dict = field(default_factory=dict, compare=False)  # the whole object as read

    def get(self, key: str):
        """A field by name: a field of the line, else a stratum dimension."""
        if key in self.extra:
            return self.extra[key]
        if isinstance(self.stratum, dict) and key in self.stratum:
            return self.stratum[key]
        return None

    def as_dict(self) -> dict:
        """The line's object: the fields read (``text`` under its own name), every other field kept."""
        out = {"qid": self.qid, "text": self.text}
        out.update((k, v) for k, v in self.extra.items() if k not in ("qid", "text", "query") or k == "query"
                   and "text" in self.extra)
        for key in ("stratum", "traffic", "weight", "stratum_share", "users", "pii", "split", "description",
                    "narrative"):
            value = getattr(self, key)
            if key in self.extra or value not in (None, {}):
                out[key] = value
        return out


def _number(obj: dict, key: str, path: str, lineno: int) -> float | None:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise InputError(path, lineno, f"{key!r} must be a finite non-negative number, got {value!r}")
    return value


def _need_text(obj: dict, key: str, path: str, lineno: int) -> str | None:
    """``description`` / ``narrative``: null or a string (blank read as None), size-limited."""
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InputError(path, lineno, f"{key!r} must be a string or null, got {value!r}"[:300])
    check_size(value, "GOLDEN_MAX_GUIDELINES_BYTES", path, lineno, f"the query's {key}")
    return value.strip() or None


def parse_queries(
    lines: Iterable[str], path: str | os.PathLike = "queries.jsonl", *, on_conflict: str = "error",
    dedup: Dedup | None = None,
) -> Iterator[QueryRecord]:
    """Yield a :class:`QueryRecord` per qid of ``lines`` (``path`` names them in errors), in the order
    of first appearance. Repeated qids go through ``dedup`` (made with ``on_conflict`` when not
    given): identical lines are read once and counted, conflicting ones refused or resolved."""
    path = str(path)
    dedup = dedup if dedup is not None else Dedup(path, policy=on_conflict, what="qid")
    records: dict[str, QueryRecord] = {}
    any_line = False
    for lineno, obj in iter_jsonl_lines(lines, path, expect=_EXPECT):
        any_line = True
        qid = identifier(obj, "qid", path, lineno)
        text = obj["text"] if "text" in obj else obj.get("query")
        if not dedup.add(qid, obj, lineno, label=text):
            continue
        if not isinstance(text, str) or not text.strip():
            raise InputError(path, lineno, f"query {qid!r} has no text (expected a non-empty 'text' field)")
        check_size(text, "GOLDEN_MAX_QUERY_BYTES", path, lineno, f"query {qid}'s text")
        stratum = obj.get("stratum")
        if stratum is None:
            stratum = {}
        if not isinstance(stratum, dict):
            raise InputError(path, lineno, f"'stratum' must be an object (dimension -> value), got {stratum!r}")
        users = _number(obj, "users", path, lineno)
        if users is not None and users != int(users):
            raise InputError(path, lineno, f"'users' must be a non-negative integer, got {users!r}")
        split = obj.get("split")
        if split is not None and split not in SPLITS:
            raise InputError(path, lineno, f"'split' must be null, \"tune\" or \"holdout\", got {split!r}")
        need = {key: _need_text(obj, key, path, lineno) for key in ("description", "narrative")}
        records[qid] = QueryRecord(
            qid=qid,
            text=text,
            stratum=stratum,
            traffic=_number(obj, "traffic", path, lineno),
            weight=_number(obj, "weight", path, lineno),
            stratum_share=_number(obj, "stratum_share", path, lineno),
            users=None if users is None else int(users),
            pii=obj.get("pii"),
            split=split,
            **need,
            extra=obj,
        )
        if dedup.policy != "last" and not dedup.repeats and not dedup.conflicts:
            yield records.pop(qid)  # stream while nothing repeats; "last" must see every line first
    if not any_line:
        raise no_records(path, "no queries: is this the file `golden sample queries` wrote?")
    yield from records.values()


def iter_queries(
    path: str | os.PathLike, *, on_conflict: str = "error", dedup: Dedup | None = None
) -> Iterator[QueryRecord]:
    """Stream the :class:`QueryRecord` of a ``queries.jsonl`` file (gzip allowed); repeated qids as
    in :func:`parse_queries`."""
    path = str(path)
    if not os.path.exists(path) and not is_stdin(path):
        raise InputError(path, None, "no such file")
    with open_text(path, encoding="utf-8-sig") as fh:
        yield from parse_queries(fh, path, on_conflict=on_conflict, dedup=dedup)


def read_queries(
    path: str | os.PathLike, *, on_conflict: str = "error", dedup: Dedup | None = None
) -> list[QueryRecord]:
    """Every :class:`QueryRecord` of a ``queries.jsonl`` file, in file order (repeats as in :func:`parse_queries`)."""
    return list(iter_queries(path, on_conflict=on_conflict, dedup=dedup))


def read_query_ids(path: str | os.PathLike, *, dedup: Dedup | None = None) -> list[str]:
    """The qids of a query file, in order: a ``queries.jsonl`` file (read by :func:`iter_queries`,
    repeats through ``dedup``), or a plain text file (``.txt``, ``.txt.gz``) of one qid per line, a
    repeated qid being an error."""
    path = str(path)
    if not path.endswith((".txt", ".txt.gz")):
        return [q.qid for q in iter_queries(path, dedup=dedup)]
    if not os.path.exists(path) and not is_stdin(path):
        raise InputError(path, None, "no such file")
    qids: list[str] = []
    seen: set[str] = set()
    with open_text(path, encoding="utf-8-sig") as fh:
        for lineno, line in enumerate(fh, 1):
            qid = line.strip()
            if not qid:
                continue
            if qid in seen:
                raise InputError(path, lineno, f"qid {qid!r} appears twice")
            seen.add(qid)
            qids.append(qid)
    if not qids:
        raise no_records(path, "expected one query id a line")
    return qids


def format_query(row: Mapping | QueryRecord, *, spaced: bool = False) -> str:
    """One line (without newline): compact, key order as given, non-ASCII kept, so it is byte-for-byte stable.

    ``spaced``: the layout of an exported version (``", "`` and ``": "``, see
    :func:`curation.formats.fileio.json_line`); ``golden sample queries`` writes the compact one.
    """
    if isinstance(row, QueryRecord):
        row = row.as_dict()
    return json_line(row, spaced=spaced)


def write_queries(rows: Iterable[Mapping | QueryRecord], path: str | os.PathLike) -> None:
    """Write query rows (mappings or :class:`QueryRecord`) as ``queries.jsonl``, whole or not at all."""
    with atomic_write(path) as fh:
        for row in rows:
            fh.write(format_query(row) + "\n")


def queries_text(rows: Iterable[Mapping | QueryRecord], *, spaced: bool = False) -> str:
    """The text of a ``queries.jsonl`` file: :func:`format_query` of each row, one a line."""
    return "".join(format_query(row, spaced=spaced) + "\n" for row in rows)
