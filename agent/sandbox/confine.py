"""Run a tool's subprocess under the strongest OS sandbox the kernel offers: writable only in the workspace, no network.

The checks of the shell policy and the file tools are the first line; this is the second, for what a permitted
program does once it runs (``python3 -c`` can open any path and any socket). Mechanisms, in order of preference:

- ``landlock`` (Linux 5.13+): ``agent/sandbox/launcher.py`` restricts itself and then execs the tool. Reads and
  execution only under the system directories, the Python installation and the workspace; writes only under the
  workspace, a private temporary directory and a few devices (``/dev/null``…). Network: a new empty network
  namespace when the kernel lets this user create one (root, or unprivileged user namespaces), plus Landlock's
  TCP rules (ABI 4+) that deny every bind and connect; ABI 6+ also stops signals and abstract-socket connections
  to processes outside the sandbox. Where no network namespace can be made (in an agent view, ``omx --as NAME``:
  a user namespace without that right), a seccomp filter refuses every socket but AF_UNIX instead, since
  Landlock's rules leave UDP, raw and every other family open.
- ``bubblewrap`` (when Landlock is missing and ``bwrap`` works): the same directories bind-mounted read-only, the
  workspace and the temporary directory read-write, ``--unshare-net``, in a user namespace of its own with no
  capability (``BWRAP_USER``): bwrap run by root keeps every capability otherwise, and a tool could remount ``/``
  read-write and change the host.
- none: shell and python tools are refused with a clear error (``SandboxUnavailable``), unless the user chose
  ``--no-sandbox`` (mode ``off``), which runs them unconfined and is recorded in the trace.

Every process gets a minimal environment (no API keys), its own session (a timeout kills the whole group), the
workspace as its working directory and a bounded share of its output. Nothing it starts outlives it: while a tool
runs, omx is a child subreaper (``PR_SET_CHILD_SUBREAPER``), so what the tool leaves behind, even a double-forked
``setsid`` daemon, becomes omx's child, and is killed and reaped when the tool ends.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any, Literal

from agent.sandbox import launcher
from omxfs.view import seccomp

__all__ = ["ProcessResult", "Sandbox", "SandboxError", "SandboxInfo", "SandboxMode", "SandboxUnavailable"]

SandboxMode = Literal["auto", "landlock", "bubblewrap", "off"]
LAUNCHER = Path(launcher.__file__).resolve()
#: bytes of stdout and of stderr kept per process; the rest is read and dropped so the tool never blocks
OUTPUT_LIMIT = 256 * 1024
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
#: what ls, grep and Python read from /etc; not the whole directory, which holds credentials, nor the user database
#: (``/etc/passwd``, ``/etc/group``: who has an account here is the machine's, not the workspace's; ``ls -l`` shows
#: numeric owners instead)
ETC_FILES = (
    "/etc/ld.so.cache",
    "/etc/localtime",
    "/etc/nsswitch.conf",
    "/etc/locale.alias",
)
#: names a Python interpreter goes by in a step's argv: its code runs in the confined launcher, never exec'd
PYTHONS = ("python3", "python")
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
PR_SET_CHILD_SUBREAPER = 36
LEFTOVER_ROUNDS = 8  # a killed leftover's own children are adopted in turn: kill until none is left, boundedly


class SandboxUnavailable(Exception):
    """No OS sandbox on this system and the user did not choose to run tools unconfined."""


class SandboxError(Exception):
    """The sandbox could not be set up for this process; the tool did not run."""


@dataclass(frozen=True)
class SandboxInfo:
    """What confines the tools of a run, as recorded in its trace."""

    mechanism: Literal["landlock", "bubblewrap", "none"]
    filesystem: str
    network: str
    landlock_abi: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ProcessResult:
    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool = False
    truncated: bool = False  # stdout was cut at OUTPUT_LIMIT (stderr is only ever shown by its end)
    duration: float = 0.0


def read_paths() -> list[str]:
    """Where a sandboxed program may read and execute: the system, this Python and its environment."""
    python = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    python.add(str(Path(sys.executable).resolve().parent))
    return sorted({*SYSTEM_DIRS, *ETC_FILES, *python})


#: the tool's own user namespace, with no capability in it and no way to make another (``--disable-userns``): bwrap
#: run by root without them keeps root's every capability, and ``mount -o remount,rw /`` then undid the read-only binds
BWRAP_USER = ("--unshare-user", "--disable-userns", "--cap-drop", "ALL")


@functools.cache
def step_filter(no_exec: bool) -> str | None:
    """The seccomp program of a step (``seccomp.step_program``: no socket, no keyring, with ``no_exec`` no exec), as
    the launcher takes it (hex); None where this machine's ABI has none."""
    program = seccomp.step_program(no_exec)
    return None if program is None else program.hex()


