"""Benchmark: how fast `golden` starts.

Times `golden --help`, `golden --version` and `golden COMMAND --help` for every command and
subcommand, each as a fresh process run N times: best and median wall-clock time, and the CPU
time (user + system) the process used. Wall time moves with the machine's load (printed at start
and end); CPU time much less. Also prints the interpreter's own start-up (`python -c pass`) for
reference, and the largest entries of `python -X importtime -c "import curation.cli"`.

Bytecode: an installed golden has its modules compiled (pip writes the .pyc files at install), so
by default the runs use a bytecode cache in a temporary folder (PYTHONPYCACHEPREFIX), filled by
one warm-up run. With --no-bytecode-cache every run compiles the sources again, as on a machine
with PYTHONDONTWRITEBYTECODE set (this one) and a source checkout: that costs about 0.1 s more.

Target: every line under 0.25 s wall (best of N) on the 2-core development machine.

    python bench/bench_startup.py                     # the `golden` script on PATH, 7 runs each
    python bench/bench_startup.py --repeat 15 --check # exit 1 when a best time misses the target
    python bench/bench_startup.py --no-bytecode-cache # compile the sources in every run
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

TARGET = 0.25


def command_paths() -> list[list[str]]:
    """Every command and subcommand of `golden`, as argument lists."""
    import click

    from curation.cli import main

    def walk(group: click.Group, prefix: list[str]):
        for name, command in sorted(group.commands.items()):
            yield [*prefix, name]
            if isinstance(command, click.Group):
                yield from walk(command, [*prefix, name])

    return list(walk(main, []))


def run_once(argv: list[str], env: dict | None = None) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run of ``argv`` to completion, output discarded."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.decode()[-500:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(argv: list[str], repeat: int, env: dict | None = None) -> dict:
    run_once(argv, env)  # warm-up: the file system cache, and the bytecode cache when there is one
    runs = [run_once(argv, env) for _ in range(repeat)]
    walls, cpus = [w for w, _ in runs], [c for _, c in runs]
    return {"best": min(walls), "median": statistics.median(walls), "cpu_best": min(cpus),
            "cpu_median": statistics.median(cpus)}


def importtime_top(python: str, n: int, env: dict | None) -> list[tuple[int, int, str]]:
    """The ``n`` largest cumulative entries (microseconds) of ``-X importtime`` for the CLI."""
    done = subprocess.run([python, "-X", "importtime", "-c", "import curation.cli"], capture_output=True,
                          text=True, env=env, check=True)
    rows = []
    for line in done.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)", line)
        if m:
            rows.append((int(m.group(2)), int(m.group(1)), m.group(3)[1:] + m.group(4)))
    return sorted(rows, reverse=True)[:n]


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=7, help="Runs of each command (default 7).")
    ap.add_argument("--golden", default=shutil.which("golden"),
                    help="The golden script to run (default: the one on PATH; without one, python -c).")
    ap.add_argument("--top", type=int, default=12, help="importtime entries to print (default 12).")
    ap.add_argument("--check", action="store_true", help="Exit 1 when any best time is at or above the target.")
    ap.add_argument("--no-bytecode-cache", action="store_true",
                    help="Compile the sources in every run (PYTHONDONTWRITEBYTECODE, no cache).")
    args = ap.parse_args()
    env = dict(os.environ)
    if args.no_bytecode_cache:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env.pop("PYTHONPYCACHEPREFIX", None)
        bytecode = "none (sources compiled in every run)"
    else:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = tempfile.mkdtemp(prefix="golden-pycache-")
        bytecode = f"cached in {env['PYTHONPYCACHEPREFIX']}"

    golden = [args.golden] if args.golden else [sys.executable, "-c", "from curation.cli import main; main()"]
    cases = [["--help"], ["--version"]] + [[*path, "--help"] for path in command_paths()]
    print(f"load average at start: {load()} on {os.cpu_count()} cores; {args.repeat} runs each; "
          f"golden = {' '.join(golden)}; bytecode {bytecode}")

    base = measure([sys.executable, "-c", "pass"], args.repeat, env)
    click_only = measure([sys.executable, "-c", "import click"], args.repeat, env)
    width = max(len(" ".join(c)) for c in cases) + len("golden ")
    head = f"{'command':<{width}}  {'best':>7}  {'median':>7}  {'CPU best':>8}  {'CPU med':>8}"
    print(head)
    print("-" * len(head))
    for label, r in (("python -c pass", base), ("python -c 'import click'", click_only)):
        print(f"{label:<{width}}  {r['best']:>6.3f}s  {r['median']:>6.3f}s  {r['cpu_best']:>7.3f}s  "
              f"{r['cpu_median']:>7.3f}s")
    results = {}
    for case in cases:
        r = results[" ".join(case)] = measure([*golden, *case], args.repeat, env)
        flag = "" if r["best"] < TARGET else f"  >= {TARGET} s"
        print(f"{'golden ' + ' '.join(case):<{width}}  {r['best']:>6.3f}s  {r['median']:>6.3f}s  "
              f"{r['cpu_best']:>7.3f}s  {r['cpu_median']:>7.3f}s{flag}")
    bests = [r["best"] for r in results.values()]
    medians = [r["median"] for r in results.values()]
    cpus = [r["cpu_best"] for r in results.values()]
    missed = [c for c, r in results.items() if r["best"] >= TARGET]
    print(f"\n{len(results)} commands: best {min(bests):.3f}-{max(bests):.3f} s, medians "
          f"{min(medians):.3f}-{max(medians):.3f} s; target < {TARGET} s (best of {args.repeat}): "
          + ("met" if not missed else f"missed by {len(missed)}: {', '.join(missed)}"))
    print(f"CPU time (best): {min(cpus):.3f}-{max(cpus):.3f} s; "
          + ("every command under the target" if max(cpus) < TARGET else "some at or over the target")
          + " (wall above CPU is time spent waiting for a core)")
    print(f"load average at end: {load()}")

    print('\nlargest cumulative imports of `python -X importtime -c "import curation.cli"` (one run):')
    for cumulative, own, name in importtime_top(sys.executable, args.top, env):
        print(f"  {cumulative / 1000:>7.1f} ms  (own {own / 1000:>5.1f} ms)  {name}")
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
