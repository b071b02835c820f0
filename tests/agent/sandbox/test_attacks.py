"""Issue 26: the attacks that got out of a step, and their variations, each judged by its outcome (a marker that a
started program would write, a listener that would accept, a secret that would be printed), in both mechanisms:
``bubblewrap`` (every step outside an agent view) and ``landlock`` (a step in an agent view, where bwrap cannot run;
run here outside a view, where the host's /tmp is in sight and only Landlock and seccomp stand in the way).

Every attack is also run unconfined (``mode="off"``) first, and must succeed there: an attack that cannot work
anyway proves nothing about the sandbox. As an unprivileged user: ``test_attacks_unprivileged.py``; in an agent
view, through ``omx --as``: ``tests/view/test_step_sandbox_in_view.py``; a whole ``omx`` run:
``tests/e2e/test_omx_step_sandbox.py``.
"""

from __future__ import annotations

import json
import os
import platform
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.sandbox.confine import LAUNCHER, SECCOMP, Sandbox, SandboxMode, SandboxUnavailable, read_paths

MODES = ["bubblewrap", "landlock"]

#: Python that starts ``touch MARKER`` in every way we know; each must leave no MARKER behind
PROGRAM_ATTACKS = {
    "os.popen through an alias": "import os as o; o.popen('touch {marker}').read()",
    "os.system through sys.modules": "import sys; sys.modules['o' + 's'].system('touch {marker}')",
    "subprocess through importlib": (
        "import importlib; importlib.import_module('sub' + 'process').run(['touch', '{marker}'])"
    ),
    "os.posix_spawn": "import os; os.waitpid(os.posix_spawn('/usr/bin/touch', ['touch', '{marker}'], {{}}), 0)",
    "os.fork + os.execv": (
        "import os\nif os.fork() == 0:\n    os.execv('/usr/bin/touch', ['touch', '{marker}'])\nos.wait()"
    ),
    "os.execv of the dynamic loader": "import os; os.execv('{loader}', ['ld.so', '/usr/bin/touch', '{marker}'])",
    "ctypes syscall execve": (
        "import ctypes; libc = ctypes.CDLL(None)\n"
        "argv = (ctypes.c_char_p * 3)(b'touch', b'{marker}', None)\n"
        "libc.syscall({execve}, b'/usr/bin/touch', argv, None, 0, 0, 0)"
    ),
    "ctypes syscall execveat": (
        "import ctypes; libc = ctypes.CDLL(None)\n"
        "argv = (ctypes.c_char_p * 3)(b'touch', b'{marker}', None)\n"
        "libc.syscall({execveat}, -100, b'/usr/bin/touch', argv, None, 0)"
    ),
    "multiprocessing spawn": (
        "import multiprocessing, os\nif __name__ == '__main__':\n"
        "    p = multiprocessing.get_context('spawn').Process(target=os.system, args=('touch {marker}',))\n"
        "    p.start(); p.join()"
    ),
    "multiprocessing forkserver": (
        "import multiprocessing, os\nif __name__ == '__main__':\n"
        "    p = multiprocessing.get_context('forkserver').Process(target=os.system, args=('touch {marker}',))\n"
        "    p.start(); p.join()"
    ),
    "multiprocessing fork, then os.system": (
        "import multiprocessing, os\n"
        "p = multiprocessing.get_context('fork').Process(target=os.system, args=('touch {marker}',))\n"
        "p.start(); p.join()"
    ),
    "pty.spawn": "import pty; pty.spawn(['touch', '{marker}'])",
    "LD_PRELOAD and an exec": "import os; os.environ['LD_PRELOAD'] = '/nonexistent.so'; os.system('touch {marker}')",
}
EXECVE = {"x86_64": (59, 322), "aarch64": (221, 281), "riscv64": (221, 281)}


def loader() -> str:
    """The dynamic loader of ``/usr/bin/touch`` (``ld.so PROGRAM`` runs a program it only reads)."""
    from agent.sandbox.launcher import interpreter

    found = interpreter(os.path.realpath("/usr/bin/touch"))
    assert found is not None
    return found


def attack_code(name: str, marker: Path) -> str:
    execve, execveat = EXECVE.get(platform.machine(), (59, 322))
    body = PROGRAM_ATTACKS[name].format(marker=marker, loader=loader(), execve=execve, execveat=execveat)
    # each attack may raise (PermissionError...) or not; the outcome is judged by the marker alone
    return f"try:\n{_indent(body)}\nexcept BaseException as exc:\n    print(type(exc).__name__, exc)\n"


def _indent(code: str) -> str:
    return "\n".join(f"    {line}" for line in code.splitlines())