def python_code(argv: list[str]) -> tuple[str, list[str]] | None:
    """``(CODE, ARGS)`` when argv runs Python code (``python3 -c CODE ARGS``, this interpreter's path too), which
    the launcher runs itself under the no-exec filter; None for any other program. Any other way to start Python
    (a script, ``-m``, options) is refused: it would be an interpreter exec'd with the right to exec."""
    program = argv[0] if argv else ""
    if os.path.basename(program) not in PYTHONS and program != sys.executable:
        return None
    if len(argv) < 3 or argv[1] != "-c":
        raise SandboxError(f"Python runs here only as `python3 -c CODE` (got {' '.join(argv[:2])!r})")
    return argv[2], argv[3:]


def executables(program: str, path: str) -> list[str]:
    """The files a step's program needs the right to execute: the program, found on ``path``, and the dynamic
    loader its ELF header names (which the kernel opens for execution too). Nothing else may be exec'd."""
    found = shutil.which(program, path=path)
    if found is None:
        return []  # the exec fails as for an unknown program
    binary = os.path.realpath(found)
    loader = _elf_interpreter(binary)
    return [binary] if loader is None else [binary, os.path.realpath(loader)]


def _elf_interpreter(binary: str) -> str | None:
    """The PT_INTERP path of a 64-bit little-endian ELF file, or None (a static program, a script, unreadable)."""
    try:
        with open(binary, "rb") as f:
            header = f.read(64)
            if header[:6] != b"\x7fELF\x02\x01":
                return None
            (phoff,) = struct.unpack_from("<Q", header, 32)
            phentsize, phnum = struct.unpack_from("<HH", header, 54)
            f.seek(phoff)
            table = f.read(phentsize * phnum)
            for i in range(phnum):
                (kind,) = struct.unpack_from("<I", table, i * phentsize)
                if kind == 3:  # PT_INTERP
                    (offset,) = struct.unpack_from("<Q", table, i * phentsize + 8)
                    (size,) = struct.unpack_from("<Q", table, i * phentsize + 32)
                    f.seek(offset)
                    return f.read(size).rstrip(b"\0").decode()
    except (OSError, struct.error, UnicodeDecodeError):
        return None
    return None


@functools.cache
def probe_landlock(netns: bool) -> dict[str, Any]:
    """Ask the launcher what the kernel allows (it applies everything to itself, reports, exits); once per process."""
    config = {"landlock": True, "netns": netns, "read_only_outside": True, "read": read_paths(), "write": [],
              "seccomp": step_filter(True)}  # fmt: skip
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-S", str(LAUNCHER), "--probe", json.dumps(config)],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
        result: dict[str, Any] = json.loads(done.stdout)
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        return {"landlock_error": f"probe failed: {exc}"}
    return result


