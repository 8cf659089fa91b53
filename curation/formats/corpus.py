"""Reading a corpus of chunks: JSONL, TSV or Parquet (gzip for the text forms), streamed.

A corpus record has ``id`` and ``text``, and optionally ``title`` and ``url``. The id may be named
``docid``, ``_id`` or ``doc_id`` instead (:data:`ID_KEYS`, the first one present and not null wins),
the text ``contents`` or ``body`` (:data:`TEXT_KEYS`), at most GOLDEN_MAX_DOC_BYTES
(:mod:`curation.formats.limits`); an empty title or url is none. A TSV file has
a header row naming its columns. :func:`doc_from_mapping` holds these rules, for every reader of a
corpus (the leak check's fast pyarrow path included); errors name ``file:line``.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import json
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from curation.formats.fileio import (
    InputError,
    atomic_write,
    base_suffix,
    id_value,
    is_stdin,
    iter_jsonl_lines,
    no_records,
    open_text,
    trec_fields,
)
from curation.formats.limits import check_size, line_cap

ID_KEYS = ("id", "docid", "_id", "doc_id")
TEXT_KEYS = ("text", "contents", "body")


@dataclass(frozen=True)
class Doc:
    id: str
    text: str
    title: str | None = None
    url: str | None = None


def doc_from_mapping(obj: dict, path: str, lineno: int | None, row: int | None = None) -> Doc:
    """The :class:`Doc` of one record read as a mapping (a JSON object, a TSV row, a Parquet row): the
    id a non-empty string or an integer (:func:`curation.formats.fileio.id_value`), the text a string,
    the title and url strings or nothing; anything else (a number, a boolean, binary data, a list, an
    object) is refused naming the field. ``row``: a Parquet row's number, for the message."""
    at = f"row {row}: " if row is not None else ""
    for key in ID_KEYS:
        if key in obj and obj[key] is not None:
            try:
                docid = id_value(obj[key], key, path, lineno)
            except InputError as exc:
                raise InputError(path, lineno, at + exc.message) from None
            break
    else:
        raise InputError(path, lineno, at + "record has no id (expected one of: " + ", ".join(ID_KEYS) + ")")
    key = next((k for k in TEXT_KEYS if obj.get(k) is not None), None)
    if key is None:
        raise InputError(path, lineno, f"{at}record {docid!r} has no text")
    text = obj[key]
    if not isinstance(text, str):
        raise InputError(path, lineno, f"{at}record {docid!r}: {key!r} is {_kind(text)}, expected a string")
    check_size(text, "GOLDEN_MAX_DOC_BYTES", path, lineno, f"document {docid!r}'s text")
    # An empty title or url (as a TSV column left blank) is no title or url, so the same records
    # read from any format are equal (and have the same fingerprint).
    extra = {}
    for name in ("title", "url"):
        value = obj.get(name)
        if value is not None and not isinstance(value, str):
            raise InputError(path, lineno, f"{at}record {docid!r}: {name!r} is {_kind(value)}, expected a string")
        extra[name] = value or None
    return Doc(docid, text, extra["title"], extra["url"])


def check_parquet_columns(schema, path: str) -> None:
    """Refuse a Parquet corpus whose id, text, title or url column is not of the type its values need:
    the id a string or an integer, the others strings (binary, list and struct columns are named with
    their type, never turned into text)."""
    import pyarrow as pa

    for column in schema:
        kind = column.type
        text = pa.types.is_string(kind) or pa.types.is_large_string(kind)
        if column.name in ID_KEYS and not (text or pa.types.is_integer(kind)):
            raise InputError(path, None, f"column {column.name!r} is {kind}; an id column holds strings or integers")
        if column.name in (*TEXT_KEYS, "title", "url") and not text and not pa.types.is_null(kind):
            raise InputError(path, None, f"column {column.name!r} is {kind}; expected a string column "
                                         "(binary, list and struct columns are not read as text)")


def _kind(value) -> str:
    names = {bool: "a boolean", int: "a number", float: "a number", bytes: "binary data", list: "a list",
             dict: "an object"}
    return names.get(type(value), type(value).__name__)


def iter_corpus_file(path: str | os.PathLike, *, batch_size: int = 8192) -> Iterator[Doc]:
    """Yield the :class:`Doc` records of one corpus file, in file order, in constant memory; a file with
    no record is an :class:`InputError` (``path: no records``)."""
    for _, doc in iter_numbered_docs(path, batch_size=batch_size):
        yield doc


