"""Checkpoint tests run on real files; the view tests on real ``omxfs run`` views (the view tests' fixtures).

``tree_state(zone)`` is the test's own account of a zone, made without omxfs: for every path its type, mode, owner,
mtime, link count, content's sha256, symlink target, ``user.*`` attributes and, for a file with holes, where its
data lies. Two zones are the same exactly when their accounts are equal.
"""

from __future__ import annotations

import hashlib
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from omxfs.checkpoints.crashpoints import ENV
from tests.fuse.conftest import mount  # noqa: F401  (the mount fixture, for the CLI through a mount)
from tests.view.conftest import clean_env, ok, run_view, store  # noqa: F401  (fixtures for the view tests)

OMXFS = [sys.executable, "-m", "cli.omxfs"]


def omxfs(*args: str, env: dict[str, str] | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    """``omxfs ARGS`` as a real process; output captured; with ``check``, it must exit 0."""
    done = subprocess.run(
        [*OMXFS, *args], capture_output=True, text=True, env=env or clean_env(), timeout=120, check=False
    )
    if check:
        assert done.returncode == 0, f"omxfs {' '.join(args)}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def kill_at(point: str, script: str, ws_root: Path, *args: str) -> None:
    """Run ``script`` (``python -c``, given the store and ``args``) with the crash point ``point`` armed
    (``omxfs.checkpoints.crashpoints``), and check that it was killed there (SIGKILL) and nowhere else."""
    done = subprocess.run(
        [sys.executable, "-c", script, str(ws_root), *args],
        env={**os.environ, ENV: point},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == -signal.SIGKILL, f"not killed at {point}: {done.returncode} {done.stderr}"


def _data_map(path: str, st: os.stat_result) -> list[tuple[int, int]] | None:
    if st.st_blocks * 512 >= st.st_size:
        return None
    fd = os.open(path, os.O_RDONLY)
    try:
        found, at = [], 0
        while at < st.st_size:
            try:
                start = os.lseek(fd, at, os.SEEK_DATA)
            except OSError:
                break
            end = os.lseek(fd, start, os.SEEK_HOLE)
            found.append((start, end - start))
            at = end
        return found
    finally:
        os.close(fd)


def _open_unread(path: str) -> int:
    """A file opened so that reading it leaves its atime alone (an account must not change what it accounts for)."""
    try:
        return os.open(path, os.O_RDONLY | os.O_NOATIME)
    except PermissionError:
        return os.open(path, os.O_RDONLY)


def tree_state(zone: Path) -> dict[str, dict[str, Any]]:
    state: dict[str, dict[str, Any]] = {}
    for dirpath, dirnames, filenames in os.walk(zone):
        dirnames.sort()
        for name in [".", *sorted(dirnames), *sorted(filenames)]:
            path = dirpath if name == "." else os.path.join(dirpath, name)
            if name == "." and dirpath != str(zone):
                continue
            rel = os.path.relpath(path, zone)
            st = os.lstat(path)
            info: dict[str, Any] = {
                "type": stat.S_IFMT(st.st_mode),
                "mode": stat.S_IMODE(st.st_mode),
                "owner": (st.st_uid, st.st_gid),
                "nlink": st.st_nlink,
                "mtime": st.st_mtime_ns,
            }
            if stat.S_ISREG(st.st_mode):
                with open(_open_unread(path), "rb") as f:
                    info["sha256"] = hashlib.sha256(f.read()).hexdigest()
                info["size"] = st.st_size
                info["data"] = _data_map(path, st)
            if stat.S_ISLNK(st.st_mode):
                info["target"] = os.readlink(path)
            else:
                info["xattrs"] = {
                    k: os.getxattr(path, k, follow_symlinks=False)
                    for k in sorted(os.listxattr(path, follow_symlinks=False))
                    if k.startswith("user.")
                }
            state[rel] = info
    return state


@pytest.fixture
def root_only() -> None:
    if os.geteuid() != 0:
        pytest.skip("owners other than one's own are restored by root only")
