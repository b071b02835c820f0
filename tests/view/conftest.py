"""Views are run as real ``omxfs run`` processes on real workspaces; the shared mount fixture is the fuse tests'."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from omxfs.store import Workspace
from tests.fuse.conftest import clean_env, mount, poll  # noqa: F401  (the mount fixture, for views over mounts)

OMXFS = [sys.executable, "-m", "cli.omxfs"]
OMX = Path(sys.executable).parent / "omx"
TIMEOUT = 60


def run_view(
    workspace: Path,
    agent: str,
    script: str,
    *options: str,
    args: Sequence[str] = (),
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = TIMEOUT,
) -> subprocess.CompletedProcess[str]:
    """``omxfs run WORKSPACE --as AGENT [options] -- sh -c SCRIPT [args]``, a real process; output captured."""
    return subprocess.run(
        view_argv(workspace, agent, script, *options, args=args),
        cwd=cwd or workspace.parent,
        env=env or clean_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def run_from_root(argv: Sequence[str], *, timeout: float = TIMEOUT) -> subprocess.CompletedProcess[str]:
    """``argv``, a real process started in ``/`` with a clean environment; output captured, any exit status."""
    return subprocess.run(
        list(argv), capture_output=True, text=True, timeout=timeout, env=clean_env(), cwd="/", check=False
    )


def run_omx_as(
    agent: str, workspace: Path, task: str, replies: Path, *options: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``omx TASK --as AGENT -w WORKSPACE --model scripted:REPLIES [options]``, the installed command started in ``/``
    (so it runs itself again in AGENT's view), answering yes to a confirmation; output captured."""
    argv = [str(OMX), task, "--as", agent, "-w", str(workspace), "--model", f"scripted:{replies}", *options]
    return subprocess.run(
        argv, input="y\n", capture_output=True, text=True, timeout=120, env=env or clean_env(), cwd="/", check=False
    )


def view_argv(workspace: Path, agent: str, script: str, *options: str, args: Sequence[str] = ()) -> list[str]:
    return [*OMXFS, "run", str(workspace), "--as", agent, *options, "--", "sh", "-c", script, *args]


def omxfs_view_mounts(pid: int | str = "self") -> list[str]:
    """The mountpoints of views' daemons in the mount table of process ``pid`` (ours: the host's)."""
    with open(f"/proc/{pid}/mountinfo", encoding="utf-8") as f:
        return [line.split()[4] for line in f if "fuse.omxfs" in line and "omxfs-view-" in line]


def running(cmdline: str) -> bool:
    """Whether a process of the host runs exactly ``cmdline`` (arguments joined by spaces)."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read().replace(b"\0", b" ").strip() == cmdline.encode():
                    return True
        except OSError:
            continue
    return False


@pytest.fixture
def store(tmp_path: Path) -> Workspace:
    if not os.path.exists("/dev/fuse"):
        pytest.skip("/dev/fuse is absent: views need FUSE")
    return Workspace.init(tmp_path / "ws", agents=["alice", "bob"], supervisors=["boss"])


@pytest.fixture
def ok() -> Callable[[subprocess.CompletedProcess[str]], str]:
    """The output of a view that must have succeeded, or a failure that shows what it printed."""

    def check(done: subprocess.CompletedProcess[str], status: int = 0) -> str:
        assert done.returncode == status, f"exit {done.returncode}\nstdout: {done.stdout}\nstderr: {done.stderr}"
        return done.stdout

    return check


def lines(text: str) -> Sequence[str]:
    return [line for line in text.splitlines() if line]
