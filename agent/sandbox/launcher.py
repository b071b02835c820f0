"""The sandbox launcher, the innermost stage of a step's sandbox: confine this process with Landlock and seccomp,
then run the step, either by exec'ing its one program or by running its Python code in this very interpreter.

It runs as its own small program (``python -I -S agent/sandbox/launcher.py CONFIG -- ARGV...``), inside the step's
bubblewrap (``confine.py``) or, in an agent view, directly, rather than as a ``preexec_fn``: restricting a forked
copy of a multi-threaded parent can deadlock, and the confinement must be in place before the first instruction of
the step runs. It imports only the standard library, and ``omxfs/view/seccomp.py`` (the classic-BPF builder, itself
standard-library only) by its path, so it works whatever the step's working directory and ``sys.path`` are.

In order:

1. Every descriptor but 0-2 (and the status pipe) is closed, stdin becomes ``/dev/null`` unless it is a regular
   file (a python step's input, which omx writes to a file of its own), and stdout and stderr must not be
   sockets: nothing the launcher was handed leads to a socket or a terminal of the host.
2. Landlock: read (never execute) under ``read``, also write under ``write``, read/write ``devices``; no TCP bind
   or connect (ABI 4+); no abstract UNIX socket or signal outside the sandbox (ABI 6+). Execution is allowed on one
   file only: the program a shell step runs, with its ELF interpreter (``ld.so``, which the kernel opens for
   execution too); a python step gets none. ``ld.so PROGRAM`` would run any program it can read, which is why
   this is defence in depth and the seccomp filter below is the wall.
3. A new, empty session keyring (``keyctl(KEYCTL_JOIN_SESSION_KEYRING, NULL)``), as a view's COMMAND gets: the
   caller's keys are not the step's.
4. No capability, whatever the mechanism and the user (``drop_capabilities``): root outside a view keeps every one
   otherwise (a file capability set on a program in the workspace, files of other users read and changed). The
   securebits are locked (uid 0 gains nothing by an exec), the bounding and ambient sets emptied, then the
   effective, permitted and inheritable sets; with ``NO_NEW_PRIVS``, no exec grants one back.
5. seccomp (``NO_NEW_PRIVS`` first): ``step_program`` (no ``socket`` at all, AF_UNIX included: UNIX socketpairs
   only; no ``execve`` without a token; no ``execveat``, ``ptrace``, ``process_vm_*``; ``personality`` read-only;
   no io_uring; no keyring calls; no set-ID mode, no ``openat2``).
6. A shell step: the program is exec'd with a random 64-bit token in ``execve``'s fourth argument register, which
   the kernel ignores and the filter demands. The token exists only in this process's memory, which the exec
   replaces, so the program, and anything it might run, cannot exec again. A python step: no token at all
   (every ``execve`` fails); the code is compiled and run here, in a fresh ``__main__``, with the interpreter's
   site-packages added, as ``python -c CODE`` would. No spelling of ``os.system``, ``subprocess``,
   ``posix_spawn``, ``fork`` + ``exec``, a raw ``syscall`` through ctypes or multiprocessing's ``spawn`` and
   ``forkserver`` start methods (which exec a new interpreter) starts a program; ``fork`` works (multiprocessing's
   default start method on Linux up to Python 3.13), and ``LD_PRELOAD`` changes nothing without an exec.

Fail closed: if any restriction cannot be applied, it reports why on the status pipe (``status_fd``, close-on-exec,
closed explicitly before a python step's code runs, so an empty pipe means "running") and exits 125 without running
the step. ``--probe CONFIG`` applies everything to itself (as for a python step), prints what the kernel allowed as
JSON (or what is missing) and exits.

Landlock ABI numbers and struct layouts follow ``include/uapi/linux/landlock.h``.
"""

from __future__ import annotations

import ctypes
import importlib.util
import json
import os
import platform
import secrets
import shutil
import stat
import struct
import sys
import traceback
import types
from typing import Any

