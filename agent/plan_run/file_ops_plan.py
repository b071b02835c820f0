"""The plan of a task's file operations, written by omx from the model's reading where it holds (``file_ops``).

Asked for a whole plan, the 0.5B model renamed a file by reading it, asking itself for a text and writing that to
the new name (the old file left there), or moved a file that is not there onto itself. Where the reading's
operations agree with the workspace and the task (``file_ops.agreed_operations``), omx plans them itself with the
path tools: one step per operation, a ``make_dir`` first where a target's folder is missing. The plan is shown,
assessed and confirmed as any other: its moves and deletes are HIGH, asked for explicitly, never run by ``--yes``
alone.
"""

from __future__ import annotations

import os
from pathlib import Path

from agent.plan_run.file_ops import Operation
from agent.plan_run.plan import CopyStep, DeleteStep, MakeDirStep, MoveStep, Plan, RiskLevel, Step
from agent.plan_run.tools.inputs import CopyInput, DeleteInput, MakeDirInput, MoveInput

__all__ = ["operations_plan"]


def operations_plan(task: str, workspace: Path, operations: tuple[Operation, ...], note: str) -> Plan | None:
    """The path-tool steps of ``operations`` in ``workspace`` as a plan for ``task``, each description ending with
    ``note`` (who planned it); None where there is nothing to do (no operations, or only folders already there)."""
    steps: list[Step] = []
    made: set[str] = set()  # the folders there once the steps so far have run
    for op in operations:
        folder = op.target if op.action == "make_dir" else os.path.dirname(op.target)
        if folder and folder not in made and not _folder(workspace, folder):
            steps.append(MakeDirStep(id=len(steps) + 1, tool="make_dir", description=f"Make the folder {folder} {note}",
                                     inputs=MakeDirInput(path=folder), produces=folder))  # fmt: skip
        made |= {folder, *_parents(folder)}
        if op.action != "make_dir":
            steps.append(_step(len(steps) + 1, op, note))
    if not steps:
        return None
    destructive = any(op.action in ("move", "delete") for op in operations)
    risk = RiskLevel.HIGH if destructive else RiskLevel.LOW
    return Plan(version=1, goal=task, risk_level=risk, workspace_root=str(workspace), steps=steps)


def _folder(workspace: Path, path: str) -> bool:
    there = workspace / path
    return there.is_dir() and not there.is_symlink()


def _parents(path: str) -> set[str]:
    parts = path.split("/")
    return {"/".join(parts[:n]) for n in range(1, len(parts))}


def _step(step_id: int, op: Operation, note: str) -> Step:
    """The path-tool step that does ``op``."""
    if op.action == "delete":
        return DeleteStep(id=step_id, tool="delete", description=f"Delete {op.source} {note}",
                          inputs=DeleteInput(path=op.source), produces=op.source)  # fmt: skip
    if op.action == "copy":
        return CopyStep(id=step_id, tool="copy", description=f"Copy {op.source} to {op.target} {note}",
                        inputs=CopyInput(source=op.source, target=op.target), produces=op.target)  # fmt: skip
    return MoveStep(id=step_id, tool="move", description=f"Move {op.source} to {op.target} {note}",
                    inputs=MoveInput(source=op.source, target=op.target), produces=op.target)  # fmt: skip