def iter_numbered_docs(path: str | os.PathLike, *, batch_size: int = 8192) -> Iterator[tuple[int, Doc]]:
    """``(line, Doc)`` for each record of one corpus file (a Parquet file's line is its row number,
    from 1), for readers that name lines (:func:`fetch_docs`'s repeated ids)."""
    path = str(path)
    any_doc = False
    for item in _corpus_file_docs(path, batch_size):
        any_doc = True
        yield item
    if not any_doc:
        raise no_records(path, "expected one document a line with id and text")


def _corpus_file_docs(path: str, batch_size: int) -> Iterator[tuple[int, Doc]]:
    suffix = base_suffix(path)
    if suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:  # a damaged or non-Parquet file: named, not a pyarrow traceback
            rowno = 0
            pf = pq.ParquetFile(path)
            check_parquet_columns(pf.schema_arrow, path)
            for batch in pf.iter_batches(batch_size=batch_size):
                for row in batch.to_pylist():
                    rowno += 1
                    yield rowno, doc_from_mapping(row, path, None, rowno)
        except (pa.ArrowException, OSError) as exc:
            raise InputError(path, None, f"not a readable Parquet file ({exc})") from None
    elif suffix in (".tsv", ".tab"):
        cap = line_cap("GOLDEN_MAX_DOC_BYTES")
        csv.field_size_limit(max(csv.field_size_limit(), cap))  # lines over the cap are refused by open_text
        with open_text(path, max_line=cap, streamed=True) as fh:
            reader = csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
            header = next(reader, None)
            if header is None:
                return
            repeated = next((name for i, name in enumerate(header) if name in header[:i]), None)
            if repeated is not None:
                raise InputError(path, 1, f"column {repeated!r} appears twice in the header")
            for lineno, row in enumerate(reader, 2):
                if row == []:
                    continue
                if len(row) != len(header):
                    raise InputError(path, lineno, f"has {len(row)} fields, expected {len(header)} as in the header "
                                                   "(a tab inside a text? TSV fields cannot hold one)")
                yield lineno, doc_from_mapping(dict(zip(header, row)), path, lineno)
    elif suffix in (".jsonl", ".json", ".ndjson"):
        with open_text(path, max_line=line_cap("GOLDEN_MAX_DOC_BYTES"), streamed=True) as fh:
            for lineno, obj in iter_jsonl_lines(fh, path):
                yield lineno, doc_from_mapping(obj, path, lineno)
    else:
        raise InputError(path, None, f"unknown corpus format {suffix!r}: use .jsonl, .tsv or .parquet (optionally .gz)")


def iter_jsonl_docs(
    lines: Iterable[str | bytes], path: str, *, first_line: int | Callable[[], int] = 1
) -> Iterator[Doc]:
    """The :class:`Doc` records of JSONL lines: a whole file, or a block of one starting at line
    ``first_line`` (a callable is called only when an error needs the line number)."""
    try:
        for lineno, obj in iter_jsonl_lines(lines, path):
            yield doc_from_mapping(obj, path, lineno)
    except InputError as exc:
        if first_line == 1 or exc.line is None:
            raise
        base = first_line() if callable(first_line) else first_line
        raise InputError(path, base + exc.line - 1, exc.message) from None


def iter_corpus(paths: Iterable[str | os.PathLike]) -> Iterator[Doc]:
    """Yield the records of several corpus files in turn."""
    for path in paths:
        yield from iter_corpus_file(path)


# --------------------------------------------------------------------------------------------
# Snapshot fingerprint


FINGERPRINT_VERSION = "golden.corpus/1"
_MOD = 1 << 256


def record_hash(doc: Doc) -> bytes:
    """SHA-256 of one record's content: the compact UTF-8 JSON array ``[id, text, title, url]``."""
    payload = json.dumps([doc.id, doc.text, doc.title, doc.url], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).digest()


@dataclass(frozen=True)
class Fingerprint:
    """A corpus snapshot's content hash and record count.

    ``sha256`` does not depend on the order of the records nor on the file format they came in:
    it is the SHA-256 of ``"golden.corpus/1"``, the record count and the sum modulo 2**256 of the
    records' :func:`record_hash` values (a multiset hash, "MSet-Add-Hash" in Clarke et al.,
    *Incremental Multiset Hash Functions and Their Application to Memory Integrity Checking*,
    ASIACRYPT 2003). Any change to any record's id, text, title or url changes it; so does adding,
    removing or repeating a record. It is meant to identify a snapshot, not to resist an attacker.
    """

    docs: int
    sha256: str

    def __str__(self) -> str:
        return f"sha256:{self.sha256} ({self.docs:,} docs)"


