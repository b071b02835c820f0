"""The seccomp filters: a view's (no keystrokes pushed into the caller's terminal, and for root no set-ID files),
and a sandboxed omx step's (no socket, and for Python code no program started).

The terminal: COMMAND shares the terminal ``omxfs run`` was started from (a shell, omx's confirmation prompt need
it), and ``ioctl(TIOCSTI)`` pushes characters into a terminal's input as if typed, where the kernel allows it
(``dev.tty.legacy_tiocsti`` 1, the default before Linux 6.2 and still common): a process in the view typed a
command that the caller's shell ran after the view ended, outside it. ``TIOCLINUX`` can paste on a virtual
console. Both fail with EPERM. (``bwrap --new-session`` would cut the terminal off instead, and with it job control
and terminal signals.)

Set-ID files, in a view started by root: root there holds no capability, but it is still uid 0 on the store, the
owner of every file it makes in its own zone, which is the store's directory itself. An owner may set the
set-user-ID bit of its own file, so ``cp /bin/sh x && chmod 4755 x`` in the view made a set-user-ID-root program on
the host: any local user who can reach the store ran it as root (the view's own mounts are ``nosuid``; the
store's filesystem outside is not). Nothing else in the kernel stops it (Landlock has no right over modes; the
view's user namespace maps its root to the host's), so the calls that set a mode fail with EPERM when it has
S_ISUID or S_ISGID: ``chmod``, ``fchmod``, ``fchmodat``, ``fchmodat2``, ``mknod``, ``mknodat``, and ``open``,
``openat`` and ``creat`` that create. ``openat2`` (whose mode sits in a struct a filter cannot read) and
``io_uring_setup`` (whose requests no filter sees) fail with ENOSYS, which callers answer by falling back to
``openat`` and plain system calls. An unprivileged view needs none of this: a set-ID file of its user gives
nothing that user lacks.

A sandboxed step (``agent/sandbox/``) is kept off the network by an empty network namespace where one can be made,
but a process in a view (``omx --as NAME``) may not make one, and Landlock, left there alone, refuses only TCP: a
step sent UDP to the host's loopback. And no network namespace keeps a step from a host UNIX socket: a path socket
is reached by ``connect`` alone, which no Landlock right governs, and a step connected to a tmux server's socket in
the host's ``/tmp`` and had it run a command outside the sandbox (issue 26). So every step gets ``step_program``, in
or out of a view: ``socket`` of any family fails with EPERM, AF_UNIX included, and ``io_uring_setup`` (whose
IORING_OP_SOCKET makes a socket no filter sees) with ENOSYS. ``socketpair`` of AF_UNIX stays (asyncio's self-pipe,
``multiprocessing``'s pipes): a pair reaches nothing but itself. A step that runs Python code (every ``python``
step, ``python3 -c``) also gets ``execve`` and ``execveat`` refused (EPERM): the launcher installs the filter in the
interpreter that then runs the code, so no spelling of ``os.system``, ``subprocess``, ``posix_spawn``, ``ctypes`` or
a fork and exec starts a program.

The kernel's keyrings, in every program here (the view's and the step's, ``keyring_code``): a process keeps its
caller's session keyring across bwrap, so a view found, read, overwrote and planted keys in the caller's ``@s``
(Kerberos caches, fscrypt and eCryptfs keys, AFS tokens live there). A new session keyring alone is not enough:
the view's ``@u`` and ``@us`` are its own (the kernel keeps user keyrings per user namespace), but the view is the
caller's uid (root's, for a root-started view), and a key's owner reaches it by serial from anywhere, with the
rights the key gives its owner: tried from a user namespace, every key of the uid could be described, and one its
owner may read was read. Key permissions are per uid and possession, which a filter cannot see (a serial says
nothing of its keyring's owner), and nothing an agent runs needs a keyring, so ``add_key``, ``request_key`` and
``keyctl`` are refused outright, with ENOSYS: what a kernel built without keys (CONFIG_KEYS=n) answers, which every
program that uses keyrings already treats as "no keyring here" and falls back from (EPERM would read as a keyring
that refused, an error). One call stays: ``keyctl(KEYCTL_JOIN_SESSION_KEYRING, NULL)``, which can only make a new,
empty, anonymous session keyring and join it: ``scope.py`` makes one so that what the kernel looks up in a session
keyring by itself (a CIFS or AFS token, an fscrypt v1 key) is never the caller's.

Calls of another ABI than the machine's own (i386, x32 on x86_64) are refused outright: their numbers differ. The
program is classic BPF, as bwrap's ``--seccomp FD`` reads it (``struct sock_filter`` records to end of file).
"""

from __future__ import annotations

import os
import platform
import struct
from dataclasses import dataclass

