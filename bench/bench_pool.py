"""Pooling benchmark: golden vs trectools' TrecPoolMaker on the 17 TREC 2003 Robust runs, depth 20.

    /work/venv/bin/python bench/bench_pool.py [--depth 20] [--repeat 3] [--mode both] [RUNS_DIR]

Both sides start from the gzipped run files, so each time includes reading and parsing them
(golden: ``read_runs`` + ``make_pool``; trectools: ``make_pool_from_files``). Two modes:

* ``in-process``: each is timed ``--repeat`` times in this process, imports paid beforehand;
* ``whole-process``: each run is a fresh ``python`` process, as a user runs it: ``golden pool
  RUNS --depth 20 --out pool.jsonl`` (the ``golden`` script, this checkout's code first on
  ``PYTHONPATH``) against a
  tiny script that imports trectools, builds the same top-20 pool and writes it out. Imports,
  start-up and writing are included; the two alternate, ``--repeat`` times each. golden's modules
  are compiled to bytecode first (in place, into ``__pycache__``), as ``pip install`` compiles an
  installed package's, trectools' among them.

The best time of each side is compared, wall clock (golden reads the files in parallel threads)
and CPU time (in-process: summed over threads; whole-process: the children's user + system time
from ``getrusage``), the fairer figure when other work shares the machine. The load average is
printed with the figures.

``--instructions`` (whole-process mode) also counts the instructions each whole process executes,
one run of each side on the same inputs: a figure the machine's load does not move. It uses ``perf
stat -e instructions`` where the hardware counter is available, else valgrind's cachegrind (no
cache simulation; about 50x slower, so the trectools side takes a few minutes). Under valgrind
the CPU features it does not emulate (AVX-512) are hidden, so ISA-L and pyarrow take their AVX2
paths, on both sides alike.

The two pools are then compared pair by pair. They can differ only where a run has tied scores
straddling rank ``depth``: golden breaks ties as trec_eval does (docid descending), trectools
sorts docid ascending. So the script also builds both expected pools independently with pandas
(one per tie-break) and checks that each tool matches its own exactly, and that the pools are
identical once the tie-dependent documents are set aside.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's code, in-process as in the child processes
DEFAULT_RUNS = Path(os.environ.get("GOLDEN_SHARED_DATA", ROOT.parent / "shared" / "data")) / "robust03" / "runs"


def golden_pool(files, depth):
    from curation.formats.runs import read_runs
    from curation.pool.pooling import make_pool

    pool = make_pool(read_runs(files, depth=depth), depth=depth, seed=0)
    return {(p.qid, p.docid) for p in pool.pairs}


def trectools_pool(files, depth):
    from trectools import TrecPoolMaker

    pool = TrecPoolMaker().make_pool_from_files(files, strategy="topX", topX=depth)
    return {(str(q), str(d)) for q, docs in pool.pool.items() for d in docs}


def pandas_pools(files, depth):
    """Independent expected pools: top-``depth`` by score, ties by docid descending / ascending."""
    desc, asc = set(), set()
    for f in files:
        df = pd.read_csv(f, sep=r"\s+", header=None, names=["q", "q0", "d", "r", "s", "t"], dtype={"q": str, "d": str})
        for target, doc_ascending in ((desc, False), (asc, True)):
            top = df.sort_values(["q", "s", "d"], ascending=[True, False, doc_ascending]).groupby("q").head(depth)
            target.update(zip(top["q"], top["d"]))
    return desc, asc


# The trectools side of the whole-process mode: import, pool, write one "qid docid" line a pair.
TRECTOOLS_SCRIPT = """
import sys
from trectools import TrecPoolMaker

depth, out, files = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
pool = TrecPoolMaker().make_pool_from_files(files, strategy="topX", topX=depth)
with open(out, "w") as fh:
    for qid, docs in pool.pool.items():
        for docid in docs:
            fh.write(f"{qid} {docid}\\n")
"""


# golden's pooling code path alone in a fresh process (what `golden pool` costs once the CLI
# imports only the command it runs): read, pool, write pool.jsonl and pool.meta.json.
GOLDEN_PATH_SCRIPT = """
import sys
from curation.formats.runs import read_runs
from curation.pool.pooling import make_pool, write_pool

