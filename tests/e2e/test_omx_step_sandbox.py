"""Issue 26 through a whole ``omx`` run (the real command, a scripted model), outside an agent view: the headline
escape, a python step that had a tmux server on a socket in the host's /tmp run a command outside, and the
``grep --regex=: /etc/passwd`` step that printed the host's passwd. Judged by their outcome."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.helpers import PLAN_A
from tests.support.sandbox import sandbox_or_skip

OMX = Path(sys.executable).parent / "omx"


@pytest.fixture
def tmux() -> Iterator[Path]:
    """A real tmux server on a socket in a directory of the host's /tmp."""
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    where = Path(tempfile.mkdtemp(prefix="omx-tmux-", dir="/tmp"))
    sock = where / "tmux.sock"
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "TERM": "xterm", "HOME": str(where)}
    subprocess.run(["tmux", "-S", str(sock), "-f", "/dev/null", "new-session", "-d", "sleep 600"], env=env, check=True)
    try:
        yield sock
    finally:
        subprocess.run(["tmux", "-S", str(sock), "kill-server"], env=env, capture_output=True, check=False)
        shutil.rmtree(where, ignore_errors=True)


def run_omx(ws: Path, plan: dict[str, Any], *options: str) -> subprocess.CompletedProcess[str]:
    replies = ws.parent / "replies.json"
    replies.write_text(json.dumps([json.dumps({**PLAN_A, **plan, "success_criteria": []})]), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("OMX_AGENT", "OMX_VIEW")}
    return subprocess.run(
        [str(OMX), "attack", "-w", str(ws), "--model", f"scripted:{replies}", *options],
        input="y\n",
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=ws,
        check=False,
    )


def test_a_python_step_cannot_make_the_hosts_tmux_run_a_command(tmp_path: Path, tmux: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    sandbox_or_skip(ws)
    marker = tmux.parent / "escaped"
    code = f"import os as o\nopen('ran.txt', 'w').write('ran')\no.popen(\"tmux -S {tmux} run-shell 'touch {marker}'\")"
    plan = {
        "risk_level": "MEDIUM",
        "steps": [{"id": 1, "description": "t", "tool": "python", "inputs": {"code": code}}],
    }
    done = run_omx(ws, plan)
    said = done.stdout + done.stderr
    assert (ws / "ran.txt").read_text() == "ran", said  # MEDIUM, confirmed: the step ran
    assert not marker.exists(), said
    assert "Sandbox: bubblewrap" in said, said
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "TERM": "xterm", "HOME": str(tmux.parent)}
    subprocess.run(["tmux", "-S", str(tmux), "run-shell", f"touch {marker}"], env=env, check=True)
    assert marker.exists()  # the control: the same command, unconfined, does reach the server


def test_grep_does_not_print_the_hosts_passwd(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    sandbox_or_skip(ws)
    plan = {"steps": [{"id": 1, "description": "g", "tool": "shell", "inputs": {"cmd": "grep --regex=: /etc/passwd"}}]}
    done = run_omx(ws, plan, "--yes")
    host = [line for line in Path("/etc/passwd").read_text().splitlines() if not line.startswith("nobody:")]
    recorded = "".join(p.read_text() for p in (ws / "runs").rglob("*") if p.is_file())
    for line in host:
        assert line not in done.stdout + done.stderr + recorded, line
