"""``omxfs --help`` and ``omx --help`` without loading click: the text click renders for them, kept in
``cli.help_text`` (written by ``scripts/render_help.py``), printed where click would print that very text.

Click's help depends only on the commands' declarations, the program's name and the width it formats to:
``max(min(columns, 80) - 2, 50)``, the columns being ``shutil.get_terminal_size``'s (``COLUMNS``, else the
terminal's, else 80). The text is served for exactly ``PROGRAM --help`` or ``PROGRAM -h``, run as ``PROGRAM``, at
the width it was rendered for, with no shell completion asked for; any other case is click's.
``tests/cli/test_kept_help.py`` holds the kept text to click's rendering and the programs to click's output.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Sequence

from cli.help_text import TEXT, WIDTH


def kept(program: str, argv: Sequence[str]) -> str | None:
    """What click would print for ``program`` run with the words ``argv``, where it is the kept help; else None."""
    if list(argv) not in (["--help"], ["-h"]) or os.environ.get(f"_{program.upper()}_COMPLETE"):
        return None
    # the name click gives the program (its _detect_program_name): the script's, unless run with ``python -m``
    if getattr(sys.modules.get("__main__"), "__package__", None) not in (None, ""):
        return None
    if os.path.basename(sys.argv[0]) != program or max(min(_columns(), 80) - 2, 50) != WIDTH:
        return None
    return TEXT[program]


def _columns() -> int:
    """``shutil.get_terminal_size().columns``, without loading ``shutil`` (and the compression modules it loads)."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns or 80  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 80
    return columns


def serve(program: str) -> int | None:
    """Print the kept help of ``program`` if it is what click would print for ``sys.argv``, and return the exit
    status click's would have (0; 1 where stdout is a closed pipe, quietly); None, having printed nothing, else."""
    text = kept(program, sys.argv[1:])
    if text is None:
        return None
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        with contextlib.suppress(OSError, ValueError):  # what stdout still buffers goes nowhere at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 0
