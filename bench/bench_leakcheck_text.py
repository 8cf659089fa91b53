"""Benchmark: `golden leakcheck` on natural English text, against the one-process parse floor.

    python bench/bench_leakcheck_text.py                    # 300,000 chunks (~400 MB, built once)
    python bench/bench_leakcheck_text.py --chunks 50000     # quicker
    python bench/bench_leakcheck_text.py --dir /tmp/lkt     # keep the corpus between runs

The corpus is made from the documentation that ships with installed packages: every docstring of
numpy, pandas, scipy and scikit-learn (read with ``ast``, nothing imported), cut into paragraphs
and packed into chunks of about 1.3 KB. Real document sets repeat themselves, so the chunks are
expanded to ``--chunks`` the way a site's pages are: a third carry one of a few page headers and
footers (boilerplate: "a list of", "can be used", "the number of" sit in many chunks), and most
chunks past the first pass are near-duplicates of an earlier one (a paragraph dropped or added, a
word changed). The ~300 queries are sentences of the standard library's docstrings (text the
corpus does not hold): a third planted in chunks (verbatim inside a chunk, the chunk equal to the
query, or a near copy with one word changed), a third quoting a boilerplate sentence with a few
words of their own (many candidates, few matches), a third clean.

In the same run, each in a fresh process:

1. the naive **floor**: read the corpus line by line, ``json.loads`` each line, then
   ``unicodedata.normalize("NFKC", text).casefold().split()``, in one process, with no call to
   golden's code (golden's normaliser also straightens quotes and drops invisible characters, and
   the leak check cuts ``\\w+`` words: that is golden's cost, not the floor's);
2. ``golden leakcheck --mode containment`` with the default workers (all cores), and with
   ``--workers 1``.

Prints, run by run (``--repeat``), wall and CPU time of each (CPU of the process and its workers),
the peak RSS of its largest process, the processes the default chose, the ratios golden / floor
(targets: <= 2.0x with the default workers, <= 3.0x with one), the load average, and the recall on
the planted pairs against a brute-force containment computed in Python sets (must be 100%).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from curation.formats.normalize import normalize_text  # noqa: E402 - after the sys.path line
from curation.leak.ngrams import ngram_set, parse_ngram  # noqa: E402 - after the sys.path line

CORPUS_PACKAGES = ("numpy", "pandas", "scipy", "sklearn")
QUERY_PACKAGES = ("email", "http", "json", "logging", "unittest", "urllib", "xml", "asyncio", "collections")
HEADERS = [
    "This page is part of the reference documentation. It describes the behaviour of the current release.",
    "Note: this documentation is generated from the source code. Some examples may not run as written.",
    "You are reading the documentation of a development version. The stable release can be used instead.",
    "Welcome to the user guide. The number of options described here is a list of the most common ones.",
]
FOOTERS = [
    "See also the user guide for a list of related functions and the number of ways they can be used.",
    "Copyright the developers. Licensed under the BSD license. Report a problem with this page on the tracker.",
    "Was this page helpful? Send us feedback about what can be improved and what you were looking for.",
    "Last updated on the date of the release. Built with the documentation tools described in the guide.",
]


def docstrings(package: str) -> list[str]:
    """Every docstring of an installed package's modules, read with ast (nothing imported)."""
    import importlib.util

    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return []
    out = []
    for folder in spec.submodule_search_locations:
        for path in sorted(Path(folder).rglob("*.py")):
            try:
                tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
            except (SyntaxError, ValueError):
                continue
            for node in ast.walk(tree):
                if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                    doc = ast.get_docstring(node)
                    if doc:
                        out.append(doc)
    return out


def paragraphs(docs: list[str], min_words: int = 6) -> list[str]:
    out = []
    for doc in docs:
        for para in re.split(r"\n\s*\n", doc):
            text = " ".join(para.split())
            if len(text.split()) >= min_words and not set(text) <= set("-=~*^ "):
                out.append(text)
    return out


def sentences(paras: list[str]) -> list[str]:
    out = []
    for p in paras:
        for s in re.split(r"(?<=[.?!])\s+", p):
            words = s.split()
            if 8 <= len(words) <= 25 and re.fullmatch(r"[A-Za-z][A-Za-z0-9 ,;:'()\-.?]+", s):
                out.append(s)
    return out