class FingerprintBuilder:
    """Accumulates :class:`Fingerprint` record by record, in constant memory."""

    def __init__(self) -> None:
        self.count = 0
        self.total = 0

    def add(self, doc: Doc) -> None:
        self.count += 1
        self.total = (self.total + int.from_bytes(record_hash(doc), "big")) % _MOD

    def merge(self, count: int, total: int) -> None:
        """Add the ``count`` records summing to ``total`` that another builder read (a piece of the
        same corpus read elsewhere)."""
        self.count += count
        self.total = (self.total + total) % _MOD

    def result(self) -> Fingerprint:
        digest = hashlib.sha256()
        digest.update(FINGERPRINT_VERSION.encode())
        digest.update(b"\x00" + str(self.count).encode() + b"\x00")
        digest.update(self.total.to_bytes(32, "big"))
        return Fingerprint(self.count, digest.hexdigest())


def corpus_fingerprint(paths: Iterable[str | os.PathLike], *, progress=None) -> Fingerprint:
    """The :class:`Fingerprint` of the records of ``paths`` (one pass, constant memory).

    ``progress``, when given, is called once per record (e.g. ``tqdm.update``).
    """
    builder = FingerprintBuilder()
    for doc in iter_corpus(as_paths(paths)):
        builder.add(doc)
        if progress is not None:
            progress()
    return builder.result()


def as_paths(paths) -> list[str]:
    """``paths`` (one path or several) as a list of strings."""
    if isinstance(paths, (str, os.PathLike)):
        return [str(paths)]
    return [str(p) for p in paths]


# --------------------------------------------------------------------------------------------
# Fetching the pooled documents


@dataclass
class Fetched:
    """The texts of the wanted documents, and the ones the corpus lacks."""

    docs: dict[str, Doc]  # docid -> record, for the wanted docids found
    missing: list[str]  # wanted docids not in the corpus, sorted
    fingerprint: Fingerprint  # of the whole corpus read
    duplicates: list[str] = field(default_factory=list)  # wanted docids found more than once
    repeats: int = 0  # records of a wanted id repeating an earlier one exactly: read once
    conflicts: int = 0  # records of a wanted id with another text, resolved by on_conflict


def fetch_docs(
    paths: Iterable[str | os.PathLike], docids: Iterable[str], *, progress=None, on_conflict: str = "error"
) -> Fetched:
    """Read the corpus once, keeping only the records whose id is in ``docids``.

    Memory is that of the wanted records only. The corpus fingerprint is computed in the same
    pass. ``missing`` names every wanted docid that the corpus does not hold. A wanted id repeated
    with the same record is read once (counted); with another text, title or url it is an
    :class:`InputError` naming both lines unless ``on_conflict`` is ``first`` or ``last``
    (:mod:`curation.formats.conflicts`).
    """
    from curation.formats.conflicts import Dedup

    paths = as_paths(paths)
    wanted = {str(d) for d in docids}
    found: dict[str, Doc] = {}
    duplicates: set[str] = set()
    dedup = Dedup(paths[0] if paths else "corpus", policy=on_conflict, what="document")
    builder = FingerprintBuilder()
    for path in paths:
        for lineno, doc in iter_numbered_docs(path):
            builder.add(doc)
            if progress is not None:
                progress()
            if doc.id in wanted:
                if doc.id in found:
                    duplicates.add(doc.id)
                if dedup.add(doc.id, doc, lineno, label=doc.text, path=path):
                    found[doc.id] = doc
            else:  # checked too (a hash and the text's start kept), so no id is read two ways unnoticed
                dedup.add(doc.id, hash(doc), lineno, label=doc.text[:61], path=path)
    missing = sorted(wanted - found.keys())
    return Fetched(found, missing, builder.result(), sorted(duplicates), dedup.repeats, dedup.conflicts)


