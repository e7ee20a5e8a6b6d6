"""The unprivileged PostgreSQL user under root: created once however many processes ask at the same moment."""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from host.errors import UserError
from host.services import _refuse_orphaned, _uid_exists

ROOT = Path(__file__).resolve().parents[2]
RACERS = 8

needs_root = pytest.mark.skipif(
    os.geteuid() != 0, reason="creating system users and chowning to other uids needs root"
)

# Each racer imports first, says "ready", and calls only when the test says "go": the calls overlap.
RACER = """
import sys
from host.services import ensure_system_user
print("ready", flush=True)
sys.stdin.readline()
print(ensure_system_user(sys.argv[1]).pw_uid, flush=True)
"""


@needs_root
def test_processes_racing_to_create_the_user_all_get_the_one_uid_that_exists() -> None:
    name = f"fe-race-{uuid.uuid4().hex[:8]}"
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, name],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(RACERS)
    ]
    try:
        for racer in racers:
            assert racer.stdout is not None and racer.stdout.readline() == "ready\n"
        for racer in racers:
            assert racer.stdin is not None
            racer.stdin.write("go\n")
            racer.stdin.flush()
        results = [racer.communicate(timeout=120) for racer in racers]
        assert [racer.returncode for racer in racers] == [0] * RACERS, [err for _, err in results]
        uids = {int(out) for out, _ in results}
        assert uids == {pwd.getpwnam(name).pw_uid}, f"racers saw uids {uids}"
    finally:
        for racer in racers:
            racer.kill()
            racer.wait()
        subprocess.run(["userdel", name], capture_output=True, check=False)


def _unused_uid() -> int:
    return next(uid for uid in range(60_000, 50_000, -1) if not _uid_exists(uid))


@needs_root
def test_a_data_directory_of_a_deleted_user_is_refused_in_one_line(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    _refuse_orphaned(data)  # root's own directory: fine
    uid = _unused_uid()
    os.chown(data, uid, uid)
    with pytest.raises(UserError) as err:
        _refuse_orphaned(data)
    assert f"belongs to uid {uid}, which no longer exists" in str(err.value)
    assert "chown -R" in (err.value.hint or "")
