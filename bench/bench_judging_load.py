"""Load test of the judging app: many judges claiming and submitting at once over HTTP.

Builds a fresh store (SQLite by default; ``--postgres`` for a fresh PostgreSQL database at
127.0.0.1:5432, or ``--db URL`` for an empty database of your own) with a project of
``--queries x --docs`` pooled pairs assigned to ``--judges`` judges (an overlap set first, the rest
split), preloads ``--preload`` judgments (default 100,000, bulk-inserted as the judges' own earlier
work), starts ``golden serve`` (``--server``: granian by default, or gunicorn; ``--workers``
processes) on a free loopback port, and runs the judges as asyncio tasks, each with its own
keep-alive HTTP connection, for ``--seconds``: each logs in, opens the judging page and then answers
as fast as it can with the htmx request the page sends (one POST = submit this pair + get the next),
resending one answer in 50 as a double click would. The judges share one process and one core
with as little work per request as an HTTP client can do, because they run on the same machine as
the server.

Prints judgments/second, the p50/p99 latency of submit-and-next, the server's CPU time a request
and each worker's connections and CPU time (on SQLite a request costs about a third more when the
judges' connections are spread over two workers than when one worker holds them all: every write
of another process drops a connection's page cache and memory map), then verifies from the database
that no judgment was lost (every answered token has exactly one row) or duplicated, and that no
non-overlap pair was judged by two judges. Exit status 1 when a check fails.

Target: p99 < 50 ms on SQLite with 100,000 judgments already in the store.

    python bench/bench_judging_load.py                 # SQLite
    python bench/bench_judging_load.py --postgres      # PostgreSQL at 127.0.0.1:5432
    python bench/bench_judging_load.py --postgres --servers 2   # two golden serve processes, one database

With ``--servers N`` the judges are spread over N `golden serve` processes on N ports against the
one database (judge i talks to server i mod N), and the checks add that no main pair has two
assignment rows or was shown to two judges. On PostgreSQL the CPU time of the database's backend
processes per request is printed too: PostgreSQL's own share of the work.
"""

from __future__ import annotations

import argparse
import asyncio
import html
import http.client
import json
import os
import random
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
from datetime import timedelta
from pathlib import Path

import numpy as np
from sqlalchemy import func, insert, update
from sqlmodel import select

from curation.cli.serve import SERVERS, default_threads, default_workers
from curation.judge import assignment
from curation.store import projects, users
from curation.store.engine import make_engine, scratch_database
from curation.store.engine import session as new_session
from curation.store.migrate import head_revision, upgrade
from curation.store.models import Assignment, Judgment, PairView, User, utcnow

PASSWORD = "bench-password-1"
PG_SERVER = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
TOKEN_RE = re.compile(r'name="token" value="([^"]+)"')
CSRF_RE = re.compile(r'name="csrf_token" value="([^"]+)"')


# ---------------------------------------------------------------------------------------------
# The store


def write_project_files(folder: Path, n_queries: int, docs: int, seed: int) -> dict[str, Path]:
    rng = random.Random(seed)
    words = "oven pasta boil salt garlic onion bake roast sauce grill pepper lemon butter flour rice".split()
    paths = {k: folder / f for k, f in
             (("queries", "queries.jsonl"), ("pool", "pool.jsonl"), ("corpus", "corpus.jsonl"),
              ("guidelines", "GUIDELINES.md"))}
    with open(paths["queries"], "w") as fq, open(paths["pool"], "w") as fp, open(paths["corpus"], "w") as fc:
        for q in range(n_queries):
            qid = f"q{q:05d}"
            fq.write(json.dumps({"qid": qid, "text": " ".join(rng.sample(words, 3)),
                                 "stratum": {"freq": "head" if q % 3 else "tail"},
                                 "traffic": 1.0, "users": 1, "stratum_share": 0.5, "weight": 1.0, "pii": []}) + "\n")
            for d in range(docs):
                docid = f"{qid}-d{d:02d}"
                text = " ".join(rng.choices(words, k=60))
                fc.write(json.dumps({"id": docid, "title": f"Recipe {docid}", "text": text}) + "\n")
                fp.write(json.dumps({"qid": qid, "docid": docid, "order": d, "systems": {"runA": d + 1}}) + "\n")
    paths["guidelines"].write_text("# Guidelines\n\nJudge each document against the query.\n")
    return paths


