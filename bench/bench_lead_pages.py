"""CPU time of each lead page on a large project, optionally against another revision of golden in
the same run.

    python bench/bench_lead_pages.py --store-cache /tmp/store5k.db
    python bench/bench_lead_pages.py --store-cache /tmp/store5k.db --baseline 90ed17d

Builds the store of ``bench_judging_load.py`` (by default 5,000 queries x 40 documents = 200,000
pairs, 20 judges, 100,000 judgments preloaded; ``--store-cache`` as there), adds a lead, and in a
fresh process of the code under test logs the lead in with Flask's test client and asks for each
lead page: once to warm up, then ``--repeat`` times, keeping the least CPU time (the process's
``time.process_time``, SQLite included: it runs in the process) and the wall time of that request.
Each timed request starts after a ``gc.collect()``: without it, the page after a page that made much
garbage paid for the collector's full passes over it (the leak check page, 0.32 s alone, took
0.44-0.62 s after the progress page, 0.15 s of it in the collector), and the ratio against another
revision moved by the order of the pages rather than by their code.

With ``--baseline REV`` the same is measured on a git worktree of REV (a temporary one, removed
afterwards) on a copy of the same store, the two processes alternating ``--rounds`` times; the
ratio is the least CPU time of REV over this tree's. When REV's schema is older, its copy of the
store is first migrated down to REV's head revision (by this tree's migrations). The load average
is printed before and after.

A lead page is a lead's hot path, and a worker of ``golden serve`` that renders one answers no
judge meanwhile (one thread a worker on SQLite), so it should stay well under a second.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import bench_judging_load as load  # noqa: E402  (the store of the load test)

LEAD, PASSWORD = "lena-bench", "lead-bench-password-1"
PAGES = ("", "/progress", "/adjudicate", "/unsure", "/machines", "/leaks", "/comparisons")

# Run in a fresh interpreter whose sys.path starts at the tree under test: its judging_app, its templates.
MEASURE = r"""
import gc, json, re, sys, time
from judging_app import create_app
url, project_id, repeat, user, password = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
app = create_app({"DATABASE_URL": url})
client = app.test_client()
token = re.search(r'name="csrf_token" value="([^"]+)"', client.get("/login").get_data(as_text=True)).group(1)
assert client.post("/login", data={"username": user, "password": password, "csrf_token": token}).status_code == 302
out = {}
for page in json.loads(sys.argv[6]):
    path = f"/lead/{project_id}{page}"
    status = client.get(path).status_code
    best = None
    for _ in range(repeat):
        gc.collect()  # each page pays for its own garbage, not for the page before it (see the docstring)
        cpu, wall = time.process_time(), time.perf_counter()
        client.get(path)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        best = (cpu, wall) if best is None or cpu < best[0] else best
    out[page or "/"] = [status, *best]
print(json.dumps(out))
"""


def schema_of(worktree: Path, url: str) -> None:
    """Bring the store at ``url`` (a copy of this tree's) to the schema of the code in ``worktree``:
    down to its head revision when that is older (this tree's migrations know the way down), so
    that the baseline runs on the store it was written for rather than refusing a newer one."""
    from alembic import command
    from alembic.script import ScriptDirectory

    from curation.store.migrate import alembic_config, head_revision

    cfg = alembic_config()
    cfg.set_main_option("script_location", str(worktree / "migrations"))
    theirs = ScriptDirectory.from_config(cfg).get_current_head()
    if theirs != head_revision():
        command.downgrade(alembic_config(url), theirs)
        print(f"baseline store: downgraded to its schema, revision {theirs}")


def measure(tree: Path, url: str, project_id: int, repeat: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    done = subprocess.run([sys.executable, "-c", MEASURE, url, str(project_id), str(repeat), LEAD, PASSWORD,
                           json.dumps(PAGES)], cwd=tree, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"measuring {tree} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=5000)
    ap.add_argument("--docs", type=int, default=40)
    ap.add_argument("--judges", type=int, default=20)
    ap.add_argument("--overlap", type=int, default=100)
    ap.add_argument("--preload", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3, help="requests of each page after the warm-up (least CPU kept)")
    ap.add_argument("--rounds", type=int, default=2, help="with --baseline: alternations of the two trees")
    ap.add_argument("--baseline", metavar="REV", help="a git revision to measure in the same run")
    ap.add_argument("--store-cache", metavar="FILE", help="as bench_judging_load.py's")
    args = ap.parse_args(argv)

    from curation.store import users
    from curation.store.engine import make_engine
    from curation.store.engine import session as new_session

    with tempfile.TemporaryDirectory(prefix="golden-bench-lead-") as tmp:
        tmp = Path(tmp)
        url = f"sqlite:///{tmp}/golden.db"
        project_id, _ = load.cached_store(url, tmp, args)
        with new_session(make_engine(url)) as db:
            users.add_user(db, LEAD, role="lead", password=PASSWORD)
            db.commit()
        trees = [("this tree", ROOT, url)]
        if args.baseline:
            worktree = tmp / "baseline"
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(worktree), args.baseline],
                           check=True, capture_output=True)
            with sqlite3.connect(tmp / "golden.db") as src, sqlite3.connect(tmp / "baseline.db") as dst:
                src.backup(dst)  # the WAL's pages too (a file copy would miss the lead just added)
            trees.append((args.baseline, worktree, f"sqlite:///{tmp}/baseline.db"))
            schema_of(worktree, trees[-1][2])
        try:
            print(f"{args.queries * args.docs:,} pairs, {args.preload:,} judgments; load average "
                  f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
            best: dict[str, dict] = {name: {} for name, _, _ in trees}
            for _ in range(args.rounds if args.baseline else 1):
                for name, tree, tree_url in trees:
                    for page, (status, cpu, wall) in measure(tree, tree_url, project_id, args.repeat).items():
                        if status != 200:
                            raise SystemExit(f"{name}: {page} answered {status}")
                        old = best[name].get(page)
                        best[name][page] = (cpu, wall) if old is None or cpu < old[0] else old
        finally:
            if args.baseline:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(worktree)],
                               check=False, capture_output=True)
        head = f"{'page':<22}{'CPU ms':>10}{'wall ms':>10}"
        if args.baseline:
            head += f"{args.baseline + ' CPU ms':>24}{'ratio':>8}"
        print(head)
        for page in best["this tree"]:
            cpu, wall = best["this tree"][page]
            line = f"/lead/N{page if page != '/' else '':<16}{1000 * cpu:>10.1f}{1000 * wall:>10.1f}"
            if args.baseline:
                base = best[args.baseline][page][0]
                line += f"{1000 * base:>24.1f}{base / cpu:>7.1f}x"
            print(line)
        print(f"load average {os.getloadavg()[0]:.1f} after")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
