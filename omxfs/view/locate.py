"""The store behind a workspace path, reached underneath any mount that covers it.

``omxfs run WS`` accepts what a user calls the workspace: the store directory itself, or the mountpoint of an
``omxfs mount``. A view binds the store's own directories, so it needs the store, and needs it by descriptor:

- a plain store (``WS/.omxfs/config.toml``): WS itself;
- a mount elsewhere (``omxfs mount STORE MNT``): the store its daemon's record names;
- a mount in place (``omxfs mount WS``, the README's quick start): the store is hidden under the mount. Its daemon
  holds an ``O_PATH`` descriptor of it, taken before mounting; ``/proc/<daemon>/fd/<N>`` resolves to the directory
  underneath, and the kernel lets the daemon's own user (and root) open it, as the daemon itself does.

The result is an ``O_PATH`` descriptor the caller owns, checked to be a store and not the mount.

WS is probed before anything stats it: a mount whose daemon is stopped or hung would make that stat (and
``omxfs run``) wait for good; ``mount_table.probe`` asks in a process of its own, with a time limit. ``omx`` probes
the paths it is given the same way (``check_answers``) before it stats them or starts again in a view.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from pathlib import Path

from omxfs.errors import MountError
from omxfs.mount_table import FSTYPE, MountEntry, State, mount_at, mount_table, probe
from omxfs.plain_record import PlainRecord
from omxfs.store.layout import CONFIG, META_DIR
from omxfs.store.mount_records import read_records
from omxfs.view.env import VIEW_ENV

_DIR = os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC


class Store(PlainRecord):
    """The store behind a workspace, held open."""

    __slots__ = ("covered_at", "fd", "path", "workspace")
    FIELDS = ("fd", "path", "workspace", "covered_at")

    def __init__(self, fd: int, path: str, workspace: str, covered_at: str | None = None) -> None:
        self.fd = fd  # O_PATH descriptor of the store's directory; the caller closes it
        self.path = path  # where the store is, for messages
        self.workspace = workspace  # the path the workspace shows at, inside the view as outside
        self.covered_at = covered_at  # a daemon's mount in place over the store (the path of both), if one is

    @property
    def reached(self) -> str:
        """A path to the store through ``fd``: it leads to the store even where a mount covers the store's path."""
        return f"/proc/self/fd/{self.fd}"


def locate(workspace: str | os.PathLike[str]) -> Store:
    """The store behind ``workspace``, or MountError with one line that says what to do."""
    beneath = store_beneath(workspace)
    if beneath is not None:
        return beneath
    shown = os.path.realpath(workspace)
    if not os.path.isfile(os.path.join(shown, META_DIR, CONFIG)):
        raise MountError(
            f"{workspace} is not an omxfs workspace (no {META_DIR}/{CONFIG}): create one with "
            f"`omxfs init {workspace} --agent NAME`",
            errno.ENOENT,
        )
    return Store(_open(shown), shown, shown)


def store_beneath(workspace: str | os.PathLike[str]) -> Store | None:
    """The store behind ``workspace`` when an omxfs mount covers it (``omxfs mount`` and ``fsck`` of a mountpoint,
    or of a store mounted in place, which reached through its mount is the mount's agent's view and read-only
    where it matters); None for any other path, which the caller takes as it is."""
    check_answers(os.path.abspath(workspace))
    shown = os.path.realpath(workspace)
    entry = mount_at(shown)
    if entry is None or entry.fstype != FSTYPE or _view_workspace(shown):
        return None
    return _behind(workspace, shown, entry)


def _view_workspace(shown: str) -> bool:
    """Whether ``shown`` is the workspace of the view this process runs in (``omxfs run``): its ``.omxfs/`` and the
    agent's zone are the store's own directories bound over the view's daemon, so the path serves as the store, to
    read (``.omxfs/`` is read-only there)."""
    return bool(os.environ.get(VIEW_ENV)) and mount_at(os.path.join(shown, META_DIR)) is not None


