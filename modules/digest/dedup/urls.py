"""Canonical URLs for layer 2 (pure), on top of w3lib's canonicalize_url.

w3lib sorts the query and drops the fragment; we also fold the scheme to https, drop `www.`/`m.`/`amp.`
hosts, AMP path forms (`/amp`, `.amp`, `?amp`, `outputType=amp`), tracking parameters and trailing slashes,
so the same article reached through a newsletter, a mobile page or AMP compares equal.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from w3lib.url import canonicalize_url

TRACKING = re.compile(
    r"^(utm_\w+|fbclid|gclid|dclid|gbraid|wbraid|msclkid|mc_cid|mc_eid|_hsenc|_hsmi|mkt_tok|yclid|igshid|"
    r"ref|ref_src|ref_url|referrer|source|src|cmpid|camp|campaign|share|s_cid|ncid|ocid|sr_share|"
    r"smid|smtyp|cid|rss|feed|via|at_medium|at_campaign|ito|__twitter_impression|amp|outputtype)$",
    re.IGNORECASE,
)
_HOST_PREFIX = re.compile(r"^(?:www\d*|m|mobile|amp)\.")
_AMP_PATH = re.compile(r"(?:/amp/?|\.amp(?:\.html)?)$|^/amp(?=/)", re.IGNORECASE)


def canonical(url: str | None) -> str | None:
    """The comparable form of an article URL; None when it is not an absolute http(s) URL."""
    if not url:
        return None
    try:
        parts = urlsplit(canonicalize_url(url.strip(), keep_fragments=False))
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    host = _HOST_PREFIX.sub("", parts.hostname.lower())
    if parts.port and parts.port not in (80, 443):
        host = f"{host}:{parts.port}"
    path = _AMP_PATH.sub("", parts.path) or "/"
    if path != "/":
        path = path.rstrip("/")
    query = urlencode(
        sorted((k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if not TRACKING.match(k))
    )
    return urlunsplit(("https", host, path, query, ""))


def domain(url: str | None) -> str:
    """The registrable-looking host (without www./m.) used to look up a source's authority tier."""
    if not url:
        return ""
    try:
        host = urlsplit(url.strip()).hostname or ""
    except ValueError:
        return ""
    return _HOST_PREFIX.sub("", host.lower())