SYS_LANDLOCK_CREATE_RULESET = 444  # the same number on every architecture (added after the syscall table unification)
SYS_LANDLOCK_ADD_RULE = 445
SYS_LANDLOCK_RESTRICT_SELF = 446
LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
PR_GET_NO_NEW_PRIVS = 39
PR_CAPBSET_READ, PR_CAPBSET_DROP = 23, 24
PR_GET_SECUREBITS, PR_SET_SECUREBITS = 27, 28
PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, PR_CAP_AMBIENT_CLEAR_ALL = 47, 1, 4
CAPABILITY_VERSION_3 = 0x20080522  # _LINUX_CAPABILITY_VERSION_3: two 32-bit words per set
CAP_SETPCAP = 8
#: ``include/uapi/linux/securebits.h``: uid 0 gains no capability by an exec (NOROOT) nor keeps or loses any by a
#: change of uid (NO_SETUID_FIXUP, KEEP_CAPS off), no ambient capability is raised, and each is locked as it is
SECUREBITS = sum(1 << bit for bit in (0, 1, 2, 3, 5, 6, 7))
SECBIT_KEEP_CAPS = 1 << 4
BPF_INSTRUCTION = 8  # bytes of a struct sock_filter

# filesystem rights, by the ABI that introduced them
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
REFER = 1 << 13  # ABI 2
TRUNCATE = 1 << 14  # ABI 3
IOCTL_DEV = 1 << 15  # ABI 5
FS_RIGHTS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1, 5: (1 << 16) - 1}
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6

READ_RIGHTS = READ_FILE | READ_DIR  # no EXECUTE: only the step's own program gets it (``executables``)
FILE_ONLY_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
WRITE_RIGHTS = WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_DIR | MAKE_REG | MAKE_SYM | REFER | TRUNCATE
PT_INTERP = 3

EXIT_SETUP_FAILED = 125
ENOSYS = 38


class RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class PathBeneathAttr(ctypes.Structure):
    _pack_ = 1  # __attribute__((packed)) in the kernel header: 12 bytes
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


class CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


class SetupError(Exception):
    """A restriction that was asked for could not be applied."""


_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _syscall(number: int, *args: Any) -> int:
    result = int(_libc.syscall(ctypes.c_long(number), *args))
    if result < 0:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno))
    return result


def landlock_abi() -> int:
    """The Landlock ABI version the kernel offers, 0 when it has none (not built in, disabled at boot, not Linux)."""
    if not sys.platform.startswith("linux"):
        return 0  # syscall 444 means something else elsewhere: never call it
    try:
        return _syscall(
            SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION)
        )
    except OSError:
        return 0


def close_inherited(keep: int) -> None:
    """Close every descriptor but 0-2 and ``keep``; stdin becomes /dev/null unless it is a regular file; stdout and
    stderr may not be sockets (a socket handed down is a connection to the host that no filter on ``socket()``
    sees)."""
    if keep >= 3:
        os.closerange(3, keep)
        os.closerange(keep + 1, 1 << 20)
    else:
        os.closerange(3, 1 << 20)
    if not _regular_file(0):  # a terminal (TIOCSTI types into it), a pipe or socket of the host: none of those
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
    for fd in (1, 2):
        try:
            if stat.S_ISSOCK(os.fstat(fd).st_mode):
                raise SetupError(f"descriptor {fd} is a socket: the step would reach whatever is at its other end")
        except OSError:
            pass  # closed: nothing to reach


def _regular_file(fd: int) -> bool:
    """Whether ``fd`` is a regular file: the input omx gives a python step, a copy it made in the step's scratch."""
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode)
    except OSError:
        return False


def _fs_rights(abi: int) -> int:
    return FS_RIGHTS_BY_ABI[min(abi, 5)]


