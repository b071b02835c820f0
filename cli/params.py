"""Command-line parameter types shared by the ``omxfs`` commands."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click


class UnprobedPath(click.ParamType[Path, Any]):
    """A path taken as written, without the ``stat`` that ``click.Path`` makes of it: the path may be a mount whose
    daemon does not answer, and a stat of it would wait for good before the command could say so
    (``mounts.probe`` asks in a process of its own, with a time limit)."""

    name = "path"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> Path:
        if isinstance(value, Path):
            return value
        if not isinstance(value, str) or not value:
            self.fail(f"{value!r} is not a path", param, ctx)
        return Path(value)


#: a workspace, a mountpoint or a path in one
MOUNT_PATH = UnprobedPath()