def confined(ws: Path, mode: SandboxMode) -> Sandbox:
    box = Sandbox(ws, mode=mode)
    try:
        box.info  # noqa: B018
    except SandboxUnavailable as exc:
        pytest.skip(f"no {mode} sandbox here: {exc}")
    return box


@pytest.fixture(params=MODES)
def box(request: pytest.FixtureRequest, ws: Path) -> Sandbox:
    return confined(ws, request.param)


# -- programs from code ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("attack", sorted(PROGRAM_ATTACKS))
def test_the_attack_starts_a_program_when_unconfined(ws: Path, attack: str) -> None:
    """The control: each spelling does start ``touch`` without the sandbox."""
    marker = ws / "marker"
    Sandbox(ws, mode="off").run_python(attack_code(attack, marker), timeout=60)
    assert marker.exists(), attack


@pytest.mark.parametrize("attack", sorted(PROGRAM_ATTACKS))
def test_python_code_starts_no_program(box: Sandbox, ws: Path, attack: str) -> None:
    marker = ws / "marker"
    done = box.run_python(attack_code(attack, marker), timeout=60)
    assert not marker.exists(), (attack, done)


@pytest.mark.parametrize("attack", ["os.popen through an alias", "os.fork + os.execv", "ctypes syscall execve"])
def test_a_shell_steps_program_starts_no_other(box: Sandbox, ws: Path, attack: str) -> None:
    """A program a shell step runs (here python3, exec'd by the launcher with its token) cannot start another."""
    marker = ws / "marker"
    done = box.run([sys.executable, "-c", attack_code(attack, marker)], timeout=60)
    assert done.returncode == 0 and not marker.exists(), (attack, done)


def test_a_library_loaded_by_the_code_starts_no_program(box: Sandbox, ws: Path) -> None:
    """A shared library's constructor runs ``system()``: in the step's own process (ctypes) and preloaded into a
    program the step would start (``LD_PRELOAD``); neither starts anything."""
    if shutil.which("cc") is None:
        pytest.skip("no C compiler to build the library")
    source = ws / "evil.c"
    marker = ws / "marker"
    source.write_text(
        f'#include <stdlib.h>\n__attribute__((constructor)) static void run(void) {{ system("touch {marker}"); }}\n',
        encoding="utf-8",
    )
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(ws / "evil.so"), str(source)], check=True)
    code = (
        f"import ctypes, os\nctypes.CDLL({str(ws / 'evil.so')!r})\n"
        f"os.environ['LD_PRELOAD'] = {str(ws / 'evil.so')!r}\nos.system('true')\n"
    )
    control = Sandbox(ws, mode="off").run_python(code, timeout=30)
    assert marker.exists(), control
    marker.unlink()
    done = box.run_python(code, timeout=30)
    assert not marker.exists(), done


# -- host UNIX sockets ----------------------------------------------------------------------------------------------


@pytest.fixture
def host_tmp() -> Iterator[Path]:
    """A directory in the host's own /tmp (pytest's tmp_path is there too, but this one is not the workspace's
    parent), removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix="omx-host-", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def tmux(host_tmp: Path) -> Iterator[Path]:
    """A real tmux server on a socket in the host's /tmp."""
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    sock = host_tmp / "tmux.sock"
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "TERM": "xterm", "HOME": str(host_tmp)}
    subprocess.run(["tmux", "-S", str(sock), "-f", "/dev/null", "new-session", "-d", "sleep 600"], env=env, check=True)
    try:
        yield sock
    finally:
        subprocess.run(["tmux", "-S", str(sock), "kill-server"], env=env, capture_output=True, check=False)


TMUX_ESCAPE = """
import os as o
try:
    o.popen("tmux -S {sock} run-shell 'touch {marker}'").read()
except OSError as exc:
    print("popen", exc)
import sys
S = sys.modules["so" + "cket"] if "so" + "cket" in sys.modules else __import__("so" + "cket")
try:
    s = S.SocketType(S.AF_UNIX, S.SOCK_STREAM)
    s.connect("{sock}")
    print("connected")
except OSError as exc:
    print("connect", exc.errno)
"""


def test_a_step_cannot_make_the_hosts_tmux_run_a_command(box: Sandbox, tmux: Path, host_tmp: Path) -> None:
    """The issue's full escape: a python step had a tmux server on a socket in /tmp run a command outside."""
    control = host_tmp / "control"
    code = TMUX_ESCAPE.format(sock=tmux, marker=control)
    Sandbox(box.workspace, mode="off").run_python(code, timeout=30)
    assert control.exists()  # tmux does run it, unconfined
    marker = host_tmp / "escaped"
    done = box.run_python(TMUX_ESCAPE.format(sock=tmux, marker=marker), timeout=30)
    assert not marker.exists(), done
    assert "connected" not in done.stdout and done.stdout.rstrip().endswith("connect 1"), done