depth, out, files = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
write_pool(make_pool(read_runs(files, depth=depth), depth=depth, seed=0), out)
"""


def run_child(cmd, env=None):
    """Run ``cmd`` in a fresh process: (wall s, CPU s of the child: user + system)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        sys.exit(f"{' '.join(cmd[:4])} ... failed ({done.returncode}):\n{done.stderr}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def count_instructions(cmd, env) -> tuple[int, str]:
    """Instructions executed by the whole process ``cmd`` (all its threads), and the counter used:
    perf's hardware counter when the machine has one, else valgrind's cachegrind."""
    if shutil.which("perf"):
        done = subprocess.run(["perf", "stat", "-x,", "-e", "instructions:u", *cmd], env=env, capture_output=True,
                              text=True)
        found = re.search(r"^(\d+),[^,]*,instructions", done.stderr, re.M)
        if done.returncode == 0 and found:
            return int(found.group(1)), "perf stat -e instructions:u"
    if not shutil.which("valgrind"):
        sys.exit("--instructions needs perf (with a hardware instruction counter) or valgrind")
    done = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
                           *cmd], env=env, capture_output=True, text=True)
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if done.returncode or not found:
        sys.exit(f"valgrind {' '.join(cmd[:3])} ... failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return int(found.group(1).replace(",", "")), "valgrind --tool=cachegrind"


def whole_process(files, depth, repeat, instructions=False):
    """Best wall and CPU time of each side as a fresh process, the pairs each wrote, and (with
    ``instructions``) the instructions of one whole process of each side."""
    from curation.formats.pool_file import read_pool

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    with tempfile.TemporaryDirectory() as tmp:
        # golden's modules compiled once, in place (curation/**/__pycache__, which git ignores), as
        # installing a package compiles them (trectools' are): a checkout run with
        # PYTHONDONTWRITEBYTECODE set would compile its sources again in every process. Not into a
        # PYTHONPYCACHEPREFIX: Python then reads every module's bytecode from that folder only, so the
        # standard library, numpy, pyarrow, pandas and trectools were compiled again in every process
        # of both sides (golden pool 0.9 s of CPU more at load 6).
        env.pop("PYTHONPYCACHEPREFIX", None)
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "curation")], env=env, check=True,
                       capture_output=True)
        script, path_script = Path(tmp) / "trectools_pool.py", Path(tmp) / "golden_path.py"
        script.write_text(TRECTOOLS_SCRIPT, encoding="utf-8")
        path_script.write_text(GOLDEN_PATH_SCRIPT, encoding="utf-8")
        g_out, t_out, p_out = Path(tmp) / "pool.jsonl", Path(tmp) / "trectools.txt", Path(tmp) / "path.jsonl"
        golden = Path(sys.executable).with_name("golden")  # the installed script, as users run it
        launch = [str(golden)] if golden.exists() else [sys.executable, "-c", "from curation.cli import main; main()"]
        golden_cmd = [*launch, "pool", *files, "--depth", str(depth), "--out", str(g_out)]
        trectools_cmd = [sys.executable, str(script), str(depth), str(t_out), *files]
        path_cmd = [sys.executable, str(path_script), str(depth), str(p_out), *files]
        g, t, p = [], [], []
        for _ in range(repeat):  # alternate, so the sides see the same load
            g.append(run_child(golden_cmd, env))
            t.append(run_child(trectools_cmd, env))
            p.append(run_child(path_cmd, env))
        counts = None
        if instructions:
            g_count, counter = count_instructions(golden_cmd, env)
            t_count, _ = count_instructions(trectools_cmd, env)
            counts = (g_count, t_count, counter)
        g_pairs = {(e.qid, e.docid) for e in read_pool(g_out)}
        if {(e.qid, e.docid) for e in read_pool(p_out)} != g_pairs:
            sys.exit("MISMATCH: the pooling code path and golden pool wrote different pools")
        t_pairs = {tuple(line.split()) for line in t_out.read_text(encoding="utf-8").splitlines()}
    return g, t, p, g_pairs, t_pairs, counts


