"""The bubblewrap command line of a view: what the agent's processes see, where, and with which rights.

Why bubblewrap and not the namespace calls by hand: a view needs a user namespace (so an unprivileged user can
build it, and root in it holds no capability outside), a PID namespace (no daemon, no other view, no host process
to signal, ptrace or open through ``/proc``; everything left behind dies with the command), and a fresh root
assembled from binds. bwrap does exactly this, is already the agent sandbox's fallback, is audited and packaged
everywhere, and keeps the setup out of our (multithreaded) Python process, where ``unshare`` of a user namespace
is not even allowed.

What a view holds (order matters: later binds cover earlier ones):

- the host's system directories read-only (``/usr``, ``/etc``, ``/opt``, ``/sys`` ...; merged-usr symlinks as
  symlinks);
- a private ``/tmp`` (a tmpfs), an empty ``$HOME``, a minimal ``/dev``, its own ``/proc`` (whose machine-wide
  entries, ``/proc/sys`` first, are read-only: ``PROC_READ_ONLY``, and whose lists of keys are covered:
  ``PROC_HIDDEN``); no ``/run``, no ``/home``, no ``/var``: the
  host's UNIX sockets (``/tmp/tmux-*``, ``/run/*``) and files are not there to reach;
- the interpreter and packages omx runs from, read-only, so ``omx`` and ``omxfs`` work inside (after ``/tmp``:
  a checkout or a virtual environment may live there);
- the caller's ``--bind``/``--ro-bind`` paths (a toolchain, ``~/.gitconfig``), never inside the workspace;
- the workspace last, so nothing covers it: the view's daemon at WS (the shared zones, and other agents' zones
  read-only with their pending branches at ``agents/<zone>/@<branch>/``, as on the mount), then the agent's own zone
  read-write and ``.omxfs/`` read-only, each bound from a descriptor (``--bind-fd``), so a store hidden under a
  mount in place is bound all the same; in a branch's view, its siblings over its zone, read-only, from the daemon.

No capability survives (``--cap-drop ALL``), no new user namespace can be made inside (``--disable-userns``,
which would otherwise give back a full capability set over a copy of the view), the command dies with its
launcher (``--die-with-parent``); a seccomp filter (``seccomp.py``) keeps the view from typing into the caller's
terminal, from the kernel's keyrings (COMMAND starts in an empty session keyring of its own: ``scope.py``) and root
in a view from making set-ID files, which would be root's on the host.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from omxfs.store.layout import AGENTS, META_DIR
from omxfs.view.env import AGENT_ENV, VIEW_ENV

#: the host's system directories a view shows read-only, when they exist
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/sys")
#: where the host keeps secrets readable by their owner alone, hidden from root in a view
PRIVATE_CONFIG = "/etc"
#: the entries of ``/proc`` that act on the whole machine, not on the view's own processes. A root-started view's
#: root is the host's uid 0 without capabilities, and the kernel lets uid 0 write a sysctl with no capability at all
#: (``kernel.core_pattern`` alone runs a program as the host's root, outside every namespace), so these are bound
#: read-only over the view's own ``/proc``. bwrap means to cover ``sys`` itself, but skips it: it covers only what
#: ``access(W_OK)`` allows, and ``/proc/sys`` as a directory is never writable (its files are).
PROC_READ_ONLY = ("sys", "sysrq-trigger", "irq", "bus", "fs", "mtrr", "pressure", "acpi", "asound", "scsi", "driver")
#: the entries of ``/proc`` that list the kernel's keys of every keyring of the view's uid (the caller's: root's, for
#: a root-started view), their descriptions included (a Kerberos principal, an fscrypt key's name), and the key
#: counts of every uid: covered with ``/dev/null``, read-only and ``nodev`` as bwrap binds it, so they cannot even be
#: opened (EACCES). Keys themselves stay out of reach by the seccomp filter.
PROC_HIDDEN = ("keys", "key-users")
SCOPE = Path(__file__).with_name("scope.py")


@dataclass(frozen=True)
class Bind:
    source: str
    dest: str
    read_only: bool


@dataclass(frozen=True)
class ViewSpec:
    agent: str
    workspace: str  # the path the workspace shows at (inside the view as outside)
    daemon_mount: str  # where the view's daemon is mounted (outside the view)
    own_fd: int  # O_PATH descriptors of the agent's zone (a branch's overlay) and of the store's .omxfs/
    meta_fd: int
    cwd: str
    command: Sequence[str]
    binds: Sequence[Bind] = ()
    network: bool = True
    home: str | None = None
    info_fd: int | None = None
    seccomp_fd: int | None = None  # seccomp.py's filter
    privileged: bool = False  # running as root: drop the capabilities bwrap would otherwise keep
    runtime: Sequence[str] = field(default_factory=lambda: runtime_dirs())
    #: in a branch's view, its siblings' names (``@NAME``): each bound read-only from the view's daemon, on the
    #: overlay's mountpoint of that name (``REVIEW_MARKS``)
    siblings: Sequence[str] = ()


#: the top-level packages of this project, found beside ``omxfs`` (in site-packages, or in an editable checkout)
PACKAGES = ("omxfs", "agent", "cli")


def runtime_dirs() -> list[str]:
    """The directories omx itself runs from: its virtual environment, and an editable checkout's packages (only
    those, not the checkout, which may hold anything, the workspace included)."""
    checkout = Path(__file__).resolve().parent.parent.parent
    dirs = {sys.prefix, sys.base_prefix, *(str(checkout / name) for name in PACKAGES if (checkout / name).is_dir())}
    covered: list[str] = list(SYSTEM_DIRS)
    for path in sorted(dirs, key=len):  # a directory inside one already shown is not bound again
        if not _under_any(path, covered):
            covered.append(path)
    return covered[len(SYSTEM_DIRS) :]


def bwrap_args(bwrap: str, spec: ViewSpec) -> list[str]:
    """The whole command line, ``bwrap`` to the command's last argument."""
    args = [bwrap, "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    if not spec.network:
        args.append("--unshare-net")
    args += ["--disable-userns", "--die-with-parent"]
    if spec.privileged:
        args += ["--cap-drop", "ALL"]
    args += _system()
    if spec.privileged:
        args += _hide_private(PRIVATE_CONFIG)
    args += ["--proc", "/proc", *_proc_read_only(), "--dev", "/dev", "--tmpfs", "/tmp", "--dir", "/var/tmp"]
    if spec.home and not _under_any(spec.home, (spec.workspace,)):
        args += ["--dir", spec.home]
    args += [*_ro_binds(spec.runtime)]  # after the private /tmp, which would cover a checkout or venv there
    for bind in spec.binds:
        args += ["--ro-bind" if bind.read_only else "--bind", bind.source, bind.dest]
    ws = spec.workspace
    args += ["--bind", spec.daemon_mount, ws]
    args += ["--bind-fd", str(spec.own_fd), f"{ws}/{AGENTS}/{spec.agent}"]
    for sibling in spec.siblings:
        args += [
            "--ro-bind",
            f"{spec.daemon_mount}/{AGENTS}/{spec.agent}/{sibling}",
            f"{ws}/{AGENTS}/{spec.agent}/{sibling}",
        ]
    args += ["--ro-bind-fd", str(spec.meta_fd), f"{ws}/{META_DIR}"]
    args += ["--setenv", VIEW_ENV, spec.agent, "--setenv", AGENT_ENV, spec.agent]
    if spec.info_fd is not None:
        args += ["--info-fd", str(spec.info_fd)]
    if spec.seccomp_fd is not None:
        args += ["--seccomp", str(spec.seccomp_fd)]
    # the command starts through scope.py: Landlock keeps the host's abstract UNIX sockets out of reach
    args += ["--chdir", spec.cwd, "--", sys.executable, "-I", "-S", str(SCOPE), *spec.command]
    return args


def _proc_read_only() -> list[str]:
    """The view's ``/proc`` entries that act on the whole machine, bound read-only over it (``PROC_READ_ONLY``), and
    those that list the host's keys, covered (``PROC_HIDDEN``)."""
    args: list[str] = []
    for name in PROC_READ_ONLY:
        path = f"/proc/{name}"
        if os.path.exists(path):
            args += ["--ro-bind", path, path]
    for name in PROC_HIDDEN:
        path = f"/proc/{name}"
        if os.path.exists(path):
            args += ["--ro-bind", "/dev/null", path]
    return args


def start_dir(workspace: str, agent: str, cwd: str | None) -> str:
    """The caller's directory when it lies inside the workspace, else the agent's own zone."""
    if cwd is not None and _under_any(cwd, (workspace,)):
        return cwd
    return f"{workspace}/{AGENTS}/{agent}"


def inside(path: str, root: str) -> bool:
    return _under_any(path, (root,))


def read_only_dirs(paths: Sequence[str]) -> list[str]:
    """bwrap arguments that show each of ``paths`` read-only at its own place, a symlink as the same symlink (merged
    /usr: /bin -> usr/bin); a path this machine lacks is left out. The step sandbox builds its system the same way."""
    args: list[str] = []
    for path in paths:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return args


def _system() -> list[str]:
    args = read_only_dirs(SYSTEM_DIRS)
    resolv = os.path.realpath("/etc/resolv.conf")  # often a link into /run, which a view does not show
    if not _under_any(resolv, SYSTEM_DIRS) and os.path.isfile(resolv):
        args += ["--ro-bind", resolv, resolv]
    return args


def _hide_private(root: str) -> list[str]:
    """Cover what only its owner may read under ``root`` (``/etc/shadow``, ssh host keys, ``/etc/ssl/private``).

    Root in a view holds no capability, but it is still uid 0, the owner of those files: without this it could
    read them through the read-only system binds. Files are covered by ``/dev/null``, which a ``nodev`` bind makes
    unopenable (EACCES); directories become empty and read-only.
    """
    args: list[str] = []
    for top, dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(top, name)
            if _owner_only(path, directory=False):
                args += ["--ro-bind", "/dev/null", path]
        for name in list(dirs):
            path = os.path.join(top, name)
            if _owner_only(path, directory=True):
                args += ["--tmpfs", path, "--remount-ro", path]
                dirs.remove(name)
    return args


def _owner_only(path: str, *, directory: bool) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    kind = stat.S_ISDIR(st.st_mode) if directory else stat.S_ISREG(st.st_mode)
    return kind and not st.st_mode & stat.S_IROTH


def _ro_binds(paths: Sequence[str]) -> list[str]:
    args: list[str] = []
    for path in paths:
        args += ["--ro-bind", path, path]
    return args


def _under_any(path: str, roots: Sequence[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)
