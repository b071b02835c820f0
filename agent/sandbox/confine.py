"""Run a step's program or Python code in a sandbox where what the risk policy forbids is impossible, whatever the
command line or the code says: no read outside the workspace and what programs need, no write outside the
workspace, no host UNIX socket, no network, no program started but the step's own, no set-user-ID or set-group-ID
file (for root and every other user alike), no capability.

The checks of the shell policy and the risk rules are the first line and what a person reads; this is the wall.
Two mechanisms, chosen by where omx runs:

- ``bubblewrap`` (outside an agent view): bwrap puts the step in a user namespace of its own with no capability
  (``--cap-drop ALL``, ``--disable-userns``: bwrap run by root keeps every capability otherwise, and a step
  remounted ``/`` read-write) and in its own mount, network, PID, IPC and UTS namespaces. Its file system is
  built from nothing: the system directories read-only (``SYSTEM_DIRS``), a minimal ``/etc`` (``ETC_SHOWN`` and a
  synthetic ``passwd`` and ``group`` that name the sandbox user and ``nobody`` alone), a private ``/tmp`` (an empty
  directory of omx's, removed after the step), bwrap's minimal ``/dev``, the workspace read-write, then the Python
  installation and this package's launcher read-only (they may live under ``/root``, as with pyenv, or inside the
  workspace). Nothing else: no ``/home``, no ``/root`` beyond the Python installation, no ``/run``, no ``/var``, no
  ``/proc`` (so no ``/proc/self/root`` or ``/proc/self/mem`` either), no ``/sys``, not the host's ``/tmp`` and its
  sockets. ``--unshare-net`` leaves only a loopback of its own. Inside, the launcher (``launcher.py``) adds Landlock
  (defence in depth: reads under the same paths, writes under the workspace and ``/tmp``, execution of the step's
  one program) and the seccomp filters (``omxfs/view/seccomp.py``: no ``socket()`` at all, so no path or abstract
  UNIX socket, ``socketpair`` kept; no ``execve`` but the launcher's own; no ptrace, io_uring, 32-bit calls; no
  S_ISUID or S_ISGID mode by any call that sets one, chmod to mknod, and no ``openat2``).
- ``landlock`` (in an agent view, ``omx --as NAME``, where ``OMX_VIEW`` is set and the view forbids making user
  namespaces, so bwrap cannot run): the view already gives a private ``/tmp``, no ``/run``, no ``/home`` and its own
  PID namespace; the launcher confines the step with the same Landlock rules (reads under the workspace, the
  system directories, the Python installation and ``ETC_SHOWN``, not ``/etc/passwd``, which here is the host's) and
  the same seccomp filters. Unlike bubblewrap, it cannot stop a change of metadata (chmod, utime) of a file the
  view lets its user write outside the workspace (its private ``/tmp``): Landlock has no right for metadata.

In both, the launcher drops every capability before the step's code runs (``launcher.drop_capabilities``: bounding,
ambient, effective, permitted and inheritable sets, securebits locked, ``NO_NEW_PRIVS``): a step of root's obeys
file modes and ownership as any user's does, and sets no file capability.

Where a piece is missing (no ``bwrap``, no user namespaces for it, no Landlock, no seccomp filter for this ABI, a
capability that cannot be dropped), the step is refused with ``SandboxUnavailable`` naming it, never run with less;
``--no-sandbox`` (mode ``off``) runs steps unconfined, and the trace says so.

Every process gets a minimal environment (no API keys), its own session (a timeout kills the whole group), the
workspace as its working directory, a bounded share of its output, and limits it cannot lift (``omxfs.cgroups``: a
cgroup of its own for its processes and memory, ``RLIMIT_FSIZE`` for the size of a file), in every mode, ``off``
too; a step that reaches one fails with a message that names it. Nothing it starts outlives it: while a step
runs, omx is a child subreaper (``PR_SET_CHILD_SUBREAPER``), so what the step leaves behind, even a double-forked
``setsid`` daemon, becomes omx's child, and is killed and reaped when the step ends.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import IO, Any, Literal

from agent.sandbox import launcher
from omxfs import cgroups
from omxfs.errors import OmxError
from omxfs.limits import Limits, resolve
from omxfs.store.config import parse_config
from omxfs.store.layout import CONFIG, META_DIR
from omxfs.view import seccomp
from omxfs.view.env import VIEW_ENV
from omxfs.view.sandbox import read_only_dirs

__all__ = ["ProcessResult", "Sandbox", "SandboxError", "SandboxInfo", "SandboxMode", "SandboxUnavailable"]

SandboxMode = Literal["auto", "landlock", "bubblewrap", "off"]
LAUNCHER = Path(launcher.__file__).resolve()
SECCOMP = Path(seccomp.__file__).resolve()
#: bytes of stdout and of stderr kept per process; the rest is read and dropped so the tool never blocks
OUTPUT_LIMIT = 256 * 1024
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
#: what of the host's /etc a step sees: the dynamic loader's cache, the time zone, name-service switch (with the
#: synthetic passwd/group: ``ls -l`` names owners), locale aliases, the alternatives' symlinks (``/usr/bin/awk``
#: and the like lead through them), the OS release and MIME types (Python's ``platform`` and ``mimetypes``).
#: Not ``shadow``, ``gshadow``, ``ssh/``, ``ssl/private``, ``sudoers``, the real ``passwd``/``group``, ``hosts``.
ETC_SHOWN = (
    "/etc/ld.so.cache",
    "/etc/localtime",
    "/etc/nsswitch.conf",
    "/etc/locale.alias",
    "/etc/alternatives",
    "/etc/os-release",
    "/etc/mime.types",
)
#: the synthetic account files of a bubblewrap sandbox (in a view, where nothing can be mounted, none)
ACCOUNTS = ("/etc/passwd", "/etc/group")
SANDBOX_USER = "sandbox"
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
#: writable in both mechanisms, and private in both (bwrap's /dev, or the view's): multiprocessing's semaphores
PRIVATE_DEVICE_DIRS = ("/dev/shm",)
SANDBOX_TMP = "/tmp"
PR_SET_CHILD_SUBREAPER = 36
LEFTOVER_ROUNDS = 8  # a killed leftover's own children are adopted in turn: kill until none is left, boundedly
NO_SANDBOX_HINT = "shell and python steps are refused; rerun with --no-sandbox to run them unconfined"
#: no socket() at all and no program but the step's, as the banner and the trace say it
NO_SOCKET = "seccomp: no socket but AF_UNIX pairs (socketpair)"
PROGRAMS = "seccomp: python code starts no program; a shell step runs its one program, which starts none"


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
    programs: str = ""
    limits: str = ""  # each step's limits, and what holds them

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
    reached: list[str] = field(default_factory=list)  # the limits it reached, each as ``Reached.message`` says it


def _under_any(path: str, roots: Sequence[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


def python_dirs() -> list[str]:
    """This Python's installation and environment, where they lie outside the system directories."""
    found = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    found.add(str(Path(sys.executable).resolve().parent.parent))
    found = {os.path.realpath(path) for path in found} | found
    kept: list[str] = []
    for path in sorted(found, key=len):
        if not _under_any(path, [*SYSTEM_DIRS, *kept]):
            kept.append(path)
    return kept


