"""The OS sandbox: a permitted program still cannot write outside the workspace, read private files or reach the
network. Escape attempts through the plan tools are in test_executor.py (they must also be traced)."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.sandbox import confine as sandbox_module
from agent.sandbox import launcher
from agent.sandbox.confine import (
    OUTPUT_LIMIT,
    Sandbox,
    SandboxError,
    SandboxMode,
    SandboxUnavailable,
    probe_bubblewrap,
    probe_landlock,
)
from tests.support.sandbox import sandbox_or_skip

HAS_LANDLOCK = launcher.landlock_abi() >= 1
needs_landlock = pytest.mark.skipif(not HAS_LANDLOCK, reason="this kernel has no Landlock")
needs_bwrap = pytest.mark.skipif(probe_bubblewrap() is None, reason="bubblewrap is not installed or cannot run here")


@pytest.fixture
def sandbox(ws: Path) -> Sandbox:
    return sandbox_or_skip(ws)


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP server on 127.0.0.1 that the sandboxed code will try to reach."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


def refused(stderr: str) -> bool:
    """Refused by Landlock (EACCES), by a read-only mount (EROFS), or not there at all: the bubblewrap sandbox
    shows nothing of the host beside the workspace (ENOENT)."""
    return any(why in stderr for why in ("PermissionError", "Read-only file system", "FileNotFoundError"))


def py(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_a_sandboxed_program_runs_in_the_workspace(sandbox: Sandbox, ws: Path) -> None:
    done = sandbox.run(["cat", "notes.txt"], timeout=10)
    assert (done.returncode, done.stdout, done.timed_out) == (0, "inside\n", False)
    done = sandbox.run_python("open('made.txt', 'w').write('x'); import os; print(os.getcwd())", timeout=10)
    assert done.returncode == 0 and done.stdout.strip() == str(ws.resolve())
    assert (ws / "made.txt").read_text(encoding="utf-8") == "x"


def test_python_steps_keep_what_they_need(sandbox: Sandbox, ws: Path) -> None:
    """json, pathlib, asyncio (a socketpair), threads, a forked multiprocessing pool, sys.argv, the workspace on
    sys.path, the venv's site-packages (pydantic, say), /tmp, the time zone and the user's name."""
    (ws / "helper.py").write_text("VALUE = 7\n", encoding="utf-8")
    code = """
import asyncio, getpass, json, multiprocessing, pathlib, sys, tempfile, threading, time
import helper, pydantic
async def main():
    await asyncio.sleep(0)
    return 1
with multiprocessing.get_context("fork").Pool(2) as pool:
    squares = pool.map(abs, [-1, -2])
with tempfile.NamedTemporaryFile() as tmp:
    pass
print(json.dumps([asyncio.run(main()), helper.VALUE, squares, sys.argv, pathlib.Path("notes.txt").read_text(),
                  time.tzname[0] != "", getpass.getuser() != ""]))
"""
    done = sandbox.run_python(code, timeout=60, args=["a", "b"])
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [1, 7, [1, 2], ["-c", "a", "b"], "inside\n", True, True]


ALLOW_LISTED = (["ls", "-l"], ["cat", "notes.txt"], ["grep", "-c", "in", "notes.txt"], ["wc", "-l", "notes.txt"],
                ["head", "-1", "notes.txt"], ["tail", "-1", "notes.txt"])  # fmt: skip


@pytest.mark.parametrize("argv", ALLOW_LISTED)
def test_the_allow_listed_programs_run(sandbox: Sandbox, argv: list[str]) -> None:
    done = sandbox.run(argv, timeout=10)
    assert done.returncode == 0 and done.stdout, done.stderr


def test_writing_outside_the_workspace_fails(sandbox: Sandbox, tmp_path: Path) -> None:
    target = tmp_path / "outside.txt"
    sandbox.run_python(f"open({str(target)!r}, 'w').write('escaped')", timeout=10)
    assert not target.exists()


def test_a_symlink_out_of_the_workspace_does_not_lead_out(sandbox: Sandbox, ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    code = f"import os; os.symlink({str(outside)!r}, 'out'); open('out/escaped.txt', 'w').write('x')"
    done = sandbox.run_python(code, timeout=10)
    assert done.returncode != 0 and (ws / "out").is_symlink()
    assert not (outside / "escaped.txt").exists()


def test_private_files_outside_the_workspace_cannot_be_read(sandbox: Sandbox, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("s3cret", encoding="utf-8")
    done = sandbox.run(["cat", str(secret)], timeout=10)
    assert done.returncode != 0 and "s3cret" not in done.stdout


def test_no_network_from_the_sandbox(sandbox: Sandbox, listener: int) -> None:
    code = f"import socket; socket.create_connection(('127.0.0.1', {listener}), timeout=3); print('connected')"
    done = sandbox.run_python(code, timeout=20)
    assert done.returncode != 0 and "connected" not in done.stdout
    assert "Error" in done.stderr


@needs_landlock
def test_landlock_alone_denies_tcp_connect(ws: Path, listener: int) -> None:
    """Without the network namespace and the seccomp filter, Landlock's own TCP rules (ABI 4+) refuse the connect
    with EACCES: the launcher's Landlock alone, applied in a child."""
    if launcher.landlock_abi() < 4:
        pytest.skip(f"Landlock ABI {launcher.landlock_abi()} has no network rules (needs 4+)")
    config = {"read": sandbox_module.read_paths(False), "write": [str(ws)]}
    code = f"""
import importlib.util, socket
spec = importlib.util.spec_from_file_location("launcher", {str(sandbox_module.LAUNCHER)!r})
launcher = importlib.util.module_from_spec(spec)
spec.loader.exec_module(launcher)
launcher.apply_landlock({config!r}, [])
socket.create_connection(('127.0.0.1', {listener}), timeout=3)
"""
    done = subprocess.run(py(code), capture_output=True, text=True, timeout=20, check=False)
    assert done.returncode != 0 and "PermissionError: [Errno 13]" in done.stderr, done.stderr