@functools.cache
def probe_bubblewrap() -> str | None:
    """The path of a working ``bwrap`` (installed and allowed to create namespaces here), else None."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return None
    try:
        done = subprocess.run(
            [bwrap, *BWRAP_USER, "--ro-bind", "/", "/", "--unshare-net", "--", "true"],
            capture_output=True,
            timeout=20,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return bwrap if done.returncode == 0 else None


def _network(probe: dict[str, Any], landlock: dict[str, Any]) -> str:
    """What keeps a step off the network, as the banner and the trace say it, the gap too where there is one."""
    network = [probe["netns"]] if "netns" in probe else []
    if "seccomp" in probe:
        network.append("seccomp: no socket (a socketpair only)")
    if not network:
        network = ["NOT confined (no network namespace or socket filter here: UDP and more reach the network)"]
    network += ["landlock TCP deny"] if landlock["tcp_denied"] else []
    network += ["signal and abstract-socket scoping"] if landlock["ipc_scoped"] else []
    return " + ".join(network)


class Sandbox:
    """Runs argv confined to one workspace. ``mode`` picks the mechanism: "auto" takes the best one available."""

    def __init__(
        self, workspace: Path, *, mode: SandboxMode = "auto", netns: bool = True, env: dict[str, str] | None = None
    ) -> None:
        self.workspace = workspace.resolve()
        self.mode = mode
        self.netns = netns  # tests turn it off to see Landlock's own TCP rules at work
        self.extra_env = dict(env or {})
        self._info: SandboxInfo | None = None
        self._landlock: dict[str, Any] = {}
        self._bwrap: str | None = None

    @property
    def info(self) -> SandboxInfo:
        """The mechanism this sandbox uses, detected on first use."""
        if self._info is None:
            self._info = self._detect()
        return self._info

    def _detect(self) -> SandboxInfo:
        if self.mode == "off":
            return SandboxInfo("none", "unconfined (--no-sandbox)", "unconfined (--no-sandbox)")
        if self.mode in ("auto", "landlock"):
            probe = probe_landlock(self.netns)
            landlock = probe.get("landlock")
            if landlock:
                if "seccomp" not in probe:
                    raise SandboxUnavailable(
                        f"seccomp is not available ({probe.get('seccomp_error', 'unknown ABI')}): without it a step "
                        "could reach host sockets and start programs; rerun with --no-sandbox to run tools unconfined"
                    )
                self._landlock = {"netns": "netns" in probe, "deny_tcp": landlock["tcp_denied"],
                                  "read_only_outside": "read_only_mounts" in probe}  # fmt: skip
                return SandboxInfo(
                    "landlock",
                    f"landlock ABI {landlock['abi']}: writes only under the workspace and a private temp dir",
                    _network(probe, landlock),
                    landlock_abi=landlock["abi"],
                )
            if self.mode == "landlock":
                raise SandboxUnavailable(f"Landlock is not available: {probe.get('landlock_error', 'unknown')}")
        if self.mode in ("auto", "bubblewrap"):
            self._bwrap = probe_bubblewrap()
            if self._bwrap:
                return SandboxInfo(
                    "bubblewrap", "read-only system binds, workspace and temp dir writable", "bubblewrap --unshare-net"
                )
        raise SandboxUnavailable(
            "no OS sandbox is available here (Landlock needs Linux 5.13+; or install bubblewrap): shell and python "
            "tools are refused; rerun with --no-sandbox to run them unconfined"
        )

    def _environment(self, tmp: str) -> dict[str, str]:
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": tmp,
            "TMPDIR": tmp,
            "LANG": "C.UTF-8",
            "PYTHONIOENCODING": "utf-8",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONNOUSERSITE": "1",
        }
        return env | self.extra_env

    def _command(self, argv: list[str], tmp: str, status_fd: int) -> list[str]:
        info = self.info
        workspace = str(self.workspace)
        if info.mechanism == "none":
            return argv
        code = python_code(argv)
        # Python code runs in the launcher itself (-s: its site-packages, as `python3 -c` has them); any other
        # program is exec'd by it, with the right to execute that program alone
        if code is None:
            launcher = [sys.executable, "-I", "-S", str(LAUNCHER)]
            program = list(argv)
        else:
            launcher = [sys.executable, "-s", str(LAUNCHER)]
            program = [code[0], *code[1]]
        config: dict[str, Any] = {"status_fd": status_fd, "python": code is not None, "keyctl": seccomp.keyctl_number(),
                                  "seccomp": step_filter(code is not None)}  # fmt: skip
        if info.mechanism == "landlock":
            execute = [] if code is not None else executables(argv[0], self._environment(tmp)["PATH"])
            config |= {"landlock": True, "read": read_paths(), "write": [workspace, tmp], "devices": list(DEVICES),
                       "execute": execute, **self._landlock}  # fmt: skip
            return [*launcher, json.dumps(config), "--", *program]
        if code is None:
            raise SandboxUnavailable(
                "Landlock is not available in this kernel (Linux 5.13+), and only Landlock keeps a shell step's "
                "program from starting another: shell steps are refused (python steps run under bubblewrap); "
                "rerun with --no-sandbox to run them unconfined"
            )
        if info.mechanism == "bubblewrap":
            assert self._bwrap is not None
            binds = [arg for path in [*read_paths(), str(LAUNCHER)] for arg in ("--ro-bind-try", path, path)]
            return [
                self._bwrap,
                *BWRAP_USER,
                "--die-with-parent",
                "--unshare-net",
                "--unshare-ipc",
                "--unshare-pid",
                "--new-session",
                *binds,
                "--dev",
                "/dev",
                "--bind",
                workspace,
                workspace,
                "--bind",
                tmp,
                tmp,
                "--remount-ro",
                "/",
                "--chdir",
                workspace,
                "--",
                *launcher,
                json.dumps(config),
                "--",
                *program,
            ]
        return argv

    def run(self, argv: list[str], *, timeout: float) -> ProcessResult:
        """Run argv in the workspace; raises SandboxUnavailable or SandboxError when it cannot be confined."""
        self.info  # noqa: B018  (detect first: an unavailable sandbox must fail before anything starts)
        tmp = tempfile.mkdtemp(prefix="omx-tool-")
        status_read, status_write = os.pipe()
        start = time.monotonic()
        before = _children()
        _subreaper(True)
        try:
            try:
                proc = subprocess.Popen(
                    self._command(argv, tmp, status_write),
                    cwd=self.workspace,
                    env=self._environment(tmp),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    pass_fds=(status_write,),
                    start_new_session=True,
                )
            except OSError as exc:  # E2BIG (a huge argument), ENOENT (no bwrap any more)...
                return ProcessResult(126, "", f"cannot start {argv[0]}: {exc.strerror}")
            finally:
                os.close(status_write)
            result = _collect(proc, timeout, lambda: _kill_leftovers(proc, before))
            result.duration = time.monotonic() - start
            status = _read_all(status_read)
        finally:
            _subreaper(False)
            os.close(status_read)
            shutil.rmtree(tmp, ignore_errors=True)
        if status:
            failure = json.loads(status)
            if failure["stage"] == "sandbox":
                raise SandboxError(failure["error"])
            return ProcessResult(127, "", failure["error"], duration=result.duration)
        return result


def _subreaper(on: bool) -> None:
    """Become (or stop being) the reaper of orphans below us; best effort off Linux."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0)


