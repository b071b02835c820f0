"""Confine a path from a plan to the workspace root: relative, no ``..``, and no symlink leading out.

The check resolves symlinks (``Path.resolve``) and compares the real path with the real root, so a link inside
the workspace pointing at ``/etc`` is refused like ``/etc`` itself; OpenManus's check looked only for ``..`` and
let absolute paths through.
"""

from __future__ import annotations

from pathlib import Path

from agent.plan_run.shell_policy import path_problem
from agent.plan_run.tools.base import ToolFailure

__all__ = ["confine"]


def confine(workspace: Path, path: str) -> Path:
    """The real path of ``path`` inside ``workspace``, or ToolFailure(PathOutsideWorkspace / InvalidPath)."""
    if not path or "\x00" in path or any(ord(c) < 0x20 for c in path):
        raise ToolFailure(
            f"invalid path {path!r}", "give a plain relative path such as 'data/notes.txt'", "InvalidPath"
        )
    problem = path_problem(path, workspace)
    if problem:
        raise ToolFailure(
            problem, "use a path relative to the workspace root, e.g. 'out/report.md'", "PathOutsideWorkspace"
        )
    return (workspace / path).resolve()
