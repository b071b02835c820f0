"""omx writes its run record only inside the workspace: a ``runs`` that is a symlink (a cloned repository's, one
another agent prepared) or not a directory is refused before anything runs, and a symlink a step plants in its
run's directory while omx runs is never followed. Real ``omx`` runs with a scripted model, judged by the files
outside the workspace, which must stay as they were."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent.record.trace import read_output
from omxfs.store import Workspace
from tests.e2e.helpers import PLAN_A
from tests.support.sandbox import sandbox_or_skip
from tests.view.conftest import run_omx_as, store  # noqa: F401  (the store fixture, for the view's case)

OMX = Path(sys.executable).parent / "omx"
UNTOUCHED = "untouched\n"
#: a plan whose one step leaves a marker: the step must not run where the record cannot be written
MARKER_PLAN = {"steps": [{"id": 1, "description": "m", "tool": "write_text",
                          "inputs": {"path": "marker.txt", "content": "ran", "mode": "overwrite"}}]}  # fmt: skip


def run_omx(ws: Path, plan: dict[str, Any], *options: str) -> subprocess.CompletedProcess[str]:
    """``omx TASK -w WS [options]`` with a scripted model whose one reply is ``plan``, confirming with "y"."""
    replies = ws.parent / "replies.json"
    replies.write_text(json.dumps([json.dumps({**PLAN_A, "success_criteria": [], **plan})]), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("OMX_AGENT", "OMX_VIEW")}
    command = [str(OMX), "a task", "-w", str(ws), "--model", f"scripted:{replies}", *options]
    return subprocess.run(command, input="y\n", capture_output=True, text=True, timeout=120, env=env, cwd=ws.parent,
                          check=False)  # fmt: skip


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return workspace


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory beside the workspace, outside it."""
    path = tmp_path / "outside"
    path.mkdir()
    return path


def test_a_runs_symlink_is_refused_and_nothing_is_written_through_it(ws: Path, outside: Path) -> None:
    (ws / "runs").symlink_to(outside)
    done = run_omx(ws, MARKER_PLAN, "--yes")
    said = done.stdout + done.stderr
    assert done.returncode == 1, said
    assert f"{ws / 'runs'} is a symlink to {outside}: omx writes its run record only inside the workspace" in said
    assert f"remove or rename {ws / 'runs'}" in said and "Traceback" not in said, said
    assert list(outside.iterdir()) == []
    assert not (ws / "marker.txt").exists()  # refused before anything ran


def test_a_runs_file_is_refused_and_left_as_it_was(ws: Path) -> None:
    (ws / "runs").write_text(UNTOUCHED, encoding="utf-8")
    done = run_omx(ws, MARKER_PLAN, "--yes")
    said = done.stdout + done.stderr
    assert done.returncode == 1, said
    assert f"{ws / 'runs'} is not a directory" in said and "Traceback" not in said, said
    assert (ws / "runs").read_text(encoding="utf-8") == UNTOUCHED
    assert not (ws / "marker.txt").exists()


