"""Run as ``python -I -S review_mount.py LOWER UPPER WORK TARGET ZONE_FD [MIDDLE...] -- BWRAP ARGS...`` by ``omxfs run
--review``: mount the review's overlay of a zone on TARGET in a user and mount namespace of its own, then exec
bubblewrap in it, which binds TARGET as the zone (``omxfs.checkpoints.review``). A nested branch's MIDDLE layers
(its parent's upper layer, that one's parent's...) lie between UPPER and the zone, the topmost first: the kernel
honours their whiteouts and opaque directories (``user.overlay.*`` too, with ``userxattr``).

Why a namespace of its own, for root too: the overlay must be seen by the view alone (the host, the shared mount
and other views keep the zone as it was), and an unprivileged user may mount an overlay only in a user namespace
it owns (Linux 5.11). Mounted there, with ``userxattr``, the upper layer has the same format whoever runs the
view (whiteouts as 0:0 devices, ``user.overlay.*`` attributes), so ``omxfs diff --review`` and ``omxfs accept``
read one format. Root maps every uid to itself (the zone's owners stay who they are, root keeps reading every
file); another user maps only its own uid and gid. The kernel overlay keeps the run's reads and writes native:
only the first write of a file of the zone copies it up.

LOWER is checked against ZONE_FD (the zone the launcher opened, by device and inode) after the mount, so a path
swapped meanwhile is refused; then ZONE_FD is made a descriptor of TARGET, so that bwrap's ``--bind-fd ZONE_FD``
binds the overlay where it would have bound the zone. Exit status ``SETUP_FAILED`` if any of it fails.

Standalone on purpose (no omx import, started with ``-I -S``), like ``scope.py``: it must be single-threaded to
enter a user namespace.
"""

from __future__ import annotations

import ctypes
import os
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
#: the largest id range a user namespace maps (every uid but the invalid (uid_t)-1)
ALL_IDS = 4294967295
#: this helper's own failure, told apart from bubblewrap's by ``launch.py``
SETUP_FAILED = 125


def main(argv: list[str]) -> int:
    lower, upper, work, target, zone_fd, *rest = argv
    middle, command = (rest[: rest.index("--")], rest[rest.index("--") + 1 :]) if "--" in rest else ([], [])
    if not command:
        print("review_mount: usage: LOWER UPPER WORK TARGET ZONE_FD [MIDDLE...] -- COMMAND...", file=sys.stderr)
        return SETUP_FAILED
    libc = ctypes.CDLL(None, use_errno=True)
    uid, gid = os.getuid(), os.getgid()
    mapper = _root_mapper() if uid == 0 else None
    if libc.unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0:
        return _fail("entering a user namespace for the review's overlay")
    if mapper is not None:
        pid, go = mapper
        os.write(go, b"x")
        os.close(go)
        if os.waitpid(pid, 0)[1] != 0:
            print("omxfs run --review: cannot map the ids of the review's user namespace", file=sys.stderr)
            return SETUP_FAILED
    else:
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {uid} 1")
        _write("/proc/self/gid_map", f"{gid} {gid} 1")
    if libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        return _fail("making the review's mounts private")
    lowers = ":".join(_escape(layer) for layer in (*middle, lower))
    options = f"lowerdir={lowers},upperdir={_escape(upper)},workdir={_escape(work)},userxattr"
    if libc.mount(b"overlay", os.fsencode(target), b"overlay", 0, options.encode()) != 0:
        return _fail(f"mounting the review's overlay of {lower} (upper layer {upper})")
    zone = os.fstat(int(zone_fd))
    seen = os.stat(lower)
    if (seen.st_dev, seen.st_ino) != (zone.st_dev, zone.st_ino):
        print(f"omxfs run --review: {lower} changed while the view started: try again", file=sys.stderr)
        return SETUP_FAILED
    merged = os.open(target, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW)
    os.dup2(merged, int(zone_fd))  # inheritable: bwrap gets the overlay under the zone's descriptor number
    os.close(merged)
    os.execv(command[0], command)
    return SETUP_FAILED  # execv returns only by raising


def _root_mapper() -> tuple[int, int]:
    """A child left in the caller's namespace that maps every id of ours once we have entered the new one: a
    process may write only its own single id into its own map; a wider map is written from the parent namespace
    by a process holding CAP_SETUID there (root's)."""
    ready, go = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        os.close(go)
        code = 1
        try:
            if os.read(ready, 1) == b"x":
                _write(f"/proc/{parent}/uid_map", f"0 0 {ALL_IDS}")
                _write(f"/proc/{parent}/gid_map", f"0 0 {ALL_IDS}")
                code = 0
        finally:
            os._exit(code)
    os.close(ready)
    return pid, go


def _escape(path: str) -> str:
    # overlayfs splits its options at commas and lower layers at colons: both escaped with a backslash
    return path.replace("\\", "\\\\").replace(",", "\\,").replace(":", "\\:")


def _write(path: str, text: str) -> None:
    with open(path, "w", encoding="ascii") as f:
        f.write(text)


def _fail(what: str) -> int:
    code = ctypes.get_errno()
    print(f"omxfs run --review: {what}: {os.strerror(code)}", file=sys.stderr)
    return SETUP_FAILED


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