@pytest.fixture
def listeners(ws: Path, host_tmp: Path) -> Iterator[dict[str, socket.socket]]:
    """Listening UNIX sockets of the host: a path in /tmp, one in /run (as root), one made inside the workspace
    before the run, and an abstract one. Non-blocking: a connection, once made, waits in the backlog."""
    paths = {"tmp": str(host_tmp / "listener.sock"), "workspace": str(ws / "listener.sock")}
    if os.access("/run", os.W_OK):
        paths["run"] = f"/run/omx-test-{secrets.token_hex(4)}.sock"
    paths["abstract"] = f"\0omx-test-{secrets.token_hex(8)}"
    made: dict[str, socket.socket] = {}
    try:
        for name, path in paths.items():
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            server.bind(path)
            server.listen()
            server.setblocking(False)
            made[name] = server
        yield made
    finally:
        for name, server in made.items():
            server.close()
            if name != "abstract":
                Path(paths[name]).unlink(missing_ok=True)


CONNECT = """
import asyncio, json, sys
S = sys.modules["so" + "cket"]
reached = {{}}
for name, path in {paths!r}.items():
    try:
        s = S.SocketType(S.AF_UNIX, S.SOCK_STREAM)
        s.connect(path)
        reached[name] = "connected"
    except OSError as exc:
        reached[name] = exc.errno
print(json.dumps(reached))
"""


def never_accepted(server: socket.socket) -> bool:
    try:
        server.accept()[0].close()
    except BlockingIOError:
        return True
    return False


def test_no_host_unix_socket_accepts_a_step(box: Sandbox, listeners: dict[str, socket.socket]) -> None:
    paths = {name: server.getsockname() for name, server in listeners.items()}
    paths = {name: "\0" + path[1:].decode() if isinstance(path, bytes) else path for name, path in paths.items()}
    Sandbox(box.workspace, mode="off").run_python(CONNECT.format(paths=paths), timeout=30)
    assert not any(never_accepted(server) for server in listeners.values())  # the control: each one accepts
    done = box.run_python(CONNECT.format(paths=paths), timeout=30)
    assert json.loads(done.stdout) == dict.fromkeys(paths, 1), done  # EPERM, from the filter, for each
    assert all(never_accepted(server) for server in listeners.values())


