"""Every way out of a view that issue 14 names, tried from inside a real view: each must fail.

Before views, each of these worked from an agent's process: the identity was an environment variable, the
daemon and every other process were visible, the host's ``/tmp`` (a tmux server's socket) was reachable.
"""

from __future__ import annotations

import os
import pty
import select
import shlex
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from omxfs.store import Workspace
from omxfs.view import seccomp
from tests.view.conftest import clean_env, omxfs_view_mounts, poll, run_view, running, view_argv

Ok = Callable[..., str]

CONNECT = """
import socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1].replace("@", "\\0", 1))
    print("connected")
except OSError as exc:
    print("refused", exc.errno)
"""


def test_omx_agent_inside_a_view_changes_nothing(store: Workspace, ok: Ok) -> None:
    ws = store.root
    out = ok(
        run_view(
            ws,
            "alice",
            f"OMX_AGENT=bob sh -c 'echo forged > {ws}/collaborative/current/f.md'; "
            f"OMX_AGENT=bob sh -c 'echo x > {ws}/agents/bob/f' 2>/dev/null || echo bob-zone-refused; "
            f"OMX_AGENT=boss sh -c 'echo x > {ws}/handoff/bob_to_alice/f' 2>/dev/null || echo handoff-refused",
        )
    )
    assert [v.author for v in store.collab.history("f.md")] == ["alice"]  # the daemon's identity, not the claim
    assert "bob-zone-refused" in out and "handoff-refused" in out
    assert not (ws / "agents/bob/f").exists() and not (ws / "handoff/bob_to_alice/f").exists()


def test_the_launcher_and_its_daemon_are_invisible_and_cannot_be_traced(store: Workspace) -> None:
    ptrace = (
        "import ctypes, os, sys; libc = ctypes.CDLL(None, use_errno=True); pid = int(sys.argv[1]); "
        "print(libc.ptrace(16, pid, 0, 0), ctypes.get_errno(), os.path.exists(f'/proc/{pid}/fd'))"
    )
    with subprocess.Popen(
        view_argv(store.root, "alice", 'read pid; python3 -c "$0" "$pid"; ls /proc | grep -c "^[0-9]"', args=(ptrace,)),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_env(),
        cwd="/",
    ) as view:
        out, err = view.communicate(f"{view.pid}\n", timeout=60)  # the launcher: the daemon's process
    result, count = out.split("\n")[:2]
    assert result == "-1 3 False", err  # PTRACE_ATTACH: ESRCH, and no /proc entry to open
    assert int(count) <= 4  # bwrap's reaper, the shell, ls, grep: nothing of the host


def test_a_host_unix_socket_in_tmp_is_out_of_reach(store: Workspace, tmp_path: Path) -> None:
    path = f"/tmp/omx-test-{os.getpid()}.sock"  # where a tmux server keeps its socket: the host's /tmp
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(path)
        server.listen()
        try:
            here = subprocess.run([sys.executable, "-c", CONNECT, path], capture_output=True, text=True, check=True)
            assert here.stdout.strip() == "connected"  # the socket answers on the host
            done = run_view(store.root, "alice", 'python3 -c "$0" "$1"', args=(CONNECT, path))
        finally:
            os.unlink(path)
    # not there at all in the view's private /tmp: ENOENT
    assert done.stdout.split("\n")[0] == "refused 2", done.stderr


def test_a_host_abstract_unix_socket_is_out_of_reach(store: Workspace) -> None:
    name = f"@omx-test-{os.getpid()}"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(name.replace("@", "\0", 1))
        server.listen()
        done = run_view(store.root, "alice", 'python3 -c "$0" "$1"', args=(CONNECT, name))
    # Landlock's scope: EPERM, although the view shares the host's network namespace
    assert done.stdout.split("\n")[0] == "refused 1", done.stdout + done.stderr