SET_ID = 0o6000  # S_ISUID | S_ISGID
TERMINAL_INJECTION = (0x5412, 0x541C)  # TIOCSTI, TIOCLINUX (ioctl's request is 32 bits in the kernel)
CREATES = 0o100 | 0o20000000  # O_CREAT | __O_TMPFILE: only then does open read its mode
EPERM, ENOSYS = 1, 38
AF_UNIX = 1
IO_URING_SETUP = 425  # the same number on every architecture (added after the syscall table unification)
RET_ALLOW, RET_ERRNO = 0x7FFF0000, 0x00050000
LD_ABS, JEQ, JGE, JSET, RET = 0x20, 0x15, 0x35, 0x45, 0x06  # BPF_LD|W|ABS, BPF_JMP|JEQ/JGE/JSET|K, BPF_RET|K
X32_BIT = 0x40000000
NR, ARCH = 0, 4  # offsets in struct seccomp_data; args[i] at 16 + 8 * i (the low 32 bits on little endian)


KEYCTL_JOIN_SESSION_KEYRING = 1


@dataclass(frozen=True)
class KeyringCalls:
    add_key: int
    request_key: int
    keyctl: int


#: the keyring system calls by audit architecture (``Abi.audit_arch``)
KEYRING_CALLS = {
    0xC000003E: KeyringCalls(add_key=248, request_key=249, keyctl=250),  # x86_64
    0xC00000B7: KeyringCalls(add_key=217, request_key=218, keyctl=219),  # aarch64 (the generic table)
    0xC00000F3: KeyringCalls(add_key=217, request_key=218, keyctl=219),  # riscv64 (the generic table)
}


@dataclass(frozen=True)
class Abi:
    audit_arch: int
    ioctl: int
    mode_at: dict[int, int]  # syscall number: the argument that holds the mode
    open_at: dict[int, tuple[int, int]]  # syscall number: (flags argument, mode argument)
    unavailable: tuple[int, ...]  # ENOSYS
    sockets: tuple[int, int]  # socket, socketpair: the address family is their first argument
    executes: tuple[int, int]  # execve, execveat
    x32: bool = False


def _generic(audit_arch: int) -> Abi:
    """aarch64 and riscv64 share the generic system call table: fchmod, fchmodat, fchmodat2, mknodat; openat."""
    mode_at = {52: 1, 53: 2, 452: 2, 33: 2}
    return Abi(audit_arch, ioctl=29, mode_at=mode_at, open_at={56: (2, 3)}, unavailable=(437, IO_URING_SETUP),
               sockets=(198, 199), executes=(221, 281))  # fmt: skip


ABIS = {
    "x86_64": Abi(
        audit_arch=0xC000003E,
        ioctl=16,
        # chmod, fchmod, fchmodat, fchmodat2, creat, mknod, mknodat
        mode_at={90: 1, 91: 1, 268: 2, 452: 2, 85: 1, 133: 1, 259: 2},
        open_at={2: (1, 2), 257: (2, 3)},  # open, openat
        unavailable=(437, IO_URING_SETUP),  # openat2, io_uring_setup
        sockets=(41, 53),
        executes=(59, 322),
        x32=True,
    ),
    "aarch64": _generic(0xC00000B7),
    "riscv64": _generic(0xC00000F3),
}


def program(set_id: bool, machine: str | None = None) -> bytes | None:
    """The filter for this machine's ABI (with ``set_id``: set-ID modes refused too), or None where the ABI is not
    known (the caller says so)."""
    abi = ABIS.get(machine or platform.machine())
    return None if abi is None else _assemble(_code(abi, set_id))


def step_program(no_exec: bool, machine: str | None = None) -> bytes | None:
    """The filter of every sandboxed omx step (``agent/sandbox/``): no socket at all, a socketpair only of AF_UNIX,
    no io_uring, no keyring; with ``no_exec`` no ``execve``/``execveat`` either. None where the ABI is not known."""
    abi = ABIS.get(machine or platform.machine())
    return None if abi is None else _assemble(_step_code(abi, no_exec))


def keyctl_number(machine: str | None = None) -> int | None:
    """``keyctl``'s system call number on this machine's ABI, for a process that joins a new session keyring before
    its filter is in place (the step launcher, which may not import this module); None where the ABI is unknown."""
    abi = ABIS.get(machine or platform.machine())
    return None if abi is None else KEYRING_CALLS[abi.audit_arch].keyctl


def memfd(set_id: bool, machine: str | None = None) -> int | None:
    """A descriptor to pass to ``bwrap --seccomp``, positioned at the start of the program; None as ``program``."""
    code = program(set_id, machine)
    if code is None:
        return None
    fd = os.memfd_create("omxfs-view-seccomp", 0)  # close-on-exec: only pass_fds hands it to bwrap
    os.write(fd, code)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


# An instruction: (code, k, jump if true, jump if false), jumps as labels ("next" falls through) resolved below.
Instruction = tuple[int, int, str, str]


