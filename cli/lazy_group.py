"""A click group whose commands live in modules imported only when one of them runs.

A command's module imports what the command needs to be declared (its parameter types, its options' help): a
group that imported every one at start made each command, and ``--help``, pay for all of them. ``LazyGroup`` is
given a table of name -> ``Lazy`` (module, attribute, one-line summary, ``cli.commands``): ``omxfs checkpoint`` imports
``cli.checkpoints`` alone, and ``omxfs --help`` lists every command from the table, importing none. The table's
summaries are the commands' own (``tests/cli/test_lazy_group.py`` holds them to it), so the help reads the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import import_module
from typing import Any

import click

from cli import loading
from cli.commands import Lazy
from cli.declare import Declared
from cli.errors import ClosedPipeQuiet

__all__ = ["Lazy", "LazyGroup"]


class LazyGroup(ClosedPipeQuiet):
    """The commands given to it as usual, plus ``lazy`` ones loaded on first use (and kept in ``commands`` then); a
    declared one (``cli.declare``) is made a click command then (``cli.to_click``)."""

    def __init__(self, *args: Any, lazy: Mapping[str, Lazy], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy:
            where = self.lazy[cmd_name]
            with loading.again():  # a Ctrl-C while it loads ends the program quietly, as one during its start
                command = getattr(import_module(where.module), where.attribute)
            if isinstance(command, Declared):
                from cli.to_click import command as clicked

                command = clicked(command)
            self.add_command(command, cmd_name)
        return self.commands.get(cmd_name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.exceptions.NoSuchCommand as exc:  # its "Did you mean" from every command, not the loaded ones
            raise click.exceptions.NoSuchCommand(
                exc.command_name, exc.message, self.list_commands(ctx), exc.ctx
            ) from None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """click's own list, with the summary of a command not loaded taken from the table (as click shortens it
        to the width left)."""
        rows: list[tuple[str, click.Command]] = []
        for name in self.list_commands(ctx):
            command = self.commands.get(name) or click.Command(name, help=self.lazy[name].summary)
            if not command.hidden:
                rows.append((name, command))
        if rows:
            limit = formatter.width - 6 - max(len(name) for name, _ in rows)
            with formatter.section("Commands"):
                formatter.write_dl([(name, command.get_short_help_str(limit)) for name, command in rows])