@contextlib.contextmanager
def store_path(workspace: Path) -> Iterator[Path]:
    """A path to the store behind ``workspace``: beneath the omxfs mount that covers it (``store_beneath``), else
    ``workspace`` itself; the descriptor that reaches a store beneath a mount is closed on the way out."""
    beneath = store_beneath(workspace)
    try:
        yield workspace if beneath is None else Path(beneath.reached)
    finally:
        if beneath is not None:
            os.close(beneath.fd)


def _behind(workspace: str | os.PathLike[str], shown: str, entry: MountEntry) -> Store:
    """The store behind the omxfs mount ``entry`` at ``shown``: its daemon's record names it; a mount in place
    hides it, and the daemon's own descriptor reaches it."""
    try:
        records = [r for r in read_records(Path(shown, META_DIR)) if os.path.realpath(r.mountpoint) == shown]
    except OSError:
        records = []
    if not records:
        raise MountError(
            f"{workspace} is an omxfs mount whose daemon cannot be found (another user's, or without "
            "--allow-other): name the store's directory instead",
            errno.EACCES,
        )
    record = records[0]
    if os.path.realpath(record.store) != shown:
        store = os.path.realpath(record.store)
        covering = mount_at(store)
        if covering is not None and covering.fstype == FSTYPE:  # a mount elsewhere of a store mounted in place
            return _behind(record.store, store, covering).replace(workspace=shown)
        return Store(_open(record.store), record.store, shown)
    fd = _underneath(record.pid, record.store, entry.dev)
    if fd is None:
        raise MountError(
            f"{workspace} is mounted over its own store, and the store underneath cannot be reached through "
            f"its daemon (pid {record.pid}, another user's?): unmount it (`omxfs umount {workspace}`) or run this "
            "as the daemon's user",
            errno.EACCES,
        )
    return Store(fd, record.store, shown, covered_at=shown)


def check_answers(path: str) -> None:
    """The FUSE mount that holds the absolute ``path`` (taken as written: realpath stats it), if one does, answers;
    else one line instead of a hang."""
    entry = _holding(path)
    if entry is None or not entry.fstype.startswith("fuse"):  # only a daemon can leave a stat waiting
        return
    point = entry.mountpoint
    state = probe(point)
    if state is State.UNRESPONSIVE:
        raise MountError(
            f"{point} is a mount whose daemon does not answer (stopped, hung or swamped): see `omxfs status`; "
            f"`omxfs umount {point}` unmounts it",
            errno.EBUSY,
        )
    if state is State.STALE:
        raise MountError(f"{point} is a stale mount (its daemon died): run `omxfs umount {point}`", errno.ENOTCONN)


def _holding(path: str) -> MountEntry | None:
    """The mount on top that holds ``path``: the deepest mount point at or above it, the last listed there."""
    found: MountEntry | None = None
    for entry in mount_table():
        point = entry.mountpoint
        inside = path == point or path.startswith(point.rstrip("/") + "/")
        if inside and (found is None or len(point) >= len(found.mountpoint)):
            found = entry
    return found


def _open(path: str) -> int:
    try:
        fd = os.open(path, _DIR)
    except OSError as exc:
        raise MountError(f"cannot open the workspace {path}: {exc.strerror}", exc.errno or errno.EIO) from None
    if not _is_store(fd):
        os.close(fd)
        raise MountError(f"{path} is not an omxfs workspace (no {META_DIR}/{CONFIG})", errno.ENOENT)
    return fd


def _underneath(pid: int, store: str, mount_dev: int) -> int | None:
    """Our own descriptor of the daemon's descriptor of ``store`` that is not on the mount, if one is reachable."""
    fds = Path(f"/proc/{pid}/fd")
    try:
        names = os.listdir(fds)
    except OSError:
        return None
    for name in names:
        try:
            if os.readlink(fds / name) != store:
                continue
            fd = os.open(fds / name, _DIR)
        except OSError:
            continue
        if os.fstat(fd).st_dev != mount_dev and _is_store(fd):
            return fd
        os.close(fd)
    return None


def _is_store(fd: int) -> bool:
    try:
        return os.path.isfile(f"/proc/self/fd/{fd}/{META_DIR}/{CONFIG}")
    except OSError:
        return False
