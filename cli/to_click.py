"""The click command of a ``Declared`` one (``cli.declare``): what ``omxfs`` runs for a command line the quick
parser leaves to click, and what ``--help`` and click's errors are made from."""

from __future__ import annotations

from typing import Any

import click

from cli.declare import Argument, Declared, Usage
from cli.errors import friendly_errors
from cli.params import TYPES, option_args


def command(declared: Declared) -> click.Command:
    """A click command with ``declared``'s parameters and help; its body's ``OmxError`` and ``OSError`` are click's
    one-line errors (``friendly_errors``), a ``Usage`` click's usage error."""
    params: list[click.Parameter] = []
    for param in declared.params:
        if isinstance(param, Argument):
            params.append(
                click.Argument(
                    [param.name],
                    type=TYPES[param.kind],
                    metavar=param.metavar,
                    required=param.required and not param.many,
                    nargs=-1 if param.many else 1,
                )
            )
            continue
        names, extra = option_args(param)
        params.append(click.Option(names, **extra))

    def callback(**values: Any) -> None:
        try:
            with friendly_errors():
                declared.run(**values)
        except Usage as exc:
            raise click.UsageError(exc.message) from None

    return click.Command(declared.name, callback=callback, params=params, help=declared.help)
