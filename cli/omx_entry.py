"""The ``omx`` program: ``omx --help`` is printed from the text click renders for it (``cli.kept_help``), without
loading click; every other command line is ``cli.omx.main``'s, exactly as typed."""

from __future__ import annotations

import sys

from cli.kept_help import serve


def main() -> int | None:
    """Run ``omx`` with ``sys.argv``; the exit status."""
    status = serve("omx")
    if status is not None:
        return status
    from cli.omx import main as clicked

    clicked()
    return None


if __name__ == "__main__":
    sys.exit(main())
