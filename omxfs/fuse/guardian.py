"""A guardian process aborts the FUSE connection of a daemon that dies, so that nothing waits on the mount forever.

Why it exists: the kernel ends a connection's requests when the last ``/dev/fuse`` descriptor closes, that is when
every thread of the daemon has exited. ``kill -9`` ends the threads, except one that waits in the kernel
uninterruptibly. The store watch's thread (``watch.py``) can: ``invalidate_entry`` takes the directory's lock, and
a process that holds that lock waits for a request the dead daemon read and will never answer. That thread never
exits, so the descriptor never closes, the request never ends: every process that touches the mount hangs in D
state for good, and neither ``kill -9`` nor ``fusermount3 -u`` frees it. The kernel's cure is writing to the
connection's ``abort`` file in the fusectl filesystem, which ends every request of the connection.

The guardian is a small process with nothing of the mount: no descriptor of it, ``/`` as its directory, a session
of its own (a terminal's or a process group's signals miss it). The kernel tells it when the daemon's main thread
has exited (``PR_SET_PDEATHSIG``: the main thread forked it); it then aborts the connection if it still exists,
which after a clean unmount it does not. It reaches fusectl where the host mounts it, or (root) mounts it
itself, attached nowhere, so it changes nothing on the host. It says on its stdout whether it can abort; where it
cannot (an unprivileged daemon on a host without fusectl), the daemon keeps the kernel's caches short and does not
run the watch, whose invalidations are what can get stuck (``daemon.py``).

A daemon that ends its session itself (unmounted, its descriptor closed: the kernel ended the connection's
requests) releases its guardian with SIGUSR1 (``release``): the guardian then says on its stdout whether the
connection still existed, that is whether the mount was detached while a program still had a file or its working
directory there, and exits without a word on its stderr, which is the daemon's terminal or log.

Run as ``python -I -S guardian.py DEV PID``: a standalone script, stdlib only, so that it starts in milliseconds.
"""

from __future__ import annotations

import contextlib
import ctypes
import io
import os
import signal
import subprocess
import sys
import time

CONNECTIONS = "/sys/fs/fuse/connections"
READY, UNABLE = "ready", "unable"
#: the answer to ``release``: the connection still existed once the daemon had closed it (the mount was in use)
IN_USE, GONE = "in-use", "gone"
#: after the death signal, how long the daemon's main thread may take to show as exited in /proc
EXIT_GRACE = 2.0
#: after a release, how long a connection may take to end before its mount is called in use
RELEASE_GRACE = 0.5

# <linux/prctl.h>; <linux/mount.h> and the new mount API's system calls (one number on every architecture)
PR_SET_PDEATHSIG = 1
SYS_FSOPEN, SYS_FSCONFIG, SYS_FSMOUNT = 430, 431, 432
FSOPEN_CLOEXEC, FSMOUNT_CLOEXEC, FSCONFIG_CMD_CREATE = 1, 1, 6


def connection_name(dev: int) -> str:
    """fusectl names a connection by the kernel's device number of the mount (``MKDEV``: major << 20 | minor)."""
    return str((os.major(dev) << 20) | os.minor(dev))


# -- the daemon's side ---------------------------------------------------------------------------------------


#: the guardians this process started: each lives as long as this process's main thread
_started: list[subprocess.Popen[bytes]] = []


def start(dev: int) -> bool:
    """Start the guardian of the connection of the mount with device number ``dev``; whether it can abort it.

    Call from the main thread: the kernel's parent-death signal follows the thread that forks, and a worker thread
    can retire long before the daemon ends."""
    guardian = subprocess.Popen(
        [sys.executable, "-I", "-S", os.path.abspath(__file__), str(dev), str(os.getpid())],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        cwd="/",
        start_new_session=True,
    )
    assert guardian.stdout is not None
    answer = guardian.stdout.readline().decode("ascii", "replace").strip()
    _started.append(guardian)
    if answer != READY:
        guardian.stdout.close()
    return answer == READY


def release(timeout: float = 5.0) -> bool | None:
    """After the daemon closed its session: end the guardians this process started, which have nothing left to
    abort. Whether a connection still existed then (the mount was detached while in use; its programs now get
    ENOTCONN); None when no guardian could tell."""
    in_use: bool | None = None
    for guardian in _started:
        if guardian.stdout is None or guardian.stdout.closed:  # unable to abort, or released already
            continue
        with contextlib.suppress(ProcessLookupError):
            guardian.send_signal(signal.SIGUSR1)
        answer = guardian.stdout.readline().decode("ascii", "replace").strip()
        guardian.stdout.close()
        if answer in (IN_USE, GONE):
            in_use = bool(in_use) or answer == IN_USE
        with contextlib.suppress(subprocess.TimeoutExpired):
            guardian.wait(timeout)
    return in_use


# -- the guardian ------------------------------------------------------------------------------------------


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)  # the interpreter links libc: no search (find_library runs ldconfig)


