"""The seccomp filters: a view's (no keystrokes pushed into the caller's terminal, and for root no set-ID files),
and a sandboxed omx step's (no socket, no program started but the step's own, no set-ID file for any user).

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

A sandboxed step (``agent/sandbox/``) gets ``step_program`` (the step sandbox's wall, separate pieces below
``# -- step``), in or out of a view: ``socket`` of every family fails with EPERM, AF_UNIX included, since a path or
abstract UNIX socket of the host (a tmux server's in ``/tmp``, a bus in ``/run``, one planted in the workspace) is
a way out that no mount or network namespace closes (a step connected to a tmux server's socket and had it run a
command outside the sandbox), while ``socketpair`` of AF_UNIX stays (asyncio's self-pipe and
multiprocessing's duplex pipes are socketpairs, and a pair reaches nothing outside the process tree); ``execve``
fails with EPERM unless its fourth argument register, which the kernel ignores, holds the launcher's one-time token
(so only the launcher's own exec of the allow-listed program passes; a python step gets no token, so no program at
all), ``execveat`` always; ``ptrace``, ``process_vm_readv`` and ``process_vm_writev`` fail with EPERM (no reaching
into omx, or into a process that is not filtered); ``personality`` may only be read; ``io_uring_*`` fail with
ENOSYS (no request a filter sees); the keyring calls as in a view; and set-ID modes are refused exactly as in a
root's view (the same pieces: ``_set_id_unavailable``, ``_set_id_calls``, ``_set_id_modes``, so ``openat2`` fails
with ENOSYS), always, whoever runs omx and whether or not in a view: root's step is root on the workspace, where
``shutil.copy('/bin/bash', 'tool'); os.chmod('tool', 0o4755)`` makes a root shell for any local user, and another
user's step makes a program that runs as that user for whoever starts it from a workspace they share. File capabilities
(``setxattr`` of ``security.capability``) are out of a filter's sight (the name is a pointer); the kernel refuses
them to a step, which holds no capability (bubblewrap's ``--cap-drop ALL``; a view's root has none either).

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
    x32: bool = False


def _generic(audit_arch: int) -> Abi:
    """aarch64 and riscv64 share the generic system call table: fchmod, fchmodat, fchmodat2, mknodat; openat."""
    mode_at = {52: 1, 53: 2, 452: 2, 33: 2}
    return Abi(audit_arch, ioctl=29, mode_at=mode_at, open_at={56: (2, 3)}, unavailable=(437, IO_URING_SETUP),
               sockets=(198, 199))  # fmt: skip


ABIS = {
    "x86_64": Abi(
        audit_arch=0xC000003E,
        ioctl=16,
        # chmod, fchmod, fchmodat, fchmodat2, creat, mknod, mknodat
        mode_at={90: 1, 91: 1, 268: 2, 452: 2, 85: 1, 133: 1, 259: 2},
        open_at={2: (1, 2), 257: (2, 3)},  # open, openat
        unavailable=(437, IO_URING_SETUP),  # openat2, io_uring_setup
        sockets=(41, 53),
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
    code += [*_set_id_unavailable(abi), *_set_id_calls(abi), (RET, RET_ALLOW, "", "")]
    return code + _set_id_modes(abi) + _ioctl() + _returns()


def _set_id_unavailable(abi: Abi) -> list[Instruction | str]:
    """``openat2`` and ``io_uring_setup`` fail with ENOSYS: a mode no filter can read (the module says why)."""
    return [(JEQ, nr, "enosys", "next") for nr in abi.unavailable]


def _set_id_calls(abi: Abi) -> list[Instruction | str]:
    """The calls that set a mode jump to ``_set_id_modes``'s checks; the system call's number must be loaded."""
    code: list[Instruction | str] = [(JEQ, nr, f"mode{arg}", "next") for nr, arg in abi.mode_at.items()]
    return code + [(JEQ, nr, f"open{flags}", "next") for nr, (flags, _) in abi.open_at.items()]


def _set_id_modes(abi: Abi) -> list[Instruction | str]:
    """The checks ``_set_id_calls`` jumps to: a mode with S_ISUID or S_ISGID fails with EPERM, anything else passes
    (an open that creates nothing has no mode). Labels ``open<N>`` and ``mode<N>``; ends in ``_returns``'s."""
    code: list[Instruction | str] = []
    for flags, mode in sorted(set(abi.open_at.values())):
        code += [f"open{flags}", (LD_ABS, _arg(flags), "", ""), (JSET, CREATES, f"mode{mode}", "allow")]
    for arg in sorted(set(abi.mode_at.values()) | {mode for _, mode in abi.open_at.values()}):
        code += [f"mode{arg}", (LD_ABS, _arg(arg), "", ""), (JSET, SET_ID, "eperm", "allow")]
    return code


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