def read_paths(accounts: bool) -> list[str]:
    """Where a sandboxed step may read (never execute): the system, this Python, the shown part of /etc."""
    return sorted({*SYSTEM_DIRS, *ETC_SHOWN, *python_dirs(), *(ACCOUNTS if accounts else ())})


#: the step's own user namespace, with no capability in it and no way to make another (``--disable-userns``): bwrap
#: run by root without them keeps root's every capability, and ``mount -o remount,rw /`` then undid the read-only binds
BWRAP_USER = ("--unshare-user", "--disable-userns", "--cap-drop", "ALL")
BWRAP_NAMESPACES = (
    *BWRAP_USER,
    "--unshare-net",
    "--unshare-ipc",
    "--unshare-pid",
    "--unshare-uts",
    "--unshare-cgroup-try",
    "--die-with-parent",
    "--new-session",
)


@functools.cache
def probe_landlock(netns: bool = False) -> dict[str, Any]:
    """Ask the launcher what the kernel allows: it applies Landlock, the capability drop and the seccomp filters to
    itself, reports and exits (once per process). ``{"landlock": {...}, "seccomp": True, "capabilities": {...}}``,
    else ``landlock_error``, ``capabilities_error`` or ``seccomp_error`` says what is missing. (``netns`` is kept
    for callers; the launcher makes no namespace.)"""
    config = {"read": read_paths(False), "write": [], "seccomp": str(SECCOMP)}
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
def bubblewrap_probe() -> tuple[str | None, str]:
    """(the path of a ``bwrap`` that made the step's namespaces here, "") or (None, why not)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return None, "bubblewrap (bwrap) is not installed"
    try:
        done = subprocess.run(
            [bwrap, *BWRAP_NAMESPACES, "--ro-bind", "/", "/", "--", "true"],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"bubblewrap did not run: {exc}"
    if done.returncode != 0:
        said = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit status {done.returncode}"
        return None, f"bubblewrap cannot make the step's user namespace here ({said})"
    return bwrap, ""


def probe_bubblewrap() -> str | None:
    """The path of a working ``bwrap`` (installed and allowed to create namespaces here), else None."""
    return bubblewrap_probe()[0]


def _refusal(why: str) -> SandboxUnavailable:
    return SandboxUnavailable(f"the step sandbox is not available: {why}: {NO_SANDBOX_HINT}")


class Sandbox:
    """Runs a step confined to one workspace. ``mode`` picks the mechanism: "auto" takes bubblewrap, or in an
    agent view Landlock alone (see the module)."""

    def __init__(
        self,
        workspace: Path,
        *,
        mode: SandboxMode = "auto",
        env: dict[str, str] | None = None,
        limits: Limits | None = None,
    ) -> None:
        self.workspace = workspace.resolve()
        self.mode = mode
        self.extra_env = dict(env or {})
        #: each step's limits: ``limits`` (the command line's), then the workspace's config, then the defaults
        self.limits = resolve(limits or Limits(), workspace_limits(self.workspace))
        self._info: SandboxInfo | None = None
        self._landlock: dict[str, Any] = {}
        self._bwrap: str | None = None

    @property
    def info(self) -> SandboxInfo:
        """The mechanism this sandbox uses, detected on first use."""
        if self._info is None:
            detected = self._detect()
            self._info = replace(detected, limits=f"{self.limits.described()} ({cgroups.holder(self.limits)})")
        return self._info

    def _kernel(self) -> dict[str, Any]:
        """Landlock, seccomp and the capability drop, which both mechanisms need; refused, naming what is missing,
        without them."""
        probe = probe_landlock(False)
        if "landlock_error" in probe or "landlock" not in probe:
            raise _refusal(f"Landlock is missing ({probe.get('landlock_error', 'unknown')}; it needs Linux 5.13+)")
        if "capabilities_error" in probe:
            raise _refusal(f"the step's capabilities cannot be dropped ({probe['capabilities_error']})")
        if "seccomp_error" in probe or not probe.get("seccomp"):
            raise _refusal(f"the seccomp filter cannot be installed ({probe.get('seccomp_error', 'unknown')})")
        landlock: dict[str, Any] = probe["landlock"]
        self._landlock = {"deny_tcp": landlock["tcp_denied"]}
        return landlock

    def _detect(self) -> SandboxInfo:
        if self.mode == "off":
            return SandboxInfo("none", "unconfined (--no-sandbox)", "unconfined (--no-sandbox)", programs="any")
        if self.mode in ("auto", "bubblewrap"):
            self._bwrap = probe_bubblewrap()
            if self._bwrap is None:
                why = bubblewrap_probe()[1] or "bubblewrap is not available"
                if self.mode == "bubblewrap" or VIEW_ENV not in os.environ:
                    raise _refusal(why)
            else:
                landlock = self._kernel()
                return SandboxInfo(
                    "bubblewrap",
                    "own mount namespace: system dirs read-only, minimal /etc, private /tmp, no /home /root /run "
                    f"/proc; writes only under the workspace; Landlock ABI {landlock['abi']} inside",
                    f"bubblewrap --unshare-net + {NO_SOCKET}",
                    landlock_abi=landlock["abi"],
                    programs=PROGRAMS,
                )
        landlock = self._kernel()
        network = [NO_SOCKET]
        network += ["landlock TCP deny"] if landlock["tcp_denied"] else []
        network += ["signal and abstract-socket scoping"] if landlock["ipc_scoped"] else []
        return SandboxInfo(
            "landlock",
            f"landlock ABI {landlock['abi']}: reads under the workspace, system dirs and Python; writes only under "
            "the workspace and a private temp dir",
            " + ".join(network),
            landlock_abi=landlock["abi"],
            programs=PROGRAMS,
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

    def _config(self, tmp: str, status_fd: int, python: bool) -> str:
        bubblewrap = self.info.mechanism == "bubblewrap"
        config = {
            "read": read_paths(accounts=bubblewrap),
            "write": [str(self.workspace), tmp, *PRIVATE_DEVICE_DIRS],
            "devices": list(DEVICES),
            "seccomp": str(SECCOMP),
            "status_fd": status_fd,
            "python": python,
            **self._landlock,
        }
        return json.dumps(config)

    def _command(self, argv: list[str], scratch: str, status_fd: int, python: bool = False) -> list[str]:
        """The whole command line: bwrap (or nothing, in a view) and the launcher, then the step's ``argv`` (for a
        python step: its code and arguments)."""
        info = self.info
        if info.mechanism == "none":
            return [sys.executable, "-c", *argv] if python else argv
        tmp = SANDBOX_TMP if info.mechanism == "bubblewrap" else f"{scratch}/tmp"
        step = [sys.executable, "-I", "-S", str(LAUNCHER), self._config(tmp, status_fd, python), "--", *argv]
        if info.mechanism == "landlock":
            return step
        assert self._bwrap is not None
        return [self._bwrap, *BWRAP_NAMESPACES, *self._filesystem(scratch), "--chdir", str(self.workspace), "--", *step]

    def _filesystem(self, scratch: str) -> list[str]:
        """The bwrap arguments that build the step's file system (see the module); later binds cover earlier ones."""
        args = read_only_dirs(SYSTEM_DIRS)
        args += ["--dev", "/dev", "--bind", f"{scratch}/tmp", SANDBOX_TMP]
        for path in ETC_SHOWN:
            args += ["--ro-bind-try", path, path]
        for path in ACCOUNTS:
            args += ["--ro-bind", f"{scratch}/{Path(path).name}", path]
        workspace = str(self.workspace)
        args += ["--bind", workspace, workspace]
        for path in [*python_dirs(), str(LAUNCHER), str(SECCOMP)]:  # after the workspace: read-only even inside it
            args += ["--ro-bind", path, path]
        return [*args, "--remount-ro", "/"]

    def run(self, argv: list[str], *, timeout: float) -> ProcessResult:
        """Run the program ``argv`` in the workspace; it cannot start another. Raises SandboxUnavailable or
        SandboxError when it cannot be confined."""
        return self._run(argv, timeout, python=False)

    def run_python(
        self, code: str, *, timeout: float, args: Sequence[str] = (), stdin: str | None = None
    ) -> ProcessResult:
        """Run Python ``code`` (as ``python -c CODE ARGS``) in the workspace; it cannot start any program. ``stdin``
        is what the code reads from its standard input (else nothing)."""
        return self._run([code, *args], timeout, python=True, stdin=stdin)

    def _run(self, argv: list[str], timeout: float, *, python: bool, stdin: str | None = None) -> ProcessResult:
        self.info  # noqa: B018  (detect first: an unavailable sandbox must fail before anything starts)
        scratch = tempfile.mkdtemp(prefix="omx-tool-")
        _scratch_files(scratch)
        if stdin is None:
            return self._started(argv, timeout, python, scratch, subprocess.DEVNULL)
        # the input as a file outside the sandbox, handed over as the open descriptor 0: no path to it inside, and
        # no pipe to feed while collecting the output (a program that never reads its input cannot block omx)
        Path(f"{scratch}/stdin").write_bytes(stdin.encode("utf-8", "surrogateescape"))
        with open(f"{scratch}/stdin", "rb") as given:  # read-only: the step reads its input, it cannot change it
            return self._started(argv, timeout, python, scratch, given.fileno())

    def _started(self, argv: list[str], timeout: float, python: bool, scratch: str, stdin: int) -> ProcessResult:
        tmp = SANDBOX_TMP if self.info.mechanism == "bubblewrap" else f"{scratch}/tmp"
        env = self._environment(tmp)
        if self.info.mechanism == "none" and not python and shutil.which(argv[0], path=env["PATH"]) is None:
            return ProcessResult(126, "", f"cannot start {argv[0]}: {os.strerror(2)}")  # as Popen would have said
        status_read, status_write = os.pipe()
        start = time.monotonic()
        before = _children()
        _subreaper(True)
        try:
            with cgroups.confined(self.limits, cgroups.unique_name(f"step-{os.getpid()}"), _note) as box:
                try:
                    proc = subprocess.Popen(
                        box.command(self._command(argv, scratch, status_write, python)),
                        cwd=self.workspace,
                        env=env,
                        stdin=stdin,
                        stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE,
                        pass_fds=(status_write, *box.pass_fds),
                        start_new_session=True,
                    )
                except OSError as exc:  # E2BIG (a huge argument), ENOMEM...
                    return ProcessResult(126, "", f"cannot start {argv[0]}: {exc.strerror}")
                finally:
                    os.close(status_write)
                box.start(proc.pid)
                result = _collect(proc, timeout, functools.partial(_end_tree, box, proc, before))
                result.duration = time.monotonic() - start
                result.reached = [reached.message() for reached in box.reached(proc.returncode, result.stderr)]
                stopped = "stopped: " if result.returncode != 0 else ""
                result.stderr += "".join(f"\nomx: {stopped}the step {message}" for message in result.reached)
            status = _read_all(status_read)
        finally:
            _subreaper(False)
            os.close(status_read)
            shutil.rmtree(scratch, ignore_errors=True)
        if status:
            failure = json.loads(status)
            if failure["stage"] == "sandbox":
                raise SandboxError(failure["error"])
            return ProcessResult(127, "", failure["error"], duration=result.duration)
        return result


