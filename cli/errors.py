"""The CLI edge of the error taxonomy: store errors become one-line messages and exit codes, never tracebacks.

A reader that stops early (``omxfs status | head -1``) is no error of ours: a command whose output meets a closed
pipe ends quietly (``ClosedPipeQuiet``), as ``ls`` and ``git log`` do, rather than with "Error: Broken pipe".
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import Any

import click

from cli.echo import CLOSED_PIPE
from omxfs.errors import OmxError


@contextlib.contextmanager
def friendly_errors() -> Iterator[None]:
    try:
        yield
    except OmxError as exc:
        raise click.ClickException(exc.message) from exc
    except BrokenPipeError:
        raise  # our reader is gone: ``ClosedPipeQuiet`` ends the command, there is nobody to tell
    except OSError as exc:
        raise click.ClickException(f"{exc.filename or ''}: {exc.strerror}".lstrip(": ")) from exc


class ClosedPipeQuiet(click.Group):
    """A command line whose every command, once its output meets a closed pipe, exits ``CLOSED_PIPE`` without a word
    (click would exit 1, and a command inside ``friendly_errors`` printed "Error: Broken pipe")."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            with contextlib.suppress(OSError, ValueError):  # what stdout still buffers goes nowhere at exit, not
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # to "Exception ignored"
            raise SystemExit(CLOSED_PIPE) from None
