"""The bytes `golden pool` writes: each line as json's encoder writes it, and the whole robust03 pool
against an independent computation (pandas top-k, hashlib order, json.dumps), so that making the
command faster can never change its output."""

from __future__ import annotations

import gzip
import hashlib
import json

import pandas as pd
import pytest
from click.testing import CliRunner

from curation.cli import main
from curation.formats.pool_file import PoolEntry, format_entries, format_entry

ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode

AWKWARD = ["", "a", "LA010189-0001", 'say "hi"', "back\\slash", "tab\there", "new\nline", "nul\x00", "\x1f",
           "del\x7f", "caf\u00e9", "line\u2028sep", "para\u2029", "nbsp\u00a0", "emoji \U0001f600", "lone \ud800",
           "zero\u200bwidth", "/slash", "<tag>", "1e3"]


@pytest.mark.parametrize("text", AWKWARD)
def test_each_line_is_what_the_json_encoder_writes(text):
    entries = [
        PoolEntry(text, "d", 1, {"run": 2}),
        PoolEntry("q", text, 3, {text: 1, "other": 20}),
        PoolEntry("q", "d", 0, {}),
        PoolEntry("q", text, 7, {"run": 1}, seed_source=text),
        PoolEntry("q", "d", True, {"run": False}),  # bools are not numbers in JSON
        PoolEntry("q", "d", 2**70, {"run": -1}),
    ]
    for entry in entries:
        assert format_entry(entry) == ENCODE(entry.as_dict())
    assert format_entries(entries + entries[::-1]) == [ENCODE(e.as_dict()) for e in entries + entries[::-1]]


def test_lines_with_odd_run_names_and_ranks_are_written_by_the_encoder():
    entries = [PoolEntry("q", "d", 1, {"run": 1, 'r"q': 2}), PoolEntry("q", "e", 2, {"run": 1, "r2": 2.0}),
               PoolEntry("q", "f", 3, {"run": 3}), PoolEntry("q", "g", 4, {1: 1}), PoolEntry("q", "h", 5, {"r2": 1})]
    assert format_entries(entries) == [ENCODE(e.as_dict()) for e in entries]


def _expected_pool(paths, depth: int, seed: int) -> str:
    """pool.jsonl computed without golden: pandas' top-``depth`` per query (score at float32 precision
    descending, docid descending), queries in numeric order, the order of a query's documents by
    SHA-256 of seed, qid and docid, each line written by json.dumps."""
    systems: dict[tuple[str, str], dict[str, int]] = {}
    for path in paths:
        with gzip.open(path, "rt") as fh:
            df = pd.read_csv(fh, sep=r"\s+", header=None, names=["q", "q0", "d", "r", "s", "t"],
                             dtype={"q": str, "d": str})
        name = df["t"].iloc[0]
        df["s"] = df["s"].astype("float32")
        df = df.sort_values(["q", "s", "d"], ascending=[True, False, False])
        df["rank"] = df.groupby("q").cumcount() + 1
        for q, d, r in zip(df["q"], df["d"], df["rank"]):
            if r <= depth:
                systems.setdefault((q, d), {})[name] = int(r)
    lines = []
    for q in sorted({q for q, _ in systems}, key=int):
        docs = sorted((d for qq, d in systems if qq == q),
                      key=lambda d: hashlib.sha256(f"{seed}\x00{q}\x00{d}".encode()).digest())
        for order, d in enumerate(docs, 1):
            lines.append(json.dumps({"qid": q, "docid": d, "order": order, "systems": systems[(q, d)]},
                                    ensure_ascii=False, separators=(",", ":")))
    return "".join(line + "\n" for line in lines)


@pytest.mark.slow
def test_robust03_pool_file_is_byte_for_byte_the_independent_one(shared, tmp_path):
    paths = sorted(shared("robust03", "runs").glob("input.*.gz"))[:6]
    out = tmp_path / "pool.jsonl"
    res = CliRunner().invoke(main, ["pool", *map(str, paths), "--depth", "20", "--seed", "7", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert out.read_text(encoding="utf-8") == _expected_pool(paths, depth=20, seed=7)
