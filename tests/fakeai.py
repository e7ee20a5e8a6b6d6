"""An OpenAI-compatible stand-in server on a free loopback port: `/v1/embeddings` and `/v1/chat/completions`.

The code under test talks real HTTP to it through the `openai` package, so retries, timeouts and reply
validation are exercised for real. Usage::

    with FakeAI() as ai:                        # or FakeAI().start() / .stop(); fixture `fake_ai` in tests/rss
        ai.base_url                             # "http://127.0.0.1:PORT/v1"
        ai.fail(500)                            # every request answers HTTP 500 until ai.clear()
        ai.fail(429, times=2, retry_after=0)    # the next two requests answer 429 (Retry-After: 0)
        ai.fail(200, body=b"<html>oops")        # a 200 whose body is not JSON (a malformed reply)
        ai.fail(delay_s=5, times=1)             # the next request answers normally but 5 s late
        ai.refuse("poison")                     # embeddings: 400 when any input contains "poison"
        ai.chat_replies.append('{"a": 1}')      # the next chat completion's content (FIFO)
        ai.chat_reply = lambda messages: "{}"   # content when the queue is empty (default: "{}")
        ai.requests                             # every request: (path, parsed JSON body or None)
        ai.embedded_inputs()                    # every embeddings input string, in order

Embeddings are deterministic hashed bags of words (`fake_embedding`): texts sharing words are near in
cosine distance, so semantic-search tests have real geometry. Size: the request's `dimensions`, else
`FakeAI(dims=64)`. `fail(...)` and `refuse(...)` may be restricted to one endpoint with
`path="/v1/embeddings"` or `path="/v1/chat/completions"`.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.feedserver import BackgroundHTTPServer

_WORD = re.compile(r"\w+")


def fake_embedding(text: str, dims: int = 64) -> list[float]:
    """A unit vector: each lower-cased word adds ±1 at a position chosen by its hash."""
    vector = [0.0] * dims
    for word in _WORD.findall(text.lower()):
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        vector[int.from_bytes(digest[:4], "little") % dims] += 1.0 if digest[4] & 1 else -1.0
    if not any(vector):  # no words (or they cancelled out): still a valid unit vector
        vector[0] = 1.0
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector]


@dataclass(slots=True)
class _Fault:
    status: int
    body: bytes | None
    delay_s: float
    retry_after: float | None
    times: int | None  # None: until cleared
    path: str | None


class FakeAI(BackgroundHTTPServer):
    def __init__(self, *, dims: int = 64) -> None:
        self.dims = dims
        self.requests: list[tuple[str, Any]] = []
        self.chat_replies: list[str] = []
        self.chat_reply: Callable[[list[dict[str, Any]]], str] = lambda _messages: "{}"
        self._faults: list[_Fault] = []
        self._refused: list[tuple[str, str | None]] = []
        self._lock = threading.Lock()
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        httpd.daemon_threads = True
        self._serve_in_thread(httpd, "fakeai")

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    # -- programming ----------------------------------------------------------------------------
    def fail(
        self,
        status: int = 500,
        *,
        body: bytes | None = None,
        delay_s: float = 0.0,
        retry_after: float | None = None,
        times: int | None = None,
        path: str | None = None,
    ) -> None:
        """Queue a fault; `status` 200 with `body` sends that body, 200 without body only delays."""
        with self._lock:
            self._faults.append(_Fault(status, body, delay_s, retry_after, times, path))

    def refuse(self, word: str, *, path: str | None = "/v1/embeddings") -> None:
        with self._lock:
            self._refused.append((word, path))

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()
            self._refused.clear()

    def embedded_inputs(self) -> list[str]:
        with self._lock:
            return [t for p, b in self.requests if p == "/v1/embeddings" and b for t in _inputs(b)]

    # -- serving --------------------------------------------------------------------------------
    def _next_fault(self, path: str) -> _Fault | None:
        with self._lock:
            for fault in self._faults:
                if fault.path in (None, path):
                    if fault.times is not None:
                        fault.times -= 1
                        if fault.times <= 0:
                            self._faults.remove(fault)
                    return fault
        return None

    def _refuses(self, path: str, texts: Sequence[str]) -> str | None:
        with self._lock:
            return next(
                (w for w, p in self._refused if p in (None, path) and any(w in t for t in texts)), None
            )

    def _answer(self, path: str, body: Any) -> tuple[int, dict[str, Any]]:
        if path == "/v1/embeddings":
            texts = _inputs(body)
            word = self._refuses(path, texts)
            if word is not None:
                return 400, _error(f"input contains {word!r}", "invalid_request_error")
            dims = int(body.get("dimensions") or self.dims)
            data = [
                {"object": "embedding", "index": i, "embedding": fake_embedding(t, dims)}
                for i, t in enumerate(texts)
            ]
            usage = {"prompt_tokens": len(texts), "total_tokens": len(texts)}
            return 200, {"object": "list", "data": data, "model": body.get("model"), "usage": usage}
        if path == "/v1/chat/completions":
            with self._lock:
                content = self.chat_replies.pop(0) if self.chat_replies else None
            if content is None:
                content = self.chat_reply(body.get("messages", []))
            return 200, {
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
        return 404, _error(f"no route {path}", "not_found")


def _inputs(body: Any) -> list[str]:
    raw = body.get("input", [])
    return [raw] if isinstance(raw, str) else [str(t) for t in raw]


def _error(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": None}}


def _handler_for(owner: FakeAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body: Any = json.loads(raw)
            except ValueError:
                body = None
            path = self.path.split("?", 1)[0]
            with owner._lock:
                owner.requests.append((path, body))
            fault = owner._next_fault(path)
            if fault is not None and fault.delay_s:
                time.sleep(fault.delay_s)
            if fault is not None and (fault.status != 200 or fault.body is not None):
                payload = (
                    fault.body if fault.body is not None else json.dumps(_error("injected", "fault")).encode()
                )
                headers = {} if fault.retry_after is None else {"Retry-After": f"{fault.retry_after:g}"}
                self._send(fault.status, payload, headers)
                return
            if not isinstance(body, dict):
                self._send(
                    400, json.dumps(_error("body is not a JSON object", "invalid_request_error")).encode()
                )
                return
            status, reply = owner._answer(path, body)
            self._send(status, json.dumps(reply).encode())

        def _send(self, status: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                pass

    return Handler
