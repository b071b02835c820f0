"""Finding mounts and what stands in the way of one: the kernel's mount table, FUSE's prerequisites, daemon records.

No pyfuse3 here: ``omxfs status`` and ``omxfs umount`` work (and ``omxfs mount`` explains itself) on machines
without it. Each check raises ``MountError`` with one line that says what to do; the paths it looks at are
parameters, so tests can point them at a fake ``/dev/fuse`` or ``PATH``.

A live daemon records itself in the store (``omxfs.store.mount_records``), which is how ``status`` and
``umount`` find the daemon behind a mountpoint; a record whose process is gone is stale.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import shutil
import signal
import stat
import subprocess
import time
from pathlib import Path

from omxfs.errors import MountError

# the mount table is a module of its own (every command reads it, few mount); its names are this module's too
from omxfs.mount_table import FSTYPE as FSTYPE
from omxfs.mount_table import MOUNTINFO as MOUNTINFO
from omxfs.mount_table import PROBE_TIMEOUT as PROBE_TIMEOUT
from omxfs.mount_table import MountEntry as MountEntry
from omxfs.mount_table import State as State
from omxfs.mount_table import mount_at as mount_at
from omxfs.mount_table import mount_table as mount_table
from omxfs.mount_table import omx_mounts as omx_mounts
from omxfs.mount_table import probe as probe
from omxfs.process import pid_alive
from omxfs.shell_line import shell_line
from omxfs.stop_signals import StopSignals
from omxfs.store.layout import META_DIR
from omxfs.store.mount_records import read_records
from omxfs.store.names import AGENT_NAME, AGENT_RULE
from omxfs.view.env import VIEW_ENV

FUSE_DEVICE = Path("/dev/fuse")
FUSERMOUNT = "fusermount3"


# -- prerequisites ---------------------------------------------------------------------------------------------


def check_pyfuse3() -> None:
    try:
        import pyfuse3  # noqa: F401
    except ImportError as exc:
        raise MountError(
            f"cannot mount: pyfuse3 is not available ({exc}); FUSE mounts need Linux with libfuse3 "
            "(scripts/install.sh). The store and the CLI work without mounting.",
            errno.ENOSYS,
        ) from None


def check_fuse(device: Path | None = None, search_path: str | None = None) -> str:
    """The FUSE device exists and ``fusermount3`` is on PATH (or ``search_path``); returns fusermount3's path."""
    device = device or FUSE_DEVICE
    try:
        is_char = stat.S_ISCHR(os.stat(device).st_mode)
    except OSError:
        is_char = False
    if not is_char and os.environ.get(VIEW_ENV):
        raise MountError(
            f"cannot mount here: this is agent {os.environ[VIEW_ENV]}'s view (omxfs run), which has no FUSE device: "
            "views and mounts cannot be nested in a view; run omxfs run or omxfs mount outside it",
            errno.ENODEV,
        )
    if not is_char:
        raise MountError(
            f"cannot mount: FUSE is not available ({device} is missing): load it with `modprobe fuse`, "
            "or give a container `--device /dev/fuse --cap-add SYS_ADMIN`",
            errno.ENODEV,
        )
    found = shutil.which(FUSERMOUNT, path=search_path)
    if found is None:
        raise MountError(
            f"cannot mount: {FUSERMOUNT} is not on PATH: install the fuse3 package (apt-get install fuse3)",
            errno.ENOENT,
        )
    return found


# -- the mount table -------------------------------------------------------------------------------------------


