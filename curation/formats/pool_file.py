"""``pool.jsonl`` and ``pool.meta.json``: the judging pool ``golden pool`` writes and ``golden project`` loads.

``pool.jsonl``, one JSON object per line::

    qid          required; a non-empty string or number (read as a string)
    docid        required; the same; a (qid, docid) pair appears once in the file
    order        optional integer >= 0: the pair's place in its query's judging queue (``golden pool``
                 numbers them from 1); absent: 0, pairs with equal order keep file order
    systems      optional object: run name -> the pair's 1-based rank in that run (for engineers)
    seed_source  optional string: where a seeded pair came from (``golden seed``)

Blank lines are skipped, gzip is read transparently; a file with no pair is an error, and every
error names ``file:line``.

``pool.meta.json`` lives beside the pool (``pool.jsonl`` -> ``pool.meta.json``, see
:func:`pool_meta_path`): one JSON object, how the pool was made (``format`` :data:`POOL_FORMAT`,
``depth``, ``seed``, ``runs``...). A pool without it is allowed (:func:`read_pool_meta` gives ``{}``);
one that is not a JSON object is an error.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from curation.formats.fileio import InputError, atomic_write, identifier, is_stdin, iter_jsonl, load_json, no_records

POOL_FORMAT = "golden.pool/1"
_new_object = object.__new__
_set_attribute = object.__setattr__  # past the frozen dataclass's own __setattr__, which refuses every name


@dataclass(frozen=True)
class PoolEntry:
    """One (query, document) pair to judge: a line of ``pool.jsonl``."""

    qid: str
    docid: str
    order: int = 0  # position in the query's judging queue
    systems: dict[str, int] = field(default_factory=dict, compare=False)  # run name -> 1-based rank
    seed_source: str | None = field(default=None, compare=False)
    line: int | None = field(default=None, compare=False, repr=False)  # where it was read (not written)

    @classmethod
    def new(cls, qid: str, docid: str, order: int, systems: dict[str, int]) -> PoolEntry:
        """``PoolEntry(qid, docid, order, systems)``, twice as fast (a pool is built by the thousand):
        the instance's dictionary given at once, where the frozen dataclass's ``__init__`` sets
        each field by a call of ``object.__setattr__`` (given, not filled by ``update``: 0.76 against
        0.99 us an entry)."""
        entry = _new_object(cls)
        _set_attribute(entry, "__dict__", {"qid": qid, "docid": docid, "order": order, "systems": systems,
                                           "seed_source": None, "line": None})
        return entry

    def as_dict(self) -> dict:
        out = {"qid": self.qid, "docid": self.docid, "order": self.order, "systems": self.systems}
        if self.seed_source is not None:
            out["seed_source"] = self.seed_source
        return out


def pool_meta_path(pool_path: str | os.PathLike) -> Path:
    """Where the metadata of a pool file lives: ``pool.jsonl`` -> ``pool.meta.json``."""
    p = Path(pool_path)
    name = p.name
    for suffix in (".gz", ".jsonl", ".ndjson", ".json"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return p.with_name(name + ".meta.json")


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def iter_pool(path: str | os.PathLike, *, dedup=None) -> Iterator[PoolEntry]:
    """Stream the :class:`PoolEntry` of a ``pool.jsonl`` file (gzip allowed), checking the rules above.
    A line repeated identically is dropped and counted in ``dedup.repeats`` (a
    :class:`curation.formats.conflicts.Dedup`, when given); a pair repeated with other values is an error."""
    path = str(path)
    if not os.path.exists(path) and not is_stdin(path):
        raise InputError(path, None, "no such file")
    seen: dict[tuple[str, str], dict] = {}
    for lineno, obj in iter_jsonl(path, expect="an object with qid, docid and order"):
        qid = identifier(obj, "qid", path, lineno)
        docid = identifier(obj, "docid", path, lineno)
        if (qid, docid) in seen:
            if seen[(qid, docid)] == obj:  # the same line again: dropped and counted
                if dedup is not None:
                    dedup.repeats += 1
                continue
            raise InputError(path, lineno, f"pair ({qid!r}, {docid!r}) appears twice")
        seen[(qid, docid)] = obj
        systems = obj.get("systems")
        if systems is None:
            systems = {}
        if not isinstance(systems, dict):
            raise InputError(path, lineno, f"'systems' must be an object (run -> rank), got {systems!r}")
        bad = next((k for k, v in systems.items() if not _is_int(v) or v < 1), None)
        if bad is not None:
            raise InputError(path, lineno, f"rank of run {bad!r} must be a positive integer, got {systems[bad]!r}")
        order = obj.get("order", 0)
        if not _is_int(order) or order < 0:
            raise InputError(path, lineno, f"'order' must be an integer >= 0, got {order!r}")
        source = obj.get("seed_source")
        if source is not None and not isinstance(source, str):
            raise InputError(path, lineno, f"'seed_source' must be a string, got {source!r}")
        yield PoolEntry(qid, docid, order, systems, source, lineno)
    if not seen:
        raise no_records(path, "no pairs: is this the file `golden pool` wrote?")


def read_pool(path: str | os.PathLike, *, dedup=None) -> list[PoolEntry]:
    """Every :class:`PoolEntry` of a ``pool.jsonl`` file, in file order (see :func:`iter_pool`)."""
    return list(iter_pool(path, dedup=dedup))


def read_pool_meta(pool_path: str | os.PathLike) -> dict:
    """The metadata beside a pool file (see :func:`pool_meta_path`), or ``{}`` when there is none."""
    meta = pool_meta_path(pool_path)
    if not meta.exists():
        return {}
    data = load_json(meta)
    if not isinstance(data, dict):
        raise InputError(meta, None, "expected a JSON object")
    return data


# One encoder for every line: json.dumps with options builds a new encoder per call (half its time).
_ENCODE_ENTRY = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def _plain(text) -> bool:
    """True when ``text`` is a string JSON writes as it is between its quotes (no quote, backslash,
    control character or other character that is not printable)."""
    return type(text) is str and text.isprintable() and '"' not in text and "\\" not in text


def format_entry(entry: PoolEntry) -> str:
    """One line of ``pool.jsonl`` (without newline): compact, non-ASCII kept.

    The usual entry (plain strings, integer ranks, no seed source) is written by string
    formatting, three times as fast as the encoder and the same text; any other by the encoder."""
    systems = entry.systems
    if (
        entry.seed_source is None and type(entry.order) is int and _plain(entry.qid) and _plain(entry.docid)
        and type(systems) is dict and all(_plain(k) and type(v) is int for k, v in systems.items())
    ):
        ranks = ",".join([f'"{k}":{v}' for k, v in systems.items()])
        return f'{{"qid":"{entry.qid}","docid":"{entry.docid}","order":{entry.order},"systems":{{{ranks}}}}}'
    return _ENCODE_ENTRY(entry.as_dict())


def format_entries(entries: Iterable[PoolEntry]) -> list[str]:
    """The lines of ``pool.jsonl`` for ``entries``, each as :func:`format_entry` writes it; faster
    for many, as each run name is checked once."""
    names: dict[str, str] = {}  # run name -> '"name":', or "" when the encoder must write it
    lines = []
    for entry in entries:
        systems = entry.systems
        if (entry.seed_source is None and type(entry.order) is int and type(systems) is dict
                and _plain(entry.qid) and _plain(entry.docid)):
            ranks = []
            for name, rank in systems.items():
                key = names.get(name) if type(name) is str else ""
                if key is None:
                    key = names[name] = f'"{name}":' if _plain(name) else ""
                if not key or type(rank) is not int:
                    break
                ranks.append(f"{key}{rank}")
            else:
                lines.append(f'{{"qid":"{entry.qid}","docid":"{entry.docid}","order":{entry.order},'
                             f'"systems":{{{",".join(ranks)}}}}}')
                continue
        lines.append(_ENCODE_ENTRY(entry.as_dict()))
    return lines


def write_pool_file(entries: Iterable[PoolEntry], meta: dict, path: str | os.PathLike) -> Path:
    """Write ``entries`` as ``pool.jsonl`` and ``meta`` as its ``pool.meta.json``; both whole or neither.

    Returns the metadata path."""
    meta_path = pool_meta_path(path)
    lines = format_entries(entries)
    lines.append("")  # the last line's end
    with atomic_write(path) as fh, atomic_write(meta_path) as mh:
        fh.write("\n".join(lines))  # one write
        mh.write(json.dumps(meta, indent=2, ensure_ascii=False) + "\n")
        # Flush both while still inside the block: a full disk then fails here and removes both
        # temporary files, instead of at the pool's close, after the metadata was renamed into place.
        fh.flush()
        mh.flush()
    return meta_path
