"""parse_date: every form of the design doc, the broken ones seen in the wild, and its guarantees
(UTC-aware results, None instead of exceptions, no answers that depend on the clock)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import dateparser
import pytest
from hypothesis import given
from hypothesis import strategies as st

from modules.rss.parse import dates
from modules.rss.parse.dates import parse_date

MOMENT = datetime(2002, 9, 7, 9, 42, 31, tzinfo=UTC)
DAY = datetime(2002, 9, 7, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # the design doc, line by line
        ("Sat, 07 Sep 2002 09:42:31 GMT", MOMENT),
        ("Sat, 07 Sep 2002 09:42:31 +0000", MOMENT),
        ("2002-09-07T09:42:31Z", MOMENT),
        ("2002-09-07T09:42:31+00:00", MOMENT),
        ("2002-09-07", DAY),
        ("September 7, 2002", DAY),
        ("07 Sep 2002", DAY),
        ("Sat Sep 07 09:42:31 UTC 2002", MOMENT),
        ("1031391751", MOMENT),
        # offsets and zone names
        ("Sat, 07 Sep 2002 11:42:31 +0200", MOMENT),
        ("Sat, 07 Sep 2002 05:42:31 EDT", MOMENT),
        ("Sat, 07 Sep 2002 01:42:31 PST", MOMENT),
        ("Sat, 07 Sep 2002 15:12:31 +05:30", MOMENT),
        ("Sat, 07 Sep 2002 09:42:31 +0000 (UTC)", MOMENT),
        ("Sat, 07 Sep 2002 09:42:31 +0000 GMT", MOMENT),
        ("2002-09-07T04:42:31.250-05:00", MOMENT + timedelta(milliseconds=250)),
        ("2002-09-07T09:42:31.123456789Z", MOMENT + timedelta(microseconds=123456)),
        ("2002-09-07 09:42:31", MOMENT),  # no zone: read as UTC
        # sloppy variants
        ("Sat, 7 Sep 02 09:42:31 GMT", MOMENT),  # two-digit year
        ("Sat, 07 sep 2002 09:42:31 gmt", MOMENT),
        ("  Sat,\n 07 Sep 2002   09:42:31 GMT ", MOMENT),
        ('"Sat, 07 Sep 2002 09:42:31 GMT"', MOMENT),
        ("Saturday, 07-Sep-2002 09:42:31 GMT", MOMENT),
        ("2002/09/07 09:42:31", MOMENT),
        ("2002-09-07T09:42:1Z", datetime(2002, 9, 7, 9, 42, 1, tzinfo=UTC)),
        ("2002-09-06T24:00:00Z", DAY),  # ISO 8601 end of day
        ("Sep 7th, 2002 at 9:42 AM", datetime(2002, 9, 7, 9, 42, tzinfo=UTC)),
        ("September 07, 2002 9:42 pm", datetime(2002, 9, 7, 21, 42, tzinfo=UTC)),
        ("1031391751000", MOMENT),  # milliseconds
        # localized month names (hand-written path, no dateparser)
        ("Seg, 24 Set 2018 19:42:40 -0300", datetime(2018, 9, 24, 22, 42, 40, tzinfo=UTC)),
        ("Mi, 07 Mär 2002 09:42:31 +0100", datetime(2002, 3, 7, 8, 42, 31, tzinfo=UTC)),
        ("7 juillet 2020", datetime(2020, 7, 7, tzinfo=UTC)),
        ("3 dic 2021 10:00", datetime(2021, 12, 3, 10, 0, tzinfo=UTC)),
        # only dateparser knows these
        ("7 сентября 2002 г.", DAY),
        ("2002年9月7日", DAY),
    ],
)
def test_parses(text: str, expected: datetime) -> None:
    assert parse_date(text) == expected
    assert parse_date(text).tzinfo is UTC  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "text",
    [
        None,
        "",
        "   ",
        "sometime last week",
        "yesterday",  # relative: the answer would depend on the clock, and re-parsing must not change hashes
        "2 hours ago",
        "now",
        "Tue, 31 Feb 2002 10:00:00 GMT",  # no such day
        "2002-13-45",
        "Fri, 21 Mar 201208 09:50:00 EDT",
        "September 2002",  # no day: dateparser would fill it in from today
        "ℐℑℒℓ℔✕✖✗✘",
        "Sat, 07 Sep 2002 25:61:00 GMT",
        "x" * 10_000,
    ],
)
def test_unparseable_is_none(text: str | None) -> None:
    assert parse_date(text) is None


def test_the_common_forms_never_reach_dateparser(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: object, **kwargs: object) -> None:
        raise AssertionError("dateparser called")

    monkeypatch.setattr(dateparser, "parse", fail)
    for text in ("Sat, 07 Sep 2002 09:42:31 GMT", "2002-09-07T09:42:31Z", "September 7, 2002",
                 "Sat Sep 07 09:42:31 UTC 2002", "1031391751", "Seg, 24 Set 2018 19:42:40 -0300"):  # fmt: skip
        assert parse_date(text) is not None


def test_dateparser_errors_are_swallowed(monkeypatch: pytest.MonkeyPatch) -> None:
    def explode(*args: object, **kwargs: object) -> None:
        raise ValueError("boom")

    monkeypatch.setattr(dateparser, "parse", explode)
    dates._with_dateparser.cache_clear()
    assert parse_date("le 7 zzz 2002") is None
    dates._with_dateparser.cache_clear()


@given(st.text(max_size=80))
def test_never_raises_and_is_utc(text: str) -> None:
    result = parse_date(text)
    assert result is None or result.tzinfo is UTC


@given(
    st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2099, 12, 31), timezones=st.just(UTC)),
    st.integers(min_value=-12 * 60, max_value=14 * 60),
)
def test_rfc822_and_rfc3339_round_trip(moment: datetime, offset_minutes: int) -> None:
    local = moment.replace(microsecond=0).astimezone(timezone(timedelta(minutes=offset_minutes)))
    assert parse_date(local.strftime("%a, %d %b %Y %H:%M:%S %z")) == local
    assert parse_date(local.isoformat()) == local
