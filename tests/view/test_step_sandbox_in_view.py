"""Issue 26 in an agent view: ``omx --as bob`` runs its steps in bob's view, where bwrap cannot make the step's
namespaces (the view forbids user namespaces); Landlock and the seccomp filter alone confine the step there. The
real ``omx`` is started with a scripted model, and each attack is judged by its outcome: a marker a started program
would write, a host listener that would accept, the host's passwd printed."""

from __future__ import annotations

import json
import secrets
import socket
import subprocess
from pathlib import Path
from typing import Any

from omxfs.store import Workspace
from tests.e2e.helpers import PLAN_A
from tests.view.conftest import run_omx_as

# no word the risk rules read as starting programs or using the network: the sandbox is the wall, not the heuristic
ATTACKS = """
import asyncio, json, sys
import os as o
open("agents/bob/ran.txt", "w").write("ran")
out = {{}}
try:
    o.popen("touch agents/bob/marker-popen").read()
except OSError as exc:
    out["popen"] = exc.errno
try:
    sys.modules["o" + "s"].system("touch agents/bob/marker-system")
except OSError as exc:
    out["system"] = exc.errno
S = sys.modules["so" + "cket"]
for name in ("abstract", "path"):
    try:
        s = S.SocketType(S.AF_UNIX, S.SOCK_STREAM)
        s.connect({addresses!r}[name])
        out[name] = "connected"
    except OSError as exc:
        out[name] = exc.errno
print(json.dumps(out))
"""


def run_omx(store: Workspace, plan: dict[str, Any], *options: str) -> subprocess.CompletedProcess[str]:
    replies = store.root / "agents/bob/replies.json"
    replies.write_text(json.dumps([json.dumps({**PLAN_A, **plan, "success_criteria": []})]), encoding="utf-8")
    return run_omx_as("bob", store.root, "attack", replies, *options)


def test_a_step_in_a_view_starts_no_program_and_reaches_no_host_socket(store: Workspace, tmp_path: Path) -> None:
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    abstract.bind(f"\0omx-view-test-{secrets.token_hex(8)}")
    path = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    path.bind(str(tmp_path / "host.sock"))  # the view does not show the host's /tmp: also ENOENT if it could
    addresses = {"abstract": "\0" + abstract.getsockname()[1:].decode(), "path": str(tmp_path / "host.sock")}
    code = ATTACKS.format(addresses=addresses)
    plan = {
        "risk_level": "MEDIUM",
        "steps": [{"id": 1, "description": "a", "tool": "python", "inputs": {"code": code}}],
    }
    with abstract, path:
        for server in (abstract, path):
            server.listen()
            server.setblocking(False)
        done = run_omx(store, plan)
        said = done.stdout + done.stderr
        assert (store.root / "agents/bob/ran.txt").read_text() == "ran", said  # the step did run
        assert not list((store.root / "agents/bob").glob("marker-*")), said
        for server in (abstract, path):
            try:
                server.accept()
                raise AssertionError(f"a step reached {server.getsockname()!r}")
            except BlockingIOError:
                pass
    assert "Sandbox: landlock" in said and "no socket but AF_UNIX pairs" in said, said


def test_grep_in_a_view_does_not_print_the_hosts_passwd(store: Workspace) -> None:
    """``grep --regex=: /etc/passwd`` (the issue's LOW step): refused by the policy, or run and refused by
    Landlock (a view shows the host's /etc: the step may not read its passwd)."""
    plan = {"steps": [{"id": 1, "description": "g", "tool": "shell", "inputs": {"cmd": "grep --regex=: /etc/passwd"}}]}
    done = run_omx(store, plan, "--yes")
    host = [line for line in Path("/etc/passwd").read_text().splitlines() if not line.startswith("nobody:")]
    runs = store.root / "agents/bob/runs"
    recorded = "".join(p.read_text() for p in runs.rglob("*") if p.is_file()) if runs.is_dir() else ""
    for line in host:
        assert line not in done.stdout + done.stderr + recorded, line
