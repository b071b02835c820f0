"""The sandbox launcher: confine this process with Landlock, a private network namespace where one can be made, and
a seccomp filter (no socket, no keyring; for Python code no exec either), then exec the tool, or run Python code.

Python code (``"python": true`` in the config, ARGV being ``CODE [ARGS...]``) is run by this interpreter itself,
after it is confined, as ``python -c CODE`` would run it: the filter that refuses ``execve`` is then already in
place, so the code cannot start any program, however it spells it. Any other tool is exec'd, with Landlock's
execute right only on its own file and its dynamic loader (``"execute"``), so it cannot start another program.

It runs as its own small program (``python -I -S agent/sandbox/launcher.py CONFIG -- ARGV...``) rather than as a
``preexec_fn``, because restricting a forked copy of a multi-threaded parent can deadlock, and because the
confinement must be in place before the first instruction of the tool runs. Only the standard library is used,
so it works whatever the tool's working directory and ``sys.path`` are.

Fail closed: if any requested restriction cannot be applied, it reports why on the status pipe (``status_fd``,
close-on-exec, so a successful ``exec`` closes it unread) and exits 125 without running the tool.
``--probe`` instead tries everything, prints what the kernel allowed as JSON, and exits.

Landlock ABI numbers and struct layouts follow ``include/uapi/linux/landlock.h``.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
from typing import Any

SYS_LANDLOCK_CREATE_RULESET = 444  # the same number on every architecture (added after the syscall table unification)
SYS_LANDLOCK_ADD_RULE = 445
SYS_LANDLOCK_RESTRICT_SELF = 446
LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
BPF_INSTRUCTION = 8  # bytes of a struct sock_filter
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
CLONE_NEWNS = 0x00020000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_NOATIME, MS_NODIRATIME, MS_REMOUNT, MS_BIND = 1024, 2048, 32, 4096
MS_REC, MS_PRIVATE, MS_RELATIME, MS_STRICTATIME = 16384, 1 << 18, 1 << 21, 1 << 24
# per-mount options a remount must repeat (in a user namespace they are locked and may not be dropped)
MOUNT_FLAGS = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC, "noatime": MS_NOATIME,
               "nodiratime": MS_NODIRATIME, "relatime": MS_RELATIME, "strictatime": MS_STRICTATIME}  # fmt: skip

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

READ_DIR_RIGHTS = EXECUTE | READ_FILE | READ_DIR
FILE_ONLY_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
WRITE_RIGHTS = WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_DIR | MAKE_REG | MAKE_SYM | REFER | TRUNCATE

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


def _fs_rights(abi: int) -> int:
    return FS_RIGHTS_BY_ABI[min(abi, 5)]


def _add_path_rule(ruleset: int, path: str, rights: int, handled: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except FileNotFoundError:
        return  # a system directory this machine does not have (/lib32, /opt): nothing to allow
    try:
        if not os.path.isdir(path):
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


def apply_landlock(config: dict[str, Any]) -> dict[str, Any]:
    """Restrict this process: read/execute under ``read``, also write under ``write``; no TCP; scoped IPC."""
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
    executable = config.get("execute")  # None: everything readable may be executed; else only these files
    read_rights = READ_DIR_RIGHTS if executable is None else READ_DIR_RIGHTS & ~EXECUTE
    try:
        for path in config.get("read", []):
            _add_path_rule(ruleset, path, read_rights, handled_fs)
        for path in executable or []:
            _add_path_rule(ruleset, path, READ_FILE | EXECUTE, handled_fs)
        for path in config.get("write", []):
            _add_path_rule(ruleset, path, read_rights | WRITE_RIGHTS, handled_fs)
        for path in config.get("devices", []):
            _add_path_rule(ruleset, path, READ_FILE | WRITE_FILE, handled_fs)
        if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
        _syscall(SYS_LANDLOCK_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0))
    except OSError as exc:
        raise SetupError(f"Landlock setup failed: {exc.strerror}") from None
    finally:
        os.close(ruleset)
    return {"abi": abi, "tcp_denied": bool(attr.handled_access_net), "ipc_scoped": bool(attr.scoped)}


def enter_network_namespace() -> str:
    """A new, empty network namespace (only a loopback that is down): no route anywhere, TCP and UDP alike.

    Root may create one directly; anyone else needs a user namespace first, mapping their own uid and gid so
    the files the tool writes still belong to them.
    """
    if not sys.platform.startswith("linux"):
        raise SetupError("network namespaces exist only on Linux")
    if os.geteuid() == 0 and _libc.unshare(CLONE_NEWNET) == 0:
        return "netns"
    uid, gid = os.geteuid(), os.getegid()
    if _libc.unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0:
        errno = ctypes.get_errno()
        raise SetupError(f"cannot create a network namespace: {os.strerror(errno)}")
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)
    return "userns+netns"


def join_new_session_keyring(keyctl: int) -> None:
    """Leave the caller's session keyring for a new, empty one (``keyctl(KEYCTL_JOIN_SESSION_KEYRING, NULL)``), as a
    view's COMMAND does: the filter then refuses every other keyring call. A kernel without keys (ENOSYS) has none
    to leave."""
    if _libc.syscall(ctypes.c_long(keyctl), ctypes.c_long(1), None) < 0 and ctypes.get_errno() != ENOSYS:
        raise SetupError(f"cannot join a new session keyring: {os.strerror(ctypes.get_errno())}")


def install_filter(program_hex: str) -> None:
    """Install the seccomp program (``omxfs/view/seccomp.py``'s ``step_program``, built by the parent, which may
    import the project: this program may not) for this process and all it starts."""
    program = bytes.fromhex(program_hex)
    code = ctypes.create_string_buffer(program, len(program))
    fprog = SockFprog(len(program) // BPF_INSTRUCTION, ctypes.cast(code, ctypes.c_void_p))
    if (
        _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
        or _libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0
    ):
        errno = ctypes.get_errno()
        raise SetupError(f"cannot install the seccomp filter: {os.strerror(errno)}")


def _mount(source: str | None, target: str, flags: int) -> None:
    enc = os.fsencode
    if _libc.mount(enc(source) if source else None, enc(target), None, ctypes.c_ulong(flags), None) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"mount {target}: {os.strerror(errno)}")


def _mounts() -> list[tuple[str, int]]:
    """Every mount point of this namespace with the flags a remount must keep, from ``/proc/self/mountinfo``."""
    found = []
    with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as f:
        for line in f:
            fields = line.split()
            point = fields[4]
            for raw, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
                point = point.replace(raw, char)
            flags = sum(MOUNT_FLAGS.get(option, 0) for option in fields[5].split(","))
            found.append((point, flags))
    return found


def read_only_outside(writable: list[str]) -> int:
    """A private mount namespace where every mount is read-only except bind mounts of the ``writable`` paths.

    Landlock governs opening, creating, renaming and removing files, but has no right for changing metadata:
    chmod, chown, utime and setxattr of a file outside the workspace pass it. A read-only mount refuses them
    all (EROFS). Runs after the network namespace (a user namespace, if any, gives the right to do this).
    Returns how many mounts were made read-only.
    """
    if _libc.unshare(CLONE_NEWNS) != 0:
        errno = ctypes.get_errno()
        raise SetupError(f"cannot create a mount namespace: {os.strerror(errno)}")
    try:
        _mount(None, "/", MS_REC | MS_PRIVATE)  # nothing done here propagates back to the host
        keep = [os.path.realpath(path) for path in writable]
        for path in keep:
            _mount(path, path, MS_BIND | MS_REC)  # its own mount, which stays writable below a read-only parent
        done = 0
        for point, flags in _mounts():
            if any(point == path or point.startswith(path.rstrip("/") + "/") for path in keep):
                continue
            try:
                _mount(None, point, MS_REMOUNT | MS_BIND | MS_RDONLY | flags)
                done += 1
            except OSError as exc:
                if point == "/" or exc.errno not in (2, 13):  # ENOENT/EACCES: an overmounted or hidden mount
                    raise
        os.chdir(os.getcwd())  # the working directory was entered before the binds: enter it again, through them
        return done
    except OSError as exc:
        raise SetupError(f"cannot make the file system read-only outside the workspace: {exc.strerror}") from None


def confine(config: dict[str, Any], *, best_effort: bool) -> dict[str, Any]:
    """Apply what ``config`` asks for; ``best_effort`` (the probe) records failures instead of raising them."""
    applied: dict[str, Any] = {}
    if config.get("netns"):
        try:
            applied["netns"] = enter_network_namespace()
        except (SetupError, OSError) as exc:
            if not best_effort:
                raise SetupError(str(exc)) from None
            applied["netns_error"] = str(exc)
    if config.get("read_only_outside"):
        try:
            applied["read_only_mounts"] = read_only_outside(list(config.get("write", [])))
        except SetupError as exc:
            if not best_effort:
                raise
            applied["read_only_error"] = str(exc)
    if config.get("landlock"):
        try:
            applied["landlock"] = apply_landlock(config)
        except SetupError as exc:
            if not best_effort:
                raise
            applied["landlock_error"] = str(exc)
    if config.get("keyctl"):
        try:
            join_new_session_keyring(config["keyctl"])
            applied["session_keyring"] = "new"
        except SetupError as exc:
            if not best_effort:
                raise
            applied["session_keyring_error"] = str(exc)
    if config.get("seccomp"):
        try:
            install_filter(config["seccomp"])
            applied["seccomp"] = True
        except SetupError as exc:
            if not best_effort:
                raise
            applied["seccomp_error"] = str(exc)
    return applied


def run_python(code: str, args: list[str]) -> None:
    """Run ``code`` here as ``python -c CODE ARGS`` runs it: ``sys.argv``, the working directory first on
    ``sys.path``, ``__main__``. An exception is reported as Python reports one, without this program's frames."""
    sys.argv = ["-c", *args]
    sys.path[0] = ""  # where the script's directory was: the working directory, as with -c
    sys.dont_write_bytecode = True
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    try:
        exec(compile(code, "<string>", "exec"), namespace)
    except SystemExit:
        raise
    except BaseException as exc:
        import traceback

        traceback.print_exception(type(exc), exc, exc.__traceback__.tb_next if exc.__traceback__ else None)
        sys.exit(1)


