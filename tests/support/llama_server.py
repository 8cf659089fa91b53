"""llama.cpp's OpenAI-compatible server (``python -m llama_cpp.server``, from llama-cpp-python)
serving the tiny model of :mod:`tests.support.tiny_gguf`, started and stopped by the tests: on a free
port, waited for (``GET /v1/models``), killed with SIGKILL and started again on the same port. Each
start logs to its own file, whose access lines count the requests the server answered."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LlamaServer:
    def __init__(self, model: Path, folder: Path, *, alias: str = "tiny-llama"):
        self.model, self.folder, self.alias = model, folder, alias
        self.port = free_port()
        self.proc: subprocess.Popen | None = None
        self.logs: list[Path] = []

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, timeout: float = 60.0) -> LlamaServer:
        log = self.folder / f"llama-{len(self.logs)}.log"
        self.logs.append(log)
        fh = open(log, "wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(self.model), "--host", "127.0.0.1",
             "--port", str(self.port), "--n_ctx", "512", "--logits_all", "True", "--interrupt_requests", "False",
             "--model_alias", self.alias, "--n_threads", "1"],
            stdout=fh, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        fh.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"llama server exited with {self.proc.returncode}: {log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=1) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.1)
        self.kill()
        raise RuntimeError(f"llama server not ready in {timeout} s: {log.read_text()[-2000:]}")

    def kill(self) -> None:
        """SIGKILL, as a crash: no answer to what is in flight."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)
        self.proc = None

    def answered(self) -> int:
        """Chat requests answered with 200, over every start (from the access logs)."""
        return sum(p.read_text(errors="replace").count('"POST /v1/chat/completions HTTP/1.1" 200') for p in self.logs)
