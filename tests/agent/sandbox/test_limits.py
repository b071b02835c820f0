"""An omx step's limits (``omxfs.cgroups``), with real steps: a fork bomb and a memory hog are held in the step's
own cgroup while the host still forks, a file stops at its size, the workspace's config sets them, and a whole
``omx`` run (scripted model) ends the step with a message and a trace entry that name the limit, outside a view
and inside one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from agent.sandbox.confine import ProcessResult, Sandbox
from omxfs.cgroups import PREFIX, holder
from omxfs.limits import Limits
from omxfs.store import Workspace
from omxfs.store.config import render_config
from omxfs.store.layout import CONFIG
from tests.e2e.helpers import PLAN_A
from tests.support.sandbox import sandbox_or_skip

MIB = 1 << 20
OMX = Path(sys.executable).parent / "omx"
#: a python step that forks until it cannot, holding its children until ``release`` appears (no word the risk rules
#: read as starting programs: the limits are the wall, not the heuristics)
STEP_BOMB = """
import os as o, sys, time
kids = []
why = "no failure"
try:
    while len(kids) < 3000:
        pid = o.fork()
        if pid == 0:
            time.sleep(60)
            o._exit(0)
        kids.append(pid)
except OSError as exc:
    why = exc.strerror
open("held.txt", "w").write(f"{len(kids)} {why}")
for _ in range(600):
    if o.path.exists("release"):
        break
    time.sleep(0.05)
for pid in kids:
    o.kill(pid, 9)
print(f"held {len(kids)}: {why}")
sys.exit(1)
"""
HOG = "b = bytearray(256 << 20)\nprint('survived')"
BIG_FILE = "open('big', 'wb').write(bytes(3 << 20))"


@pytest.fixture(autouse=True)
def cgroups() -> None:
    if os.geteuid() != 0 or not holder(Limits(1, 1)).startswith("cgroup"):
        pytest.skip("no pids and memory cgroups this process can make (CI runs as root on cgroup v1)")


def step_cgroups() -> list[Path]:
    """The pids cgroups of this process's running steps."""
    here = Path("/proc/self/cgroup").read_text().split("pids:", 1)[1].split("\n", 1)[0]
    return sorted(Path("/sys/fs/cgroup/pids", here.lstrip("/")).glob(f"{PREFIX}step-{os.getpid()}-*"))


def test_a_fork_bomb_step_is_held_at_its_limit_and_the_host_still_forks(ws: Path) -> None:
    sandbox_or_skip(ws)
    box = Sandbox(ws, limits=Limits(max_procs=30))
    done: list[ProcessResult] = []
    runner = threading.Thread(target=lambda: done.append(box.run_python(STEP_BOMB, timeout=60)))
    runner.start()
    try:
        for _ in range(600):
            if (ws / "held.txt").exists() and (ws / "held.txt").read_text():
                break
            time.sleep(0.05)
        held, _, why = (ws / "held.txt").read_text().partition(" ")
        assert why == "Resource temporarily unavailable" and 20 <= int(held) < 30, (held, why)
        groups = step_cgroups()
        assert len(groups) == 1
        assert int(held) < int((groups[0] / "pids.current").read_text()) <= 30  # the bomb's children, and it
        assert subprocess.run(["true"], check=False).returncode == 0  # the host forks as ever
    finally:
        (ws / "release").touch()
        runner.join(timeout=60)
    result = done[0]
    assert result.returncode == 1, result
    assert result.reached and result.reached[0].startswith("reached its limit of 30 processes (--max-procs)")
    assert "omx: stopped: the step reached its limit of 30 processes (--max-procs)" in result.stderr
    assert step_cgroups() == []  # removed with the step


def test_a_memory_hog_step_is_killed_and_a_big_file_stops_at_its_size(ws: Path) -> None:
    sandbox_or_skip(ws)
    box = Sandbox(ws, limits=Limits(max_memory=64 * MIB, max_file_size=MIB))
    hog = box.run_python(HOG, timeout=60)
    assert "survived" not in hog.stdout and hog.returncode not in (0, None), hog
    assert [m.split(" (")[0] for m in hog.reached] == ["reached its limit of 64 MiB of memory"], hog
    big = box.run_python(BIG_FILE, timeout=60)
    assert big.returncode == 1 and "File too large" in big.stderr, big
    assert (ws / "big").stat().st_size == MIB
    assert big.reached[0].startswith("reached its limit of 1 MiB per file (--max-file-size)"), big
    fine = box.run_python("print(len(bytearray(8 << 20)))", timeout=60)
    assert (fine.returncode, fine.stdout, fine.reached) == (0, f"{8 << 20}\n", []), fine


