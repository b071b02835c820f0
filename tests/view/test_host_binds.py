"""``omxfs run --bind/--ro-bind`` of the host's kernel interfaces and service sockets (issue 30): refused.

``--bind /proc:/X`` showed the host's ``/proc`` read-write, and root in a view started by root is the host's uid 0
there: ``echo ... > /X/sys/kernel/core_uses_pid`` changed the host's sysctl, around the view's read-only
``/proc/sys`` (``kernel.core_pattern`` would have run a program as the host's root). Each test tries to change the
host's ``kernel.core_uses_pid`` (to the other value, put back at the end) through the bind, and checks that the
bind was refused with one line that says why, that COMMAND never ran and that the sysctl is unchanged.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from omxfs.store import Workspace
from omxfs.view.host_interfaces import why_not_bindable
from tests.view.conftest import run_from_root, run_view, view_argv

SYSCTL = Path("/proc/sys/kernel/core_uses_pid")


@pytest.fixture
def sysctl() -> Iterator[str]:
    """The sysctl's value now, put back after the test whatever a view did to it."""
    if os.geteuid() != 0:
        pytest.skip("only a view started by root is the host's uid 0 for /proc/sys")
    before = SYSCTL.read_text()
    yield before
    if SYSCTL.read_text() != before:
        SYSCTL.write_text(before)


def flip(sys_dir: str) -> str:
    """The script that writes the other value to the sysctl through ``sys_dir``, a view's path to a ``/proc/sys``."""
    value = "0" if SYSCTL.read_text().strip() == "1" else "1"
    return f"echo {value} > {sys_dir}/kernel/core_uses_pid; echo ran"


def refused(done: subprocess.CompletedProcess[str], option: str, source: object, reason: str) -> None:
    """Refused before the view started, in one line that names the bind and says ``reason``."""
    assert done.returncode == 1, f"exit {done.returncode}\nstdout: {done.stdout}\nstderr: {done.stderr}"
    assert "ran" not in done.stdout and "Traceback" not in done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"Error: {option} {source}: ") and reason in line, line


def test_a_bind_of_proc_sys_dev_or_run_is_refused(store: Workspace, sysctl: str, tmp_path: Path) -> None:
    link = tmp_path / "not-proc"
    link.symlink_to("/proc")
    cases = [
        ("/proc", "/X", "the host's /proc"),
        ("/proc/sys/kernel", "/X/sys/kernel", "the host's /proc"),
        (link, "/X", "the host's /proc"),  # through a symlink
        (f"{link}/sys", "/X/sys", "the host's /proc"),
        ("/sys/kernel", "/X", "the host's /sys"),
        ("/dev", "/X", "the host's /dev"),
        ("/dev/shm", "/X", "the host's /dev"),
        ("/run", "/X", "the host's /run"),
        ("/var/run", "/X", "the host's /run"),  # a symlink to /run on most systems
    ]
    for option in ("--bind", "--ro-bind"):
        for source, dest, reason in cases:
            if os.path.exists(source):
                done = run_view(store.root, "alice", flip("/X/sys"), option, f"{source}:{dest}")
                refused(done, option, source, reason)
    assert SYSCTL.read_text() == sysctl


def test_the_root_directory_is_refused_as_the_holder_of_proc() -> None:
    """``/`` holds the store too, and the store's refusal comes first (``test_binds.py``); it is refused for
    holding ``/proc`` on its own, as any directory that holds a host interface is."""
    why = why_not_bindable("/")
    assert why is not None and "holds or lies inside the host's /proc" in why


def in_own_mounts(setup: str, path: Path, argv: list[str]) -> subprocess.CompletedProcess[str]:
    """``argv`` run as root in a mount namespace of its own after the shell commands ``setup`` ("$1" is ``path``):
    nothing it mounts shows on the host."""
    script = f'{setup} && shift && exec "$@"'
    return run_from_root(["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", str(path), *argv])


def test_a_procfs_mounted_elsewhere_is_refused(store: Workspace, sysctl: str, tmp_path: Path) -> None:
    """A second procfs is the host's /proc all the same: judged by the filesystem, at the source or held by it."""
    holder = tmp_path / "holder"
    (holder / "proc").mkdir(parents=True)
    for source, sys_dir in ((holder / "proc", "/X/sys"), (holder, "/X/proc/sys"), (holder / "proc/sys", "/X")):
        view = view_argv(store.root, "alice", flip(sys_dir), "--bind", f"{source}:/X")
        done = in_own_mounts('mount -t proc proc "$1"', holder / "proc", view)
        refused(done, "--bind", source, f"a proc mount at {holder / 'proc'}")
    assert SYSCTL.read_text() == sysctl


def test_run_bind_mounted_elsewhere_is_refused(store: Workspace, tmp_path: Path) -> None:
    """``/run`` as its own tmpfs (as on most systems), shown again at another path: judged by its device."""
    alias = tmp_path / "alias"
    alias.mkdir()
    view = view_argv(store.root, "alice", "ls /X; echo ran", "--ro-bind", f"{alias}:/X")
    done = in_own_mounts('mount -t tmpfs tmpfs /run && mount --bind /run "$1"', alias, view)
    refused(done, "--ro-bind", alias, "shows the host's /run by another path")


def test_a_bind_that_holds_a_symlink_to_proc_still_works(store: Workspace, sysctl: str, tmp_path: Path) -> None:
    """A symlink inside a bound directory is not followed by the bind: in the view it leads to the view's own
    ``/proc``, whose ``sys`` is read-only."""
    beside = tmp_path / "beside"
    beside.mkdir()
    (beside / "proc").symlink_to("/proc")
    done = run_view(store.root, "alice", flip("/mnt/beside/proc/sys"), "--bind", f"{beside}:/mnt/beside")
    assert done.returncode == 0 and done.stdout == "ran\n" and "Read-only file system" in done.stderr, done.stderr
    assert SYSCTL.read_text() == sysctl
