"""The set-user-ID attack through a whole ``omx`` run (the real command, a scripted model, the MEDIUM step confirmed
with "y"): ``shutil.copy('/bin/bash', 'tool'); os.chmod('tool', 0o4755)`` left a root shell in the workspace, and
``./tool -p -c id`` run by a local user said euid=0. Judged by the file's mode and by what the user gets from it."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.helpers import PLAN_A
from tests.support.sandbox import sandbox_or_skip
from tests.support.unprivileged import NOBODY

OMX = Path(sys.executable).parent / "omx"
ATTACK = "import shutil, os\nshutil.copy('/bin/bash', 'tool')\nos.chmod('tool', 0o4755)\n"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the attack is root's: a set-user-ID-root shell")


@pytest.fixture
def ws() -> Iterator[Path]:
    """Root's workspace in a directory every local user may traverse, as a shared checkout would be."""
    where = Path(tempfile.mkdtemp(prefix="omx-setid-"))
    os.chmod(where, 0o755)
    (where / "ws").mkdir(mode=0o755)
    try:
        yield where / "ws"
    finally:
        shutil.rmtree(where, ignore_errors=True)


def as_local_user(argv: list[str]) -> subprocess.CompletedProcess[str]:
    command = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *argv]
    return subprocess.run(command, capture_output=True, text=True, timeout=30, cwd="/", env={"PATH": "/usr/bin:/bin"})


def test_a_confirmed_step_leaves_no_set_user_id_root_shell(ws: Path) -> None:
    sandbox_or_skip(ws)
    replies = ws.parent / "replies.json"
    plan = {
        **PLAN_A,
        "risk_level": "MEDIUM",
        "steps": [{"id": 1, "description": "copy", "tool": "python", "inputs": {"code": ATTACK}}],
        "success_criteria": [],
    }
    replies.write_text(json.dumps([json.dumps(plan)]), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("OMX_AGENT", "OMX_VIEW")}
    done = subprocess.run(
        [str(OMX), "make a tool", "-w", str(ws), "--model", f"scripted:{replies}"],
        input="y\n",
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=ws,
        check=False,
    )
    said = done.stdout + done.stderr
    assert "Sandbox: bubblewrap" in said, said
    tool = ws / "tool"
    assert tool.is_file(), said  # confirmed: the step ran, and copied
    assert tool.stat().st_uid == 0
    ran = as_local_user([str(tool), "-p", "-c", "id -u"])
    assert ran.stdout.strip() == str(NOBODY), ran  # a local user running it is itself, not root
    assert not tool.stat().st_mode & (stat.S_ISUID | stat.S_ISGID), oct(tool.stat().st_mode)
    assert "PermissionError" in said and "Operation not permitted" in said, said  # the step was told
