"""What omxfs tells a person about a workspace mounted in place names it as a person can: the commands reach its store
beneath the mount by a descriptor (``/proc/self/fd/N``), a path no other process can use, and it must not leak
into a message, a printed command or the daemon's log (``omxfs snapshot ./ws --as ghost`` said "add it with
`omxfs init /proc/self/fd/3 --agent NAME`").
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from omxfs.store import Workspace
from tests.fuse.conftest import clean_env
from tests.fuse.test_mount_cli import background_mounts

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/fuse"), reason="/dev/fuse is absent")


def omxfs(*args: str | Path, cwd: Path, agent: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cli.omxfs", *map(str, args)], capture_output=True, text=True,
                          timeout=60, env=clean_env(agent), cwd=cwd, check=False)  # fmt: skip


@pytest.fixture
def in_place(tmp_path: Path) -> Iterator[Path]:
    """``./ws`` with alice and bob, mounted over itself as in the README's first command."""
    Workspace.init(tmp_path / "ws", agents=["alice", "bob"])
    with background_mounts(tmp_path / "ws"):
        done = omxfs("mount", "./ws", "--as", "alice", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        yield tmp_path
        omxfs("umount", "./ws", cwd=tmp_path)


def _error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode != 0, done.stdout
    assert "Traceback" not in done.stderr
    assert "/proc/self/fd" not in done.stderr + done.stdout, done.stderr
    return done.stderr


def test_refusals_on_a_workspace_mounted_in_place_name_no_descriptor(in_place: Path) -> None:
    here = in_place
    # the workspace as the person typed it (./ws), whose store the command reached beneath the mount by a descriptor
    assert "add one with `omxfs init ws --supervisor NAME`" in _error(omxfs("snapshot", "./ws", cwd=here))
    assert omxfs("init", "./ws", "--supervisor", "boss", cwd=here).returncode == 0
    unknown = "unknown agent 'ghost': add it with `omxfs init ws --agent NAME`"
    assert unknown in _error(omxfs("snapshot", "./ws", "--as", "ghost", cwd=here))
    assert unknown in _error(omxfs("accept", "./ws", "alice", "--as", "ghost", cwd=here))
    ghost = subprocess.run(["sh", "-c", "echo x > ws/collaborative/current/a.md"], cwd=here, env=clean_env("ghost"),
                           capture_output=True, text=True, check=False)  # fmt: skip
    assert ghost.returncode != 0  # refused by the daemon, which says why in its log
    logs = "".join(p.read_text() for p in (here / "ws").glob(".omxfs/logs/mount-*.log"))
    assert "unknown agent 'ghost'" in logs and "/proc/self/fd" not in logs
