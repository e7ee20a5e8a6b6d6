"""Raw bodies compressed (issue 25 item 3): bytes stored and CPU spent per raw body, by codec, on the
shared fixture corpus, the same bodies stored the way each codec stores them.

    PYTHONPATH=$PWD .venv/bin/python bench/raw_compression.py [--fixtures ../shared/fixtures] [--rounds 3]

Host side: each codec compresses and decompresses every body (best of `--rounds`, process CPU time).
PostgreSQL side (embedded, temporary home): every body is inserted into a table the way it would be
stored — "pglz" is main before this change (plain bytes, TOAST compresses them in the server; the
embedded server has no lz4), the application codecs insert their output into a column with STORAGE
EXTERNAL (no second compression). For each: bytes on disk (pg_column_size), the
PostgreSQL backend's CPU time and the WAL bytes of the inserts (pg_current_wal_lsn before and after).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import asyncpg  # noqa: E402
import psutil  # noqa: E402
import zstandard  # noqa: E402

from host.config import HostConfig  # noqa: E402
from host.runtime import Host  # noqa: E402

Codec = tuple[Callable[[bytes], bytes], Callable[[bytes], bytes]]


def codecs() -> dict[str, Codec]:
    def zstd(level: int) -> Codec:
        c, d = zstandard.ZstdCompressor(level=level), zstandard.ZstdDecompressor()
        return c.compress, d.decompress

    def deflate(level: int) -> Codec:
        return (lambda b: zlib.compress(b, level)), zlib.decompress

    return {
        "zlib-1": deflate(1),
        "zlib-6": deflate(6),
        "zstd-1": zstd(1),
        "zstd-3": zstd(3),
        "zstd-9": zstd(9),
    }


def corpus(root: Path) -> list[bytes]:
    return [
        p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.suffix != ".md" and p.name != "manifest.json"
    ]


def host_costs(bodies: list[bytes], codec: Codec, rounds: int) -> tuple[list[bytes], float, float]:
    """(compressed bodies, compress CPU s, decompress CPU s), best of `rounds`; round trips checked."""
    compress, decompress = codec
    best_c = best_d = float("inf")
    packed: list[bytes] = []
    for _ in range(rounds):
        started = time.process_time()
        packed = [compress(b) for b in bodies]
        best_c = min(best_c, time.process_time() - started)
        started = time.process_time()
        back = [decompress(p) for p in packed]
        best_d = min(best_d, time.process_time() - started)
        assert back == bodies
    return packed, best_c, best_d


async def stored(
    conn: asyncpg.Connection, backend: psutil.Process, table: str, bodies: list[bytes]
) -> tuple[int, float, int]:
    """Insert the bodies one statement each: (bytes on disk, backend CPU s, WAL bytes)."""
    lsn = await conn.fetchval("SELECT pg_current_wal_lsn()")
    cpu = sum(backend.cpu_times()[:2])
    async with conn.transaction():
        for body in bodies:
            await conn.execute(f"INSERT INTO {table} (body) VALUES ($1)", body)
    cpu = sum(backend.cpu_times()[:2]) - cpu
    wal = await conn.fetchval("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1)::bigint", lsn)
    size = await conn.fetchval(f"SELECT sum(pg_column_size(body))::bigint FROM {table}")
    return int(size), cpu, int(wal)


async def run(fixtures: Path, rounds: int) -> None:
    bodies = corpus(fixtures)
    raw = sum(map(len, bodies))
    print(
        f"{len(bodies)} bodies, {raw / 1e6:.1f} MB, mean {raw / len(bodies) / 1e3:.1f} KB; load {os.getloadavg()}"
    )
    ways: dict[str, tuple[list[bytes], float, float, str]] = {
        "pglz (main)": (bodies, 0.0, 0.0, ""),
    }
    for name, codec in codecs().items():
        packed, c, d = host_costs(bodies, codec, rounds)
        ways[name] = (packed, c, d, "STORAGE EXTERNAL")
    with tempfile.TemporaryDirectory(prefix="rawzip-") as tmp:
        host = Host(HostConfig(Path(tmp), None, None, "127.0.0.1", 0, "bench"))
        await host.open(with_bus=False)
        try:
            async with host.require_pool().acquire() as conn:
                backend = psutil.Process(await conn.fetchval("SELECT pg_backend_pid()"))
                print(
                    f"\n{'way':12} {'stored MB':>9} {'ratio':>6} {'KB/body':>8} {'host ms/body':>13}"
                    f" {'unzip ms':>9} {'pg ms/body':>11} {'WAL KB/body':>12}"
                )
                for i, (name, (packed, c, d, column)) in enumerate(ways.items()):
                    table = f"public.rawzip_{i}"  # logged: its WAL counts
                    await conn.execute(f"CREATE TABLE {table} (id serial, body bytea {column})")
                    size, pg_cpu, wal = await stored(conn, backend, table, packed)
                    await conn.execute(f"DROP TABLE {table}")
                    n = len(bodies)
                    print(
                        f"{name:12} {size / 1e6:9.2f} {raw / size:6.2f} {size / n / 1e3:8.1f} {c / n * 1e3:13.3f}"
                        f" {d / n * 1e3:9.3f} {pg_cpu / n * 1e3:11.3f} {wal / n / 1e3:12.1f}"
                    )
        finally:
            await host.close(stop_started_services=True)
    print(f"load {os.getloadavg()}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fixtures", type=Path, default=ROOT.parent / "shared" / "fixtures")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    asyncio.run(run(args.fixtures, args.rounds))


if __name__ == "__main__":
    main()
