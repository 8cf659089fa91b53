"""Reading a corpus of chunks: JSONL, TSV or Parquet (gzip for the text forms), streamed.

A corpus record has ``id`` and ``text``, and optionally ``title`` and ``url``. JSONL objects may
name the id ``docid`` or ``_id`` instead. A TSV file has a header row naming its columns.
"""

from __future__ import annotations

import csv
import json
import os
from dataclasses import dataclass
from typing import Iterable, Iterator

from .fileio import InputError, base_suffix, open_text

_ID_KEYS = ("id", "docid", "_id", "doc_id")


@dataclass(frozen=True)
class Doc:
    id: str
    text: str
    title: str | None = None
    url: str | None = None


def _from_mapping(obj: dict, path: str, lineno: int | None) -> Doc:
    for key in _ID_KEYS:
        if key in obj and obj[key] is not None:
            docid = str(obj[key])
            break
    else:
        raise InputError(path, lineno, "record has no id (expected one of: " + ", ".join(_ID_KEYS) + ")")
    text = obj.get("text")
    if text is None:
        text = obj.get("contents", obj.get("body"))
    if text is None:
        raise InputError(path, lineno, f"record {docid!r} has no text")
    title = obj.get("title")
    url = obj.get("url")
    return Doc(docid, str(text), None if title is None else str(title), None if url is None else str(url))


def iter_corpus_file(path: str | os.PathLike, *, batch_size: int = 8192) -> Iterator[Doc]:
    """Yield the :class:`Doc` records of one corpus file, in file order, in constant memory."""
    path = str(path)
    suffix = base_suffix(path)
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        pf = pq.ParquetFile(path)
        for batch in pf.iter_batches(batch_size=batch_size):
            for row in batch.to_pylist():
                yield _from_mapping(row, path, None)
    elif suffix in (".tsv", ".tab"):
        with open_text(path) as fh:
            reader = csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
            for lineno, row in enumerate(reader, 2):
                yield _from_mapping(row, path, lineno)
    elif suffix in (".jsonl", ".json", ".ndjson"):
        with open_text(path) as fh:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise InputError(path, lineno, f"not valid JSON ({exc.msg})") from None
                if not isinstance(obj, dict):
                    raise InputError(path, lineno, "expected a JSON object")
                yield _from_mapping(obj, path, lineno)
    else:
        raise InputError(path, None, f"unknown corpus format {suffix!r}: use .jsonl, .tsv or .parquet (optionally .gz)")


def iter_corpus(paths: Iterable[str | os.PathLike]) -> Iterator[Doc]:
    """Yield the records of several corpus files in turn."""
    for path in paths:
        yield from iter_corpus_file(path)
