"""Run a command as an unprivileged user (``nobody``) from a root test, on machines made for root.

Two things on this kind of machine keep ``nobody`` from running omx at all, and neither is what a test means to
check: the interpreter may live under ``/root`` (pyenv), which only root may traverse, and ``/dev/fuse`` may be
0600 (some containers; Debian and Ubuntu make it 0666). The command therefore runs in a private mount namespace
where the interpreter's directory is reachable through a world-traversable tmpfs, and ``/dev/fuse`` is covered by
a 0666 node of the same device; nothing outside the namespace changes. Inside, it is plain ``setpriv`` to
uid/gid 65534 with no supplementary groups: no capability, no root.
"""

from __future__ import annotations

import os
import shlex
import stat
import sys
import tempfile
from pathlib import Path

NOBODY = 65534


def blocked_ancestor(path: Path) -> Path | None:
    """The highest directory above ``path`` that others may not traverse, if any."""
    for parent in reversed(path.parents):
        if parent != Path("/") and not os.stat(parent).st_mode & stat.S_IXOTH:
            return parent
    return None


def as_nobody(argv: list[str], scratch: Path, env: dict[str, str] | None = None) -> list[str]:
    """``argv`` wrapped so that it runs as nobody, with the interpreter and FUSE reachable (see the module);
    ``scratch`` is a directory of root's for the namespace's own mount sources."""
    steps = ["set -e"]
    prefix = Path(os.path.realpath(sys.base_prefix))
    blocked = blocked_ancestor(prefix)
    hold = shlex.quote(str(scratch / "interpreter"))
    steps.append(f"mkdir -p {hold}")
    if blocked is not None:
        steps += [
            f"mount --bind {shlex.quote(str(prefix))} {hold}",
            f"mount -t tmpfs -o mode=755 tmpfs {shlex.quote(str(blocked))}",
            f"mkdir -p {shlex.quote(str(prefix))}",
            f"mount --move {hold} {shlex.quote(str(prefix))}",
        ]
    if os.path.exists("/dev/fuse") and not os.stat("/dev/fuse").st_mode & stat.S_IWOTH:
        node = shlex.quote(str(scratch / "fuse"))
        steps += [f"rm -f {node}", f"mknod -m 666 {node} c 10 229", f"mount --bind {node} /dev/fuse"]
    variables = " ".join(shlex.quote(f"{k}={v}") for k, v in (env or {}).items())
    steps.append(
        f"exec setpriv --reuid {NOBODY} --regid {NOBODY} --clear-groups env HOME=/tmp {variables} "
        + " ".join(shlex.quote(a) for a in argv)
    )
    return ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", "\n".join(steps)]


def nobody_dir() -> Path:
    """A fresh directory nobody owns, under a path nobody can traverse (pytest's own tmp_path is root's 0700)."""
    path = Path(tempfile.mkdtemp(prefix="omx-nobody-ws-"))
    os.chmod(path, 0o755)
    os.chown(path, NOBODY, NOBODY)
    return path