@pytest.fixture
def udp_listener() -> Iterator[socket.socket]:
    """A UDP socket on 127.0.0.1 that the sandboxed code will try to send to; it never blocks."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    listener.bind(("127.0.0.1", 0))
    listener.setblocking(False)
    with listener:
        yield listener


@pytest.mark.parametrize("mode", ["bubblewrap", "landlock"])
def test_no_udp_from_the_sandbox(ws: Path, udp_listener: socket.socket, mode: SandboxMode) -> None:
    """Without a network namespace (as in an agent view), Landlock stops only TCP: the socket filter stops UDP."""
    box = Sandbox(ws, mode=mode)
    try:
        box.info  # noqa: B018
    except SandboxUnavailable as exc:
        pytest.skip(f"no OS sandbox on this machine: {exc}")
    port = udp_listener.getsockname()[1]
    code = f"import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', {port}))"
    done = box.run_python(code, timeout=20)
    assert done.returncode != 0, done.stdout
    assert "Network is unreachable" in done.stderr or "Operation not permitted" in done.stderr, done.stderr
    with pytest.raises(BlockingIOError):  # sendto on loopback queues the datagram before it returns
        udp_listener.recv(100)


@needs_landlock
@pytest.mark.parametrize("mode", ["bubblewrap", "landlock"])
def test_no_socket_is_made_but_unix_socketpairs(ws: Path, mode: SandboxMode) -> None:
    """Every family is refused (EPERM), AF_UNIX too (a path or abstract socket of the host is a way out),
    io_uring (which makes sockets no filter sees) fails with ENOSYS; a Unix socketpair stays (asyncio needs it),
    and the banner names the filter."""
    box = Sandbox(ws, mode=mode)
    try:
        assert "seccomp: no socket but AF_UNIX pairs (socketpair)" in box.info.network, box.info.network
    except SandboxUnavailable as exc:
        pytest.skip(f"no {mode} sandbox on this machine: {exc}")
    families = ("AF_UNIX", "AF_INET", "AF_INET6", "AF_PACKET", "AF_VSOCK", "AF_NETLINK")
    code = f"""
import ctypes, socket
for family in {families!r}:
    try:
        socket.socket(getattr(socket, family), socket.SOCK_DGRAM if family != "AF_PACKET" else socket.SOCK_RAW)
        print(family, "made")
    except OSError as exc:
        print(family, exc.errno)