def check_mountpoint(mountpoint: str, mountinfo: Path = MOUNTINFO) -> None:
    """The mountpoint is an existing directory that nothing is mounted on."""
    # A stale mount fails every stat with ENOTCONN, so it looks absent to lexists, and a stat of a mount whose daemon
    # does not answer waits for good: ask the mount table first.
    if mount_at(mountpoint, mountinfo) is None and not os.path.lexists(mountpoint):
        raise MountError(f"mountpoint {mountpoint} does not exist: create it with `mkdir`", errno.ENOENT)
    state = probe(mountpoint, mountinfo)
    umount = shell_line("omxfs", "umount", mountpoint)
    if state is State.STALE:
        raise MountError(
            f"{mountpoint} is a stale mount (its daemon died): run `{umount}` "
            f"(or `{shell_line('fusermount3', '-u', mountpoint)}`), then mount again",
            errno.ENOTCONN,
        )
    if state is State.UNRESPONSIVE:
        raise MountError(
            f"{mountpoint} is a mount whose daemon does not answer: unmount it with `{umount}`",
            errno.EBUSY,
        )
    if state is State.LIVE:
        raise MountError(
            f"{mountpoint} is already an omxfs mount: see `{shell_line('omxfs', 'status', mountpoint)}`, "
            f"or unmount it with `{umount}`",
            errno.EBUSY,
        )
    if state is State.OTHER:
        raise MountError(f"{mountpoint} is already a mount point of another filesystem: choose another", errno.EBUSY)
    if not os.path.isdir(mountpoint):
        raise MountError(f"mountpoint {mountpoint} is not a directory: create it with `mkdir`", errno.ENOTDIR)


# -- unmounting ------------------------------------------------------------------------------------------------


def fusermount_unmount(mountpoint: str, *, lazy: bool = False) -> None:
    """``fusermount3 -u``: the kernel flushes and the daemon's main loop ends; MountError when it cannot."""
    args = [FUSERMOUNT, "-u", *(["-z"] if lazy else []), mountpoint]
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=30, check=False)
    except FileNotFoundError:
        raise MountError(f"cannot unmount: {FUSERMOUNT} is not on PATH", errno.ENOENT) from None
    if done.returncode != 0:
        detail = (done.stderr.strip().splitlines() or ["failed"])[-1]
        if "busy" in detail.lower():
            raise MountError(
                f"{mountpoint} is busy: a process has a file or its working directory there; close it, "
                f"or detach now and finish later with `omxfs umount --lazy {mountpoint}`",
                errno.EBUSY,
            )
        raise MountError(f"cannot unmount {mountpoint}: {detail}", errno.EIO)


def wait_for_exit(pid: int, timeout: float) -> bool:
    """Whether process ``pid`` is gone within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while pid_alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


# -- starting and stopping daemons -----------------------------------------------------------------------------


def preflight(ws_path: str, mountpoint: str, agent: str, *, device: Path | None = None) -> str:
    """Everything ``omxfs mount`` can check before starting a daemon, each failure one line; the path that reaches
    the store: ``ws_path``, or beneath the omxfs mount that covers it (a mountpoint, or a store mounted in place,
    whose mount is its agent's view of the store), by a descriptor that stays open for the daemon to reopen."""
    from omxfs.store.workspace import Workspace  # the store knows nothing of mounts; import it only here
    from omxfs.view.locate import store_beneath  # which imports this module

    check_pyfuse3()
    check_fuse(device)
    check_mountpoint(mountpoint)
    if not AGENT_NAME.fullmatch(agent):
        raise MountError(f"{agent!r} is not a valid agent name: {AGENT_RULE}", errno.EINVAL)
    beneath = store_beneath(ws_path)
    store = ws_path if beneath is None else beneath.reached
    ws = Workspace(store)
    if not ws.config.knows(agent):
        raise MountError(
            f"agent {agent!r} is not in the workspace {ws_path}: pass --as NAME (one of: "
            f"{', '.join(ws.agents()) or 'none yet'}) or add it with "
            f"`{shell_line('omxfs', 'init', ws_path, '--agent', agent)}`",
            errno.EACCES,
        )
    return store


def start_background(
    argv: list[str], mountpoint: str, stop: StopSignals | None = None, timeout: float = 10.0
) -> tuple[int, str]:
    """Start a detached daemon (``argv`` without ``--ready-fd``) and wait until its mount answers.

    The daemon reports on a pipe: ``ready <log>`` once mounted, or ``error <message>``. Returns its pid and log.
    A stop signal noted by ``stop`` while it waits stops the daemon (SIGTERM: it unmounts if it got so far) and
    raises ``MountError`` (EINTR) once nothing is mounted.
    """
    read_end, write_end = os.pipe()
    try:
        os.set_inheritable(write_end, True)
        pid = os.posix_spawn(
            argv[0],
            [*argv, "--ready-fd", str(write_end)],
            os.environ,
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
                (os.POSIX_SPAWN_OPEN, 1, "/dev/null", os.O_WRONLY, 0),
                (os.POSIX_SPAWN_OPEN, 2, "/dev/null", os.O_WRONLY, 0),
                (os.POSIX_SPAWN_CLOSE, read_end),
            ],
            setsid=True,  # a session of its own: the terminal's Ctrl-C or hangup does not reach it
        )
    finally:
        os.close(write_end)
    try:
        line = _read_line(read_end, timeout, None if stop is None else stop.fd)
    finally:
        os.close(read_end)
    if stop is not None and stop.signum is not None:
        _stop_daemon(pid, mountpoint)
        stop.check("stopped the mount daemon before it reported")
    if line.startswith("ready "):
        return pid, line.removeprefix("ready ")
    if line.startswith("error "):
        _reap(pid, 5.0)
        raise MountError(line.removeprefix("error "))
    if line == "":
        status = _reap(pid, 5.0)
        raise MountError(f"the mount daemon exited ({status}) before {mountpoint} was mounted")
    os.kill(pid, signal.SIGTERM)
    _reap(pid, 5.0)
    raise MountError(f"{mountpoint} did not answer within {timeout:g} s: the daemon was stopped")


