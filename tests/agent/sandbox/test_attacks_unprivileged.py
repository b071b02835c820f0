"""Issue 26 as an unprivileged user (``nobody``): the step sandbox built without root (bwrap in a user namespace
made by nobody; Landlock and seccomp need no privilege) stops the same attacks, judged by their outcome, each
first shown to work for nobody unconfined. nobody's own tmux server is the target here: a user's tmux is exactly
what a step of that user could take over."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.unprivileged import NOBODY, as_nobody, nobody_dir
from tests.view.conftest import clean_env

REPO = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="becoming nobody needs root")

#: run as nobody: each attack confined (MODE) and unconfined (the control); prints what each printed and did
SCRIPT = """
import json, sys
from pathlib import Path
from agent.sandbox.confine import Sandbox, SandboxUnavailable
ws, mode, attacks = Path(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
box, control = Sandbox(ws, mode=mode), Sandbox(ws, mode="off")
try:
    box.info
except SandboxUnavailable as exc:
    print(json.dumps({"unavailable": str(exc)}))
    sys.exit(0)
out = {"uid": __import__("os").getuid(), "mechanism": box.info.mechanism}
for name, code in attacks.items():
    for who, sandbox in (("confined", box), ("control", control)):
        if name == "grep":
            done = sandbox.run(["grep", "--regex=:", "/etc/passwd"], timeout=30)
        else:
            done = sandbox.run_python(code, timeout=60)
        out[f"{name}/{who}"] = {"stdout": done.stdout, "stderr": done.stderr[-500:], "status": done.returncode}
        for marker in Path(sys.argv[4]).glob("marker-*"):
            out[f"{name}/{who}"]["marker"] = marker.name
            marker.unlink()
print(json.dumps(out))
"""

ATTACKS = {
    "popen": "import os as o; o.popen('touch {markers}/marker-popen').read()",
    "sys.modules": "import sys; sys.modules['o' + 's'].system('touch {markers}/marker-system')",
    "tmux": "import os as o; o.popen(\"tmux -S {tmux} run-shell 'touch {markers}/marker-tmux'\").read()",
    "unix": (
        "import asyncio, sys; S = sys.modules['so' + 'cket']; s = S.SocketType(S.AF_UNIX, S.SOCK_STREAM)\n"
        "s.connect('{listener}'); print('connected')"
    ),
    "secret": "print(open('{secret}').read())",
    "grep": "",
}


@pytest.fixture
def place() -> Iterator[Path]:
    """A directory of nobody's in the host's /tmp: the workspace, nobody's tmux socket, a secret, the markers."""
    path = nobody_dir()
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def nobody(argv: list[str], scratch: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        as_nobody(argv, scratch), capture_output=True, text=True, timeout=300, env=clean_env(), cwd=REPO, check=False
    )


@pytest.fixture
def tmux(place: Path, tmp_path: Path) -> Iterator[Path]:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    sock = place / "tmux.sock"
    # tmux runs a session through $SHELL or else the account's shell, nobody's /usr/sbin/nologin: without SHELL
    # (CI's environment) the session would end at once and the server with it
    session = ["new-session", "-d", "/bin/sleep 600"]
    started = nobody(["env", "SHELL=/bin/sh", "tmux", "-S", str(sock), "-f", "/dev/null", *session], tmp_path)
    assert started.returncode == 0, started.stderr
    try:
        yield sock
    finally:
        nobody(["tmux", "-S", str(sock), "kill-server"], tmp_path)


@pytest.fixture
def listener(place: Path) -> Iterator[socket.socket]:
    """Root's listener on a socket in /tmp that anyone may connect to (mode 0777)."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    path = place / "listener.sock"
    server.bind(str(path))
    os.chmod(path, 0o777)
    server.listen()
    server.setblocking(False)
    with server:
        yield server


def accepted(server: socket.socket) -> int:
    count = 0
    while True:
        try:
            server.accept()[0].close()
        except BlockingIOError:
            return count
        count += 1


@pytest.mark.parametrize("mode", ["bubblewrap", "landlock"])
def test_the_attacks_fail_for_an_unprivileged_user(
    place: Path, tmp_path: Path, tmux: Path, listener: socket.socket, mode: str
) -> None:
    ws = place / "ws"
    ws.mkdir()
    os.chown(ws, NOBODY, NOBODY)
    secret = place / "secret.txt"
    secret.write_text("n0b0dy-s3cret", encoding="utf-8")
    os.chown(secret, NOBODY, NOBODY)
    attacks = {
        name: code.format(markers=place, tmux=tmux, listener=listener.getsockname(), secret=secret)
        for name, code in ATTACKS.items()
    }
    done = nobody([sys.executable, "-c", SCRIPT, str(ws), mode, json.dumps(attacks), str(place)], tmp_path)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    if "unavailable" in out:
        pytest.skip(f"no {mode} sandbox for nobody here: {out['unavailable']}")
    assert out["uid"] == NOBODY and out["mechanism"] == mode
    for name in ("popen", "sys.modules", "tmux"):
        assert "marker" in out[f"{name}/control"], out[f"{name}/control"]  # started, unconfined
        assert "marker" not in out[f"{name}/confined"], out[f"{name}/confined"]
    assert out["unix/control"]["stdout"] == "connected\n" and "connected" not in out["unix/confined"]["stdout"]
    assert accepted(listener) == 1  # the control's connection alone
    assert "n0b0dy-s3cret" in out["secret/control"]["stdout"]
    assert "n0b0dy-s3cret" not in out["secret/confined"]["stdout"]
    host = [line for line in Path("/etc/passwd").read_text().splitlines() if not line.startswith("nobody:")]
    assert set(host) <= set(out["grep/control"]["stdout"].splitlines())
    assert not set(host) & set(out["grep/confined"]["stdout"].splitlines()), out["grep/confined"]
