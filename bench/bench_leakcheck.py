"""Benchmark: `golden leakcheck` against datasketch's MinHashLSH and brute-force rapidfuzz.

Generates (once, cached) a corpus of N chunks of about 200 words as JSONL and 1,000 queries, some
planted in the corpus (verbatim, near copies with one word changed, and chunks that are just the
query), then in the same run:

1. golden end to end from JSONL (`golden leakcheck` in a subprocess, --workers 2): wall time,
   chunks per second, peak memory of the whole process tree (sampled with psutil), planted recall;
2. the MinHashLSH route (datasketch): the queries' word-trigram MinHashes in an LSH index at the
   same threshold, every chunk's MinHash queried, each candidate verified exactly; on a subset;
3. brute-force rapidfuzz (``process.cdist`` with ``fuzz.partial_ratio``, every query against
   every chunk, 2 workers); on a smaller subset.

Targets: 1,000,000 chunks in under 60 s, under 2 GB, at least 5x the MinHash route's rate.

    python bench/bench_leakcheck.py                      # the full run (first run writes ~1.3 GB)
    python bench/bench_leakcheck.py --chunks 50000       # quick
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's curation package, imported below

from curation.formats.normalize import normalize_text  # noqa: E402 - after the sys.path line
from curation.leak.ngrams import ngram_set, parse_ngram  # noqa: E402 - after the sys.path line

QUESTION_HEADS = ["how do i", "how to", "what is the", "why does my", "can i", "where is the", "when will my"]


def make_vocabulary(rng: random.Random, size: int) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    seen, out = set(), []
    while len(out) < size:
        w = "".join(rng.choice(letters) for _ in range(rng.randint(2, 10)))
        if w not in seen:
            seen.add(w)
            out.append(w)
    return out


def generate(folder: Path, chunks: int, n_queries: int, words: int, seed: int) -> tuple[Path, Path, dict]:
    """Write corpus.jsonl and queries.jsonl into ``folder`` (reused when already there)."""
    folder.mkdir(parents=True, exist_ok=True)
    tag = f"v2-{chunks}-{n_queries}-{words}-{seed}"  # bump when the generator changes
    corpus, queries = folder / f"corpus-{tag}.jsonl", folder / f"queries-{tag}.jsonl"
    truth_path = folder / f"truth-{tag}.json"
    if corpus.exists() and queries.exists() and truth_path.exists():
        return corpus, queries, json.loads(truth_path.read_text())
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    vocab = make_vocabulary(rng, 30000)
    qs = []
    for i in range(n_queries):
        body = " ".join(rng.choice(vocab[:5000]) for _ in range(rng.randint(3, 9)))
        qs.append((f"q{i:04d}", f"{rng.choice(QUESTION_HEADS)} {body}?".capitalize()))
    planted = rng.sample(range(n_queries), min(n_queries // 10, chunks))
    hosts = rng.sample(range(chunks), len(planted))
    plant = {}
    truth = {}
    for k, (qi, host) in enumerate(zip(planted, hosts)):
        qtext = qs[qi][1]
        kind = ("verbatim", "near", "whole")[k % 3]
        if kind == "near":
            toks = qtext.split()
            toks[-1] = rng.choice(vocab)  # one n-gram lost: found when the query is long enough
            qtext = " ".join(toks)
        plant[host] = (kind, qtext)
        truth[qs[qi][0]] = {"chunk": f"c{host:07d}", "kind": kind}
    block = 10000
    with open(str(corpus) + ".tmp", "w", encoding="utf-8") as fh:
        for start in range(0, chunks, block):
            n = min(block, chunks - start)
            idx = nrng.zipf(1.25, size=(n, words)) % len(vocab)
            for j in range(n):
                i = start + j
                toks = [vocab[t] for t in idx[j]]
                if i in plant:
                    kind, qtext = plant[i]
                    if kind == "whole":
                        text = qtext
                    else:
                        cut = words // 2
                        text = " ".join(toks[:cut]) + ". " + qtext + " " + " ".join(toks[cut:])
                else:
                    text = " ".join(toks)
                fh.write(f'{{"id":"c{i:07d}","text":"{text}."}}\n')
    os.replace(str(corpus) + ".tmp", corpus)
    with open(queries, "w", encoding="utf-8") as fh:
        for qid, text in qs:
            fh.write(json.dumps({"qid": qid, "text": text}) + "\n")
    truth_path.write_text(json.dumps(truth))
    return corpus, queries, truth


class PeakMemory:
    """Peak resident memory of a process and all its children, sampled every 50 ms (psutil), and
    the CPU seconds they used (each process's last sampled user + system time)."""

    def __init__(self, pid: int):
        import psutil

        self.proc = psutil.Process(pid)
        self.peak = 0
        self.cpu: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        import psutil

        while not self._stop.is_set():
            try:
                procs = [self.proc] + self.proc.children(recursive=True)
                total = 0
                for p in procs:
                    try:
                        total += p.memory_info().rss
                        t = p.cpu_times()
                        self.cpu[p.pid] = t.user + t.system
                    except psutil.Error:
                        pass
                self.peak = max(self.peak, total)
            except psutil.Error:
                pass
            time.sleep(0.05)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def read_head(path: Path, n: int) -> list[tuple[str, str]]:
    out = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            obj = json.loads(line)
            out.append((obj["id"], obj["text"]))
            if len(out) >= n:
                break
    return out


def run_golden(corpus: Path, queries: Path, out: Path, workers: int, threshold: float) -> dict:
    cmd = [
        sys.executable, "-c", "from curation.cli import main; main()", "leakcheck",
        "--queries", str(queries), "--corpus", str(corpus), "--workers", str(workers),
        "--threshold", str(threshold), "--out", str(out),
    ]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    with PeakMemory(proc.pid) as mem:
        stdout, stderr = proc.communicate()
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"golden leakcheck failed ({proc.returncode}):\n{stderr}")
    return {"wall": wall, "peak": mem.peak, "stdout": stdout, "cpu": sum(mem.cpu.values())}