def _add_path_rule(ruleset: int, path: str, rights: int, handled: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except FileNotFoundError:
        return  # a system directory this machine does not have (/lib32, /opt): nothing to allow
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            rights &= FILE_ONLY_RIGHTS  # directory rights on a file are EINVAL
        attr = PathBeneathAttr(allowed_access=rights & handled, parent_fd=fd)
        _syscall(
            SYS_LANDLOCK_ADD_RULE,
            ctypes.c_int(ruleset),
            ctypes.c_int(LANDLOCK_RULE_PATH_BENEATH),
            ctypes.byref(attr),
            ctypes.c_uint32(0),
        )
    finally:
        os.close(fd)


def apply_landlock(config: dict[str, Any], executables: list[str]) -> dict[str, Any]:
    """Restrict this process: read under ``read``, also write under ``write``, execute ``executables`` alone; no
    TCP; scoped IPC."""
    abi = landlock_abi()
    if abi < 1:
        raise SetupError("Landlock is not available in this kernel")
    handled_fs = _fs_rights(abi)
    attr = RulesetAttr(handled_access_fs=handled_fs)
    size = 8
    if abi >= 4 and config.get("deny_tcp", True):
        attr.handled_access_net = NET_BIND_TCP | NET_CONNECT_TCP  # handled and no rule added: all TCP denied
        size = 16
    if abi >= 6:
        attr.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
        size = 24
    try:
        ruleset = _syscall(SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    except OSError as exc:
        raise SetupError(f"landlock_create_ruleset failed: {exc.strerror}") from None
    try:
        for path in config.get("read", []):
            _add_path_rule(ruleset, path, READ_RIGHTS, handled_fs)
        for path in config.get("write", []):
            _add_path_rule(ruleset, path, READ_RIGHTS | WRITE_RIGHTS, handled_fs)
        for path in config.get("devices", []):
            _add_path_rule(ruleset, path, READ_FILE | WRITE_FILE, handled_fs)
        for path in executables:
            _add_path_rule(ruleset, path, EXECUTE | READ_FILE, handled_fs)
        if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
        _syscall(SYS_LANDLOCK_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0))
    except OSError as exc:
        raise SetupError(f"Landlock setup failed: {exc.strerror}") from None
    finally:
        os.close(ruleset)
    return {"abi": abi, "tcp_denied": bool(attr.handled_access_net), "ipc_scoped": bool(attr.scoped)}


def load_filters(path: str, exec_token: int | None) -> tuple[types.ModuleType, list[bytes]]:
    """The seccomp builder (``omxfs/view/seccomp.py``, loaded by its path) and the step's program."""
    spec = importlib.util.spec_from_file_location("omx_step_seccomp", path)
    if spec is None or spec.loader is None:
        raise SetupError(f"seccomp: cannot load the filter builder {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses looks its module up while building the classes
    spec.loader.exec_module(module)
    programs = [module.step_program(exec_token)]
    if any(program is None for program in programs):
        raise SetupError(f"seccomp: no filter is known for this machine's ABI ({platform.machine()})")
    return module, programs


def join_new_session_keyring(keyctl: int | None) -> None:
    """Leave the caller's session keyring for a new, empty one (``keyctl(KEYCTL_JOIN_SESSION_KEYRING, NULL)``), as a
    view's COMMAND does: the filter then refuses every other keyring call. A kernel without keys (ENOSYS) has none to
    leave; an ABI the builder does not know has no filter either, and ``load_filters`` has refused it already."""
    if keyctl is None:
        return
    if _libc.syscall(ctypes.c_long(keyctl), ctypes.c_long(1), None) < 0 and ctypes.get_errno() != ENOSYS:
        raise SetupError(f"cannot join a new session keyring: {os.strerror(ctypes.get_errno())}")


def drop_capabilities() -> dict[str, Any]:
    """Leave this process (and what it runs) no capability and no way to gain one: ``NO_NEW_PRIVS`` (an exec grants
    nothing: no set-ID, no file capability, nothing for uid 0 beyond what it holds), the ambient set cleared, the
    effective, permitted and inheritable sets zeroed. Where it holds ``CAP_SETPCAP`` (root outside a user namespace),
    first the securebits (``SECUREBITS``) are set and locked and every capability leaves the bounding set. Without
    it there is nothing to drop them with, nor anything to gain back: bubblewrap's step (its bounding set is empty
    already), an unprivileged user's. Each set is read back; what is left raises SetupError."""
    if _libc.prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1 and _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise SetupError(f"capabilities: cannot set NO_NEW_PRIVS: {_errno()}")
    effective, permitted, inheritable = _capabilities()
    known = _known_capabilities()
    setpcap = bool(permitted >> CAP_SETPCAP & 1)
    if setpcap:
        _set_capabilities(effective | 1 << CAP_SETPCAP, permitted, inheritable)
        bits = _libc.prctl(PR_GET_SECUREBITS, 0, 0, 0, 0)
        if bits < 0 or _libc.prctl(PR_SET_SECUREBITS, (bits | SECUREBITS) & ~SECBIT_KEEP_CAPS, 0, 0, 0) != 0:
            raise SetupError(f"capabilities: cannot lock the securebits: {_errno()}")
        for cap in known:
            if _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
                raise SetupError(f"capabilities: cannot drop {cap} from the bounding set: {_errno()}")
    if _libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0:
        raise SetupError(f"capabilities: cannot clear the ambient set: {_errno()}")
    _set_capabilities(0, 0, 0)
    sets = zip(("effective", "permitted", "inheritable"), _capabilities(), strict=True)
    left = {
        "held": [name for name, held in sets if held],
        "ambient": [cap for cap in known if _libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, cap, 0, 0) != 0],
        "bounding": [cap for cap in known if setpcap and _libc.prctl(PR_CAPBSET_READ, cap, 0, 0, 0) != 0],
    }
    if any(left.values()):
        raise SetupError(f"capabilities: still held after the drop: {left}")
    return {"bounding": "dropped" if setpcap else "nothing to drop it with", "securebits": setpcap}


def _errno() -> str:
    return os.strerror(ctypes.get_errno())


def _capabilities() -> tuple[int, int, int]:
    """This process's effective, permitted and inheritable sets (``capget``, version 3)."""
    header, data = CapHeader(CAPABILITY_VERSION_3, 0), (CapData * 2)()
    if _libc.capget(ctypes.byref(header), data) != 0:
        raise SetupError(f"capabilities: capget failed: {_errno()}")
    low, high = data
    return (
        low.effective | high.effective << 32,
        low.permitted | high.permitted << 32,
        low.inheritable | high.inheritable << 32,
    )


def _set_capabilities(effective: int, permitted: int, inheritable: int) -> None:
    header = CapHeader(CAPABILITY_VERSION_3, 0)
    sets = (effective, permitted, inheritable)
    data = (CapData * 2)(CapData(*(s & 0xFFFFFFFF for s in sets)), CapData(*(s >> 32 for s in sets)))
    if _libc.capset(ctypes.byref(header), data) != 0:
        raise SetupError(f"capabilities: capset failed: {_errno()}")


def _known_capabilities() -> range:
    """0 to the kernel's last capability (``/proc/sys/kernel/cap_last_cap``, which Landlock or bubblewrap may hide
    by now): the first number ``PR_CAPBSET_READ`` refuses (EINVAL) is one past it."""
    for cap in range(64):
        if _libc.prctl(PR_CAPBSET_READ, cap, 0, 0, 0) < 0:
            if cap == 0:
                raise SetupError(f"capabilities: the kernel does not say which it has: {_errno()}")
            return range(cap)
    return range(64)


def install_filter(program: bytes) -> None:
    """Install one seccomp program for this process and all it starts (``NO_NEW_PRIVS`` is set here too)."""
    code = ctypes.create_string_buffer(program, len(program))
    fprog = SockFprog(len(program) // BPF_INSTRUCTION, ctypes.cast(code, ctypes.c_void_p))
    if (
        _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
        or _libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0
    ):
        errno = ctypes.get_errno()
        raise SetupError(f"seccomp: cannot install the step filter: {os.strerror(errno)}")


def interpreter(path: str) -> str | None:
    """The file the kernel also opens for execution when it runs ``path``: an ELF's ``PT_INTERP`` (the dynamic
    loader), a script's ``#!`` program; None for a static program."""
    with open(path, "rb") as f:
        head = f.read(64)
        if head.startswith(b"#!"):
            words = head[2:].split(b"\n", 1)[0].split()
            return os.fsdecode(words[0]) if words else None
        if head[:4] != b"\x7fELF" or head[4] != 2:  # 64-bit ELF only: the machines omx knows
            return None
        order = "<" if head[5] == 1 else ">"
        (phoff,) = struct.unpack_from(order + "Q", head, 32)
        size, count = struct.unpack_from(order + "HH", head, 54)
        f.seek(phoff)
        table = f.read(size * count)
        for index in range(count):
            (kind,) = struct.unpack_from(order + "I", table, index * size)
            if kind == PT_INTERP:
                offset, _, _, length = struct.unpack_from(order + "QQQQ", table, index * size + 8)
                f.seek(offset)
                return os.fsdecode(f.read(length).rstrip(b"\0"))
    return None


def exec_with_token(module: types.ModuleType, path: str, argv: list[str], token: int) -> OSError:
    """``execve(path, argv, environ)`` with ``token`` in the fourth argument register (the filter's condition);
    returns the error if the exec failed."""
    number = module.STEP_CALLS[platform.machine()].execve
    enc = os.fsencode
    args = (ctypes.c_char_p * (len(argv) + 1))(*[enc(a) for a in argv], None)
    env = (ctypes.c_char_p * (len(os.environ) + 1))(*[enc(f"{k}={v}") for k, v in os.environ.items()], None)
    _libc.syscall(ctypes.c_long(number), enc(path), args, env, ctypes.c_uint64(token), ctypes.c_uint64(0))
    errno = ctypes.get_errno()
    return OSError(errno, os.strerror(errno))


def run_python(code: str, args: list[str]) -> int:
    """Run ``code`` as ``python -c CODE ARGS`` would, here: the filter is already in place."""
    import site

    site.main()  # the interpreter's own site-packages (a venv's), after the confinement: .pth files run code
    sys.dont_write_bytecode = True
    sys.path.insert(0, "")  # python -c imports from the working directory, the workspace
    sys.argv = ["-c", *args]
    main = types.ModuleType("__main__")
    main.__dict__["__builtins__"] = __builtins__
    sys.modules["__main__"] = main
    try:
        exec(compile(code, "<string>", "exec"), main.__dict__)  # running the step's code is the point
    except SystemExit:
        raise
    except BaseException as exc:  # print it as python -c does: the step's frames only
        tb = exc.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != "<string>":
            tb = tb.tb_next
        traceback.print_exception(type(exc), exc, tb)
        return 1
    return 0


def _fail(status_fd: int, stage: str, message: str) -> int:
    """Tell the parent what stopped the step from starting: the sandbox (``stage="sandbox"``) or the exec."""
    if status_fd >= 0:
        os.write(status_fd, json.dumps({"stage": stage, "error": message}).encode())
    else:
        print(f"{stage}: {message}", file=sys.stderr)
    return EXIT_SETUP_FAILED


def probe(config: dict[str, Any]) -> dict[str, Any]:
    """Apply everything a python step gets to this process; say what the kernel allowed, or what is missing."""
    try:
        module, programs = load_filters(config["seccomp"], None)
    except SetupError as exc:
        return {"seccomp_error": str(exc)}
    try:
        landlock = apply_landlock(config, [])
    except SetupError as exc:
        return {"landlock_error": str(exc)}
    keyrings = [session_keyring(module.keyctl_number())]
    try:
        join_new_session_keyring(module.keyctl_number())
        keyrings.append(session_keyring(module.keyctl_number()))
    except SetupError as exc:
        return {"landlock": landlock, "seccomp_error": str(exc)}
    try:
        capabilities = drop_capabilities()
    except SetupError as exc:
        return {"landlock": landlock, "capabilities_error": str(exc)}
    try:
        for program in programs:
            install_filter(program)
    except SetupError as exc:
        return {"landlock": landlock, "seccomp_error": str(exc)}
    return {"landlock": landlock, "seccomp": True, "session_keyrings": keyrings, "capabilities": capabilities}


def session_keyring(keyctl: int | None) -> int | None:
    """This process's session keyring (``keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0)``), for the
    probe to show that a step does not keep its caller's; None where it cannot be asked."""
    if keyctl is None:
        return None
    found = int(_libc.syscall(ctypes.c_long(keyctl), ctypes.c_long(0), ctypes.c_long(-3), ctypes.c_long(0)))
    return found if found >= 0 else None


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "--probe":
        print(json.dumps(probe(json.loads(argv[1]))))
        return 0
    if len(argv) < 3 or argv[1] != "--":
        print("usage: launcher.py CONFIG_JSON -- PROGRAM [ARGS...] | --probe CONFIG_JSON", file=sys.stderr)
        return 2
    config = json.loads(argv[0])
    status_fd = int(config.get("status_fd", -1))
    python = bool(config.get("python"))
    step = argv[2:]
    try:
        if status_fd >= 0:
            os.set_inheritable(status_fd, False)  # closed by a successful exec: an empty status pipe means "running"
        close_inherited(status_fd)
        token = None if python else secrets.randbits(64)
        module, programs = load_filters(config["seccomp"], token)
        executables: list[str] = []
        path = ""
        if not python:
            found = step[0] if "/" in step[0] else shutil.which(step[0])
            if found is None or not os.path.isfile(found):
                return _fail(status_fd, "exec", f"cannot run {step[0]!r}: {os.strerror(2)}")
            path = os.path.realpath(found)
            executables = [path, *filter(None, [interpreter(path)])]
        apply_landlock(config, executables)
        join_new_session_keyring(module.keyctl_number())
        drop_capabilities()
        for program in programs:
            install_filter(program)
    except (SetupError, OSError) as exc:
        return _fail(status_fd, "sandbox", str(exc))
    if python:
        if status_fd >= 0:
            os.close(status_fd)  # the code runs in this process: it must not be able to speak for the launcher
        return run_python(step[0], step[1:])
    assert token is not None
    error = exec_with_token(module, path, step, token)
    return _fail(status_fd, "exec", f"cannot run {step[0]!r}: {error.strerror}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
