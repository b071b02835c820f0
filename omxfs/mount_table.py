"""The kernel's mount table, and whether a mount's daemon answers.

Every command on a workspace reads it first (a mount may cover the path), so it imports little: a probe's process
is started with ``subprocess`` only when a FUSE mount holds the path. ``omxfs.fuse.mounts`` builds mounting and
unmounting on it.
"""

from __future__ import annotations

import errno
import os
from enum import Enum
from pathlib import Path

from omxfs.errors import MountError
from omxfs.plain_record import PlainRecord

TYPE_CHECKING = False  # typing's constant: typing itself is not imported at run time
if TYPE_CHECKING:
    import subprocess

FSTYPE = "fuse.omxfs"
MOUNTINFO = Path("/proc/self/mountinfo")


class MountEntry(PlainRecord):
    """One line of the mount table."""

    __slots__ = ("dev", "fstype", "mountpoint", "options", "source")
    FIELDS = ("mountpoint", "fstype", "source", "dev", "options")

    def __init__(self, mountpoint: str, fstype: str, source: str, dev: int, options: tuple[str, ...] = ()) -> None:
        self.mountpoint, self.fstype, self.source = mountpoint, fstype, source
        self.dev = dev  # st_dev of files on the mount
        self.options = options  # the filesystem's own (an overlay's ``upperdir=...``), each unescaped


def _unescape(field: str) -> str:
    """mountinfo escapes space, tab, newline and backslash as ``\\ooo``."""
    if "\\" not in field:
        return field
    import re

    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def mount_table(mountinfo: Path = MOUNTINFO) -> list[MountEntry]:
    entries = []
    for line in mountinfo.read_text("utf-8", "surrogateescape").splitlines():
        fields = line.split()
        if " - " not in line or len(fields) < 5:
            continue
        after = line.split(" - ", 1)[1].split()
        major, _, minor = fields[2].partition(":")
        entries.append(
            MountEntry(
                _unescape(fields[4]),
                after[0] if after else "",
                after[1] if len(after) > 1 else "",
                os.makedev(int(major), int(minor or 0)),
                tuple(_unescape(o) for o in after[2].split(",")) if len(after) > 2 else (),
            )
        )
    return entries


def mount_at(mountpoint: str, mountinfo: Path = MOUNTINFO) -> MountEntry | None:
    """The mount on top at ``mountpoint`` (the last one listed), if any."""
    return next((e for e in reversed(mount_table(mountinfo)) if e.mountpoint == mountpoint), None)


def omx_mounts(mountinfo: Path = MOUNTINFO) -> list[str]:
    return [e.mountpoint for e in mount_table(mountinfo) if e.fstype == FSTYPE]


class State(Enum):
    FREE = "free"  # an ordinary directory
    LIVE = "live"  # an omxfs mount whose daemon answers
    STALE = "stale"  # a FUSE mount whose daemon died (ENOTCONN)
    UNRESPONSIVE = "unresponsive"  # a mount whose daemon does not answer (stopped, hung, or swamped)
    OTHER = "other"  # a mount point of some other filesystem


#: seconds a mount's daemon may take to answer a statfs before the mount is called unresponsive
PROBE_TIMEOUT = 5.0
#: the probe, in a process of its own: exit status 0 if the daemon answered, else the errno
_STATVFS = "import os, sys\ntry:\n    os.statvfs(sys.argv[1])\nexcept OSError as e:\n    sys.exit(e.errno or 5)"
#: probes that did not answer, kept so that their Popen objects are never collected while they wait
_abandoned: list[subprocess.Popen[bytes]] = []


def _statvfs(mountpoint: str, timeout: float) -> int | None:
    """The errno of a statfs of ``mountpoint`` (0: it answered), or None when it got no answer within ``timeout``.

    statfs always reaches the daemon (a stat may be answered from the kernel's attribute cache). It runs in a
    child process because a process whose request the daemon read and never answers waits uninterruptibly, SIGKILL
    included: a child is left behind, where a thread of ours would keep this process from exiting."""
    import subprocess
    import sys

    probe = subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", _STATVFS, mountpoint],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd="/",
    )
    try:
        return probe.wait(timeout)
    except subprocess.TimeoutExpired:
        probe.kill()  # ends it if its request is still queued; a request the daemon read cannot be taken back
        _abandoned.append(probe)
        return None


def probe(mountpoint: str, mountinfo: Path = MOUNTINFO, timeout: float = PROBE_TIMEOUT) -> State:
    entry = mount_at(mountpoint, mountinfo)
    code = _statvfs(mountpoint, timeout) if entry is not None else 0
    if code is None:
        return State.UNRESPONSIVE
    if code == errno.ENOTCONN:
        return State.STALE
    if entry is None:
        try:
            os.statvfs(mountpoint)  # not a mount point: nothing to wait for (below a stale mount: ENOTCONN)
        except PermissionError:
            pass
        except OSError as exc:
            if exc.errno == errno.ENOTCONN:
                return State.STALE
            raise MountError(f"{mountpoint}: {exc.strerror}", exc.errno or errno.EIO) from None
        return State.FREE
    return State.LIVE if entry.fstype == FSTYPE else State.OTHER
