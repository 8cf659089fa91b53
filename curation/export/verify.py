"""``golden export verify``: re-check an exported version folder against its manifest."""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from curation.export.formats import is_format_file
from curation.export.manifest import ALL_FILES, DATA_FILES, MANIFEST, manifest_seal_ok, state_hash
from curation.formats.fileio import InputError, decode_text, open_text, sha256_file
from curation.formats.qrels import format_qrel, parse_label_records, parse_qrel_line
from curation.formats.queries import read_queries


@dataclass
class VerifyReport:
    """The outcome of :func:`verify`: ``ok`` when ``problems`` is empty."""

    path: Path
    version: str | None
    checked: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def _shape_problems(manifest: dict) -> list[str]:
    """What in ``manifest`` is not of the shape an export writes (before anything is read by it):
    ``"files"`` an object of file name -> ``{"sha256": hex, "bytes": n}`` naming files of this
    folder, ``"counts"`` an object whose ``"grades"`` is an object, ``"version"`` a string."""
    out = []
    if not isinstance(manifest.get("version"), str):
        out.append(f'"version" should be the version\'s name (a string), got {manifest.get("version")!r}')
    files = manifest.get("files")
    if not isinstance(files, dict):
        out.append(f'"files" should be an object of file name -> {{"sha256", "bytes"}}, got {files!r:.60}')
    else:
        for name, info in files.items():
            if (name not in ALL_FILES and not is_format_file(name)) or name == MANIFEST:
                out.append(f'"files" lists {name!r:.60}, not a file of an exported version ({", ".join(DATA_FILES)})')
            elif not isinstance(info, dict) or not isinstance(info.get("sha256"), str) \
                    or isinstance(info.get("bytes"), bool) or not isinstance(info.get("bytes"), int):
                out.append(f'"files" gives {name} {info!r:.60}; expected {{"sha256": "<hex>", "bytes": <size>}}')
    counts = manifest.get("counts", {})
    if not isinstance(counts, dict) or not isinstance(counts.get("grades", {}), dict):
        out.append(f'"counts" should be an object with "pairs", "queries" and "grades" (an object), got {counts!r:.60}')
    return out


def verify(path: str | os.PathLike) -> VerifyReport:
    """Re-check an exported version folder against its manifest.

    Checks: every file the manifest lists exists with its sha256 and size, and no other file is
    there; the folder name is the manifest's version; ``qrels.txt`` has four fields a line,
    iteration ``0``, integer grades, sorted unique pairs; ``qrels.jsonl`` holds the same pairs and
    grades in the same order; every qid of the qrels is in ``queries.jsonl``; the manifest's counts
    of pairs, queries and grades match the files.
    """
    path = Path(path)
    report = VerifyReport(path=path, version=None)
    problems = report.problems
    mpath = path / MANIFEST
    found = _read_manifest(path, mpath, problems)
    if found is None:
        return report
    raw, manifest = found
    if not manifest_seal_ok(raw):
        problems.append(f"{mpath}: its bytes do not match its manifest_sha256 (the manifest was changed)")
    report.version = manifest.get("version")
    if report.version != path.name:
        problems.append(f"{mpath}: version {report.version!r} but the folder is named {path.name!r}")
    listed = manifest.get("files") or {}
    intact = _check_listed_files(path, mpath, listed, report)
    qrels = _read_qrels(path, intact, problems)
    _check_other_files(path, mpath, manifest, qrels, problems)
    if {"qrels.txt", "qrels.jsonl", "queries.jsonl"} <= intact:
        hashes = {n: listed[n]["sha256"] for n in ("qrels.txt", "qrels.jsonl", "queries.jsonl")}
        if state_hash(hashes, manifest) != manifest.get("state_sha256"):
            problems.append(f"{mpath}: state_sha256 does not match the files and the manifest's facts")
    counts = manifest.get("counts") or {}
    if counts.get("pairs") != len(qrels):
        problems.append(f"{mpath}: counts.pairs is {counts.get('pairs')}, qrels.txt has {len(qrels)}")
    by_grade = Counter(str(g) for _, _, g in qrels)
    listed_grades = {k: v for k, v in (counts.get("grades") or {}).items() if v}
    if listed_grades != dict(by_grade):
        problems.append(f"{mpath}: counts.grades {listed_grades} differ from qrels.txt "
                        f"{dict(sorted(by_grade.items()))}")
    return report


def _read_manifest(path: Path, mpath: Path, problems: list[str]) -> tuple[bytes, dict] | None:
    """The manifest's bytes and its JSON object; None (with the problem listed) when the folder or
    the manifest is missing, or the manifest is not a well-formed manifest."""
    if not path.is_dir():
        problems.append(f"{path}: not a folder")
        return None
    if not mpath.exists():
        problems.append(f"{mpath}: missing; is this an exported version folder?")
        return None
    raw = mpath.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        problems.append(f"{mpath}: gzip-compressed data, not a manifest (JSON text); re-export the version")
        return None
    try:
        text = decode_text(raw, mpath)  # strict UTF-8: file:line and column, binary data named as such
    except InputError as exc:
        problems.append(str(exc))
        return None
    try:
        manifest = json.loads(text)
    except ValueError as exc:
        problems.append(f"{mpath}: not valid JSON ({exc})")
        return None
    if not isinstance(manifest, dict):
        problems.append(f"{mpath}: not a manifest (expected a JSON object)")
        return None
    shape = _shape_problems(manifest)
    if shape:
        problems.extend(f"{mpath}: {p}" for p in shape)
        return None
    return raw, manifest