# -- step: the step sandbox's filter (agent/sandbox/), in named pieces of its own ----------------------------------


@dataclass(frozen=True)
class StepCalls:
    """The system calls the step filter names, by their number in one ABI."""

    execve: int
    execveat: int
    tracing: tuple[int, ...]  # ptrace, process_vm_readv, process_vm_writev
    personality: int
    io_uring: tuple[int, ...]  # io_uring_setup, io_uring_enter, io_uring_register (one number on every ABI)


_GENERIC_STEP = StepCalls(execve=221, execveat=281, tracing=(117, 270, 271), personality=92, io_uring=(425, 426, 427))
STEP_CALLS = {
    "x86_64": StepCalls(execve=59, execveat=322, tracing=(101, 310, 311), personality=135, io_uring=(425, 426, 427)),
    "aarch64": _GENERIC_STEP,
    "riscv64": _GENERIC_STEP,
}
#: ``personality(0xffffffff)`` reads the persona and changes nothing
PERSONALITY_QUERY = 0xFFFFFFFF


def step_program(exec_token: int | None, machine: str | None = None) -> bytes | None:
    """The filter of a sandboxed step: no socket (AF_UNIX socketpairs only), no program started but with
    ``exec_token`` (a 64-bit number in execve's unused fourth argument; None: no execve at all), no tracing, no
    io_uring, no keyring (``keyring_code``), no set-ID mode (``_set_id_modes``, for every user, as a root view's
    ``program(set_id=True)``); None where the ABI is not known (the caller says so)."""
    name = machine or platform.machine()
    abi, calls = ABIS.get(name), STEP_CALLS.get(name)
    if abi is None or calls is None:
        return None
    code = [*_system_call(abi), *keyring_code(abi)]
    code += _step_unavailable(abi, calls) + _step_no_unix_socket(abi) + _step_no_tracing(calls)
    code += [*_step_exec_once(calls, exec_token), *_set_id_calls(abi), (RET, RET_ALLOW, "", "")]
    code += _step_socketpair() + _step_personality() + _step_exec_token(exec_token) + _set_id_modes(abi)
    return _assemble(code + _returns())


def _step_unavailable(abi: Abi, calls: StepCalls) -> list[Instruction | str]:
    """io_uring whole, and ``openat2`` (a view's ``_set_id_unavailable``): ENOSYS."""
    unavailable = dict.fromkeys((*calls.io_uring, *abi.unavailable))  # io_uring_setup is in both: once
    return [(JEQ, nr, "enosys", "next") for nr in unavailable]


def _step_no_unix_socket(abi: Abi) -> list[Instruction | str]:
    """socket() of any family: EPERM; socketpair(): looked at below (``_step_socketpair``)."""
    socket, socketpair = abi.sockets
    return [(JEQ, socket, "eperm", "next"), (JEQ, socketpair, "socketpair", "next")]


def _step_no_tracing(calls: StepCalls) -> list[Instruction | str]:
    code: list[Instruction | str] = [(JEQ, nr, "eperm", "next") for nr in calls.tracing]
    return [*code, (JEQ, calls.personality, "personality", "next")]


def _step_exec_once(calls: StepCalls, exec_token: int | None) -> list[Instruction | str]:
    return [(JEQ, calls.execveat, "eperm", "next"), (JEQ, calls.execve, "eperm" if exec_token is None else "execve",
            "next")]  # fmt: skip


def _step_socketpair() -> list[Instruction | str]:
    return ["socketpair", (LD_ABS, _arg(0), "", ""), (JEQ, AF_UNIX, "allow", "eperm")]


def _step_personality() -> list[Instruction | str]:
    return ["personality", (LD_ABS, _arg(0), "", ""), (JEQ, PERSONALITY_QUERY, "allow", "eperm")]


def _step_exec_token(exec_token: int | None) -> list[Instruction | str]:
    """execve passes only with the token in its fourth argument, both halves (little endian: low word first)."""
    if exec_token is None:
        return []
    low, high = exec_token & 0xFFFFFFFF, exec_token >> 32 & 0xFFFFFFFF
    return ["execve", (LD_ABS, _arg(3), "", ""), (JEQ, low, "next", "eperm"), (LD_ABS, _arg(3) + 4, "", ""),
            (JEQ, high, "allow", "eperm")]  # fmt: skip
