"""Login attempts: a token bucket per client and one for everybody (on the clock given), so
password guessing is slow and a flood cannot keep argon2 (64 MiB, ~0.1 s of CPU per attempt) busy.

The argon2 verification itself runs in a thread behind a small semaphore (host.console.core); attempts
beyond it are refused at once instead of queueing. A client is its address (an IPv6 client its /64);
behind a trusted proxy, the forwarded one (host.web.network).
"""

from __future__ import annotations

import ipaddress
import time
from collections.abc import Callable

from host.net.ratelimit import TokenBucket

PER_CLIENT = (1 / 20, 5)  # (attempts per second, burst): 5 at once, then one every 20 s
OVERALL = (1.0, 20)  # every client together
CONCURRENT = 2  # argon2 verifications at once
MAX_CLIENTS = 10_000  # buckets kept; the oldest is forgotten first (the overall bucket still holds)


def client_key(address: str) -> str:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if ip.version == 6 and ip.ipv4_mapped is None:
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip.ipv4_mapped or ip) if ip.version == 6 else str(ip)


class LoginThrottle:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.overall = TokenBucket(OVERALL[0], OVERALL[1], clock())
        self.clients: dict[str, TokenBucket] = {}

    def admit(self, address: str) -> float:
        """0 when this attempt may go ahead (and it is counted); else seconds until one may."""
        now = self.clock()
        key = client_key(address)
        mine = self.clients.get(key) or TokenBucket(PER_CLIENT[0], PER_CLIENT[1], now)
        wait = max(mine.wait(now), self.overall.wait(now))
        if wait > 0:
            return wait
        mine.take(now)
        self.overall.take(now)
        self.clients.pop(key, None)
        self.clients[key] = mine  # the most recent last: the first is the one to forget
        while len(self.clients) > MAX_CLIENTS:
            del self.clients[next(iter(self.clients))]
        return 0.0