def build_store(url: str, folder: Path, args) -> tuple[int, list[str]]:
    engine = make_engine(url)
    upgrade(engine)
    t0 = time.perf_counter()
    paths = write_project_files(folder, args.queries, args.docs, args.seed)
    judges = [f"judge{i:02d}" for i in range(1, args.judges + 1)]
    with new_session(engine) as db:
        report = projects.create_project(
            db, "bench", queries_path=paths["queries"], pool_path=paths["pool"], corpus_paths=[paths["corpus"]],
            guidelines_path=paths["guidelines"], scale="0-2",
        )
        for name in judges:
            users.add_user(db, name, role="judge", password=PASSWORD)
        project = projects.get_project(db, "bench")
        assignment.assign(db, project, judges, overlap=args.overlap, seed=args.seed, hold=False)
        project_id = project.id
    print(f"store: {report.pairs:,} pairs in {args.queries:,} queries, {len(judges)} judges, overlap {args.overlap} "
          f"({time.perf_counter() - t0:.1f} s)")
    t0 = time.perf_counter()
    preloaded = preload(engine, project_id, judges, args.preload)
    print(f"store: {preloaded:,} judgments preloaded ({time.perf_counter() - t0:.1f} s)")
    engine.dispose()
    return project_id, judges


def cached_store(url: str, folder: Path, args) -> tuple[int, list[str]]:
    """:func:`build_store`, or with ``--store-cache FILE`` on SQLite a copy of the store built
    before with the same shape (saved to FILE on the first run, beside a note of its shape): the
    minute of building it is saved when a bench is run again and again."""
    cache = getattr(args, "store_cache", None)
    if not cache or not url.startswith("sqlite:///"):
        return build_store(url, folder, args)
    import shutil

    cache, target = Path(cache), Path(url.removeprefix("sqlite:///"))
    shape = {k: getattr(args, k) for k in ("queries", "docs", "judges", "overlap", "seed", "preload")}
    shape["times"] = "spread"  # the preloaded judgments' times (see preload): a cache from before is built again
    shape["schema"] = head_revision()  # a store of an older schema is built again, not migrated
    note = cache.with_name(cache.name + ".json")
    if cache.exists() and note.exists() and json.loads(note.read_text())["shape"] == shape:
        saved = json.loads(note.read_text())
        shutil.copyfile(cache, target)
        print(f"store: a copy of {cache} ({shape})")
        return saved["project_id"], saved["judges"]
    project_id, judges = build_store(url, folder, args)
    shutil.copyfile(target, cache)
    note.write_text(json.dumps({"shape": shape, "project_id": project_id, "judges": judges}))
    return project_id, judges


