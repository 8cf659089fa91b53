"""What an exported version folder holds, and the manifest's checksums: the file names, the state
hash (what a version says, for freezing) and the manifest's seal (the sha256 of its own bytes)."""

from __future__ import annotations

import hashlib
import json
import re
from datetime import UTC, datetime

FORMAT = "golden-qrels/1"
DATA_FILES = ("qrels.txt", "qrels.jsonl", "queries.jsonl", "CHANGES.md")
MANIFEST = "manifest.json"
ALL_FILES = DATA_FILES + (MANIFEST,)


def folder_order(names) -> list[str]:
    """The files of a version folder in a fixed order: :data:`ALL_FILES` first, then the other formats'
    files (:mod:`curation.export.formats`) by name."""
    names = list(names)
    return [n for n in ALL_FILES if n in names] + sorted(n for n in names if n not in ALL_FILES)


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def iso_utc(t: datetime | None) -> str | None:
    if t is None:
        return None
    if t.tzinfo is None:
        t = t.replace(tzinfo=UTC)
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


_META_KEYS = ("version", "parent", "created_at", "created_by", "generator", "state_sha256", "files", "manifest_sha256")
# manifest facts outside the state hash; "formats" (curation.export.formats) are derived from the hashed files
_UNHASHED = ("agreement", "judging_order", "formats")
_SEAL = "0" * 64
_SEAL_RE = re.compile(rb'"manifest_sha256": "([0-9a-f]{64})"')


def state_hash(file_hashes: dict[str, str], body: dict) -> str:
    """Hash of what a version says: the sha256 of its three data files and the manifest's facts,
    excluding the agreement figures (derived from the judgments already hashed) so that a newer
    numpy cannot make a frozen state look different, and the judging order's record (a
    settlement recorded later says how the labels were gathered, not what they are)."""
    stable = {k: v for k, v in body.items() if k not in _UNHASHED and k not in _META_KEYS}
    payload = json.dumps(
        {"files": {n: file_hashes[n] for n in ("qrels.txt", "qrels.jsonl", "queries.jsonl")}, "manifest": stable},
        sort_keys=True, ensure_ascii=False, separators=(",", ":"),
    )
    return sha256_bytes(payload.encode("utf-8"))


def sealed_manifest(manifest: dict) -> bytes:
    """manifest.json's bytes, ending with ``manifest_sha256``: the sha256 of these very bytes with
    that value written as 64 zeros, so a changed byte anywhere in the manifest is detected."""
    draft = (json.dumps({**manifest, "manifest_sha256": _SEAL}, ensure_ascii=False, indent=2) + "\n").encode("utf-8")
    return _reseal(draft)


def _reseal(draft: bytes) -> bytes:
    m = list(_SEAL_RE.finditer(draft))[-1]
    return draft[: m.start(1)] + sha256_bytes(draft).encode() + draft[m.end(1):]


def manifest_seal_ok(raw: bytes) -> bool:
    found = list(_SEAL_RE.finditer(raw))
    if not found:
        return False
    m = found[-1]
    blank = raw[: m.start(1)] + _SEAL.encode() + raw[m.end(1):]
    return sha256_bytes(blank) == m.group(1).decode()
