"""The tap's file operations (blocking; callers run them in a thread): append at a committed offset,
cut a file back to it, write a blob whole or not at all, and the directory's identity.

Durability: data is fsynced before the transaction that commits its offset, and a new file's directory
entry is fsynced too, so a committed offset never points past what a crash leaves on disk.
"""

from __future__ import annotations

import contextlib
import logging
import os
import uuid
from pathlib import Path

log = logging.getLogger("feedeater.tap")

ID_FILE = ".tap-id"


def directory_id(directory: Path) -> uuid.UUID:
    """The directory's identity (created once): offsets are stored per directory, so a host whose tap
    points at a different directory never cuts this one's files back."""
    _mkdirs(directory)
    marker = directory / ID_FILE
    if not marker.exists():
        tmp = directory / f"{ID_FILE}.{os.getpid()}"
        tmp.write_text(f"{uuid.uuid4()}\n")
        _fsync_path(tmp)
        with contextlib.suppress(FileExistsError):  # another host created it first: theirs wins
            os.link(tmp, marker)
        tmp.unlink()
        _fsync_path(directory)
    return uuid.UUID(marker.read_text().strip())


def append(path: Path, committed: int, data: bytes) -> int:
    """Write `data` at the committed offset (cutting off anything an uncommitted attempt left behind),
    fsync, and return the new offset to commit."""
    created = not path.exists()
    if created:
        _mkdirs(path.parent)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        start = _cut(fd, path, committed)
        view = memoryview(data)
        written = 0
        while written < len(view):
            written += os.pwrite(fd, view[written:], start + written)
        os.fsync(fd)
    finally:
        os.close(fd)
    if created:
        _fsync_path(path.parent)
    return start + len(data)


def cut_back(path: Path, committed: int) -> bool:
    """At start: drop bytes past the committed offset (a crash between write and commit). True if cut."""
    try:
        fd = os.open(path, os.O_WRONLY)
    except FileNotFoundError:
        return False
    try:
        size = os.fstat(fd).st_size
        _cut(fd, path, committed)
        os.fsync(fd)
    finally:
        os.close(fd)
    return size > committed


def write_whole(path: Path, data: bytes) -> None:
    """Write a blob under a temporary name, fsync, rename: the final name only ever holds all of it."""
    _mkdirs(path.parent)
    tmp = path.with_name(path.name + ".part")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        written = 0
        while written < len(view):
            written += os.write(fd, view[written:])
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    _fsync_path(path.parent)


def _cut(fd: int, path: Path, committed: int) -> int:
    """Truncate to `committed`; a file shorter than that was cut or replaced by someone: go on from its end."""
    size = os.fstat(fd).st_size
    if size > committed:
        os.ftruncate(fd, committed)
        return committed
    if size < committed:
        log.warning(
            "tap file %s is %d bytes, %d were committed: it was truncated or replaced outside feedeater; "
            "appending at its end",
            path,
            size,
            committed,
        )
    return size


def _mkdirs(directory: Path) -> None:
    """Create missing directories, fsyncing each new one's parent so the new entries survive a crash."""
    missing = []
    d = directory
    while not d.exists():
        missing.append(d)
        d = d.parent
    for new in reversed(missing):
        with contextlib.suppress(FileExistsError):
            new.mkdir()
        _fsync_path(new.parent)


def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