def preload(engine, project_id: int, judges: list[str], n: int) -> int:
    """Bulk-insert ``n`` judgments as the judges' own earlier work: the LAST main pairs of each
    judge's queue are marked done (Assignment.done_at) with one judgment each, exactly the state
    ``curation.judge.judging.submit`` leaves, so the live run starts at the overlap pairs and goes on.
    Their times are a judge's: one answer about every 20 s, back from now, each shown 3 to 60 s
    before it was answered, to the microsecond (not one instant for all: a report that converts
    each distinct time once would then convert two, and look faster than it is on a real store)."""
    rng = random.Random(1)
    now = utcnow()

    def times(k: int) -> tuple:
        answered = now - timedelta(seconds=20 * k + rng.random() * 10)
        return answered - timedelta(seconds=rng.uniform(3, 60)), answered

    with new_session(engine) as db:
        ids = dict(db.exec(select(User.name, User.id).where(User.name.in_(judges))).all())
        per_judge = -(-n // len(judges))
        left = n
        for name in judges:
            take = min(per_judge, left)
            rows = db.exec(
                select(Assignment.id, Assignment.pair_id).where(
                    Assignment.judge_id == ids[name], Assignment.project_id == project_id, Assignment.kind == "main")
                .order_by(Assignment.position.desc()).limit(take)
            ).all()
            if len(rows) < take:
                raise SystemExit(f"preload: {name} has only {len(rows)} main pairs; use more --queries")
            for start in range(0, len(rows), 5000):
                chunk = rows[start:start + 5000]
                db.execute(update(Assignment).where(Assignment.id.in_([a for a, _ in chunk])).values(done_at=now))
                db.execute(insert(Judgment), [
                    dict(project_id=project_id, pair_id=pair, judge_id=ids[name], grade=rng.randrange(3), unsure=False,
                         skipped=False, source="human", shown_at=shown, answered_at=answered,
                         client_token=f"preload-{ids[name]}-{pair}")
                    for k, (_, pair) in enumerate(chunk, start=start) for shown, answered in [times(len(rows) - k)]
                ])
            left -= len(rows)
        db.commit()
    if engine.dialect.name == "postgresql":
        # As after any bulk load (PostgreSQL's docs advise it; autovacuum would get there within
        # minutes): fresh planner statistics, and a visibility map, without which every count of a
        # judge's queue reads the table instead of the index. On SQLite, golden serve refreshes
        # its statistics at start. Only the tables that hold rows: statistics saying "empty" for a
        # table the run fills (the shown pairs) would make each connection's cached plans scan it
        # whole on every request until autovacuum analyzes it again (a minute or more, longer than
        # the run), which is not a store's steady state (bench/README.md, "PostgreSQL: plans made
        # on an empty table, and an answer in one round trip").
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            tables = conn.exec_driver_sql(
                "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE c.relkind = 'r' AND n.nspname = current_schema() "
                "AND pg_relation_size(c.oid) > 0 ORDER BY c.relname").scalars().all()
            conn.exec_driver_sql("VACUUM ANALYZE " + ", ".join(f'"{t}"' for t in tables))
    return n - left


# ---------------------------------------------------------------------------------------------
# The server and the judges


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process (Linux /proc), to report server CPU per request: a
    figure that, unlike latency, does not grow when other work shares the machine."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def child_pids(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (Linux /proc): `golden serve`'s worker processes."""
    kids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # the process ended meanwhile
            continue
        if int(fields[1]) == pid:
            kids.append(int(stat.parent.name))
    return kids


def server_cpu_seconds(pid: int) -> float | None:
    """CPU time of `golden serve` and its worker processes (every thread of each: granian's Rust ones too)."""
    total = cpu_seconds(pid)
    if total is None:
        return None
    return total + sum(cpu_seconds(kid) or 0.0 for kid in child_pids(pid))


def established_by_process(pids: list[int], ports: set[int]) -> dict[int, int]:
    """How many established TCP connections to ``ports`` each process of ``pids`` holds (Linux
    /proc: the socket inodes among its open files, matched against /proc/net/tcp and tcp6). With
    one listening socket shared by the workers, the worker whose event loop wakes first accepts a
    connection, and a kept-alive connection stays with it: this says how the judges were spread."""
    inodes: dict[str, int] = {}
    for path in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(path).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "01" and int(fields[1].rsplit(":", 1)[1], 16) in ports:  # 01: ESTABLISHED
                inodes[f"socket:[{fields[9]}]"] = 1
    counts = {}
    for pid in pids:
        n = 0
        for fd in Path(f"/proc/{pid}/fd").glob("*"):
            try:
                n += inodes.get(os.readlink(fd), 0)
            except OSError:  # closed meanwhile
                continue
        counts[pid] = n
    return counts


def start_server(url: str, port: int, workers: int, threads: int, log: Path, server: str = SERVERS[0]
                 ) -> subprocess.Popen:
    """Start `golden serve`; its stderr goes to ``log`` (a pipe nobody reads could fill up and
    block the server)."""
    # GOLDEN_MIN_ANSWER_MS=0: the simulated judges answer as soon as a pair is shown
    env = {**os.environ, "GOLDEN_SECRET_KEY": "bench-secret", "GOLDEN_MIN_ANSWER_MS": "0"}
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-c", "from curation.cli import main; main()", "serve", "--db", url,
             "--port", str(port), "--workers", str(workers), "--threads", str(threads), "--server", server],
            stdout=subprocess.DEVNULL, stderr=err, env=env,
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"golden serve exited: {log.read_text()}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/login")
            if conn.getresponse().status == 200:
                conn.close()
                return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("golden serve did not come up within 60 s")