def _check_listed_files(path: Path, mpath: Path, listed: dict, report: VerifyReport) -> set[str]:
    """The files the manifest lists against the folder's: the names of those intact (their sha256
    and size as listed)."""
    problems = report.problems
    for name in DATA_FILES:
        if name not in listed:
            problems.append(f"{mpath}: no checksum for {name}")
    present = sorted(p.relative_to(path).as_posix() for p in path.rglob("*") if not p.is_dir())
    for name in present:
        if name not in listed and name != MANIFEST:
            problems.append(f"{path / name}: not listed in the manifest")
    intact: set[str] = set()
    for name, info in sorted(listed.items()):
        fpath = path / name
        if not fpath.exists():
            problems.append(f"{fpath}: listed in the manifest but missing")
            continue
        digest, size = sha256_file(fpath), fpath.stat().st_size
        report.checked.append(name)
        if digest != info.get("sha256"):
            problems.append(f"{fpath}: sha256 {digest[:16]}… differs from the manifest's "
                            f"{str(info.get('sha256'))[:16]}…")
        elif size != info.get("bytes"):
            problems.append(f"{fpath}: {size} bytes, the manifest says {info.get('bytes')}")
        else:
            intact.add(name)
    return intact


def _read_qrels(path: Path, intact: set[str], problems: list[str]) -> list[tuple[str, str, int]]:
    """qrels.txt's (qid, docid, grade), each line exactly as the export writes it, sorted and unique."""
    qrels: list[tuple[str, str, int]] = []
    if "qrels.txt" in intact or (path / "qrels.txt").exists():
        qpath = path / "qrels.txt"
        try:
            text = qpath.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(f"{qpath}: unreadable ({exc})")
            text = ""
        for lineno, line in enumerate(text.split("\n")[:-1] if text.endswith("\n") else text.split("\n"), 1):
            # read by the one qrels reader; the line must also be exactly what the export writes
            try:
                parsed = parse_qrel_line(line, qpath, lineno)
            except InputError:
                parsed = None
            if parsed is None or parsed.iteration != "0" or format_qrel(parsed) != line + "\n":
                problems.append(f"{qpath}:{lineno}: expected 'qid 0 docid grade' with an integer grade, got {line!r}")
                continue
            qrels.append((parsed.qid, parsed.docid, parsed.grade))
        if text and not text.endswith("\n"):
            problems.append(f"{qpath}: last line has no newline")
        keys = [(q, d) for q, d, _ in qrels]
        if keys != sorted(keys):
            problems.append(f"{qpath}: lines are not sorted by qid then docid")
        if len(set(keys)) != len(keys):
            problems.append(f"{qpath}: a pair appears more than once")
    return qrels


def _check_other_files(path: Path, mpath: Path, manifest: dict, qrels: list, problems: list[str]) -> None:
    """qrels.jsonl holds qrels.txt's pairs and grades; queries.jsonl every qid of the qrels, and as
    many queries as the manifest counts."""
    jpath = path / "qrels.jsonl"
    try:
        with open_text(jpath) as fh:
            jl = [(r["qid"], r["docid"], r["grade"]) for r in parse_label_records(fh, jpath)]
        if jl != qrels:
            problems.append(f"{jpath}: pairs or grades differ from qrels.txt")
    except (OSError, ValueError) as exc:
        problems.append(f"{jpath}: unreadable ({exc})")
    try:
        qs_path = path / "queries.jsonl"
        qs = read_queries(qs_path) if qs_path.stat().st_size else []  # a version may have no query left
        qids = {q.qid for q in qs}
        missing = sorted({q for q, _, _ in qrels} - qids)
        if missing:
            problems.append(f"{path / 'queries.jsonl'}: qids of qrels.txt missing here: {', '.join(missing[:5])}")
        counts = manifest.get("counts") or {}
        if counts.get("queries") != len(qs):
            problems.append(f"{mpath}: counts.queries is {counts.get('queries')}, queries.jsonl has {len(qs)}")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        problems.append(f"{path / 'queries.jsonl'}: unreadable ({exc})")


def stale_beside(folder: Path) -> list[Path]:
    """The temporary folders an interrupted export of ``folder``'s version left beside it (its spool,
    ``.<version>.*.spool``, and its half-written copy, ``.<version>.*.tmp``)."""
    folder = Path(folder)
    try:
        return sorted(p for p in folder.parent.glob(f".{folder.name}.*")
                      if p.is_dir() and p.name.endswith((".spool", ".tmp")))
    except OSError:
        return []
