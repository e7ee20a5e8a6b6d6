"""Mutation fuzzing of `parse_feed` for a fixed time budget: any exception other than FeedParseError, or an
input that takes longer than --hang-s, is a finding (saved under bench/results/fuzz/ for reproduction).

Why a mutation fuzzer: feeds are bytes from strangers; the parser stack (encoding detection, lxml, repair,
feedparser fallback, JSON Feed, normalization, sanitization) must turn any of them into a Feed or one
FeedParseError. Seeds are the hand-written fixtures plus the real-world corpus when it is present; each
round applies 1-8 seeded mutations (bit flips, byte runs, splices of two documents, hostile tokens such as
DOCTYPEs, entities, CDATA ends, NULs, invalid UTF-8, deep nesting).

    .venv/bin/python bench/fuzz_parser.py [SECONDS=60] [--cases N] [--seed N] [--hang-s 10]

Exit status 1 when something was found. tests/security/test_fuzz.py runs a fixed number of seeded cases
in CI (a count, not a time budget: a busy machine must not change what is tested).
"""

from __future__ import annotations

import argparse
import hashlib
import random
import signal
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from modules.rss.parse import FeedParseError, parse_feed  # noqa: E402

SEED_DIRS = (REPO / "fixtures", REPO.parent / "shared" / "fixtures" / "realworld")
SEED_SUFFIXES = {".xml", ".rss", ".atom", ".rdf", ".json", ".opml", ".html", ".txt"}
MAX_SEEDS = 400
MAX_SEED_BYTES = 256 * 1024
NOW = datetime(2026, 3, 1, tzinfo=UTC)
CONTENT_TYPES = (None, "application/rss+xml", "application/atom+xml; charset=iso-8859-1",
                 "application/feed+json", "text/html; charset=utf-16", "text/xml; charset=shift_jis")  # fmt: skip
TOKENS = (
    b"<!DOCTYPE rss [<!ENTITY a 'aaaaaaaaaa'><!ENTITY b '&a;&a;&a;&a;&a;&a;'>]>", b"&b;", b"&a;",
    b'<!ENTITY x SYSTEM "file:///etc/passwd">', b"&x;", b"<![CDATA[", b"]]>", b"\x00", b"\xff\xfe",
    b"\xef\xbb\xbf", b"\xc3", b"\xed\xa0\x80", b"&#0;", b"&#x110000;", b"&nbsp;", b"<item>", b"</item>",
    b"<entry>", b"</entry>", b"<title>", b"</title>", b"<?xml version='1.0' encoding='utf-16'?>",
    b'xml:base="javascript:alert(1)"', b'href="//x"', b"<script>", b"<div>" * 300, b'{"items":[', b"]}",
    b'"version":"https://jsonfeed.org/version/1.1"', b"<pubDate>Mon, 99 Foo 9999 99:99:99 +9999</pubDate>",
)  # fmt: skip


@dataclass
class FuzzResult:
    runs: int = 0
    parse_errors: int = 0
    findings: list[str] = field(default_factory=list)
    seconds: float = 0.0


def load_seeds() -> list[bytes]:
    seeds: list[bytes] = []
    for root in SEED_DIRS:
        if root.is_dir():
            files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in SEED_SUFFIXES)
            seeds += [p.read_bytes()[:MAX_SEED_BYTES] for p in files[:MAX_SEEDS]]
    return seeds or [
        b"<rss version='2.0'><channel><title>t</title><item><title>x</title></item></channel></rss>"
    ]


def mutate(data: bytes, rng: random.Random, seeds: list[bytes]) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        op = rng.randrange(7)
        pos = rng.randint(0, len(buf))
        if op == 0 and buf:  # flip a bit
            i = rng.randrange(len(buf))
            buf[i] ^= 1 << rng.randrange(8)
        elif op == 1:  # insert a hostile token
            buf[pos:pos] = rng.choice(TOKENS)
        elif op == 2 and buf:  # delete a run
            del buf[pos : pos + rng.randint(1, 64)]
        elif op == 3 and buf:  # duplicate a run
            start = rng.randrange(len(buf))
            buf[pos:pos] = buf[start : start + rng.randint(1, 256)]
        elif op == 4:  # splice with another document
            other = rng.choice(seeds)
            cut = rng.randint(0, len(other))
            buf = buf[:pos] + bytearray(other[cut:])
        elif op == 5:  # random bytes
            buf[pos:pos] = rng.randbytes(rng.randint(1, 16))
        else:  # truncate
            del buf[pos:]
    return bytes(buf)


class _Hang(Exception):
    pass


def _on_alarm(_sig: int, _frame: FrameType | None) -> None:
    raise _Hang


def fuzz(
    seconds: float,
    *,
    cases: int | None = None,
    seed: int = 0,
    hang_s: int = 10,
    out_dir: Path | None = None,
    target: Callable[..., object] = parse_feed,
) -> FuzzResult:
    """Mutate and parse until the time budget is spent, or exactly `cases` inputs when given (the same
    seeded inputs on any machine, however busy); returns counts and findings (saved to out_dir)."""
    rng = random.Random(seed)
    seeds = load_seeds()
    result = FuzzResult()
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    started = time.monotonic()
    try:
        while result.runs < cases if cases is not None else time.monotonic() - started < seconds:
            data = mutate(rng.choice(seeds), rng, seeds)
            content_type = rng.choice(CONTENT_TYPES)
            result.runs += 1
            signal.alarm(hang_s)
            try:
                target(data, url="https://example.org/feed.xml", content_type=content_type, now=NOW)
            except FeedParseError:
                result.parse_errors += 1
            except _Hang:
                result.findings.append(_save(out_dir, data, f"hang over {hang_s}s"))
            except Exception:
                result.findings.append(_save(out_dir, data, traceback.format_exc()))
            finally:
                signal.alarm(0)
    finally:
        signal.signal(signal.SIGALRM, previous)
    result.seconds = time.monotonic() - started
    return result


def _save(out_dir: Path | None, data: bytes, what: str) -> str:
    digest = hashlib.sha256(data).hexdigest()[:16]
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / f"{digest}.bin").write_bytes(data)
        (out_dir / f"{digest}.txt").write_text(what)
    return f"{digest}: {what.strip().splitlines()[-1]}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("seconds", nargs="?", type=float, default=60.0, help="time budget")
    p.add_argument("--cases", type=int, help="run exactly this many inputs instead of a time budget")
    p.add_argument("--seed", type=int, default=int(time.time()))
    p.add_argument("--hang-s", type=int, default=10, help="an input slower than this is a finding")
    p.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "fuzz")
    args = p.parse_args(argv)
    result = fuzz(args.seconds, cases=args.cases, seed=args.seed, hang_s=args.hang_s, out_dir=args.out)
    print(
        f"fuzz_parser: seed {args.seed}, {result.runs} inputs in {result.seconds:.0f}s "
        f"({result.runs / max(result.seconds, 1e-9):.0f}/s), {result.parse_errors} FeedParseError, "
        f"{len(result.findings)} findings"
    )
    for finding in result.findings:
        print("  " + finding)
    return 1 if result.findings else 0


if __name__ == "__main__":
    sys.exit(main())
