"""An ``omx`` run on an omxfs mount starts with a checkpoint of the agent's zone (issue 27): its result names the
``omxfs diff`` and ``omxfs restore`` lines that show and undo the run, its trace keeps the checkpoint and the
run's diff stat, and ``omx replay`` shows that stat. Real mount, real ``omx`` and ``omxfs`` processes; only the
model is scripted."""

# ruff: noqa: F811  (the ``mounted`` fixture is imported and requested by name)

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.e2e.helpers import PLAN_A, REPO, run_end, trace_of
from tests.e2e.test_omx_workspaces import mounted, omx_on  # noqa: F401
from tests.support.scripts import changes_and_undo

WRITE_TWO = {
    **PLAN_A,
    "steps": [
        {
            "id": 1,
            "description": "edit",
            "tool": "write_text",
            "inputs": {"path": "agents/alice/keep.md", "content": "B\n"},
        },
        {
            "id": 2,
            "description": "add",
            "tool": "write_text",
            "inputs": {"path": "agents/alice/new.md", "content": "n\n"},
        },
    ],
    "success_criteria": [],
}


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    """A command the result printed, run as a person would, on the host."""
    tool = {"omxfs": [sys.executable, "-m", "cli.omxfs"], "omx": [sys.executable, "-m", "cli.omx"]}[argv[0]]
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)}
    return subprocess.run([*tool, *argv[1:]], capture_output=True, text=True, env=env, timeout=120, check=False)


def test_an_omx_run_on_a_mount_can_be_seen_and_undone_from_its_own_result(mounted: Path) -> None:
    zone = mounted / "agents" / "alice"
    (zone / "keep.md").write_text("A\n", encoding="utf-8")
    done = omx_on(mounted, [json.dumps(WRITE_TWO)], "edit and add", answer="y\n")
    assert done.returncode == 0, done.stdout + done.stderr
    show, undo = changes_and_undo(done.stdout)
    assert show[:4] == ["omxfs", "diff", str(mounted), "alice"]
    assert undo[:4] == ["omxfs", "restore", str(mounted), "alice"] and undo[4] == show[4]
    (run_dir,) = (zone / "runs").iterdir()
    trace = trace_of(run_dir)
    start = next(e for e in trace if e.get("event") == "start")
    assert start["data"]["checkpoint"] == {"zone": "alice", "id": int(show[4]), "made": True, "workspace": str(mounted)}
    listed = json.loads(_run([*show, "--json"]).stdout)
    run_record = [p for p in listed["added"] if p.startswith("runs")]  # the run's own record is in the zone too
    assert [p for p in listed["added"] if p not in run_record] == ["new.md"] and listed["modified"] == ["keep.md"]
    assert run_end(trace)["changes"] == {"added": len(listed["added"]), "modified": 1, "deleted": 0}

    replay = _run(["omx", "replay", str(run_dir)])
    assert replay.returncode == 0, replay.stderr
    assert f"checkpoint {show[4]} of alice's zone (made for this run)" in replay.stdout
    assert f"zone changes since its checkpoint: {len(listed['added'])} added, 1 modified, 0 deleted" in replay.stdout

    shown = _run(show)
    assert shown.returncode == 0, shown.stderr
    assert "M keep.md" in shown.stdout and "A new.md" in shown.stdout and "-A" in shown.stdout and "+B" in shown.stdout
    undone = _run(undo)
    assert undone.returncode == 0, undone.stderr
    assert (zone / "keep.md").read_text(encoding="utf-8") == "A\n"
    assert not (zone / "new.md").exists() and not (zone / "runs").exists()


def test_a_dry_run_makes_no_checkpoint_and_names_none(mounted: Path) -> None:
    done = omx_on(mounted, [json.dumps(WRITE_TWO)], "edit and add", "--dry-run")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "omxfs restore" not in done.stdout
    (run_dir,) = (mounted / "agents" / "alice" / "runs").iterdir()
    start = next(e for e in trace_of(run_dir) if e.get("event") == "start")
    assert "checkpoint" not in start["data"]
    assert not (mounted / ".omxfs" / "checkpoints" / "alice").exists()


def test_an_omx_agent_run_on_a_mount_checkpoints_first_and_its_undo_works(mounted: Path, tmp_path: Path) -> None:
    """``omx agent`` in a mount: the tools' writes to the zone are shown by the ``Changes:`` line and removed by
    the ``Undo:`` line it prints (issue 27: every omx run on a workspace can be undone)."""
    zone = mounted / "agents" / "alice"
    (zone / "keep.md").write_text("A\n", encoding="utf-8")
    code = "open('agents/alice/keep.md', 'w').write('B\\n'); open('agents/alice/new.md', 'w').write('n\\n')"
    replies = tmp_path / "replies.json"
    call = {"content": None, "tool_calls": [{"name": "python", "arguments": {"code": code}}]}
    replies.write_text(json.dumps([call, {"content": "done"}]), encoding="utf-8")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "cli.omx", "agent", "--model", f"scripted:{replies}", "edit and add"],
        cwd=mounted, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert (zone / "keep.md").read_text(encoding="utf-8") == "B\n"
    show, undo = changes_and_undo(done.stderr)
    assert show[:4] == ["omxfs", "diff", str(mounted), "alice"] and undo[4] == show[4]
    listed = json.loads(_run([*show, "--json"]).stdout)
    assert "new.md" in listed["added"] and listed["modified"] == ["keep.md"]
    assert f"zone: {len(listed['added'])} added, 1 modified, 0 deleted" in done.stderr
    undone = _run(undo)
    assert undone.returncode == 0, undone.stderr
    assert (zone / "keep.md").read_text(encoding="utf-8") == "A\n" and not (zone / "new.md").exists()