def _children() -> set[int]:
    """Our children now, adopted orphans included (every thread's)."""
    found: set[int] = set()
    with contextlib.suppress(OSError):
        for task in os.listdir("/proc/self/task"):
            with contextlib.suppress(OSError), open(f"/proc/self/task/{task}/children", encoding="ascii") as f:
                found.update(int(pid) for pid in f.read().split())
    return found


def _kill_leftovers(proc: subprocess.Popen[bytes], before: set[int]) -> None:
    """Kill what the tool left: its session, then every orphan we adopted since it started, and reap them."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    for _ in range(LEFTOVER_ROUNDS):
        leftovers = _children() - before - {proc.pid}
        if not leftovers:
            return
        for pid in leftovers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    return b"".join(chunks)


def _drain(stream: IO[bytes], keep: bytearray, dropped: list[bool]) -> None:
    """Keep the first OUTPUT_LIMIT bytes and read the rest away, so a chatty tool never blocks on a full pipe."""
    while chunk := stream.read(65536):
        room = OUTPUT_LIMIT - len(keep)
        keep.extend(chunk[: max(room, 0)])
        if len(chunk) > room:
            dropped[0] = True


def _kill_session(proc: subprocess.Popen[bytes]) -> None:
    """Kill the tool and everything it started in its session, and reap it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _collect(proc: subprocess.Popen[bytes], timeout: float, leftovers: Callable[[], None]) -> ProcessResult:
    """Wait for the tool (killing its session on timeout), then ``leftovers()`` (which kills what it left,
    holding its pipes), then take its output."""
    out, err, dropped = bytearray(), bytearray(), [False]
    assert proc.stdout is not None and proc.stderr is not None
    readers = [
        threading.Thread(target=_drain, args=(s, b, d), daemon=True)
        for s, b, d in ((proc.stdout, out, dropped), (proc.stderr, err, [False]))
    ]
    for reader in readers:
        reader.start()
    timed_out = False
    try:
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_session(proc)
        except BaseException:  # Ctrl-C: the tool has its own session, so the terminal's SIGINT did not reach it
            _kill_session(proc)
            raise
    finally:
        leftovers()
        for reader, stream in zip(readers, (proc.stdout, proc.stderr), strict=True):
            reader.join(timeout=5)  # a child that left the session may hold the pipe: do not wait for it forever
            if not reader.is_alive():
                stream.close()
    text = functools.partial(bytes.decode, encoding="utf-8", errors="replace")
    return ProcessResult(
        None if timed_out else proc.returncode,
        text(bytes(out)),
        text(bytes(err)),
        timed_out=timed_out,
        truncated=dropped[0],
    )
