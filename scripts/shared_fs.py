"""Several FUSE clients of one directory that share no OS locks and cache attributes, the way two machines see
one store on a shared filesystem (SPEC §1: every compare-and-swap must linearize on an atomic exclusive create,
because neither locks nor fresh attributes are shared). On one machine, with no network but 127.0.0.1:

- ``sshfs``: a private ``sshd`` on a free port of 127.0.0.1 (its own config, host key and authorized key in a
  temporary directory), and one ``sshfs`` mount of the store per client with sshfs's defaults: its directory
  cache (``dir_cache=yes``: names and attributes kept for 20 s) and the kernel's 1 s attribute and entry cache.
  SFTP has no locks at all: an ``flock`` is local to one mount.
- ``bindfs``: one ``bindfs STORE MNT`` per client with its defaults: the kernel's 1 s attribute and entry cache,
  and no lock forwarding (``--enable-lock-forwarding`` is off), so an ``flock`` is local to one mount too.

Each client is a context manager that always cleans up, also when the body fails: lazy unmount, then its
process group is killed (sshfs's ``ssh``, the private ``sshd``).

    with shared_fs.clients("sshfs", store, workdir, n=2) as views:   # views[i]: client i's view of store
        ...

``python scripts/shared_fs.py probe sshfs|bindfs`` prints what such clients provide to each other, as JSON:
whether an ``flock`` or a POSIX lock taken in one is seen by the other, whether ``O_EXCL``, ``link`` and
``renameat2(RENAME_NOREPLACE)`` refuse an existing name created by the other, and how stale a replaced file or
an appended size reads in the other right after the change.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import getpass
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

KINDS = ("sshfs", "bindfs")
DEADLINE = 20.0  # seconds for a server to listen or a client to mount
SSHD = "/usr/sbin/sshd"  # sshd re-executes itself and refuses to start unless run by its absolute path
PRIVSEP_DIR = Path("/run/sshd")  # sshd refuses to start without its privilege separation directory
BINARIES = {"sshfs": ("sshfs", "ssh", "ssh-keygen", SSHD), "bindfs": ("bindfs",)}


def missing(kind: str) -> str | None:
    """Why clients of ``kind`` cannot be made on this machine (a sentence), or None when they can."""
    if kind not in KINDS:
        return f"unknown shared filesystem {kind!r} (known: {', '.join(KINDS)})"
    if not os.path.exists("/dev/fuse"):
        return "/dev/fuse is absent"
    if shutil.which("fusermount3") is None:
        return "fusermount3 is not installed (apt-get install fuse3)"
    absent = [name for name in BINARIES[kind] if shutil.which(name) is None]
    if absent:
        return f"{', '.join(absent)} not installed (scripts/install.sh --dev installs them)"
    return None


def poll(condition: Callable[[], bool], what: str, timeout: float = DEADLINE) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.02)


def _end(proc: subprocess.Popen[bytes]) -> None:
    """End a process started in a session of its own, and everything it started (by its process group id)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(5)
            return
        except subprocess.TimeoutExpired:
            continue


def _output(log: Path) -> str:
    return log.read_text("utf-8", "replace")[-2000:] if log.exists() else ""


