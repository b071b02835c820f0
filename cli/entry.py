"""The ``omxfs`` program: a declared command (``cli.declare``) typed in its plain form runs without loading click, and
``omxfs --help`` is printed from the text click renders for it (``cli.kept_help``); every other command line is
``cli.omxfs.main``'s, the click group, exactly as typed."""

from __future__ import annotations

from cli import loading  # before the rest: a Ctrl-C while they load ends omxfs quietly (cli/loading.py)

# isort: split
import sys
from importlib import import_module

from cli.commands import COMMANDS
from cli.declare import Declared
from cli.kept_help import serve


def main() -> int | None:
    """Run ``omxfs`` with ``sys.argv``; the exit status."""
    status = serve("omxfs")
    if status is not None:
        return status
    argv = sys.argv[1:]
    if argv and argv[0] in COMMANDS:
        where = COMMANDS[argv[0]]
        found = getattr(import_module(where.module), where.attribute)
        if isinstance(found, Declared):
            loading.done()  # loaded: a Ctrl-C from here on is the command's (click's "Aborted!")
            from cli.quick import run

            status = run(found, argv[1:])
            if status is not None:
                return status
    with loading.again():
        from cli.omxfs import main as clicked

    clicked()
    return None


if __name__ == "__main__":
    sys.exit(main())
