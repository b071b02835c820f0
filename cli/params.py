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

#: how the conveniences over a workspace pick the agent they act as (SPEC §3), said the same in each one's --help
ACTING_AGENT_HELP = (
    "Act as agent NAME. Without it: through a mount, whom the mount takes you for (its uid map, else OMX_AGENT, "
    "else the mount's --as); on an unmounted workspace, OMX_AGENT, else your login."
)

#: ``--as NAME`` of every omxfs command that acts for an agent (``cli.acting`` makes it so)
AS_AGENT = click.option("--as", "agent", metavar="NAME", help=ACTING_AGENT_HELP)

#: ``-w/--workspace`` of the same commands: a mount point or a workspace directory no daemon serves
WORKSPACE = click.option(
    "--workspace",
    "-w",
    metavar="DIR",
    type=MOUNT_PATH,  # unstatted: a mount answers no stat to a process it takes for no agent, before --as acts
    default=None,
    show_default="current directory",
    help="The mount point (or an unmounted workspace directory).",
)
