"""Reading ranked runs (TREC and JSONL) and ordering them exactly as trec_eval does.

trec_eval ignores the rank column: within a query it sorts a run's documents by score descending
and breaks ties by docno descending (``comp_sim_docno`` in trec_eval's ``form_res_rels.c``).
Pooling and metrics both use :func:`trec_order`, so the pool holds exactly the documents that the
evaluation later sees in each top-k.

TREC form, one line a result, white-space separated::

    qid Q0 docid rank score tag

JSONL form, one object a line: ``{"qid": "301", "docid": "FT911-3", "score": 12.5}`` (``rank`` and
``run`` optional; ``run`` names the system when the file has no other name).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

from .fileio import InputError, base_suffix, open_text, sha256_file


@dataclass
class Run:
    """One system's ranked results: ``rankings[qid]`` is a list of docids in trec_eval order."""

    name: str
    path: str
    sha256: str
    rankings: dict[str, list[str]] = field(default_factory=dict)
    scores: dict[str, list[float]] = field(default_factory=dict)

    def top(self, qid: str, k: int) -> list[str]:
        """The first ``k`` docids of query ``qid`` (empty when the run has no line for it)."""
        return self.rankings.get(qid, [])[:k]

    @property
    def qids(self) -> list[str]:
        return list(self.rankings)


def trec_order(results: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """Sort ``(docid, score)`` pairs as trec_eval does: score descending, then docid descending."""
    # Two stable sorts: docid descending first, then score descending keeps docid order on ties.
    ordered = sorted(results, key=lambda r: r[0], reverse=True)
    ordered.sort(key=lambda r: r[1], reverse=True)
    return ordered


def _parse_score(raw, path, lineno) -> float:
    try:
        score = float(raw)
    except (TypeError, ValueError):
        raise InputError(path, lineno, f"score {raw!r} is not a number") from None
    if math.isnan(score):
        raise InputError(path, lineno, "score is NaN")
    return score


def read_run(path: str | os.PathLike, *, name: str | None = None) -> Run:
    """Read a TREC or JSONL run file (gzip allowed) into a :class:`Run` in trec_eval order.

    The format is taken from the name (``.jsonl``/``.json`` means JSONL, anything else TREC).
    Raises :class:`InputError` naming the file and line for a line with the wrong number of fields,
    a score that is not a number, or a docid repeated within one query.
    """
    path = str(path)
    is_jsonl = base_suffix(path) in (".jsonl", ".json", ".ndjson")
    per_query: dict[str, list[tuple[str, float]]] = {}
    seen: dict[str, set[str]] = {}
    tags: set[str] = set()
    with open_text(path) as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            if is_jsonl:
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise InputError(path, lineno, f"not valid JSON ({exc.msg})") from None
                if not isinstance(obj, dict) or "qid" not in obj or "docid" not in obj or "score" not in obj:
                    raise InputError(path, lineno, "expected an object with qid, docid and score")
                qid, docid = str(obj["qid"]), str(obj["docid"])
                score = _parse_score(obj["score"], path, lineno)
                if obj.get("run") is not None:
                    tags.add(str(obj["run"]))
            else:
                parts = line.split()
                if len(parts) != 6:
                    raise InputError(
                        path, lineno, f"has {len(parts)} fields, expected 6 (qid Q0 docid rank score tag)"
                    )
                qid, _, docid, _, raw_score, tag = parts
                score = _parse_score(raw_score, path, lineno)
                tags.add(tag)
            docs = seen.setdefault(qid, set())
            if docid in docs:
                raise InputError(path, lineno, f"docid {docid!r} appears twice for query {qid!r}")
            docs.add(docid)
            per_query.setdefault(qid, []).append((docid, score))
    if name is None:
        name = next(iter(tags)) if len(tags) == 1 else _name_from_path(path)
    run = Run(name=name, path=path, sha256=sha256_file(path))
    for qid, results in per_query.items():
        ordered = trec_order(results)
        run.rankings[qid] = [d for d, _ in ordered]
        run.scores[qid] = [s for _, s in ordered]
    return run


def _name_from_path(path: str) -> str:
    name = Path(path).name
    for suffix in (".gz", ".jsonl", ".json", ".trec", ".txt", ".run"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name.removeprefix("input.")
