"""Structured logging: JSON lines when stderr is not a terminal, readable lines when it is."""

from __future__ import annotations

import json
import logging
import os
import sys
from datetime import UTC, datetime
from typing import Any

NOISY = ("apscheduler", "httpx", "httpcore", "asyncio", "nats")  # WARNING at least, whatever the level
_STANDARD = set(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "at": datetime.fromtimestamp(record.created, UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        out.update({k: v for k, v in record.__dict__.items() if k not in _STANDARD})
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        extra = {k: v for k, v in record.__dict__.items() if k not in _STANDARD and k != "traceback"}
        tail = " ".join(f"{k}={v}" for k, v in extra.items())
        return (
            f"{self.formatTime(record, '%H:%M:%S')} {record.levelname:<7} {record.name}: {record.getMessage()}"
            + (f"  {tail}" if tail else "")
        )


class OverlapFilter(logging.Filter):
    """APScheduler warns on every tick a run is skipped because the last one still runs ("maximum number
    of running instances reached"): a slow poll filled the log with them. One line per overlap instead,
    saying how far the running job has got; the next overlap (after it ended) is reported again."""

    def filter(self, record: logging.LogRecord) -> bool:
        if "maximum number of running instances" not in str(record.msg) or not record.args:
            return True
        if not logging.getLogger().isEnabledFor(logging.INFO):
            return False  # rewritten as INFO below: dropped where INFO is
        from host import progress

        args = record.args if isinstance(record.args, tuple) else (record.args,)
        name = str(getattr(args[0], "id", args[0]))
        report = progress.running(name)
        if report is not None and report.overlap_logged:
            return False
        if report is not None:
            report.overlap_logged = True
        record.msg = "job %s is still %s; its next runs are skipped until it ends"
        record.args = (name, report.describe() if report is not None else "running")
        # A job longer than its interval (the embed job works through its backlog for minutes) is
        # expected: information, not something to act on.
        record.levelno, record.levelname = logging.INFO, "INFO"
        return True


def setup(level: str | None = None, *, json_lines: bool | None = None) -> None:
    level = (level or os.environ.get("FEEDEATER_LOG_LEVEL") or "INFO").upper()
    json_lines = (not sys.stderr.isatty()) if json_lines is None else json_lines
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if json_lines else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for noisy in NOISY:
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
    scheduler_log = logging.getLogger("apscheduler.scheduler")
    if not any(isinstance(f, OverlapFilter) for f in scheduler_log.filters):
        scheduler_log.addFilter(OverlapFilter())