def test_an_inherited_socket_and_stdin_lead_nowhere(ws: Path) -> None:
    """The launcher closes every descriptor but 0-2 and makes stdin /dev/null: a socket handed down (as a
    descriptor, or as stdin) carries nothing to the host."""
    host, handed = socket.socketpair()
    given, stdin = socket.socketpair()
    host.setblocking(False)
    given.setblocking(False)
    config = {"read": read_paths(False), "write": [str(ws)], "seccomp": str(SECCOMP), "python": True}
    code = f"""
import os
for fd in ({handed.fileno()}, 0):
    try:
        os.write(fd, b"x")
        print(fd, "written")
    except OSError as exc:
        print(fd, exc.errno)
"""
    argv = [sys.executable, "-I", "-S", str(LAUNCHER), json.dumps(config), "--", code]
    with host, handed, given, stdin:
        done = subprocess.run(
            argv, cwd=ws, stdin=stdin, pass_fds=(handed.fileno(),), capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.split("\n") == [f"{handed.fileno()} 9", "0 9", ""]  # EBADF: closed, and read-only
        for end in (host, given):
            with pytest.raises(BlockingIOError):
                end.recv(1)


# -- reads outside the workspace ------------------------------------------------------------------------------------


def host_lines(path: str) -> list[str]:
    """The lines of a host file that a synthetic one would not also have (nobody's is the same everywhere)."""
    return [line for line in Path(path).read_text(encoding="utf-8").splitlines() if not line.startswith("nobody:")]


def test_grep_does_not_print_the_hosts_passwd(box: Sandbox) -> None:
    """The issue's ``grep --regex=: /etc/passwd`` (an abbreviated long option the path check missed), run."""
    done = box.run(["grep", "--regex=:", "/etc/passwd"], timeout=10)
    assert host_lines("/etc/passwd")
    assert not any(line in done.stdout.splitlines() for line in host_lines("/etc/passwd")), done
    if box.info.mechanism == "bubblewrap":  # a synthetic passwd that names the sandbox user
        assert done.returncode == 0 and done.stdout.startswith(f"sandbox:x:{os.getuid()}:"), done


@pytest.fixture
def shadow() -> str:
    """The first line of the host's /etc/shadow, the secret (root reads it)."""
    try:
        first = Path("/etc/shadow").read_text(encoding="utf-8").splitlines()[0]
    except (OSError, IndexError):
        pytest.skip("/etc/shadow is not readable here")
    return first


READS = {
    "a symlink planted in the workspace": "print(open('shadow-link').read())",
    "/proc/self/root": "print(open('/proc/self/root/etc/shadow').read())",
    "/proc/1/root": "print(open('/proc/1/root/etc/shadow').read())",
    "the path itself": "print(open('/etc/shadow').read())",
}


@pytest.mark.parametrize("how", sorted(READS))
def test_the_machines_secrets_are_not_read(box: Sandbox, ws: Path, shadow: str, how: str) -> None:
    (ws / "shadow-link").symlink_to("/etc/shadow")
    done = box.run_python(READS[how], timeout=10)
    assert shadow not in done.stdout and done.returncode != 0, done
    cat = box.run(["cat", "shadow-link"], timeout=10)
    assert shadow not in cat.stdout and cat.returncode != 0, cat


def test_home_root_run_and_the_hosts_tmp_are_not_there(box: Sandbox, host_tmp: Path) -> None:
    (host_tmp / "left-by-another.txt").write_text("private", encoding="utf-8")
    code = f"""
import os
for path in ("/home", "/root", "/run", {str(host_tmp)!r}, "/etc/ssh", "/var"):
    try:
        print(path, sorted(os.listdir(path))[:3])
    except OSError as exc:
        print(path, exc.errno)
"""
    done = box.run_python(code, timeout=10)
    assert done.returncode == 0, done.stderr
    for line in done.stdout.splitlines():
        assert line.split()[-1] in ("2", "13"), line  # ENOENT (bubblewrap) or EACCES (Landlock)


# -- the kernel's other ways in -------------------------------------------------------------------------------------


def test_no_tracing_no_foreign_memory_no_persona(box: Sandbox) -> None:
    """ptrace of a child, process_vm_writev into it and a personality change fail with EPERM; /proc/self/mem is not
    there (bubblewrap) or not readable (Landlock)."""
    code = """
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
child = os.fork()
if child == 0:
    time.sleep(30)
    os._exit(0)
def call(*args):
    result = libc.syscall(*args)
    return result, ctypes.get_errno() if result == -1 else 0
buf = ctypes.create_string_buffer(8)
iov = (ctypes.c_void_p * 2)(ctypes.addressof(buf), 8)
print(call(PTRACE, 16, child, 0, 0))
print(call(VM_WRITEV, child, iov, 1, iov, 1, 0))
print(call(PERSONALITY, 0x0400000))
print(call(PERSONALITY, 0xFFFFFFFF)[1])
try:
    open("/proc/self/mem", "r+b")
    print("mem open")
except OSError as exc:
    print("mem", exc.errno)
os.kill(child, 9)
"""
    numbers = {"x86_64": (101, 311, 135), "aarch64": (117, 271, 92), "riscv64": (117, 271, 92)}
    ptrace, vm_writev, persona = numbers.get(platform.machine(), (101, 311, 135))
    code = code.replace("PTRACE", str(ptrace)).replace("VM_WRITEV", str(vm_writev)).replace("PERSONALITY", str(persona))
    done = box.run_python(code, timeout=30)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:4] == ["(-1, 1)", "(-1, 1)", "(-1, 1)", "0"], done.stdout
    assert lines[4] in ("mem 2", "mem 13"), done.stdout


I386_GETPID = bytes.fromhex("b814000000cd80c3")  # mov eax, 20 (getpid, i386); int 0x80; ret


def test_32_bit_system_calls_are_refused(box: Sandbox) -> None:
    """``int 0x80`` reaches the i386 system call table, whose numbers the filter does not know: ENOSYS."""
    if platform.machine() != "x86_64":
        pytest.skip("the i386 ABI is an x86_64 matter")
    code = f"""
import ctypes, mmap
page = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
page.write({I386_GETPID!r})
address = ctypes.addressof(ctypes.c_char.from_buffer(page))
print(ctypes.CFUNCTYPE(ctypes.c_int)(address)())
"""
    control = Sandbox(box.workspace, mode="off").run_python(code, timeout=10)
    if control.returncode != 0 or int(control.stdout) <= 0:
        pytest.skip(f"this kernel has no i386 emulation: {control}")
    done = box.run_python(code, timeout=10)
    assert done.stdout.strip() == "-38", done  # -ENOSYS


def test_no_filter_is_made_for_an_unknown_abi() -> None:
    """A machine whose system call table the filter does not know gets no program (the launcher then refuses the
    step, as ``test_a_sandbox_that_cannot_be_set_up_fails_closed`` shows for a missing builder)."""
    from omxfs.view import seccomp

    assert seccomp.step_program(None, machine="sparc64") is None
    assert seccomp.step_program(1, machine="x86_64") is not None