def test_omx_agent_refuses_a_runs_symlink(ws: Path, outside: Path) -> None:
    (ws / "runs").symlink_to(outside)
    replies = ws.parent / "replies.json"
    replies.write_text(json.dumps(["the answer"]), encoding="utf-8")
    done = subprocess.run([str(OMX), "agent", "a question", "--model", f"scripted:{replies}"], cwd=ws,
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert "runs is a symlink to" in done.stderr and "internal error" not in done.stderr, done.stderr
    assert list(outside.iterdir()) == []


def planted(code: str) -> dict[str, Any]:
    """A MEDIUM plan whose python step runs ``code`` with ``run``, its own run directory (``runs/<ts>``, a Path)."""
    code = "from pathlib import Path\n(run,) = Path('runs').iterdir()\n" + code + "print('planted')\n"
    step = {"id": 1, "description": "p", "tool": "python", "inputs": {"code": code}}
    return {"risk_level": "MEDIUM", "steps": [step]}


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_symlinks_a_step_plants_in_its_run_directory_are_not_followed(ws: Path, outside: Path) -> None:
    """trace.jsonl moved away and replaced by a symlink, outputs/1.txt a symlink: the files they name outside stay
    as they were, and the rest of the trace goes on in the file omx made (where the step moved it)."""
    sandbox_or_skip(ws)
    for name in ("trace.txt", "output.txt"):
        (outside / name).write_text(UNTOUCHED, encoding="utf-8")
    code = (
        "(run / 'trace.jsonl').rename(run / 'moved.jsonl')\n"
        f"(run / 'trace.jsonl').symlink_to({str(outside / 'trace.txt')!r})\n"
        "(run / 'outputs').mkdir()\n"
        f"(run / 'outputs/1.txt').symlink_to({str(outside / 'output.txt')!r})\n"
    )
    done = run_omx(ws, planted(code))
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    for name in ("trace.txt", "output.txt"):
        assert (outside / name).read_text(encoding="utf-8") == UNTOUCHED, name
    (run,) = (ws / "runs").iterdir()
    assert (run / "trace.jsonl").is_symlink()  # the step's, left alone
    ends = [e for e in lines(run / "moved.jsonl") if e.get("event") == "end"]
    assert ends and ends[0]["data"]["status"] == "done", said
    assert not (run / "outputs/1.txt").is_symlink()
    assert (run / "outputs/1.txt").read_text(encoding="utf-8") == "planted\n"


def test_a_run_directory_a_step_replaces_by_a_symlink_is_not_followed(ws: Path, outside: Path) -> None:
    """The step renames its run directory away and leaves a symlink to a directory outside in its place, and makes
    the outputs directory a symlink too: nothing is written outside; the record goes on in the moved directory."""
    sandbox_or_skip(ws)
    code = (
        f"(run / 'outputs').symlink_to({str(outside)!r})\nrun.rename('moved-run')\nrun.symlink_to({str(outside)!r})\n"
    )
    done = run_omx(ws, planted(code))
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    assert list(outside.iterdir()) == []
    moved = ws / "moved-run"
    assert [e for e in lines(moved / "trace.jsonl") if e.get("event") == "end"], said
    assert (moved / "outputs").is_dir() and not (moved / "outputs").is_symlink()
    assert (moved / "outputs/1.txt").read_text(encoding="utf-8") == "planted\n"


def test_an_agents_runs_symlink_is_refused_in_an_omxfs_workspace(store: Workspace, tmp_path: Path) -> None:  # noqa: F811
    """``omx --as bob``: the record goes to ``agents/bob/runs``, which bob may have made a symlink."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    zone = store.root / "agents/bob"
    (zone / "runs").symlink_to(elsewhere)
    replies = zone / "replies.json"
    replies.write_text(json.dumps([json.dumps({**PLAN_A, **MARKER_PLAN, "success_criteria": []})]), encoding="utf-8")
    done = run_omx_as("bob", store.root, "a task", replies, "--yes")
    said = done.stdout + done.stderr
    assert done.returncode == 1, said
    assert "agents/bob/runs is a symlink to" in said and "inside the workspace" in said, said
    assert "Traceback" not in said, said
    assert list(elsewhere.iterdir()) == []


def test_an_output_read_back_is_never_read_through_a_symlink(tmp_path: Path, outside: Path) -> None:
    """What omx reads back of a step's output goes to the model (a re-plan, a code fix): a later step that points
    ``outputs/1.txt`` at a file only omx may read must get nothing of it."""
    secret = outside / "secret.txt"
    secret.write_text("s3cret\n", encoding="utf-8")
    run = tmp_path / "run"
    (run / "outputs").mkdir(parents=True)
    (run / "outputs/1.txt").symlink_to(secret)
    (run / "outputs/2.txt").write_text("kept\n", encoding="utf-8")
    assert read_output(run, 1) == ""
    assert read_output(run, 2) == "kept\n"
    (run / "outputs").rename(run / "moved")
    (run / "outputs").symlink_to(outside)
    (outside / "2.txt").write_text("outside\n", encoding="utf-8")
    assert read_output(run, 2) == ""