def generate(folder: Path, chunks: int, seed: int) -> tuple[Path, Path, Path]:
    """corpus.jsonl, queries.jsonl and truth.json in ``folder`` (reused when present)."""
    folder.mkdir(parents=True, exist_ok=True)
    tag = f"v1-{chunks}-{seed}"
    corpus, queries, truth_path = (folder / f"corpus-{tag}.jsonl", folder / f"queries-{tag}.jsonl",
                                   folder / f"truth-{tag}.json")
    if corpus.exists() and queries.exists() and truth_path.exists():
        return corpus, queries, truth_path
    rng = random.Random(seed)
    paras = paragraphs([d for p in CORPUS_PACKAGES for d in docstrings(p)])
    # Base chunks: consecutive paragraphs packed to about 1.3 KB.
    base, cur = [], []
    for p in paras:
        cur.append(p)
        if sum(len(x) + 1 for x in cur) >= 1300:
            base.append(cur)
            cur = []
    q_sents = sentences(paragraphs([d for p in QUERY_PACKAGES for d in docstrings(p)]))
    rng.shuffle(q_sents)
    q_sents = list(dict.fromkeys(q_sents))
    planted_texts, clean_texts = q_sents[:100], q_sents[100:200]
    boiler_sents = [s for block in HEADERS + FOOTERS for s in re.split(r"(?<=[.?!])\s+", block)]
    words = [w for s in q_sents[200:2000] for w in s.lower().strip(".").split()]
    quoting = []
    for i in range(100):
        b = rng.choice(boiler_sents).rstrip(".?")
        own = " ".join(rng.choice(words) for _ in range(rng.randint(2, 5)))
        quoting.append(f"{b} {own}" if i % 2 else f"{own} {b}")
    qs = ([(f"p{i:03d}", t) for i, t in enumerate(planted_texts)] + [(f"b{i:03d}", t) for i, t in enumerate(quoting)]
          + [(f"c{i:03d}", t) for i, t in enumerate(clean_texts)])
    hosts = rng.sample(range(chunks), len(planted_texts))
    plant, truth = {}, []
    for k, (host, text) in enumerate(zip(hosts, planted_texts)):
        kind = ("verbatim", "whole", "near")[k % 3]
        if kind == "near":  # one word changed: most of the query's trigrams still there
            toks = text.split()
            toks[len(toks) // 2] = rng.choice(words)
            text = " ".join(toks)
        plant[host] = (kind, text)
        truth.append({"qid": f"p{k:03d}", "chunk": f"d{host:07d}", "kind": kind})
    with open(str(corpus) + ".tmp", "w", encoding="utf-8") as fh:
        for i in range(chunks):
            if i < len(base):
                body = list(base[i])
            else:  # a near-duplicate of an earlier page: a paragraph dropped or added, a word changed
                body = list(base[rng.randrange(len(base))])
                r = rng.random()
                if r < 0.3 and len(body) > 1:
                    body.pop(rng.randrange(len(body)))
                elif r < 0.6:
                    body.insert(rng.randrange(len(body) + 1), rng.choice(paras))
                toks = body[0].split()
                toks[rng.randrange(len(toks))] = rng.choice(words)
                body[0] = " ".join(toks)
            if rng.random() < 0.33:
                body.insert(0, rng.choice(HEADERS))
            if rng.random() < 0.33:
                body.append(rng.choice(FOOTERS))
            if i in plant:
                kind, qtext = plant[i]
                body = [qtext] if kind == "whole" else body[:1] + [qtext] + body[1:]
            fh.write(json.dumps({"id": f"d{i:07d}", "text": "\n\n".join(body)}, ensure_ascii=False) + "\n")
    os.replace(str(corpus) + ".tmp", corpus)
    with open(queries, "w", encoding="utf-8") as fh:
        for qid, text in qs:
            fh.write(json.dumps({"qid": qid, "text": text}) + "\n")
    truth_path.write_text(json.dumps(truth))
    return corpus, queries, truth_path


FLOOR = """
import json, sys, unicodedata
words = 0
with open(sys.argv[1], "rb") as fh:
    for line in fh:
        words += len(unicodedata.normalize("NFKC", json.loads(line)["text"]).casefold().split())
print(words)
"""
FLOOR_SAYS = "read + json.loads + NFKC + casefold + split, one process, no golden code"


RSS_WRAPPER = """
import resource, subprocess, sys
code = subprocess.call(sys.argv[1:])
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)
sys.exit(code)
"""


def run_child(cmd: list[str]) -> tuple[float, float, str, float]:
    """(wall s, CPU s of the child and its children, stdout, peak RSS in MiB of the largest process),
    the child started through a small wrapper that reports its descendants' peak RSS."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", RSS_WRAPPER, *cmd], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    wall = time.perf_counter() - t0
    if proc.returncode not in (0, 3):  # 3: leaks found, as planted
        sys.exit(f"{' '.join(cmd[:6])} failed ({proc.returncode}):\n{proc.stderr}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    rss = int(proc.stderr.strip().splitlines()[-1]) / 1024
    return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime), proc.stdout, rss


def planted_recall(corpus: Path, queries: Path, truth_path: Path, out: Path, threshold: float):
    """(planted pairs brute force flags, of them found by golden) for containment at ``threshold``."""
    truth = json.loads(truth_path.read_text())
    want = {t["chunk"] for t in truth}
    texts = {}
    with open(corpus, encoding="utf-8") as fh:
        for line in fh:
            if line[8:16] in want:  # '{"id": "d0000123"' : only the planted chunks are decoded
                obj = json.loads(line)
                texts[obj["id"]] = obj["text"]
    qtext = {json.loads(line)["qid"]: json.loads(line)["text"] for line in open(queries, encoding="utf-8")}
    spec = parse_ngram("word:3")
    expected = set()
    for t in truth:
        q = ngram_set(normalize_text(qtext[t["qid"]]), spec)
        c = ngram_set(normalize_text(texts[t["chunk"]]), spec)
        if q and len(q & c) / len(q) >= threshold:
            expected.add((t["qid"], t["chunk"]))
    found = set()
    with open(out, encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            found.update((rec["qid"], m["chunk_id"]) for m in rec["matches"])
    return len(expected), len(expected & found)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunks", type=int, default=300_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threshold", type=float, default=0.85)
    ap.add_argument("--repeat", type=int, default=1, help="runs of each side, alternating; each run is printed")
    ap.add_argument("--dir", default=None, help="keep the generated files here (default: a temporary folder)")
    args = ap.parse_args()
    tmp = tempfile.TemporaryDirectory(prefix="golden-lkt-") if args.dir is None else None
    folder = Path(args.dir or tmp.name)
    t0 = time.perf_counter()
    corpus, queries, truth = generate(folder, args.chunks, args.seed)
    print(f"corpus: {args.chunks:,} chunks, {corpus.stat().st_size / 2**20:,.0f} MiB "
          f"({time.perf_counter() - t0:.1f} s to build or find); queries: "
          f"{sum(1 for _ in open(queries, encoding='utf-8'))}; {os.cpu_count()} cores")
    out = folder / "leaks.jsonl"
    golden = [sys.executable, "-c", "from curation.cli import main; main()", "leakcheck", "--queries", str(queries),
              "--corpus", str(corpus), "--mode", "containment", "--threshold", str(args.threshold),
              "--out", str(out)]
    load = os.getloadavg()
    floor, default, single = [], [], []
    for _ in range(args.repeat):  # alternate, so the sides see the same load
        floor.append(run_child([sys.executable, "-c", FLOOR, str(corpus)]))
        default.append(run_child(golden))
        single.append(run_child([*golden, "--workers", "1"]))
    print("floor program (in a fresh python):" + "".join(f"\n    {line}" for line in FLOOR.strip().splitlines()))
    for i, (fl, de, si) in enumerate(zip(floor, default, single), start=1):
        f_wall, f_cpu, _, f_rss = fl
        print(f"run {i}: floor ({FLOOR_SAYS}): {f_wall:.2f} s wall, {f_cpu:.2f} s CPU, {f_rss:,.0f} MiB")
        for what, (wall, cpu, stdout, rss), target in (("default workers", de, 2.0), ("--workers 1", si, 3.0)):
            procs = re.search(r"on (\d+) process", stdout)
            print(f"  golden leakcheck, {what} ({procs.group(1) if procs else '?'} process(es)): {wall:.2f} s wall, "
                  f"{cpu:.2f} s CPU, largest process {rss:,.0f} MiB: {wall / f_wall:.2f}x the floor's wall time "
                  f"(target <= {target}x), CPU {cpu / f_cpu:.2f}x")
    print(f"load average (1, 5, 15 min): {'/'.join(f'{x:.1f}' for x in load)} before, "
          f"{'/'.join(f'{x:.1f}' for x in os.getloadavg())} after, on {os.cpu_count()} cores")
    n_expected, n_found = planted_recall(corpus, queries, truth, out, args.threshold)
    print(f"planted pairs brute force flags at containment >= {args.threshold}: {n_expected}; golden found "
          f"{n_found} ({n_found / max(n_expected, 1):.0%} recall)")
    if n_found != n_expected:
        sys.exit("MISSED planted leaks")
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