def _stop_daemon(pid: int, mountpoint: str, timeout: float = 10.0) -> None:
    """Stop a daemon ``start_background`` started, at whatever point of its start it is: SIGTERM (before it handles
    signals, that ends it; after, it unmounts what it mounted and exits), SIGKILL if it does not exit in time; a
    mount it left behind is unmounted. MountError if one is left all the same."""
    os.kill(pid, signal.SIGTERM)
    if _reap(pid, timeout) == "still running":
        os.kill(pid, signal.SIGKILL)
        _reap(pid, timeout)
    entry = mount_at(mountpoint)
    if entry is not None and entry.fstype == FSTYPE:  # free when the daemon started: it is what the daemon left
        fusermount_unmount(mountpoint, lazy=True)


def _read_line(fd: int, timeout: float, stop_fd: int | None = None) -> str:
    """One line from ``fd``; "" at EOF, "timeout" when nothing came in time, "stopped" once ``stop_fd`` is readable."""
    deadline = time.monotonic() + timeout
    data = b""
    watched = [fd] if stop_fd is None else [fd, stop_fd]
    while b"\n" not in data:
        remaining = deadline - time.monotonic()
        readable = select.select(watched, [], [], remaining)[0] if remaining > 0 else []
        if stop_fd in readable:
            return "stopped"
        if not readable:
            return "timeout"
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        data += chunk
    return data.split(b"\n", 1)[0].decode("utf-8", "replace")


def _reap(pid: int, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return f"exit status {os.waitstatus_to_exitcode(status)}"
        time.sleep(0.02)
    return "still running"


def report_ready(fd: int | None, line: str) -> None:
    """The daemon's side of ``start_background``'s pipe."""
    if fd is None:
        return
    with contextlib.suppress(OSError):
        os.write(fd, (line.replace("\n", " ") + "\n").encode("utf-8"))
        os.close(fd)


def unmount(mountpoint: str, *, lazy: bool = False, timeout: float = 10.0) -> list[int]:
    """Unmount an omxfs mount (live or stale) and wait for its daemon to exit; returns the daemons' pids."""
    state = probe(mountpoint)
    if state is State.FREE:
        raise MountError(f"{mountpoint} is not mounted", errno.EINVAL)
    if state is State.OTHER:
        raise MountError(f"{mountpoint} is not an omxfs mount: use umount(8)", errno.EINVAL)
    pids = []
    if state is State.LIVE:
        pids = [r.pid for r in read_records(Path(mountpoint, META_DIR)) if r.mountpoint == mountpoint]
    try:
        fusermount_unmount(mountpoint, lazy=lazy or state is State.UNRESPONSIVE)
    except MountError:
        if state is not State.STALE:
            raise
        fusermount_unmount(mountpoint, lazy=True)  # a dead connection may refuse a plain unmount
    for pid in pids:
        if not wait_for_exit(pid, timeout):
            raise MountError(f"{mountpoint} is unmounted, but its daemon (pid {pid}) is still running: `kill {pid}`")
    return pids
