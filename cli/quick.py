"""Running a declared command (``cli.declare``) without click, as click would run it.

What the command prints is the same as through click: an ``OmxError`` or ``OSError`` of its body is the line
"Error: MESSAGE" on stderr and status 1 (``cli.errors.friendly_errors``), output that meets a closed pipe ends the
command quietly with 141 (``ClosedPipeQuiet``), a Ctrl-C while it runs prints click's "Aborted!" and 1.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Sequence

from cli.declare import Declared, Usage, parse
from cli.echo import CLOSED_PIPE, echo
from omxfs.errors import OmxError


def run(command: Declared, argv: Sequence[str]) -> int | None:
    """Run ``command`` with the words ``argv`` and return its exit status; None, having done nothing, where the
    command line is click's to read (``cli.declare.parse``) or the command refused it as a ``Usage`` error."""
    values = parse(command, argv)
    if values is None:
        return None
    try:
        command.run(**values)
    except Usage:
        return None
    except BrokenPipeError:
        with contextlib.suppress(OSError, ValueError):  # what stdout still buffers goes nowhere at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return CLOSED_PIPE
    except OmxError as exc:
        return _error(exc.message)
    except OSError as exc:
        return _error(f"{exc.filename or ''}: {exc.strerror}".lstrip(": "))
    except KeyboardInterrupt:
        echo("", err=True)
        echo("Aborted!", err=True)
        return 1
    return 0


def _error(message: str) -> int:
    try:
        echo(f"Error: {message}", err=True)
    except BrokenPipeError:
        return CLOSED_PIPE
    return 1
