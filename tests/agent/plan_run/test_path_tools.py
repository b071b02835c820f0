"""The path tools on real files, called as the executor calls them, and how their steps are rated and confirmed.

What the plan's risk cannot see is checked when the tool runs: a symlink put on the way after the plan was shown, a
FIFO or a mount point inside a directory, a target that appeared meanwhile."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agent.plan_run.confirm import Declined, Refused, confirm
from agent.plan_run.plan import Plan
from agent.plan_run.risk import assess
from agent.plan_run.tools.base import ToolResult
from agent.plan_run.tools.inputs import CopyInput, DeleteInput, MakeDirInput, MoveInput, PathToolInput
from agent.plan_run.tools.path_tools import run_path_tool


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "data/sub").mkdir(parents=True)
    (root / "data/a.txt").write_text("a\n", encoding="utf-8")
    (root / "data/sub/b.txt").write_text("b\n", encoding="utf-8")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside/secret.txt").write_text("secret\n", encoding="utf-8")
    return root


def run(ws: Path, inputs: PathToolInput, records: str = "runs") -> ToolResult:
    return run_path_tool(inputs, ws, records=records, atomic=True)


def listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_a_symlink_on_the_way_is_refused_when_the_tool_runs_and_nothing_outside_changes(ws: Path) -> None:
    outside = ws.parent / "outside"
    (ws / "data/sub").rename(ws / "sub-was")
    (ws / "data/sub").symlink_to(outside)  # put there after the plan was made
    for inputs in (
        DeleteInput(path="data/sub/secret.txt"),
        MoveInput(source="data/sub/secret.txt", target="mine.txt"),
        MoveInput(source="data/a.txt", target="data/sub/a.txt"),
        CopyInput(source="data/a.txt", target="data/sub/new/a.txt"),
        MakeDirInput(path="data/sub/made"),
    ):
        result = run(ws, inputs)
        assert not result.ok and result.error_type == "SymlinkRefused", result
        assert result.error == "data/sub is a symlink: omx does not follow symlinks on the way to a path"
    assert listing(outside) == ["secret.txt"] and (outside / "secret.txt").read_text() == "secret\n"
    assert (ws / "data/a.txt").read_text() == "a\n"


def test_nothing_is_replaced_unless_the_step_says_so_and_never_through_a_symlink(ws: Path) -> None:
    (ws / "data/c.txt").write_text("c\n", encoding="utf-8")
    kept = run(ws, MoveInput(source="data/a.txt", target="data/c.txt"))
    assert not kept.ok and kept.error_type == "TargetExists"
    assert (ws / "data/a.txt").read_text() == "a\n" and (ws / "data/c.txt").read_text() == "c\n"
    moved = run(ws, MoveInput(source="data/a.txt", target="data/c.txt", overwrite=True))
    assert moved.ok and moved.details["replaced"] and not (ws / "data/a.txt").exists()
    assert (ws / "data/c.txt").read_text() == "a\n"

    (ws / "link.txt").symlink_to(ws.parent / "outside/secret.txt")
    for overwrite in (False, True):
        refused = run(ws, CopyInput(source="data/c.txt", target="link.txt", overwrite=overwrite))
        assert not refused.ok and refused.error_type == "TargetExists"
    assert (ws.parent / "outside/secret.txt").read_text() == "secret\n" and (ws / "link.txt").is_symlink()
    for overwrite in (False, True):  # a directory is never a place to put the source in, nor replaced
        onto_dir = run(ws, MoveInput(source="data/c.txt", target="data/sub/", overwrite=overwrite))
        assert not onto_dir.ok and "data/sub/ is a directory: the target is the new path itself" in str(onto_dir.error)
        assert onto_dir.hint == "name the new path in full, e.g. data/sub/NAME"
    (ws / "data/d").mkdir()
    dir_onto_file = run(ws, MoveInput(source="data/d", target="data/c.txt", overwrite=True))
    assert not dir_onto_file.ok and "only a file may replace a file" in str(dir_onto_file.error)
    assert (ws / "data/c.txt").read_text() == "a\n" and listing(ws / "data/sub") == ["b.txt"]


def test_copies_keep_the_mode_and_a_directory_copy_is_whole_or_nothing(ws: Path) -> None:
    os.chmod(ws / "data/a.txt", 0o640)
    copied = run(ws, CopyInput(source="data/a.txt", target="out/a.txt"))
    assert copied.ok and (ws / "out/a.txt").stat().st_mode & 0o777 == 0o640
    os.mkfifo(ws / "data/sub/pipe")
    refused = run(ws, CopyInput(source="data", target="copy"))
    assert not refused.ok and refused.error_type == "NotCopyable" and "data/sub/pipe is a FIFO" in (refused.error or "")
    assert not (ws / "copy").exists()  # found before anything was written
    into = run(ws, CopyInput(source="data", target="data/sub/again"))
    assert not into.ok and "would go inside itself" in (into.error or "") and not (ws / "data/sub/again").exists()


def test_omxs_run_records_are_never_moved_deleted_or_written_into(ws: Path) -> None:
    (ws / "agents/bob/runs/1").mkdir(parents=True)
    (ws / "agents/bob/runs/1/trace.jsonl").write_text("{}\n", encoding="utf-8")
    records = "agents/bob/runs"
    for inputs in (
        DeleteInput(path="agents/bob/runs/1"),
        DeleteInput(path="agents/bob"),
        MoveInput(source="agents/bob/runs", target="elsewhere"),
        MoveInput(source="data/a.txt", target="agents/bob/runs/1/trace.jsonl", overwrite=True),
        CopyInput(source="data/a.txt", target="agents/bob/runs/a.txt"),
    ):
        result = run(ws, inputs, records)
        assert not result.ok and result.error_type == "RunRecords", result
    assert (ws / "agents/bob/runs/1/trace.jsonl").read_text() == "{}\n"
    assert run(ws, CopyInput(source="agents/bob/runs/1", target="kept-run"), records).ok  # a copy of them is fine
    assert (ws / "kept-run/trace.jsonl").read_text() == "{}\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root (CI runs as root)")
def test_a_directory_holding_a_mount_point_is_neither_deleted_nor_copied(ws: Path) -> None:
    mnt = ws / "data/sub/mnt"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "tmpfs", str(mnt)], check=True)
    try:
        (mnt / "theirs.txt").write_text("not ours\n", encoding="utf-8")
        before = listing(ws)
        for inputs in (DeleteInput(path="data"), CopyInput(source="data", target="copy")):
            result = run(ws, inputs)
            assert not result.ok and result.error_type == "MountPoint", result
            assert result.error == "data/sub/mnt is a mount point: omx does not act on another mount's files"
        assert listing(ws) == before and (mnt / "theirs.txt").read_text() == "not ours\n"
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _plan(*steps: dict[str, Any], label: str = "LOW") -> Plan:
    numbered = [{"id": n, "description": "s", **step} for n, step in enumerate(steps, 1)]
    return Plan.model_validate({"version": 1, "goal": "g", "risk_level": label, "steps": numbered})


MOVE = {"tool": "move", "inputs": {"source": "data/a.txt", "target": "data/b.txt"}}
DELETE = {"tool": "delete", "inputs": {"path": "data/sub"}}


def test_moves_and_deletes_are_high_and_confirmable_copies_and_new_directories_low(ws: Path) -> None:
    both = assess(_plan(MOVE, DELETE), ws)
    assert both.level.value == "HIGH" and both.confirmable and both.confirmable_steps == [1, 2]
    assert both.reasons == ["step 1: moves data/a.txt to data/b.txt", "step 2: deletes data/sub"]
    made = assess(_plan({"tool": "make_dir", "inputs": {"path": "x"}}, {"tool": "copy", "inputs": {
        "source": "data/a.txt", "target": "x/a.txt"}}), ws)  # fmt: skip
    assert made.level.value == "LOW" and not made.confirmable
    over = assess(_plan({"tool": "copy", "inputs": {"source": "data/a.txt", "target": "data/sub/b.txt",
                                                    "overwrite": True}}), ws)  # fmt: skip
    assert over.level.value == "MEDIUM" and over.reasons == [
        "step 1: overwrites the existing file data/sub/b.txt with a copy"
    ]
    shell = assess(_plan(MOVE, {"tool": "shell", "inputs": {"cmd": "rm -rf data"}}), ws)
    assert shell.level.value == "HIGH" and not shell.confirmable  # another HIGH step: refused as before
    outside = assess(_plan(MOVE, {"tool": "delete", "inputs": {"path": "../outside"}}), ws)
    assert not outside.confirmable
    rated = assess(_plan({"tool": "make_dir", "inputs": {"path": "x"}}, label="HIGH"), ws)
    assert rated.level.value == "HIGH" and not rated.confirmable  # the model's own HIGH is no move nor delete


def test_the_confirmation_of_moves_and_deletes_is_a_yes_then_their_number_typed(ws: Path) -> None:
    assessment = assess(_plan(MOVE, DELETE), ws)
    questions: list[str] = []

    def ask(question: str) -> bool:
        questions.append(question)
        return True

    def typed(answer: str) -> Any:
        def ask_text(question: str) -> str:
            questions.append(question)
            return answer

        return ask_text

    how = confirm(assessment, yes=True, ask=ask, ask_text=typed("2\n"))
    assert how == "confirmed at the prompt, 2 typed for its moves and deletes"
    assert questions == ["Run this HIGH risk plan? (--yes does not answer for HIGH risk plans)",
                         "It moves or deletes 2 paths. To run it, type 2"]  # fmt: skip
    for answer in ("", "y", "3", "two"):
        with pytest.raises(Declined, match="moves or deletes 2 paths"):
            confirm(assessment, yes=True, ask=ask, ask_text=typed(answer))
    with pytest.raises(Declined):
        confirm(assessment, yes=False, ask=lambda q: False, ask_text=typed("2"))
    with pytest.raises(Declined):  # no way to type: not confirmed
        confirm(assessment, yes=False, ask=ask)
    refused = assess(_plan(MOVE, {"tool": "shell", "inputs": {"cmd": "rm -rf data"}}), ws)
    with pytest.raises(Refused):
        confirm(refused, yes=False, ask=ask, ask_text=typed("2"))
