"""The command lines ``omxfs run --branch`` and ``omxfs branches`` print, and those a refusal or a checkpoint error
names, work pasted into the same shell, as root with no OMX_AGENT, on a workspace named as the person named it
(relative, with a space): the fixtures and the way lines are pasted are ``tests/test_printed_commands.py``'s."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from omxfs.checkpoints.review import Review
from omxfs.store import Workspace
from tests.test_printed_commands import NAME, OMXFS, _on_path, bin_dir, notes, omxfs, pasted, person_env, printed, ws

__all__ = ["_on_path", "bin_dir", "ws"]  # the fixtures, used by name


def test_the_show_apply_drop_and_list_lines_of_a_branch_run_do_what_they_say(ws: Workspace, tmp_path: Path) -> None:
    if not os.path.exists("/dev/fuse") or shutil.which("bwrap") is None:
        pytest.skip("views need /dev/fuse and bwrap")
    script = "echo branched > notes.md"
    run = omxfs(tmp_path, "run", NAME, "--as", "alice", "--branch", "b1", "--", "sh", "-c", script)
    assert notes(ws) == "first\n"  # held apart
    show, apply, listed = (printed(run.stderr, label) for label in ("show: ", "apply: ", "list: "))
    assert show == "omxfs diff 'my ws' alice --branch b1", show
    assert apply == "omxfs accept 'my ws' alice --branch b1 --as alice", apply
    assert listed == "omxfs branches 'my ws' alice", listed
    assert "+branched" in pasted(show, tmp_path).stdout
    assert "pending" in pasted(listed, tmp_path).stdout
    pasted(apply, tmp_path)
    assert notes(ws) == "branched\n" and not Review(ws, "alice", "b1").pending

    again = omxfs(tmp_path, "run", NAME, "--as", "alice", "--branch", "b2", "--", "sh", "-c", "echo no > notes.md")
    drop = printed(again.stderr, "drop: ")
    assert drop == "omxfs discard 'my ws' alice --branch b2 --as alice", drop
    pasted(drop, tmp_path)
    assert notes(ws) == "branched\n" and not Review(ws, "alice", "b2").pending


def test_the_start_line_of_an_empty_branch_list_names_the_workspace_as_typed(ws: Workspace, tmp_path: Path) -> None:
    empty = omxfs(tmp_path, "branches", NAME, "alice").stdout
    assert empty == "no branches of alice (start one with `omxfs run 'my ws' --as alice --branch NAME -- CMD`)\n"


def _quoted(message: str) -> list[str]:
    """The commands a message quotes in backticks, in order."""
    return message.split("`")[1::2]


def test_the_lines_a_refusal_names_work_pasted(ws: Workspace, tmp_path: Path) -> None:
    """A plain run refused while a branch is pending, and an accept of a branch that is not there, name the commands
    that go on: each names the workspace as typed and acts as the zone's owner, and does what it says pasted."""
    if not os.path.exists("/dev/fuse") or shutil.which("bwrap") is None:
        pytest.skip("views need /dev/fuse and bwrap")
    omxfs(tmp_path, "run", NAME, "--as", "alice", "--branch", "b1", "--", "sh", "-c", "echo one > notes.md")
    refused = subprocess.run([*OMXFS, "run", NAME, "--as", "alice", "--", "true"], cwd=tmp_path, env=person_env(),
                             capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert refused.returncode != 0
    go_on, show, apply, drop, listed = _quoted(refused.stderr)
    assert go_on == "omxfs run 'my ws' --as alice --branch b1 -- CMD", go_on
    assert (show, apply, drop) == (
        "omxfs diff 'my ws' alice --branch b1",
        "omxfs accept 'my ws' alice --branch b1 --as alice",
        "omxfs discard 'my ws' alice --branch b1 --as alice",
    )
    assert listed == "omxfs branches 'my ws' alice", listed
    pasted(go_on.replace("CMD", "sh -c 'echo two >> notes.md'"), tmp_path)
    assert "+two" in pasted(show, tmp_path).stdout and "b1" in pasted(listed, tmp_path).stdout
    pasted(apply, tmp_path)
    assert notes(ws) == "one\ntwo\n"

    missing = subprocess.run([*OMXFS, "accept", NAME, "alice", "--branch", "b9", "--as", "alice"], cwd=tmp_path,
                             env=person_env(), capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert missing.returncode != 0
    listed, start = _quoted(missing.stderr)
    assert start == "omxfs run 'my ws' --as alice --branch b9 -- CMD", start
    pasted(start.replace("CMD", "sh -c 'echo nine > notes.md'"), tmp_path)
    assert "b9" in pasted(listed, tmp_path).stdout


def test_the_lines_a_checkpoint_error_names_work_pasted(ws: Workspace, tmp_path: Path) -> None:
    """``omxfs diff`` of a zone without checkpoints, and of a checkpoint that is not there, name the command that
    makes or lists them, with the workspace as typed."""
    none = subprocess.run([*OMXFS, "diff", NAME, "bob"], cwd=tmp_path, env=person_env(), capture_output=True,
                          text=True, timeout=120, check=False)  # fmt: skip
    (make,) = _quoted(none.stderr)
    assert make == "omxfs checkpoint 'my ws' --as bob", none.stderr
    pasted(make, tmp_path)
    wrong = subprocess.run([*OMXFS, "diff", NAME, "bob", "99"], cwd=tmp_path, env=person_env(), capture_output=True,
                           text=True, timeout=120, check=False)  # fmt: skip
    (listing,) = _quoted(wrong.stderr)
    assert listing == "omxfs checkpoints 'my ws' bob", wrong.stderr
    assert "ID" in pasted(listing, tmp_path).stdout
