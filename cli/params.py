"""Command-line parameter types shared by the ``omxfs`` commands."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from omxfs.errors import InvalidInput

F = TypeVar("F", bound=Callable[..., Any])


class UnprobedPath(click.ParamType[Path, Any]):
    """A path taken as written, without the ``stat`` that ``click.Path`` makes of it: the path may be a mount whose
    daemon does not answer, and a stat of it would wait for good before the command could say so
    (``mount_table.probe`` asks in a process of its own, with a time limit)."""

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


def _limit(parse: Callable[[str, str], int]) -> Callable[[click.Context, click.Parameter, str | None], int | None]:
    def convert(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
        if value is None:
            return None
        try:
            return parse(value, param.opts[0])
        except InvalidInput as exc:
            raise click.BadParameter(exc.message.partition(": ")[2] or exc.message) from None

    return convert


def limit_options(what: str) -> Callable[[F], F]:
    """``--max-procs``, ``--max-memory`` and ``--max-file-size`` of a command that runs ``what`` (a view, each step):
    the limits it cannot lift; one left out is the workspace config's (``[limits]``), else the default."""
    from omxfs.limits import DEFAULT_MAX_FILE_SIZE, DEFAULT_MAX_PROCS, MEMORY_CAP, parse_count, parse_size, size_text

    config = "default: the workspace's [limits], else"
    options = [
        click.option(
            "--max-procs",
            metavar="N",
            callback=_limit(parse_count),
            help=f"The most processes {what} may hold at once ({config} {DEFAULT_MAX_PROCS}; 0: no limit).",
        ),
        click.option(
            "--max-memory",
            metavar="SIZE",
            callback=_limit(parse_size),
            help=f"The most memory {what} may use, like 512M or 2G ({config} half the machine's, at most "
            f"{size_text(MEMORY_CAP)}; 0: no limit).",
        ),
        click.option(
            "--max-file-size",
            metavar="SIZE",
            callback=_limit(parse_size),
            help=f"The largest file {what} may write, like 1M ({config} "
            f"{size_text(DEFAULT_MAX_FILE_SIZE)}; 0: no limit).",
        ),
    ]

    def decorate(command: F) -> F:
        for option in reversed(options):
            command = option(command)
        return command

    return decorate