def test_another_views_daemon_and_processes_are_out_of_reach(store: Workspace) -> None:
    ws = store.root
    with subprocess.Popen(
        view_argv(ws, "bob", "echo ready; exec sleep 4244.5"),
        stdout=subprocess.PIPE,
        text=True,
        env=clean_env(),
        cwd="/",
    ) as other:
        assert other.stdout is not None and other.stdout.readline().strip() == "ready"
        mounts = omxfs_view_mounts(other.pid)
        assert mounts, "bob's view has a daemon mount"
        probe = " ".join(f"test -e {m} && echo reached {m};" for m in mounts)
        done = run_view(ws, "alice", f"{probe} pgrep -x sleep || echo no-sleep; kill -0 {other.pid} || echo no-pid")
        other.kill()
    assert "reached" not in done.stdout
    assert "no-sleep" in done.stdout and "no-pid" in done.stdout


def test_a_setsid_grandchild_dies_with_the_view(store: Workspace, ok: Ok) -> None:
    ok(run_view(store.root, "alice", "setsid sh -c 'sleep 4245.5 &' < /dev/null > /dev/null 2>&1; echo left"))
    poll(lambda: not running("sleep 4245.5"), what="the view's orphan to die with it")


def test_root_in_a_view_holds_no_capability(store: Workspace, ok: Ok) -> None:
    out = ok(
        run_view(
            store.root,
            "alice",
            "grep CapEff /proc/self/status; mount -t tmpfs none /tmp 2>/dev/null || echo no-mount; "
            "unshare -U true 2>/dev/null || echo no-userns; touch f; chown 1234 f 2>/dev/null || echo no-chown; "
            "cat /root/.bashrc 2>/dev/null || echo no-root-home; "
            "test -s /etc/ssh/ssh_host_ed25519_key -a -r /etc/ssh/ssh_host_ed25519_key || echo no-host-key; "
            '[ "$(cat /etc/shadow 2>/dev/null)" ] || echo no-shadow',
        )
    )
    assert "CapEff:\t0000000000000000" in out
    for refused in ("no-mount", "no-userns", "no-chown", "no-root-home", "no-host-key", "no-shadow"):
        assert refused in out


def test_no_network_cuts_the_network(store: Workspace) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        code = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5); print('connected')"
        shared = run_view(store.root, "alice", 'python3 -c "$0"', args=(code,))
        cut = run_view(store.root, "alice", 'python3 -c "$0" 2>/dev/null || echo cut', "--no-network", args=(code,))
    assert shared.stdout.strip() == "connected", shared.stderr
    assert cut.stdout.strip() == "cut"


PROC_WRITABLE = """
import os, stat
for root, dirs, files in os.walk("/proc"):
    if root == "/proc":  # the view's own processes are its own to change
        dirs[:] = [d for d in dirs if not d.isdigit() and d not in ("self", "thread-self")]
    for name in files:
        path = os.path.join(root, name)
        # /dev/null, nodev, covers /proc/keys: access() does not see that a device on a nodev mount cannot be opened
        if os.access(path, os.W_OK) and not stat.S_ISCHR(os.stat(path).st_mode):
            print(path)
"""


def test_root_in_a_view_cannot_change_the_machine_through_proc(store: Workspace, ok: Ok) -> None:
    """Root in a view is the host's uid 0 without capabilities, and the kernel lets uid 0 write a sysctl with none:
    ``kernel.core_pattern`` set from a view ran a program of the agent's zone as the host's root, outside every
    namespace (found by trying it). Nothing in the view's ``/proc`` but its own processes may be writable."""
    if os.geteuid() != 0:
        pytest.skip("only a view started by root is uid 0 to the kernel")
    # The sysctl is written its own value, so that a view that could write it changes nothing on this machine.
    out = ok(
        run_view(
            store.root,
            "alice",
            'python3 -c "$0"; cat /proc/sys/kernel/core_pattern > /tmp/same; '
            "cat /tmp/same > /proc/sys/kernel/core_pattern 2>/dev/null || echo refused; "
            "cat /proc/pressure/cpu >/dev/null && echo readable",
            args=(PROC_WRITABLE,),
        )
    )
    assert out.split("\n")[:2] == ["refused", "readable"], out  # no writable path printed before them


