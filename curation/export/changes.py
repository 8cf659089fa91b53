"""CHANGES.md: what changed between a version and its parent (pairs added, removed, relabelled;
queries added and dropped), for a person."""

from __future__ import annotations

import json

from curation.export.gather import VersionState
from curation.export.manifest import MANIFEST
from curation.formats.qrels import parse_label_records
from curation.formats.queries import QueryRecord, parse_queries

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
    labels = {(r["qid"], r["docid"]): r for r in parse_label_records(_lines(files["qrels.jsonl"]), "qrels.jsonl")}
    text = files["queries.jsonl"]
    queries = {q.qid: q for q in parse_queries(_lines(text), "queries.jsonl")} if text.strip() else {}
    return labels, queries


def _lines(data: bytes) -> list[str]:
    # split on "\n" only: str.splitlines would also split inside a text holding U+2028 or U+0085
    return data.decode("utf-8").split("\n")


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


def changes_md(version: str, parent: str | None, parent_files: dict[str, bytes] | None, state: VersionState) -> str:
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
    old_labels, old_queries = version_records(parent_files)
    old_manifest = json.loads(parent_files[MANIFEST])
    d = diff_versions(old_labels, state.labels, old_queries, state.queries)
    lines += [
        f"Changes against {parent}.",
        "",
        "| change | count |",
        "|---|---:|",
        f"| pairs added | {len(d['pairs_added'])} |",
        f"| pairs removed | {len(d['pairs_removed'])} |",
        f"| pairs relabelled | {len(d['pairs_relabelled'])} |",
        f"| pairs with the same grade from a new source | {len(d['pairs_same_grade_new_source'])} |",
        f"| queries added | {len(d['queries_added'])} |",
        f"| queries dropped | {len(d['queries_dropped'])} |",
        "",
        f"Judged pairs: {len(old_labels)} -> {len(state.labels)}; queries: {len(old_queries)} -> {len(state.queries)}.",
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

    def section(title: str, items: list, render) -> None:
        if not items:
            return
        lines.extend([f"## {title} ({len(items)})", ""])
        for item in items[:_CHANGES_LIST_LIMIT]:
            lines.append(render(item))
        if len(items) > _CHANGES_LIST_LIMIT:
            lines.append(f"- … and {len(items) - _CHANGES_LIST_LIMIT} more (compare the qrels.jsonl files)")
        lines.append("")

    section("Queries added", d["queries_added"],
            lambda q: f"- `{_md(q)}` {_md(_short(state.queries[q]['text']))}")
    section("Queries dropped", d["queries_dropped"],
            lambda q: f"- `{_md(q)}` {_md(_short(old_queries[q].text))}")
    section("Pairs relabelled", d["pairs_relabelled"],
            lambda k: f"- `{_md(k[0])}` `{_md(k[1])}`: {old_labels[k]['grade']} -> {state.labels[k]['grade']}"
                      f" ({old_labels[k]['source']} -> {state.labels[k]['source']})")
    section("Pairs added", d["pairs_added"],
            lambda k: f"- `{_md(k[0])}` `{_md(k[1])}`: {state.labels[k]['grade']} ({state.labels[k]['source']})")
    section("Pairs removed", d["pairs_removed"],
            lambda k: f"- `{_md(k[0])}` `{_md(k[1])}`: was {old_labels[k]['grade']} ({old_labels[k]['source']})")
    section("Pairs with the same grade from a new source", d["pairs_same_grade_new_source"],
            lambda k: f"- `{_md(k[0])}` `{_md(k[1])}`: {state.labels[k]['grade']}"
                      f" ({old_labels[k]['source']} -> {state.labels[k]['source']})")
    return "\n".join(lines)
