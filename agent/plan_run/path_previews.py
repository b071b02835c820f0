"""What a plan's moves, copies, new directories and deletes will do, shown before the plan is confirmed.

Each is read from the workspace as it is now, without following a symlink: what is moved or deleted (a file and its
lines, a directory and what it holds, a symlink as a link), and what a copy replaces, as the diff it makes, the way
``overwrites`` shows a write. With them, the line that undoes the run: the restore of the checkpoint an omx run on an
omxfs workspace starts from, or a plain word that nothing can.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

from agent.plan_run.overwrites import MAX_DIFF_LINES
from agent.plan_run.plan import Plan
from agent.plan_run.risk import path_tool_problem
from agent.plan_run.tools.base import ToolFailure
from agent.plan_run.tools.held_paths import WorkspaceRoot, kind_of, lstat_at, path_parts, tally
from agent.plan_run.tools.inputs import CopyInput, DeleteInput, MakeDirInput, MoveInput

__all__ = ["path_previews", "undo_lines"]

_READ_MOST = 1_000_000


def path_previews(plan: Plan, workspace: Path) -> list[str]:
    """One line (a copy over a file: and its diff) per move, copy, make_dir and delete step, in plan order."""
    lines: list[str] = []
    for step in plan.steps:
        inputs = step.inputs
        if isinstance(inputs, MoveInput):
            replaced = _replaced(workspace, inputs.target, inputs.overwrite)
            lines.append(f"Step {step.id} moves {inputs.source} ({_what(workspace, inputs.source)}) to "
                         f"{inputs.target}{replaced}")  # fmt: skip
        elif isinstance(inputs, DeleteInput):
            lines.append(f"Step {step.id} deletes {inputs.path} ({_what(workspace, inputs.path)})")
        elif isinstance(inputs, CopyInput):
            replaced = _replaced(workspace, inputs.target, inputs.overwrite)
            lines.append(f"Step {step.id} copies {inputs.source} ({_what(workspace, inputs.source)}) to "
                         f"{inputs.target}{replaced}")  # fmt: skip
            if replaced.startswith(", replacing"):
                lines += _copy_diff(workspace, inputs.source, inputs.target)
        elif isinstance(inputs, MakeDirInput):
            there = _what(workspace, inputs.path)
            lines.append(f"Step {step.id} makes the directory {inputs.path}" + (f" ({there})" if there else ""))
    return lines


def undo_lines(checkpoint_undo: str | None, no_checkpoint: str | None, omxfs: bool) -> list[str]:
    """What can undo the run, said before its moves and deletes are confirmed."""
    if checkpoint_undo:
        return ["The whole run, moves and deletes included, is undone by restoring the checkpoint it starts from:",
                f"  {checkpoint_undo}"]  # fmt: skip
    if omxfs:
        return [f"There is no checkpoint to undo them with: {no_checkpoint or 'none was made'}"]
    return ["Nothing undoes them: only an omxfs workspace keeps checkpoints to restore."]


def _what(workspace: Path, path: str) -> str:
    """What ``path`` is now, in a few words ("" for a directory make_dir would make)."""
    if path_tool_problem(path, workspace):
        return "refused"
    parts = path_parts(path)
    if not parts:
        return "the workspace root"
    try:
        with WorkspaceRoot(workspace) as root, root.parent(parts) as parent:
            st = lstat_at(parent, parts[-1])
            if st is None:
                return "not there now"
            what = kind_of(st)
            if what == "file":
                return f"a file, {_lines(workspace / path)}{st.st_size:,} bytes"
            if what == "symlink":
                target = os.readlink(parts[-1], dir_fd=parent)
                return f"a symlink to {target}: the link itself, never what it points to"
            if what == "directory":
                return f"a directory: {tally(parent, parts[-1], path).words()}"
            return f"a {what}"
    except ToolFailure as failure:  # a directory on the way that is missing (an earlier step may make it), or worse
        return "not there now" if failure.error_type == "NotFound" else failure.error
    except OSError as exc:
        return f"cannot be looked at now: {exc.strerror or exc}"


def _lines(path: Path) -> str:
    text = _text(path)
    if text is None:
        return ""
    count = len(text.splitlines())
    return f"{count} line{'' if count == 1 else 's'}, "


def _text(path: Path) -> str | None:
    """The text of a regular file, never through a symlink; None where it is not one or not text."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        try:
            return f.read(_READ_MOST).decode("utf-8")
        except (OSError, UnicodeDecodeError):
            return None


def _replaced(workspace: Path, target: str, overwrite: bool) -> str:
    """What a move or copy does to its target as it is now: nothing, replace a file, or fail."""
    if path_tool_problem(target, workspace) or not os.path.lexists(workspace / target):
        return ""
    what = _what(workspace, target)
    if what.startswith("a directory"):
        return f", where a directory is ({what}): the step will fail, the target must be the new path itself"
    if not overwrite:
        return f", where something is ({what}): the step will fail, as it does not say overwrite"
    return f", replacing what is there ({what})"


def _copy_diff(workspace: Path, source: str, target: str) -> list[str]:
    before, after = _text(workspace / target), _text(workspace / source)
    if before is None or after is None:
        return []
    diff = list(difflib.unified_diff(before.splitlines(), after.splitlines(), f"a/{target}", f"b/{target}",
                                     lineterm=""))  # fmt: skip
    if not diff:
        return ["  (the same text: no change)"]
    shown = diff[:MAX_DIFF_LINES]
    more = [f"  ... {len(diff) - len(shown)} more diff lines"] if len(diff) > len(shown) else []
    return [f"  {line}" for line in shown] + more
