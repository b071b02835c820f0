"""``echo``: a line to stdout or stderr, as ``click.echo`` writes it, without loading click for it."""

from __future__ import annotations

import signal
import sys

#: the status the shell shows for a program a closed pipe ended (``ls | head -1``): 128 + SIGPIPE
CLOSED_PIPE = 128 + signal.SIGPIPE

#: the encodings ``echo`` writes itself; on any other stream (one click finds misconfigured, as ASCII) click writes
_PLAIN = ("utf-8", "utf8")


def echo(message: object, *, err: bool = False) -> None:
    """``message`` and a newline on stdout (stderr with ``err``), flushed, as ``click.echo`` writes them: where click
    would do more (strip an escape sequence from a stream that is not a terminal, mend a stream's encoding) it is
    click that writes."""
    stream = sys.stderr if err else sys.stdout
    text = f"{message}\n"
    if stream is None or "\x1b" in text or (getattr(stream, "encoding", None) or "").lower() not in _PLAIN:
        import click

        click.echo(message, err=err)
        return
    stream.write(text)
    stream.flush()
