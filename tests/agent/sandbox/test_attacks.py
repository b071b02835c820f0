"""Issue 26's red team against omx's step sandbox, each attack judged by its outcome, as root, as an unprivileged
user and inside an agent view (``tests/support/step_attacks.py`` runs them as omx runs a step).

What a step may do is what its risk level promises, whatever the command line or the code says: no program started
from Python (a marker the program would write in the workspace stays absent), no host UNIX socket reached (a
listener's ``accept`` finds no connection; a real tmux server runs nothing), nothing read outside the workspace and
the system (no account database, no secret). The same script without the sandbox shows each attack works.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from omxfs.store import Workspace
from tests.support import step_attacks
from tests.support.sandbox import sandbox_or_skip
from tests.support.unprivileged import NOBODY, as_nobody, nobody_dir
from tests.view.conftest import OMXFS, clean_env

SCRIPT = Path(step_attacks.__file__).resolve()
PASSWD_LINE = "root:x:0:0"


@pytest.fixture(autouse=True)
def _sandboxed(tmp_path: Path) -> None:
    sandbox_or_skip(tmp_path)


class Listeners:
    """AF_UNIX listeners on the host, path and abstract, each ready to accept; ``accepted()`` names those that did."""

    def __init__(self) -> None:
        self.sockets: dict[str, socket.socket] = {}

    def listen(self, target: str) -> str:
        server = socket.socket(socket.AF_UNIX)
        server.bind("\0" + target[1:] if target.startswith("@") else target)
        if not target.startswith("@"):
            os.chmod(target, 0o777)  # anyone may connect: only the sandbox stands between a step and it
        server.listen()
        server.setblocking(False)
        self.sockets[target] = server
        return target

    def accepted(self) -> list[str]:
        found = []
        for target, server in self.sockets.items():
            with contextlib.suppress(BlockingIOError):
                server.accept()[0].close()
                found.append(target)
        return found

    def close(self) -> None:
        for server in self.sockets.values():
            server.close()


@pytest.fixture
def listeners() -> Iterator[Listeners]:
    made = Listeners()
    yield made
    made.close()


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[str]:
    """A real tmux server on a socket in the host's /tmp, as in the escape the issue found."""
    path = f"/tmp/omx-tmux-{uuid.uuid4().hex[:8]}"
    started = subprocess.run(["tmux", "-S", path, "new-session", "-d", "sleep 600"], capture_output=True, check=False)
    if started.returncode != 0:
        pytest.skip(f"tmux cannot start here: {started.stderr!r}")
    os.chmod(path, 0o777)
    yield path
    subprocess.run(["tmux", "-S", path, "kill-server"], capture_output=True, check=False)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


@pytest.fixture
def run_dir(tmp_path: Path) -> Iterator[Path]:
    """A directory in the host's /run (service sockets live there), else pytest's own."""
    path = Path(tempfile.mkdtemp(dir="/run")) if os.access("/run", os.W_OK) else tmp_path
    os.chmod(path, 0o755)
    yield path
    if path != tmp_path:
        shutil.rmtree(path, ignore_errors=True)


def run_attacks(argv: list[str]) -> dict[str, Any]:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, env=clean_env(), check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def assert_held(report: dict[str, Any], accepted: list[str]) -> None:
    """Nothing started, nothing reached, nothing read, whatever each attack printed."""
    started = [name for name, outcome in report.items() if outcome.get("started")]
    assert started == [], started
    assert accepted == [], accepted
    for name in (*step_attacks.READS, "grep_abbreviated_option"):
        assert PASSWD_LINE not in report[name]["stdout"] and report[name]["status"] != 0, (name, report[name])
    assert report["home_root"]["stdout"] == "", report["home_root"]


def host_sockets(listeners: Listeners, tmp_path: Path, run_dir: Path, workspace: Path) -> list[str]:
    """A listener in the host's /tmp, in /run, in the workspace (made before the run), and an abstract one."""
    return [
        listeners.listen(str(tmp_path / "host.sock")),
        listeners.listen(str(run_dir / "service.sock")),
        listeners.listen(str(workspace / "planted.sock")),
        listeners.listen(f"@omx-attack-{uuid.uuid4().hex[:8]}"),
    ]


def test_without_the_sandbox_every_attack_works(tmp_path: Path, run_dir: Path, listeners: Listeners, tmux: str) -> None:
    """The control: the same script, unconfined, starts programs, reaches every socket and reads /etc/passwd."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    targets = host_sockets(listeners, tmp_path, run_dir, workspace)
    report = run_attacks([sys.executable, str(SCRIPT), "--no-sandbox", str(workspace), tmux, *targets])
    started = {name for name, outcome in report.items() if outcome.get("started")}
    assert {*step_attacks.STARTS, "tmux", "shell_program_starts_another"} <= started, started
    assert sorted(listeners.accepted()) == sorted(targets)
    assert PASSWD_LINE in report["etc_passwd"]["stdout"] and PASSWD_LINE in report["planted_symlink"]["stdout"]


def test_as_root_no_attack_gets_out(tmp_path: Path, run_dir: Path, listeners: Listeners, tmux: str) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    targets = host_sockets(listeners, tmp_path, run_dir, workspace)
    report = run_attacks([sys.executable, str(SCRIPT), str(workspace), tmux, *targets])
    assert report["sandbox"]["mechanism"] == "landlock", report["sandbox"]
    assert_held(report, listeners.accepted())


def test_as_an_unprivileged_user_no_attack_gets_out(
    tmp_path: Path, run_dir: Path, listeners: Listeners, tmux: str
) -> None:
    home = nobody_dir()
    try:
        workspace = home / "ws"
        workspace.mkdir()
        os.chown(workspace, NOBODY, NOBODY)
        script = Path(shutil.copy(SCRIPT, home))  # nobody reaches no file of a checkout in a 0700 directory
        targets = host_sockets(listeners, home, run_dir, workspace)
        report = run_attacks(as_nobody([sys.executable, str(script), str(workspace), tmux, *targets], tmp_path))
        assert_held(report, listeners.accepted())
    finally:
        shutil.rmtree(home, ignore_errors=True)


def test_inside_an_agent_view_no_attack_gets_out(tmp_path: Path, listeners: Listeners) -> None:
    """omx --as NAME runs its steps in NAME's view, which may make no network namespace: the filter still holds,
    and a socket planted in the agent's own zone before the run is as out of reach as the host's."""
    ws = Workspace.init(tmp_path / "ws", agents=["alice"])
    zone = ws.root / "agents" / "alice"
    planted = listeners.listen(str(zone / "planted.sock"))
    abstract = listeners.listen(f"@omx-attack-{uuid.uuid4().hex[:8]}")
    script = Path(shutil.copy(SCRIPT, zone))
    view = [*OMXFS, "run", str(ws.root), "--as", "alice", "--", sys.executable, str(script), str(zone)]
    report = run_attacks([*view, "-", planted, abstract])  # the host's /tmp, and its tmux, are not in a view
    assert_held(report, listeners.accepted())
