"""X-Hub-Signature: `method=hexdigest`, an HMAC of the raw body with the subscription's hub.secret (pure)."""

from __future__ import annotations

import hmac

ALGORITHMS = frozenset({"sha1", "sha256", "sha384", "sha512"})  # the methods WebSub §8 allows


def sign(secret: str, body: bytes, method: str = "sha256") -> str:
    """The header value a hub sends for `body` (tests and benchmarks play the hub with it)."""
    return f"{method}={hmac.new(secret.encode(), body, method).hexdigest()}"


def valid(header: str | None, secret: str, body: bytes) -> bool:
    """True only for a well-formed signature of an allowed method that matches (constant-time compare)."""
    if not header:
        return False
    method, sep, digest = header.strip().partition("=")
    method = method.strip().lower()
    if not sep or method not in ALGORITHMS:
        return False
    expected = hmac.new(secret.encode(), body, method).hexdigest()
    return hmac.compare_digest(expected, digest.strip().lower())
