"""Where state lives and which external services to use, resolved from the environment."""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

DEFAULT_HTTP_PORT = 9464  # when it is taken and FEEDEATER_HTTP_PORT is unset, `run` picks a free one
LEGACY_HOME = ".feedeater"  # the default before issue #20: relative to the current directory


@dataclass(frozen=True, slots=True)
class HostConfig:
    home: Path  # all local state: embedded services' data, logs, pid files (FEEDEATER_HOME or default_home)
    database_url: str | None  # external Postgres; None = embedded
    nats_url: str | None  # external NATS; None = embedded
    http_host: str
    http_port: int  # /healthz and /metrics; 0 = a free port
    host_id: str  # names this process in job_runs and leases
    db_pool: int = 10  # connections per pool: the host's and each module's (host/roles.py)
    db_wait_seconds: float = 60.0  # `run`: how long to keep retrying an unreachable PostgreSQL at start
    # HTTP: names the server answers to besides IP literals and localhost (the name behind a reverse
    # proxy), and the proxies whose Forwarded / X-Forwarded-* headers are believed (host.web.network).
    public_hosts: tuple[str, ...] = ()
    trusted_proxies: tuple[str, ...] = ()

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> HostConfig:
        env = dict(os.environ) if env is None else env
        home = Path(env.get("FEEDEATER_HOME") or default_home(env)).expanduser().resolve()
        return cls(
            home=home,
            database_url=env.get("FEEDEATER_DATABASE_URL") or None,
            nats_url=env.get("FEEDEATER_NATS_URL") or None,
            http_host=env.get("FEEDEATER_HTTP_HOST", "127.0.0.1"),
            http_port=_int_env(env, "FEEDEATER_HTTP_PORT", DEFAULT_HTTP_PORT, "a port such as"),
            host_id=env.get("FEEDEATER_HOST_ID") or f"{socket.gethostname()}:{os.getpid()}",
            db_pool=_int_env(env, "FEEDEATER_DB_POOL", 10, "a pool size such as"),
            db_wait_seconds=_int_env(env, "FEEDEATER_DB_WAIT_SECONDS", 60, "a number of seconds such as"),
            public_hosts=_list_env(env, "FEEDEATER_HTTP_PUBLIC_HOSTS"),
            trusted_proxies=_list_env(env, "FEEDEATER_HTTP_TRUSTED_PROXIES"),
        )


def default_home(env: Mapping[str, str], platform: str = sys.platform) -> Path:
    """The user's data directory for feedeater: one per user, whatever the current directory (pure).

    Linux and other Unixes: $XDG_DATA_HOME/feedeater, else ~/.local/share/feedeater; macOS:
    ~/Library/Application Support/feedeater; Windows: %LOCALAPPDATA%\\feedeater."""
    user_home = Path(env.get("HOME") or env.get("USERPROFILE") or Path.home())
    if platform == "win32":
        base = Path(env.get("LOCALAPPDATA") or user_home / "AppData" / "Local")
    elif platform == "darwin":
        base = user_home / "Library" / "Application Support"
    else:
        xdg = env.get("XDG_DATA_HOME", "")
        base = Path(xdg) if os.path.isabs(xdg) else user_home / ".local" / "share"  # XDG: relative = unset
    return base / "feedeater"


def legacy_home(env: Mapping[str, str], cwd: Path, home: Path) -> Path | None:
    """`./.feedeater` with data in it, left by a version that kept data in the current directory, when
    FEEDEATER_HOME does not choose a directory: the user must hear that it is not used any more."""
    old = (cwd / LEGACY_HOME).resolve()
    if env.get("FEEDEATER_HOME") or old == home or not (old / "postgres").is_dir():
        return None
    return old


def _int_env(env: dict[str, str], key: str, default: int, example: str) -> int:
    from host.errors import UserError

    raw = env.get(key)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise UserError(f"{key}={raw!r} is not a whole number", f"set {key} to {example} {default}") from None


def _list_env(env: dict[str, str], key: str) -> tuple[str, ...]:
    """A comma- or space-separated list."""
    return tuple(part for part in env.get(key, "").replace(",", " ").split() if part)
