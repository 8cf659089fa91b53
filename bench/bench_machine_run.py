"""golden machine run's own cost per request (golden must add under 5 ms a request at 32
concurrent requests), against a trivial OpenAI-compatible server that answers at once (a separate
process, raw asyncio, so its time is not golden's), and beside llama.cpp's server's own time per
request on the tests' tiny model (tests/support/tiny_gguf.py) when llama-cpp-python is installed.

golden's cost is the CPU time of the runner's process over the run (prompt rendering, the httpx
requests, parsing, the SQLite writes that commit labels as they arrive) divided by the requests;
the floor is a bare httpx loop over the same server with the same concurrency (what any client
pays), measured in the same run.

    PYTHONPATH=. python bench/bench_machine_run.py --pairs 2000 --concurrency 32
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SERVER = r'''
import asyncio, json, sys
BODY = json.dumps({"id": "x", "object": "chat.completion", "model": "instant",
                   "choices": [{"index": 0, "message": {"role": "assistant", "content": "{\"grade\": 1}"},
                                "finish_reason": "stop"}],
                   "usage": {"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105}}).encode()
MODELS = json.dumps({"object": "list", "data": [{"id": "instant", "object": "model", "owned_by": "bench"}]}).encode()
async def handle(reader, writer):
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            n = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    n = int(line.split(b":")[1])
            if n:
                await reader.readexactly(n)
            body = MODELS if head.startswith(b"GET") else BODY
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                         + str(len(body)).encode() + b"\r\n\r\n" + body)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()
async def main():
    srv = await asyncio.start_server(handle, "127.0.0.1", 0)
    print(srv.sockets[0].getsockname()[1], flush=True)
    await srv.serve_forever()
asyncio.run(main())
'''


def start_instant() -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-c", SERVER], stdout=subprocess.PIPE, text=True)
    port = int(proc.stdout.readline())
    return proc, f"http://127.0.0.1:{port}/v1"


def make_project(folder: Path, pairs: int):
    from tests.support.projects import pairs_project, sqlite_store

    cm = sqlite_store(folder)
    url, engine = cm.__enter__()
    per = 20
    pairs_project(engine, folder, [(f"q{i // per:04d}", f"d{i}") for i in range(pairs)])
    return cm, url, engine


def run_golden(engine, base_url: str, model: str, concurrency: int, machine: str, template_path=None,
               **kw) -> tuple[float, float, int]:
    from curation.machine.runner import WireSettings, run_machine
    from curation.store.engine import session as new_session

    wire = WireSettings(base_url=base_url, model=model, concurrency=concurrency, **kw)
    with new_session(engine) as s:
        c0, t0 = time.process_time(), time.perf_counter()
        r = run_machine(s, project="p", machine=machine, wire=wire, progress=False, handle_sigint=False,
                        template_path=template_path)
        cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    assert r.status == "finished" and not r.errors, (r.status, r.errors)
    return cpu, wall, r.labelled


def bare_httpx(base_url: str, n: int, concurrency: int) -> tuple[float, float]:
    import httpx

    body = {"model": "instant", "messages": [{"role": "user", "content": "x" * 600}], "max_tokens": 32}

    async def go():
        limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        async with httpx.AsyncClient(base_url=base_url + "/", limits=limits) as client:
            sem = asyncio.Semaphore(concurrency)

            async def one():
                async with sem:
                    r = await client.post("chat/completions", json=body)
                    json.loads(r.text)

            await asyncio.gather(*(one() for _ in range(n)))

    c0, t0 = time.process_time(), time.perf_counter()
    asyncio.run(go())
    return time.process_time() - c0, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--llama-pairs", type=int, default=200)
    args = ap.parse_args()
    print(f"load average before {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        cm, _url, engine = make_project(folder, args.pairs)
        proc, base = start_instant()
        try:
            bare_httpx(base, 200, args.concurrency)  # warm up
            bcpu, bwall = bare_httpx(base, args.pairs, args.concurrency)
            cpu, wall, n = run_golden(engine, base, "instant", args.concurrency, "bench")
        finally:
            proc.kill()
        print(f"instant server, {n} requests at concurrency {args.concurrency}:")
        print(f"  golden machine run: {1000 * cpu / n:.2f} ms CPU a request ({cpu:.2f} s CPU, {wall:.2f} s wall, "
              f"{n / wall:.0f} requests/s)")
        print(f"  bare httpx loop (floor): {1000 * bcpu / args.pairs:.2f} ms CPU a request ({bwall:.2f} s wall)")
        print(f"  golden's own on top of the floor: {1000 * (cpu / n - bcpu / args.pairs):.2f} ms a request")
        try:
            import llama_cpp  # noqa: F401
        except ImportError:
            print("llama-cpp-python not installed: no llama.cpp figure")
        else:
            from tests.support.llama_server import LlamaServer
            from tests.support.tiny_gguf import write_tiny_gguf

            sub = folder / "llama"
            sub.mkdir()
            cm2, _u2, engine2 = make_project(sub, args.llama_pairs)
            server = LlamaServer(write_tiny_gguf(sub / "tiny.gguf"), sub).start()
            short = sub / "short.j2"  # the tiny model's context is 512 tokens
            short.write_text("Q: {{ query }}\nD: {{ document }}\n{% for g in grades %}{{ g.grade }}={{ g.name }} "
                             "{% endfor %}\nAnswer {\"grade\": n}\n")
            try:
                import psutil

                sp = psutil.Process(server.proc.pid)
                s0 = sum(sp.cpu_times()[:2])
                cpu2, wall2, n2 = run_golden(engine2, server.base_url, "tiny-llama", args.concurrency, "bench",
                                             template_path=str(short), max_tokens=16, temperature=1.0,
                                             max_retries=0)
                scpu = sum(sp.cpu_times()[:2]) - s0
            finally:
                server.kill()
                cm2.__exit__(None, None, None)
            print(f"llama.cpp server (tiny model, one request at a time), {n2} requests at concurrency "
                  f"{args.concurrency}:")
            print(f"  server: {1000 * wall2 / n2:.2f} ms wall a request, {1000 * scpu / n2:.2f} ms of its CPU")
            print(f"  golden: {1000 * cpu2 / n2:.2f} ms CPU a request = {cpu2 / scpu:.2f}x the server's CPU")
        cm.__exit__(None, None, None)
    print(f"load average after {os.getloadavg()}")


if __name__ == "__main__":
    main()