def fusectl() -> int | None:
    """A descriptor of fusectl's root: the host's mount, or (root only) a mount of its own, attached nowhere.

    A mount of its own is made with the new mount API (``fsopen``/``fsmount``) rather than in a mount namespace of
    its own: a namespace copies every mount, the FUSE mounts of all daemons among them, and a copy keeps a FUSE
    connection alive after its daemon unmounts it.
    """
    if os.path.ismount(CONNECTIONS):
        return os.open(CONNECTIONS, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    libc = _libc()
    config = libc.syscall(SYS_FSOPEN, b"fusectl", FSOPEN_CLOEXEC)
    if config < 0:
        return None
    try:
        if libc.syscall(SYS_FSCONFIG, config, FSCONFIG_CMD_CREATE, None, None, 0) < 0:
            return None
        mount = libc.syscall(SYS_FSMOUNT, config, FSMOUNT_CLOEXEC, 0)
        return mount if mount >= 0 else None
    finally:
        os.close(config)


def _main_thread_gone(pid: int, parent: int) -> bool:
    """Whether the daemon's main thread has exited: reparented (the whole process is gone), or its main thread a
    zombie while another thread is still stuck in the kernel."""
    if os.getppid() != parent:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            state = stat.read().rpartition(b")")[2].split()[0]
    except (OSError, IndexError):
        return True
    return state in (b"Z", b"X")


class Connection:
    """One FUSE connection's ``abort`` and ``waiting`` files in fusectl, opened while it lives and kept open.

    Kept descriptors answer for that connection only: once it has ended, ``waiting`` reads empty and a write to
    ``abort`` does nothing, even after another mount got its number. Opening the files by name when the daemon
    dies would not do: the kernel hands a freed device number to the next mount at once (``omxfs umount A &&
    omxfs mount B`` gives B the number A had), and the daemon's exit may show in ``/proc`` only a moment after its
    death signal, so a guardian that looked the number up then could abort the next daemon's mount. The files
    hold no reference to the connection: they keep nothing alive.
    """

    def __init__(self, abort_fd: int, waiting_fd: int) -> None:
        self._abort = abort_fd
        self._waiting = waiting_fd

    @classmethod
    def open(cls, fusectl: int, dev: int) -> Connection | None:
        """The files of the connection of the mount with device number ``dev``; None if we may not abort it."""
        try:
            abort_fd = os.open(f"{connection_name(dev)}/abort", os.O_WRONLY | os.O_CLOEXEC, dir_fd=fusectl)
        except OSError:
            return None
        try:
            waiting_fd = os.open(f"{connection_name(dev)}/waiting", os.O_RDONLY | os.O_CLOEXEC, dir_fd=fusectl)
        except OSError:
            os.close(abort_fd)
            return None
        return cls(abort_fd, waiting_fd)

    def abort(self) -> bool:
        """End every request of the connection, if it still exists (after a clean unmount it does not); whether it
        did. Once: ``waiting`` asks the connection only at its first read, and cannot be sought back."""
        if not os.read(self._waiting, 32):
            return False
        os.write(self._abort, b"1")
        return True

    def exists(self) -> bool:
        """Whether the connection still exists, asked afresh: ``waiting`` opened again through its descriptor (a
        new open of the same file, which answers for the same connection only)."""
        with open(f"/proc/self/fd/{self._waiting}", "rb", buffering=0) as waiting:
            return bool(waiting.read(32))

    def ends_within(self, seconds: float) -> bool:
        """Whether the connection is gone within ``seconds``: a lazy unmount ends it only once every program that
        holds the mount lets go, and one that merely walks a path through it lets go within milliseconds."""
        deadline = time.monotonic() + seconds
        while self.exists():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
        return True

    def close(self) -> None:
        os.close(self._abort)
        os.close(self._waiting)


def guard(dev: int, pid: int) -> None:
    libc = _libc()
    # before the death signal is armed: none is lost; SIGUSR1 is the daemon's release
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGUSR1})
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    parent = os.getppid()
    fusectl_fd = fusectl()
    connection = Connection.open(fusectl_fd, dev) if fusectl_fd is not None else None
    if fusectl_fd is not None:
        os.close(fusectl_fd)  # the connection's files keep a mount of our own alive by themselves
    if connection is None:
        _answer(UNABLE)
        return
    _answer(READY)
    if parent == pid and _wait_for_exit(pid, parent):  # else the daemon died before the death signal was armed
        # released: the daemon's close ended the connection's requests, there is nothing to abort
        _answer(GONE if connection.ends_within(RELEASE_GRACE) else IN_USE)
    elif connection.abort():
        print(f"omxfs guardian: the daemon died with its mount live: aborted FUSE connection {dev}", file=sys.stderr)


def _answer(line: str) -> None:
    """Tell the daemon, which may be gone already (killed while it started): the guardian's work goes on without a
    reader, and unbuffered, so that nothing is left to fail again (and be printed) when the interpreter exits."""
    with contextlib.suppress(BrokenPipeError), io.FileIO(sys.stdout.fileno(), "w", closefd=False) as out:
        out.write(f"{line}\n".encode("ascii"))


def _wait_for_exit(pid: int, parent: int) -> bool:
    """Until the daemon's main thread has exited (a SIGTERM from anyone else is not its death), or the daemon
    released this guardian (SIGUSR1): whether it did."""
    while True:
        if not _main_thread_gone(pid, parent) and signal.sigwait({signal.SIGTERM, signal.SIGUSR1}) == signal.SIGUSR1:
            return True
        deadline = time.monotonic() + EXIT_GRACE
        while not _main_thread_gone(pid, parent):  # the signal comes a moment before /proc shows the exit
            if time.monotonic() > deadline:
                break  # a SIGTERM from someone else: the daemon lives on
            time.sleep(0.01)
        else:
            return False


if __name__ == "__main__":
    guard(int(sys.argv[1]), int(sys.argv[2]))
