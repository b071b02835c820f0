"""A Ctrl-C at any moment of ``omxfs mount``: either nothing is mounted and one line says so (status 130), or the mount
is live and reported; never a traceback, never a daemon left behind; and what ``--foreground`` prints when a signal
unmounts it is what its log says.

The signal is sent to the real command at moments spread over its start (delays counted from when the interpreter
has started, and events: the daemon spawned, its log opened, the mount in the table, the mount reported), and the
same assertion holds whichever phase it lands in: it follows from what is mounted afterwards, not from the moment.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import cli
from omxfs.fuse import mounts
from omxfs.store import Workspace
from tests.fuse.conftest import DEADLINE, clean_env, poll

REPO = Path(cli.__file__).resolve().parent.parent  # the code under test: a worktree's, when run in one

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/fuse"), reason="/dev/fuse is absent")

INTERRUPTED = 128 + signal.SIGINT


@dataclass
class Ended:
    returncode: int
    stdout: str
    stderr: str
    live: bool  # an omxfs mount is on the mountpoint afterwards


def _python_startup() -> float:
    """How long the interpreter takes to reach a program's first line here (site and the editable install's .pth
    files included): the delays are counted from then."""
    took = []
    for _ in range(3):
        started = time.monotonic()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        took.append(time.monotonic() - started)
    return max(took)


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _processes_naming(text: str) -> list[int]:
    """Live processes whose command line names ``text`` (the mountpoint): daemons and their guardians."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            state = (proc / "stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if state != "Z" and text.encode() in argv and int(proc.name) != os.getpid():
            found.append(int(proc.name))
    return found


def _logs(store: Path) -> list[Path]:
    return sorted((store / ".omxfs" / "logs").glob("mount-*.log"))


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    store = tmp_path / "ws"
    Workspace.init(store, agents=["alice"])
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    yield store, mnt
    if str(mnt) in mounts.omx_mounts() or mounts.probe(str(mnt)) is mounts.State.STALE:
        subprocess.run(["fusermount3", "-uz", str(mnt)], capture_output=True, check=False)
    for pid in _processes_naming(str(mnt)):
        os.kill(pid, signal.SIGKILL)


Trigger = Callable[[subprocess.Popen[str], Path, Path], bool]


def _after(seconds: float) -> Trigger:
    deadline: list[float] = []

    def due(proc: subprocess.Popen[str], store: Path, mnt: Path) -> bool:
        if not deadline:
            deadline.append(time.monotonic() + seconds)
        return time.monotonic() >= deadline[0]

    return due


def _daemon_spawned(proc: subprocess.Popen[str], store: Path, mnt: Path) -> bool:
    return bool(_children(proc.pid)) or bool(_logs(store))


def _log_opened(proc: subprocess.Popen[str], store: Path, mnt: Path) -> bool:
    return bool(_logs(store))


def _in_the_mount_table(proc: subprocess.Popen[str], store: Path, mnt: Path) -> bool:
    return mounts.mount_at(str(mnt)) is not None


def _interrupt(store: Path, mnt: Path, foreground: bool, when: Trigger, out: Path) -> Ended:
    """Start ``omxfs mount``, send SIGINT once ``when`` holds (or never, if it ended first), wait for its end."""
    argv = [sys.executable, "-m", "cli.omxfs", "mount", str(store), str(mnt), "--as", "alice"]
    with open(out, "w") as stdout, open(out.with_suffix(".err"), "w") as stderr:
        proc = subprocess.Popen(
            argv + (["--foreground"] if foreground else []),
            stdout=stdout,
            stderr=stderr,
            stdin=subprocess.DEVNULL,
            env=clean_env(),
            text=True,
        )
        poll(lambda: proc.poll() is not None or when(proc, store, mnt), what="the moment to interrupt")
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        proc.wait(DEADLINE * 2)
    return Ended(
        proc.returncode,
        out.read_text(),
        out.with_suffix(".err").read_text(),
        str(mnt) in mounts.omx_mounts(),
    )


def _in_python_startup(stderr: str) -> bool:
    """A traceback of the interpreter's own start (site.py and the .pth files it runs): the signal came before the
    first line of omxfs ran, a moment no program can handle (the delays start after it, but a loaded machine
    can start slower than it was measured)."""
    frames = re.findall(r'^  File "([^"]+)"', stderr, re.M)
    return "Traceback" in stderr and not any(f.startswith(str(REPO)) for f in frames)