def _fail(status_fd: int, stage: str, message: str) -> int:
    """Tell the parent what stopped the tool from starting: the sandbox (``stage="sandbox"``) or the exec."""
    if status_fd >= 0:
        os.write(status_fd, json.dumps({"stage": stage, "error": message}).encode())
    else:
        print(f"{stage}: {message}", file=sys.stderr)
    return EXIT_SETUP_FAILED


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "--probe":
        print(json.dumps(confine(json.loads(argv[1]), best_effort=True)))
        return 0
    if len(argv) < 3 or argv[1] != "--":
        print(
            "usage: launcher.py CONFIG_JSON -- PROGRAM [ARGS...] | CODE [ARGS...] | --probe CONFIG_JSON",
            file=sys.stderr,
        )
        return 2
    config = json.loads(argv[0])
    status_fd = int(config.get("status_fd", -1))
    if status_fd >= 0:
        os.set_inheritable(status_fd, False)  # closed by a successful exec: an empty status pipe means "running"
    try:
        confine(config, best_effort=False)
    except SetupError as exc:
        return _fail(status_fd, "sandbox", str(exc))
    if config.get("python"):
        if status_fd >= 0:
            os.close(status_fd)  # no exec will close it: an empty status pipe means "running"
        run_python(argv[2], argv[3:])
        return 0
    try:
        os.execvp(argv[2], argv[2:])
    except OSError as exc:
        return _fail(status_fd, "exec", f"cannot run {argv[2]!r}: {exc.strerror}")
    return EXIT_SETUP_FAILED


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
