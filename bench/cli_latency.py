"""How long the `feedeater` command takes as a user types it: `--help`, `rss list`, `search`.

Issue #15 targets: `feedeater --help` ≤ 0.3 s, `rss list` ≤ 0.6 s with the services up, `search` ≤ 1 s
when a host is running (the CLI asks it over NATS instead of loading the embedding model).

Setup: a temporary FEEDEATER_HOME; `feedeater services up` starts embedded PostgreSQL and NATS once;
`--feeds` feeds and `--entries` entries are inserted with SQL (no network); then `feedeater run` is
started (local embedder) and the script waits until it answers `feedeater.rss.search`. Each command runs
`--runs` times as a fresh process (`python -m host.cli`, as the console script does); the table shows the
median and the best wall-clock time. `--repo` measures another checkout (e.g. /work/main, "before").

    .venv/bin/python bench/cli_latency.py [--repo PATH] [--runs 7] [--feeds 48] [--entries 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


CPU: dict[str, list[float]] = {}  # command → CPU seconds (user + sys) of each run


def cli(repo: Path, env: dict[str, str], *args: str, check: bool = True) -> tuple[float, str]:
    """Run one command as a fresh process; its wall-clock seconds and stdout (CPU seconds go to CPU)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    res = subprocess.run(
        [sys.executable, "-m", "host.cli", *args], cwd=repo, env=env, capture_output=True, text=True
    )
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    CPU.setdefault(" ".join(args[:2]), []).append(cpu)
    if check and res.returncode != 0:
        raise SystemExit(f"`feedeater {' '.join(args)}` failed: {res.stderr.strip()[-500:]}")
    return seconds, res.stdout


async def seed(database_url: str, feeds: int, entries: int) -> None:
    """Feeds and entries straight into mod_rss (the CLI's speed, not polling, is measured)."""
    import asyncpg

    conn = await asyncpg.connect(database_url)
    try:
        ids = [
            await conn.fetchval(
                "INSERT INTO mod_rss.feeds (url, title) VALUES ($1, $2) RETURNING id",
                f"http://bench.invalid/{i}.xml",
                f"Bench feed {i}",
            )
            for i in range(feeds)
        ]
        await conn.executemany("INSERT INTO mod_rss.poll_state (feed_id) VALUES ($1)", [(i,) for i in ids])
        words = [
            "market",
            "climate",
            "election",
            "science",
            "football",
            "music",
            "health",
            "travel",
            "energy",
            "court",
        ]
        await conn.executemany(
            """INSERT INTO mod_rss.entries (feed_id, guid, guid_source, message_id, title, content_text,
                   content_hash, first_seen, last_seen, effective_at)
               VALUES ($1, $2, 'guid', $3, $4, $5, $2, now(), now(), now() - make_interval(mins => $6))""",
            [
                (
                    ids[n % feeds],
                    f"g{n}",
                    uuid.uuid4(),
                    f"{words[n % 10]} news number {n}",
                    f"A story about {words[n % 10]} and {words[(n * 7) % 10]}, item {n}.",
                    n,
                )
                for n in range(entries)
            ],
        )
    finally:
        await conn.close()


def host_answers(repo: Path, env: dict[str, str], deadline_s: float = 600) -> None:
    """Wait until a running host replies to search requests (the local model loads first)."""
    code = (
        "import asyncio, json, nats\n"
        "async def main():\n"
        f"    nc = await nats.connect({env['FEEDEATER_NATS_URL']!r})\n"
        "    try:\n"
        "        await nc.request('feedeater.rss.search', json.dumps({'query': 'x'}).encode(), timeout=5)\n"
        "    finally:\n"
        "        await nc.close()\n"
        "asyncio.run(main())\n"
    )
    deadline = time.monotonic() + deadline_s
    while subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True).returncode != 0:
        if time.monotonic() > deadline:
            raise SystemExit("the host did not answer search requests in time")
        time.sleep(1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", type=Path, default=REPO, help="checkout to measure (default: this one)")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--feeds", type=int, default=48)
    ap.add_argument("--entries", type=int, default=2000)
    opts = ap.parse_args()
    repo = opts.repo.resolve()
    with tempfile.TemporaryDirectory(prefix="cli-latency-") as home:
        env = {k: v for k, v in os.environ.items() if not k.startswith("FEEDEATER_")}
        env.update(PYTHONPATH=str(repo), FEEDEATER_HOME=home, FEEDEATER_HTTP_PORT="0")
        _, out = cli(repo, env, "services", "up", "--json")
        urls = json.loads(out)
        env.update(FEEDEATER_DATABASE_URL=urls["database_url"], FEEDEATER_NATS_URL=urls["nats_url"])
        host: subprocess.Popen[bytes] | None = None
        try:
            cli(repo, env, "migrate")
            asyncio.run(seed(urls["database_url"], opts.feeds, opts.entries))
            timings: dict[str, list[float]] = {"--help": [], "rss list": []}
            for _ in range(opts.runs):
                timings["--help"].append(cli(repo, env, "--help")[0])
                timings["rss list"].append(cli(repo, env, "rss", "list")[0])
            timings["search (no host)"] = [cli(repo, env, "search", "climate news")[0] for _ in range(2)]
            host = subprocess.Popen(
                [sys.executable, "-m", "host.cli", "run"],
                cwd=repo,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            host_answers(repo, env)
            timings["search (host running)"] = [
                cli(repo, env, "search", "climate news")[0] for _ in range(opts.runs)
            ]
        finally:
            if host is not None:
                host.terminate()
                host.wait(timeout=60)
            cli(repo, env, "services", "down", check=False)
    print(f"repo: {repo}  runs: {opts.runs}  load: {os.getloadavg()[0]:.2f}")
    print("wall-clock seconds (the machine's load moves these), and the command's own CPU seconds")
    print(f"{'command':<24}{'median s':>10}{'best s':>10}{'CPU s':>10}")
    cpu_of = {"--help": "--help", "rss list": "rss list", "search (no host)": "search climate news"}
    for name, values in timings.items():
        key = cpu_of.get(name, "search climate news")
        cpu = CPU.get(key, [float("nan")])
        cpu = cpu[-len(values) :] if name == "search (host running)" else cpu[: len(values)]
        print(
            f"{name:<24}{statistics.median(values):>10.3f}{min(values):>10.3f}{statistics.median(cpu):>10.3f}"
        )


if __name__ == "__main__":
    main()