def _consistent(ended: Ended, mnt: Path, foreground: bool) -> None:
    """The assertion of every phase: follows from what is mounted afterwards."""
    if _in_python_startup(ended.stderr):
        assert not ended.live and mounts.probe(str(mnt)) is mounts.State.FREE
        return
    assert "Traceback" not in ended.stderr and "KeyboardInterrupt" not in ended.stderr, ended.stderr
    assert "Aborted!" not in ended.stderr, ended  # click's word for a KeyboardInterrupt it caught, anywhere
    assert "guardian" not in ended.stderr, ended
    reported = re.search(rf"^mounted .* at {re.escape(str(mnt))} as alice \(pid (\d+)", ended.stdout, re.M)
    if ended.live:  # live: only a background mount that got to report itself
        assert not foreground, ended
        assert ended.returncode == 0 and reported, ended
        assert f"stop it with: omxfs umount {mnt}" in ended.stdout, ended
        daemon = int(reported.group(1))
        assert mounts.probe(str(mnt)) is mounts.State.LIVE
        assert subprocess.run(["fusermount3", "-u", str(mnt)], capture_output=True).returncode == 0
        assert mounts.wait_for_exit(daemon, DEADLINE)
    elif foreground and reported:  # served, and the signal unmounted it as Ctrl-C does
        assert ended.returncode == 0, ended
        assert ended.stdout.splitlines()[-1] == f"unmounted {mnt}", ended
        assert ended.stderr == "", ended
    else:  # stopped while it started: nothing mounted, one line, the status of a Ctrl-C
        assert not reported, ended
        assert ended.returncode in (INTERRUPTED, -signal.SIGINT), ended
        lines = ended.stderr.strip().splitlines()
        assert len(lines) == (1 if ended.returncode == INTERRUPTED else 0), ended
        if lines:
            assert lines[0].startswith("omxfs"), lines
            assert "nothing is mounted" in lines[0] or "nothing was done" in lines[0], lines
        assert mounts.probe(str(mnt)) is mounts.State.FREE, ended  # not stale either
    poll(lambda: not _processes_naming(str(mnt)), what="no daemon or guardian of the mount left")


STARTUP = _python_startup()
TRIGGERS: dict[str, Callable[[], Trigger]] = {
    **{f"after {d:.2f}s": (lambda d=d: _after(STARTUP + d)) for d in (0.1, 0.2, 0.35, 0.5, 0.75)},
    "daemon spawned": lambda: _daemon_spawned,
    "log opened": lambda: _log_opened,
    "mounted": lambda: _in_the_mount_table,
}


@pytest.mark.parametrize("foreground", [False, True], ids=["background", "foreground"])
@pytest.mark.parametrize("trigger", list(TRIGGERS))
def test_ctrl_c_while_mount_starts_leaves_no_mount_or_a_reported_one(
    workspace: tuple[Path, Path], tmp_path: Path, foreground: bool, trigger: str
) -> None:
    store, mnt = workspace
    ended = _interrupt(store, mnt, foreground, TRIGGERS[trigger](), tmp_path / "out")
    _consistent(ended, mnt, foreground)


def test_ctrl_c_after_a_background_mount_reported_leaves_it_live(workspace: tuple[Path, Path], tmp_path: Path) -> None:
    store, mnt = workspace
    ended = _interrupt(store, mnt, False, lambda proc, *_: False, tmp_path / "out")  # it ends first
    assert ended.live
    _consistent(ended, mnt, False)


def test_ctrl_c_on_a_foreground_mount_in_use_says_what_its_log_says(workspace: tuple[Path, Path]) -> None:
    """A program holds a file open in the mount: Ctrl-C unmounts all the same, and the command, the log and what the
    program then meets agree (the guardian said the daemon had died with its mount live, the log "unmounted")."""
    store, mnt = workspace
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli.omxfs", "mount", str(store), str(mnt), "--as", "alice", "--foreground"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=clean_env(),
        text=True,
    )
    assert proc.stdout is not None
    reported = re.search(r"\(pid (\d+)\)", proc.stdout.readline())
    assert reported, proc.communicate(timeout=DEADLINE)
    holder = subprocess.Popen(
        ["bash", "-c", "exec 3>agents/alice/held.txt; echo kept >&3; echo open; read; echo more >&3"],
        cwd=mnt,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=clean_env(),
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline() == "open\n"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=DEADLINE * 2)  # stderr ends when the daemon and its guardian are gone
    _, held_err = holder.communicate("\n", timeout=DEADLINE)

    log = (store / ".omxfs" / "logs" / f"mount-{reported.group(1)}.log").read_text()
    logged = re.search(r"INFO (unmounted .*); requests served", log)
    assert logged, log
    assert proc.returncode == 0, (out, err)
    assert err == ""  # the guardian printed "the daemon died with its mount live: aborted FUSE connection N"
    assert out.splitlines()[-1] == logged.group(1)  # the command says what the log says
    assert "still had a file or its working directory there" in logged.group(1)
    assert "Transport endpoint is not connected" in logged.group(1)
    assert "Transport endpoint is not connected" in held_err  # what the line says the program meets
    assert (store / "agents/alice/held.txt").read_text() == "kept\n"  # what it wrote before is kept
    assert not os.path.ismount(mnt)