left, right = socket.socketpair()
left.send(b"unix")
print(right.recv(4).decode())
libc = ctypes.CDLL(None, use_errno=True)
print("io_uring", libc.syscall(425, 1, ctypes.create_string_buffer(120)), ctypes.get_errno())
"""
    done = box.run_python(code, timeout=20)
    assert done.returncode == 0, done.stderr
    refused = [f"{family} {errno.EPERM}" for family in families]
    assert done.stdout.split("\n") == [*refused, "unix", f"io_uring -1 {errno.ENOSYS}", ""]


@needs_landlock
@needs_bwrap
def test_what_the_kernel_offers_is_detected_and_described(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Outside a view: bubblewrap, Landlock inside; in a view (OMX_VIEW, where bwrap cannot make its namespaces):
    Landlock alone, said so."""
    monkeypatch.delenv("OMX_VIEW", raising=False)
    info = Sandbox(ws).info
    assert info.mechanism == "bubblewrap" and info.landlock_abi == launcher.landlock_abi()
    assert "writes only under the workspace" in info.filesystem and "private /tmp" in info.filesystem
    assert info.network.startswith("bubblewrap --unshare-net + seccomp")
    assert "python code starts no program" in info.programs
    assert probe_landlock(False)["seccomp"] is True
    assert info.as_dict()["mechanism"] == "bubblewrap"
    monkeypatch.setattr(sandbox_module, "probe_bubblewrap", lambda: None)
    monkeypatch.setenv("OMX_VIEW", "bob")
    assert Sandbox(ws).info.mechanism == "landlock"


