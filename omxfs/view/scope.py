"""Run as ``python -I -S scope.py COMMAND...`` inside a view: give COMMAND a session keyring of its own, scope IPC
with Landlock, then exec COMMAND.

A process keeps its session keyring across bwrap: without a new one, what the kernel looks up there by itself (a
CIFS or AFS token, an fscrypt v1 key) would be the caller's. ``KEYCTL_JOIN_SESSION_KEYRING`` with no name makes a
new, empty, anonymous one; the view's seccomp filter lets that one keyring call through and refuses every other
(``seccomp.py``), so nothing is ever put in it.

A view shares the host's network namespace unless ``--no-network``, and with it the host's *abstract* UNIX
sockets, which are names, not files, so no bind hides them (a desktop bus, a debugger, an agent's helper).
Landlock's scopes (ABI 6, Linux 6.12) close them: a process of the view may connect only to abstract sockets
made inside the view, and signal only processes inside it. Where the kernel has no scopes this execs COMMAND
unchanged (and says so on stderr once): the view's namespaces still hold everything else.

Standalone on purpose (no omx import, started with ``-I -S``): it runs before every view's command.
"""

from __future__ import annotations

import ctypes
import os
import platform
import signal
import sys

SYS_LANDLOCK_CREATE_RULESET = 444  # the same numbers on every architecture since the syscall table unification
SYS_LANDLOCK_RESTRICT_SELF = 446
CREATE_RULESET_VERSION = 1
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0
SCOPE_SIGNAL = 1 << 1
SCOPES_ABI = 6
PR_SET_NO_NEW_PRIVS = 38
#: keyctl's number by machine (x86_64's own table; the generic one of aarch64 and riscv64)
SYS_KEYCTL = {"x86_64": 250, "aarch64": 219, "riscv64": 219}
KEYCTL_JOIN_SESSION_KEYRING = 1
ENOSYS = 38
#: the signals (names, comma-separated) whose default disposition COMMAND gets back: ``omxfs run`` starts bwrap
#: with SIGINT and SIGQUIT ignored, so that a terminal's Ctrl-C reaches COMMAND and not bwrap (``launch.py``)
DEFAULT_SIGNALS_ENV = "OMX_VIEW_DEFAULT_SIGNALS"


class RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


def own_session_keyring() -> str | None:
    """Join a new, empty session keyring; None, or why not. A kernel without keyrings (ENOSYS) has nothing to hide."""
    keyctl = SYS_KEYCTL.get(platform.machine())
    if platform.system() != "Linux" or keyctl is None:
        return None  # the launcher refuses a view on an ABI its filter does not know
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(keyctl, KEYCTL_JOIN_SESSION_KEYRING, None) < 0 and ctypes.get_errno() != ENOSYS:
        return f"keyctl(KEYCTL_JOIN_SESSION_KEYRING): {os.strerror(ctypes.get_errno())}"
    return None


def scope() -> str | None:
    """Scope this process (and what it execs) to itself; None, or why not."""
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "aarch64", "riscv64"):
        return f"no Landlock on {platform.system()} {platform.machine()}"
    libc = ctypes.CDLL(None, use_errno=True)
    abi = libc.syscall(SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), CREATE_RULESET_VERSION)
    if abi < SCOPES_ABI:
        return f"Landlock ABI {max(abi, 0)} has no IPC scopes (ABI {SCOPES_ABI}, Linux 6.12, has)"
    attr = RulesetAttr(0, 0, SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL)
    ruleset = libc.syscall(SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)), 0)
    if ruleset < 0:
        return f"landlock_create_ruleset: {os.strerror(ctypes.get_errno())}"
    try:
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:  # bwrap has set it already; required either way
            return f"prctl(NO_NEW_PRIVS): {os.strerror(ctypes.get_errno())}"
        if libc.syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset, 0) != 0:
            return f"landlock_restrict_self: {os.strerror(ctypes.get_errno())}"
    finally:
        os.close(ruleset)
    return None


def main(argv: list[str]) -> None:
    if not argv:
        sys.exit("usage: scope.py COMMAND [ARGS...]")
    for name in filter(None, os.environ.pop(DEFAULT_SIGNALS_ENV, "").split(",")):
        signal.signal(signal.Signals[name], signal.SIG_DFL)
    why = own_session_keyring()
    if why is not None:  # the caller's keyring stays the view's: never run COMMAND so
        print(f"omxfs run: cannot give the view a session keyring of its own: {why}", file=sys.stderr)
        sys.exit(126)
    why = scope()
    if why is not None:
        print(f"omxfs run: abstract UNIX sockets of the host stay reachable: {why}", file=sys.stderr)
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        print(f"omxfs run: {argv[0]}: {exc.strerror}", file=sys.stderr)
        sys.exit(127 if isinstance(exc, FileNotFoundError) else 126)


if __name__ == "__main__":
    main(sys.argv[1:])
