"""Human output (pure): display widths, "…" truncation, aligned tables with wide characters, times."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from host.textfmt import duration, fit, plural, relative, table, terminal_columns, upcoming, when, width


def test_wide_and_combining_characters_have_their_terminal_width() -> None:
    assert width("abc") == 3 and width("日本語") == 6 and width("ｱｲｳ") == 3  # half-width katakana
    assert width("e\u0301") == 1 and width("한국") == 4


def test_fit_cuts_with_an_ellipsis_at_the_column_limit() -> None:
    assert fit("short", 10) == "short"
    assert fit("a long title here", 10) == "a long ti…" and width(fit("a long title here", 10)) <= 10
    assert fit("日本語のタイトル", 7) == "日本語…" and width(fit("日本語のタイトル", 7)) <= 7
    assert fit("two\nlines", 20) == "two lines"


def test_tables_align_wide_characters_and_shrink_to_fit() -> None:
    out = table([(1, "日本語のフィード", "x"), (22, "plain", "y")], ["id", "title", "url"], total=80)
    lines = out.splitlines()
    assert {width(line[: line.rindex(" ") + 1]) for line in lines} == {
        width(lines[0][: lines[0].rindex(" ") + 1])
    }
    wide = table([("k", "v" * 200)], ["key", "value"], total=40)
    assert max(width(line) for line in wide.splitlines()) <= 40 and wide.endswith("…")
    capped = table([("k", "v" * 30, "d")], ["key", "value", "d"], limits={1: 10}, total=200)
    assert "v" * 9 + "…" in capped and "v" * 11 not in capped
    url = "https://example.com/" + "p" * 100
    kept = table([("t" * 60, url)], ["title", "url"], total=80, whole=(1,))
    assert kept.splitlines()[1].endswith(url) and "t" * 60 not in kept  # the title gives way, not the URL


def test_nothing_is_cut_off_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pipe or a file has no width: tables and lines stay whole (issue #20 item 5)."""
    import io

    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setattr("sys.stdout", io.StringIO())
    assert terminal_columns() is None
    long = "x" * 300
    out = table([("k", long)], ["key", "value"], limits={1: 10})
    assert long in out and "…" not in out
    assert fit(long, None) == long
    monkeypatch.setenv("COLUMNS", "50")  # an explicit width still applies
    assert terminal_columns() == 50 and "…" in table([("k", long)], ["key", "value"])


def test_times_and_durations_are_humanized() -> None:
    assert when(datetime(2026, 11, 26, 5, 40, 59, tzinfo=UTC)) == "2026-11-26 05:40Z" and when(None) == "-"
    assert [duration(s) for s in (45, 720, 43200, 3 * 86400)] == ["45 s", "12 min", "12 h", "3 d"]
    now = datetime(2026, 1, 1, tzinfo=UTC)
    assert relative(now - timedelta(hours=12), now) == "12 h ago"
    assert relative(now + timedelta(minutes=5), now) == "in 5 min"
    assert relative(None) == "never"  # a feed not polled yet, a job never run, a token never used
    assert upcoming(now + timedelta(minutes=5), now) == "in 5 min"
    assert upcoming(now - timedelta(minutes=2), now) == "due now"  # not "2 min ago": it has not happened
    assert upcoming(None) == "-"
    assert plural(1, "feed") == "1 feed" and plural(2, "feed") == "2 feeds"
    assert plural(1, "entry", "entries") == "1 entry" and plural(0, "entry", "entries") == "0 entries"
