"""CHANGES.md: what changed between a version and its parent (pairs added, removed, relabelled;
queries added and dropped), for a person."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from curation.export.gather import VersionState
from curation.export.manifest import MANIFEST
from curation.export.reading import version_labels, version_queries  # noqa: F401 - version_queries: versions.py reads it here
from curation.formats.qrels import parse_label_records
from curation.formats.queries import QueryRecord

_CHANGES_LIST_LIMIT = 500


def _md(text: str) -> str:
    """An identifier or text safe inside a Markdown code span on one line."""
    return str(text).replace("`", "'").replace("\n", " ").replace("\r", " ")


def _short(text: str, n: int = 80) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def version_records(files: dict[str, bytes]) -> tuple[dict[tuple[str, str], dict], dict[str, QueryRecord]]:
    """A stored version's labels ``{(qid, docid): qrels.jsonl record}`` and queries ``{qid: QueryRecord}``,
    read by the one reader of each format (:mod:`curation.formats.qrels`, :mod:`curation.formats.queries`)."""
    return version_labels(files), version_queries(files["queries.jsonl"])


def diff_versions(old_labels: dict, new_labels: dict, old_queries: dict, new_queries: dict) -> dict:
    """What changed between two versions: pairs added, removed and relabelled; queries added and
    dropped. Labels are ``{(qid, docid): record}``, queries ``{qid: record}`` (qrels.jsonl and
    queries.jsonl records); each list is sorted."""
    added = sorted(set(new_labels) - set(old_labels))
    removed = sorted(set(old_labels) - set(new_labels))
    relabelled = sorted(
        k for k in set(old_labels) & set(new_labels) if old_labels[k]["grade"] != new_labels[k]["grade"]
    )
    resourced = sorted(
        k for k in set(old_labels) & set(new_labels)
        if old_labels[k]["grade"] == new_labels[k]["grade"] and old_labels[k]["source"] != new_labels[k]["source"]
    )
    return {
        "pairs_added": added,
        "pairs_removed": removed,
        "pairs_relabelled": relabelled,
        "pairs_same_grade_new_source": resourced,
        "queries_added": sorted(set(new_queries) - set(old_queries)),
        "queries_dropped": sorted(set(old_queries) - set(new_queries)),
    }


@dataclass
class LabelDiff:
    """What changed between two versions' labels, counted in one merge of their ``qrels.jsonl`` files
    (both sorted by qid then docid); ``examples`` keeps the first ``limit`` pairs of each change as
    ``(key, (old grade, old source) or None, (new grade, new source) or None)``."""

    limit: int
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_PAIR_CHANGES, 0))
    examples: dict[str, list] = field(default_factory=lambda: {k: [] for k in _PAIR_CHANGES})
    old_pairs: int = 0
    new_pairs: int = 0

    def add(self, kind: str, key, old, new) -> None:
        self.counts[kind] += 1
        if len(self.examples[kind]) < self.limit:
            self.examples[kind].append((key, old, new))


_PAIR_CHANGES = ("pairs_added", "pairs_removed", "pairs_relabelled", "pairs_same_grade_new_source")
_END = object()


def _label_keys(lines: Iterable, name: str) -> Iterator[tuple[tuple[str, str], tuple[int, str]]]:
    last = None
    for r in parse_label_records(lines, name):
        key = (r["qid"], r["docid"])
        if last is not None and key <= last:
            raise _Unsorted
        last = key
        yield key, (r["grade"], r["source"])


class _Unsorted(Exception):
    pass


def diff_label_files(old_lines: Iterable, new_lines: Iterable, *, limit: int = _CHANGES_LIST_LIMIT) -> LabelDiff:
    """The pair changes between two ``qrels.jsonl`` files given as lines (str or bytes), merged as
    streams: memory holds ``limit`` examples, not the files. Files out of qid/docid order (not
    written by golden) are compared in memory instead, with the same result."""
    old_lines, new_lines = _replayable(old_lines), _replayable(new_lines)
    try:
        return _merge(_label_keys(old_lines(), "qrels.jsonl"), _label_keys(new_lines(), "qrels.jsonl"), limit)
    except _Unsorted:
        def whole(lines):
            return sorted({(r["qid"], r["docid"]): (r["grade"], r["source"])
                           for r in parse_label_records(lines, "qrels.jsonl")}.items())
        return _merge(iter(whole(old_lines())), iter(whole(new_lines())), limit)


def _replayable(lines):
    if callable(lines):
        return lines
    lines = list(lines)
    return lambda: lines


def _merge(old: Iterator, new: Iterator, limit: int) -> LabelDiff:
    d = LabelDiff(limit)
    o, n = next(old, _END), next(new, _END)
    while o is not _END or n is not _END:
        if n is _END or (o is not _END and o[0] < n[0]):
            d.add("pairs_removed", o[0], o[1], None)
            d.old_pairs += 1
            o = next(old, _END)
        elif o is _END or n[0] < o[0]:
            d.add("pairs_added", n[0], None, n[1])
            d.new_pairs += 1
            n = next(new, _END)
        else:
            if o[1][0] != n[1][0]:
                d.add("pairs_relabelled", o[0], o[1], n[1])
            elif o[1][1] != n[1][1]:
                d.add("pairs_same_grade_new_source", o[0], o[1], n[1])
            d.old_pairs += 1
            d.new_pairs += 1
            o, n = next(old, _END), next(new, _END)
    return d


def changes_md(version: str, parent: str | None, parent_files, state: VersionState) -> str:
    """CHANGES.md of ``version`` against ``parent``, whose files ``parent_files`` maps by name to a
    function returning the file's lines (``qrels.jsonl``, streamed) or to its bytes."""
    counts = state.body["counts"]
    lines = [f"# {version}", ""]
    if parent is None or parent_files is None:
        lines += [
            "First version: no parent to compare with.",
            "",
            f"- queries: {counts['queries']}",
            f"- judged pairs: {counts['pairs']}",
            f"- policy: {state.body['policy']}",
            "",
        ]
        return "\n".join(lines)
    old_queries = version_queries(_whole(parent_files["queries.jsonl"]))
    old_manifest = json.loads(_whole(parent_files[MANIFEST]))
    pairs = diff_label_files(parent_files["qrels.jsonl"], lambda: state.files["qrels.jsonl"].path.open("rb"))
    queries_added = sorted(set(state.queries) - set(old_queries))
    queries_dropped = sorted(set(old_queries) - set(state.queries))
    c = pairs.counts
    lines += [
        f"Changes against {parent}.",
        "",
        "| change | count |",
        "|---|---:|",
        f"| pairs added | {c['pairs_added']} |",
        f"| pairs removed | {c['pairs_removed']} |",
        f"| pairs relabelled | {c['pairs_relabelled']} |",
        f"| pairs with the same grade from a new source | {c['pairs_same_grade_new_source']} |",
        f"| queries added | {len(queries_added)} |",
        f"| queries dropped | {len(queries_dropped)} |",
        "",
        f"Judged pairs: {pairs.old_pairs} -> {pairs.new_pairs}; queries: {len(old_queries)} -> {len(state.queries)}.",
    ]
    if old_manifest.get("policy") != state.body["policy"]:
        lines.append(f"Policy: {old_manifest.get('policy')} -> {state.body['policy']}.")
    old_gv = (old_manifest.get("guidelines") or {}).get("current")
    new_gv = state.body["guidelines"]["current"]
    if old_gv != new_gv:

        def fmt(g):
            return f"v{g['version']} ({g['sha256'][:12]})" if g else "none"

        lines.append(f"Guidelines: {fmt(old_gv)} -> {fmt(new_gv)}.")
    lines.append("")

    def section(title: str, items: list, total: int, render) -> None:
        if not items:
            return
        lines.extend([f"## {title} ({total})", ""])
        for item in items[:_CHANGES_LIST_LIMIT]:
            lines.append(render(*item) if isinstance(item, tuple) else render(item))
        if total > _CHANGES_LIST_LIMIT:
            lines.append(f"- … and {total - _CHANGES_LIST_LIMIT} more (compare the qrels.jsonl files)")
        lines.append("")

    ex = pairs.examples
    section("Queries added", queries_added, len(queries_added),
            lambda q: f"- `{_md(q)}` {_md(_short(state.queries[q]['text']))}")
    section("Queries dropped", queries_dropped, len(queries_dropped),
            lambda q: f"- `{_md(q)}` {_md(_short(old_queries[q].text))}")
    section("Pairs relabelled", ex["pairs_relabelled"], c["pairs_relabelled"],
            lambda k, o, n: f"- `{_md(k[0])}` `{_md(k[1])}`: {o[0]} -> {n[0]} ({o[1]} -> {n[1]})")
    section("Pairs added", ex["pairs_added"], c["pairs_added"],
            lambda k, o, n: f"- `{_md(k[0])}` `{_md(k[1])}`: {n[0]} ({n[1]})")
    section("Pairs removed", ex["pairs_removed"], c["pairs_removed"],
            lambda k, o, n: f"- `{_md(k[0])}` `{_md(k[1])}`: was {o[0]} ({o[1]})")
    section("Pairs with the same grade from a new source", ex["pairs_same_grade_new_source"],
            c["pairs_same_grade_new_source"],
            lambda k, o, n: f"- `{_md(k[0])}` `{_md(k[1])}`: {n[0]} ({o[1]} -> {n[1]})")
    return "\n".join(lines)


def _whole(src) -> bytes:
    if isinstance(src, bytes):
        return src
    with src() as fh:
        return fh.read()
