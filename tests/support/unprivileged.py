"""Run a command as an unprivileged user (``nobody``) from a root test, wherever the checkout lives.

Two things keep ``nobody`` from running omx at all on a root's machine, and neither is what a test means to check:
the directories omx runs from (the interpreter, the virtual environment, the checkout's packages) may sit under a
directory only root may traverse (pyenv's ``/root/.pyenv``; a clone in ``/root/omx`` or under ``mktemp -d``, 0700),
and ``/dev/fuse`` may be 0600 (some containers; Debian and Ubuntu make it 0666). The command therefore runs in a
private mount namespace where each such directory is bound read-only at its own path, under a world-traversable
tmpfs laid over the highest directory nobody could not traverse: the same paths work (a venv's and an editable
install's paths are absolute) and nothing else of that directory is there. ``/dev/fuse`` is covered by a 0666 node
of the same device. Nothing outside the namespace changes. Inside, it is plain ``setpriv`` to uid/gid 65534 with no
supplementary groups: no capability, no root.
"""

from __future__ import annotations

import os
import shlex
import stat
import tempfile
from collections import defaultdict
from pathlib import Path

from omxfs.view.sandbox import runtime_dirs

NOBODY = 65534


def blocked_ancestor(path: Path) -> Path | None:
    """The highest directory above ``path`` that others may not traverse, if any."""
    for parent in reversed(path.parents):
        if parent != Path("/") and not os.stat(parent).st_mode & stat.S_IXOTH:
            return parent
    return None


def hidden_runtime() -> dict[Path, list[Path]]:
    """The directories omx runs from that nobody cannot reach, by the highest directory that blocks each."""
    hidden: dict[Path, list[Path]] = defaultdict(list)
    for name in runtime_dirs():
        path = Path(os.path.realpath(name))
        blocked = blocked_ancestor(path)
        if blocked is not None:
            hidden[blocked].append(path)
    return hidden


def _skeleton(blocked: Path, paths: list[Path], skeleton: Path) -> list[str]:
    """Shell steps that fill a 0755 tmpfs at ``skeleton`` with only ``paths``, bound read-only where they were under
    ``blocked``; it is moved over ``blocked`` once every skeleton is filled (one may hide another's source)."""
    q = shlex.quote
    steps = [f"mkdir -p {q(str(skeleton))}", f"mount -t tmpfs -o mode=755 tmpfs {q(str(skeleton))}"]
    for path in paths:
        inside = skeleton / path.relative_to(blocked)
        steps += [f"mkdir -p {q(str(inside))}", f"mount --bind -o ro {q(str(path))} {q(str(inside))}"]
    return steps


def as_nobody(argv: list[str], scratch: Path, env: dict[str, str] | None = None) -> list[str]:
    """``argv`` wrapped so that it runs as nobody, with omx's own directories and FUSE reachable (see the module);
    ``scratch`` is a directory of root's for the namespace's own mount sources."""
    steps = ["set -e", "umask 022"]  # the tmpfs skeletons' directories: traversable by nobody
    if os.path.exists("/dev/fuse") and not os.stat("/dev/fuse").st_mode & stat.S_IWOTH:
        node = shlex.quote(str(scratch / "fuse"))
        steps += [f"rm -f {node}", f"mknod -m 666 {node} c 10 229", f"mount --bind {node} /dev/fuse"]
    moves: list[str] = []
    for number, (blocked, paths) in enumerate(sorted(hidden_runtime().items())):
        skeleton = scratch / f"reveal-{number}"
        steps += _skeleton(blocked, paths, skeleton)
        moves.append(f"mount --move {shlex.quote(str(skeleton))} {shlex.quote(str(blocked))}")
    steps += moves
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