def test_a_step_takes_its_limits_from_the_workspace_config(tmp_path: Path) -> None:
    store = Workspace.init(tmp_path / "ws", agents=["alice"])
    sandbox_or_skip(store.root)
    config = store.config
    limited = type(config)(config.agents, config.supervisors, dict(config.uids), Limits(max_file_size=MIB))
    store.writer.write(store.meta, CONFIG, render_config(limited).encode("utf-8"))
    box = Sandbox(store.root / "agents" / "alice")
    assert Sandbox(store.root).limits.max_file_size == MIB
    assert box.limits.max_file_size == 16 << 30  # a zone is no workspace: the defaults
    box = Sandbox(store.root, limits=Limits(max_procs=50))
    assert (box.limits.max_procs, box.limits.max_file_size) == (50, MIB)  # the command line's, then the config's
    assert "50 processes" in box.info.limits and "1 MiB per file" in box.info.limits
    limits = box.run_python("print(open('/proc/self/limits').read())", timeout=60)
    if limits.returncode == 0:  # bubblewrap's step has no /proc: the file size shows in the refusal below instead
        assert str(MIB) in limits.stdout
    big = box.run_python(BIG_FILE, timeout=60)
    assert big.returncode == 1 and big.reached[0].startswith("reached its limit of 1 MiB per file"), big


def run_omx(ws: Path, plan: dict[str, Any], *options: str, env: dict[str, str] | None = None) -> str:
    replies = ws.parent / "replies.json"
    replies.write_text(json.dumps([json.dumps({**PLAN_A, **plan, "success_criteria": []})]), encoding="utf-8")
    done = subprocess.run(
        [str(OMX), "limits", "-w", str(ws), "--model", f"scripted:{replies}", *options],
        input="y\n",
        capture_output=True,
        text=True,
        timeout=180,
        env=env or {k: v for k, v in os.environ.items() if k not in ("OMX_AGENT", "OMX_VIEW")},
        cwd=ws,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr  # the step failed
    return done.stdout + done.stderr


def failed_steps(runs: Path) -> list[dict[str, Any]]:
    (trace,) = runs.glob("*/trace.jsonl")
    entries = [json.loads(line) for line in trace.read_text().splitlines()]
    return [e for e in entries if e["kind"] == "step" and e["status"] == "failed"]


def test_an_omx_run_names_the_limit_its_step_reached_and_the_trace_says_so(ws: Path) -> None:
    sandbox_or_skip(ws)
    (ws / "release").touch()  # the bomb lets its children go at once
    plan = {"risk_level": "MEDIUM", "steps": [{"id": 1, "description": "b", "tool": "python",
                                               "inputs": {"code": STEP_BOMB}}]}  # fmt: skip
    said = run_omx(ws, plan, "--max-procs", "30")
    assert "python stopped: reached its limit of 30 processes (--max-procs)" in said, said
    assert "limits: 30 processes" in said, said  # the banner says what holds each step
    (step,) = failed_steps(ws / "runs")
    assert step["error_type"] == "LimitReached", step
    assert "reached its limit of 30 processes (--max-procs)" in step["error"], step


def test_a_step_of_omx_in_a_view_is_held_too(tmp_path: Path) -> None:
    from tests.view.conftest import run_omx_as

    if not os.path.exists("/dev/fuse"):
        pytest.skip("/dev/fuse is absent: views need FUSE")
    store = Workspace.init(tmp_path / "ws", agents=["bob"])
    replies = store.root / "agents/bob/replies.json"
    code = "open('agents/bob/big', 'wb').write(bytes(3 << 20))"
    plan = {"risk_level": "MEDIUM", "steps": [{"id": 1, "description": "w", "tool": "python",
                                               "inputs": {"code": code}}]}  # fmt: skip
    replies.write_text(json.dumps([json.dumps({**PLAN_A, **plan, "success_criteria": []})]), encoding="utf-8")
    done = run_omx_as("bob", store.root, "limits", replies, "--max-file-size", "1M")
    said = done.stdout + done.stderr
    assert done.returncode == 1, said
    assert "reached its limit of 1 MiB per file (--max-file-size)" in said, said
    assert "the view's own limits hold all its steps together" in said, said  # no cgroup in a view: it says so
    assert (store.root / "agents/bob/big").stat().st_size == MIB
    (step,) = failed_steps(store.root / "agents/bob/runs")
    assert step["error_type"] == "LimitReached", step


def test_a_step_that_meets_a_limit_and_copes_is_not_stopped(ws: Path) -> None:
    sandbox_or_skip(ws)
    code = STEP_BOMB.replace("sys.exit(1)", "sys.exit(0)")
    (ws / "release").touch()
    done = Sandbox(ws, limits=Limits(max_procs=12)).run_python(code, timeout=60)
    assert done.returncode == 0 and done.reached, done
    assert "omx: the step reached its limit of 12 processes (--max-procs)" in done.stderr, done
    assert "stopped" not in done.stderr, done
