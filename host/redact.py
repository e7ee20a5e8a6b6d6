"""Service URLs as they may be printed or logged (pure): credentials hidden.

`postgresql://user:secret@host/db` keeps the user; a NATS URL's userinfo is a token or a user and
password, so all of it goes; `password=`/`token=` query parameters too. A comma-separated server list
(NATS) is redacted server by server.
"""

from __future__ import annotations

import re

HIDDEN = "***"
_SECRET_PARAM = re.compile(r"([?&](?:password|sslpassword|token|pass)=)[^&#]*", re.IGNORECASE)
_USER_ONLY_IS_SECRET = ("nats", "tls", "ws", "wss")  # nats://TOKEN@host


def redact(url: str) -> str:
    if "," in url and "://" in url:
        return ",".join(redact(part) for part in url.split(","))
    url = _SECRET_PARAM.sub(lambda m: m[1] + HIDDEN, url)
    if "://" not in url:
        return url
    scheme, rest = url.split("://", 1)
    authority, sep, tail = rest.partition("/")
    if "@" not in authority:
        return url
    creds, host = authority.rsplit("@", 1)
    if ":" in creds:
        creds = f"{creds.split(':', 1)[0]}:{HIDDEN}"
    elif scheme.lower() in _USER_ONLY_IS_SECRET:
        creds = HIDDEN
    return f"{scheme}://{creds}@{host}{sep}{tail}"