@contextlib.contextmanager
def fuse_client(argv: list[str], mnt: Path, log: Path) -> Iterator[Path]:
    """Run a FUSE filesystem in the foreground (``argv`` includes ``-f``) until ``mnt`` is mounted; afterwards
    unmount it lazily and end its process group, whatever happened in between."""
    mnt.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        poll(lambda: os.path.ismount(mnt) or proc.poll() is not None, f"{argv[0]} to mount {mnt}")
        if proc.poll() is not None:
            raise RuntimeError(f"{argv[0]} exited {proc.returncode} before mounting {mnt}: {_output(log)}")
        yield mnt
    finally:
        subprocess.run(["fusermount3", "-u", "-z", str(mnt)], capture_output=True, check=False)
        _end(proc)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _listening(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


class Sshd:
    """A private sshd on 127.0.0.1: its config, host key, client key and log live in ``home``."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.port = free_port()
        self.identity = home / "id_ed25519"
        self.log = home / "sshd.log"
        self.user = getpass.getuser()

    def configure(self) -> Path:
        for key in ("host_ed25519", "id_ed25519"):
            subprocess.run(
                ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "omx-shared-fs", "-f", str(self.home / key)],
                check=True,
                capture_output=True,
            )
        shutil.copyfile(self.home / "id_ed25519.pub", self.home / "authorized_keys")
        config = self.home / "sshd_config"
        config.write_text(
            f"Port {self.port}\n"
            "ListenAddress 127.0.0.1\n"
            f"HostKey {self.home / 'host_ed25519'}\n"
            f"PidFile {self.home / 'sshd.pid'}\n"
            f"AuthorizedKeysFile {self.home / 'authorized_keys'}\n"
            "PermitRootLogin yes\n"
            "PubkeyAuthentication yes\n"
            "PasswordAuthentication no\n"
            "KbdInteractiveAuthentication no\n"
            "UsePAM no\n"
            "StrictModes no\n"  # the temporary directory's modes are not sshd's business
            "Subsystem sftp internal-sftp\n"
        )
        return config

    @contextlib.contextmanager
    def running(self) -> Iterator[Sshd]:
        config = self.configure()
        if os.geteuid() == 0:
            PRIVSEP_DIR.mkdir(mode=0o755, exist_ok=True)
        with open(self.log, "ab") as out:
            proc = subprocess.Popen(
                [SSHD, "-D", "-e", "-f", str(config)],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            poll(lambda: proc.poll() is not None or _listening(self.port), f"sshd to listen on port {self.port}")
            if proc.poll() is not None:
                raise RuntimeError(f"sshd exited {proc.returncode}: {_output(self.log)}")
            yield self
        finally:
            _end(proc)

    def sshfs_argv(self, remote: Path, mnt: Path) -> list[str]:
        options = ",".join(
            (
                f"IdentityFile={self.identity}",
                "StrictHostKeyChecking=no",
                "UserKnownHostsFile=/dev/null",
                "BatchMode=yes",
                "LogLevel=ERROR",
                "dir_cache=yes",  # sshfs's default, said out loud: names and attributes cached per client
            )
        )
        target = f"{self.user}@127.0.0.1:{remote}"
        return ["sshfs", "-f", "-F", "/dev/null", "-p", str(self.port), "-o", options, target, str(mnt)]


@contextlib.contextmanager
def clients(kind: str, store: Path, workdir: Path, n: int = 2) -> Iterator[list[Path]]:
    """``n`` FUSE clients of the directory ``store`` mounted under ``workdir``: yields their mountpoints."""
    reason = missing(kind)
    if reason is not None:
        raise RuntimeError(f"cannot make {kind} clients: {reason}")
    store = store.resolve()
    home = Path(tempfile.mkdtemp(prefix=f"{kind}-", dir=workdir))
    try:
        with contextlib.ExitStack() as stack:
            if kind == "sshfs":
                sshd = stack.enter_context(Sshd(home).running())
                argvs = [sshd.sshfs_argv(store, home / f"client{i}") for i in range(n)]
            else:
                argvs = [["bindfs", "-f", str(store), str(home / f"client{i}")] for i in range(n)]
            views = [
                stack.enter_context(fuse_client(argv, Path(argv[-1]), home / f"client{i}.log"))
                for i, argv in enumerate(argvs)
            ]
            yield views
    finally:
        if not any(os.path.ismount(p) for p in home.iterdir() if p.is_dir()):
            shutil.rmtree(home, ignore_errors=True)


# -- what two clients provide to each other ---------------------------------------------------------------------

RENAME_NOREPLACE = 1


def _renameat2(src: Path, dst: Path, flags: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.renameat2(-100, os.fsencode(src), -100, os.fsencode(dst), flags) != 0:  # -100: AT_FDCWD
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))


def _errname(exc: OSError) -> str:
    return errno.errorcode.get(exc.errno or 0, str(exc.errno))


def _lock_shared(a: Path, b: Path, lock: Callable[[int, int], Any], name: str) -> str:
    (a / name).write_bytes(b"")
    fa = os.open(a / name, os.O_RDWR)
    fb = os.open(b / name, os.O_RDWR)
    try:
        lock(fa, fcntl.LOCK_EX | fcntl.LOCK_NB)
        try:
            lock(fb, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            return "shared" if exc.errno in (errno.EAGAIN, errno.EACCES) else f"error {_errname(exc)}"
        return "not shared (both clients hold it)"
    except OSError as exc:
        return f"error {_errname(exc)}"
    finally:
        os.close(fa)
        os.close(fb)


def _exclusive(a: Path, b: Path, make: Callable[[Path, Path], None], name: str) -> str:
    """Client b looks the name up first (a negative entry it may cache), then a creates it and b tries too."""
    (a / "src").write_bytes(b"x")
    assert not (b / name).exists()
    make(a / "src", a / name)
    try:
        make(b / "src", b / name)
    except FileExistsError:
        return "refused (EEXIST)"
    except OSError as exc:
        return f"error {_errname(exc)}"
    return "NOT refused: both clients created it"


def _excl_create(_src: Path, dst: Path) -> None:
    os.close(os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))


def _noreplace(src: Path, dst: Path) -> None:
    tmp = src.with_name(f"{src.name}.{os.getpid()}.{time.monotonic_ns()}")
    shutil.copyfile(src, tmp)
    _renameat2(tmp, dst, RENAME_NOREPLACE)


def _staleness(read: Callable[[], Any], expected: Any) -> str:
    t0 = time.monotonic()
    first = read()
    if first == expected:
        return "fresh at once"
    while time.monotonic() - t0 < 30:
        if read() == expected:
            return f"stale for {time.monotonic() - t0:.2f} s"
        time.sleep(0.01)
    return "stale for 30 s or more"


def capabilities(a: Path, b: Path) -> dict[str, str]:
    """What two views ``a`` and ``b`` of one directory provide to each other (files are made in a fresh
    subdirectory, removed afterwards)."""
    sub = f".probe-{os.getpid()}-{time.monotonic_ns()}"
    (a / sub).mkdir()
    a, b = a / sub, b / sub
    poll(lambda: b.is_dir(), "the probe directory in the other client")
    found: dict[str, str] = {}
    try:
        found["flock"] = _lock_shared(a, b, fcntl.flock, "flock")
        found["posix_lock"] = _lock_shared(a, b, fcntl.lockf, "lockf")
        found["o_excl"] = _exclusive(a, b, _excl_create, "excl")
        found["link"] = _exclusive(a, b, os.link, "link")
        try:
            found["rename_noreplace"] = _exclusive(a, b, _noreplace, "noreplace")
        except OSError as exc:
            found["rename_noreplace"] = f"error {_errname(exc)}"
        (a / "replaced").write_bytes(b"old")
        assert (b / "replaced").read_bytes() == b"old"
        (a / "replaced.tmp").write_bytes(b"new")
        os.rename(a / "replaced.tmp", a / "replaced")
        found["rename_seen_by_other"] = _staleness(lambda: (b / "replaced").read_bytes(), b"new")
        (a / "grown").write_bytes(b"1")
        assert os.stat(b / "grown").st_size == 1
        with open(a / "grown", "ab") as f:
            f.write(b"2345")
        found["size_seen_by_other"] = _staleness(lambda: os.stat(b / "grown").st_size, 5)
        assert "late" not in os.listdir(b)
        (a / "late").write_bytes(b"")
        found["new_name_seen_by_other"] = _staleness(lambda: "late" in os.listdir(b), True)
    finally:
        shutil.rmtree(a, ignore_errors=True)
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] != "probe" or argv[1] not in KINDS:
        print(f"usage: {sys.argv[0]} probe {'|'.join(KINDS)}", file=sys.stderr)
        return 2
    kind = argv[1]
    work = Path(tempfile.mkdtemp(prefix="omx-shared-fs-"))
    try:
        (work / "store").mkdir()
        with clients(kind, work / "store", work, n=2) as (a, b):
            print(json.dumps({"shared_fs": kind, **capabilities(a, b)}), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
