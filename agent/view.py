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
from omxfs.view.env import VIEW_ENV
from omxfs.view.sandbox import SYSTEM_DIRS, inside, runtime_dirs

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
    python, script = argv[0], os.path.abspath(argv[1])  # the view starts elsewhere: a relative path finds nothing
    arguments, files = named_files(absolute_workspace(argv[2:]), root)
    binds = [*([] if seen_in_view(script, root) else [script]), *files]
    shown = [arg for path in dict.fromkeys(binds) for arg in ("--ro-bind", path)]
    return [_omxfs(), "run", str(root), "--as", agent, *shown, "--", python, script, *arguments]


def seen_in_view(path: str, workspace: Path) -> bool:
    """Whether a view shows the file at ``path`` as it is without a bind of its own: inside the workspace, or in the
    system and runtime directories every view shows, and a symlink there leads nowhere else. An omx found on
    ``$PATH`` or reached through a symlinked virtual environment may live anywhere (``~/.local/bin``, ``/tmp``),
    where the view shows nothing (its ``/tmp`` and ``$HOME`` are its own)."""
    if Path(path).resolve().is_relative_to(workspace):
        return True  # and may not be bound: the view's own workspace covers it
    shown = [*SYSTEM_DIRS, *runtime_dirs()]
    return all(any(inside(candidate, root) for root in shown) for candidate in (path, os.path.realpath(path)))


def named_files(argv: list[str], workspace: Path) -> tuple[list[str], list[str]]:
    """``argv`` with every existing file it names made absolute (the view may start in another directory), and
    those outside the workspace, which the view shows read-only (a plan to run, a config, ``--model
    scripted:FILE``): the view has no host ``/tmp`` or ``$HOME`` otherwise. Only files named on the command line,
    never directories."""
    out, files = [], []
    for arg in argv:
        prefix = SCRIPTED if arg.startswith(SCRIPTED) else ""
        path = arg.removeprefix(prefix)
        full = os.path.abspath(path) if path else ""
        if full and os.path.isfile(full):
            out.append(prefix + full)
            if not Path(full).resolve().is_relative_to(workspace):
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
