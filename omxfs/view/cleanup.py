"""Run as ``python -I -S cleanup.py MOUNTPOINT`` by ``omxfs run``: when its launcher ends, however it ends, the view's
daemon is unmounted and its directory removed.

Why it exists: a killed launcher cannot clean up, and fusermount3's ``auto_unmount`` does not do it for an
unprivileged user. That option leaves a setuid fusermount3 beside the daemon which, when the daemon dies, checks
the mount by opening it before it unmounts; root may not enter another user's FUSE mount (no ``allow_root``), so
the check fails and fusermount3 exits, leaving the mount stale (ENOTCONN) in the host's table (libfuse issue
1491). ``fusermount3 -u`` by the user itself only reads the mount table, and works. A root launcher's mount lives
in its own mount namespace, which this process shares and ends with; its empty directory stayed behind as well.

How: the launcher starts this process in a session of its own (a terminal's or a process group's signals miss
it), with a pipe on stdin whose write end only the launcher holds. End of file means the launcher is gone: if
MOUNTPOINT is still a mount here, ``fusermount3 -u -z``; then the directory is removed if empty. After a clean
end the launcher has done both, and this finds nothing to do.

Standalone on purpose (no omx import, started with ``-I -S``): it runs beside every view.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys

MOUNTINFO = "/proc/self/mountinfo"


def mounted(path: str) -> bool:
    """Whether ``path`` is a mount point in this process's mount namespace (mountinfo's fifth field, octal-escaped)."""
    escaped = path.replace("\\", "\\134").replace(" ", "\\040").replace("\t", "\\011").replace("\n", "\\012")
    with open(MOUNTINFO, encoding="utf-8", errors="surrogateescape") as table:
        return any(line.split(" ")[4] == escaped for line in table)


def main(argv: list[str]) -> None:
    if len(argv) != 1:
        sys.exit("usage: cleanup.py MOUNTPOINT  (stdin: a pipe that ends with the launcher)")
    mountpoint = argv[0]
    while os.read(0, 4096):  # nothing is ever written: this waits for end of file
        pass
    if mounted(mountpoint):
        subprocess.run(
            ["fusermount3", "-u", "-z", "-q", mountpoint],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )
    with contextlib.suppress(OSError):
        os.rmdir(mountpoint)


if __name__ == "__main__":
    main(sys.argv[1:])
