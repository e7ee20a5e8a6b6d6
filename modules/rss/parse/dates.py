"""Feed date strings → UTC-aware datetimes.

Hand-written regex paths cover RFC 822, RFC 3339 and the broken forms seen in the wild (date only,
"September 7, 2002", `date(1)` output, unix timestamps) in microseconds; dateparser (milliseconds per
call, many languages) only sees what they reject. Results must be deterministic - they feed the content
hash - so relative expressions ("yesterday") and partial dates are refused rather than resolved
against the clock.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from functools import lru_cache

_MONTHS = {
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
    "jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12,
    # Localized pubDates are common (de, fr, es, pt, it, nl); prefixes that are unambiguous:
    "mär": 3, "mai": 5, "okt": 10, "dez": 12,  # de
    "janv": 1, "fév": 2, "févr": 2, "avr": 4, "juin": 6, "juil": 7, "aoû": 8, "déc": 12,  # fr
    "ene": 1, "abr": 4, "ago": 8, "set": 9, "dic": 12,  # es, it, pt
    "fev": 2, "out": 10,  # pt
    "gen": 1, "mag": 5, "giu": 6, "lug": 7, "ott": 10,  # it
    "mrt": 3, "mei": 5,  # nl
}  # fmt: skip
_ZONES = {  # hours east of UTC; RFC 822 names plus the abbreviations feeds actually use
    "ut": 0, "utc": 0, "gmt": 0, "z": 0, "wet": 0,
    "est": -5, "edt": -4, "cst": -6, "cdt": -5, "mst": -7, "mdt": -6, "pst": -8, "pdt": -7,
    "akst": -9, "akdt": -8, "hst": -10, "ast": -4, "adt": -3, "nst": -3.5, "ndt": -2.5,
    "bst": 1, "ist": 5.5, "cet": 1, "cest": 2, "met": 1, "mest": 2, "eet": 2, "eest": 3, "west": 1,
    "msk": 3, "jst": 9, "kst": 9, "hkt": 8, "sgt": 8, "awst": 8,
    "acst": 9.5, "acdt": 10.5, "aest": 10, "aedt": 11, "nzst": 12, "nzdt": 13,
}  # fmt: skip
# "+00:0": an offset whose minutes lost a digit (seen in dc:date); read as tens of minutes ("+05:3" is +05:30)
_TZ = r"(?P<tz>[Zz]|[A-Za-z]{2,5}|[+-]\d{1,2}(?::?\d{2}|:\d)?)"
_TIME = (
    r"(?P<hh>\d{1,2}):(?P<mi>\d{2})(?::(?P<ss>\d{2})(?:[.,](?P<frac>\d+))?)?\s*(?P<ampm>[AaPp]\.?[Mm]\.?)?"
)

# "Sat, 07 Sep 2002 09:42:31 GMT", "7 Sep 02 9:42 +0200", "07 Sep 2002", "Wed, 19 jan 2026 00:00:00 GMT"
_RFC822 = re.compile(
    rf"^(?:[^\W\d_]{{2,}}\.?,?\s*)?(?P<d>\d{{1,2}})[\s-]+(?P<mon>[^\W\d_]{{3,}})\.?,?[\s-]+(?P<y>\d{{2,4}})"
    rf"(?:[\sT,]+{_TIME})?\s*(?:{_TZ}(?:\s*\([^)]*\)|\s+[A-Za-z]{{2,5}})?)?$"  # "+0000 (UTC)", "+0000 EST"
)
# RFC 3339 / ISO 8601 / W3C-DTF: "2002-09-07T09:42:31Z", "2002-09-07 09:42:31.5 +0000", "2002/9/7"
_ISO = re.compile(
    r"^(?P<y>\d{4})(?P<sep>[-/])(?P<mo>\d{1,2})(?P=sep)(?P<d>\d{1,2})"
    r"(?:(?:[Tt]|\s+)(?P<hh>\d{1,2}):(?P<mi>\d{2})(?::(?P<ss>\d{1,2})(?:[.,](?P<frac>\d+))?)?)?"
    rf"\s*{_TZ}?$"
)
# "September 7, 2002", "Sep 7th, 2002 at 10:00 AM", "Sat, September 07, 2002 09:42:31 GMT"
_MONTH_FIRST = re.compile(
    rf"^(?:[A-Za-z]{{2,}}\.?,?\s+)?(?P<mon>[^\W\d_]{{3,}})\.?\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<y>\d{{4}})"
    rf"(?:[\s,]+(?:at\s+)?{_TIME})?\s*{_TZ}?$"
)
# date(1) / asctime: "Sat Sep 07 09:42:31 UTC 2002", "Sat Sep  7 09:42:31 2002"
_ASCTIME = re.compile(
    rf"^[A-Za-z]{{3}},?\s+(?P<mon>[^\W\d_]{{3,}})\s+(?P<d>\d{{1,2}})\s+{_TIME}\s+(?:{_TZ}\s+)?(?P<y>\d{{4}})$"
)
_TIMESTAMP = re.compile(r"^\d{9,10}(?:\d{3})?$")  # unix seconds (1973..2286) or milliseconds
_HAS_YEAR = re.compile(r"(?<!\d)(?:19|20)\d\d(?!\d)")
# Languages feeds localize dates in; an explicit list keeps each dateparser call at ~1-3 ms instead of
# trying every locale it knows (~30 ms, and seconds on first use).
_DATEPARSER_LANGUAGES = [
    "en",
    "de",
    "fr",
    "es",
    "pt",
    "it",
    "nl",
    "ru",
    "uk",
    "pl",
    "cs",
    "sv",
    "tr",
    "zh",
    "ja",
]
_DATEPARSER_SETTINGS = {
    "TIMEZONE": "UTC",
    "TO_TIMEZONE": "UTC",
    "RETURN_AS_TIMEZONE_AWARE": True,
    "PARSERS": ["custom-formats", "absolute-time"],  # no "relative-time": it reads the clock
    "REQUIRE_PARTS": ["day", "month", "year"],  # missing parts would be filled from today
    "RELATIVE_BASE": datetime(2000, 1, 1),
}


@lru_cache(maxsize=256)
def _offset(tz: str | None) -> timedelta | None:
    """UTC offset of a zone token; None when the token is not a zone we know (cached: feeds use a few)."""
    if not tz:
        return timedelta(0)  # no zone: UTC is the only deterministic reading
    if tz[0] in "+-":
        if ":" in tz:
            hh, mm = tz[1:].split(":")
            hours, minutes = int(hh), int(mm.ljust(2, "0"))
        else:
            digits = tz[1:]
            hours, minutes = (int(digits), 0) if len(digits) <= 2 else (int(digits[:-2]), int(digits[-2:]))
        if hours > 14 or minutes > 59:
            return None
        delta = timedelta(hours=hours, minutes=minutes)
        return -delta if tz[0] == "-" else delta
    zone_hours = _ZONES.get(tz.lower())
    if zone_hours is None and len(tz) == 1:
        zone_hours = 0  # RFC 822 military zones are unreliable; RFC 2822 says to read them as -0000
    return None if zone_hours is None else timedelta(hours=zone_hours)


def _build(m: re.Match[str], year: int, month: int | None) -> datetime | None:
    """Assemble a match's groups into a UTC datetime; None when a field is out of range."""
    offset = _offset(m.group("tz"))
    if month is None or offset is None:
        return None
    hour = int(m.group("hh") or 0)
    minute = int(m.group("mi") or 0)
    second = min(int(m.group("ss") or 0), 59)  # leap second
    micro = int((m.group("frac") or "0")[:6].ljust(6, "0"))
    ampm = m.group("ampm") if "ampm" in m.re.groupindex else None
    if ampm:
        if hour > 12:
            return None
        hour = hour % 12 + (12 if ampm[0] in "Pp" else 0)
    extra = timedelta(0)
    if hour == 24 and minute == second == 0:  # ISO 8601 end of day
        hour, extra = 0, timedelta(days=1)
    try:
        local = datetime(year, month, int(m.group("d")), hour, minute, second, micro, tzinfo=UTC)
        return local + extra - offset
    except (ValueError, OverflowError):
        return None