def workspace_limits(workspace: Path) -> Limits:
    """The limits the workspace's config sets (``[limits]`` of ``.omxfs/config.toml``, through a mount too); none
    where it is no omxfs workspace, or its config cannot be read (the mount and the views refuse such a config)."""
    try:
        text = (workspace / META_DIR / CONFIG).read_text(encoding="utf-8")
        return parse_config(text).limits
    except (OSError, UnicodeDecodeError, OmxError):
        return Limits()


def _note(line: str) -> None:
    """What the limits of a step could not have as asked (no cgroup here): said once on stderr."""
    if VIEW_ENV in os.environ:  # a view's /sys is read-only: its own cgroup holds all its steps together
        line += "; the view's own limits hold all its steps together"
    if line not in _noted:
        _noted.add(line)
        print(f"omx: {line}", file=sys.stderr)


_noted: set[str] = set()


def _scratch_files(scratch: str) -> None:
    """The step's private /tmp and its synthetic account files: the sandbox user (this uid, which bwrap maps to
    itself) and nobody (the owner the kernel shows for every unmapped uid)."""
    os.mkdir(f"{scratch}/tmp", 0o700)
    uid, gid = os.getuid(), os.getgid()
    users = {uid: f"{SANDBOX_USER}:x:{uid}:{gid}:omx step:{SANDBOX_TMP}:/usr/sbin/nologin"}
    users.setdefault(65534, "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin")
    groups = {gid: f"{SANDBOX_USER}:x:{gid}:"}
    groups.setdefault(65534, "nogroup:x:65534:")
    Path(f"{scratch}/passwd").write_text("".join(f"{line}\n" for line in users.values()), encoding="utf-8")
    Path(f"{scratch}/group").write_text("".join(f"{line}\n" for line in groups.values()), encoding="utf-8")


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


def _end_tree(box: cgroups.Confinement, proc: subprocess.Popen[bytes], before: set[int]) -> None:
    """Kill what is left in the step's cgroups (where it has some), then what it left beside them, and reap it."""
    box.kill()
    _kill_leftovers(proc, before)


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
