"""Keep the CPUs busy while a command runs: the test suite must hold on a loaded machine (issue #21).

    python3 bench/busy.py --spinners 2 --runs 3 -- make test      # the whole suite three times in a row
    python3 bench/busy.py --spinners 2 --runs 10 -- .venv/bin/python -m pytest -q -p no:cacheprovider \\
        --basetemp=/tmp/pt-busy tests/rss/test_poll.py               # one suspicious file, ten times
    python3 bench/busy.py --spinners 2                                # only spin, until Ctrl-C

Starts N processes that spin on the CPU at normal priority (as other work on a shared CI runner does),
runs the command `--runs` times in a row, stopping at the first failure, then kills the spinners. Prints
each run's exit status and wall time with the 1-minute load average sampled every 5 s while it ran
(min / median / max), and exits with the first failing status. Standard library only: runs with any python3.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import subprocess
import sys
import threading
import time


def spin() -> None:
    while True:
        pass


class LoadSampler:
    """The 1-minute load average every `every` seconds, on a daemon thread."""

    def __init__(self, every: float = 5.0) -> None:
        self.every = every
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.samples.append(os.getloadavg()[0])

    def __enter__(self) -> LoadSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def summary(self) -> str:
        s = self.samples or [os.getloadavg()[0]]
        return f"load (1 min) min {min(s):.1f} median {statistics.median(s):.1f} max {max(s):.1f}"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--spinners", type=int, default=2, help="CPU-bound processes (default 2)")
    parser.add_argument("--runs", type=int, default=1, help="run the command this many times in a row")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command to run under load")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    spinners = [multiprocessing.Process(target=spin, daemon=True) for _ in range(args.spinners)]
    for p in spinners:
        p.start()
    print(f"busy: {args.spinners} spinners (pids {' '.join(str(p.pid) for p in spinners)})", flush=True)
    status = 0
    try:
        if not command:
            while True:
                time.sleep(3600)
        for run in range(1, args.runs + 1):
            started = time.monotonic()
            with LoadSampler() as load:
                status = subprocess.call(command)
            took = time.monotonic() - started
            print(f"busy: run {run}/{args.runs}: exit {status} in {took:.0f} s; {load.summary()}", flush=True)
            if status != 0:
                break
    except KeyboardInterrupt:
        status = 130
    finally:
        for p in spinners:
            p.kill()
            p.join()
    return status


if __name__ == "__main__":
    sys.exit(main())