def _month(name: str) -> int | None:
    name = name.lower()
    return _MONTHS.get(name[:4]) or _MONTHS.get(name[:3])


def _rfc822(s: str) -> datetime | None:
    m = _RFC822.match(s)
    if not m:
        return None
    year = int(m.group("y"))
    if len(m.group("y")) == 2:
        year += 2000 if year < 50 else 1900  # RFC 2822 section 4.3
    elif len(m.group("y")) == 3:
        year += 1900
    return _build(m, year, _month(m.group("mon")))


def _iso(s: str) -> datetime | None:
    m = _ISO.match(s)
    return _build(m, int(m.group("y")), int(m.group("mo"))) if m else None


def _month_first(s: str) -> datetime | None:
    m = _MONTH_FIRST.match(s) or _ASCTIME.match(s)
    return _build(m, int(m.group("y")), _month(m.group("mon"))) if m else None


def _timestamp(s: str) -> datetime | None:
    if not _TIMESTAMP.match(s):
        return None
    seconds = int(s) / 1000 if len(s) > 10 else int(s)
    return datetime.fromtimestamp(seconds, UTC)


@lru_cache(maxsize=4096)
def _with_dateparser(s: str) -> datetime | None:
    """Last resort for other languages and formats; slow, hence cached."""
    if len(s) > 64 or not _HAS_YEAR.search(s):
        return None  # an absolute date has a four-digit year; long strings are prose, not dates
    import dateparser  # the last resort, slow to import: loaded on first use

    try:
        parsed = dateparser.parse(s, languages=_DATEPARSER_LANGUAGES, settings=_DATEPARSER_SETTINGS)
    except (ValueError, OverflowError, TypeError, AttributeError, LookupError):
        return None
    if parsed is None or parsed.tzinfo is None:
        return None
    return parsed.astimezone(UTC)


_PATHS = (_rfc822, _iso, _month_first, _timestamp)
# A leading four-digit year: the RFC 822 and month-first patterns cannot match (they start with a day of
# one or two digits and a separator, or a letter), ISO 8601 can, so it goes first (half of all dates).
_YEAR_FIRST_PATHS = (_iso, _rfc822, _month_first, _timestamp)


def parse_date(value: str | None) -> datetime | None:
    """Parse a feed date; None when absent or unparseable. Never raises."""
    if not value:
        return None
    s = " ".join(value.split())
    if not s:
        return None
    for path in _YEAR_FIRST_PATHS if s[:4].isdigit() else _PATHS:
        result = path(s)
        if result is not None:
            return result
    return _with_dateparser(s)
