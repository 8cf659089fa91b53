"""A Hugging Face ``datasets`` folder of an export's qrels: the one writer and reader.

The folder is what ``datasets.load_dataset(folder)`` reads without any code of golden's (Hugging
Face's "manual configuration": the dataset card's YAML front matter names the data files):

* ``README.md``: the dataset card; its front matter lists the ``configs`` (one, ``default``, whose
  ``test`` split is ``data/test-*.parquet``) and a ``golden`` object (version, scale, relevance
  level, agreement); its text says the same for a person;
* ``data/test-00000-of-0000N.parquet``: the rows of ``qrels.jsonl``, in its order, in shards of
  :data:`SHARD_ROWS` rows, written with pyarrow (the schema is :func:`qrels_schema`; the golden
  object is kept in the Parquet schema's metadata too, so :func:`read_hf_dataset` needs no YAML).

A key that a ``qrels.jsonl`` record leaves out (``unsure``, a vote's ``need_version``) is null in
the Parquet rows. Writing needs only pyarrow, not ``datasets``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from curation.formats.fileio import InputError, atomic_write

SHARD_ROWS = 1_000_000
SPLIT = "test"  # a golden set is evaluation data
_META_KEY = b"golden"


def qrels_schema(machine: bool = False):
    """The Arrow schema of an export's ``qrels.jsonl`` records (``machine``: with the ``machine`` column
    of a machine-filled export)."""
    import pyarrow as pa

    vote = pa.struct([("judge", pa.string()), ("grade", pa.int64()), ("unsure", pa.bool_()),
                      ("guidelines_version", pa.int64()), ("need_version", pa.int64())])
    fields = [
        ("qid", pa.string()), ("docid", pa.string()), ("grade", pa.int64()), ("source", pa.string()),
        ("seed_only", pa.bool_()), ("judgments", pa.list_(vote)),
        ("adjudication", pa.struct([("lead", pa.string()), ("grade", pa.int64()), ("reason", pa.string()),
                                    ("guidelines_version", pa.int64())])),
        ("seeds", pa.list_(pa.struct([("source", pa.string()), ("grade", pa.int64())]))),
        ("pooled", pa.bool_()), ("guidelines_version", pa.int64()), ("unsure", pa.bool_()),
    ]
    if machine:  # curation.machine.fill's label of the pair
        fields.append(("machine", pa.struct([
            ("judge", pa.string()), ("kind", pa.string()), ("grade", pa.int64()), ("samples", pa.int64()),
            ("model", pa.string()), ("prompt_version", pa.string()), ("confidence", pa.float64())])))
    return pa.schema(fields)


def shard_names(rows: int, shard_rows: int | None = None) -> list[str]:
    """The Parquet files of ``rows`` rows (``shard_rows`` a file, default :data:`SHARD_ROWS`), relative to
    the folder (at least one, even for no row)."""
    n = max(1, -(-rows // (shard_rows or SHARD_ROWS)))
    return [f"data/{SPLIT}-{i:05d}-of-{n:05d}.parquet" for i in range(n)]


def _yaml_scalar(value) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON scalar is a YAML scalar


def _yaml(obj, indent: int = 0) -> list[str]:
    """YAML block lines of plain JSON data (dicts, lists, scalars): JSON's scalars, YAML's layout."""
    pad = " " * indent
    out = []
    for key, value in obj.items():
        if isinstance(value, dict) and value:
            out.append(f"{pad}{key}:")
            out += _yaml(value, indent + 2)
        elif isinstance(value, list) and value:
            out.append(f"{pad}{key}:")
            for item in value:
                if isinstance(item, dict) and item:
                    lines = _yaml(item, indent + 4)
                    out.append(f"{pad}  - {lines[0].lstrip()}")
                    out += lines[1:]
                else:
                    out.append(f"{pad}  - {_yaml_scalar(item)}")
        else:  # a scalar, or an empty or nested container in JSON's flow form (YAML reads it as such)
            out.append(f"{pad}{key}: {_yaml_scalar(value)}")
    return out


def card_text(golden: dict, *, rows: int, shards: list[str], title: str) -> str:
    """The dataset card (README.md): YAML front matter with ``configs`` and ``golden``, then a short
    description for a person."""
    front = {
        "pretty_name": title,
        "configs": [{"config_name": "default", "data_files": [{"split": SPLIT, "path": "data/test-*.parquet"}]}],
        "golden": golden,
    }
    level = golden.get("relevance_level")
    scale = golden.get("scale")
    lines = ["---", *_yaml(front), "---", "", f"# {title}", "",
             f"Relevance judgments (qrels) exported by golden: version `{golden.get('version')}`, "
             f"{rows} judged pairs in {len(shards)} Parquet file(s), split `{SPLIT}`.", "",
             f"- Scale: `{scale}`.",
             f"- Relevance level: a grade of {level} or more counts as relevant for binary metrics.",
             "- Agreement between judges: " + _agreement_line(golden.get("agreement")),
             "", "Each row is one line of the version's `qrels.jsonl` (the final grade, its source, each judge's "
             "vote, the adjudication and seeds); a key a line leaves out is null here.", "",
             "```python", "import datasets", "", "qrels = datasets.load_dataset(\"path/to/this/folder\")[\"test\"]",
             "```", ""]
    return "\n".join(lines)


def _agreement_line(agreement) -> str:
    if not isinstance(agreement, dict) or not agreement:
        return "not measured (no pair was labelled by two judges)."
    measures = agreement.get("measures") or {}
    shown = ", ".join(f"{k} {v:.3f}" for k, v in measures.items() if isinstance(v, (int, float)))
    pairs = agreement.get("pairs")
    return (f"{shown} on {pairs} pairs labelled by two or more judges" if shown else
            f"measured on {pairs} pairs") + (f" (verdict: {agreement['verdict']})." if agreement.get("verdict")
                                             else ".")


BATCH_ROWS = 50_000  # records converted to Arrow at a time


def write_hf_dataset(records: Iterable[dict], folder: str | os.PathLike, *, rows: int, golden: dict, title: str,
                     shard_rows: int | None = None) -> dict[str, Path]:
    """Write ``records`` (``qrels.jsonl``'s, in order; ``rows`` of them) as the folder's Parquet shards
    and its card, each file whole or not at all; the records are converted :data:`BATCH_ROWS` at a time,
    so memory holds one batch. Returns relative name -> path of every file written. ValueError for a
    record key the schema has no column for (nothing is dropped silently)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = Path(folder)
    shard_rows = shard_rows or SHARD_ROWS
    names = shard_names(rows, shard_rows)
    records = iter(records)
    first = next(records, None)
    schema = qrels_schema(machine=first is not None and "machine" in first)
    schema = schema.with_metadata({_META_KEY: json.dumps(golden, sort_keys=True).encode()})
    known = set(schema.names)
    pending = [] if first is None else [first]
    written: dict[str, Path] = {}
    seen = 0
    for name in names:
        with atomic_write(folder / name, "wb", encoding=None) as fh, \
                pq.ParquetWriter(fh, schema, compression="zstd") as writer:
            left = shard_rows
            while left:
                want = min(left, BATCH_ROWS)
                batch = pending[:want]
                pending = pending[len(batch):]
                while len(batch) < want:
                    record = next(records, None)
                    if record is None:
                        break
                    batch.append(record)
                if not batch:
                    break
                unknown = set().union(*(r.keys() for r in batch)) - known
                if unknown:
                    raise ValueError(f"records: no column for key(s) {', '.join(sorted(unknown))}")
                writer.write_table(pa.Table.from_pylist(batch, schema=schema))
                left -= len(batch)
                seen += len(batch)
        written[name] = folder / name
    if seen != rows or next(records, None) is not None or pending:
        raise ValueError(f"rows: {rows} records announced, {seen} or more given")
    with atomic_write(folder / "README.md") as fh:
        fh.write(card_text(golden, rows=rows, shards=names, title=title))
    written["README.md"] = folder / "README.md"
    return written


def read_hf_dataset(folder: str | os.PathLike) -> tuple[dict, list[dict]]:
    """The golden object and the rows (in shard order) of a folder :func:`write_hf_dataset` wrote;
    InputError naming the folder when it has no shard or a shard lacks golden's metadata."""
    import pyarrow.parquet as pq

    folder = Path(folder)
    shards = sorted((folder / "data").glob(f"{SPLIT}-*.parquet"))
    if not shards:
        raise InputError(folder, None, f"no data/{SPLIT}-*.parquet file: not a golden Hugging Face folder")
    rows: list[dict] = []
    golden = None
    for shard in shards:
        table = pq.read_table(shard)
        meta = (table.schema.metadata or {}).get(_META_KEY)
        if meta is None:
            raise InputError(shard, None, "no golden metadata in the Parquet schema")
        golden = json.loads(meta)
        rows += table.to_pylist()
    return golden, rows
