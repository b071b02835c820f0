#!/usr/bin/env python3
"""Render ``omxfs --help`` and ``omx --help`` with click and keep the text in ``cli/help_text.py``.

    scripts/render_help.py [--check]

``cli.kept_help`` prints the kept text without loading click, where click would print that very text (the program
named as rendered, at the width rendered). Run this after changing a command's options or help: until then
``tests/cli/test_kept_help.py`` fails, as does ``--check`` (exit 1), which writes nothing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KEPT = ROOT / "cli" / "help_text.py"
#: the width click gives its help on a terminal of 80 columns or more, and where stdout is no terminal
WIDTH = 78
PROGRAMS = ("omxfs", "omx")


def render(program: str, width: int = WIDTH) -> str:
    """What ``PROGRAM --help`` prints through click (the group's help and the newline ``click.echo`` adds), with the
    help formatted ``width`` columns wide."""
    sys.path.insert(0, str(ROOT))
    import click

    if program == "omxfs":
        from cli.omxfs import main
    else:
        from cli.omx import main
    ctx = click.Context(main, info_name=program, terminal_width=width, **main.context_settings)
    with ctx.scope(cleanup=False):
        return f"{main.get_help(ctx)}\n"


def module_text() -> str:
    """The source of ``cli/help_text.py`` as rendered now: each line of the help a string of its own."""
    texts = ""
    for program in PROGRAMS:
        lines = "".join(f"        {line!r}\n" for line in render(program).splitlines(keepends=True))
        texts += f"    {program!r}: (\n{lines}    ),\n"
    return (
        '"""What click prints for ``omxfs --help`` and ``omx --help`` at ``WIDTH`` columns: written by\n'
        'scripts/render_help.py, served by ``cli.kept_help``; do not edit."""\n\n'
        "# ruff: noqa: E501\n\n"  # each line of the help is as long as click made it
        f"WIDTH = {WIDTH}\n\nTEXT = {{\n{texts}}}\n"
    )


def kept() -> tuple[int, dict[str, str]]:
    """The width and the texts ``cli/help_text.py`` holds now (read from the file, whatever has been imported)."""
    found: dict[str, object] = {}
    exec(compile(KEPT.read_text(encoding="utf-8"), str(KEPT), "exec"), found)
    width, texts = found["WIDTH"], found["TEXT"]
    assert isinstance(width, int) and isinstance(texts, dict)
    return width, texts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 if the kept text is not click's, write nothing")
    args = parser.parse_args()
    if args.check:
        same = KEPT.exists() and kept() == (WIDTH, {program: render(program) for program in PROGRAMS})
        print(f"{KEPT.relative_to(ROOT)}: {'as click renders it' if same else 'stale: run scripts/render_help.py'}")
        return 0 if same else 1
    KEPT.write_text(module_text(), encoding="utf-8")
    print(f"wrote {KEPT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
