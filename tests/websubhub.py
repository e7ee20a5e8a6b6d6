"""A small real WebSub hub on a free loopback port, for tests and benchmarks that need one.

It accepts subscribe/unsubscribe requests (form POST), answers 202 (or `answer`), then verifies the
intent at the callback from another thread (GET with hub.challenge) as WebSub §5.3 describes, unless
`verify=False`. `publish()` pushes content to every verified subscriber of a topic with an
X-Hub-Signature made from the subscriber's secret (or none, or a wrong one).

Usage::

    with Hub() as hub:
        hub.url                            # http://127.0.0.1:PORT/ — the hub URL feeds advertise
        hub.requests                       # every HubRequest received, in order
        hub.subscribers                    # (callback, topic) → Subscriber, once verified
        hub.verify_intent(callback, "subscribe", topic)   # (status, echoed challenge?)
        hub.publish(topic, body)           # [(status, reply body)] per subscriber
"""

from __future__ import annotations

import hmac
import http.client
import secrets
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal
from urllib.parse import parse_qs, urlencode, urlsplit

from tests.feedserver import BackgroundHTTPServer

Signing = Literal["valid", "none", "wrong"]


@dataclass(frozen=True)
class HubRequest:
    mode: str
    topic: str
    callback: str
    secret: str | None
    lease_seconds: int | None


@dataclass
class Subscriber:
    callback: str
    topic: str
    secret: str | None
    lease_seconds: int


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HubHTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def do_POST(self) -> None:
        hub = self.server.hub
        length = int(self.headers.get("content-length") or 0)
        form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
        request = HubRequest(
            form.get("hub.mode", ""),
            form.get("hub.topic", ""),
            form.get("hub.callback", ""),
            form.get("hub.secret"),
            int(form["hub.lease_seconds"]) if "hub.lease_seconds" in form else None,
        )
        with hub.lock:
            hub.requests.append(request)
        status = hub.answer if request.mode in ("subscribe", "unsubscribe") else 400
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()
        self.wfile.flush()
        if 200 <= status < 300 and hub.verify:
            threading.Thread(target=hub.confirm, args=(request,), daemon=True).start()


class _HubHTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, hub: Hub) -> None:
        self.hub = hub
        super().__init__(("127.0.0.1", 0), _Handler)


class Hub(BackgroundHTTPServer):
    def __init__(self, *, answer: int = 202, verify: bool = True, lease_seconds: int | None = None) -> None:
        self.answer = answer
        self.verify = verify
        self.lease_seconds = lease_seconds  # granted lease (None: what the subscriber asked, else 3600)
        self.requests: list[HubRequest] = []
        self.subscribers: dict[tuple[str, str], Subscriber] = {}
        self.verified = threading.Condition()
        self.verifications = 0  # completed verification exchanges (confirmed or not)
        self.lock = threading.Lock()
        httpd = _HubHTTPServer(self)
        self._serve_in_thread(httpd, "websub-hub")
        self.url = f"http://127.0.0.1:{httpd.server_address[1]}/"

    def confirm(self, request: HubRequest) -> None:
        """Verify the subscriber's intent; on success record (or drop) the subscription."""
        lease = self.lease_seconds or request.lease_seconds or 3600
        status, echoed = self.verify_intent(request.callback, request.mode, request.topic, lease)
        with self.verified:
            if status == 200 and echoed:
                key = (request.callback, request.topic)
                if request.mode == "subscribe":
                    self.subscribers[key] = Subscriber(request.callback, request.topic, request.secret, lease)
                else:
                    self.subscribers.pop(key, None)
            self.verifications += 1
            self.verified.notify_all()

    def verify_intent(
        self, callback: str, mode: str, topic: str, lease_seconds: int = 3600
    ) -> tuple[int, bool]:
        """One verification GET: (status, whether the body echoed our challenge exactly). Mode "denied"
        tells the subscriber the hub refused it (WebSub §5.2): no challenge, a reason."""
        challenge = secrets.token_urlsafe(16)
        query = {"hub.mode": mode, "hub.topic": topic, "hub.challenge": challenge}
        if mode == "subscribe":
            query["hub.lease_seconds"] = str(lease_seconds)
        if mode == "denied":
            query = {"hub.mode": mode, "hub.topic": topic, "hub.reason": "not allowed here"}
        status, body = request("GET", callback, query=query)
        return status, body == challenge.encode()

    def publish(
        self,
        topic: str,
        body: bytes,
        *,
        signing: Signing = "valid",
        method: str = "sha256",
        content_type: str = "application/atom+xml",
    ) -> list[tuple[int, bytes]]:
        """Distribute `body` to the topic's verified subscribers (WebSub §7)."""
        with self.lock:
            targets = [s for s in self.subscribers.values() if s.topic == topic]
        results = []
        for sub in targets:
            headers = {
                "Content-Type": content_type,
                "Link": f'<{self.url}>; rel="hub", <{topic}>; rel="self"',
            }
            if signing != "none":
                key = (sub.secret or "") + ("x" if signing == "wrong" else "")
                headers["X-Hub-Signature"] = f"{method}={hmac.new(key.encode(), body, method).hexdigest()}"
            results.append(request("POST", sub.callback, body=body, headers=headers))
        return results


def request(
    method: str,
    url: str,
    *,
    query: dict[str, str] | None = None,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, bytes]:
    parts = urlsplit(url)
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    if query:
        path += ("&" if "?" in path else "?") + urlencode(query)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=30)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()