def check_repeats(paths: Iterable[str | os.PathLike], *, on_conflict: str = "error"):
    """Read the corpus once for repeated ids: a :class:`curation.formats.conflicts.Dedup` counting the
    identical repeats, an :class:`InputError` naming both lines for an id with two texts unless
    ``on_conflict`` is ``first`` or ``last``. Memory: a hash and the text's start per id."""
    from curation.formats.conflicts import Dedup

    paths = as_paths(paths)
    dedup = Dedup(paths[0] if paths else "corpus", policy=on_conflict, what="document")
    for path in paths:
        for lineno, doc in iter_numbered_docs(path):
            dedup.add(doc.id, hash(doc), lineno, label=doc.text[:61], path=path)
    return dedup


# --------------------------------------------------------------------------------------------
# A comparison corpus: every judged or pooled document, plus a uniform random draw of the rest


def read_docids(path: str | os.PathLike, *, dedup=None) -> list[str]:
    """The docids listed in a file, in order, without repeats.

    Reads a pool or any JSONL with ``docid`` (or ``id``), a TREC qrels file (4 fields: the
    third), a TREC run (6 fields: the third), or a plain list (one docid a line). The records of a
    JSONL file with a ``qid`` (a pool) go through ``dedup`` (a :class:`curation.formats.conflicts.Dedup`),
    when given, keyed by their pair: an identical repeat is counted, another record for a pair follows
    its policy.
    """
    path = str(path)
    if not os.path.exists(path) and not is_stdin(path):
        raise InputError(path, None, "no such file")
    out: dict[str, None] = {}
    with open_text(path) as fh:
        if base_suffix(path) in (".jsonl", ".json", ".ndjson"):
            for lineno, obj in iter_jsonl_lines(fh, path, expect='an object with a "docid" field', finite=True):
                key = next((k for k in ("docid", "id", "doc_id") if k in obj), None)
                if key is None:
                    raise InputError(path, lineno, 'expected an object with a "docid" field')
                docid = id_value(obj[key], key, path, lineno)
                if dedup is not None and "qid" in obj and not dedup.add((id_value(obj["qid"], "qid", path, lineno),
                                                                           docid), obj, lineno):
                    continue
                out[docid] = None
            return _some_docids(out, path)
        for lineno, line in enumerate(fh, 1):
            parts = trec_fields(line)
            if not parts or parts[0].startswith("#"):
                continue
            if len(parts) in (4, 6):
                out[parts[2]] = None
            elif len(parts) == 1:
                out[parts[0]] = None
            else:
                raise InputError(
                    path, lineno, f"has {len(parts)} fields: expected a docid, a qrels line (4) or a run line (6)"
                )
    return _some_docids(out, path)


def _some_docids(out: dict[str, None], path: str) -> list[str]:
    """The docids read, or ``path: no records`` for a file that lists none (empty, blank or comments only)."""
    if not out:
        raise no_records(path, "expected docids to keep: a pool, qrels, a run or one docid a line")
    return list(out)


def write_corpus(docs: Iterable[Doc], path: str | os.PathLike) -> Fingerprint:
    """Write records whole or not at all: ``.jsonl`` (``.gz`` allowed) or ``.parquet``.

    Returns the fingerprint of what was written.
    """
    path = str(path)
    suffix = base_suffix(path)
    builder = FingerprintBuilder()

    def record(doc: Doc) -> dict:
        builder.add(doc)
        row = {"id": doc.id, "text": doc.text}
        if doc.title is not None:
            row["title"] = doc.title
        if doc.url is not None:
            row["url"] = doc.url
        return row

    if suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        rows = [record(d) for d in docs]
        table = pa.table(
            {
                "id": pa.array([r["id"] for r in rows], pa.string()),
                "text": pa.array([r["text"] for r in rows], pa.string()),
                "title": pa.array([r.get("title") for r in rows], pa.string()),
                "url": pa.array([r.get("url") for r in rows], pa.string()),
            }
        )
        with atomic_write(path, "wb", encoding=None) as fh:
            pq.write_table(table, fh)
    elif suffix in (".jsonl", ".ndjson"):
        gz = path.endswith(".gz")
        with atomic_write(path, "wb", encoding=None) as raw:
            # mtime=0: the same records give the same bytes.
            fh = gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") if gz else raw
            try:
                for doc in docs:
                    fh.write((json.dumps(record(doc), ensure_ascii=False) + "\n").encode("utf-8"))
            finally:
                if gz:
                    fh.close()
    else:
        raise ValueError(f"out: unknown corpus format {suffix!r}: use .jsonl, .jsonl.gz or .parquet")
    return builder.result()