def best_time(fn, repeat):
    """Best wall-clock time, all wall times, best CPU time (all threads of the process), result."""
    times, cpu, result = [], [], None
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        result = fn()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return min(times), times, min(cpu), result


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs_dir", nargs="?", default=str(DEFAULT_RUNS))
    ap.add_argument("--depth", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--mode", choices=("in-process", "whole-process", "both"), default="both")
    ap.add_argument("--instructions", action="store_true",
                    help="whole-process mode: also count each side's instructions (perf, else valgrind: minutes)")
    args = ap.parse_args(argv)
    files = sorted(glob.glob(os.path.join(args.runs_dir, "*.gz")))
    if not files:
        sys.exit(f"no runs in {args.runs_dir}")
    import gzip

    lines = sum(gzip.open(f).read().count(b"\n") for f in files)
    print(f"{len(files)} runs, {lines:,} lines, depth {args.depth}, {os.cpu_count()} cores")
    checks = []
    if args.mode in ("in-process", "both"):
        # Import both libraries before timing, so neither pays its import cost inside the timer.
        import trectools  # noqa: F401 - imported for the import cost, paid before timing

        import curation.pool.pooling  # noqa: F401 - imported for the import cost, paid before timing

        load = os.getloadavg()[0]
        g_best, g_times, g_cpu, g_pairs = best_time(lambda: golden_pool(files, args.depth), args.repeat)
        t_best, t_times, t_cpu, t_pairs = best_time(lambda: trectools_pool(files, args.depth), args.repeat)
        print(f"in-process, best of {args.repeat}:")
        print(f"  golden    pool: {g_best:6.3f} s ({', '.join(f'{t:.3f}' for t in g_times)})  {len(g_pairs):,} pairs")
        print(f"  trectools pool: {t_best:6.3f} s ({', '.join(f'{t:.3f}' for t in t_times)})  {len(t_pairs):,} pairs")
        print(f"  ratio trectools / golden: {t_best / g_best:.1f}x wall clock; "
              f"CPU time {t_cpu:.3f} s / {g_cpu:.3f} s = {t_cpu / g_cpu:.1f}x")
        print(f"  load average: {load:.1f} before, {os.getloadavg()[0]:.1f} after, on {os.cpu_count()} cores")
        checks.append(("in-process", g_pairs, t_pairs))
    if args.mode in ("whole-process", "both"):
        load = os.getloadavg()[0]
        g, t, p, g_pairs, t_pairs, counts = whole_process(files, args.depth, args.repeat, args.instructions)
        g_wall, t_wall, p_wall = min(w for w, _ in g), min(w for w, _ in t), min(w for w, _ in p)
        g_cpu, t_cpu, p_cpu = min(c for _, c in g), min(c for _, c in t), min(c for _, c in p)
        print(f"whole process (fresh python each, imports and writing included), best of {args.repeat}:")
        print(f"  golden pool     : {g_wall:6.3f} s wall, {g_cpu:.3f} s CPU ({', '.join(f'{w:.3f}' for w, _ in g)})"
              f"  {len(g_pairs):,} pairs")
        print(f"  trectools script: {t_wall:6.3f} s wall, {t_cpu:.3f} s CPU ({', '.join(f'{w:.3f}' for w, _ in t)})"
              f"  {len(t_pairs):,} pairs")
        print(f"  ratio trectools / golden: {t_wall / g_wall:.1f}x wall clock "
              f"(target: >= 15x quiet, >= 12x at load 2); "
              f"CPU time {t_cpu / g_cpu:.1f}x")
        print(f"  golden's pooling code path alone (no CLI): {p_wall:.3f} s wall, {p_cpu:.3f} s CPU "
              f"({', '.join(f'{w:.3f}' for w, _ in p)}): trectools / it = {t_wall / p_wall:.1f}x wall clock, "
              f"{t_cpu / p_cpu:.1f}x CPU time")
        if counts:
            g_count, t_count, counter = counts
            print(f"  instructions, one whole process each ({counter}): golden pool {g_count / 1e9:.3f}G, "
                  f"trectools script {t_count / 1e9:.3f}G: ratio {t_count / g_count:.1f}x")
        print(f"  load average: {load:.1f} before, {os.getloadavg()[0]:.1f} after, on {os.cpu_count()} cores")
        checks.append(("whole-process", g_pairs, t_pairs))

    expect_desc, expect_asc = pandas_pools(files, args.depth)
    tie_dependent = expect_desc ^ expect_asc
    bad = False
    for mode, g_pairs, t_pairs in checks:
        ok_golden = g_pairs == expect_desc
        ok_trectools = t_pairs == expect_asc
        same_outside_ties = (g_pairs - tie_dependent) == (t_pairs - tie_dependent)
        print(f"{mode}: golden    == pandas top-{args.depth} (ties by docid descending, trec_eval): {ok_golden}")
        print(f"{mode}: trectools == pandas top-{args.depth} (ties by docid ascending):            {ok_trectools}")
        print(
            f"{mode}: pairs that depend on the tie-break at rank {args.depth}: {len(tie_dependent):,}; "
            f"all other pairs identical: {same_outside_ties} ({len(g_pairs & t_pairs):,} shared, "
            f"{len(g_pairs - t_pairs):,} only golden, {len(t_pairs - g_pairs):,} only trectools)"
        )
        bad = bad or not (ok_golden and ok_trectools and same_outside_ties)
    if bad:
        sys.exit("MISMATCH")

if __name__ == "__main__":
    main()