def _arg(index: int) -> int:
    return 16 + 8 * index


def _system_call(abi: Abi) -> list[Instruction | str]:
    """Load the system call's number; a call of another ABI fails with ENOSYS."""
    code: list[Instruction | str] = [
        (LD_ABS, ARCH, "", ""),
        (JEQ, abi.audit_arch, "next", "enosys"),
        (LD_ABS, NR, "", ""),
    ]
    if abi.x32:
        code.append((JGE, X32_BIT, "enosys", "next"))
    return code


def _code(abi: Abi, set_id: bool) -> list[Instruction | str]:
    code = [*_system_call(abi), *keyring_code(abi)]
    code.append((JEQ, abi.ioctl, "ioctl", "next"))
    if not set_id:
        code += [(RET, RET_ALLOW, "", ""), *_ioctl(), *_returns()]
        return code
    for nr in abi.unavailable:
        code.append((JEQ, nr, "enosys", "next"))
    for nr, arg in abi.mode_at.items():
        code.append((JEQ, nr, f"mode{arg}", "next"))
    for nr, (flags, _) in abi.open_at.items():
        code.append((JEQ, nr, f"open{flags}", "next"))
    code.append((RET, RET_ALLOW, "", ""))
    for flags, mode in sorted(set(abi.open_at.values())):
        code += [f"open{flags}", (LD_ABS, _arg(flags), "", ""), (JSET, CREATES, f"mode{mode}", "allow")]
    for arg in sorted(set(abi.mode_at.values()) | {mode for _, mode in abi.open_at.values()}):
        code += [f"mode{arg}", (LD_ABS, _arg(arg), "", ""), (JSET, SET_ID, "eperm", "allow")]
    return code + _ioctl() + _returns()


def _step_code(abi: Abi, no_exec: bool) -> list[Instruction | str]:
    code = [*_system_call(abi), *keyring_code(abi)]
    code.append((JEQ, IO_URING_SETUP, "enosys", "next"))
    socket, socketpair = abi.sockets
    code.append((JEQ, socket, "eperm", "next"))
    code += [(JEQ, nr, "eperm", "next") for nr in (abi.executes if no_exec else ())]
    code += [(JEQ, socketpair, "family", "next")]
    code += [(RET, RET_ALLOW, "", ""), "family", (LD_ABS, _arg(0), "", ""), (JEQ, AF_UNIX, "allow", "eperm")]
    return code + _returns()


def keyring_code(abi: Abi) -> list[Instruction | str]:
    """``add_key``, ``request_key`` and ``keyctl`` fail with ENOSYS, but ``keyctl(KEYCTL_JOIN_SESSION_KEYRING,
    NULL)``: a new, empty session keyring (the module says why). Runs after ``_system_call``; jumps to the labels of
    ``_returns``. The command is an int to the kernel (its low half counts); the name, a pointer, must be NULL whole."""
    calls = KEYRING_CALLS[abi.audit_arch]
    return [
        (JEQ, calls.add_key, "enosys", "next"),
        (JEQ, calls.request_key, "enosys", "next"),
        (JEQ, calls.keyctl, "next", "keyring_done"),
        (LD_ABS, _arg(0), "", ""),
        (JEQ, KEYCTL_JOIN_SESSION_KEYRING, "next", "enosys"),
        (LD_ABS, _arg(1), "", ""),
        (JEQ, 0, "next", "enosys"),
        (LD_ABS, _arg(1) + 4, "", ""),
        (JEQ, 0, "allow", "enosys"),
        "keyring_done",  # not keyctl: the number is still loaded, for the rules after this one
    ]


def _ioctl() -> list[Instruction | str]:
    code: list[Instruction | str] = ["ioctl", (LD_ABS, _arg(1), "", "")]
    for request in TERMINAL_INJECTION:
        code.append((JEQ, request, "eperm", "next"))
    return [*code, (RET, RET_ALLOW, "", "")]


def _returns() -> list[Instruction | str]:
    return ["allow", (RET, RET_ALLOW, "", ""), "eperm", (RET, RET_ERRNO | EPERM, "", ""), "enosys",
            (RET, RET_ERRNO | ENOSYS, "", "")]  # fmt: skip


def _assemble(code: list[Instruction | str]) -> bytes:
    labels: dict[str, int] = {}
    instructions: list[Instruction] = []
    for item in code:
        if isinstance(item, str):
            labels[item] = len(instructions)
        else:
            instructions.append(item)

    def offset(label: str, at: int) -> int:
        if label in ("", "next"):
            return 0
        jump = labels[label] - at - 1
        if not 0 <= jump <= 255:
            raise ValueError(f"seccomp jump to {label} out of range: {jump}")
        return jump

    return b"".join(
        struct.pack("=HBBI", op, offset(true, at), offset(false, at), k)
        for at, (op, k, true, false) in enumerate(instructions)
    )
