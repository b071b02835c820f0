"""Command-line parameter types shared by the ``omxfs`` commands."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from cli import shared_options
from cli.declare import Option
from cli.shared_options import ACTING_AGENT_HELP as ACTING_AGENT_HELP
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

#: each kind of value of a declared parameter (``cli.declare.KINDS``) as click reads it
TYPES: dict[str, click.ParamType[Any, Any]] = {
    "text": click.STRING,
    "path": MOUNT_PATH,
    "file": click.Path(path_type=Path),
    "count": click.INT,
}


def option_args(declared: Option) -> tuple[list[str], dict[str, Any]]:
    """The arguments of ``click.Option`` (or ``click.option``) for the declared option ``declared``."""
    extra: dict[str, Any] = {"is_flag": True} if declared.flag else {"type": TYPES[declared.kind]}
    if declared.default is not None:
        extra["default"] = declared.default
    if declared.shown_default is not None:
        extra["show_default"] = declared.shown_default
    extra |= {"help": declared.help, "metavar": declared.metavar, "multiple": declared.multiple}
    return [*declared.flags, declared.name], extra


def option(declared: Option) -> Callable[[F], F]:
    """The click decorator of the declared option ``declared``."""
    names, extra = option_args(declared)
    return click.option(*names, **extra)


#: ``--as NAME`` and ``-w/--workspace`` of the click commands that act for an agent (``cli.shared_options``)
AS_AGENT = option(shared_options.AS_AGENT)
WORKSPACE = option(shared_options.WORKSPACE)


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