def minhash_route(chunks: list[tuple[str, str]], queries: list[tuple[str, str]], threshold: float, num_perm: int):
    """datasketch MinHashLSH over word trigrams, candidates verified exactly (Jaccard and containment)."""
    from datasketch import MinHash, MinHashLSH

    spec = parse_ngram("word:3")
    t0 = time.perf_counter()
    lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)
    qsets = {}
    for qid, text in queries:
        s = ngram_set(normalize_text(text), spec)
        if not s:
            continue
        qsets[qid] = s
        m = MinHash(num_perm=num_perm)
        m.update_batch([" ".join(g).encode() for g in s])
        lsh.insert(qid, m)
    build = time.perf_counter() - t0
    t0 = time.perf_counter()
    c0 = time.process_time()
    found = set()
    for cid, text in chunks:
        cset = ngram_set(normalize_text(text), spec)
        m = MinHash(num_perm=num_perm)
        m.update_batch([" ".join(g).encode() for g in cset])
        for qid in lsh.query(m):
            q = qsets[qid]
            inter = len(q & cset)
            if inter / len(q | cset) >= threshold or inter / len(q) >= threshold:
                found.add((qid, cid))
    return time.perf_counter() - t0, build, found, time.process_time() - c0


def rapidfuzz_route(chunks: list[tuple[str, str]], queries: list[tuple[str, str]], workers: int):
    from rapidfuzz import fuzz, process

    qn = [normalize_text(t) for _, t in queries]
    cn = [normalize_text(t) for _, t in chunks]
    t0 = time.perf_counter()
    scores = process.cdist(qn, cn, scorer=fuzz.partial_ratio, workers=workers, dtype=np.uint8)
    return time.perf_counter() - t0, scores


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunks", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--words", type=int, default=200)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threshold", type=float, default=0.85)
    ap.add_argument("--minhash-chunks", type=int, default=20000, help="subset for the MinHashLSH route")
    ap.add_argument("--brute-chunks", type=int, default=300, help="subset for brute-force rapidfuzz")
    ap.add_argument("--num-perm", type=int, default=128)
    ap.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "golden-bench"),
                    help="where the generated corpus is written (and reused)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    folder = Path(args.dir)
    print(f"load average at start: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores "
          "(other work on the machine slows every figure below)")
    t0 = time.perf_counter()
    corpus, queries_path, truth = generate(folder, args.chunks, args.queries, args.words, args.seed)
    print(f"corpus: {args.chunks:,} chunks of ~{args.words} words, {corpus.stat().st_size / 1e9:.2f} GB "
          f"at {corpus} ({time.perf_counter() - t0:.0f} s to prepare); {args.queries} queries, "
          f"{len(truth)} planted")
    queries = [(json.loads(line)["qid"], json.loads(line)["text"]) for line in open(queries_path, encoding="utf-8")]

    out = folder / "leaks.jsonl"
    g = run_golden(corpus, queries_path, out, args.workers, args.threshold)
    rate = args.chunks / g["wall"]
    records = [json.loads(line) for line in open(out, encoding="utf-8")]
    flagged = {r["qid"]: {m["chunk_id"] for m in r["matches"]} for r in records if r["status"] == "leak"}
    kinds = {}
    for qid, t in truth.items():
        hit = t["chunk"] in flagged.get(qid, ())
        n, k = kinds.get(t["kind"], (0, 0))
        kinds[t["kind"]] = (n + hit, k + 1)
    print(f"\ngolden leakcheck (end to end from JSONL, {args.workers} workers, all three modes):")
    print(f"  wall {g['wall']:.1f} s, {rate:,.0f} chunks/s, peak memory {g['peak'] / 2**20:,.0f} MiB (process tree)")
    print(f"  CPU time {g['cpu']:.1f} s over the process tree ({g['cpu'] / args.chunks * 1e6:.1f} us a chunk): "
          f"{args.chunks / (g['cpu'] / args.workers):,.0f} chunks/s on {args.workers} otherwise idle cores")
    print("  planted leaks found: " + ", ".join(f"{kind} {n}/{k}" for kind, (n, k) in sorted(kinds.items()))
          + f" (a near copy has its last word changed: found only when its score still reaches the threshold); "
          f"queries flagged: {len(flagged)}")

    sub = read_head(corpus, min(args.minhash_chunks, args.chunks))
    mh_time, mh_build, mh_found, mh_cpu = minhash_route(sub, queries, args.threshold, args.num_perm)
    mh_rate = len(sub) / mh_time
    in_sub = {qid: t for qid, t in truth.items() if int(t["chunk"][1:]) < len(sub)}
    mh_recall = sum(1 for qid, t in in_sub.items() if (qid, t["chunk"]) in mh_found)
    print(f"\ndatasketch MinHashLSH route (num_perm={args.num_perm}, threshold {args.threshold}, exact verification), "
          f"{len(sub):,} chunks, 1 process:")
    print(f"  {mh_time:.1f} s ({mh_build:.2f} s index), {mh_rate:,.0f} chunks/s, "
          f"CPU {mh_cpu / len(sub) * 1e6:.0f} us a chunk; "
          f"planted found {mh_recall}/{len(in_sub)} in the subset")

    bsub = sub[: args.brute_chunks]
    bf_time, _ = rapidfuzz_route(bsub, queries, args.workers)
    bf_rate = len(bsub) / bf_time
    print(f"\nbrute-force rapidfuzz (process.cdist, partial_ratio, {args.workers} workers), {len(bsub)} chunks x "
          f"{len(queries)} queries: {bf_time:.1f} s, {bf_rate:,.0f} chunks/s")

    mh_2 = mh_rate * args.workers
    print("\nratios (golden chunks/s over the other's):")
    print(f"  vs MinHashLSH on 1 core: {rate / mh_rate:,.1f}x; vs MinHashLSH ideally scaled to {args.workers} cores: "
          f"{rate / mh_2:,.1f}x (target >= 5x)")
    cpu_ratio = (mh_cpu / len(sub)) / (g["cpu"] / args.chunks)
    print(f"  CPU time a chunk, MinHashLSH over golden: {cpu_ratio:,.1f}x (less sensitive to other load)")
    print(f"  vs brute-force rapidfuzz on {args.workers} cores: {rate / bf_rate:,.0f}x")
    print(f"\nload average at end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"\ntargets: 1M chunks < 60 s: projected {1_000_000 / rate:.1f} s "
          f"[{'met' if 1_000_000 / rate < 60 else 'MISSED'}]; < 2 GB: {g['peak'] / 2**30:.2f} GB "
          f"[{'met' if g['peak'] < 2**31 else 'MISSED'}]; >= 5x MinHash (2 cores): "
          f"[{'met' if rate / mh_2 >= 5 else 'MISSED'}] (by CPU time: {cpu_ratio:.1f}x)")


if __name__ == "__main__":
    main()
