"""The paths a task names outside the workspace (``/etc/passwd``, ``~/.cache``, ``../secrets.txt``).

omx reads and writes only inside the workspace: the plan's schema offers its files alone, and the step sandbox
keeps every tool inside it. A task that names a file outside would get a plan that silently does something else
(the 1.5B model copied the workspace's only file to ``out/passwd.txt`` for "Copy /etc/passwd into
out/passwd.txt"), so such a task is refused before any plan is asked for, naming the path.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

__all__ = ["outside_paths"]

#: an absolute path of two components or more, a home path, a path that climbs: at the start of a word (not the
#: path of a URL, not "and/or")
_OUTSIDE = re.compile(r"(?<![\w:/.~-])(?:~/|\.\./|/(?=[\w.-]+/[\w.-]))[\w./~-]*")


def outside_paths(task: str, workspace: Path) -> list[str]:
    """Each path ``task`` names that leads outside ``workspace``, in order, once; an absolute path into the
    workspace is not one."""
    root = workspace.resolve()
    found = []
    for match in _OUTSIDE.finditer(task):
        path = match.group(0).rstrip(".,;:")
        target = Path(os.path.normpath(root / os.path.expanduser(path)))
        if target != root and root not in target.parents and path not in found:
            found.append(path)
    return found