SET_ID = """
import os
for what, make in [("open", lambda: os.close(os.open("o", os.O_CREAT | os.O_WRONLY, 0o4755))),
                   ("mknod", lambda: os.mknod("n", 0o102755)), ("chmod", lambda: os.chmod("t", 0o2755))]:
    try:
        make()
        print(what, "made")
    except OSError as exc:
        print(what, exc.errno)
"""


def test_root_in_a_view_cannot_make_set_id_files(store: Workspace, ok: Ok) -> None:
    """Root in a view is uid 0 on the store: `cp /bin/sh x && chmod 4755 x` in its own zone made a set-user-ID-root
    program on the host, which any local user reaching the store ran as root. Modes stay settable otherwise."""
    if os.geteuid() != 0:
        pytest.skip("only a view started by root is uid 0 on the store")
    zone = store.root / "agents/alice"
    out = ok(
        run_view(
            store.root,
            "alice",
            "cp /bin/true t; chmod 4755 t 2>/dev/null || echo no-suid; "
            "install -m 4755 t u 2>/dev/null || echo no-install; "
            'chmod 750 t && echo chmod-ok; python3 -c "$0"',
            args=(SET_ID,),
        )
    )
    assert out.split("\n")[:3] == ["no-suid", "no-install", "chmod-ok"], out
    assert out.split("\n")[3:6] == ["open 1", "mknod 1", "chmod 1"], out  # EPERM
    assert (zone / "t").stat().st_mode & 0o7777 == 0o750
    assert not [p for p in zone.rglob("*") if p.lstat().st_mode & 0o6000]


def test_the_filter_exists_for_each_abi_it_names() -> None:
    for machine in ("x86_64", "aarch64", "riscv64"):
        assert seccomp.program(True, machine) and seccomp.program(False, machine), machine
        assert seccomp.step_program(None, machine) and seccomp.step_program(2**64 - 1, machine), machine  # a step's
    assert seccomp.program(True, "mips") is None  # a view there is refused (launch._seccomp_filter), never unfiltered
    assert seccomp.step_program(None, "mips") is None  # steps there are refused (the launcher: no filter known)


TYPE = """
import errno, fcntl, termios
try:
    for c in b"echo INJECTED\\n":
        fcntl.ioctl(0, termios.TIOCSTI, bytes([c]))
    print("typed")
except OSError as exc:
    print("refused", errno.errorcode[exc.errno])
"""


def test_a_view_cannot_type_into_the_callers_terminal(store: Workspace) -> None:
    """TIOCSTI from a view pushed a line into the terminal omxfs run was started from: the caller's shell read it
    (and would have run it, outside the view) once the view ended. Here a shell on a terminal runs the view, then
    reads one line."""
    view = " ".join(shlex.quote(a) for a in view_argv(store.root, "alice", 'python3 -c "$0"', args=(TYPE,)))
    script = f'{view}; read -t 2 line; echo "read:$line"'
    parent, child = pty.openpty()
    with subprocess.Popen(
        ["setsid", "--ctty", "bash", "-c", script], stdin=child, stdout=child, stderr=child, env=clean_env(), cwd="/"
    ) as shell:
        os.close(child)
        shown, deadline = b"", time.monotonic() + 60
        while time.monotonic() < deadline and select.select([parent], [], [], deadline - time.monotonic())[0]:
            try:
                chunk = os.read(parent, 4096)
            except OSError:  # EIO: the shell closed the terminal
                break
            if not chunk:
                break
            shown += chunk
        os.close(parent)
        assert shell.wait(10) == 0
    text = shown.decode(errors="replace")
    assert "read:echo INJECTED" not in text, text
    assert "refused EPERM" in text and "read:\r" in text, text
