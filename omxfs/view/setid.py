"""A seccomp filter for views started by root: no set-user-ID or set-group-ID bit can be set from inside.

Why: root in a view holds no capability, but it is still uid 0 on the store, the owner of every file it makes in
its own zone, which is the store's directory itself. An owner may set the set-user-ID bit of its own file, so
``cp /bin/sh agents/NAME/x && chmod 4755 agents/NAME/x`` in the view made a set-user-ID-root program on the host:
any local user who can reach the store runs it as root (the view's own mounts are ``nosuid``; the store's
filesystem outside is not). The kernel offers no other switch for this (Landlock has no right over modes, and a
user namespace maps the view's root to the host's root), so the calls that set a mode are filtered: ``chmod``,
``fchmod``, ``fchmodat``, ``fchmodat2``, ``mknod``, ``mknodat``, and ``open``/``openat``/``creat`` that create,
fail with EPERM when the mode has S_ISUID or S_ISGID. ``openat2`` (whose mode sits in a struct a filter cannot
read) and ``io_uring_setup`` (whose requests no filter sees) fail with ENOSYS, which callers answer by falling back
to ``openat`` and plain system calls. Calls of another ABI (i386, x32) are refused outright: their numbers differ.

An unprivileged view needs none of this: a set-user-ID program of its user gives nothing that user lacks.

The program is classic BPF, as bwrap's ``--seccomp FD`` reads it (``struct sock_filter`` records to end of file).
"""

from __future__ import annotations

import os
import platform
import struct
from dataclasses import dataclass

SET_ID = 0o6000  # S_ISUID | S_ISGID
CREATES = 0o100 | 0o20000000  # O_CREAT | __O_TMPFILE: only then does open read its mode
EPERM, ENOSYS = 1, 38
RET_ALLOW, RET_ERRNO = 0x7FFF0000, 0x00050000
LD_ABS, JEQ, JGE, JSET, RET = 0x20, 0x15, 0x35, 0x45, 0x06  # BPF_LD|W|ABS, BPF_JMP|JEQ/JGE/JSET|K, BPF_RET|K
X32_BIT = 0x40000000
NR, ARCH = 0, 4  # offsets in struct seccomp_data; args[i] at 16 + 8 * i (the low 32 bits on little endian)


@dataclass(frozen=True)
class Abi:
    audit_arch: int
    mode_at: dict[int, int]  # syscall number: the argument that holds the mode
    open_at: dict[int, tuple[int, int]]  # syscall number: (flags argument, mode argument)
    unavailable: tuple[int, ...]  # ENOSYS
    x32: bool = False


ABIS = {
    "x86_64": Abi(
        audit_arch=0xC000003E,
        # chmod, fchmod, fchmodat, fchmodat2, creat, mknod, mknodat
        mode_at={90: 1, 91: 1, 268: 2, 452: 2, 85: 1, 133: 1, 259: 2},
        open_at={2: (1, 2), 257: (2, 3)},  # open, openat
        unavailable=(437, 425),  # openat2, io_uring_setup
        x32=True,
    ),
    "aarch64": Abi(
        audit_arch=0xC00000B7,
        mode_at={52: 1, 53: 2, 452: 2, 33: 2},  # fchmod fchmodat fchmodat2 mknodat
        open_at={56: (2, 3)},  # openat
        unavailable=(437, 425),
    ),
}


def program(machine: str | None = None) -> bytes | None:
    """The filter for this machine's ABI, or None where it is not known (the caller says so)."""
    abi = ABIS.get(machine or platform.machine())
    return None if abi is None else _assemble(_code(abi))


def memfd(machine: str | None = None) -> int | None:
    """A descriptor to pass to ``bwrap --seccomp``, positioned at the start of the program; None as ``program``."""
    code = program(machine)
    if code is None:
        return None
    fd = os.memfd_create("omxfs-view-setid", 0)  # close-on-exec: only pass_fds hands it to bwrap
    os.write(fd, code)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


# An instruction: (code, k, jump if true, jump if false), jumps as labels ("next" falls through) resolved below.
Instruction = tuple[int, int, str, str]


def _arg(index: int) -> int:
    return 16 + 8 * index


def _code(abi: Abi) -> list[Instruction | str]:
    code: list[Instruction | str] = [
        (LD_ABS, ARCH, "", ""),
        (JEQ, abi.audit_arch, "next", "enosys"),
        (LD_ABS, NR, "", ""),
    ]
    if abi.x32:
        code.append((JGE, X32_BIT, "enosys", "next"))
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
    code += ["allow", (RET, RET_ALLOW, "", ""), "eperm", (RET, RET_ERRNO | EPERM, "", "")]
    code += ["enosys", (RET, RET_ERRNO | ENOSYS, "", "")]
    return code


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