def test_a_missing_piece_is_named_in_the_refusal(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No bubblewrap outside a view refuses the step (never Landlock alone); no Landlock, or no seccomp, refuses it
    everywhere; each refusal names the piece."""
    monkeypatch.delenv("OMX_VIEW", raising=False)
    monkeypatch.setattr(sandbox_module, "bubblewrap_probe", lambda: (None, "bubblewrap (bwrap) is not installed"))
    with pytest.raises(SandboxUnavailable, match=r"bubblewrap \(bwrap\) is not installed.*--no-sandbox"):
        Sandbox(ws).info  # noqa: B018
    monkeypatch.setenv("OMX_VIEW", "bob")
    monkeypatch.setattr(sandbox_module, "probe_landlock", lambda netns: {"landlock_error": "not in this kernel"})
    with pytest.raises(SandboxUnavailable, match="Landlock is missing"):
        Sandbox(ws).info  # noqa: B018
    monkeypatch.setattr(sandbox_module, "probe_landlock", lambda netns: {"landlock": {}, "seccomp_error": "EINVAL"})
    with pytest.raises(SandboxUnavailable, match="the seccomp filter cannot be installed"):
        Sandbox(ws).info  # noqa: B018


def test_the_environment_carries_no_secrets(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-not-leak")
    done = sandbox.run_python("import os, json; print(json.dumps(dict(os.environ)))", timeout=10)
    env = json.loads(done.stdout)
    assert "OPENAI_API_KEY" not in env and env["TMPDIR"] == env["HOME"]


def _free(lock: Path) -> bool:
    """Whether nobody holds ``lock`` (a step's child holds it while it lives: its pid is its PID namespace's)."""
    with lock.open() as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True


def _until_free(lock: Path) -> bool:
    deadline = time.monotonic() + 10
    while not _free(lock) and time.monotonic() < deadline:
        time.sleep(0.05)
    return _free(lock)


HOLD = "import fcntl; f = open('{name}', 'w'); fcntl.flock(f, fcntl.LOCK_EX); f.write('held'); f.flush()"


def test_a_timeout_kills_the_whole_process_group(sandbox: Sandbox, ws: Path) -> None:
    code = (
        f"import os, time\nif os.fork() == 0:\n    {HOLD.format(name='child.lock')}\n    time.sleep(60)\ntime.sleep(60)"
    )
    done = sandbox.run_python(code, timeout=2)
    assert done.timed_out and done.returncode is None and done.duration < 10
    assert (ws / "child.lock").read_text(encoding="utf-8") == "held"
    assert _until_free(ws / "child.lock")


def test_a_setsid_grandchild_dies_with_its_step(sandbox: Sandbox, ws: Path) -> None:
    """Issue 14: a double fork into a new session left a process behind that outlived the step; now the step's
    orphans are killed when the step ends (by its PID namespace's end, and omx as child subreaper)."""
    code = (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        f"        {HOLD.format(name='daemon.lock')}\n"
        "        time.sleep(60)\n"
        "    os._exit(0)\n"
        "while not os.path.exists('daemon.lock') or open('daemon.lock').read() != 'held': time.sleep(0.01)\n"
    )
    done = sandbox.run_python(code, timeout=30)
    assert done.returncode == 0, done.stderr
    assert _free(ws / "daemon.lock")  # killed before run() returned


def test_output_is_bounded(sandbox: Sandbox) -> None:
    done = sandbox.run_python(f"print('x' * {OUTPUT_LIMIT * 3})", timeout=20)
    assert done.returncode == 0 and done.truncated and len(done.stdout) == OUTPUT_LIMIT


def test_a_missing_program_is_reported_not_raised(sandbox: Sandbox) -> None:
    done = sandbox.run(["no-such-program-omx"], timeout=10)
    assert done.returncode == 127 and "cannot run 'no-such-program-omx'" in done.stderr


def test_no_sandbox_available_means_refusal(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox_module, "probe_landlock", lambda netns: {"landlock_error": "not here"})
    monkeypatch.setattr(sandbox_module, "probe_bubblewrap", lambda: None)
    monkeypatch.delenv("OMX_VIEW", raising=False)
    with pytest.raises(SandboxUnavailable, match="--no-sandbox"):
        Sandbox(ws).run(["ls"], timeout=5)


def test_no_sandbox_mode_runs_unconfined_and_says_so(ws: Path, tmp_path: Path) -> None:
    box = Sandbox(ws, mode="off")
    assert box.info.mechanism == "none" and "--no-sandbox" in box.info.filesystem
    done = box.run_python(f"open({str(tmp_path / 'free.txt')!r}, 'w').write('x')", timeout=10)
    assert done.returncode == 0 and (tmp_path / "free.txt").exists()


def test_a_sandbox_that_cannot_be_set_up_fails_closed(ws: Path) -> None:
    """The launcher reports a setup failure (here: no filter builder where it was said to be) on the status pipe
    and never runs the program."""
    read_fd, write_fd = os.pipe()
    try:
        config = {"read": [], "write": [str(ws)], "seccomp": str(ws / "missing.py"), "status_fd": write_fd}
        argv = [sys.executable, "-I", "-S", str(sandbox_module.LAUNCHER), json.dumps(config), "--", "touch", "ran"]
        done = subprocess.run(argv, cwd=ws, pass_fds=(write_fd,), capture_output=True, timeout=20, check=False)
        os.close(write_fd)
        assert done.returncode == 125
        failure = json.loads(os.read(read_fd, 4096))
        assert failure["stage"] == "sandbox" and "missing.py" in failure["error"], failure
    finally:
        os.close(read_fd)
    assert not (ws / "ran").exists()


def test_a_setup_failure_reported_by_the_launcher_raises(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    def fake_command(argv: list[str], scratch: str, status_fd: int, python: bool = False) -> list[str]:
        return py(f'import os; os.write({status_fd}, b\'{{"stage": "sandbox", "error": "boom"}}\')')

    monkeypatch.setattr(sandbox, "_command", fake_command)
    with pytest.raises(SandboxError, match="boom"):
        sandbox.run(["ls"], timeout=10)


@needs_bwrap
def test_bubblewrap_fallback_confines_writes_and_network(ws: Path, tmp_path: Path, listener: int) -> None:
    box = Sandbox(ws, mode="bubblewrap")
    assert box.info.mechanism == "bubblewrap"
    assert box.run_python("open('ok.txt', 'w').write('x')", timeout=20).returncode == 0
    assert (ws / "ok.txt").exists()
    box.run_python(f"open({str(tmp_path / 'out.txt')!r}, 'w').write('x')", timeout=20)
    assert not (tmp_path / "out.txt").exists()
    code = f"import socket; socket.create_connection(('127.0.0.1', {listener}), timeout=3)"
    assert box.run_python(code, timeout=20).returncode != 0


@needs_bwrap
def test_bubblewrap_fallback_holds_no_capability(ws: Path) -> None:
    """Run by root, bwrap kept every capability: a tool remounted ``/`` read-write and wrote the host's /etc. The
    mount calls are made directly (no ``mount`` program can be started any more)."""
    box = Sandbox(ws, mode="bubblewrap")
    code = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
os.mkdir("m")
for source, target, kind, flags in ((None, b"/", None, 32 | 4096), (b"x", b"m", b"tmpfs", 0)):  # MS_REMOUNT|MS_BIND
    print(libc.mount(source, target, kind, flags, None), ctypes.get_errno())
print(open("/proc/self/status").read() if os.path.exists("/proc/self/status") else "no /proc")
"""
    done = box.run_python(code, timeout=20)
    assert done.stdout.split("\n")[:3] == [f"-1 {errno.EPERM}", f"-1 {errno.EPERM}", "no /proc"], done


def test_ctrl_c_kills_the_tool_too() -> None:
    """The tool runs in its own session, out of reach of the terminal's SIGINT: omx kills it on the way out."""

    class Interrupted(subprocess.Popen[bytes]):
        def wait(self, timeout: float | None = None) -> int:
            if timeout is not None:
                raise KeyboardInterrupt
            return super().wait()

    proc = Interrupted(
        py("import time; time.sleep(60)"), stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    with pytest.raises(KeyboardInterrupt):
        sandbox_module._collect(proc, 30, lambda: None)
    assert proc.returncode == -9 and proc.stdout is not None and proc.stdout.closed


# -- hostile input: escape attempts by a sandboxed program (issue 7), each refused and changing nothing ------------


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory beside the workspace holding a secret the sandboxed program must neither read nor change."""
    where = tmp_path / "outside"
    where.mkdir()
    (where / "secret.txt").write_text("s3cret", encoding="utf-8")
    return where


def unchanged(outside: Path) -> None:
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert (outside / "secret.txt").read_text(encoding="utf-8") == "s3cret"


def test_hostile_dotdot_write_out_of_the_workspace(sandbox: Sandbox, outside: Path) -> None:
    done = sandbox.run_python("open('../outside/escaped.txt', 'w').write('x')", timeout=10)
    assert done.returncode != 0 and refused(done.stderr)
    unchanged(outside)


def test_hostile_proc_self_root_write_out_of_the_workspace(sandbox: Sandbox, outside: Path) -> None:
    done = sandbox.run_python(f"open('/proc/self/root{outside}/escaped.txt', 'w').write('x')", timeout=10)
    assert done.returncode != 0
    unchanged(outside)


def test_hostile_hard_link_of_an_outside_file_into_the_workspace(sandbox: Sandbox, ws: Path, outside: Path) -> None:
    code = f"import os; os.link({str(outside / 'secret.txt')!r}, 'stolen'); print(open('stolen').read())"
    done = sandbox.run_python(code, timeout=10)
    assert done.returncode != 0 and "s3cret" not in done.stdout
    assert not (ws / "stolen").exists()
    unchanged(outside)


def test_hostile_rename_of_a_workspace_file_out(sandbox: Sandbox, ws: Path, outside: Path) -> None:
    done = sandbox.run_python(f"import os; os.rename('notes.txt', {str(outside / 'moved.txt')!r})", timeout=10)
    assert done.returncode != 0
    assert (ws / "notes.txt").read_text(encoding="utf-8") == "inside\n"
    unchanged(outside)


def test_hostile_truncate_of_an_outside_file(sandbox: Sandbox, outside: Path) -> None:
    done = sandbox.run_python(f"import os; os.truncate({str(outside / 'secret.txt')!r}, 0)", timeout=10)
    assert done.returncode != 0 and refused(done.stderr)
    unchanged(outside)


@pytest.mark.parametrize(
    "change",
    [
        "os.chmod(p, 0o777)",
        "os.chown(p, 12345, 12345)",
        "os.utime(p, (0, 0))",
        "os.setxattr(p, 'user.mark', b'x')",
    ],
)
def test_hostile_metadata_change_of_an_outside_file(sandbox: Sandbox, ws: Path, outside: Path, change: str) -> None:
    """Landlock has no right for metadata; in the bubblewrap sandbox the file is not there at all (ENOENT), and
    what is there outside the workspace is read-only (EROFS)."""
    secret = outside / "secret.txt"
    before = secret.stat()
    code = f"import os, sys; p = {str(secret)!r}\ntry:\n    {change}\nexcept OSError as e:\n    sys.exit(e.errno)"
    done = sandbox.run_python(code, timeout=10)
    after = secret.stat()
    assert done.returncode in (errno.EROFS, errno.ENOENT), done.stderr
    assert (after.st_mode, after.st_uid, after.st_mtime_ns) == (before.st_mode, before.st_uid, before.st_mtime_ns)
    assert not os.listxattr(secret)
    inside = sandbox.run_python("import os; open('mine.txt', 'w').close(); os.chmod('mine.txt', 0o600)", timeout=10)
    assert inside.returncode == 0 and (ws / "mine.txt").stat().st_mode & 0o777 == 0o600  # the workspace stays rw


def test_hostile_symlink_swap_after_creation_does_not_lead_out(sandbox: Sandbox, ws: Path, outside: Path) -> None:
    """A directory made inside, then replaced by a symlink out, then written through: the write is refused."""
    code = (
        "import os; os.mkdir('d'); os.rmdir('d'); "
        f"os.symlink({str(outside)!r}, 'd'); open('d/escaped.txt', 'w').write('x')"
    )
    done = sandbox.run_python(code, timeout=10)
    assert done.returncode != 0
    unchanged(outside)
