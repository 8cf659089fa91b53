"""A version's files in the formats of other tools, written beside qrels.txt and qrels.jsonl.

``golden export create --format NAME`` (repeatable) adds, to the version folder:

==========  ==============================  ===================================================
name        files                           written by
==========  ==============================  ===================================================
``quepid``  ``quepid.csv``                  :func:`curation.formats.quepid.quepid_csv_text`
``rre``     ``rre.json``                    :func:`curation.formats.rre.rre_json_text`
``ltr``     ``ltr.txt``                     :func:`curation.formats.ltr.ltr_text`
``hf``      ``hf/README.md``,               :func:`curation.formats.hf_dataset.write_hf_dataset`
            ``hf/data/test-*.parquet``
==========  ==============================  ===================================================

Each is built from the version's own ``qrels.txt``, ``qrels.jsonl`` and ``queries.jsonl`` (the same pairs, grades
and order), so it is a function of the version. The qrels' relevance level (the lowest grade binary
metrics count as relevant) is recorded in every format that can hold it (the LTR header, RRE's
``golden`` object, the dataset card), and in the manifest's ``formats`` entry, which also says what
each format cannot hold (:data:`CANNOT_HOLD`), and the manifest's ``files`` list their checksums. The
formats are outside the version's state hash (they are derived from files it hashes), and a frozen
version is written again with the formats it was first exported with.
"""

from __future__ import annotations

from pathlib import Path

from curation.export.reading import qrels_file_triples
from curation.formats.fileio import atomic_write, open_text
from curation.formats.qrels import parse_label_records

FORMATS = ("quepid", "rre", "ltr", "hf")  # the --format choices, in the manifest's order
TOP_NAMES = {"quepid": "quepid.csv", "rre": "rre.json", "ltr": "ltr.txt", "hf": "hf"}  # what each adds to the folder
_FINAL = "judges' votes, adjudications and seeds (the final grade only)"
CANNOT_HOLD = {
    "quepid": ["qid (read back by the query's text)", _FINAL, "relevance level", "scale", "version"],
    "rre": [_FINAL],
    "ltr": [_FINAL, "features (golden has none: add them with your feature logger)"],
    "hf": ["queries' text and metadata (in queries.jsonl)"],
}
LABELS = {"quepid": "Quepid", "rre": "RRE", "ltr": "LTR", "hf": "Hugging Face"}


def is_format_file(name: str) -> bool:
    """True for a file name (relative to the version folder) that an export format writes."""
    return name in ("quepid.csv", "rre.json", "ltr.txt") or name.startswith("hf/")


def check_formats(formats, relevance_level: int, scale: list[int]) -> tuple[str, ...]:
    """The chosen formats in :data:`FORMATS` order (ValueError naming the parameter for an unknown one),
    and the relevance level checked against the scale's grades."""
    chosen = tuple(f for f in FORMATS if f in set(formats))
    unknown = sorted(set(formats) - set(FORMATS))
    if unknown:
        raise ValueError(f"formats: {', '.join(unknown)} not one of {', '.join(FORMATS)}")
    if isinstance(relevance_level, bool) or not isinstance(relevance_level, int) or relevance_level not in scale:
        raise ValueError(f"relevance_level: {relevance_level!r} is not a grade of the scale "
                         f"({', '.join(map(str, scale))})")
    return chosen


def formats_entry(chosen: tuple[str, ...], relevance_level: int, names: dict[str, list[str]]) -> dict:
    """The manifest's ``formats`` entry: the relevance level, then per format its files and what it
    cannot hold."""
    return {"relevance_level": relevance_level,
            **{f: {"files": names[f], "cannot_hold": CANNOT_HOLD[f]} for f in chosen}}


def summary_lines(entry: dict | None) -> list[str]:
    """What the export's summary says of its formats: a line each, with what the format cannot hold."""
    if not entry:
        return []
    out = [f"  formats (relevance level {entry['relevance_level']}: grade >= {entry['relevance_level']} is relevant):"]
    for f in FORMATS:
        if f in entry:
            files = entry[f]["files"]
            shown = ", ".join(files[:2]) + (" ..." if len(files) > 2 else "")
            out.append(f"    {LABELS[f]}: {shown}; cannot hold: {', '.join(entry[f]['cannot_hold'])}")
    return out


def write_formats(chosen: tuple[str, ...], *, qrels_txt: Path, qrels_jsonl: Path, queries: dict[str, dict], spool: Path,
                  version: str, project: str, scale: str, relevance_level: int, agreement: dict | None
                  ) -> tuple[dict[str, Path], dict[str, list[str]]]:
    """Write the ``chosen`` formats of a version into ``spool`` (each file whole or not at all), from its
    ``qrels.txt`` and ``qrels.jsonl`` (paths: the same pairs in the same order) and its queries (qid ->
    record with ``text``). Returns relative name -> path of every file, and format -> its file names."""
    triples = qrels_file_triples(qrels_txt)  # the three text formats need (qid, docid, grade) only
    golden = {"version": version, "project": project, "scale": scale, "relevance_level": relevance_level}
    text = {qid: (q.get("text") or "") for qid, q in queries.items()}
    files: dict[str, Path] = {}
    names: dict[str, list[str]] = {}

    def put(name: str, content: str) -> None:
        with atomic_write(spool / name) as out:
            out.write(content)
        files[name] = spool / name

    if "quepid" in chosen:
        from curation.formats.quepid import quepid_csv_text

        put("quepid.csv", quepid_csv_text((text.get(q, ""), d, g) for q, d, g in triples))
        names["quepid"] = ["quepid.csv"]
    if "rre" in chosen:
        from curation.formats.rre import rre_json_text

        groups: dict[str, list[tuple[str, int]]] = {}
        for q, d, g in triples:
            groups.setdefault(q, []).append((d, g))
        put("rre.json", rre_json_text(((q, text.get(q, ""), docs) for q, docs in groups.items()),
                                      index=project, golden=golden))
        names["rre"] = ["rre.json"]
    if "ltr" in chosen:
        from curation.formats.ltr import ltr_text

        header = {"version": version, "scale": scale, "relevance_level": relevance_level}
        put("ltr.txt", ltr_text(((q, text.get(q, ""), d, g) for q, d, g in triples), header=header))
        names["ltr"] = ["ltr.txt"]
    if "hf" in chosen:
        from curation.formats.hf_dataset import write_hf_dataset

        with open_text(qrels_jsonl) as fh:  # a second pass, streamed into the Parquet shards
            written = write_hf_dataset(parse_label_records(fh, qrels_jsonl), spool / "hf", rows=len(triples),
                                       golden={**golden, "agreement": card_agreement(agreement)},
                                       title=f"{project} {version} (golden qrels)")
        names["hf"] = [f"hf/{n}" for n in sorted(written, key=lambda n: (n != "README.md", n))]
        files.update({f"hf/{n}": p for n, p in written.items()})
    return files, names


def card_agreement(agreement: dict | None) -> dict | None:
    """The manifest's agreement, as the dataset card gives it: pairs, queries, the verdict's band and
    the overall measures' values."""
    if not agreement:
        return None
    measures = (agreement.get("overall") or {}).get("measures") or {}
    return {
        "pairs": agreement.get("pairs"),
        "queries": agreement.get("queries"),
        "verdict": (agreement.get("verdict") or {}).get("band"),
        "measures": {k: (v.get("value") if isinstance(v, dict) else v) for k, v in measures.items()},
    }
