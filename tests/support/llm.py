"""A small OpenAI-compatible HTTP server of the tests' own (the standard library's
``ThreadingHTTPServer`` on a free port): it answers ``GET /models`` and ``POST /chat/completions``
with a grade chosen by a function of the prompt, and injects the faults a real server cannot be made
to produce on demand: 429 with Retry-After, 500, a malformed body, a hang, a refusal, an answer that
is not the schema's. It records every request it receives, so a test can count what was asked."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeLLM:
    """``faults``: a queue of fault names taken one per chat request (``None`` = answer normally):
    "429" (Retry-After: ``retry_after``), "500", "malformed", "hang" (sleep ``hang`` s), "refusal",
    "prose" (an answer that is not JSON), "badgrade" (a grade off the scale). ``grade_of(prompt,
    body)`` gives the grade of a normal answer; ``owned_by`` is what ``GET /models`` says."""

    def __init__(self, grade_of: Callable[[str, dict], int] | None = None, *, owned_by: str = "openai",
                 served_model: str = "fake-served-1", retry_after: str = "1", hang: float = 5.0,
                 logprobs: bool = False, delay: float = 0.0):
        self.grade_of = grade_of or (lambda prompt, body: len(prompt) % 3)
        self.faults: deque = deque()
        self.by_prompt: dict[str, list] = {}  # prompt -> the faults to give that prompt first
        self.owned_by = owned_by
        self.served_model = served_model
        self.retry_after = retry_after
        self.hang = hang
        self.logprobs = logprobs
        self.delay = delay
        self.requests: list[dict] = []  # every chat request's body, in arrival order
        self.times: list[float] = []
        self.lock = threading.Lock()
        self.dead = False  # kill(): every open connection is dropped without an answer
        self.server: ThreadingHTTPServer | None = None
        self.port: int | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, port: int = 0) -> FakeLLM:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _send(self, code: int, body: bytes, headers: dict | None = None):
                if fake.dead:  # as a killed process: the connection closes, no answer
                    import socket

                    self.close_connection = True
                    try:
                        self.connection.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                    return
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, json.dumps({"object": "list", "data": [
                        {"id": fake.served_model, "object": "model", "owned_by": fake.owned_by}]}).encode())
                else:
                    self._send(404, b"{}")

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(n))
                prompt = body["messages"][-1]["content"]
                with fake.lock:
                    fake.requests.append(body)
                    fake.times.append(time.monotonic())
                    queue = fake.by_prompt.get(prompt)
                    if queue:
                        fault = queue.pop(0)
                    else:
                        fault = fake.faults.popleft() if fake.faults else None
                if fake.delay:
                    time.sleep(fake.delay)
                if fault == "429":
                    self._send(429, b'{"error": {"message": "slow down"}}', {"Retry-After": fake.retry_after})
                    return
                if fault == "500":
                    self._send(500, b'{"error": {"message": "boom"}}')
                    return
                if fault == "malformed":
                    self._send(200, b'{"choices": [ this is not json')
                    return
                if fault == "hang":
                    time.sleep(fake.hang)
                    try:
                        self._send(200, b"{}")
                    except OSError:
                        pass
                    return
                grade = fake.grade_of(prompt, body)
                content = json.dumps({"grade": grade})
                message = {"role": "assistant", "content": content}
                finish = "stop"
                if fault == "refusal":
                    message = {"role": "assistant", "content": None, "refusal": "I cannot help with that."}
                elif fault == "prose":
                    message["content"] = f"The grade is {grade}."
                elif fault == "badgrade":
                    message["content"] = json.dumps({"grade": 7})
                choice = {"index": 0, "message": message, "finish_reason": finish}
                if fake.logprobs and body.get("logprobs"):
                    choice["logprobs"] = {"content": [
                        {"token": '{"', "logprob": -0.01, "top_logprobs": []},
                        {"token": "grade", "logprob": -0.01, "top_logprobs": []},
                        {"token": '":', "logprob": -0.01, "top_logprobs": []},
                        {"token": f" {grade}", "logprob": -0.2, "top_logprobs": [
                            {"token": f" {grade}", "logprob": -0.2},
                            {"token": f" {(grade + 1) % 3}", "logprob": -1.8},
                            {"token": " x", "logprob": -3.0}]},
                        {"token": "}", "logprob": -0.01, "top_logprobs": []}]}
                data = {"id": "c1", "object": "chat.completion", "model": fake.served_model, "choices": [choice],
                        "usage": {"prompt_tokens": len(prompt) // 4, "completion_tokens": 5,
                                  "total_tokens": len(prompt) // 4 + 5}}
                self._send(200, json.dumps(data).encode())

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def kill(self) -> None:
        """Stop as a killed server does: no new connection is accepted, open ones get no answer."""
        self.dead = True
        self.stop()

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def __enter__(self) -> FakeLLM:
        return self.start() if self.server is None else self

    def __exit__(self, *exc) -> None:
        self.stop()
