"""``omx --as NAME`` on an omxfs workspace: omx runs itself again inside NAME's view (``omxfs run``).

In a view the identity is the kernel's: every request the view makes to the workspace is NAME's, whatever
``OMX_AGENT`` says, so no tool omx starts (shell, python, or anything they spawn) can act as another agent. The
sandbox's allow-list and risk rules stay on top, inside the view. ``OMX_VIEW`` tells omx it already runs in one.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from agent.record.runs_dir import RunsError, is_omxfs_store

VIEW_ENV = "OMX_VIEW"
WORKSPACE_OPTIONS = ("-w", "--workspace")
SCRIPTED = "scripted:"  # --model scripted:FILE


def in_view() -> str | None:
    """The agent whose view this process runs in, if any."""
    return os.environ.get(VIEW_ENV) or None


def view_command(workspace: Path, agent: str, argv: list[str]) -> list[str] | None:
    """The command that runs ``argv`` (omx's own) in ``agent``'s view, or None where no view is needed.

    None: not an omxfs workspace, or already in ``agent``'s view. RunsError: already in another agent's view
    (a view cannot leave itself), or ``omxfs`` cannot be found.
    """
    current = in_view()
    if current == agent:
        return None
    if current is not None:
        raise RunsError(f"this process runs in {current}'s view: it cannot act as {agent}")
    if not is_omxfs_store(workspace):
        return None
    root = workspace.resolve()
    program, arguments, binds = argv[:2], *named_files(absolute_workspace(argv[2:]), root)
    shown = [arg for path in binds for arg in ("--ro-bind", path)]
    return [_omxfs(), "run", str(root), "--as", agent, *shown, "--", *program, *arguments]


def named_files(argv: list[str], workspace: Path) -> tuple[list[str], list[str]]:
    """``argv`` with every existing file it names outside the workspace made absolute, and those files, which the
    view shows read-only (a plan to run, a config, ``--model scripted:FILE``): the view has no host ``/tmp`` or
    ``$HOME`` otherwise. Only files named on the command line, never directories."""
    out, files = [], []
    for arg in argv:
        prefix = SCRIPTED if arg.startswith(SCRIPTED) else ""
        path = arg.removeprefix(prefix)
        full = os.path.abspath(path) if path else ""
        if full and os.path.isfile(full) and not Path(full).resolve().is_relative_to(workspace):
            out.append(prefix + full)
            files.append(full)
        else:
            out.append(arg)
    return out, list(dict.fromkeys(files))


def absolute_workspace(argv: list[str]) -> list[str]:
    """``argv`` with the value of ``-w``/``--workspace`` made absolute: the view may start in another directory."""
    out = list(argv)
    for i, arg in enumerate(out):
        if arg in WORKSPACE_OPTIONS and i + 1 < len(out):
            out[i + 1] = os.path.abspath(out[i + 1])
        elif arg.startswith("--workspace="):
            out[i] = "--workspace=" + os.path.abspath(arg.partition("=")[2])
    return out


def _omxfs() -> str:
    beside = Path(sys.executable).parent / "omxfs"  # the same installation as this omx
    if beside.is_file():
        return str(beside)
    found = shutil.which("omxfs")
    if found is None:
        raise RunsError("omx --as on an omxfs workspace needs the omxfs command (scripts/install.sh installs it)")
    return found
