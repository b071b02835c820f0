"""``omx`` in an omxfs workspace: runs go to the agent's private zone, the bare store is refused, and on a real
mount the zone rules hold for everything omx and its tools do."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.model.llm import ScriptedModel
from agent.plan_run import workflow
from agent.record import runs_dir as runs_module
from omxfs.store import Workspace
from tests.e2e.helpers import PLAN_A, REPO, kinds, omx, run_end, trace_of


def test_on_an_omxfs_mount_runs_go_to_the_agents_private_zone(
    tmp_path: Path, script: Callable[..., ScriptedModel], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Workspace.init(tmp_path / "shared", agents=["alice", "bob"])
    root = store.root
    monkeypatch.setattr(runs_module, "is_omxfs_mount", lambda path: True)
    plan = {**PLAN_A, "steps": [{"id": 1, "description": "list", "tool": "list_dir", "inputs": {"path": "agents"}}]}
    script(json.dumps(plan))
    result = omx("list the agents", "--yes", "--as", "alice", "--workspace", str(root))
    assert result.exit_code == 0, result.output
    (run_dir,) = (root / "agents" / "alice" / "runs").iterdir()
    assert (run_dir / "trace.jsonl").is_file() and not (root / "runs").exists()
    script(json.dumps(plan))
    unknown = omx("list", "--yes", "--as", "zed", "--workspace", str(root))
    assert unknown.exit_code == 1 and "agent 'zed' has no private zone" in unknown.stderr


def test_an_unmounted_omxfs_store_is_refused(tmp_path: Path, script: Callable[..., ScriptedModel]) -> None:
    Workspace.init(tmp_path / "shared", agents=["alice"])
    script(json.dumps(PLAN_A))
    result = omx("summarise my notes", "--as", "alice", "--workspace", str(tmp_path / "shared"))
    assert result.exit_code == 1 and "omxfs store that is not mounted" in result.stderr
    assert (
        not (tmp_path / "shared" / "runs").exists() and not (tmp_path / "shared" / "agents" / "alice" / "runs").exists()
    )


def test_the_omxfs_mount_is_found_in_mountinfo(tmp_path: Path) -> None:
    mount = tmp_path / "my ws"
    mount.mkdir()
    escaped = str(mount).replace(" ", "\\040")
    info = tmp_path / "mountinfo"
    info.write_text(
        f"22 1 8:1 / / rw - ext4 /dev/sda1 rw\n98 22 0:50 / {escaped} rw,nosuid - fuse.omxfs omxfs rw\n",
        encoding="utf-8",
    )
    assert runs_module.is_omxfs_mount(mount, info)
    assert not runs_module.is_omxfs_mount(tmp_path, info)
    info.write_text(f"98 22 0:50 / {escaped} rw - fuse.sshfs host:/x rw\n", encoding="utf-8")
    assert not runs_module.is_omxfs_mount(mount, info)


def test_an_agent_views_binds_are_still_the_omxfs_workspace(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    info = tmp_path / "mountinfo"
    info.write_text(
        f"22 1 8:1 / / rw - ext4 /dev/sda1 rw\n98 22 0:50 / {ws} rw - fuse.omxfs omxfs rw\n"
        f"99 98 8:1 /ws/agents {ws}/agents ro - ext4 /dev/sda1 rw\n"
        f"100 99 8:1 /ws/agents/alice {ws}/agents/alice rw - ext4 /dev/sda1 rw\n"
        f"101 98 0:51 / {ws}/collaborative rw - tmpfs tmpfs rw\n",
        encoding="utf-8",
    )
    assert runs_module.omxfs_mount_of(ws / "agents" / "alice" / "src", info) == ws  # the view's own zone
    assert runs_module.omxfs_mount_of(ws / "agents", info) == ws
    assert runs_module.omxfs_mount_of(ws / "collaborative" / "x", info) is None  # anything else mounted hides it


# -- on a real omxfs mount: the zone rules hold for everything omx does -------------------------------------------

#: omx in a child process with a scripted model (the mount knows a process by its initial environment)
DRIVER = """
import json, os, sys
import cli.omx
from agent.model.llm import ScriptedModel
model = ScriptedModel(json.loads(os.environ["OMX_TEST_REPLIES"]))
cli.omx.build_model = lambda name, base, timeout=None: model
sys.argv = ["omx", *sys.argv[1:]]
cli.omx.main()
"""


@pytest.fixture
def mounted(tmp_path: Path) -> Iterator[Path]:
    """A store for alice and bob, mounted at tmp/mnt by ``omxfs mount`` with alice as the default identity."""
    if not os.path.exists("/dev/fuse"):
        pytest.skip("/dev/fuse is absent: the mount tests need it")
    pytest.importorskip("pyfuse3", reason="pyfuse3 is not installed (Linux with libfuse3 only)")
    store, mnt = tmp_path / "store", tmp_path / "mnt"
    Workspace.init(store, agents=["alice", "bob"])
    mnt.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "OMX_AGENT"}
    omxfs = [sys.executable, "-m", "cli.omxfs"]
    done = subprocess.run(
        [*omxfs, "mount", str(store), str(mnt), "--as", "alice"],
        env=env,
        timeout=60,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    try:
        yield mnt
    finally:
        done = subprocess.run(
            [*omxfs, "umount", str(mnt)], env=env, capture_output=True, text=True, timeout=60, check=False
        )
        if os.path.ismount(mnt):
            subprocess.run(["fusermount3", "-uz", str(mnt)], capture_output=True, check=False)
        assert done.returncode == 0, done.stderr


def omx_on(
    mnt: Path, replies: list[Any], *args: str, agent: str | None = None, answer: str | None = None
) -> subprocess.CompletedProcess[str]:
    """omx in ``mnt`` as ``agent`` (None: the mount's default), answering the prompt with ``answer``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMX_")}
    env |= {"PYTHONPATH": str(REPO), "OMX_TEST_REPLIES": json.dumps(replies)}
    if agent:
        env["OMX_AGENT"] = agent
    command = [sys.executable, "-c", DRIVER, *args]
    return subprocess.run(
        command, cwd=mnt, env=env, input=answer, capture_output=True, text=True, timeout=120, check=False
    )


def test_on_a_mount_omx_works_in_its_zone_and_versions_shared_files(mounted: Path) -> None:
    plan = {
        **PLAN_A,
        "steps": [
            {"id": 1, "description": "list", "tool": "shell", "inputs": {"cmd": "ls agents"}},
            {
                "id": 2,
                "description": "note",
                "tool": "write_text",
                "inputs": {"path": "agents/alice/notes.md", "content": {"ref": "step:1.output"}},
            },
            {
                "id": 3,
                "description": "share",
                "tool": "write_text",
                "inputs": {"path": "collaborative/current/plan.md", "content": "- plan\n"},
            },
        ],
        "success_criteria": [],
    }
    done = omx_on(mounted, [json.dumps(plan)], "share the plan", "--yes")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (mounted / "agents" / "alice" / "notes.md").read_text(encoding="utf-8") == "alice\nbob\n"
    history = json.loads((mounted / "collaborative" / ".versions" / "plan.md" / "history.json").read_text("utf-8"))
    assert [(h["version"], h["author"]) for h in history] == [(1, "alice")]  # one commit, no temporary file
    assert os.listdir(mounted / "collaborative" / "current") == ["plan.md"]
    (run_dir,) = (mounted / "agents" / "alice" / "runs").iterdir()
    assert (
        run_end(trace_of(run_dir))["status"] == "done" and not (mounted / "runs").exists()
    )  # no criteria: nothing checked


def test_on_a_mount_another_agents_zone_is_read_only_for_the_tools_too(mounted: Path) -> None:
    plan = {
        **PLAN_A,
        "steps": [
            {
                "id": 1,
                "description": "plant",
                "tool": "python",
                "inputs": {"code": "open('agents/alice/planted.txt', 'w').write('x')"},
            },
        ],
        "success_criteria": [],
    }
    refused = omx_on(mounted, [json.dumps(plan)], "plant a file", "--yes", "--as", "bob", agent="bob")
    assert refused.returncode == workflow.EXIT_DECLINED  # MEDIUM (it runs code): asked, and nobody answered
    done = omx_on(mounted, [json.dumps(plan)], "plant a file", agent="bob", answer="y\n")
    assert done.returncode == workflow.EXIT_FAILED, done.stdout + done.stderr
    assert "PermissionError" in done.stderr and not (mounted / "agents" / "alice" / "planted.txt").exists()
    runs = sorted((mounted / "agents" / "bob" / "runs").iterdir())
    step = kinds(trace_of(runs[-1]), "step")[0]
    assert step["status"] == "failed" and "Permission denied" in step["details"]["stderr"]


def test_on_a_mount_as_must_match_who_the_mount_sees(mounted: Path) -> None:
    done = omx_on(mounted, [json.dumps(PLAN_A)], "summarise", "--yes", "--as", "bob")
    assert done.returncode == 1
    assert "takes this process for 'alice'" in done.stderr and "OMX_AGENT=bob omx" in done.stderr


def test_omx_agent_at_the_mount_s_root_records_its_run_in_the_agent_s_zone(mounted: Path) -> None:
    """``omx agent`` at a mount's root tried to make ./runs there, which no agent may write: "internal error
    (PermissionError ...)". Its run now goes to agents/<you>/runs as omx "TASK"'s does; a directory it cannot
    record in is one line that says what to do."""
    done = omx_on(mounted, ["Hello."], "agent", "Say hello.")
    assert (done.returncode, done.stdout) == (0, "Hello.\n"), done.stderr
    (run_dir,) = (mounted / "agents" / "alice" / "runs").iterdir()
    assert run_end(trace_of(run_dir))["status"] == "answered" and not (mounted / "runs").exists()
    assert f"run: {run_dir}" in done.stderr

    refused = omx_on(mounted, ["Hello."], "agent", "Say hello.", "--runs-dir", "runs")
    assert (refused.returncode, refused.stdout) == (2, "")
    assert refused.stderr == (
        "omx agent: cannot record the run in runs: Permission denied; give another directory with --runs-dir\n"
    )
