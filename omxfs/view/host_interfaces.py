"""The host paths a ``--bind``/``--ro-bind`` may never show: the kernel's interfaces and the host's service sockets.

A view has its own ``/proc``, a minimal ``/dev`` and ``/sys`` read-only; a bind of the host's own gave them back.
``--bind /proc:/X`` showed the host's ``/proc`` read-write, and root in a view started by root is the host's uid 0
there: writing ``/X/sys/kernel/core_pattern`` would run a program as the host's root. Read-only is no answer, so
``--ro-bind`` is refused too, for each of them, as no use of one can be named that the view does not already have:

- ``/proc``: the host's processes (their environments, their ``fd/`` and ``root/`` links, which no read-only mount
  stops) and the kernel's settings;
- ``/sys``: shown read-only in every view already; a bind can only add write access to the kernel's settings;
- ``/dev``: a device node opens for writing through a read-only mount (``/dev/sda``, ``/dev/kvm``, ``/dev/mem``);
  a view has ``/dev/null``, ``/dev/zero``, ``/dev/random``, ``/dev/urandom``, ``/dev/tty``, ``/dev/pts`` and
  ``/dev/shm`` of its own;
- ``/run``: the host's service sockets (systemd's, D-Bus's, Docker's), which accept connections through a
  read-only mount just the same.

"Is ``/proc``" is judged three ways, each after symlinks are resolved (``realpath``): by path (the directory, one
inside it, or one above it: ``/`` holds them all, and bwrap's binds are recursive); by mount (a mount of a kernel
interface's filesystem, ``proc``, ``sysfs``, ``devpts``, cgroups and the like, at the source, inside it or holding
it: a second procfs mounted anywhere, or a bind mount of one); and by device (a file on the same filesystem as an
in-memory mount at or under ``/proc``, ``/sys``, ``/dev`` or ``/run``: ``/run``'s tmpfs bind-mounted elsewhere),
with the filesystem type of the source itself asked of the kernel (``statfs``) where the mount table might not
show it.
"""

from __future__ import annotations

import contextlib
import ctypes
import os

from omxfs.fuse.mounts import MountEntry, mount_table

#: the host's directories a bind may not show, with why (one line each, for the refusal)
HOST_INTERFACES = {
    "/proc": "the host's processes and kernel settings (root in a view is the host's uid 0 for /proc/sys)",
    "/sys": "the kernel's and devices' settings (every view shows /sys read-only already)",
    "/dev": "the host's devices (a device node opens for writing through a read-only bind too)",
    "/run": "the host's service sockets (a socket accepts connections through a read-only bind too)",
}
#: filesystems that are the kernel's own interfaces, wherever they are mounted (mount table names)
KERNEL_FILESYSTEMS = frozenset(
    {"proc", "sysfs", "devtmpfs", "devpts", "cgroup", "cgroup2", "debugfs", "tracefs", "securityfs", "bpf",
     "configfs", "efivarfs", "pstore", "fusectl", "binfmt_misc", "selinuxfs", "mqueue", "nsfs", "rpc_pipefs",
     "nfsd"}
)  # fmt: skip
#: filesystems whose device number is one instance's own: the same device at another path is the same mount's files
IN_MEMORY = frozenset({"tmpfs", "devtmpfs", "ramfs"})
#: the same filesystems by ``statfs`` magic (devtmpfs says tmpfs's: it is judged by path and device)
KERNEL_MAGICS = {
    0x9FA0: "proc",
    0x62656572: "sysfs",
    0x1CD1: "devpts",
    0x27E0EB: "cgroup",
    0x63677270: "cgroup2",
    0x64626720: "debugfs",
    0x74726163: "tracefs",
    0x73636673: "securityfs",
    0xCAFE4A11: "bpf",
    0x62656570: "configfs",
    0xDE5E81E4: "efivarfs",
    0x6165676C: "pstore",
    0x65735543: "fusectl",
    0x42494E4D: "binfmt_misc",
    0xF97CFF8C: "selinuxfs",
    0x19800202: "mqueue",
    0x6E736673: "nsfs",
    0x67596969: "rpc_pipefs",
    0x6E667364: "nfsd",
}


def why_not_bindable(source: str) -> str | None:
    """Why ``source`` may not be bound into a view (one line), or None."""
    real = os.path.realpath(source)
    for root, why in HOST_INTERFACES.items():
        if _inside(real, root) or _inside(root, real):
            return f"this is, holds or lies inside the host's {root}, which no view may show: {why}"
    mounts = mount_table()
    for entry in _touching(real, mounts):
        if entry.fstype in KERNEL_FILESYSTEMS:
            return (
                f"this is, holds or lies inside a {entry.fstype} mount at {entry.mountpoint}, a kernel interface "
                "(like /proc and /sys) that no view may show"
            )
    magic = _filesystem_magic(real)
    if magic in KERNEL_MAGICS:
        return f"this lies on a {KERNEL_MAGICS[magic]} filesystem, a kernel interface (like /proc) no view may show"
    protected = _protected_devices(mounts)
    devices = [entry.dev for entry in _touching(real, mounts)]
    with contextlib.suppress(OSError):
        devices.append(os.stat(real).st_dev)  # the source's own, which the mount table may not show
    for device in devices:
        if device in protected:
            root = protected[device]
            return f"this shows the host's {root} by another path, which no view may show: {HOST_INTERFACES[root]}"
    return None


def _touching(path: str, mounts: list[MountEntry]) -> list[MountEntry]:
    """The mounts at ``path``, inside it (a recursive bind carries them along) or holding it."""
    return [e for e in mounts if _inside(e.mountpoint, path) or _inside(path, e.mountpoint)]


def _protected_devices(mounts: list[MountEntry]) -> dict[int, str]:
    """The devices of the in-memory mounts at or under ``HOST_INTERFACES``' directories, each with its directory.
    In memory only (``IN_MEMORY``: a device of its own for each), as a disk's device is shared by everything on
    it (a container's ``/dev/termination-log``, a file of the host's disk); and not the devices of the mounts that
    hold those directories (``/``'s, a tmpfs in an initramfs)."""
    protected: dict[int, str] = {}
    holding: set[int] = set()
    for entry in mounts:
        root = next((root for root in HOST_INTERFACES if _inside(entry.mountpoint, root)), None)
        if root is not None:
            if entry.fstype in IN_MEMORY:
                protected.setdefault(entry.dev, root)
        elif any(_inside(root, entry.mountpoint) for root in HOST_INTERFACES):
            holding.add(entry.dev)
    return {dev: root for dev, root in protected.items() if dev not in holding}


def _filesystem_magic(path: str) -> int | None:
    """``statfs(path).f_type``, which Python's ``os.statvfs`` leaves out; None if the kernel says nothing."""
    libc = ctypes.CDLL(None, use_errno=True)
    buffer = ctypes.create_string_buffer(256)  # struct statfs: f_type first, a long on every 64-bit ABI here
    if libc.statfs(os.fsencode(path), buffer) != 0:
        return None
    return ctypes.c_long.from_buffer(buffer).value & 0xFFFFFFFF


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")