class Client:
    """One judge's browser tab: a keep-alive HTTP/1.1 connection with a cookie jar. A minimal
    asyncio client (requests with Content-Length, responses with Content-Length), so that the
    load generator spends little of the CPU the server runs on."""

    def __init__(self, port: int):
        self.port = port
        self.cookies: dict[str, str] = {}
        self.reader = self.writer = None

    async def request(self, method: str, path: str, form: dict | None = None, htmx: bool = False) -> tuple[int, str]:
        reused = self.writer is not None
        try:
            return await self._request(method, path, form, htmx)
        except (asyncio.IncompleteReadError, ConnectionError):
            # A kept-alive connection the server closed while idle (its keep-alive timeout): as a
            # browser does, send the request again once on a new connection.
            if not reused:
                raise
            self.writer.close()
            self.reader = self.writer = None
            return await self._request(method, path, form, htmx)

    async def _request(self, method: str, path: str, form: dict | None, htmx: bool) -> tuple[int, str]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        body = urllib.parse.urlencode(form).encode() if form is not None else b""
        head = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{self.port}", f"Content-Length: {len(body)}"]
        if self.cookies:
            head.append("Cookie: " + "; ".join(f"{k}={v}" for k, v in self.cookies.items()))
        if form is not None:
            head.append("Content-Type: application/x-www-form-urlencoded")
        if htmx:
            head.append("HX-Request: true")
        self.writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        status_line, *lines = (await self.reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        length, close = 0, False
        for line in lines:
            name, _, value = line.partition(":")
            name, value = name.strip().lower(), value.strip()
            if name == "content-length":
                length = int(value)
            elif name == "set-cookie":
                key, _, rest = value.partition("=")
                self.cookies[key] = rest.split(";", 1)[0]
            elif name == "connection" and value.lower() == "close":
                close = True
            elif name == "transfer-encoding":
                raise RuntimeError(f"unexpected Transfer-Encoding: {value}")
        data = await self.reader.readexactly(length)
        if close:
            self.writer.close()
            self.reader = self.writer = None
        return int(status_line.split()[1]), data.decode()


class Judge:
    def __init__(self, name: str, port: int, project_id: int, seed: int, think: float = 0.0):
        self.name_, self.port, self.project_id = name, port, project_id
        self.think = think
        self.rng = random.Random(seed)
        self.latencies: list[float] = []
        self.answered: list[str] = []  # tokens answered with a 200 (first submit only)
        self.double_submits = 0
        self.errors: list[str] = []
        self.ran_out = False
        self.client = Client(port)
        self.path = f"/projects/{project_id}/judge"
        self.body = self.csrf = ""

    async def log_in(self):
        client = self.client
        _, page = await client.request("GET", "/login")
        status, _ = await client.request("POST", "/login", {"username": self.name_, "password": PASSWORD,
                                                            "csrf_token": CSRF_RE.search(page).group(1)})
        if status != 302:
            raise RuntimeError(f"{self.name_}: login answered {status}")
        _, self.body = await client.request("GET", self.path, htmx=True)
        self.csrf = html.unescape(CSRF_RE.search(self.body).group(1))

    async def run(self, deadline: float):
        try:
            await self._run(deadline)
        except Exception as exc:  # any failure is reported in the summary
            self.errors.append(f"{type(exc).__name__}: {exc}")

    async def _run(self, deadline: float):
        client, path, body = self.client, self.path, self.body
        n = 0
        while time.perf_counter() < deadline:
            match = TOKEN_RE.search(body)
            if not match:
                self.ran_out = True
                break
            token = html.unescape(match.group(1))
            if self.think:
                await asyncio.sleep(self.think * self.rng.uniform(0.5, 1.5))
            form = {"csrf_token": self.csrf, "token": token, "grade": str(self.rng.randrange(3))}
            t0 = time.perf_counter()
            status, body = await client.request("POST", path, form, htmx=True)
            self.latencies.append(time.perf_counter() - t0)
            if status != 200:
                self.errors.append(f"submit answered {status}: {body[:200]}")
                status, body = await client.request("GET", path, htmx=True)
                continue
            self.answered.append(token)
            n += 1
            if n % 50 == 0:  # a double click: the same answer again must record nothing
                status, body = await client.request("POST", path, form, htmx=True)
                self.double_submits += 1
                if status != 200:
                    self.errors.append(f"double submit answered {status}")


def database_cpu_seconds(url: str) -> float | None:
    """CPU time of the PostgreSQL processes working for ``url``'s database, to say how much of a
    request is PostgreSQL's own work: its backends (their process title names the database) and the
    server's background processes (WAL writer, checkpointer, background writer, autovacuum
    launcher), which write what the backends committed; not other databases' backends. None for
    SQLite (in-process)."""
    if not url.startswith("postgres"):
        return None
    name = url.rsplit("/", 1)[1].split("?")[0].encode()
    total = 0.0
    for cmd in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            title = cmd.read_bytes()
            background = not any(mark in title for mark in (b"(", b"[local]", b"autovacuum worker"))
            if title.startswith(b"postgres:") and (b" " + name + b" " in title or background):
                total += cpu_seconds(int(cmd.parent.name)) or 0.0
        except OSError:  # the process ended meanwhile
            continue
    return total


async def run_judges(judges: list[Judge], seconds: float, server_pids: list[int], url: str):
    """Log every judge in, then let them all answer for ``seconds``; returns the elapsed time, the
    servers' CPU seconds meanwhile, this (client) process's CPU seconds meanwhile, and PostgreSQL's
    (None on SQLite)."""
    await asyncio.gather(*(j.log_in() for j in judges))
    workers = [kid for pid in server_pids for kid in child_pids(pid)]

    def servers_cpu():
        got = [server_cpu_seconds(pid) for pid in server_pids]
        return None if None in got else sum(got)

    cpu0, own0, db0 = servers_cpu(), time.process_time(), database_cpu_seconds(url)
    each0 = {pid: cpu_seconds(pid) or 0.0 for pid in workers}
    t0 = time.perf_counter()
    await asyncio.gather(*(j.run(t0 + seconds) for j in judges))
    elapsed = time.perf_counter() - t0
    cpu1, own1, db1 = servers_cpu(), time.process_time(), database_cpu_seconds(url)
    connections = established_by_process(workers, {j.port for j in judges})
    spread = [(connections[pid], (cpu_seconds(pid) or 0.0) - each0[pid]) for pid in workers]
    server_cpu = None if cpu0 is None or cpu1 is None else cpu1 - cpu0
    db_cpu = None if db0 is None or db1 is None else db1 - db0
    return elapsed, server_cpu, own1 - own0, db_cpu, spread


# ---------------------------------------------------------------------------------------------
# Verification


def verify(url: str, project_id: int, judges: list[Judge], preloaded: int) -> list[str]:
    problems = []
    engine = make_engine(url)
    with new_session(engine) as db:
        ids = dict(db.exec(select(User.name, User.id)).all())
        rows = db.exec(select(Judgment.judge_id, Judgment.client_token, Judgment.pair_id)
                       .where(Judgment.project_id == project_id)).all()
        live = [(j, t, p) for j, t, p in rows if not (t or "").startswith("preload-")]
        expected = {(ids[j.name_], t) for j in judges for t in j.answered}
        recorded = [(j, t) for j, t, _ in live]
        if len(rows) - len(live) != preloaded:
            problems.append(f"preloaded judgments: {len(rows) - len(live)} in the store, {preloaded} loaded")
        lost = expected - set(recorded)
        extra = set(recorded) - expected
        dup = len(recorded) - len(set(recorded))
        if lost:
            problems.append(f"{len(lost)} answered judgments are missing from the store")
        if extra:
            problems.append(f"{len(extra)} judgments in the store that no judge answered")
        if dup:
            problems.append(f"{dup} duplicated judgments (same judge and token)")
        per_pair = {}
        for j, _, p in live:
            per_pair.setdefault((j, p), 0)
            per_pair[(j, p)] += 1
        twice_same = sum(1 for c in per_pair.values() if c > 1)
        if twice_same:
            problems.append(f"{twice_same} pairs judged twice by the same judge in the run (no judge went back)")
        overlap = set(db.exec(select(Assignment.pair_id).where(Assignment.project_id == project_id,
                                                               Assignment.kind == "overlap")).all())
        judged_by = db.exec(
            select(Judgment.pair_id, func.count(func.distinct(Judgment.judge_id)))
            .where(Judgment.project_id == project_id).group_by(Judgment.pair_id)
            .having(func.count(func.distinct(Judgment.judge_id)) > 1)
        ).all()
        shared_main = [p for p, _ in judged_by if p not in overlap]
        if shared_main:
            problems.append(f"{len(shared_main)} non-overlap pairs judged by more than one judge")
        # No main pair held by two judges: one assignment row per main pair, and every showing of a
        # main pair (its one-time tokens) went to one judge.
        held_twice = db.exec(
            select(Assignment.pair_id).where(Assignment.project_id == project_id, Assignment.kind == "main")
            .group_by(Assignment.pair_id).having(func.count() > 1)
        ).all()
        shown_to_two = [p for p, n in db.exec(
            select(PairView.pair_id, func.count(func.distinct(PairView.judge_id)))
            .where(PairView.project_id == project_id).group_by(PairView.pair_id)
            .having(func.count(func.distinct(PairView.judge_id)) > 1)
        ).all() if p not in overlap]
        if held_twice or shown_to_two:
            problems.append(f"{len(held_twice)} main pairs assigned to two judges, {len(shown_to_two)} shown to two")
        print(f"verify: {len(rows):,} judgments in the store = {preloaded:,} preloaded + {len(live):,} from the run; "
              f"{sum(len(j.answered) for j in judges):,} answered, {sum(j.double_submits for j in judges):,} double "
              f"submits recorded nothing; {len(judged_by):,} pairs judged by several judges, all in the overlap set")
    engine.dispose()
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--db", help="an EMPTY database URL to use (default: a fresh SQLite file)")
    where.add_argument("--postgres", action="store_true", help=f"a fresh PostgreSQL database on {PG_SERVER}")
    parser.add_argument("--judges", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--preload", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=5000)
    parser.add_argument("--docs", type=int, default=40, help="pooled documents per query")
    parser.add_argument("--overlap", type=int, default=100)
    parser.add_argument("--workers", type=int, default=None,
                        help="golden serve --workers (worker processes; default as golden serve's)")
    parser.add_argument("--server", choices=SERVERS, default=SERVERS[0],
                        help=f"golden serve --server (the WSGI server; default {SERVERS[0]})")
    parser.add_argument("--threads", type=int, default=None,
                        help="golden serve --threads (threads per worker; default as golden serve's)")
    parser.add_argument("--servers", type=int, default=1,
                        help="golden serve processes on as many ports, one store; judge i talks to server i %% N")
    parser.add_argument("--think", type=float, default=0.0,
                        help="seconds each judge pauses between answers (default 0: as fast as it can)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--store-cache", metavar="FILE",
                        help="SQLite: copy the store from FILE when it holds one of this shape, else build it and "
                             "save a copy there (saves the minute of building it in repeated runs)")
    args = parser.parse_args(argv)
    args.workers = args.workers or default_workers(args.server)

    tmp = tempfile.TemporaryDirectory(prefix="golden-bench-")
    folder = Path(tmp.name)
    drop = None
    if args.postgres:
        url, drop = scratch_database(PG_SERVER, "golden_bench_")
    else:
        url = args.db or f"sqlite:///{folder / 'golden.db'}"
    backend = "PostgreSQL" if url.startswith("postgres") else "SQLite"
    args.threads = args.threads or default_threads(args.server, backend.lower())
    try:
        project_id, names = cached_store(url, folder, args)
        ports = [free_port() for _ in range(args.servers)]
        servers = []
        try:
            for k, port in enumerate(ports):  # one store, N `golden serve` processes, as behind a proxy
                log = folder / f"serve{k}.log"
                servers.append(start_server(url, port, args.workers, args.threads, log, args.server))
            judges = [Judge(name, ports[i % len(ports)], project_id, seed=args.seed + i, think=args.think)
                      for i, name in enumerate(names)]
            elapsed, server_cpu, client_cpu, db_cpu, spread = asyncio.run(
                run_judges(judges, args.seconds, [s.pid for s in servers], url))
        finally:
            for server in servers:
                server.terminate()
            for server in servers:
                server.wait(timeout=30)
        lat = np.array([x for j in judges for x in j.latencies]) * 1000
        answered = sum(len(j.answered) for j in judges)
        errors = [e for j in judges for e in j.errors]
        pace = f", pausing ~{args.think:g} s between answers" if args.think else ", as fast as they can"
        print(f"\n{backend}: {len(judges)} judges{pace}, for {elapsed:.1f} s against "
              + (f"{args.servers} golden serve processes on {args.servers} ports, each " if args.servers > 1
                 else "golden serve ")
              + f"({args.server}, {args.workers} worker{'s' if args.workers > 1 else ''}"
              + (f" x {args.threads} threads)" if args.threads > 1 else ")"))
        print(f"  judgments/second        {answered / elapsed:8.1f}   ({answered:,} judgments)")
        if elapsed < args.seconds - 0.5:
            print(f"  (the judges ran out of pairs after {elapsed:.1f} s: the figures cover that time; raise --queries "
                  "to measure the whole --seconds)")
        if len(lat):
            print(f"  submit-and-next p50     {np.percentile(lat, 50):8.1f} ms")
            print(f"  submit-and-next p99     {np.percentile(lat, 99):8.1f} ms   (max {lat.max():.1f} ms)")
        requests = len(lat) + sum(j.double_submits for j in judges)
        if server_cpu is not None and requests:
            print(f"  server CPU per request  {server_cpu / requests * 1000:8.1f} ms   "
                  f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
        if spread:
            print(f"  per worker              {' | '.join(f'{n} connections {cpu:.1f} s CPU' for n, cpu in spread)}"
                  "   (the judges' kept-alive connections stay with the worker that accepted them)")
        if db_cpu is not None and requests:
            print(f"  PostgreSQL CPU per req. {db_cpu / requests * 1000:8.1f} ms   (its backend processes for this "
                  "database: PostgreSQL's own work)")
        if requests:
            print(f"  client CPU per request  {client_cpu / requests * 1000:8.1f} ms   (this process: the 20 judges)")
        print(f"  errors                  {len(errors):8d}" + (f"   first: {errors[0]}" if errors else ""))
        if any(j.ran_out for j in judges):
            print("  note: some judges finished their queue before the time was up (use more --queries)")
        problems = verify(url, project_id, judges, args.preload)
        for p in problems:
            print("FAIL:", p)
        ok = not problems and not errors
        if backend == "SQLite" and len(lat):
            target = np.percentile(lat, 99) < 50
            print(f"target p99 < 50 ms on SQLite: {'met' if target else 'MISSED'}")
        print("checks: " + ("no judgment lost or duplicated; no non-overlap pair judged twice" if ok else "FAILED"))
        return 0 if ok else 1
    finally:
        if drop:
            drop()
        tmp.cleanup()


if __name__ == "__main__":
    sys.exit(main())
